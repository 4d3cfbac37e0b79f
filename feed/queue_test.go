package feed

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/overload"
)

// TestStateAndReasonChangeTogether: a reader never sees a state with
// another state's reason (a report showing FENCED with an empty or stale
// stalled reason), however the writers interleave.
func TestStateAndReasonChangeTogether(t *testing.T) {
	q := NewQueue("s", 8, 1<<10, overload.Policy{Kind: overload.Pause})
	want := map[SubState]string{Live: "", Fenced: "subscriber s failing: boom", Dead: "subscriber s dead: panic: x", Released: ""}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for _, seq := range [][]SubState{{Fenced, Live, Dead}, {Dead, Released, Fenced}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				s := seq[i%len(seq)]
				q.SetState(s, want[s])
			}
		}()
	}
	deadline := time.Now().Add(300 * time.Millisecond)
	reads := 0
	for time.Now().Before(deadline) {
		for range 1000 {
			s, why := q.State()
			if why != want[s] {
				stop.Store(true)
				wg.Wait()
				t.Fatalf("state %v with reason %q, want %q (after %d reads)", s, why, want[s], reads)
			}
			s, why, _ = q.StateAt()
			if why != want[s] {
				stop.Store(true)
				wg.Wait()
				t.Fatalf("StateAt: state %v with reason %q, want %q", s, why, want[s])
			}
			reads++
		}
	}
	stop.Store(true)
	wg.Wait()
}

// TestStateSinceMovesOnlyOnChange: the time a state began stays while the
// same state is set again (a fence whose reason changes is one episode).
func TestStateSinceMovesOnlyOnChange(t *testing.T) {
	q := NewQueue("s", 8, 1<<10, overload.Policy{Kind: overload.Pause})
	if s, why, since := q.StateAt(); s != Live || why != "" || since.UnixNano() != 0 {
		t.Fatalf("new queue: %v %q %v", s, why, since)
	}
	q.SetState(Fenced, "one")
	_, _, first := q.StateAt()
	time.Sleep(2 * time.Millisecond)
	q.SetState(Fenced, "two")
	if s, why, since := q.StateAt(); s != Fenced || why != "two" || !since.Equal(first) {
		t.Fatalf("fenced again: %v %q since %v, want FENCED \"two\" since %v", s, why, since, first)
	}
	if !q.Stalling() || q.StateSince() != first {
		t.Fatalf("stalling %v, since %v", q.Stalling(), q.StateSince())
	}
	q.SetState(Live, "")
	if s, why, since := q.StateAt(); s != Live || why != "" || !since.After(first) || q.Stalling() {
		t.Fatalf("live: %v %q since %v", s, why, since)
	}
}
