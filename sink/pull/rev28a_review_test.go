package pull

import (
	"context"
	"strings"
	"testing"
	"time"

	"tailfeed/internal/grouptest"
	"tailfeed/processor"
)

// TestRev28AAAdoptedHeldLineReleasable: a delivery adopted across a
// reload's feed restart counts in ubytes before its line is re-read, and
// the re-read batch counts the same line again in size: with queueBytes 80
// and a 50-byte line out (52 bytes taken in and not done in all, under the
// bound), the re-read waits. The adopted line then runs out of attempts
// under hold: ReleaseHold looks only in order, which the waiting re-read
// never fills, so POST /admin/release finds nothing and the feed is held
// forever.
func TestRev28AAAdoptedHeldLineReleasable(t *testing.T) {
	long := strings.Repeat("x", 50)
	retry := processor.Retry{Initial: 20 * time.Millisecond, Max: 20 * time.Millisecond, Attempts: 1}
	r1 := grouptest.New(t, processor.GroupConfig{Name: "consumer", Retry: retry})
	p1, err := New(Config{Group: r1.G, AckTimeout: time.Minute, MaxInFlight: 100, MaxBytes: 80})
	if err != nil {
		t.Fatal(err)
	}
	r1.G.SetBatchProcessor(p1)
	r1.Run()
	r1.Publish(long, "ab")
	rig1 := &pullRig{Rig: r1, p: p1}
	evs := rig1.pull(1, false) // the long line out
	r1.Cancel()
	<-r1.G.Done()
	p1.Close()

	r2 := grouptest.New(t, processor.GroupConfig{Name: "consumer", Retry: retry})
	p2, err := New(Config{Group: r2.G, AckTimeout: time.Minute, MaxInFlight: 100, MaxBytes: 80, Previous: p1})
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	r2.G.SetBatchProcessor(p2)
	r2.Run()
	r2.Publish(long, "ab") // the re-read
	got := p2.Pull(context.Background(), 10, 500*time.Millisecond, false)
	if len(got) != 1 || got[0].Line != "ab" {
		t.Errorf("after the re-read (52 of 80 bytes taken in), handed out %+v; want ab", got)
	}
	if !p2.Nack(evs[0].DeliveryID) { // out of attempts: held
		t.Fatal("NACK of the adopted delivery refused")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	n, err := r2.G.Release(ctx)
	if err != nil || n != 1 {
		t.Fatalf("release of the held adopted line: %d, %v; want 1 line (the feed stays held forever)", n, err)
	}
}
