package file_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"tailfeed/feed"
	"tailfeed/internal/fileutil"
	"tailfeed/internal/testutil"
	"tailfeed/overload"
	"tailfeed/pointer"
	"tailfeed/processor"
	"tailfeed/source/file"
)

// The rig runs a real file.Source, feed.Publisher and processor.Group
// in-process on a file in t.TempDir(), with a recording subscriber.

type rigOpts struct {
	strategy   file.Strategy
	noPointer  bool          // COMMITTED without a pointer is not allowed: use another strategy
	poll       time.Duration // default 50ms
	rotateWait time.Duration // default 300ms
	noNotify   bool
	delay      time.Duration  // per-line delay of the subscriber
	block      chan struct{}  // every line waits until it is closed
	notify     chan time.Time // gets the time of each delivery
	ptrMap     func(*os.File) (pointer.Mapping, error)
	batchLines int
	openHook   func()
	startHook  func(at string)                     // file.Config.StartHook
	outputs    []string                            // file.Config.Outputs
	hold       map[string]chan struct{}            // a line listed waits until its channel is closed
	archive    string                              // the subscriber also appends every line to this file (as the file sink)
	wrap       func(file.Publisher) file.Publisher // wraps the publisher the source sees
	onLoss     func(file.Loss)                     // file.Config.OnLoss
	rotated    []string                            // file.Config.RotatedNames
	pinned     bool                                // file.Config.Pinned (a glob stream)
	resume     *file.Resume                        // file.Config.Resume (a reload's)
	maxLine    int                                 // file.Config.MaxLine (default 1<<16)
	cfgMod     func(*file.Config)                  // changes the source's config last
}

type rig struct {
	t    testing.TB
	dir  string
	path string
	opts rigOpts

	ptr    *pointer.Pointer
	pub    *feed.Publisher
	src    *file.Source
	group  *processor.Group
	rec    *recorder
	logs   *syncBuf
	cancel context.CancelFunc
	gstop  context.CancelFunc
	done   chan error
}

// newRig makes a rig on dir/app.log (dir "" makes a temp dir).
func newRig(t testing.TB, dir string, o rigOpts) *rig {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	r := &rig{t: t}
	t.Cleanup(r.logOnFailure)
	if o.poll == 0 {
		o.poll = 50 * time.Millisecond
	}
	if o.rotateWait == 0 {
		o.rotateWait = 300 * time.Millisecond
	}
	if o.batchLines == 0 {
		o.batchLines = 64
	}
	if o.maxLine == 0 {
		o.maxLine = 1 << 16
	}
	r.dir, r.path, r.opts = dir, filepath.Join(dir, "app.log"), o
	return r
}

// logOnFailure prints the last run's source log (its tail) when the test
// failed: a flake seen once in CI keeps its trace.
func (r *rig) logOnFailure() {
	if !r.t.Failed() || r.logs == nil {
		return
	}
	l := r.logs.String()
	if len(l) > 64<<10 {
		l = "…" + l[len(l)-64<<10:]
	}
	r.t.Logf("source log (the last run):\n%s", l)
}

// start opens the pointer (COMMITTED) and runs the source and one group.
func (r *rig) start() *rig {
	r.t.Helper()
	r.logs = &syncBuf{}
	log := hclog.New(&hclog.LoggerOptions{Output: r.logs, Level: hclog.Debug})
	if r.opts.strategy == file.Committed {
		p, err := pointer.Open(filepath.Join(r.dir, "app.ptr"), pointer.Options{Logger: log, Map: r.opts.ptrMap,
			EpochsPath: filepath.Join(r.dir, "app.epochs"), Input: r.path})
		if err != nil {
			r.t.Fatal(err)
		}
		r.ptr = p
	}
	q := feed.NewQueue("rec", 256, 1<<20, overload.Policy{Kind: overload.Pause})
	r.pub = feed.NewPublisher("app", []*feed.Queue{q}, 4096, r.opts.batchLines)
	r.rec = &recorder{delay: r.opts.delay, block: r.opts.block, notify: r.opts.notify, hold: r.opts.hold}
	if r.opts.archive != "" {
		f, err := os.OpenFile(r.opts.archive, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			r.t.Fatal(err)
		}
		r.t.Cleanup(func() { f.Close() })
		r.rec.archive = f
	}
	r.group = processor.NewGroup(processor.GroupConfig{
		Name: "rec", Queue: q, Processor: r.rec, Logger: log,
		Retry: processor.Retry{Initial: time.Millisecond, Max: time.Millisecond, Attempts: 1},
		Wake:  r.pub.Poke,
	})
	var pub file.Publisher = r.pub
	if r.opts.wrap != nil {
		pub = r.opts.wrap(pub)
	}
	fc := file.Config{
		Feed: "app", Path: r.path, Strategy: r.opts.strategy, MaxLine: r.opts.maxLine,
		BatchLines: r.opts.batchLines, BatchBytes: 1 << 20,
		Poll: r.opts.poll, RotateWait: r.opts.rotateWait, CommitSync: 5 * time.Millisecond,
		Pointer: r.ptr, Logger: log, NoNotify: r.opts.noNotify, OpenHook: r.opts.openHook, StartHook: r.opts.startHook,
		Outputs: r.opts.outputs, OnLoss: r.opts.onLoss, RotatedNames: r.opts.rotated, Pinned: r.opts.pinned,
		Resume: r.opts.resume,
	}
	if r.opts.cfgMod != nil {
		r.opts.cfgMod(&fc)
	}
	r.src = file.New(fc, pub)
	gctx, gstop := context.WithCancel(context.Background())
	r.gstop = gstop
	r.group.Start(gctx)
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.done = make(chan error, 1)
	go func() { r.done <- r.src.Run(ctx) }()
	r.t.Cleanup(r.stop)
	return r
}

