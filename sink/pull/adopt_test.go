package pull

import (
	"context"
	"testing"
	"time"

	"tailfeed/internal/grouptest"
	"tailfeed/processor"
)

// TestPullAdoptsDeliveriesAcrossRestart: the instance a reload builds
// after restarting the feed (Config.Previous) keeps the stopped one's
// deliveries in flight valid (same id, ACK accepted, before and after the
// re-read brings their lines) and hands out again neither those nor the
// lines acknowledged out of order; only the lines never handed out come
// (attempt 1), and the ack point reaches every line once all are
// acknowledged.
func TestPullAdoptsDeliveriesAcrossRestart(t *testing.T) {
	lines := grouptest.Lines("l", 0, 5)
	r1 := grouptest.New(t, processor.GroupConfig{Name: "consumer", Retry: slowRetry(6)})
	p1, err := New(Config{Group: r1.G, AckTimeout: time.Minute, MaxInFlight: 100})
	if err != nil {
		t.Fatal(err)
	}
	r1.G.SetBatchProcessor(p1)
	r1.Run()
	r1.Publish(lines...)
	rig1 := &pullRig{Rig: r1, p: p1}
	evs := rig1.pull(3, false) // l0, l1, l2 out
	rig1.ack(evs[1])           // out of order: the ack point stays at 0
	r1.Cancel()
	<-r1.G.Done()
	p1.Close()

	r2 := grouptest.New(t, processor.GroupConfig{Name: "consumer", Retry: slowRetry(6)})
	p2, err := New(Config{Group: r2.G, AckTimeout: time.Minute, MaxInFlight: 100, Previous: p1})
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	r2.G.SetBatchProcessor(p2)
	r2.Run()
	if !p2.Ack(evs[0].DeliveryID) {
		t.Fatal("the ACK of a delivery out before the restart was refused (before the re-read)")
	}
	r2.Publish(lines...) // the re-read: same epoch, same positions
	got := p2.Pull(context.Background(), 10, 300*time.Millisecond, false)
	if len(got) != 2 || got[0].Line != lines[3] || got[1].Line != lines[4] || got[0].Attempt != 1 {
		t.Fatalf("after the re-read, handed out %+v; want only %s, %s (attempt 1)", got, lines[3], lines[4])
	}
	if !p2.Ack(evs[2].DeliveryID) {
		t.Fatal("the ACK of a delivery out before the restart was refused (after the re-read)")
	}
	if p2.Ack(evs[1].DeliveryID) {
		t.Fatal("a second ACK of a delivery acknowledged before the restart was accepted")
	}
	rig2 := &pullRig{Rig: r2, p: p2}
	rig2.ack(got...)
	r2.WaitAck(5, 5*time.Second)
}

// TestPullAdoptsAcrossTwoRestarts: a second restart before the re-read
// brought the adopted lines back (the quick reload, or a re-read waiting
// while the adopted deliveries fill maxInFlight) still carries them: the
// third instance accepts the ACKs of deliveries handed out by the first,
// refuses a second ACK of a line acknowledged out of order before the
// first restart, and hands out only the lines never handed out.
func TestPullAdoptsAcrossTwoRestarts(t *testing.T) {
	lines := grouptest.Lines("l", 0, 5)
	r1 := grouptest.New(t, processor.GroupConfig{Name: "consumer", Retry: slowRetry(6)})
	p1, err := New(Config{Group: r1.G, AckTimeout: time.Minute, MaxInFlight: 3})
	if err != nil {
		t.Fatal(err)
	}
	r1.G.SetBatchProcessor(p1)
	r1.Run()
	r1.Publish(lines...)
	rig1 := &pullRig{Rig: r1, p: p1}
	evs := rig1.pull(3, false) // l0, l1, l2 out
	rig1.ack(evs[1])           // out of order: the ack point stays at 0
	r1.Cancel()
	<-r1.G.Done()
	p1.Close()

	// The second instance: its re-read waits (2 adopted deliveries out of
	// maxInFlight 2) and it stops before taking any line in.
	r2 := grouptest.New(t, processor.GroupConfig{Name: "consumer", Retry: slowRetry(6)})
	p2, err := New(Config{Group: r2.G, AckTimeout: time.Minute, MaxInFlight: 2, Previous: p1})
	if err != nil {
		t.Fatal(err)
	}
	r2.G.SetBatchProcessor(p2)
	r2.Run()
	r2.Publish(lines...)
	time.Sleep(100 * time.Millisecond)
	r2.Cancel()
	<-r2.G.Done()
	p2.Close()

	r3 := grouptest.New(t, processor.GroupConfig{Name: "consumer", Retry: slowRetry(6)})
	p3, err := New(Config{Group: r3.G, AckTimeout: time.Minute, MaxInFlight: 100, Previous: p2})
	if err != nil {
		t.Fatal(err)
	}
	defer p3.Close()
	r3.G.SetBatchProcessor(p3)
	r3.Run()
	r3.Publish(lines...)
	got := p3.Pull(context.Background(), 10, 300*time.Millisecond, false)
	if len(got) != 2 || got[0].Line != lines[3] || got[1].Line != lines[4] || got[0].Attempt != 1 {
		t.Fatalf("after two restarts, handed out %+v; want only %s, %s (attempt 1)", got, lines[3], lines[4])
	}
	if !p3.Ack(evs[0].DeliveryID) || !p3.Ack(evs[2].DeliveryID) {
		t.Fatal("after two restarts, the ACK of a delivery out before them was refused")
	}
	if p3.Ack(evs[1].DeliveryID) {
		t.Fatal("after two restarts, a second ACK of a delivery acknowledged before them was accepted")
	}
	rig3 := &pullRig{Rig: r3, p: p3}
	rig3.ack(got...)
	r3.WaitAck(5, 5*time.Second)
}
