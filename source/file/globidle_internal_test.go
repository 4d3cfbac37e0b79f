package file

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/overload"
	"tailfeed/pointer"
)

// A glob stream (Pinned) never reads another file at its path, so it
// keeps no catalogue of the generations beside its file: opening it lists
// no directory and reads no neighbour's first bytes. Before, every open of
// every stream listed its directory and read the head of each file with a
// rotated name (10,000 files in one directory: 10,000 entries per open,
// 10^8 at a start).
func TestPinnedOpenCataloguesNoGenerations(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "app.log")
	for _, p := range []string{in, in + ".1", in + ".2", in + "-20261201"} {
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := New(Config{Feed: "f", Path: in, Strategy: Earliest, Pinned: true, NoNotify: true}, nil)
	if err := s.open(); err != nil {
		t.Fatal(err)
	}
	defer s.cur.close()
	if len(s.genSeen) != 0 {
		t.Fatalf("a pinned stream's open catalogued %d files (generations it never reads)", len(s.genSeen))
	}
}

// A stream still STARTING (its pointer being created: fsyncs that take
// seconds when hundreds of streams start at once) has not had its turn: it
// is not preempted for the streams waiting for a slot however long it has
// held one. Before, such streams were stopped and queued again before
// reading a byte; each came back on a pointer that existed but was empty,
// and the whole start churned (and paid for that reopen, see
// TestPinnedEmptyPointerReadsOnlyItsFile).
func TestGlobPreemptSparesStartingStream(t *testing.T) {
	q := feed.NewQueue("q", 16, 1<<20, overload.Policy{Kind: overload.Pause})
	pub := feed.NewPublisher("f", []*feed.Queue{q}, 64, 16)
	g, err := NewGlob(GlobConfig{Stream: Config{Feed: "f", Path: filepath.Join(t.TempDir(), "*.log")}}, pub)
	if err != nil {
		t.Fatal(err)
	}
	defer g.mux.close()
	s := &gstream{path: "a.log", key: 1, st: stOpen, openedAt: time.Now().Add(-5 * time.Second)}
	s.sp = g.mux.add()
	s.src = New(Config{Feed: "f", Path: "a.log"}, s.sp) // STARTING
	_, s.cancel = context.WithCancel(context.Background())
	s.runDone = make(chan struct{})
	close(s.runDone)
	g.byKey[1] = s
	g.running[s] = struct{}{}
	g.open = 1
	g.queue = []*gstream{{path: "b.log", key: 2, st: stQueued}}
	g.preempt()
	if s.st != stOpen {
		t.Fatal("a stream still starting was preempted")
	}
	// Once it reads, its second counts: it gives the slot up.
	s.src.setState(Behind)
	g.preempt()
	if s.st != stStopping {
		t.Fatal("a stream that had its turn kept its slot while another waits")
	}
	<-g.stopped
}

