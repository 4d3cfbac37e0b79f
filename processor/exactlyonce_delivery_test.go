package processor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/overload"
)

// gRig runs one group on a real queue behind a real publisher.
type gRig struct {
	t      *testing.T
	q      *feed.Queue
	pub    *feed.Publisher
	g      *Group
	epoch  uint64
	pos    int64
	cancel context.CancelFunc
}

// newGRig makes the queue and the group; set the processor on r.g, then
// call run.
func newGRig(t *testing.T, cfg GroupConfig) *gRig {
	t.Helper()
	q := feed.NewQueue(cfg.Name, 1024, 1<<20, overload.Policy{Kind: overload.Pause})
	cfg.Queue = q
	if cfg.Name == "" {
		cfg.Name = "sub"
	}
	r := &gRig{t: t, q: q, pub: feed.NewPublisher("app", []*feed.Queue{q}, 65536, 512), epoch: 0xe1}
	r.g = NewGroup(cfg)
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

func fastRetry(attempts int) Retry {
	return Retry{Initial: time.Millisecond, Max: 4 * time.Millisecond, Attempts: attempts}
}

// followUp is a processor that, per delivery, registers a completion, then
// keeps working, and whose completion queues further completions.
type followUp struct {
	q      *feed.Queue
	mu     sync.Mutex
	events []string
	bad    []string // completions that saw the line already dispatched
}

func (p *followUp) log(s string) {
	p.mu.Lock()
	p.events = append(p.events, s)
	p.mu.Unlock()
}

func (p *followUp) Process(_ context.Context, d *feed.Delivery) error {
	line := string(d.Line)
	before := p.q.Dispatched()
	check := func(step string) {
		// The batch's dispatch count is published once the whole batch is
		// done: no completion may run after it moved.
		if p.q.Dispatched() != before {
			p.mu.Lock()
			p.bad = append(p.bad, line+"/"+step)
			p.mu.Unlock()
		}
	}
	if !d.OnComplete(func() error {
		check("c1")
		p.log(line + " c1")
		d.OnComplete(func() error { // follow-up work queued by the completion
			check("c2")
			p.log(line + " c2")
			return nil
		})
		return nil
	}) {
		return errors.New("OnComplete refused a positioned delivery")
	}
	p.log(line + " process") // work after registering: before any completion
	return nil
}

// TestCompletionRunsAfterFollowUpWork: a completion runs after the whole
// delivery (the processor's work after registering it), completions queued
// by a completion run too, in order, and all of it before the line counts as
// dispatched.
func TestCompletionRunsAfterFollowUpWork(t *testing.T) {
	r := newGRig(t, GroupConfig{Name: "sub", Retry: fastRetry(3)})
	p := &followUp{q: r.q}
	r.g.SetProcessor(p)
	r.run()
	r.publish("x", "y")
	r.waitAck(2, 10*time.Second)
	want := []string{"x process", "x c1", "x c2", "y process", "y c1", "y c2"}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !slices.Equal(p.events, want) {
		t.Fatalf("events %v, want %v", p.events, want)
	}
	if len(p.bad) > 0 {
		t.Fatalf("completions ran after the dispatch count moved: %v", p.bad)
	}
}

// flaky is a processor whose completion fails a number of times.
type flaky struct {
	fails    int
	calls    atomic.Int64
	accepted atomic.Bool
}

func (p *flaky) Process(_ context.Context, d *feed.Delivery) error {
	p.accepted.Store(d.OnComplete(func() error {
		if int(p.calls.Add(1)) <= p.fails {
			return fmt.Errorf("completion failure %d", p.calls.Load())
		}
		return nil
	}))
	return nil
}

// TestCompletionRetriedThenGivenUp: a failing completion is retried under
// the retry policy; when the attempts run out it is given up, the line still
// counts as dispatched and completionFailures counts it.
func TestCompletionRetriedThenGivenUp(t *testing.T) {
	t.Run("recovers", func(t *testing.T) {
		r := newGRig(t, GroupConfig{Name: "sub", Retry: fastRetry(3)})
		p := &flaky{fails: 2}
		r.g.SetProcessor(p)
		r.run()
		r.publish("x")
		r.waitAck(1, 10*time.Second)
		if got := p.calls.Load(); got != 3 {
			t.Fatalf("completion called %d times, want 3", got)
		}
		if n := r.g.CompletionFailures(); n != 0 {
			t.Fatalf("completionFailures %d, want 0", n)
		}
	})
	t.Run("gives up", func(t *testing.T) {
		r := newGRig(t, GroupConfig{Name: "sub", Retry: fastRetry(3)})
		p := &flaky{fails: 1 << 30}
		r.g.SetProcessor(p)
		r.run()
		r.publish("x", "y")
		r.waitAck(2, 10*time.Second)
		if got := p.calls.Load(); got != 6 {
			t.Fatalf("completion called %d times, want 3 per line", got)
		}
		if n := r.g.CompletionFailures(); n != 2 {
			t.Fatalf("completionFailures %d, want 2", n)
		}
	})
}

// TestDeliveryContract: the fields of a delivery, AlreadyApplied false across
// epochs, and a delivery without a position (downgraded, replayed) refusing
// OnComplete and never "already applied".
func TestDeliveryContract(t *testing.T) {
	b := feed.NewBatch()
	b.Feed, b.Path, b.Epoch, b.FirstSeq = "app", "/in.log", 7, 41
	b.AppendLine([]byte("one"), 4)
	b.AppendLine([]byte("two"), 8)
	var d feed.Delivery
	d.Reset(b, 1)
	if d.Feed != "app" || d.Path != "/in.log" || d.Sequence != 42 || d.Epoch != 7 || d.Position != 8 ||
		d.Attempt != 1 || string(d.Line) != "two" || !d.Positioned() {
		t.Fatalf("delivery %+v", d)
	}
	for _, tc := range []struct {
		epoch uint64
		pos   int64
		want  bool
	}{{7, 8, true}, {7, 100, true}, {7, 7, false}, {8, 100, false}, {6, 100, false}} {
		if got := d.AlreadyApplied(tc.epoch, tc.pos); got != tc.want {
			t.Errorf("AlreadyApplied(%d, %d) = %v, want %v", tc.epoch, tc.pos, got, tc.want)
		}
		if got := b.AlreadyApplied(1, tc.epoch, tc.pos); got != tc.want {
			t.Errorf("Batch.AlreadyApplied(1, %d, %d) = %v, want %v", tc.epoch, tc.pos, got, tc.want)
		}
	}
	if !d.OnComplete(func() error { return nil }) || len(d.Completions()) != 1 {
		t.Fatal("OnComplete refused a positioned delivery")
	}
	b.Positioned = false
	d.Reset(b, 1)
	if d.OnComplete(func() error { return nil }) || len(d.Completions()) != 0 {
		t.Fatal("OnComplete accepted a delivery without a position")
	}
	if d.AlreadyApplied(7, 100) {
		t.Fatal("AlreadyApplied true for a delivery without a position")
	}
}

// TestMarkCoversOnlyTheLinesHandedOver: in line mode (finding the failing
// line of a batch) Mark covers the line handed to the processor, not the
// rest of the batch, so a sink that syncs inline never reports unwritten
// lines durable.
func TestMarkCoversOnlyTheLinesHandedOver(t *testing.T) {
	r := newGRig(t, GroupConfig{Name: "sub", Retry: fastRetry(1)})
	m := &markRecorder{g: r.g, failAt: "c"}
	r.g.SetBatchProcessor(m)
	r.run()
	r.publish("a", "b", "c", "d")
	r.waitAck(4, 10*time.Second)
	m.mu.Lock()
	defer m.mu.Unlock()
	// Batch try: 4 lines, mark 4; it fails at "c" after finishing a, b
	// (done 2). Then from line 2: the batch tail, mark 4, fails (attempts
	// 1) → line mode: "c" alone, mark 3 (fails once more, then succeeds),
	// "d" alone, mark 4.
	lineMode := false
	for _, c := range m.calls {
		if c.mark != uint64(c.last) {
			t.Fatalf("call with lines through %d had mark %d; calls %+v", c.last, c.mark, m.calls)
		}
		lineMode = lineMode || (c.first == 3 && c.last == 3)
	}
	if !lineMode {
		t.Fatalf("no line-mode call for line 3: %+v", m.calls)
	}
}

type markCall struct {
	first, last int // 1-based line numbers handed over
	mark        uint64
}

// markRecorder records Mark per call and fails once on failAt.
type markRecorder struct {
	g      *Group
	failAt string
	failed int
	mu     sync.Mutex
	calls  []markCall
	seen   int
}

func (m *markRecorder) ProcessBatch(_ context.Context, b *feed.Batch) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	idx := -1
	for i, l := range b.Lines {
		if string(l) == m.failAt && m.failed < 2 {
			idx = i
			break
		}
	}
	// Line numbers from the line ends (each line is 1 byte plus '\n').
	firstLine := int(b.Ends[0]) / 2
	lastLine := int(b.Ends[len(b.Ends)-1]) / 2
	m.calls = append(m.calls, markCall{first: firstLine, last: lastLine, mark: m.g.Mark()})
	if idx >= 0 {
		m.failed++
		return idx, errors.New("cannot write " + m.failAt)
	}
	return len(b.Lines), nil
}
