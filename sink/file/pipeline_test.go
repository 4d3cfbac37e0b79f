package file_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/internal/grouptest"
	"tailfeed/overload"
	"tailfeed/pointer"
	"tailfeed/processor"
	"tailfeed/sink/file"
	source "tailfeed/source/file"
)

// The pipeline runs what the daemon runs for one COMMITTED feed, in
// process: a real file.Source on a file in t.TempDir() with a real pointer
// file, a feed.Publisher, one PAUSE queue and one processor.Group per
// subscriber.

// subSpec builds one subscriber's processor once its group exists (a sink
// with an fsync interval takes the group as its Checkpoint).
type subSpec struct {
	name  string
	build func(t *testing.T, g *processor.Group) processor.BatchProcessor
}

type pipeOpts struct {
	queueLines int // per subscriber queue (default 1024)
	batchLines int // per batch (default queueLines/2, as the daemon does)
	maxPending int // maxPendingAcks (default 65536)
	subs       []subSpec
}

type pipeline struct {
	t       *testing.T
	in      string
	ptrPath string
	ptr     *pointer.Pointer
	pub     *feed.Publisher
	src     *source.Source
	queues  []*feed.Queue
	groups  []*processor.Group
	procs   []processor.BatchProcessor
	cancel  context.CancelFunc
	gstop   context.CancelFunc
	done    chan error
	stopped bool
}