// A glob stream's lazy buffer starts at the size of what is waiting (at
// least 4 KiB): 10,000 streams of one short line each borrow 4 KiB each,
// not 64 KiB. A file longer than its first buffer doubles it at every
// read that fills it, up to 64 KiB, and every byte is read in order.
func TestLazyBufferFitsWhatIsWaiting(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.log")
	if err := os.WriteFile(small, []byte("0123456789\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(small)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := newReader(f, 1, 1, -(1 << 20), 1<<20)
	r.lastSize = 11
	if n, err := r.read(); err != nil || n != 11 {
		t.Fatalf("read %d, %v", n, err)
	}
	if len(r.buf) != 4<<10 {
		t.Fatalf("a stream with 11 bytes waiting borrowed a %d-byte buffer, want 4 KiB", len(r.buf))
	}

	big := filepath.Join(dir, "big.log")
	var want []byte
	for i := 0; len(want) < 1<<20; i++ {
		want = append(want, fmt.Sprintf("line %08d\n", i)...)
	}
	if err := os.WriteFile(big, want, 0o644); err != nil {
		t.Fatal(err)
	}
	fb, err := os.Open(big)
	if err != nil {
		t.Fatal(err)
	}
	defer fb.Close()
	r = newReader(fb, 1, 2, -(1 << 20), 1<<20)
	r.lastSize = 100 // an old look: the file grew since
	var got []byte
	var found Found
	for reads := 0; ; reads++ {
		n, err := r.read()
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		r.take(&found, false, 1<<20, 1<<30)
		for i := range found.Len() {
			got = append(got, r.buf[found.Starts[i]:found.Starts[i]+found.Lens[i]]...)
			got = append(got, '\n')
		}
		if reads == 8 && len(r.buf) != 64<<10 {
			t.Fatalf("after %d full reads the buffer is %d bytes, want 64 KiB", reads, len(r.buf))
		}
	}
	if string(got) != string(want) {
		t.Fatalf("read %d bytes back, want the %d written", len(got), len(want))
	}
}

// At most maxOpening streams' pointer I/O calls wait for the disk at once
// (a new pointer's creation, each commit's msync, the final one at close),
// however many streams run together: each blocked call holds an OS thread,
// and a Go process keeps every thread it made (~50 KiB resident each).
// Before, 480 streams starting at once over 10,000 files made 150 to 430
// threads. The pointers' msyncs here take 10 ms (a slow disk).
func TestGlobBoundsPointerIO(t *testing.T) {
	const files = 4 * maxOpening
	var mu sync.Mutex
	var inFlight, most, flushes int
	perPointer := map[string]int{}
	slow := func(f *os.File) (pointer.Mapping, error) {
		m := &slowMapping{f: f, buf: make([]byte, pointer.Size)}
		f.ReadAt(m.buf, 0)
		m.flush = func() {
			mu.Lock()
			inFlight++
			flushes++
			perPointer[f.Name()]++
			most = max(most, inFlight)
			mu.Unlock()
			time.Sleep(10 * time.Millisecond)
			mu.Lock()
			inFlight--
			mu.Unlock()
		}
		return m, nil
	}
	runGlobOver(t, files, func(path string, o pointer.Options) (*pointer.Pointer, error) {
		o.Map = slow
		return pointer.Open(path, o)
	})
	mu.Lock()
	defer mu.Unlock()
	// Every pointer reached the disk. A new pointer is not msynced at its
	// creation (pointer.Options.DeferSync) but with its stream's first
	// commit: a one-line file read and acknowledged at once costs one msync
	// (two before: the creation's, then the commit's).
	if len(perPointer) != files {
		t.Fatalf("%d of %d pointers msynced", len(perPointer), files)
	}
	if flushes > files+files/4 {
		t.Fatalf("%d msyncs for %d new pointers and their one-line commits, want about one each", flushes, files)
	}
	if most > maxOpening {
		t.Fatalf("%d pointer msyncs ran at once, want at most %d", most, maxOpening)
	}
}

// slowMapping is a pointer mapping in memory whose Flush writes the file
// (and runs flush first).
type slowMapping struct {
	f     *os.File
	buf   []byte
	flush func()
}

func (m *slowMapping) Bytes() []byte { return m.buf }
func (m *slowMapping) Close() error  { return nil }
func (m *slowMapping) Flush() error {
	m.flush()
	_, err := m.f.WriteAt(m.buf, 0)
	return err
}

// A rescan costs one stat per matched file and few allocations (it recurs
// every scanIntervalMillis over every tracked file): before, each file
// took an os.Stat and a second stat for its identity, its path split again
// for the match, a string built per daemon output to tell whether it is
// under it, and a map of the whole list that nothing read — 9.2
// allocations and ~5.5 µs of CPU per file, ~55 ms per rescan of 10,000
// files (BenchmarkGlobRescan).
func TestGlobRescanAllocs(t *testing.T) {
	g := rescanFixture(t, 2000)
	per := testing.AllocsPerRun(5, func() { g.scan(g.ctx) }) / 2000
	if per > 5 {
		t.Fatalf("a rescan allocates %.1f times per tracked file, want at most 5", per)
	}
	if len(g.queue) != 0 {
		t.Fatalf("%d unchanged files queued", len(g.queue))
	}
}

// rescanFixture is a glob feed tracking n caught-up files in directories of
// 100, every stream closed (nothing opens).
func rescanFixture(tb testing.TB, n int) *Glob {
	dir := tb.TempDir()
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("d%03d", i/100), fmt.Sprintf("f%05d.log", i))
		if i%100 == 0 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				tb.Fatal(err)
			}
		}
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	q := feed.NewQueue("q", 16, 1<<20, overload.Policy{Kind: overload.Pause})
	pub := feed.NewPublisher("f", []*feed.Queue{q}, 64, 16)
	// The daemon's own outputs (a file sink's, dataDir) are never matched:
	// every matched file is checked against them.
	other := tb.TempDir()
	outs := []string{filepath.Join(other, "out.log"), filepath.Join(other, "data")}
	g, err := NewGlob(GlobConfig{Stream: Config{Feed: "f", Path: filepath.Join(dir, "**", "*.log"), Strategy: Earliest,
		Poll: 250 * time.Millisecond, NoNotify: true, Outputs: outs}}, pub)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(g.mux.close)
	g.maxSlots = 0 // nothing opens: every stream stays closed
	g.ctx = context.Background()
	g.scan(g.ctx)
	g.started, g.ready = true, true // a started glob, its start over (logStart)
	for _, s := range g.byKey {
		s.st, s.offset = stClosed, s.size
	}
	g.queue = nil
	if len(g.byKey) != n {
		tb.Fatalf("%d streams tracked, want %d", len(g.byKey), n)
	}
	return g
}

