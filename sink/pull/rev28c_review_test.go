package pull

import (
	"context"
	"strings"
	"testing"
	"time"

	"tailfeed/internal/grouptest"
	"tailfeed/processor"
)

// TestRev28CIAdoptedTimedOutAtInFlightCap (probe): maxInFlight 1, line a
// out across a feed restart (adopted), not acknowledged: once its ack
// timeout passes it is handed out again, then b.
func TestRev28CIAdoptedTimedOutAtInFlightCap(t *testing.T) {
	retry := processor.Retry{Initial: 10 * time.Millisecond, Max: 10 * time.Millisecond, Attempts: 100}
	r1 := grouptest.New(t, processor.GroupConfig{Name: "consumer", Retry: retry})
	p1, err := New(Config{Group: r1.G, AckTimeout: 200 * time.Millisecond, MaxInFlight: 1, MaxBytes: 80})
	if err != nil {
		t.Fatal(err)
	}
	r1.G.SetBatchProcessor(p1)
	r1.Run()
	r1.Publish("a", "b")
	rig1 := &pullRig{Rig: r1, p: p1}
	evs := rig1.pull(1, false)
	if len(evs) != 1 || evs[0].Line != "a" {
		t.Fatalf("first pull %+v", evs)
	}
	r1.Cancel()
	<-r1.G.Done()
	p1.Close()

	r2 := grouptest.New(t, processor.GroupConfig{Name: "consumer", Retry: retry})
	p2, err := New(Config{Group: r2.G, AckTimeout: 200 * time.Millisecond, MaxInFlight: 1, MaxBytes: 80, Previous: p1})
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	r2.G.SetBatchProcessor(p2)
	r2.Run()
	r2.Publish("a", "b") // the re-read
	var lines []string
	deadline := time.Now().Add(5 * time.Second)
	sawB := false
	for time.Now().Before(deadline) && !sawB {
		got := p2.Pull(context.Background(), 10, 300*time.Millisecond, false)
		for _, g := range got {
			lines = append(lines, g.Line)
			if g.Line == "b" || len(lines) > 1 {
				p2.Ack(g.DeliveryID)
			}
			sawB = sawB || g.Line == "b"
		}
	}
	if !sawB {
		t.Errorf("adopted a timed out at maxInFlight 1: handed out %v in 5 s; want a again, then b", lines)
	}
}

// TestRev28CJReleasedAdoptedLinePassesAckPoint (probe): as review 28a A —
// the adopted 50-byte line held and released before its re-read is
// placed: once ab is acknowledged the ack point passes both lines, and
// the released line is not handed out again.
func TestRev28CJReleasedAdoptedLinePassesAckPoint(t *testing.T) {
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
	evs := rig1.pull(1, false)
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
	if !p2.Nack(evs[0].DeliveryID) { // out of attempts before the re-read: held
		t.Fatal("NACK of the adopted delivery refused")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if n, err := r2.G.Release(ctx); err != nil || n != 1 {
		t.Fatalf("release: %d, %v; want 1", n, err)
	}
	r2.Publish(long, "ab") // the re-read
	got := p2.Pull(context.Background(), 10, 500*time.Millisecond, false)
	if len(got) != 1 || got[0].Line != "ab" {
		t.Fatalf("after the release and the re-read, handed out %+v; want ab only", got)
	}
	p2.Ack(got[0].DeliveryID)
	r2.WaitAck(2, 3*time.Second)
	if more := p2.Pull(context.Background(), 10, 200*time.Millisecond, false); len(more) != 0 {
		t.Errorf("handed out again after all was done: %+v", more)
	}
}
