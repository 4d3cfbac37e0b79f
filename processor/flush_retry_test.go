package processor_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/processor"
)

// intervalSink is a batch sink with an fsync interval, like the file sink's
// `fsync: interval`: it holds the ack point, "writes" every line of a batch
// at once unless one of them is bad (then nothing, done 0, as a failed write
// truncated back), and its Flush (counted; failing while failFlush is set)
// reports the lines written so far durable.
type intervalSink struct {
	cp       processor.Checkpoint
	interval time.Duration

	mu         sync.Mutex // the test reads what the group goroutine wrote
	firstDirty time.Time  // zero: nothing unsynced
	dirtyMark  uint64

	flushes       atomic.Int64
	flushInCall   atomic.Bool // Flush ran during a ProcessBatch call
	failFlush     atomic.Bool
	failedFlushes atomic.Int64
	unfence       bool // Flush lifts the retries' fence, as a webhook that sent its carried request does
}

func (s *intervalSink) ProcessBatch(_ context.Context, b *feed.Batch) (int, error) {
	s.mu.Lock() // for the whole call: a Flush meanwhile would find it taken
	defer s.mu.Unlock()
	for _, l := range b.Lines {
		if strings.HasPrefix(string(l), "bad") {
			return 0, errors.New("write out.log: file too large")
		}
	}
	if len(b.Lines) > 0 && s.firstDirty.IsZero() {
		s.firstDirty = time.Now()
	}
	s.dirtyMark = s.cp.Mark()
	if len(b.Lines) == 0 && s.firstDirty.IsZero() {
		s.cp.DurableThrough(s.dirtyMark)
	}
	return len(b.Lines), nil
}

func (s *intervalSink) FlushDue() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.firstDirty.IsZero() {
		return time.Time{}, false
	}
	return s.firstDirty.Add(s.interval), true
}

func (s *intervalSink) Flush(context.Context) error {
	if !s.mu.TryLock() {
		s.flushInCall.Store(true) // the only other holder is a ProcessBatch call (FlushDue runs on the group goroutine too)
		s.mu.Lock()
	}
	defer s.mu.Unlock()
	if s.firstDirty.IsZero() {
		return nil
	}
	s.flushes.Add(1)
	if s.failFlush.Load() {
		s.failedFlushes.Add(1)
		return errors.New("fsync out.log: input/output error")
	}
	s.firstDirty = time.Time{}
	s.cp.DurableThrough(s.dirtyMark)
	if s.unfence {
		s.cp.(processor.Host).Unfence()
	}
	return nil
}

// startInterval runs a group over an intervalSink (50 ms) with onFailure
// onFail and retry, and settles two good lines first.
func startInterval(t *testing.T, retry processor.Retry, onFail processor.OnFailure, led processor.DeadLetterer) (*groupRig, *intervalSink) {
	t.Helper()
	s := &intervalSink{interval: 50 * time.Millisecond}
	r := startGroup(t, processor.GroupConfig{Batch: s, Retry: retry, OnFailure: onFail, Ledger: led})
	s.cp = r.g
	r.g.Hold() // before the first line: the ack point waits for the flush
	r.publish("a", "b")
	eventually(t, "a and b flushed", func() bool { return r.q.AckPoint() == 2 })
	return r, s
}

