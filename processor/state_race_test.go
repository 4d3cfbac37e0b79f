package processor_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"tailfeed/feed"
	"tailfeed/processor"
)

// TestStateChangesFromEveryGoroutine races every way into the subscriber's
// state at once (run it with -race): the group's own retries fence and
// unfence on its goroutine, a sink's timer holds and lifts (HoldFence,
// LiftHold), an HTTP handler releases (ReleaseHeld). Every line is still
// processed, every release is counted once, and once the hold is lifted
// and the retries stopped failing the subscriber is not left FENCED.
func TestStateChangesFromEveryGoroutine(t *testing.T) {
	var calls atomic.Int64
	p := &lineProc{fn: func(*feed.Delivery) error {
		if calls.Add(1)%3 == 0 {
			return errors.New("every third call fails")
		}
		return nil
	}}
	r := startGroup(t, processor.GroupConfig{Processor: p, Retry: quickRetry(1000)})
	var h processor.Host = r.g
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var releases atomic.Uint64
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				switch {
				case w == 0 && i%50 == 49:
					h.ReleaseHeld(1)
					releases.Add(1)
				case i%2 == 0:
					h.HoldFence(errors.New("line out of attempts"))
				default:
					h.LiftHold()
				}
				if s, reason := r.q.State(); (s == feed.Fenced) != (reason != "") {
					t.Errorf("state %v with reason %q", s, reason)
					return
				}
			}
		}(w)
	}
	const n = 300
	var pos int64
	for i := 0; i < n; i += 10 {
		b := feed.NewBatch()
		b.Feed, b.Path, b.Epoch = "app", "/in/app.log", 42
		for _, l := range numbered("l", i, 10) {
			pos += int64(len(l)) + 1
			b.AppendLine([]byte(l), pos)
		}
		// A held subscriber stalls the feed: the source offers again.
		eventually(t, "the batch published", func() bool { return r.pub.TryPublish(b) })
		eventually(t, "the batch dispatched", func() bool { return r.q.Dispatched() >= uint64(i+10) })
	}
	close(stop)
	wg.Wait()
	h.LiftHold()
	if got := len(p.lines()); got != n {
		t.Fatalf("processed %d lines, want %d", got, n)
	}
	if got, want := r.q.ReleasedLines(), releases.Load(); got != want {
		t.Fatalf("released counter %d, want %d (one per ReleaseHeld)", got, want)
	}
	if s, reason := r.q.State(); s == feed.Fenced || s == feed.Dead {
		t.Fatalf("state %v (%q) with nothing holding the subscriber", s, reason)
	}
}
