package pull

import (
	"context"
	"fmt"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/overload"
	"tailfeed/processor"
)

// The group rig of processor's tests (exactlyonce_delivery_test.go): a
// group on a real queue behind a real publisher.

// gRig runs one group on a real queue behind a real publisher.
type gRig struct {
	t      *testing.T
	q      *feed.Queue
	pub    *feed.Publisher
	g      *processor.Group
	epoch  uint64
	pos    int64
	cancel context.CancelFunc
}

// newGRig makes the queue and the group; set the processor on r.g, then
// call run.
func newGRig(t *testing.T, cfg processor.GroupConfig) *gRig {
	t.Helper()
	q := feed.NewQueue(cfg.Name, 1024, 1<<20, overload.Policy{Kind: overload.Pause})
	cfg.Queue = q
	if cfg.Name == "" {
		cfg.Name = "sub"
	}
	r := &gRig{t: t, q: q, pub: feed.NewPublisher("app", []*feed.Queue{q}, 65536, 512), epoch: 0xe1}
	r.g = processor.NewGroup(cfg)
	return r
}

func (r *gRig) run() {
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.g.Start(ctx)
	r.t.Cleanup(func() {
		cancel()
		<-r.g.Done()
	})
}

// publish publishes lines as one batch (each line plus '\n' in the file).
func (r *gRig) publish(lines ...string) *feed.Batch {
	r.t.Helper()
	b := feed.NewBatch()
	b.Feed, b.Path, b.Epoch = "app", "/in.log", r.epoch
	for _, l := range lines {
		r.pos += int64(len(l)) + 1
		b.AppendLine([]byte(l), r.pos)
	}
	if !r.pub.TryPublish(b) {
		r.t.Fatal("publish refused")
	}
	return b
}

// waitAck waits until the queue's ack point reaches n.
func (r *gRig) waitAck(n uint64, within time.Duration) {
	r.t.Helper()
	deadline := time.Now().Add(within)
	for r.q.AckPoint() < n {
		if time.Now().After(deadline) {
			st, why := r.q.State()
			r.t.Fatalf("ack point %d (dispatched %d), want %d; state %v %q", r.q.AckPoint(), r.q.Dispatched(), n, st, why)
		}
		time.Sleep(time.Millisecond)
	}
}

func fastRetry(attempts int) processor.Retry {
	return processor.Retry{Initial: time.Millisecond, Max: 4 * time.Millisecond, Attempts: attempts}
}

// eoLines returns n lines "p-00000"… (exactlyonce_test.go).
func eoLines(p string, from, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%05d", p, from+i)
	}
	return out
}

func ledgerDelivery(line string, epoch uint64, pos int64) *feed.Delivery {
	b := feed.NewBatch()
	b.Feed, b.Path, b.Epoch = "app", "/in.log", epoch
	b.AppendLine([]byte(line), pos)
	var d feed.Delivery
	d.Reset(b, 0)
	return &d
}

// after start (each line plus '\n').
func eoBatch(epoch uint64, start int64, lines ...string) *feed.Batch {
	b := &feed.Batch{Feed: "app", Epoch: epoch, Positioned: true}
	pos := start
	for _, l := range lines {
		pos += int64(len(l)) + 1
		b.AppendLine([]byte(l), pos)
	}
	return b
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
