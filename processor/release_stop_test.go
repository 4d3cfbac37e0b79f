package processor

import (
	"context"
	"testing"
	"time"

	"tailfeed/feed"
)

// boomProc panics on the line "boom".
type boomProc struct{}

func (boomProc) Process(_ context.Context, d *feed.Delivery) error {
	if string(d.Line) == "boom" {
		panic("boom")
	}
	return nil
}

// TestReleaseAfterStoppingDoesNotRestart: once the group is marked
// stopping, a release of the dead subscriber gives its backlog up but
// the processor does not run again: the group's goroutine ends, even while
// the group's context is not cancelled yet (the window in which a release
// used to start a goroutine after the daemon's wait for Done returned,
// running the processor while it was being closed).
func TestReleaseAfterStoppingDoesNotRestart(t *testing.T) {
	r := newGRig(t, GroupConfig{Name: "p", Retry: fastRetry(1)})
	r.g.SetProcessor(boomProc{})
	r.run()
	r.publish("a", "boom", "b")
	r.waitDead()
	r.g.Stopping()
	n, err := r.g.Release(context.Background())
	if err != nil || n != 2 {
		t.Fatalf("release = %d, %v; want the 2 lines the dead batch left", n, err)
	}
	select {
	case <-r.g.Done():
	default:
		t.Fatal("a release after Stopping restarted the group's goroutine")
	}
	if st, _ := r.q.State(); st != feed.Released || r.q.AckPoint() != 3 {
		t.Fatalf("state %v, ack point %d; want RELEASED (LIVE) and 3", st, r.q.AckPoint())
	}
}

// TestReleaseBeforeStoppingRestarts: without the stop, the same release
// restarts the goroutine on the next line.
func TestReleaseBeforeStoppingRestarts(t *testing.T) {
	r := newGRig(t, GroupConfig{Name: "p", Retry: fastRetry(1)})
	r.g.SetProcessor(boomProc{})
	r.run()
	r.publish("a", "boom")
	r.waitDead()
	if n, err := r.g.Release(context.Background()); err != nil || n != 1 {
		t.Fatalf("release = %d, %v", n, err)
	}
	select {
	case <-r.g.Done():
		t.Fatal("the released group did not restart")
	default:
	}
	r.publish("c")
	r.waitAck(3, 10*time.Second)
}

// waitDead waits until the group recovered a panic and parked, DEAD.
func (r *gRig) waitDead() {
	r.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if st, _ := r.q.State(); st == feed.Dead {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatal("the group did not die on the panic")
		}
		time.Sleep(time.Millisecond)
	}
}