// A source's wait reuses one timer: a glob's hundreds of open streams
// wait at every acknowledgement of the feed, and a timer made per wait was
// ~40 MB of garbage over a start of 10,000 files.
func TestSourceWaitReusesTimer(t *testing.T) {
	q := feed.NewQueue("q", 16, 1<<20, overload.Policy{Kind: overload.Pause})
	pub := feed.NewPublisher("f", []*feed.Queue{q}, 64, 16)
	s := New(Config{Feed: "f", Path: filepath.Join(t.TempDir(), "a.log"), Poll: time.Millisecond, NoNotify: true}, pub)
	ctx := context.Background()
	s.lastPoll = time.Now()
	s.wait(ctx)
	if n := testing.AllocsPerRun(20, func() {
		s.lastPoll = time.Now()
		s.wait(ctx)
	}); n != 0 {
		t.Fatalf("a wait allocates %.1f times", n)
	}
}

// A glob stream gives its buffer back at every wait and takes one at the
// next read: neither allocates once the pool holds a buffer (the box
// travels with the buffer). Before, each give-back allocated a box: ~19 MB
// of garbage over a start of 10,000 files.
func TestLazyBufferRoundTripAllocatesNothing(t *testing.T) {
	_, f := tenBytes(t)
	r := newReader(f, 1, 1, -(1 << 20), 1<<20)
	r.lastSize = 11
	var found Found
	round := func() {
		r.seek(0)
		r.lastSize = 11
		if _, err := r.read(); err != nil {
			t.Fatal(err)
		}
		r.take(&found, false, 64, 1<<20)
		r.releaseBuf()
	}
	round()
	if n := testing.AllocsPerRun(50, round); n != 0 {
		t.Fatalf("a read and give-back of the buffer allocates %.1f times", n)
	}
}

// The check of an open, unchanged file (every look, hundreds of glob
// streams looking while a start's lines are acknowledged) allocates
// nothing: before, f.Stat made a FileInfo each time (~47 MB of garbage
// over a start of 10,000 files).
func TestChangedCheckAllocatesNothing(t *testing.T) {
	path, f := tenBytes(t)
	s := New(Config{Feed: "f", Path: path, Pinned: true, NoNotify: true}, nil)
	r := newReader(f, 1, 1, -(1 << 20), 1<<20)
	if why := s.changed(r); why != "" {
		t.Fatalf("first look: %s", why)
	}
	if n := testing.AllocsPerRun(50, func() {
		if why := s.changed(r); why != "" {
			t.Fatalf("unchanged file: %s", why)
		}
	}); n != 0 {
		t.Fatalf("checking an unchanged open file allocates %.1f times", n)
	}
}

// A directory's matcher (the rescan's) says what Match says for every
// entry: patterns with and without "**" (leading, trailing, repeated),
// entries that are files or directories, at every depth.
func TestDirMatcherAgreesWithMatch(t *testing.T) {
	pats := []string{"/a/**/*.log", "/a/*.log", "/a/*/x.log", "/a/**", "/**/*.log", "/a/**/b/**/*.log",
		"/a/b*/c/*.log", "/a/**/**/x?.log", "/a/[ab]/**/*.txt", "/*", "/a/b/c.log"}
	dirs := []string{"/", "/a", "/a/b", "/a/b/c", "/a/bx/c", "/a/x/b/y", "/a/b/b/b", "/x", "/x/a"}
	names := []string{"x.log", "c.log", "xy.log", "b", "c", "a.txt", "y", "x.txt", "bx", "a"}
	for _, ps := range pats {
		p, err := CompilePattern(ps)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range dirs {
			m := p.inDir(d)
			for _, n := range names {
				full := filepath.Join(d, n)
				if got, want := m.match(n), p.Match(full); got != want {
					t.Errorf("%s: %s in %s = %v, Match says %v", ps, n, d, got, want)
				}
			}
		}
	}
}

// tenBytes writes one line of 10 bytes to a new file and opens it (closed
// at the test's end).
func tenBytes(t *testing.T) (string, *os.File) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "a.log")
	if err := os.WriteFile(path, []byte("0123456789\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return path, f
}
