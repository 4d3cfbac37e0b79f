package file_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/overload"
	"tailfeed/source/file"
)

func TestPatternMatch(t *testing.T) {
	t.Parallel()
	cases := []struct {
		pat, name string
		want      bool
	}{
		{"/a/**/*.log", "/a/x.log", true},
		{"/a/**/*.log", "/a/b/c/x.log", true},
		{"/a/**/*.log", "/a/b/c/x.txt", false},
		{"/a/*.log", "/a/b/x.log", false},
		{"/a/*/x.log", "/a/b/x.log", true},
		{"/a/[ab].log", "/a/b.log", true},
		{"/a/?.log", "/a/bb.log", false},
		{"/a/**", "/a/b/c", true},
	}
	for _, c := range cases {
		p, err := file.CompilePattern(c.pat)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Match(c.name); got != c.want {
			t.Errorf("%s ~ %s = %v, want %v", c.pat, c.name, got, c.want)
		}
	}
	p, _ := file.CompilePattern("/a/b*/c/*.log")
	if !p.MayHoldMatches("/a/bx") || !p.MayHoldMatches("/a/bx/c") || p.MayHoldMatches("/a/x") || p.MayHoldMatches("/a/bx/c/d") {
		t.Error("MayHoldMatches")
	}
	if _, err := file.CompilePattern("/a/x**/y"); err == nil {
		t.Error("x** accepted")
	}
}

// globRig runs a Glob over dir with a recording subscriber.
type globRig struct {
	t      *testing.T
	dir    string
	data   string
	g      *file.Glob
	pub    *feed.Publisher
	mu     sync.Mutex
	lines  map[string][]string
	order  []string // every line taken, in the order taken, as "path: line"
	cancel context.CancelFunc
	stopQ  context.CancelFunc
	done   chan struct{}
	qdone  chan struct{}
	hold   atomic.Bool // the subscriber does not finish batches while set
}

func newGlobRig(t *testing.T, dir, data, pattern string, maxOpen int) *globRig {
	return newGlobRigS(t, dir, data, pattern, maxOpen, file.Committed)
}

func newGlobRigS(t *testing.T, dir, data, pattern string, maxOpen int, strat file.Strategy) *globRig {
	r := &globRig{t: t, dir: dir, data: data, lines: map[string][]string{}}
	q := feed.NewQueue("rec", 4096, 8<<20, overload.Policy{Kind: overload.Pause})
	r.pub = feed.NewPublisher("f", []*feed.Queue{q}, 65536, 512)
	g, err := file.NewGlob(file.GlobConfig{
		Stream: file.Config{Feed: "f", Path: pattern, Strategy: strat, Poll: 50 * time.Millisecond, RotateWait: 200 * time.Millisecond,
			CommitSync: 5 * time.Millisecond, BatchLines: 512, Outputs: []string{data}},
		PointerDir:    ptrDir(strat, data),
		EpochsPath:    filepath.Join(data, "feeds", "f.epochs"),
		ScanInterval:  globRigScan,
		MaxOpenFiles:  maxOpen,
		CloseInactive: 300 * time.Millisecond,
		ForgetAfter:   300 * time.Millisecond,
	}, r.pub)
	if err != nil {
		t.Fatal(err)
	}
	r.g = g
	qctx, qc := context.WithCancel(context.Background())
	r.stopQ, r.qdone = qc, make(chan struct{})
	go func() {
		defer close(r.qdone)
		// Lines are recorded as they are taken; while hold is set they are
		// not acknowledged (the subscriber keeps taking batches).
		var unacked uint64
		for qctx.Err() == nil {
			b := q.TryPop()
			if b == nil {
				if !r.hold.Load() && unacked > 0 {
					q.AddDispatched(unacked)
					unacked = 0
				}
				time.Sleep(time.Millisecond)
				continue
			}
			r.mu.Lock()
			for _, l := range b.Lines {
				r.lines[b.Path] = append(r.lines[b.Path], string(l))
				r.order = append(r.order, b.Path+": "+string(l))
			}
			r.mu.Unlock()
			unacked += uint64(b.Len())
			b.Release()
			if !r.hold.Load() {
				q.AddDispatched(unacked)
				unacked = 0
			}
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan struct{})
	go func() {
		defer close(r.done)
		g.Run(ctx)
	}()
	return r
}

func (r *globRig) stop() {
	r.cancel()
	<-r.done
	ctx, c := context.WithTimeout(context.Background(), 5*time.Second)
	r.g.Drain(ctx)
	c()
	if err := r.g.Close(); err != nil {
		r.t.Error(err)
	}
	r.stopQ()
	<-r.qdone
}

func (r *globRig) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, l := range r.lines {
		n += len(l)
	}
	return n
}

