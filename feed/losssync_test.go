package feed

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/overload"
)

// PollAcks acknowledges no line past a loss before the loss is durable
// (SetLossSync): while the sync fails nothing is acknowledged; once it
// succeeds the acknowledgement moves, one sync having covered every loss
// noted before it; none runs while no loss was noted. A release
// (AddReleased) syncs before it returns.
func TestPollAcksWaitsForTheLossSync(t *testing.T) {
	q := pauseQ("q", 100)
	tap := NewQueue("tap", 1, 1<<20, overload.Policy{Kind: overload.DropAfterSpin, Spin: time.Millisecond})
	p := NewPublisher("f", []*Queue{q, tap}, 1000, 10)
	var syncs atomic.Int64
	var failing atomic.Bool
	var durable atomic.Uint64 // lost lines the last successful sync saw
	failing.Store(true)
	p.SetLossSync(func() error {
		syncs.Add(1)
		if failing.Load() {
			return errors.New("disk full")
		}
		durable.Store(tap.Dropped() + tap.ReleasedLines())
		return nil
	})
	var src lineSrc
	mustPublish(t, p, src.batch(1)) // the tap takes it
	consume(q)
	wantAck(t, p.PollAcks(), 1, src.end(1))
	if n := syncs.Load(); n != 0 {
		t.Fatalf("%d syncs with no loss noted, want 0", n)
	}
	for range 3 {
		mustPublish(t, p, src.batch(2)) // dropped for the tap
	}
	consume(q)
	deadline := time.Now().Add(3 * lossRetryGap)
	for time.Now().Before(deadline) {
		if a := p.PollAcks(); a.Moved || p.Acknowledged() != 1 {
			t.Fatalf("the loss sync fails, yet the acknowledgement moved to %d", p.Acknowledged())
		}
		time.Sleep(time.Millisecond)
	}
	if n := syncs.Load(); n < 2 || n > 4 {
		t.Fatalf("%d failed syncs in %v, want one per %v", n, 3*lossRetryGap, lossRetryGap)
	}
	failing.Store(false)
	waitTrue(t, "the acknowledgement past the drops", func() bool { return p.PollAcks().Moved })
	if p.Acknowledged() != 7 || durable.Load() != 6 {
		t.Fatalf("acknowledged %d after a sync of %d dropped lines, want 7 after 6", p.Acknowledged(), durable.Load())
	}
	n := syncs.Load()
	if a := p.PollAcks(); a.Moved || syncs.Load() != n {
		t.Fatalf("%d syncs more without a loss", syncs.Load()-n)
	}
	tap.AddReleased(1, false)
	if syncs.Load() != n+1 || durable.Load() != 7 {
		t.Fatalf("AddReleased returned before its sync (durable %d)", durable.Load())
	}
}

// A drop or refusal at the publish counts only the lines past the queue's
// re-read skip (SetPublishSkip): the lines its group finishes unseen are no
// loss (a feed restarted by a reload re-reads them; they were counted, or
// finished, by its earlier instance).
func TestDropOfSkippedLinesCountsNothing(t *testing.T) {
	q := pauseQ("q", 100)
	tap := NewQueue("tap", 1, 1<<20, overload.Policy{Kind: overload.DropAfterSpin, Spin: time.Millisecond})
	p := NewPublisher("f", []*Queue{q, tap}, 1000, 10)
	var src lineSrc
	first := src.batch(1) // fills the tap's one slot
	skipTo := src.batch(3)
	tap.SetPublishSkip([]Mark{{Epoch: 7, Position: src.end(4), OK: true}}) // lines 1..4 finished unseen
	mustPublish(t, p, first)
	mustPublish(t, p, skipTo) // lines 2..4: dropped for the tap, skipped: nothing counted
	if n := tap.Dropped(); n != 0 {
		t.Fatalf("dropped %d for lines the tap's group skips, want 0", n)
	}
	mustPublish(t, p, src.batch(2)) // lines 5, 6: past the mark, dropped and counted
	if n := tap.Dropped(); n != 2 {
		t.Fatalf("dropped %d after two lines past the skip, want 2", n)
	}
	other := src.batch(2) // lines 7, 8 of another epoch: counted
	other.Epoch = 8
	mustPublish(t, p, other)
	if n := tap.Dropped(); n != 4 {
		t.Fatalf("dropped %d after two lines of another epoch, want 4", n)
	}
}