// TestGroupFlushesDueIntervalWhileRetrying: DESIGN §6 "`interval` syncs at
// most `fsyncIntervalMillis` after the first unsynced write (even if no
// more lines come)"; "When the attempts run out it goes on line by line, so
// only the failing line is held". A batch c, bad, d: in line mode c is
// written, bad keeps failing. The written line's flush falls due while the
// group waits between attempts: it must run then (on the group goroutine,
// not inside a call), so the ack point passes c while bad is still held
// (hold) or still being retried (deadLetter, a long schedule). It once ran
// only between batches or while idle: c stayed unsynced as long as the
// hold lasted.
func TestGroupFlushesDueIntervalWhileRetrying(t *testing.T) {
	t.Run("hold", func(t *testing.T) {
		r, s := startInterval(t, processor.Retry{Initial: 20 * time.Millisecond, Max: 40 * time.Millisecond, Attempts: 2},
			processor.Hold, nil)
		r.publish("c", "bad", "d")
		waitStateG(t, r.q, feed.Fenced)
		eventually(t, "the ack point past c while bad is held", func() bool { return r.q.AckPoint() == 3 })
		r.wantAcked(3)
		if d := r.q.Dispatched(); d != 3 {
			t.Fatalf("dispatched %d, want 3 (c, not bad)", d)
		}
		if st, _ := r.q.State(); st != feed.Fenced {
			t.Fatalf("state %v after the flush, want still FENCED on bad", st)
		}
		if s.flushes.Load() < 2 {
			t.Fatalf("%d flushes, want a and b's, then c's", s.flushes.Load())
		}
		if s.flushInCall.Load() {
			t.Fatal("Flush ran during a ProcessBatch call")
		}
	})
	t.Run("a flush that unfences", func(t *testing.T) {
		// A sink whose Flush lifts the retries' fence (the webhook, when
		// it sends its carried request) must not make the subscriber look
		// RUNNING while its batch still fails (review: it showed RUNNING
		// for the rest of the backoff).
		r, s := startInterval(t, processor.Retry{Initial: 300 * time.Millisecond, Max: 300 * time.Millisecond, Attempts: 2},
			processor.Hold, nil)
		s.mu.Lock()
		s.unfence = true
		s.mu.Unlock()
		r.publish("c", "bad", "d")
		eventually(t, "the ack point past c", func() bool { return r.q.AckPoint() == 3 })
		for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
			if st, _ := r.q.State(); st != feed.Fenced {
				t.Fatalf("state %v while bad is still failing, want FENCED", st)
			}
		}
	})
	t.Run("deadLetter long schedule", func(t *testing.T) {
		// 2 s between attempts: the flush (50 ms after c is written) must
		// not wait for bad to reach the ledger.
		led := &memLedger{}
		r, _ := startInterval(t, processor.Retry{Initial: 2 * time.Second, Max: 8 * time.Second, Attempts: 2},
			processor.DeadLetter, led)
		r.publish("c", "bad", "d")
		eventually(t, "the ack point past c", func() bool { return r.q.AckPoint() >= 3 })
		if n := led.count(); n != 0 {
			t.Fatalf("c durable only after bad was dead-lettered (%d in the ledger): the flush waited for the retries", n)
		}
		if st, _ := r.q.State(); st != feed.Fenced {
			t.Fatalf("state %v, want FENCED while bad is retried", st)
		}
		eventually(t, "bad dead-lettered, d done", func() bool { return r.q.AckPoint() == 5 })
	})
	t.Run("failed flush", func(t *testing.T) {
		// A flush that fails keeps the durable mark where it was, leaves
		// the batch's fence, is not retried in a tight loop, and the next
		// one that works moves the ack point.
		r, s := startInterval(t, processor.Retry{Initial: 20 * time.Millisecond, Max: 40 * time.Millisecond, Attempts: 2},
			processor.Hold, nil)
		s.failFlush.Store(true)
		r.publish("c", "bad", "d")
		eventually(t, "failed flushes while bad is held", func() bool { return s.failedFlushes.Load() >= 3 })
		time.Sleep(500 * time.Millisecond)
		if a := r.q.AckPoint(); a != 2 {
			t.Fatalf("ack point %d after failed flushes, want 2 (c unsynced)", a)
		}
		if st, reason := r.q.State(); st != feed.Fenced || !strings.Contains(reason, "file too large") {
			t.Fatalf("state %v %q, want FENCED with the batch's reason", st, reason)
		}
		// Backoff 40 ms at the cap: about one flush per wait, not a spin.
		if n := s.failedFlushes.Load(); n > 200 {
			t.Fatalf("%d failed flushes in about a second: the wait spins on a failing flush", n)
		}
		s.failFlush.Store(false)
		eventually(t, "the ack point past c once a flush works", func() bool { return r.q.AckPoint() == 3 })
	})
}

// memLedger is a DeadLetterer that keeps the lines in memory.
type memLedger struct {
	mu    sync.Mutex
	lines []string
}

func (l *memLedger) DeadLetter(d *feed.Delivery, _ int, _ error) error {
	l.mu.Lock()
	l.lines = append(l.lines, string(d.Line))
	l.mu.Unlock()
	return nil
}

func (l *memLedger) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.lines)
}