// waitCommitted waits until at least n lines are acknowledged and every
// stream's commit of them is synced (the pointers' fingerprints cover what
// was read): a copy made after that is recognised as one (copyCandidate).
// A copy made before a file's first commit is read as a new file — the
// window README's copytruncate row names.
func (r *globRig) waitCommitted(n uint64, d time.Duration) {
	r.t.Helper()
	deadline := time.Now().Add(d)
	for {
		ack := r.pub.Acknowledged()
		if ack >= n && r.g.CommitOK() && r.g.SyncedSeq() >= ack {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%d lines acknowledged, synced through %d, commitOK %v: not committed within %v", ack, r.g.SyncedSeq(), r.g.CommitOK(), d)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (r *globRig) waitLines(n int, d time.Duration) {
	r.t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if r.count() >= n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	r.t.Fatalf("got %d lines, want %d", r.count(), n)
}

func writeLines(t *testing.T, path, tag string, n int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "%s %d\n", tag, i)
	}
	f.WriteString(b.String())
	f.Close()
}

func TestGlobNestedNewFilesBoundedOpen(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	for i := 0; i < 40; i++ {
		writeLines(t, filepath.Join(dir, fmt.Sprintf("d%d", i%4), fmt.Sprintf("f%d.log", i)), fmt.Sprintf("f%d", i), 50)
	}
	writeLines(t, filepath.Join(dir, "skip.txt"), "x", 5)
	r := newGlobRig(t, dir, data, filepath.Join(dir, "**", "*.log"), 8)
	for i := 40; i < 60; i++ {
		writeLines(t, filepath.Join(dir, "new", fmt.Sprintf("n%d", i%3), "deep", fmt.Sprintf("f%d.log", i)), fmt.Sprintf("f%d", i), 50)
	}
	r.waitLines(60*50, 20*time.Second)
	time.Sleep(300 * time.Millisecond)
	r.stop()
	if r.count() != 60*50 {
		t.Fatalf("lines %d", r.count())
	}
	for p, ls := range r.lines {
		for i, l := range ls {
			if !strings.HasSuffix(l, fmt.Sprintf(" %d", i)) || !strings.HasPrefix(l, strings.TrimSuffix(filepath.Base(p), ".log")+" ") {
				t.Fatalf("%s: line %d is %q", p, i, l)
			}
		}
	}
	ptrs, _ := filepath.Glob(filepath.Join(data, "feeds", "f", "*.ptr"))
	if len(ptrs) != 60 {
		t.Fatalf("pointers: %d", len(ptrs))
	}
	// A restart reads nothing again.
	r2 := newGlobRig(t, dir, data, filepath.Join(dir, "**", "*.log"), 8)
	writeLines(t, filepath.Join(dir, "d0", "f0.log"), "f0", 1)
	r2.waitLines(1, 10*time.Second)
	time.Sleep(500 * time.Millisecond)
	r2.stop()
	if r2.count() != 1 || r2.lines[filepath.Join(dir, "d0", "f0.log")][0] != "f0 0" {
		t.Fatalf("restart delivered %v", r2.lines)
	}
}

func TestGlobRenameTinyFileForget(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	a := filepath.Join(dir, "a.log")
	writeLines(t, a, "a", 10)
	os.WriteFile(filepath.Join(dir, "tiny.log"), []byte("123456789\n"), 0o644)
	r := newGlobRig(t, dir, data, filepath.Join(dir, "*.log"), 16)
	r.waitLines(11, 10*time.Second)
	// Rename within the glob: no re-read; appends continue under a.log.
	b := filepath.Join(dir, "b.log")
	if err := os.Rename(a, b); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	writeLines(t, b, "late", 2)
	r.waitLines(13, 10*time.Second)
	// Deleted and finished: its pointer is forgotten.
	os.Remove(filepath.Join(dir, "tiny.log"))
	time.Sleep(1500 * time.Millisecond)
	files := r.g.Files()
	r.stop()
	if got := r.count(); got != 13 {
		t.Fatalf("lines %d: %v", got, r.lines)
	}
	if l := r.lines[a]; len(l) != 12 || l[10] != "late 0" {
		t.Fatalf("a.log lines %v", l)
	}
	if r.lines[filepath.Join(dir, "tiny.log")][0] != "123456789" {
		t.Fatal("tiny file not read")
	}
	ptrs, _ := filepath.Glob(filepath.Join(data, "feeds", "f", "*.ptr"))
	if len(ptrs) != 1 {
		t.Fatalf("pointers left: %v (files %+v)", ptrs, files)
	}
}

