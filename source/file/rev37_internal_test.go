package file

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/overload"
)

// A matched symlink made before the file it names (an application's
// current.log made at deployment, its target at the first write): the
// walk skips it as dangling, and the target is made in a directory the
// glob does not watch, so no event of the glob's own watches says so. Its
// first line waited for the rescan (scanIntervalMillis, 10 s by default;
// the thirty-sixth session's official CI: TestRev34AOKSymlinkedPath timed
// out waiting for the link's file to be listed). The directory where the
// target would be made is watched now: the file's creation is an event and
// its lines come long before the rescan (an hour here). Also through a
// chain of two links, the second one in the target's directory.
func TestRev37DanglingSymlinkTargetMadeLaterIsSeenByEvent(t *testing.T) {
	for _, tc := range []struct {
		name  string
		links func(t *testing.T, logs, data string) (target string)
	}{
		{"one link", func(t *testing.T, logs, data string) string {
			mustSymlink(t, "../data/app.log", filepath.Join(logs, "z.log"))
			return filepath.Join(data, "app.log")
		}},
		{"two links", func(t *testing.T, logs, data string) string {
			mustSymlink(t, "../data/current", filepath.Join(logs, "z.log"))
			mustSymlink(t, "app.log", filepath.Join(data, "current"))
			return filepath.Join(data, "app.log")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, state := t.TempDir(), t.TempDir()
			logs, data := filepath.Join(root, "logs"), filepath.Join(root, "data")
			for _, d := range []string{logs, data} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			target := tc.links(t, logs, data)
			ig, stop := runGlobCfg(t, filepath.Join(logs, "*.log"), state, time.Second, func(c *GlobConfig) {
				c.ScanInterval = time.Hour
			})
			defer stop()
			ig.waitFor(t, "the dangling link skipped by the first walk", func() bool { return ig.g.filesSkipped.Load() > 0 })
			time.Sleep(50 * time.Millisecond)
			if err := os.WriteFile(target, []byte("z #0\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			var got map[string]int
			for end := time.Now().Add(10 * time.Second); got["z #0"] == 0 && time.Now().Before(end); {
				for l, n := range ig.popLines(100 * time.Millisecond) {
					if got == nil {
						got = map[string]int{}
					}
					got[l] += n
				}
			}
			if got["z #0"] != 1 {
				t.Fatalf("the link's target made after the walk: z #0 delivered %d times within 10 s, want 1 (the rescan is an hour away)", got["z #0"])
			}
		})
	}
}

func mustSymlink(t *testing.T, to, link string) {
	t.Helper()
	if err := os.Symlink(to, link); err != nil {
		t.Fatal(err)
	}
}

// A glob stream's source (no pointer, EARLIEST) whose run ends right after
// a read and before the split (its glob stopped it as inactive while a
// write woke it): the line it read was never taken. Its resume point said
// the file was read to that line's end (Resume.Size) and no tail was noted
// (noteTail took the bytes past the last line taken for an unterminated
// line), so a truncation the glob then saw counted nothing lost: the line
// gone, lostTails 0 (the thirty-sixth session's CI3,
// TestGlobEarliestNoPointerTailWrittenWhileStoppingThenTruncatedIsCounted,
// resume point Size 12, noted tail 0..0). DESIGN §4 Nothing green over a
// loss, §10 a file that loses its unread tail counts in lostTails.
func TestRev37RunEndedBetweenReadAndSplitLeavesTheLineUnread(t *testing.T) {
	s := cutAtRead(t, Config{Strategy: Earliest}, "a-0\n", "a-1\n", 1, 8)
	r := s.ResumePoint()
	if r == nil {
		t.Fatal("no resume point")
	}
	t.Logf("resume point %+v, noted tail %d..%d", *r, s.closeEnd, s.closeSize)
	if r.Offset != 4 || r.Size != 4 {
		t.Errorf("a-1 read and never taken: resume Offset %d Size %d, want 4 and 4 (bytes 4..8 unread, not an unterminated line)", r.Offset, r.Size)
	}
	if s.closeEnd != 4 || s.closeSize != 8 {
		t.Errorf("noted tail %d..%d, want 4..8 (a-1 unread: lost if the file is cut before the next turn)", s.closeEnd, s.closeSize)
	}
	if !s.closeUntaken {
		t.Errorf("closeUntaken false: the glob would not give the stream another turn for a-1")
	}
}

// A last line ended by a lone '\r' at the end of the file, read while
// tailing, is held (it may be a "\r\n"'s first half): an unterminated line,
// not a line read and never taken (review 37 1: the first version of
// lineUntaken took it for one — a false lost tail at the file's deletion,
// and a stream without pointers reopened at every closeInactive).
func TestRev37HeldLoneCRIsNoUntakenLine(t *testing.T) {
	in, q, pub := rev37Source(t, "a-0\nb\r")
	ctx, cancel := context.WithCancel(context.Background())
	s := New(Config{Feed: "f", Path: in, Strategy: Earliest, Pinned: true, NoNotify: true, Poll: 10 * time.Millisecond}, pub)
	done := rev37Run(s, ctx)
	for end := time.Now().Add(5 * time.Second); s.State() != CaughtUp || s.ReadPos() != 6; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("not caught up at 6 in 5 s: %v at %d", s.State(), s.ReadPos())
		}
		rev37Ack(q, pub)
	}
	for rev37Ack(q, pub) > 0 { // (a-0, published before CAUGHT_UP)
	}
	cancel()
	rev37Close(t, s, q, done)
	r := s.ResumePoint()
	if r == nil || r.Offset != 4 || r.Size != 6 {
		t.Fatalf("resume point %+v: want Offset 4, Size 6 (b\\r held, unterminated)", r)
	}
	if s.closeSize > s.closeEnd || s.closeUntaken {
		t.Errorf("noted tail %d..%d, closeUntaken %v: want none (a held '\\r' line is no untaken line)", s.closeEnd, s.closeSize, s.closeUntaken)
	}
}

