package file

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Review of dec2c (heldShort/ShortCopyKey, the isCopy revive, epochs
// lines naming s.first, seenEnd, restartOrder's rotatedNames chain).

// COMMITTED, while running: a.log ("#hdr" then two lines) is read and
// acknowledged, its stream open. b.log, a new file of another writer whose
// first line is the same header, appears holding only that header: held
// as a possible copy of a.log (heldShort: its 5 bytes are a prefix of
// a.log's HeadBytes). a.log is then truncated (`: > a.log`, or a
// copytruncate whose copy went elsewhere). a.log's source, looking for its
// copy, takes b.log (any regular file beside it, shorter than what it
// consumed, equal to its first bytes: findShortCopy) and stores its key in
// ShortCopyKey; b.log's writer appends b-1 after the truncation, within
// the hold. decideHeld sees ShortCopyKey == b.log's key and marks b.log
// done as a copy: "#hdr" and b-1 are never delivered, nothing is counted,
// and the feed reports CAUGHT_UP (b.log does not change again, so the
// isCopy revive never runs). The same header line is exactly the case the
// dec2c README calls "no proof": findShortCopy's match is the same prefix
// match. DESIGN §10 "Streams" (a new key is a new stream read from its
// start unless it is a copy: its first bytes match a tracked file's
// fingerprint; a 5-byte file matches no 17-byte fingerprint), §4 "Nothing
// green over a loss", §2 never a gap.
func TestGlobTruncatedFileTakesOtherWritersHeaderFileForItsShortCopy(t *testing.T) {
	t.Parallel()
	dir, data, a := aLogIn(t, "#hdr\nold-1\nold-2\n")
	ig, _ := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, func(c *GlobConfig) {
		c.Stream.RotateWait = time.Second
	})
	first, _ := ig.popEpochs(time.Second, true)
	if !slices.Equal(first, []string{"#hdr", "old-1", "old-2"}) {
		t.Fatalf("first: %q", first)
	}
	var sa *gstream
	ig.waitFor(t, "a.log's stream open, its head published", func() bool {
		sa = ig.g.byPath[a]
		return sa != nil && sa.src != nil && sa.src.headLen() == 17
	})
	b := filepath.Join(dir, "b.log")
	if err := os.WriteFile(b, []byte("#hdr\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var sb *gstream
	ig.waitFor(t, "b.log tracked (too short to be held as a copy of a.log)", func() bool {
		sb = ig.g.byPath[b]
		return sb != nil
	})
	time.Sleep(20 * time.Millisecond) // b.log's mtime before the truncation is noticed
	if err := os.Truncate(a, 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // a.log's source sees its truncation
	appendTo(t, b, "b-1\n")
	var got []string
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
		l, _ := ig.popEpochs(50*time.Millisecond, true)
		got = append(got, l...)
	}
	tails, bytes, detail := ig.lost()
	st := ig.g.State()
	ig.g.mu.Lock()
	key, short := sb.key, sa.src != nil && copyKeyOf(sa.src) == sb.key
	done, isCopy := sb.done, sb.isCopy
	ig.g.mu.Unlock()
	t.Logf("b.log (key %x) a.log's ShortCopyKey: %v; b.log done %v isCopy %v; delivered %q; lostTails %d lostBytes %d %q; state %v",
		key, short, done, isCopy, got, tails, bytes, detail, st)
	if !slices.Equal(got, []string{"#hdr", "b-1"}) && tails == 0 {
		t.Errorf("b.log (another writer's file starting with a.log's header; a.log truncated meanwhile) delivered %q, want its two lines; nothing counted (lostTails %d lostBytes %d), state %v",
			got, tails, bytes, st)
	}
}

// COMMITTED, while running: a.log's three lines are read and acknowledged.
// copytruncate: its copy a.1.log (matched) is written, then a.log is
// truncated. a.1.log is held, then decided a copy (done, isCopy): its
// lines were read from a.log, its stream reads nothing of it. Then the
// copy's mtime alone is set (`touch`, a backup tool restoring times,
// `cp -p`/`rsync -t` over it, logrotate's own utime of a copy): size and
// content unchanged. seen()'s new revive takes any mtime change of an
// isCopy file for "no snapshot" and reads it from its start: the three
// lines are delivered a second time without any crash. DESIGN §2: the
// duplicates after a crash are exactly the lines acknowledged since the
// last commit; the only other re-delivery is a restored sink's catch-up
// (§11). §4 "Appending, or changing file times, never resets".
func TestGlobCopyWhoseMtimeIsTouchedIsNotReadAgain(t *testing.T) {
	t.Parallel()
	dir, data, a := aLogIn(t, "l-0\nl-1\nl-2\n")
	ig, _ := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, nil)
	first, _ := ig.popEpochs(time.Second, true)
	if !slices.Equal(first, []string{"l-0", "l-1", "l-2"}) {
		t.Fatalf("first: %q", first)
	}
	c := filepath.Join(dir, "a.1.log")
	if err := os.WriteFile(c, []byte("l-0\nl-1\nl-2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(a, 0); err != nil {
		t.Fatal(err)
	}
	var sc *gstream
	ig.waitFor(t, "a.1.log decided a copy", func() bool {
		sc = ig.g.byPath[c]
		return sc != nil && sc.done && sc.isCopy
	})
	before, _ := ig.popEpochs(500*time.Millisecond, true)
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(c, future, future); err != nil {
		t.Fatal(err)
	}
	after, _ := ig.popEpochs(2*time.Second, true)
	tails, bytes, _ := ig.lost()
	t.Logf("before the touch (after the copytruncate): %q; after touching the copy's mtime: %q; lostTails %d lostBytes %d", before, after, tails, bytes)
	if len(after) > 0 {
		t.Errorf("touching the mtime of a.1.log, a copy whose lines were all delivered from a.log, delivered %d lines again (%q) without a crash", len(after), after)
	}
}

// COMMITTED, discovery by rescan (no fsnotify events: a file system
// without them, or an overflow; ScanInterval 1.5 s): a.log's three lines
// are read and acknowledged, then l-3 is appended and read (the stream's
// head: 16 bytes). copytruncate's copy a.1.log (matched) holds the 12
// bytes taken before l-3; a.log is truncated right after. a.log's source,
// open at the truncation, finds a.1.log as its copy holding nothing unread
// (findShortCopy: ShortCopyKey = a.1.log's key, CopiesRead 1) — the very
// case the dec2c README says is "taken for the copy, not read again". But
// the glob's scan meets a.1.log only after that: a.log's pointer was reset
// for the truncated file (no fingerprint), so copyCandidate finds no
// original, a.1.log is a new stream, and l-0..l-2 are delivered a second
// time without a crash. DESIGN §2 (duplicates only after a crash, or a
// restored sink's catch-up); §10 "Streams" (a copy is read from the old
// offset under the old stream, not as a new stream).
func TestGlobShortCopyFoundByItsSourceBeforeTheScanIsNotReadAgain(t *testing.T) {
	t.Parallel()
	// (Reworked by the lead: since review 7 only a copy at least as long as
	// the fingerprint is ever taken for one, so the file is 5,000 bytes.)
	content, n := pastFingerprint()
	dir, data, a := aLogIn(t, content)
	ig, _ := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, func(c *GlobConfig) {
		c.Stream.NoNotify = true
		c.ScanInterval = 1500 * time.Millisecond
	})
	var first []string
	for end := time.Now().Add(5 * time.Second); len(first) < n && time.Now().Before(end); {
		l, _ := ig.popEpochs(50*time.Millisecond, true)
		first = append(first, l...)
	}
	appendTo(t, a, "l-3\n")
	var more []string
	for end := time.Now().Add(5 * time.Second); len(more) < 1 && time.Now().Before(end); {
		l, _ := ig.popEpochs(50*time.Millisecond, true)
		more = append(more, l...)
	}
	if len(first) != n || !slices.Equal(more, []string{"l-3"}) {
		t.Fatalf("before the copytruncate: %d lines, then %q", len(first), more)
	}
	sa := ig.g.byPath[a]
	c := filepath.Join(dir, "a.1.log")
	if err := os.WriteFile(c, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(a, 0); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "a.log's source taking a.1.log for its copy", func() bool { return sa.src != nil && sa.src.CopiesRead() > 0 })
	var got []string
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); {
		l, _ := ig.popEpochs(50*time.Millisecond, true)
		got = append(got, l...)
	}
	ig.g.mu.Lock()
	sc := ig.g.byPath[c]
	isCopy := sc != nil && sc.isCopy
	ig.g.mu.Unlock()
	t.Logf("a.1.log taken for a copy by the glob: %v; delivered after the copytruncate: %d lines", isCopy, len(got))
	if len(got) > 0 {
		t.Errorf("a.1.log, the copy a.log's open stream took holding nothing unread, delivered %d lines again without a crash", len(got))
	}
}

