package webhook

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/internal/grouptest"
	"tailfeed/internal/slotrec"
	"tailfeed/processor"
)

// recordDeadFromOpen opens the record file so that every write fails.
func recordDeadFromOpen(path string) (slotrec.RecordFile, error) {
	f, err := slotrec.OpenFile(path)
	if err != nil {
		return nil, err
	}
	d := &recordDiesAfter{RecordFile: f}
	d.n.Store(0)
	return d, nil
}

// carryStuckOnRecord restarts after diedBeforeApplied with filters that let
// lines 0-5 through: lines 4-5 of the recorded request 55-88 are carried,
// the next batch (lines 6-9) is filtered out whole — an empty view that
// proves the rest cannot come — and the carry, given up under a new key,
// cannot be recorded (every record write fails).
func carryStuckOnRecord(t *testing.T, gc processor.GroupConfig) (*hookRig, *hookServer, int) {
	t.Helper()
	dir := t.TempDir()
	cfg := WebhookConfig{}
	h, sent := diedBeforeApplied(t, dir, &cfg)
	cfg.OpenRecord = recordDeadFromOpen
	gc.Match = regexp.MustCompile(`line-0000[0-5]`)
	r := newHookRig(t, dir, gc, cfg)
	restartLines(r, [2]int{0, 6}, [2]int{6, 10})
	return r, h, sent
}

// With onFailure deadLetter the carry goes to the ledger after its
// attempts: the group never dead-letters a line of the empty view (it used
// to, indexing line 0 of no lines: DEAD on a panic).
func TestWebhookCarryRecordFailureDeadLettersTheCarry(t *testing.T) {
	r, h, sent := carryStuckOnRecord(t, processor.GroupConfig{Retry: grouptest.FastRetry(2), OnFailure: processor.DeadLetter})
	r.WaitAck(10, 10*time.Second)
	if st, why := r.Q.State(); st == feed.Dead {
		t.Fatalf("subscriber DEAD: %s", why)
	}
	items, n := r.ledger.List(10)
	var got []string
	for _, it := range items {
		got = append(got, fmt.Sprint(it.Position))
	}
	if n != 2 || fmt.Sprint(got) != "[55 66]" {
		t.Fatalf("ledger holds %d entries at %v, want the carried lines 55 and 66", n, got)
	}
	if k := keysAfter(h, sent); len(k) != 0 {
		t.Fatalf("sent %v, want nothing (the carry's new key could not be recorded)", k)
	}
}

// With onFailure hold a release gives the stuck carry up (its two lines),
// although the group's view is empty.
func TestWebhookReleaseGivesUpACarryStuckOnItsRecord(t *testing.T) {
	r, h, sent := carryStuckOnRecord(t, processor.GroupConfig{Retry: grouptest.FastRetry(2)})
	waitFor(t, "the fence", func() bool { st, _ := r.Q.State(); return st == feed.Fenced })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := r.G.Release(ctx)
	if err != nil || n != 2 {
		t.Fatalf("release: %d, %v; want the 2 carried lines", n, err)
	}
	r.WaitAck(10, 10*time.Second)
	if r.Q.ReleasedLines() != 2 || r.ledger.Len() != 0 || len(keysAfter(h, sent)) != 0 {
		t.Fatalf("released %d, ledger %d, sent %v; want 2, 0, nothing", r.Q.ReleasedLines(), r.ledger.Len(), keysAfter(h, sent))
	}
}

// A stop while a carry waits is no evidence that the rest cannot come: the
// group stops without sending it, the ack point stays before the carried
// lines (the final commit is exact), and the record still names the
// request, so the next run rebuilds it under its key.
func TestWebhookStopLeavesAWaitingCarryUnacknowledged(t *testing.T) {
	dir := t.TempDir()
	cfg := WebhookConfig{}
	h, before := diedBeforeApplied(t, dir, &cfg)
	r := newHookRig(t, dir, processor.GroupConfig{Retry: grouptest.FastRetry(5)}, cfg)
	restartLines(r, [2]int{0, 6})
	r.WaitAck(4, 10*time.Second)
	r.stop()
	if got := r.Q.AckPoint(); got != 4 {
		t.Fatalf("ack point %d after the stop, want 4 (lines 4-5 carried, not acknowledged)", got)
	}
	if k := keysAfter(h, before); len(k) != 0 {
		t.Fatalf("the stop sent %v", k)
	}
	r2 := newHookRig(t, dir, processor.GroupConfig{Retry: grouptest.FastRetry(5)}, cfg)
	restartLines(r2, [2]int{0, 10})
	r2.WaitAck(10, 10*time.Second)
	if got := fmt.Sprint(keysAfter(h, before)); got != "[app:00000000000000e1:55-88 app:00000000000000e1:99-110]" {
		t.Fatalf("keys after the second restart %s", got)
	}
}