// A glob stream with a pointer, caught up, stopped as inactive (stop
// samples CAUGHT_UP: not behind) while its run, woken by a write, is about
// to read: the run reads the line and ends before the split. Its read
// position counts the line (the stream's offset = the file's size), so no
// scan sees anything new, and without another event the line stayed unread
// until the file's next write while the feed reported caught up (review 37
// 2). The stream gets another turn now: the line is delivered.
func TestRev37StoppedCaughtUpThenReadUntakenGetsAnotherTurn(t *testing.T) {
	dir, data := t.TempDir(), t.TempDir()
	a := filepath.Join(dir, "a.log")
	if err := os.WriteFile(a, []byte("a-0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := &rev37Hold{path: a}
	ig, stop := runGlobCfg(t, filepath.Join(dir, "*.log"), data, time.Second, func(c *GlobConfig) {
		c.CloseInactive = time.Second
		c.Stream.Poll = time.Hour // woken by the write's event: no stat before the read (CAUGHT_UP till then)
		c.Stream.PassHook = h.pass
	})
	defer stop()
	h.ig = ig
	h.caughtUpThenAppend(t)
	ig.waitFor(t, "the stream stopped while its run was about to read a-1", func() bool { return h.sawStop.Load() })
	got := ig.popLines(3 * time.Second)
	if got["a-1"] != 1 {
		t.Fatalf("a-1, read by a run ended before the split: delivered %d times in 3 s, want 1 (%v)", got["a-1"], got)
	}
}

// cutAtRead runs a glob-stream source (no pointer) over a file holding
// initial, delivers and acknowledges want lines, then (add not empty)
// appends add, and cancels the run at the top of the pass that reads the
// file at size cutAt: that pass reads, and the run ends before the split.
// It returns the closed source.
func cutAtRead(t *testing.T, cfg Config, initial, add string, want int, cutAt int64) *Source {
	t.Helper()
	in, q, pub := rev37Source(t, initial)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var armed atomic.Bool
	armed.Store(want == 0)
	cfg.Feed, cfg.Path, cfg.Pinned, cfg.NoNotify, cfg.Poll = "f", in, true, true, 10*time.Millisecond
	var s *Source
	cfg.PassHook = func() {
		if st, err := os.Stat(in); err == nil && st.Size() == cutAt && armed.Load() && s.ReadPos() < cutAt {
			cancel()
		}
	}
	s = New(cfg, pub)
	done := rev37Run(s, ctx)
	for n, end := 0, time.Now().Add(5*time.Second); n < want; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%d lines delivered in 5 s, want %d", n, want)
		}
		n += rev37Ack(q, pub)
	}
	armed.Store(true)
	if add != "" {
		rev37Append(t, in, add)
	}
	rev37Close(t, s, q, done)
	return s
}

