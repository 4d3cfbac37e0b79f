package file

import (
	"context"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/processor"
)

// Lines a group finishes without its processor — dead-lettered, or given up
// by an admin release — must not keep a processor that holds the ack point
// (an fsync-interval sink) from reporting them durable. The worst case is
// the last line written before such a line: nothing is written after it,
// so no flush becomes due, and the ack point used to stay before the line
// for good (pendingAcks 1, the feed never settled, a clean stop's final
// commit stopped before the line and a restart delivered it again).

// TestIntervalSinkAcksDeadLetteredLastLine: batch [a, poison]; a is
// written, poison goes to the ledger: the ack point reaches 2.
func TestIntervalSinkAcksDeadLetteredLastLine(t *testing.T) {
	for _, eo := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "exactlyOnce"}[eo], func(t *testing.T) {
			r := newDLRigFsync(t, processor.DeadLetter, eo, FsyncInterval)
			r.Run()
			r.Publish("a", "poison")
			r.WaitAck(2, 10*time.Second)
			if got := r.output(); got != "a\n" {
				t.Fatalf("output %q, want %q", got, "a\n")
			}
			if r.ledger.Len() != 1 {
				t.Fatalf("ledger %d entries, want 1", r.ledger.Len())
			}
			// A batch of only a dead letter, after everything was synced.
			r.Publish("poison again")
			r.WaitAck(3, 10*time.Second)
		})
	}
}

// TestIntervalSinkAcksReleasedLastLine: under onFailure hold, an admin
// release gives the stuck last line up: the ack point passes it.
func TestIntervalSinkAcksReleasedLastLine(t *testing.T) {
	r := newDLRigFsync(t, processor.Hold, false, FsyncInterval)
	r.Run()
	r.Publish("a", "poison")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if st, _ := r.Q.State(); st == feed.Fenced && r.G.Failures() >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the sink never fenced on the poison line")
		}
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if n, err := r.G.Release(ctx); err != nil || n != 1 {
		t.Fatalf("release = %d, %v", n, err)
	}
	r.WaitAck(2, 10*time.Second)
	if got := r.output(); got != "a\n" {
		t.Fatalf("output %q, want %q", got, "a\n")
	}
}