// rotatedNames set for the feed (globs over base names, DESIGN §4:
// `rotatedNames: ["*.old"]`, one list for every path a glob matches). Run 1
// reads a.log (a-0); the daemon stops. While it is stopped a.log is
// rotated to a.1.old (matched: the pattern is dir/*) and a new a.log gets
// n-0; c.log, a writer's file born and rotated while tailfeed was stopped
// (c.2.old, 20,000 lines, and a new c.log), was never seen. At the restart
// restartOrder chains into a.log's group every file new at this start in
// a.log's directory whose base name matches a rotatedNames glob — c.2.old
// too, though it is no generation of a.log (isRotatedName ignores the base
// name when rotatedNames is set) — so the new a.log's n-0 waits until all
// of c.2.old, a file first matched under another path, is delivered and
// acknowledged. DESIGN §10 "Order": the epoch barrier holds per path;
// files at other paths are not held and interleave (README "Order across a
// restart": files first matched under other paths are not held).
func TestGlobRestartOrderDoesNotHoldAPathBehindAnotherPathsGeneration(t *testing.T) {
	t.Parallel()
	dir, data, a := aLogIn(t, "a-0\n")
	pattern := filepath.Join(dir, "*")
	set := func(c *GlobConfig) { c.Stream.RotatedNames = []string{"*.old"} }
	ig, stop := runGlobCfg(t, pattern, data, 2*time.Second, set)
	if got, _ := ig.popEpochs(time.Second, true); !slices.Equal(got, []string{"a-0"}) {
		t.Fatalf("run 1: %q", got)
	}
	stop()
	if err := os.Rename(a, filepath.Join(dir, "a.1.old")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a, []byte("n-0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour) // c.2.old: rotated before a.log was
	c2 := filepath.Join(dir, "c.2.old")
	if err := os.WriteFile(c2, []byte(numbered("c", 20000)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(c2, old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "c.log"), []byte("cn-0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ig2, _ := runGlobCfg(t, pattern, data, 2*time.Second, set)
	ig2.waitFor(t, "the restart's first scan", func() bool { return ig2.g.started && ig2.g.byPath[a] != nil })
	ig2.g.mu.Lock()
	var chain []string
	for p := ig2.g.byPath[a].after; p != nil; p = p.after {
		chain = append(chain, filepath.Base(p.path))
	}
	ig2.g.mu.Unlock()
	var got []string
	for end := time.Now().Add(10 * time.Second); !slices.Contains(got, "n-0") && time.Now().Before(end); {
		l, _ := ig2.popEpochs(50*time.Millisecond, true)
		got = append(got, l...)
	}
	n, cs := slices.Index(got, "n-0"), 0
	for _, l := range got[:max(n, 0)] {
		if strings.HasPrefix(l, "c-") {
			cs++
		}
	}
	t.Logf("the new a.log waits for: %q; n-0 delivered at index %d, after %d of c.2.old's 20000 lines", chain, n, cs)
	if slices.Contains(chain, "c.2.old") {
		t.Errorf("after the restart the new a.log is held behind %q (c.2.old is c.log's generation, not a.log's): n-0 came after %d lines of c.2.old",
			chain, cs)
	}
}

// COMMITTED, discovery by rescan (no fsnotify: ScanInterval 300 ms).
// a.log's three lines (12 bytes) are read and acknowledged. copytruncate
// copies a.log to a.1.log (matched) and a scan meets the copy while it is
// being written (its first 4 bytes): shorter than a.log's fingerprint, a
// prefix of its HeadBytes, so it is held as a short copy (heldShort). The
// copy is then completed (12 bytes, a.log's whole content) and a.log
// truncated. a.log's source does not take a.1.log through findShortCopy
// (the copy is not shorter than what it consumed), so ShortCopyKey never
// names it, and dec2c's decideHeld takes a held short copy for the copy
// only when ShortCopyKey names it: a.1.log is read as a new stream and
// l-0..l-2 are delivered a second time without a crash. The same copy
// first seen whole (not heldShort) is decided a copy by the truncation and
// not read again (checked: isCopy true, nothing delivered). DESIGN §2
// (duplicates only after a crash); §10 "Streams" (a new key whose first
// bytes match a tracked file's fingerprint, that file truncated meanwhile,
// is its copy).
func TestGlobCopySeenWhileBeingWrittenIsReadAtMostOnce(t *testing.T) {
	t.Parallel()
	dir, data, a := aLogIn(t, "l-0\nl-1\nl-2\n")
	ig, _ := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, func(c *GlobConfig) {
		c.Stream.NoNotify = true
		c.Stream.RotateWait = 500 * time.Millisecond
		c.ScanInterval = 300 * time.Millisecond
	})
	first, _ := ig.popEpochs(time.Second, true)
	if !slices.Equal(first, []string{"l-0", "l-1", "l-2"}) {
		t.Fatalf("first: %q", first)
	}
	var sa *gstream
	ig.waitFor(t, "a.log's stream open, its head published", func() bool {
		sa = ig.g.byPath[a]
		return sa != nil && sa.src != nil && sa.src.headLen() == 12
	})
	c := filepath.Join(dir, "a.1.log")
	if err := os.WriteFile(c, []byte("l-0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var sc *gstream
	ig.waitFor(t, "a scan meeting the copy being written", func() bool {
		sc = ig.g.byPath[c]
		return sc != nil
	})
	short := false
	appendTo(t, c, "l-1\nl-2\n")
	if err := os.Truncate(a, 0); err != nil {
		t.Fatal(err)
	}
	var got []string
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
		l, _ := ig.popEpochs(50*time.Millisecond, true)
		got = append(got, l...)
	}
	ig.g.mu.Lock()
	copies := uint64(0)
	if sa.src != nil {
		copies = sa.src.CopiesRead()
	}
	isCopy := sc.isCopy
	ig.g.mu.Unlock()
	t.Logf("a.1.log held short: %v; a.log's source read on from a copy: %d; a.1.log taken for the copy: %v; delivered after the copytruncate: %q", short, copies, isCopy, got)
	// Decided (README "Identity"): a file first met shorter than the
	// fingerprint is never held as a copy (a few first bytes are no
	// proof: a header-only file taken for a copy was lost), so this copy
	// is read as a file of its own: its lines once more, nothing lost.
	tails, bytes, _ := ig.lost()
	if len(got) > 0 && !slices.Equal(got, []string{"l-0", "l-1", "l-2"}) || tails != 0 || bytes != 0 {
		t.Errorf("a.1.log, a.log's copytruncate copy first met being written: delivered %q, lostTails %d lostBytes %d; want nothing or its three lines once, nothing lost", got, tails, bytes)
	}
}

// COMMITTED, discovery by rescan (no fsnotify: ScanInterval 2 s). a.log
// (1,000 lines, 10,000 bytes) is read and acknowledged. copytruncate
// copies it to a.1.log (matched); a scan meets the copy while it is being
// written (5,000 bytes, past the 4 KiB fingerprint) and holds it. The copy
// is completed and a.log truncated; a.log's source reads on from the copy
// (nothing unread), and decideHeld marks a.1.log done as a copy (isCopy)
// with the size the glob last saw, 5,000. The next scan sees 10,000 — the
// copy did not change since it was decided — and dec2c's revive takes that
// for "changed after it was taken for a copy": a.1.log is read from its
// start, its 1,000 lines delivered a second time without a crash. DESIGN
// §2 (duplicates only after a crash).
func TestGlobCopyDecidedBeforeTheScanSawItWholeIsNotReadAgain(t *testing.T) {
	t.Parallel()
	content := numbered("line", 1000)
	dir, data, a := aLogIn(t, content)
	ig, _ := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, func(c *GlobConfig) {
		c.Stream.NoNotify = true
		c.Stream.RotateWait = 500 * time.Millisecond
		c.ScanInterval = 2 * time.Second
	})
	var first []string
	for end := time.Now().Add(5 * time.Second); len(first) < 1000 && time.Now().Before(end); {
		l, _ := ig.popEpochs(50*time.Millisecond, true)
		first = append(first, l...)
	}
	if len(first) != 1000 {
		t.Fatalf("first: %d lines", len(first))
	}
	var sa *gstream
	ig.waitFor(t, "a.log's stream open, its fingerprint 4 KiB", func() bool {
		sa = ig.g.byPath[a]
		return sa != nil && sa.src != nil && sa.src.ptr != nil && sa.src.ptr.Record().FPLen == 4096
	})
	half := len(content) / 2
	half -= half % len("line-000\n")
	c := filepath.Join(dir, "a.1.log")
	if err := os.WriteFile(c, []byte(content[:half]), 0o600); err != nil {
		t.Fatal(err)
	}
	var sc *gstream
	ig.waitFor(t, "a scan holding the copy being written", func() bool {
		sc = ig.g.byPath[c]
		return sc != nil && sc.copyOf == sa
	})
	appendTo(t, c, content[half:])
	if err := os.Truncate(a, 0); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "a.1.log decided a copy", func() bool { return sc.done && sc.isCopy })
	var got []string
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); {
		l, _ := ig.popEpochs(50*time.Millisecond, true)
		got = append(got, l...)
	}
	t.Logf("a.1.log seen at %d bytes, completed to %d before a.log's truncation; delivered after the copytruncate: %d lines", half, len(content), len(got))
	if len(got) > 0 {
		t.Errorf("a.1.log, a.log's complete copytruncate copy, unchanged since it was taken for the copy, delivered %d lines again without a crash", len(got))
	}
}

// COMMITTED, while running: a.log holds only its header line ("#hdr", an
// idle service's file: its pointer's fingerprint covers those 5 bytes),
// read and acknowledged. logrotate's create mode renames it out of the
// glob (a.log.1) and the service's new a.log gets its header and two lines
// at once. The new a.log's first 5 bytes match a.log's fingerprint: held
// as a possible copy (not heldShort: it is longer than the fingerprint);
// the old file is gone from the glob, so decideHeld marks the new a.log
// done as a copy. n-1 and n-2 are never delivered, nothing is counted, the
// feed is CAUGHT_UP; dec2c's revive would read it only if it changed again.
// DESIGN §10 "Streams" (a new key is a new stream read from its start,
// except a copy — and a file renamed out of the glob is read to its end,
// so nothing of it is owed by a copy), §4 "Nothing green over a loss",
// §2 never a gap.
func TestGlobNewFileAfterHeaderOnlyFileRotatedOutIsRead(t *testing.T) {
	t.Parallel()
	dir, data, a := aLogIn(t, "#hdr\n")
	ig, _ := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, nil)
	if got, _ := ig.popEpochs(time.Second, true); !slices.Equal(got, []string{"#hdr"}) {
		t.Fatalf("first: %q", got)
	}
	var sa *gstream
	ig.waitFor(t, "a.log's fingerprint covering its header", func() bool {
		sa = ig.g.byPath[a]
		return sa != nil && sa.src != nil && sa.src.ptr != nil && sa.src.ptr.Record().FPLen == 5
	})
	if err := os.WriteFile(filepath.Join(dir, "a.new"), []byte("#hdr\nn-1\nn-2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(a, a+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "a.new"), a); err != nil {
		t.Fatal(err)
	}
	var got []string
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
		l, _ := ig.popEpochs(50*time.Millisecond, true)
		got = append(got, l...)
	}
	tails, bytes, _ := ig.lost()
	st := ig.g.State()
	ig.g.mu.Lock()
	var isCopy bool
	if s := ig.g.byPath[a]; s != nil && s != sa {
		isCopy = s.isCopy
	}
	ig.g.mu.Unlock()
	t.Logf("the new a.log taken for a copy: %v; delivered %q; lostTails %d lostBytes %d; state %v", isCopy, got, tails, bytes, st)
	if !slices.Equal(got, []string{"#hdr", "n-1", "n-2"}) && tails == 0 {
		t.Errorf("the new a.log (its old file, header only, rotated out of the glob) delivered %q, want its three lines; nothing counted, state %v", got, st)
	}
}

// COMMITTED, one slot: b.log's first open is slow (it holds the slot).
// a.log appears with three lines (12 bytes): a look sees it, its stream
// is queued for the slot, no pointer made yet. Before its turn a.log is
// truncated with no copy (`: > a.log`) and written again (n-0). seen()
// sees the shrink but counts nothing for a stream with no pointer and no
// resume point (only pointer-less EARLIEST's resume is checked), and its
// first source, starting with a fresh pointer, reads n-0 alone: a-0..a-2,
// seen by the glob at 12 bytes and never read, are lost with lostTails 0
// and the feed lossless. DESIGN §4 "Nothing green over a loss": a live
// truncation with no copy found counts size last seen − read position in
// lostBytes and one lost tail when positive; §10 per stream.
func TestGlobQueuedNeverReadFileTruncatedBeforeItsTurnIsCounted(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	a, b := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
	if err := os.WriteFile(b, []byte("b-0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var slow atomic.Bool
	slow.Store(true)
	ig, _ := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, func(c *GlobConfig) {
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
	if err := os.WriteFile(a, []byte("a-0\na-1\na-2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "a.log seen and queued", func() bool { s := ig.g.byPath[a]; return s != nil && s.st == stQueued && s.size == 12 })
	if err := os.Truncate(a, 0); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "a look seeing a.log truncated", func() bool { s := ig.g.byPath[a]; return s != nil && s.size == 0 })
	appendTo(t, a, "n-0\n")
	var got []string
	for end := time.Now().Add(5 * time.Second); !slices.Contains(got, "n-0") && time.Now().Before(end); {
		l, _ := ig.popEpochs(50*time.Millisecond, true)
		got = append(got, l...)
	}
	more, _ := ig.popEpochs(500*time.Millisecond, true)
	got = append(got, more...)
	tails, bytes, detail := ig.lost()
	t.Logf("delivered %q; lostTails %d lostBytes %d %q", got, tails, bytes, detail)
	if !slices.Contains(got, "a-0") && (tails == 0 || bytes < 12) {
		t.Errorf("a.log's three lines (12 bytes, seen by the glob, never read, truncated with no copy) lost with lostTails %d lostBytes %d; delivered %q", tails, bytes, got)
	}
}

// COMMITTED, while running (rotateWaitMillis 2 s): a.log ("#hdr" then two
// lines) is read and acknowledged. b.log, another writer's new file, holds
// its header line: held back as a possible copy of a.log (its 5 bytes are
// a prefix of a.log's HeadBytes). For the whole hold the glob reports
// CAUGHT_UP — the held file is tracked, stClosed, and its size unchanged
// since the look, so behindLocked says "read to its end" — though none of
// it was read; when the hold ends (a.log untouched) its line is delivered.
// DESIGN §10 "Status": a glob feed is CAUGHT_UP when every tracked file is
// read to its end; §7 (CAUGHT_UP/settled mean nothing is left to read).
func TestGlobFileHeldAsPossibleCopyIsNotCaughtUp(t *testing.T) {
	t.Parallel()
	dir, data, a := aLogIn(t, "#hdr\nold-1\nold-2\n")
	ig, _ := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, func(c *GlobConfig) {
		c.Stream.RotateWait = 2 * time.Second
	})
	if first, _ := ig.popEpochs(time.Second, true); !slices.Equal(first, []string{"#hdr", "old-1", "old-2"}) {
		t.Fatalf("first: %q", first)
	}
	ig.waitFor(t, "a.log's stream open, its head published", func() bool {
		s := ig.g.byPath[a]
		return s != nil && s.src != nil && s.src.headLen() == 17
	})
	b := filepath.Join(dir, "b.log")
	// (Reworked by the lead: only a file at least as long as the
	// fingerprint is held since review 7: b.log starts with a.log's whole
	// content.)
	if err := os.WriteFile(b, []byte("#hdr\nold-1\nold-2\nb-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "b.log held", func() bool { s := ig.g.byPath[b]; return s != nil && s.copyOf != nil })
	time.Sleep(300 * time.Millisecond)
	st := ig.g.State()
	counts := ig.g.Counts()
	var got []string
	for end := time.Now().Add(4 * time.Second); len(got) < 4 && time.Now().Before(end); {
		l, _ := ig.popEpochs(50*time.Millisecond, true)
		got = append(got, l...)
	}
	t.Logf("while b.log is held: state %v, filesBehind %d; after the hold b.log delivered %q", st, counts.Behind, got)
	if st == CaughtUp && len(got) == 4 {
		t.Errorf("the glob reported CAUGHT_UP (filesBehind %d) while b.log, whose line %q was delivered only after its hold, was unread", counts.Behind, got)
	}
}