// A closed stream's file (same inode) rewritten with other first bytes is
// a new stream read from its start; a deleted file's key is retired.
func TestGlobSameKeyOtherContent(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	p := filepath.Join(dir, "x.log")
	writeLines(t, p, "old", 5)
	r := newGlobRig(t, dir, data, filepath.Join(dir, "*.log"), 16)
	r.waitLines(5, 10*time.Second)
	time.Sleep(800 * time.Millisecond) // closeInactive (300ms) closes it
	if c := r.g.Counts(); c.Open != 0 {
		t.Fatalf("still open: %+v", c)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("new 0\nnew 1\nnew 2\nnew 3\nnew 4\nnew 5\nnew 6\n")
	f.Close()
	r.waitLines(12, 10*time.Second)
	time.Sleep(300 * time.Millisecond)
	r.stop()
	if got := r.lines[p]; len(got) != 12 || got[5] != "new 0" {
		t.Fatalf("lines %v", got)
	}
}

// Issue 13 acceptance 5: a finished, deleted file's pointer is removed
// after forgetAfter (300 ms here), never while a line of it is
// unacknowledged.
func TestGlobForgetWaitsForAcks(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	keep, gone := filepath.Join(dir, "keep.log"), filepath.Join(dir, "gone.log")
	writeLines(t, keep, "keep", 3)
	r := newGlobRig(t, dir, data, filepath.Join(dir, "*.log"), 16)
	r.waitLines(3, 10*time.Second)
	r.hold.Store(true)
	writeLines(t, gone, "gone", 3)
	r.waitLines(6, 10*time.Second)
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	ptrs := func() int {
		p, _ := filepath.Glob(filepath.Join(data, "feeds", "f", "*.ptr"))
		return len(p)
	}
	time.Sleep(1500 * time.Millisecond) // 5× forgetAfter, lines unacknowledged
	if n := ptrs(); n != 2 {
		t.Fatalf("%d pointers while gone.log's lines are unacknowledged, want 2", n)
	}
	r.hold.Store(false)
	end := time.Now().Add(10 * time.Second)
	for ptrs() != 1 && time.Now().Before(end) {
		time.Sleep(20 * time.Millisecond)
	}
	files := r.g.Files()
	r.stop()
	if n := ptrs(); n != 1 {
		t.Fatalf("%d pointers after the acknowledgement and forgetAfter, want 1 (files %+v)", n, files)
	}
	if len(files) != 1 || files[0].Path != keep {
		t.Fatalf("files %+v", files)
	}
}

// A file whose stream gives up its slot with bytes unread (another file
// waits for the only slot) is read on when its turn comes again, though it
// does not change any more.
func TestGlobPreemptedStreamResumes(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	writeLines(t, filepath.Join(dir, "a.log"), "a", 20000)
	writeLines(t, filepath.Join(dir, "b.log"), "b", 20000)
	r := newGlobRig(t, dir, data, filepath.Join(dir, "*.log"), 2) // one slot
	r.hold.Store(true)
	time.Sleep(1500 * time.Millisecond) // the first stream runs past its turn with its lines held
	r.hold.Store(false)
	r.waitLines(40000, 20*time.Second)
	time.Sleep(200 * time.Millisecond)
	r.stop()
	for _, tag := range []string{"a", "b"} {
		ls := r.lines[filepath.Join(dir, tag+".log")]
		for i, l := range ls {
			if l != fmt.Sprintf("%s %d", tag, i) {
				t.Fatalf("%s: line %d is %q", tag, i, l)
			}
		}
		if len(ls) != 20000 {
			t.Fatalf("%s: %d lines", tag, len(ls))
		}
	}
}

// A glob stream's buffer starts small and grows for a long line.
func TestGlobLongLine(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	long := strings.Repeat("z", 700<<10)
	os.WriteFile(filepath.Join(dir, "l.log"), []byte("a\n"+long+"\nb\n"), 0o644)
	r := newGlobRig(t, dir, data, filepath.Join(dir, "*.log"), 16)
	r.waitLines(3, 10*time.Second)
	r.stop()
	got := r.lines[filepath.Join(dir, "l.log")]
	if len(got) != 3 || got[1] != long || got[2] != "b" {
		t.Fatalf("%d lines", len(got))
	}
}

// globRigScan is the rig's rescan interval.
var globRigScan = 200 * time.Millisecond

func ptrDir(s file.Strategy, data string) string {
	if s != file.Committed {
		return ""
	}
	return filepath.Join(data, "feeds", "f")
}

// ONCE_EARLIEST on a glob: every file matched at start read to its size,
// later files ignored, END_OF_STREAM once all are done.
func TestGlobOnceEarliest(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	for i := 0; i < 5; i++ {
		writeLines(t, filepath.Join(dir, fmt.Sprintf("f%d.log", i)), fmt.Sprintf("f%d", i), 20)
	}
	os.WriteFile(filepath.Join(dir, "part.log"), []byte("whole\npart"), 0o644)
	r := newGlobRigS(t, dir, data, filepath.Join(dir, "*.log"), 4, file.OnceEarliest)
	r.waitLines(101, 10*time.Second)
	writeLines(t, filepath.Join(dir, "late.log"), "late", 3)
	end := time.Now().Add(10 * time.Second)
	for r.g.State() != file.EndOfStream && time.Now().Before(end) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	st, unterm := r.g.State(), r.g.Unterminated()
	r.stop()
	if st != file.EndOfStream || r.count() != 101 || unterm != 4 {
		t.Fatalf("state %v, %d lines, unterminated %d", st, r.count(), unterm)
	}
}

// The epoch barrier per path: a new file at a path is published only
// after every line of the file previously there is acknowledged; other
// paths are not held.
func TestGlobPathBarrier(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	app, other := filepath.Join(dir, "app.log"), filepath.Join(dir, "other.log")
	writeLines(t, app, "old", 5)
	r := newGlobRig(t, dir, data, filepath.Join(dir, "*.log"), 16)
	r.hold.Store(true)
	r.waitLines(5, 10*time.Second)
	if err := os.Rename(app, filepath.Join(dir, "app.log.1")); err != nil {
		t.Fatal(err)
	}
	writeLines(t, app, "new", 3)
	writeLines(t, other, "other", 2)
	time.Sleep(1200 * time.Millisecond)
	r.mu.Lock()
	got := append([]string(nil), r.lines[app]...)
	otherN := len(r.lines[other])
	r.mu.Unlock()
	if len(got) != 5 {
		t.Fatalf("app.log lines while the old file's are unacknowledged: %v", got)
	}
	if otherN != 2 {
		t.Fatalf("other.log: %d lines; another path is not held by app.log's barrier", otherN)
	}
	r.hold.Store(false)
	r.waitLines(10, 10*time.Second)
	r.stop()
	if l := r.lines[app]; len(l) != 8 || l[5] != "new 0" {
		t.Fatalf("app.log lines %v", l)
	}
}

// A directory removed and created again is watched again: files created
// in it later are found by their events, not only by the rescan.
func TestGlobDirRecreated(t *testing.T) {
	dir, data := t.TempDir(), t.TempDir()
	sub := filepath.Join(dir, "sub")
	writeLines(t, filepath.Join(sub, "a.log"), "a", 1)
	globRigScan = time.Minute // events only
	defer func() { globRigScan = 200 * time.Millisecond }()
	r := newGlobRig(t, dir, data, filepath.Join(dir, "**", "*.log"), 16)
	r.waitLines(1, 10*time.Second)
	os.RemoveAll(sub)
	time.Sleep(300 * time.Millisecond)
	writeLines(t, filepath.Join(sub, "b.log"), "b", 1)
	time.Sleep(300 * time.Millisecond)
	writeLines(t, filepath.Join(sub, "c.log"), "c", 1)
	r.waitLines(3, 10*time.Second)
	r.stop()
}

// A copytruncate inside the glob: the copy (a new key with the original's
// first bytes) is held back, found to be the truncated file's copy and not
// read again; the original's stream reads on. A new file with another
// file's first bytes whose original stays is read after the hold.
func TestGlobCopyTruncate(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	app := filepath.Join(dir, "app.log")
	writeLines(t, app, "a", 10)
	writeLines(t, filepath.Join(dir, "x.log"), "x", 10)
	r := newGlobRig(t, dir, data, filepath.Join(dir, "*.log*"), 16)
	r.waitLines(20, 10*time.Second)
	r.waitCommitted(20, 10*time.Second) // the fingerprint covers the file
	old, _ := os.ReadFile(app)
	if err := os.WriteFile(filepath.Join(dir, "app.log.1"), old, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(app, 0); err != nil {
		t.Fatal(err)
	}
	writeLines(t, app, "b", 2)
	// A copy whose original stays: a new file, read after the hold.
	x, _ := os.ReadFile(filepath.Join(dir, "x.log"))
	os.WriteFile(filepath.Join(dir, "dup.log"), x, 0o644)
	r.waitLines(32, 10*time.Second)
	time.Sleep(500 * time.Millisecond)
	r.stop()
	if n := len(r.lines[filepath.Join(dir, "app.log.1")]); n != 0 {
		t.Fatalf("the copy was read again: %d lines", n)
	}
	if l := r.lines[app]; len(l) != 12 || l[10] != "b 0" {
		t.Fatalf("app.log lines %v", l)
	}
	if n := len(r.lines[filepath.Join(dir, "dup.log")]); n != 10 {
		t.Fatalf("dup.log: %d lines, want 10", n)
	}
}