// The same window with the bytes read being pieces of an oversized line
// (maxLineBytes 8, 20 bytes with no terminator: two pieces the splitter
// would deliver at once), and a once-read's last line ended by a lone '\r'
// at its limit (a line end there): both read and never taken (review 37b
// 2, 3: the first lineUntaken saw neither — no tail, no other turn, lost
// uncounted if the file was cut or deleted before its next write).
func TestRev37UntakenPiecesAndOnceReadCRAreUnread(t *testing.T) {
	t.Run("oversized pieces", func(t *testing.T) {
		s := cutAtRead(t, Config{Strategy: Earliest, MaxLine: 8}, "a-0\n", "xxxxxxxxxxxxxxxxxxxx", 1, 24)
		r := s.ResumePoint()
		if !s.closeUntaken || r == nil || r.Size != 4 || s.closeEnd != 4 || s.closeSize != 24 {
			t.Errorf("closeUntaken %v, resume %+v, tail %d..%d: want untaken, Size 4, tail 4..24", s.closeUntaken, r, s.closeEnd, s.closeSize)
		}
	})
	t.Run("once-read lone CR at its limit", func(t *testing.T) {
		s := cutAtRead(t, Config{Strategy: OnceEarliest}, "b\r", "", 0, 2)
		if !s.closeUntaken || !s.exitUntaken.Load() {
			t.Errorf("closeUntaken %v exitUntaken %v: want both (b ends at the once-read's limit)", s.closeUntaken, s.exitUntaken.Load())
		}
	})
}

// The same window for a stream with a pointer that goes on waiting for a
// slot (maxOpenFiles 1, b.log's turn first, its open slow) while its file
// is cut (`> a.log`): a-1, read and never taken, is gone unread. The
// stream's offset was its read position, so the scan that saw the cut
// counted seenEnd − max(unreadFrom, offset) = 0 and the next turn nothing
// (review 37b 1). lostTails 1, lostBytes 4 now.
func TestRev37UntakenLineCutWhileQueuedIsCounted(t *testing.T) {
	dir, data := t.TempDir(), t.TempDir()
	a, b := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
	if err := os.WriteFile(a, []byte("a-0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var slowB atomic.Bool
	release := make(chan struct{})
	h := &rev37Hold{path: a}
	h.then = func() {
		// b.log queued before a.log's stream closes: it takes the slot
		// first, and its open (the next one: a.log's stream is queued
		// behind it when it closes) waits for the test.
		if err := os.WriteFile(b, []byte("b-0\n"), 0o600); err != nil {
			t.Error(err)
		}
		for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
			h.ig.g.mu.Lock()
			sb := h.ig.g.byPath[b]
			queued := sb != nil && sb.st == stQueued
			h.ig.g.mu.Unlock()
			if queued {
				slowB.Store(true)
				return
			}
		}
	}
	ig, stop := runGlobCfg(t, filepath.Join(dir, "*.log"), data, time.Second, func(c *GlobConfig) {
		c.MaxOpenFiles = 1
		c.CloseInactive = time.Second
		c.Stream.Poll = time.Hour
		c.Stream.OpenHook = func() {
			if slowB.CompareAndSwap(true, false) {
				<-release
			}
		}
		c.Stream.PassHook = h.pass
	})
	defer stop()
	h.ig = ig
	h.caughtUpThenAppend(t)
	for end := time.Now().Add(60 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		ig.g.mu.Lock()
		sa, sb := ig.g.byPath[a], ig.g.byPath[b]
		ok := h.sawStop.Load() && sa != nil && sa.st == stQueued && sb != nil && sb.st == stOpen
		ig.g.mu.Unlock()
		if ok {
			break
		}
		if time.Now().After(end) {
			t.Fatal("a.log's stream not queued behind b.log's slow open in 60 s")
		}
	}
	if err := os.Truncate(a, 0); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "a scan seeing a.log cut", func() bool { return ig.g.byPath[a].size == 0 })
	close(release)
	got := ig.popLines(3 * time.Second)
	tails, bytes, detail := ig.lost()
	t.Logf("then %v; lostTails %d lostBytes %d %q", got, tails, bytes, detail)
	if got["a-1"] != 0 {
		t.Fatalf("a-1 delivered: read before the cut")
	}
	if tails != 1 || bytes != 4 {
		t.Errorf("a-1 (read and never taken, cut while queued): lostTails %d lostBytes %d, want 1 and 4", tails, bytes)
	}
}

