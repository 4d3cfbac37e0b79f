package pull

import (
	"context"
	"math"
	"testing"
	"time"

	"tailfeed/processor"
)

// Review of issue 14's fast pull path.
//
// TestPullAttemptDoesNotWrap: pullEntry.attempt became an int32 (it was
// an int). A line held under onFailure: hold is redelivered for as long as
// nobody releases it; a client that NACKs it in a loop (pull + NACK over
// 127.0.0.1) hands it out again ~8,400 times a second on this machine (one
// client, measured over real HTTP), so 2^31 deliveries is ~3 days. The line's delivery count is set to
// MaxInt32 here (what that loop reaches) instead of being driven there;
// DESIGN §6/§9: the next delivery is attempt + 1, and a held line keeps
// being redelivered at the backoff cap.
func TestPullAttemptDoesNotWrap(t *testing.T) {
	r := newPullRig(t, processor.GroupConfig{Retry: processor.Retry{Initial: time.Millisecond, Max: time.Hour, Attempts: 2}}, time.Hour, 10)
	r.Publish("poison")
	evs := r.pull(1, false)
	r.p.mu.Lock()
	for _, e := range r.p.order[r.p.head:] {
		e.attempt = math.MaxInt32 // 2^31 - 1 deliveries so far (a NACK loop's days)
	}
	r.p.mu.Unlock()
	if !r.p.Nack(evs[0].DeliveryID) {
		t.Fatal("NACK refused")
	}
	again := r.p.Pull(context.Background(), 1, time.Second, false)
	if len(again) != 1 {
		t.Fatalf("NACKed line not handed out again: %+v", again)
	}
	if want := int64(math.MaxInt32) + 1; int64(again[0].Attempt) != want {
		t.Fatalf("delivery after attempt %d reports attempt %d, want %d", math.MaxInt32, again[0].Attempt, want)
	}
}
