package file

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/internal/fileutil"
	"tailfeed/pointer"
)

// Review of dec2b (copyCandidate's prefix match by Source.HeadBytes,
// findShortCopy/CopiesRead, seen()'s head check and Config.ResumeUnread,
// restartOrder).

// COMMITTED, while running: a.log ("#hdr" then two lines) is read and
// acknowledged, its stream open. logrotate's create mode: a.log is renamed
// out of the glob (a.log.1) and a new a.log is made whose writer starts it
// with the same header line. The scan meets the new a.log before it marks
// the old stream gone: the new file's 5 bytes are a prefix of the old
// stream's HeadBytes, so copyCandidate (the new prefix branch) holds it as
// a possible copy; the old file is gone from the glob meanwhile, so
// decideHeld takes the new a.log for its copy and marks it done. It is
// never read: the lines appended to it later are lost, counted by nobody,
// and the feed reports CAUGHT_UP over them. Before dec2b a head shorter
// than the tracked file's fingerprint was no candidate. DESIGN §10
// "Streams": a new key is a new stream read from its start, except a copy
// (its first bytes match a tracked file's fingerprint); §4 "Nothing green
// over a loss"; §2 never a gap.
func TestGlobNewFileStartingWithRotatedFilesHeaderIsRead(t *testing.T) {
	t.Parallel()
	dir, data, a := aLogIn(t, "#hdr\nold-1\nold-2\n")
	// Discovery by rescan (a file system without events, or events lost):
	// the scan sees the rotation whole, before the old file's source (its
	// poll: 2 s) saw its file leave the path. With fsnotify it is a race
	// between the writer's first write and the scan the rename's event
	// triggers.
	ig, _ := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, func(c *GlobConfig) {
		c.Stream.NoNotify = true
		c.Stream.Poll = 2 * time.Second
		c.ScanInterval = 300 * time.Millisecond
	})
	first, _ := ig.popEpochs(time.Second, true)
	if !slices.Equal(first, []string{"#hdr", "old-1", "old-2"}) {
		t.Fatalf("first: %q", first)
	}
	var old *gstream
	ig.waitFor(t, "a.log's stream open, its head published", func() bool {
		old = ig.g.byPath[a]
		return old != nil && old.src != nil && old.src.headLen() == 17
	})
	if err := os.WriteFile(filepath.Join(dir, "a.new"), []byte("#hdr\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(a, a+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "a.new"), a); err != nil {
		t.Fatal(err)
	}
	// Its writer's next lines come once a look has seen the new a.log (its
	// header alone).
	ig.waitFor(t, "a scan seeing the new a.log", func() bool {
		s := ig.g.byPath[a]
		return s != nil && s != old
	})
	appendTo(t, a, "new-1\n")
	appendTo(t, a, "new-2\n")
	var got []string
	for end := time.Now().Add(6 * time.Second); len(got) < 3 && time.Now().Before(end); {
		l, _ := ig.popEpochs(50*time.Millisecond, true)
		got = append(got, l...)
	}
	got2, _ := ig.popEpochs(time.Second, true) // a.log's read to its end, held or not
	got = append(got, got2...)
	tails, bytes, detail := ig.lost()
	st := ig.g.State()
	t.Logf("after the rotation: %q; lostTails %d lostBytes %d %q; state %v", got, tails, bytes, detail, st)
	if !slices.Equal(got, []string{"#hdr", "new-1", "new-2"}) {
		t.Errorf("the new a.log (its first line the rotated file's header) delivered %q, want its three lines; lostTails %d lostBytes %d, state %v",
			got, tails, bytes, st)
	}
}