func startPipeline(t *testing.T, dir string, o pipeOpts) *pipeline {
	t.Helper()
	if o.queueLines == 0 {
		o.queueLines = 1024
	}
	if o.batchLines == 0 {
		o.batchLines = o.queueLines / 2
	}
	if o.maxPending == 0 {
		o.maxPending = 65536
	}
	p := &pipeline{t: t, in: filepath.Join(dir, "app.log"), ptrPath: filepath.Join(dir, "app.ptr")}
	ptr, err := pointer.Open(p.ptrPath, pointer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p.ptr = ptr
	for _, s := range o.subs {
		p.queues = append(p.queues, feed.NewQueue(s.name, o.queueLines, 4<<20, overload.Policy{Kind: overload.Pause}))
	}
	p.pub = feed.NewPublisher("app", p.queues, o.maxPending, o.batchLines)
	gctx, gstop := context.WithCancel(context.Background())
	p.gstop = gstop
	for i, s := range o.subs {
		g := processor.NewGroup(processor.GroupConfig{
			Name: s.name, Queue: p.queues[i], Wake: p.pub.Poke,
			Retry: processor.Retry{Initial: time.Millisecond, Max: 5 * time.Millisecond, Attempts: 3},
		})
		bp := s.build(t, g)
		g.SetBatchProcessor(bp)
		p.groups = append(p.groups, g)
		p.procs = append(p.procs, bp)
	}
	for _, g := range p.groups {
		g.Start(gctx)
	}
	p.src = source.New(source.Config{
		Feed: "app", Path: p.in, Strategy: source.Committed, MaxLine: 1 << 20,
		BatchLines: o.batchLines, BatchBytes: 1 << 20,
		Poll: 10 * time.Millisecond, RotateWait: 5 * time.Second, CommitSync: 2 * time.Millisecond,
		Pointer: ptr,
	}, p.pub)
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	p.done = make(chan error, 1)
	go func() { p.done <- p.src.Run(ctx) }()
	t.Cleanup(p.stop)
	return p
}

// stop is the daemon's ordered shutdown: stop the source, let the groups
// drain, stop them, close the processors (final flush), final commit.
func (p *pipeline) stop() {
	if p.stopped {
		return
	}
	p.stopped = true
	p.cancel()
	if err := <-p.done; err != nil {
		p.t.Errorf("source: %v", err)
	}
	dctx, c := context.WithTimeout(context.Background(), 3*time.Second) // shutdownTimeout
	p.src.Drain(dctx)
	c()
	p.gstop()
	for _, g := range p.groups {
		select {
		case <-g.Done():
		case <-time.After(10 * time.Second):
			p.t.Errorf("group %s did not stop", g.Name())
		}
	}
	for _, bp := range p.procs {
		if c, ok := bp.(processor.Closer); ok {
			if err := c.Close(); err != nil {
				p.t.Errorf("close: %v", err)
			}
		}
	}
	if err := p.src.Close(); err != nil {
		p.t.Errorf("source close: %v", err)
	}
}

// committed is the offset in the pointer file as kill -9 would leave it.
func (p *pipeline) committed() int64 {
	rec, err := pointer.Inspect(p.ptrPath)
	if err != nil {
		p.t.Errorf("pointer.Inspect: %v", err)
		return -1
	}
	return rec.Offset
}

func (p *pipeline) waitCommitted(off int64) {
	p.t.Helper()
	grouptest.WaitFor(p.t, fmt.Sprintf("pointer offset %d", off), func() bool { return p.committed() == off })
}

// appendInput appends lines first..first+n-1 to the input and returns its
// new size. Line lengths vary so that a line out of place shows.
func appendInput(t *testing.T, path string, first, n int) int64 {
	t.Helper()
	size, err := writeLines(path, first, n)
	if err != nil {
		t.Fatal(err)
	}
	return size
}

func writeLines(path string, first, n int) (int64, error) {
	var b bytes.Buffer
	for i := first; i < first+n; i++ {
		fmt.Fprintf(&b, "%d:%s\n", i, "abcdefghijklm"[:i%13])
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if _, err := f.Write(b.Bytes()); err != nil {
		return 0, err
	}
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

func sameFile(t *testing.T, got, want string) {
	t.Helper()
	g, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g, w) {
		i := 0
		for i < len(g) && i < len(w) && g[i] == w[i] {
			i++
		}
		lo := max(0, i-40)
		t.Fatalf("%s (%d bytes) differs from %s (%d bytes) at byte %d:\n got %q\nwant %q",
			got, len(g), want, len(w), i, g[lo:min(len(g), i+40)], w[lo:min(len(w), i+40)])
	}
}

// fileSink opens a file sink on path (fsync never) for a subscriber.
func fileSink(path string) func(t *testing.T, g *processor.Group) processor.BatchProcessor {
	return func(t *testing.T, g *processor.Group) processor.BatchProcessor {
		s, err := file.Open(file.Config{Path: path, Checkpoint: g})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

// slowSink wraps a sink: the first call waits until gate is closed, every
// call sleeps pause, and pos is the position after the last line it
// finished. It checks that positions only ever go up.
type slowSink struct {
	t     *testing.T
	next  processor.BatchProcessor
	gate  chan struct{}
	pause time.Duration
	pos   atomic.Int64
	calls atomic.Int64
}

func (s *slowSink) ProcessBatch(ctx context.Context, b *feed.Batch) (int, error) {
	if s.calls.Add(1) == 1 && s.gate != nil {
		select {
		case <-s.gate:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	if s.pause > 0 {
		time.Sleep(s.pause)
	}
	if len(b.Ends) > 0 && b.Ends[0] <= s.pos.Load() {
		s.t.Errorf("line ending at %d delivered after the line ending at %d", b.Ends[0], s.pos.Load())
	}
	n, err := s.next.ProcessBatch(ctx, b)
	if n > 0 {
		s.pos.Store(b.Ends[n-1])
	}
	return n, err
}

func (s *slowSink) Close() error {
	if c, ok := s.next.(processor.Closer); ok {
		return c.Close()
	}
	return nil
}

// TestSlowConsumerPauseLosesNothing is issue 3 acceptance 2: 100,000 lines
// through a 1,024-line queue into a sink slower than the source. PAUSE
// drops nothing, delivers each line exactly once and in order, and pauses.
func TestSlowConsumerPauseLosesNothing(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.log")
	const lines = 100_000
	size := appendInput(t, filepath.Join(dir, "app.log"), 1, lines)
	slow := &slowSink{t: t, gate: make(chan struct{}), pause: 200 * time.Microsecond}
	p := startPipeline(t, dir, pipeOpts{queueLines: 1024, subs: []subSpec{{"archive",
		func(t *testing.T, g *processor.Group) processor.BatchProcessor {
			slow.next = fileSink(out)(t, g)
			return slow
		}}}})

	// While the sink is stuck the source stops reading: one batch in the
	// sink, a full queue, one batch kept back.
	grouptest.WaitFor(t, "the feed paused", p.pub.Paused)
	if seq := p.pub.Sequence(); seq > 512+1024 {
		t.Fatalf("published %d lines into a stuck 1,024-line queue", seq)
	}
	if read := p.src.LinesRead(); read > 512+1024+512 {
		t.Fatalf("read %d lines while paused", read)
	}
	close(slow.gate)

	p.waitCommitted(size)
	p.stop()
	sameFile(t, out, p.in)
	q := p.queues[0]
	if d, r := q.Counters.Dropped.Load(), q.Counters.Refused.Load(); d != 0 || r != 0 {
		t.Fatalf("dropped %d, refused %d; want 0", d, r)
	}
	if p.pub.Pauses() == 0 {
		t.Fatal("pauses = 0 with a slow consumer")
	}
	if p.pub.Sequence() != lines || p.pub.Acknowledged() != lines || q.Dispatched() != lines {
		t.Fatalf("sequence %d acknowledged %d dispatched %d, want %d", p.pub.Sequence(), p.pub.Acknowledged(), q.Dispatched(), lines)
	}
	t.Logf("%d lines, %d pauses, %d sink calls", lines, p.pub.Pauses(), slow.calls.Load())
}

// TestPointerFollowsSlowerSubscriber is issue 3 acceptance 3: with two
// subscribers, one slow, the committed offset is never past the slower
// one's processed position, and ends at the file's end.
func TestPointerFollowsSlowerSubscriber(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "app.log")
	appendInput(t, in, 1, 10_000)
	fast := &slowSink{t: t, next: discardAll{}}
	slow := &slowSink{t: t, next: discardAll{}, pause: 2 * time.Millisecond}
	wrap := func(s *slowSink) func(*testing.T, *processor.Group) processor.BatchProcessor {
		return func(*testing.T, *processor.Group) processor.BatchProcessor { return s }
	}
	p := startPipeline(t, dir, pipeOpts{queueLines: 256, subs: []subSpec{{"fast", wrap(fast)}, {"slow", wrap(slow)}}})

	var samples, ahead int
	var size atomic.Int64
	size.Store(-1)
	go func() {
		for i := 1; i < 10; i++ {
			s, err := writeLines(in, 10_000+(i-1)*1000+1, 1000)
			if err != nil {
				t.Error(err)
				return
			}
			if i == 9 {
				size.Store(s)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		// The pointer first: the slow position read after it can only be
		// higher than when the pointer was committed.
		off := p.committed()
		sp, fp := slow.pos.Load(), fast.pos.Load()
		if off > sp {
			t.Fatalf("pointer offset %d is past the slow subscriber's position %d", off, sp)
		}
		samples++
		if fp > sp && off > 0 {
			ahead++
		}
		if s := size.Load(); s > 0 && off == s {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pointer at %d, slow at %d, fast at %d after 30s", off, sp, fp)
		}
		time.Sleep(100 * time.Microsecond)
	}
	if sp, fp, s := slow.pos.Load(), fast.pos.Load(), size.Load(); sp != s || fp != s {
		t.Fatalf("at the end: slow %d fast %d, file %d", sp, fp, s)
	}
	if samples < 20 {
		t.Fatalf("only %d samples of the pointer", samples)
	}
	t.Logf("%d samples, %d with the fast subscriber ahead of the slow one", samples, ahead)
}

// TestWindowCapPausesSource: with maxPendingAcks below what the queue
// holds, the window is what stops the source: at most maxPendingAcks lines
// await acknowledgement, and everything arrives once the sink goes on.
func TestWindowCapPausesSource(t *testing.T) {
	dir := t.TempDir()
	size := appendInput(t, filepath.Join(dir, "app.log"), 1, 5000)
	slow := &slowSink{t: t, next: discardAll{}, gate: make(chan struct{})}
	p := startPipeline(t, dir, pipeOpts{queueLines: 1024, batchLines: 100, maxPending: 300, subs: []subSpec{{"slow",
		func(*testing.T, *processor.Group) processor.BatchProcessor { return slow }}}})
	grouptest.WaitFor(t, "the window pause", func() bool { return p.pub.Paused() && p.pub.PauseReason() == "window full" })
	if seq, pend := p.pub.Sequence(), p.pub.Pending(); seq != 300 || pend != 300 {
		t.Fatalf("sequence %d, pending %d with maxPendingAcks 300 and nothing acknowledged, want 300 and 300", seq, pend)
	}
	// The group pops its first batch on its own time: wait until it is
	// inside the stuck sink (the depth is never below 200 before the gate
	// opens: nothing else is taken).
	grouptest.WaitFor(t, "the first batch in the stuck sink", func() bool { return slow.calls.Load() == 1 })
	if d := p.queues[0].Depth(); d != 200 {
		t.Fatalf("queue depth %d, want 200 (one batch in the stuck sink)", d)
	}
	close(slow.gate)
	p.waitCommitted(size)
	if slow.pos.Load() != size {
		t.Fatalf("sink at %d, want %d", slow.pos.Load(), size)
	}
}