// rev37Source makes a.log holding initial, and a queue and publisher for
// a source over it.
func rev37Source(t *testing.T, initial string) (string, *feed.Queue, *feed.Publisher) {
	t.Helper()
	in := filepath.Join(t.TempDir(), "a.log")
	if err := os.WriteFile(in, []byte(initial), 0o600); err != nil {
		t.Fatal(err)
	}
	q := feed.NewQueue("rec", 4096, 8<<20, overload.Policy{Kind: overload.Pause})
	return in, q, feed.NewPublisher("f", []*feed.Queue{q}, 65536, 512)
}

// rev37Run runs s until ctx is done; the channel closes when it returned.
func rev37Run(s *Source, ctx context.Context) chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx)
	}()
	return done
}

// rev37Ack pops and acknowledges a batch, if one is there; its lines.
func rev37Ack(q *feed.Queue, pub *feed.Publisher) int {
	b := q.TryPop()
	if b == nil {
		return 0
	}
	n := b.Len()
	q.AddDispatched(uint64(n))
	b.Release()
	pub.Poke()
	return n
}

// rev37Close waits for s's run to end (done), checks it published nothing
// more, then drains and closes it.
func rev37Close(t *testing.T, s *Source, q *feed.Queue, done chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the run did not end")
	}
	if b := q.TryPop(); b != nil {
		t.Fatalf("%q published after its run ended", b.Lines[0])
	}
	dctx, dcancel := context.WithTimeout(context.Background(), time.Second)
	s.Drain(dctx)
	dcancel()
	s.Close()
}

func rev37Append(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// rev37Hold holds the pass of path's stream's run that is about to read
// a-1 (path 8 bytes long, 4 read) until the glob stops that stream
// (CAUGHT_UP still: woken by the write's event, not stat'ed yet), then runs
// then (nil: nothing) and lets the pass read a-1: the run ends before the
// split.
type rev37Hold struct {
	ig             *internalGlob
	path           string
	then           func()
	armed, sawStop atomic.Bool
}

func (h *rev37Hold) pass() {
	st, err := os.Stat(h.path)
	if err != nil || st.Size() != 8 || !h.armed.Load() {
		return
	}
	h.ig.g.mu.Lock()
	s := h.ig.g.byPath[h.path]
	unread := s != nil && s.src.ReadPos() == 4
	h.ig.g.mu.Unlock()
	if !unread || !h.armed.CompareAndSwap(true, false) {
		return
	}
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end) && !h.sawStop.Load(); time.Sleep(time.Millisecond) {
		h.ig.g.mu.Lock()
		h.sawStop.Store(h.ig.g.byPath[h.path].st == stStopping)
		h.ig.g.mu.Unlock()
	}
	if h.then != nil {
		h.then()
	}
}

// caughtUpThenAppend waits for a-0 and path's stream caught up and open,
// arms the hold and appends a-1.
func (h *rev37Hold) caughtUpThenAppend(t *testing.T) {
	t.Helper()
	n := 0
	for end := time.Now().Add(5 * time.Second); n == 0 && time.Now().Before(end); {
		n += h.ig.popLines(5 * time.Millisecond)["a-0"]
	}
	if n != 1 {
		t.Fatalf("first turn: a-0 delivered %d times, want 1", n)
	}
	h.ig.waitFor(t, "the stream caught up after a-0", func() bool {
		s := h.ig.g.byPath[h.path]
		return s != nil && s.st == stOpen && s.src.State() == CaughtUp
	})
	h.armed.Store(true)
	rev37Append(t, h.path, "a-1\n")
}
