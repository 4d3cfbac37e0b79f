package file_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/overload"
	"tailfeed/pointer"
	"tailfeed/processor"
	"tailfeed/source/file"
)

// diskMapping models a pointer mapping whose writes reach the disk only
// through a successful Flush (msync): Bytes is a private copy, Flush writes
// it to the file and fsyncs, and fails with EIO while failing is set — the
// stored record then never reaches the disk, as after a power loss.
type diskMapping struct {
	f       *os.File
	buf     []byte
	failing *atomic.Bool
	flushes atomic.Int64
}

func (m *diskMapping) Bytes() []byte { return m.buf }

func (m *diskMapping) Flush() error {
	m.flushes.Add(1)
	if m.failing.Load() {
		return &fs.PathError{Op: "msync", Path: m.f.Name(), Err: syscall.EIO}
	}
	if _, err := m.f.WriteAt(m.buf, 0); err != nil {
		return err
	}
	return m.f.Sync()
}

func (m *diskMapping) Close() error { return nil }

// lineLog records the lines a subscriber finished, in order.
type lineLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *lineLog) Process(_ context.Context, d *feed.Delivery) error {
	l.mu.Lock()
	l.lines = append(l.lines, string(d.Line))
	l.mu.Unlock()
	return nil
}

func (l *lineLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// msyncRun is one in-process run of a COMMITTED source with one group.
type msyncRun struct {
	src    *file.Source
	pub    *feed.Publisher
	ptr    *pointer.Pointer
	g      *processor.Group
	log    *lineLog
	cancel context.CancelFunc
	gstop  context.CancelFunc
	done   chan error
}

func startMsyncRun(t *testing.T, dir string, m func(*os.File) (pointer.Mapping, error), armed func()) *msyncRun {
	t.Helper()
	p, err := pointer.Open(filepath.Join(dir, "app.ptr"), pointer.Options{Map: m})
	if err != nil {
		t.Fatal(err)
	}
	if armed != nil {
		armed()
	}
	r := &msyncRun{ptr: p, log: &lineLog{}, done: make(chan error, 1)}
	q := feed.NewQueue("rec", 256, 1<<20, overload.Policy{Kind: overload.Pause})
	r.pub = feed.NewPublisher("app", []*feed.Queue{q}, 4096, 64)
	r.g = processor.NewGroup(processor.GroupConfig{Name: "rec", Queue: q, Processor: r.log, Wake: r.pub.Poke,
		Retry: processor.Retry{Initial: time.Millisecond, Max: time.Millisecond, Attempts: 1}})
	r.src = file.New(file.Config{Feed: "app", Path: filepath.Join(dir, "app.log"), Strategy: file.Committed,
		MaxLine: 1 << 16, BatchLines: 64, BatchBytes: 1 << 20, Poll: 20 * time.Millisecond,
		RotateWait: time.Second, CommitSync: 5 * time.Millisecond, Pointer: p, NoNotify: true}, r.pub)
	gctx, gstop := context.WithCancel(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	r.gstop, r.cancel = gstop, cancel
	r.g.Start(gctx)
	go func() { r.done <- r.src.Run(ctx) }()
	return r
}

// crash ends the run without a final commit (what kill -9 leaves: only what
// reached the disk).
func (r *msyncRun) crash() {
	r.cancel()
	<-r.done
	r.gstop()
	<-r.g.Done()
	r.ptr.Close()
}

func waitCond(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func diskOffset(t *testing.T, dir string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "app.ptr"))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := pointer.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return rec.Offset
}

func appendNumbered(t *testing.T, path, prefix string, n int) []string {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	var buf []byte
	for i := range n {
		l := fmt.Sprintf("%s-%04d", prefix, i)
		out = append(out, l)
		buf = append(buf, l...)
		buf = append(buf, '\n')
	}
	if _, err := f.Write(buf); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPointerMsyncFailure (DESIGN §3, §9): a failing msync is counted in
// commitFailures; the lines stay unacknowledged on disk and the commit is
// retried (the whole slot rewritten) until it works; a crash while it fails
// re-delivers from the last synced commit, so no line is skipped after the
// restart.
func TestPointerMsyncFailure(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := filepath.Join(dir, "app.log")
	var failing atomic.Bool
	var dm *diskMapping
	faulty := func(f *os.File) (pointer.Mapping, error) {
		buf := make([]byte, pointer.Size)
		if _, err := f.ReadAt(buf, 0); err != nil {
			return nil, err
		}
		dm = &diskMapping{f: f, buf: buf, failing: &failing}
		return dm, nil
	}
	first := appendNumbered(t, in, "a", 300)
	r := startMsyncRun(t, dir, faulty, func() { failing.Store(true) })
	waitCond(t, "all lines delivered", func() bool { return len(r.log.all()) == len(first) })
	waitCond(t, "commit failures", func() bool { return r.src.CommitFailures() >= 2 })
	if r.src.CommitOK() || r.src.SyncedSeq() >= r.pub.Acknowledged() {
		t.Fatalf("commit reported ok (synced %d, acknowledged %d) while msync fails", r.src.SyncedSeq(), r.pub.Acknowledged())
	}
	if off := diskOffset(t, dir); off != 0 {
		t.Fatalf("pointer on disk at %d while every msync failed, want 0", off)
	}

	// The fault clears: the retried commit reaches the disk with no new line.
	failing.Store(false)
	size := int64(0)
	if st, err := os.Stat(in); err == nil {
		size = st.Size()
	}
	waitCond(t, "the retried commit", func() bool { return r.src.CommitOK() && diskOffset(t, dir) == size })

	// It fails again; more lines arrive; the process dies.
	failing.Store(true)
	before := r.src.CommitFailures()
	second := appendNumbered(t, in, "b", 200)
	waitCond(t, "second lines delivered", func() bool { return len(r.log.all()) == len(first)+len(second) })
	waitCond(t, "more commit failures", func() bool { return r.src.CommitFailures() > before })
	r.crash()
	if off := diskOffset(t, dir); off != size {
		t.Fatalf("pointer on disk at %d after the crash, want the last synced %d", off, size)
	}

	// The restart (a healthy disk) re-delivers every line after the last
	// synced commit: none is skipped.
	r = startMsyncRun(t, dir, nil, nil)
	defer r.crash()
	waitCond(t, "re-delivery", func() bool { return len(r.log.all()) >= len(second) })
	got := r.log.all()
	for i, l := range second {
		if got[i] != l {
			t.Fatalf("after the restart line %d is %q, want %q (no line skipped)", i, got[i], l)
		}
	}
	waitCond(t, "commit after the restart", func() bool {
		st, _ := os.Stat(in)
		return r.src.CommitOK() && diskOffset(t, dir) == st.Size()
	})
}

// TestHeadFirstMsyncFailureHoldsTheEpochsFirstLine: headFirst stores the
// first bytes of a file an epoch began on empty and msyncs them before the
// epoch's first line goes out. While that msync fails the line waits: the
// record in memory already holds the first bytes, and a retry must not take
// that for done (it published the line with nothing on disk).
func TestHeadFirstMsyncFailureHoldsTheEpochsFirstLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := filepath.Join(dir, "app.log")
	var failing atomic.Bool
	faulty := func(f *os.File) (pointer.Mapping, error) {
		buf := make([]byte, pointer.Size)
		if _, err := f.ReadAt(buf, 0); err != nil {
			return nil, err
		}
		return &diskMapping{f: f, buf: buf, failing: &failing}, nil
	}
	first := appendNumbered(t, in, "a", 3)
	r := startMsyncRun(t, dir, faulty, nil)
	defer r.crash()
	waitCond(t, "the first lines", func() bool { return len(r.log.all()) == len(first) })
	waitCond(t, "their commit", func() bool { return r.src.CommitOK() && diskOffset(t, dir) == 3*7 })
	if err := os.Rename(in, in+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(in, &st); err != nil {
		t.Fatal(err)
	}
	key := pointer.FileKey(uint64(st.Dev), st.Ino)
	waitCond(t, "the pointer on the new file", func() bool { return r.ptr.Record().FileKey == key })
	failing.Store(true)
	before := r.src.CommitFailures()
	appendNumbered(t, in, "b", 3)
	waitCond(t, "the failed msync of the first bytes", func() bool { return r.src.CommitFailures() > before })
	time.Sleep(300 * time.Millisecond) // many retry cycles (poll 20 ms)
	if got := r.log.all(); len(got) != len(first) {
		t.Fatalf("%d lines of the new epoch delivered while the msync of its first bytes failed: %v", len(got)-len(first), got[len(first):])
	}
	failing.Store(false)
	waitCond(t, "the new lines once the disk heals", func() bool { return len(r.log.all()) == len(first)+3 })
	waitCond(t, "their commit", func() bool { return r.src.CommitOK() && diskOffset(t, dir) == 3*7 })
}