// The same, at another path and without a rotation: a.log ("#hdr" then two
// lines, its stream open, everything read and acknowledged); b.log, a new
// file of another writer with the same header line, appears holding only
// that header (its writer's first write); a.log is deleted (a retention
// cleanup) within rotateWaitMillis. b.log's 5 bytes are a prefix of
// a.log's HeadBytes: held as a possible copy of a.log; a.log gone, so
// decideHeld takes b.log for a.log's copy and marks it done. b.log is never
// read, whatever its writer appends after: its lines are lost, uncounted,
// and the feed reports CAUGHT_UP. DESIGN §10 "Streams" (a copy's first
// bytes match a tracked file's fingerprint; a shorter file matches no
// fingerprint), §4 "Nothing green over a loss".
func TestGlobNewFileOfAnotherWriterWithSameHeaderIsRead(t *testing.T) {
	t.Parallel()
	dir, data, a := aLogIn(t, "#hdr\nold-1\nold-2\n")
	ig, _ := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, func(c *GlobConfig) {
		c.Stream.RotateWait = time.Second
	})
	first, _ := ig.popEpochs(time.Second, true)
	if !slices.Equal(first, []string{"#hdr", "old-1", "old-2"}) {
		t.Fatalf("first: %q", first)
	}
	ig.waitFor(t, "a.log's stream open, its head published", func() bool {
		s := ig.g.byPath[a]
		return s != nil && s.src != nil && s.src.headLen() == 17
	})
	b := filepath.Join(dir, "b.log")
	if err := os.WriteFile(b, []byte("#hdr\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var sb *gstream
	ig.waitFor(t, "a look seeing b.log's header", func() bool { sb = ig.g.byPath[b]; return sb != nil && sb.size == 5 })
	ig.g.mu.Lock()
	held := sb.copyOf != nil
	ig.g.mu.Unlock()
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	appendTo(t, b, "b-1\n")
	appendTo(t, b, "b-2\n")
	var got []string
	for end := time.Now().Add(4 * time.Second); len(got) < 3 && time.Now().Before(end); {
		l, _ := ig.popEpochs(50*time.Millisecond, true)
		got = append(got, l...)
	}
	tails, bytes, detail := ig.lost()
	st := ig.g.State()
	t.Logf("b.log held as a copy of a.log: %v; delivered %q; lostTails %d lostBytes %d %q; state %v", held, got, tails, bytes, detail, st)
	if !slices.Equal(got, []string{"#hdr", "b-1", "b-2"}) {
		t.Errorf("b.log (a new file whose first line is a.log's header; a.log deleted meanwhile) delivered %q, want its three lines; lostTails %d lostBytes %d, state %v",
			got, tails, bytes, st)
	}
}

// EARLIEST without pointers: a.log's three lines (12 bytes) are read and
// acknowledged, then c-3 is appended and read (its source's head: 16
// bytes). copytruncate's copy a.1.log (matched) holds the 12 bytes taken
// before c-3: held as a possible copy by its first bytes alone. a.log's
// stream then closes as inactive before the truncation, so no source of
// a.log confirms a.1.log as its copy (Source.ShortCopyKey). A match by a
// few first bytes is no proof (a header line shared by files: see the two
// tests above, where taking such a file for a copy lost it): a.1.log is read
// as a file of its own — c-0..c-2 a second time (duplicates), nothing lost
// and nothing counted (README "Identity": decided, the review's reading of
// DESIGN §10 "Streams" was "not read again").
func TestGlobEarliestNoPointerShortCopyOfClosedOriginalReadAgainNotLost(t *testing.T) {
	t.Parallel()
	content := "c-0\nc-1\nc-2\n"
	dir, data, a := aLogIn(t, content)
	ig, _ := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, func(c *GlobConfig) {
		c.Stream.Strategy = Earliest
		c.PointerDir = ""
		c.CloseInactive = 300 * time.Millisecond
		c.Stream.RotateWait = 3 * time.Second
	})
	first, _ := ig.popEpochs(time.Second, true)
	appendTo(t, a, "c-3\n")
	var more []string
	for end := time.Now().Add(3 * time.Second); len(more) == 0 && time.Now().Before(end); {
		more, _ = ig.popEpochs(20*time.Millisecond, true)
	}
	var sa *gstream
	ig.waitFor(t, "a.log's source's head covering 16 bytes", func() bool {
		sa = ig.g.byPath[a]
		return sa != nil && sa.src != nil && sa.src.headLen() == 16
	})
	cp := filepath.Join(dir, "a.1.log")
	if err := os.WriteFile(cp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	var sc *gstream
	ig.waitFor(t, "a.1.log tracked", func() bool {
		sc = ig.g.byPath[cp]
		return sc != nil
	})
	ig.waitFor(t, "a.log's stream closed as inactive", func() bool { return sa.st == stClosed && sa.resume != nil })
	if err := os.Truncate(a, 0); err != nil {
		t.Fatal(err)
	}
	var got []string
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); {
		l, _ := ig.popEpochs(50*time.Millisecond, true)
		got = append(got, l...)
	}
	tails, bytes, _ := ig.lost()
	t.Logf("first %q, then %q; after the copytruncate %q; lostTails %d lostBytes %d", first, more, got, tails, bytes)
	if len(first) != 3 || !slices.Equal(more, []string{"c-3"}) {
		t.Fatalf("before the copytruncate: %q then %q", first, more)
	}
	if !slices.Equal(got, []string{"c-0", "c-1", "c-2"}) || tails != 0 || bytes != 0 {
		t.Errorf("a.log (16 bytes read and acknowledged, its stream closed) copytruncated to a.1.log (its first 12 bytes): delivered %q, lostTails %d lostBytes %d; want a.1.log read whole once (duplicates of a.log's first lines), nothing counted lost", got, tails, bytes)
	}
}