// stop performs the daemon's ordered shutdown; it may be called again.
func (r *rig) stop() {
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	<-r.done
	dctx, c := context.WithTimeout(context.Background(), 10*time.Second)
	r.src.Drain(dctx)
	c()
	r.gstop()
	<-r.group.Done()
	if err := r.src.Close(); err != nil {
		r.t.Errorf("source close: %v", err)
	}
	if os.Getenv("RIG_LOG") != "" {
		r.t.Logf("log:\n%s", r.logs.String())
	}
}

// waitFor polls cond until it holds or the deadline passes.
func (r *rig) waitFor(what string, d time.Duration, cond func() bool) {
	r.t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			r.t.Fatalf("timed out after %v waiting for %s (state %s, read %d lines, got %d, detail %q)\nlog:\n%s",
				d, what, r.src.State(), r.src.LinesRead(), r.rec.len(), r.src.Detail(), tailOf(r.logs.String(), 40))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitLines waits until the subscriber got n lines.
func (r *rig) waitLines(n int) []got {
	r.t.Helper()
	r.waitFor(fmt.Sprintf("%d lines", n), 20*time.Second, func() bool { return r.rec.len() >= n })
	return r.rec.all()
}

// waitSettled waits until the source is caught up (or waiting for its
// file) with nothing unacknowledged, and the pointer (if any) synced.
func (r *rig) waitSettled() {
	r.t.Helper()
	r.waitFor("settled", 20*time.Second, func() bool {
		st := r.src.State()
		ok := (st == file.CaughtUp || st == file.WaitingForFile) && r.pub.Pending() == 0
		if r.ptr != nil {
			ok = ok && r.src.CommitOK() && r.src.SyncedSeq() >= r.pub.Acknowledged()
		}
		return ok
	})
}

// warned reports whether the log holds a WARN line containing s.
func (r *rig) warned(s string) bool {
	for _, l := range strings.Split(r.logs.String(), "\n") {
		if strings.Contains(l, "[WARN]") && strings.Contains(l, s) {
			return true
		}
	}
	return false
}

// got is one delivery as the subscriber saw it.
type got struct {
	Line       string
	Epoch      uint64
	Pos        int64
	Positioned bool
	Seq        uint64
}

// recorder is a Processor that keeps every delivery.
type recorder struct {
	delay   time.Duration
	block   chan struct{}  // non-nil: every line waits until it is closed
	notify  chan time.Time // non-nil: gets the time of each delivery (non-blocking)
	hold    map[string]chan struct{}
	archive *os.File // non-nil: every line is appended to it
	mu      sync.Mutex
	got     []got
}

func (c *recorder) Process(ctx context.Context, d *feed.Delivery) error {
	if c.notify != nil {
		select {
		case c.notify <- time.Now():
		default:
		}
	}
	block := c.block
	if h, ok := c.hold[string(d.Line)]; ok {
		block = h
	}
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if c.delay > 0 {
		time.Sleep(c.delay)
	}
	if c.archive != nil {
		if _, err := c.archive.Write(append(append([]byte(nil), d.Line...), '\n')); err != nil {
			return err
		}
	}
	c.mu.Lock()
	c.got = append(c.got, got{string(d.Line), d.Epoch, d.Position, d.Positioned(), d.Sequence})
	c.mu.Unlock()
	return nil
}

func (c *recorder) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.got)
}

// since is a copy of the deliveries from the i-th on.
func (c *recorder) since(i int) []got {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i >= len(c.got) {
		return nil
	}
	return append([]got(nil), c.got[i:]...)
}

func (c *recorder) all() []got {
	return c.since(0)
}

// syncBuf is a goroutine-safe log sink.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func tailOf(s string, n int) string {
	l := strings.Split(s, "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// appendTo appends lines to path (created if missing).
func appendTo(t testing.TB, path string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if _, err := f.WriteString(b.String()); err != nil {
		t.Fatal(err)
	}
}

// numbered returns n lines "<prefix>-<i>" for i in [from, from+n).
func numbered(prefix string, from, n int) []string {
	return testutil.Numbered(prefix+"-%05d", from, n)
}

// replaceWith writes lines to a temp file and renames it onto path.
func replaceWith(t testing.TB, path string, lines ...string) {
	t.Helper()
	tmp := path + ".tmp"
	os.Remove(tmp)
	appendTo(t, tmp, lines...)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// identity is a file's device and inode.
func identity(t testing.TB, path string) [2]uint64 {
	t.Helper()
	dev, ino, err := fileutil.DevInoPath(path)
	if err != nil {
		t.Fatal(err)
	}
	return [2]uint64{dev, ino}
}

// lineEnds maps each line of the file at path to the offset after it.
func lineEnds(t testing.TB, path string) map[string]int64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]int64{}
	var off int64
	for _, l := range bytes.SplitAfter(data, []byte("\n")) {
		off += int64(len(l))
		if len(l) > 0 && l[len(l)-1] == '\n' {
			m[string(l[:len(l)-1])] = off
		}
	}
	return m
}

// counts counts deliveries per line.
func counts(gs []got) map[string]int {
	m := map[string]int{}
	for _, g := range gs {
		m[g.Line]++
	}
	return m
}

// lines returns the delivered lines in order.
func lines(gs []got) []string {
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = g.Line
	}
	return out
}
