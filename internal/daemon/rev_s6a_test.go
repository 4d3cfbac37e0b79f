package daemon

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/config"
	"tailfeed/feed"
	"tailfeed/internal/datadir"
	"tailfeed/pointer"
	"tailfeed/processor"
	"tailfeed/status"
)

// lineStuck is a per-line processor (processor.Processor, no batches): it
// finishes every line until it meets stopAt, whose call then blocks,
// ignoring its context (a write that never returns), until let go.
type lineStuck struct {
	stopAt  string
	entered chan struct{}
	letGo   chan struct{}
	after   atomic.Int64 // calls once stuck
	stuck   atomic.Bool
}

func (s *lineStuck) Process(_ context.Context, d *feed.Delivery) error {
	if s.stuck.Load() {
		s.after.Add(1)
		return nil
	}
	if string(d.Line) == s.stopAt {
		s.stuck.Store(true)
		close(s.entered)
		<-s.letGo
	}
	return nil
}

// TestRevS6aStopAbandonCommitsLinesFinishedBeforeTheStuckOne checks DESIGN
// §5 "Shutdown" ("final commit of exactly what the pointer-holding groups
// finished") and §6 ("Dispatch counts are published once per batch, and
// exactly at a stop or a fence"), with the README's decision for the
// abandoned group ("the final commit stops before the first line that
// subscriber did not finish").
//
// A per-line processor finishes lines 100–104 of a batch, then its call on
// line 105 never returns; SIGTERM (Stop) abandons the group after 1 s.
// Expected: the final commit covers lines 100–104 (every subscriber
// finished them; the stuck one's first unfinished line is 105). Observed:
// the commit stays at the start of the batch (line 100): Abandon does not
// publish what the group finished within its batch (it is published only
// when handle returns), so the stop is not exact and lines 100–104 are
// delivered again to every subscriber after the restart.
func TestRevS6aStopAbandonCommitsLinesFinishedBeforeTheStuckOne(t *testing.T) {
	s := &lineStuck{stopAt: "line-000105", entered: make(chan struct{}), letGo: make(chan struct{})}
	defer close(s.letGo)
	e := start(t, overloadConfig(64, ""), Options{Processors: map[string]Build{
		"slow": func(*config.Processor, *processor.Group) (any, error) { return s, nil }}})
	e.appendLines(numbered("line-", 0, 100)...)
	before := e.inputSize()
	e.waitFor("the first lines committed", 10*time.Second, func(f status.FeedReport) bool {
		return f.Acknowledged == 100 && f.Pointer != nil && f.Pointer.Offset == before
	})
	e.appendLines(numbered("line-", 100, 50)...)
	select {
	case <-s.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the processor never reached line-000105")
	}
	stopWithin15s(t, e)
	finished := before + 5*int64(len("line-000100\n")) // lines 100–104
	rec, err := pointer.Inspect(datadir.Pointer(filepath.Join(e.dir, "state"), "app"))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Offset != finished {
		t.Errorf("final commit at offset %d; want %d, just after line-000104, the last line before the first one the stuck subscriber did not finish (offset %d is the start of its batch: lines 100–104, finished by every subscriber, are read again)",
			rec.Offset, finished, before)
	}
}

// flushStuck is a batch processor with deferred work (processor.Flusher,
// as the file sink's fsync: interval): every batch leaves a flush due at
// once; once armed, Flush blocks, ignoring its context (an fsync on a hung
// disk), until let go.
type flushStuck struct {
	dirty   atomic.Bool
	armed   atomic.Bool
	entered chan struct{}
	once    atomic.Bool
	letGo   chan struct{}
	calls   atomic.Int64 // ProcessBatch calls with lines
}

func (s *flushStuck) ProcessBatch(_ context.Context, b *feed.Batch) (int, error) {
	if len(b.Lines) > 0 {
		s.calls.Add(1)
		s.dirty.Store(true)
	}
	return len(b.Lines), nil
}

func (s *flushStuck) FlushDue() (time.Time, bool) { return time.Now(), s.dirty.Load() }

func (s *flushStuck) Flush(context.Context) error {
	s.dirty.Store(false)
	if s.armed.Load() && s.once.CompareAndSwap(false, true) {
		close(s.entered)
		<-s.letGo
	}
	return nil
}

// TestRevS6aAbandonedGroupNeverCalledAgainAfterAFlush checks the README's
// decision for a stop that abandons a group ("The abandoned instance is
// never called again and never closed"; processor/group.go Abandon: "If
// the call returns after all, the group … ends without calling the
// processor again").
//
// The group is stuck in its processor's Flush (deferred work, not a batch
// call) when Stop abandons it, with batches waiting in its queue. Expected:
// once Flush returns, the group ends without another call. Observed: the
// group only looks at its fate after a batch step (handle), not after a
// flush: it pops the next queued batch and calls ProcessBatch on the
// abandoned processor (with its context ended) after the stop went on
// without it — after a reload, that instance writes next to the new one.
func TestRevS6aAbandonedGroupNeverCalledAgainAfterAFlush(t *testing.T) {
	s := &flushStuck{entered: make(chan struct{}), letGo: make(chan struct{})}
	let := sync.OnceFunc(func() { close(s.letGo) })
	defer let()
	e := start(t, overloadConfig(64, ""), Options{Processors: map[string]Build{
		"slow": func(*config.Processor, *processor.Group) (any, error) { return s, nil }}})
	e.appendLines(numbered("line-", 0, 100)...)
	e.waitFor("the first lines acknowledged", 10*time.Second, func(f status.FeedReport) bool { return f.Acknowledged == 100 })
	s.armed.Store(true)
	e.appendLines("line-000100")
	select {
	case <-s.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the flush was not called")
	}
	e.appendLines(numbered("line-", 101, 40)...)
	e.waitFor("the next lines queued behind the stuck flush", 10*time.Second, func(f status.FeedReport) bool {
		return sub(t, f, "slow").Position > sub(t, f, "slow").Dispatched
	})
	stopWithin15s(t, e)
	before := s.calls.Load()
	let() // the flush returns after all
	time.Sleep(500 * time.Millisecond)
	if n := s.calls.Load() - before; n != 0 {
		t.Errorf("the abandoned group called its processor %d more time(s) after the stop went on without it; want none", n)
	}
}

// stopWithin15s stops e and fails the test if Stop has not returned 15 s later.
func stopWithin15s(t *testing.T, e *env) {
	t.Helper()
	stopped := make(chan struct{})
	go func() {
		e.Stop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(15 * time.Second):
		t.Fatal("Stop did not return within 15 s")
	}
}