// restartOrder groups a start's streams by the path they were first
// matched under, which a previous run's pointer gives by its epochs line
// naming a file — written with the path the stream's file was at when its
// pointer was opened (pointer.Options.Input = s.path), not the path it was
// first matched under (s.first). COMMITTED, one slot: b.log's first open
// is slow (it holds the slot); a.log appears (a-0, a-1) and waits for a
// slot; before its turn it is rotated within the glob to old/a.log and a
// new a.log (n-0) appears, held behind it (the per-path barrier, vacated).
// a.log's old file then gets its turn: its pointer is opened while the file
// is at old/a.log, and its lines are published, not acknowledged (the
// subscriber is down); the daemon stops. At the restart (one slot), the old
// file's pointer says it was first matched at old/a.log: it is not chained
// before the new a.log, which is started first (it sorts first) and
// delivers n-0 before a-0 and a-1 are delivered again. DESIGN §10 "Order"
// (a new file at a path is published after every line of the file
// previously at that path is acknowledged) and the README's "Order across a
// restart" (dec2b: the per-path order holds across a restart).
func TestGlobRestartOrderFileRotatedBeforeItsFirstTurnStaysFirst(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	a, b := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
	old := filepath.Join(dir, "old", "a.log")
	if err := os.WriteFile(b, []byte("b-0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Dir(old), 0o700); err != nil {
		t.Fatal(err)
	}
	pattern := filepath.Join(dir, "**", "*.log")
	var slow atomic.Bool
	slow.Store(true)
	ig, stop := runGlobCfg(t, pattern, data, 100*time.Millisecond, func(c *GlobConfig) {
		c.MaxOpenFiles = 3
		c.Stream.OpenHook = func() {
			if slow.CompareAndSwap(true, false) {
				time.Sleep(2 * time.Second)
			}
		}
	})
	if ig.g.maxSlots != 1 {
		t.Fatalf("maxSlots %d, want 1", ig.g.maxSlots)
	}
	ig.waitFor(t, "b.log's stream starting", func() bool { s := ig.g.byPath[b]; return s != nil && s.st == stOpen })
	if err := os.WriteFile(a, []byte("a-0\na-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var sa *gstream
	ig.waitFor(t, "a.log queued", func() bool { sa = ig.g.byPath[a]; return sa != nil && sa.st == stQueued })
	if err := os.Rename(a, old); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the scan following a.log's file to old/a.log", func() bool { return sa.path == old })
	if err := os.WriteFile(a, []byte("n-0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the new a.log held behind the old file", func() bool {
		s := ig.g.byPath[a]
		return s != nil && s != sa && s.after == sa
	})
	var first []string
	for end := time.Now().Add(5 * time.Second); !slices.Contains(first, "a-1") && time.Now().Before(end); {
		bt := ig.q.TryPop()
		if bt == nil {
			time.Sleep(2 * time.Millisecond)
			continue
		}
		for _, l := range bt.Lines {
			first = append(first, string(l))
		}
		if strings.HasPrefix(string(bt.Lines[0]), "b-") {
			ig.q.AddDispatched(uint64(bt.Len())) // b.log's line acknowledged, a.log's never
		}
		bt.Release()
		ig.pub.Poke()
	}
	if !slices.Contains(first, "a-1") || slices.Contains(first, "n-0") {
		ig.g.mu.Lock()
		for _, s := range ig.g.byKey {
			t.Logf("stream %s first %s st %v owe %v await %v after %v gone %v src %v", s.path, s.first, s.st, s.owe != nil, s.awaitScan, s.after != nil, s.gone, s.src != nil)
			if s.src != nil {
				t.Logf("  state %v", s.src.State())
			}
		}
		ig.g.mu.Unlock()
		t.Fatalf("run 1 delivered %q", first)
	}
	stop()
	ig2, _ := runGlobCfg(t, pattern, data, 100*time.Millisecond, func(c *GlobConfig) { c.MaxOpenFiles = 3 })
	var got []string
	for end := time.Now().Add(5 * time.Second); len(got) < 4 && time.Now().Before(end); {
		l, _ := ig2.popEpochs(50*time.Millisecond, true)
		got = append(got, l...)
	}
	t.Logf("run 1 delivered %q; after the restart %q", first, got)
	ig2.g.mu.Lock()
	for _, s := range ig2.g.byKey {
		t.Logf("after the restart: stream at %s first matched at %s (held behind another: %v)", s.path, s.first, s.after != nil)
	}
	ig2.g.mu.Unlock()
	n, a1 := slices.Index(got, "n-0"), slices.Index(got, "a-1")
	if n < 0 || a1 < 0 || n < a1 {
		t.Errorf("after the restart: %q; want a-0 and a-1 (the old a.log's lines, never acknowledged) before the new a.log's n-0", got)
	}
}

// ONCE_EARLIEST (no pointers), one slot: a.log (100,000 lines, its size
// at start S) is read until the subscriber stops taking lines; a.log's
// stream is preempted after its turn (b.log waits) with its resume point
// at R < S, and queued again; b.log's open is slow (it holds the slot).
// Meanwhile a line is appended to a.log after the start (past S: ONCE_
// EARLIEST never reads it), then a.log's first bytes are overwritten in
// place. seen()'s new head check counts the bytes "seen past where its
// stream stopped" as max(size seen) − R: the appended line, which ONCE_
// EARLIEST would never have delivered, is counted in lostBytes. DESIGN §4
// "Nothing green over a loss" (lostBytes: the bytes known to be gone); §10
// ONCE_EARLIEST reads every file to its size when first matched.
func TestGlobOnceEarliestRewriteCountsOnlyBytesDueAtStart(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	a, b := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
	var sb strings.Builder
	for i := range 100000 {
		fmt.Fprintf(&sb, "a-%06d\n", i)
	}
	if err := os.WriteFile(a, []byte(sb.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	startSize := int64(sb.Len())
	if err := os.WriteFile(b, []byte("b-0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	slow := new(atomic.Bool)
	ig, _ := runGlobWith(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, func(c *GlobConfig) {
		c.Stream.Strategy = OnceEarliest
		c.PointerDir = ""
		c.MaxOpenFiles = 2
		c.Stream.OpenHook = func() {
			if slow.CompareAndSwap(true, false) {
				time.Sleep(3 * time.Second)
			}
		}
	}, func(g *Glob) { g.drainBound = 100 * time.Millisecond })
	var sa *gstream
	ig.waitFor(t, "a.log's stream open", func() bool { sa = ig.g.byPath[a]; return sa != nil && sa.st == stOpen })
	slow.Store(true) // b.log's open, next, is slow
	ig.waitFor(t, "a.log's stream preempted, queued with its resume point", func() bool {
		return sa.st == stQueued && sa.resume != nil
	})
	ig.g.mu.Lock()
	resumeAt := sa.resume.Offset
	ig.g.mu.Unlock()
	appendTo(t, a, "late-line\n") // after the start: never due under ONCE_EARLIEST
	ig.waitFor(t, "a look seeing the appended line", func() bool { return sa.size == startSize+10 })
	f, err := os.OpenFile(a, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("X"), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ig.waitFor(t, "a look seeing the rewrite", func() bool { return sa.resume == nil })
	tails, bytes, detail := ig.lost()
	t.Logf("size at start %d, resume at %d; lostTails %d lostBytes %d %q", startSize, resumeAt, tails, bytes, detail)
	if resumeAt >= startSize {
		t.Fatalf("a.log read to its end before its preemption (resume at %d)", resumeAt)
	}
	if due := uint64(startSize - resumeAt); bytes > due {
		t.Errorf("ONCE_EARLIEST: a.log rewritten in place while queued: lostBytes %d, but only %d bytes (size at start %d − resume point %d) were due; the %d bytes appended after the start are counted lost",
			bytes, due, startSize, resumeAt, bytes-due)
	}
}

// Two rotations while the daemon is stopped (DESIGN §4 "Restart after
// rotation: every generation still on disk", per path in a glob, §10
// "Order"). a.log's old-0 is read and committed; stopped. While stopped:
// old-1 is appended to a.log, which is rotated to a.2.log; a new a.log gets
// m-0 and is rotated to a.1.log; a newest a.log gets n-0. At the restart
// (one slot) restartOrder chains only the streams whose pointers name a.log
// (a.2.log) and the file at a.log: a.1.log, which was at a.log between them
// but has no pointer, is a stream of its own, unchained, and (sorting first)
// delivers m-0 before old-1, the line of the file that was at a.log before
// it. §4 reads the later generations (rotatedNames, by mtime) between the
// pointer's generation and the file at the path.
func TestGlobRestartOrderGenerationBornWhileStoppedKeepsItsPlace(t *testing.T) {
	t.Parallel()
	// a.1.log, a.2.log: generations of a.log by the feed's rotatedNames
	// (the default names a.log.1, a.log.2: TestGlobRestartOrderDefaultRotatedNames).
	got := twoRotationsWhileStopped(t, "*.log", "a.2.log", "a.1.log", func(c *GlobConfig) {
		c.MaxOpenFiles = 3
		c.Stream.RotatedNames = []string{"a.*.log"}
	})
	if !slices.Equal(got, []string{"old-1", "m-0", "n-0"}) {
		t.Errorf("after the restart: %q; want a.log's generations in order: old-1 (a.2.log), m-0 (a.1.log), n-0 (a.log)", got)
	}
}

// twoRotationsWhileStopped runs a glob feed (pattern in a fresh directory,
// cfg adjusting it) over a.log holding old-0, stops it, then while stopped
// appends old-1 and renames a.log to older, writes m-0 to a new a.log and
// renames it to middle, and writes n-0 to a newest a.log; it returns what
// the restarted feed delivers (up to three lines).
func twoRotationsWhileStopped(t *testing.T, pattern, older, middle string, cfg func(*GlobConfig)) []string {
	t.Helper()
	dir, data := t.TempDir(), t.TempDir()
	a := filepath.Join(dir, "a.log")
	if err := os.WriteFile(a, []byte("old-0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ig, stop := runGlobCfg(t, filepath.Join(dir, pattern), data, 2*time.Second, cfg)
	if got, _ := ig.popEpochs(time.Second, true); !slices.Equal(got, []string{"old-0"}) {
		t.Fatalf("first run: %q", got)
	}
	stop()
	appendTo(t, a, "old-1\n")
	for _, step := range []struct{ to, next string }{{older, "m-0\n"}, {middle, "n-0\n"}} {
		if err := os.Rename(a, filepath.Join(dir, step.to)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond) // mtimes apart
		if err := os.WriteFile(a, []byte(step.next), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ig2, _ := runGlobCfg(t, filepath.Join(dir, pattern), data, 2*time.Second, cfg)
	var got []string
	for end := time.Now().Add(5 * time.Second); len(got) < 3 && time.Now().Before(end); {
		l, _ := ig2.popEpochs(50*time.Millisecond, true)
		got = append(got, l...)
	}
	t.Logf("after the restart: %q", got)
	return got
}

// A file taken for a copy (copytruncate) is a snapshot: if it grows later
// it was a file of its own after all, and it is read from its start —
// duplicates at worst, never its new lines lost. COMMITTED: a.log (5,000
// bytes, past the 4 KiB fingerprint) is read, then two more lines; its
// copy a.1.log holds the first 5,000 bytes (taken before the source read
// on), a.log is truncated: a.log's stream takes a.1.log for its copy
// holding nothing unread, and the glob does not read it. Then a line is
// appended to a.1.log: a.1.log is read whole.
func TestGlobFileTakenForACopyThatChangesIsRead(t *testing.T) {
	t.Parallel()
	content, n := pastFingerprint()
	dir, data, a := aLogIn(t, content)
	ig, _ := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, nil)
	var first []string
	for end := time.Now().Add(3 * time.Second); len(first) < n && time.Now().Before(end); {
		l, _ := ig.popEpochs(50*time.Millisecond, true)
		first = append(first, l...)
	}
	appendTo(t, a, "more-0\nmore-1\n")
	var more []string
	for end := time.Now().Add(3 * time.Second); len(more) < 2 && time.Now().Before(end); {
		l, _ := ig.popEpochs(50*time.Millisecond, true)
		more = append(more, l...)
	}
	if len(first) != n || len(more) != 2 {
		t.Fatalf("before the copytruncate: %d then %d lines", len(first), len(more))
	}
	time.Sleep(100 * time.Millisecond)
	cp := filepath.Join(dir, "a.1.log")
	if err := os.WriteFile(cp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(a, 0); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "a.1.log taken for a.log's copy", func() bool {
		s := ig.g.byPath[cp]
		return s != nil && s.done && s.isCopy
	})
	if got, _ := ig.popEpochs(300*time.Millisecond, true); len(got) != 0 {
		t.Fatalf("the copy read: %d lines", len(got))
	}
	appendTo(t, cp, "x-0\n")
	var got []string
	for end := time.Now().Add(3 * time.Second); len(got) < n+1 && time.Now().Before(end); {
		l, _ := ig.popEpochs(50*time.Millisecond, true)
		got = append(got, l...)
	}
	if len(got) != n+1 || got[n] != "x-0" {
		t.Errorf("a.1.log, taken for a copy, then appended to: %d lines delivered (last %q); want it read from its start, %d lines ending with x-0", len(got), got[len(got)-1:], n+1)
	}
}

// The same two rotations while stopped, with logrotate's default names
// (a.log.1, a.log.2, matched by a.log*; no rotatedNames set): after the
// restart a.log's generations come out oldest first, the file at the path
// last.
func TestGlobRestartOrderDefaultRotatedNames(t *testing.T) {
	t.Parallel()
	got := twoRotationsWhileStopped(t, "a.log*", "a.log.2", "a.log.1", func(c *GlobConfig) {
		c.MaxOpenFiles = 3 // one slot: the queue's order decides
	})
	if !slices.Equal(got, []string{"old-1", "m-0", "n-0"}) {
		t.Errorf("after the restart: %q; want old-1 (a.log.2), m-0 (a.log.1), n-0 (a.log)", got)
	}
}

// The glob's rewrite check reads the first bytes at the path after its
// look: a file that took the path since (renamed or replaced there) says
// nothing about the stream's file — no rewrite, no loss counted for it.
func TestGlobRewriteCheckIgnoresAnotherFileAtThePath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "a.log")
	if err := os.WriteFile(p, []byte("a-0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dev, ino, err := fileutil.DevInoPath(p)
	if err != nil {
		t.Fatal(err)
	}
	key := pointer.FileKey(dev, ino)
	head := pointer.Fingerprint([]byte("a-0\n"))
	if rewrittenAt(p, key, 4, head) {
		t.Fatal("the same file with the same first bytes taken for rewritten")
	}
	if err := os.WriteFile(p, []byte("b-0\n"), 0o600); err != nil { // in place: same inode
		t.Fatal(err)
	}
	if !rewrittenAt(p, key, 4, head) {
		t.Fatal("the same file rewritten in place not seen")
	}
	other := filepath.Join(dir, "b.log")
	if err := os.WriteFile(other, []byte("c-0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, p); err != nil { // another file takes the path
		t.Fatal(err)
	}
	if rewrittenAt(p, key, 4, head) {
		t.Error("another file at the path taken for the stream's file rewritten (a loss counted for bytes nobody cut)")
	}
}

// headLen is how many first bytes of its file the source fingerprinted
// (as published for the glob).
func (s *Source) headLen() int {
	if h := s.head.Load(); h != nil {
		return int(h.n)
	}
	return 0
}
