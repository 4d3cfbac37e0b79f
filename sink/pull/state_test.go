package pull

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/processor"
)

// TestPullHoldStateHasOneWriter: lines run out of attempts on the timer
// goroutine (a hold) while the group finishes batches and POST
// /admin/release gives the held lines up, all at once (run it with -race).
// The subscriber's state is kept by the group alone: whenever the pull
// holds a line the subscriber shows FENCED (the group's per-batch unfence
// never lifts the sink's hold), every release is counted once, and in the
// end every line is acknowledged or released.
func TestPullHoldStateHasOneWriter(t *testing.T) {
	retry := processor.Retry{Initial: time.Millisecond, Max: 2 * time.Millisecond, Attempts: 1}
	r := newPullRig(t, processor.GroupConfig{Retry: retry}, time.Millisecond, 1<<16)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var stopOnce sync.Once
	halt := func() { stopOnce.Do(func() { close(stop); wg.Wait() }) }
	defer halt() // before the rig's cleanup stops the group
	var violations atomic.Int64
	var lastViolation atomic.Value
	wg.Add(3)
	go func() { // a client that never acknowledges: deliveries time out on the timer goroutine
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			r.p.Pull(context.Background(), 100, time.Millisecond, false)
		}
	}()
	var released atomic.Uint64
	go func() { // the operator
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			n, err := r.G.Release(ctx)
			cancel()
			if err == nil {
				released.Add(n)
			} else if !errors.Is(err, processor.ErrNotHeld) {
				t.Errorf("release: %v", err)
				return
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()
	go func() { // the observer: a held line always shows
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			r.p.mu.Lock()
			held := r.p.held
			st, why := r.Q.State()
			r.p.mu.Unlock()
			if held > 0 && st != feed.Fenced {
				violations.Add(1)
				lastViolation.Store(fmt.Sprintf("%d lines held, state %v %q", held, st, why))
			}
		}
	}()
	total := 0
	for i := 0; i < 300; i++ {
		// The group unfences after each batch; a held subscriber stalls the
		// feed (a refused publish), until the operator releases it.
		b := feed.NewBatch()
		b.Feed, b.Path, b.Epoch = "app", "/in.log", r.Epoch
		for _, l := range []string{fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i)} {
			r.Pos += int64(len(l)) + 1
			b.AppendLine([]byte(l), r.Pos)
		}
		for start := time.Now(); !r.Pub.TryPublish(b); time.Sleep(100 * time.Microsecond) {
			if time.Since(start) > 10*time.Second {
				t.Fatal("publish refused for 10 s")
			}
		}
		total += 2
		time.Sleep(100 * time.Microsecond)
	}
	time.Sleep(50 * time.Millisecond)
	halt()
	if v := violations.Load(); v > 0 {
		t.Fatalf("%d times a held line did not show: last %v", v, lastViolation.Load())
	}
	// Drain: acknowledge what is out, release what is held.
	deadline := time.Now().Add(10 * time.Second)
	for r.Q.AckPoint() < uint64(total) {
		if time.Now().After(deadline) {
			st, why := r.Q.State()
			t.Fatalf("ack point %d of %d; state %v %q", r.Q.AckPoint(), total, st, why)
		}
		for _, e := range r.p.Pull(context.Background(), 1000, time.Millisecond, false) {
			r.p.Ack(e.DeliveryID)
		}
		if n, err := r.G.Release(context.Background()); err == nil {
			released.Add(n)
		}
	}
	if released.Load() == 0 || r.Q.ReleasedLines() != released.Load() {
		t.Fatalf("releases answered %d lines, the queue counts %d (want equal, > 0)", released.Load(), r.Q.ReleasedLines())
	}
	if st, _ := r.Q.State(); st == feed.Fenced {
		t.Fatal("still fenced with nothing held")
	}
}
