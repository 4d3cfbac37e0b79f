// Package grouptest holds the test helpers the sink packages share: a
// group on a real queue behind a real publisher, and line makers. It is
// imported by tests only (processor's own tests keep an in-package copy:
// they cannot import a package that imports processor).
package grouptest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/overload"
	"tailfeed/processor"
)

// Rig runs one group on a real queue behind a real publisher.
type Rig struct {
	T      *testing.T
	Q      *feed.Queue
	Pub    *feed.Publisher
	G      *processor.Group
	Epoch  uint64
	Pos    int64
	Cancel context.CancelFunc
}

// New makes the queue and the group; set the processor on r.G, then call
// Run.
func New(t *testing.T, cfg processor.GroupConfig) *Rig {
	t.Helper()
	q := feed.NewQueue(cfg.Name, 1024, 1<<20, overload.Policy{Kind: overload.Pause})
	cfg.Queue = q
	if cfg.Name == "" {
		cfg.Name = "sub"
	}
	r := &Rig{T: t, Q: q, Pub: feed.NewPublisher("app", []*feed.Queue{q}, 65536, 512), Epoch: 0xe1}
	r.G = processor.NewGroup(cfg)
	return r
}

// Run starts the group; the test's cleanup stops it.
func (r *Rig) Run() {
	ctx, cancel := context.WithCancel(context.Background())
	r.Cancel = cancel
	r.G.Start(ctx)
	r.T.Cleanup(func() {
		cancel()
		<-r.G.Done()
	})
}

// Publish publishes lines as one batch (each line plus '\n' in the file).
func (r *Rig) Publish(lines ...string) *feed.Batch {
	r.T.Helper()
	b := feed.NewBatch()
	b.Feed, b.Path, b.Epoch, b.Start = "app", "/in.log", r.Epoch, r.Pos
	for _, l := range lines {
		r.Pos += int64(len(l)) + 1
		b.AppendLine([]byte(l), r.Pos)
	}
	if !r.Pub.TryPublish(b) {
		r.T.Fatal("publish refused")
	}
	return b
}

// WaitAck waits until the queue's ack point reaches n.
func (r *Rig) WaitAck(n uint64, within time.Duration) {
	r.T.Helper()
	deadline := time.Now().Add(within)
	for r.Q.AckPoint() < n {
		if time.Now().After(deadline) {
			st, why := r.Q.State()
			r.T.Fatalf("ack point %d (dispatched %d), want %d; state %v %q", r.Q.AckPoint(), r.Q.Dispatched(), n, st, why)
		}
		time.Sleep(time.Millisecond)
	}
}

// FastRetry is a retry policy of attempts tries, 1 ms doubling to 4 ms.
func FastRetry(attempts int) processor.Retry {
	return processor.Retry{Initial: time.Millisecond, Max: 4 * time.Millisecond, Attempts: attempts}
}

// Lines returns n lines "p-00000"… from from.
func Lines(p string, from, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%05d", p, from+i)
	}
	return out
}

// Batch makes a positioned batch of lines under epoch, the first ending at
// the position after start (each line plus '\n').
func Batch(epoch uint64, start int64, lines ...string) *feed.Batch {
	b := &feed.Batch{Feed: "app", Epoch: epoch, Positioned: true}
	pos := start
	for _, l := range lines {
		pos += int64(len(l)) + 1
		b.AppendLine([]byte(l), pos)
	}
	return b
}

// Delivery is a delivery of one line at (epoch, pos).
func Delivery(line string, epoch uint64, pos int64) *feed.Delivery {
	b := feed.NewBatch()
	b.Feed, b.Path, b.Epoch = "app", "/in.log", epoch
	b.AppendLine([]byte(line), pos)
	var d feed.Delivery
	d.Reset(b, 0)
	return &d
}

// WaitFor waits up to 10 s for cond.
func WaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
