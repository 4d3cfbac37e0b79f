package file

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Review of queued-move4 (959db44): pointer-less glob streams resume from
// Resume{Offset, Size, Limit}; seen() counts the bytes a truncation drops
// past the resume point.

// EARLIEST without pointers, closeInactive 1 s: a.log's first turn reads
// a-0 and closes as inactive (resume point 4). Lines appended reopen it; its
// second source reads them all (they are acknowledged) and stays open. a.log
// is then truncated to 0 while that source is open and caught up. The
// source sees the truncation itself (size last seen − read position = 0:
// nothing lost). But the glob kept the first turn's resume point (start
// does not clear s.resume), so its scan's seen() finds f.size 0 < resume
// offset 4 and counts s.size − 4 bytes, which the open source read and
// delivered, as a lost tail. DESIGN §4 "Nothing green over a loss": a live
// truncation counts `size last seen − read position` — 0 here; a line
// delivered is never counted lost (lossless false over no loss is a lie in
// feed.status).
func TestGlobEarliestNoPointerTruncatedWhileReopenedReadIsNoLoss(t *testing.T) {
	t.Parallel()
	dir, data, path := aLogIn(t, "a-0\n")
	ig, _ := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, func(c *GlobConfig) {
		c.Stream.Strategy = Earliest
		c.PointerDir = ""
		c.CloseInactive = time.Second
	})
	first, _ := ig.popEpochs(500*time.Millisecond, true)
	var s *gstream
	ig.waitFor(t, "a.log's first turn closed as inactive", func() bool {
		s = ig.g.byPath[path]
		return s != nil && s.st == stClosed && s.resume != nil
	})
	appendTo(t, path, "a-1\na-2\na-3\n")
	var got []string
	for end := time.Now().Add(3 * time.Second); len(got) < 3 && time.Now().Before(end); {
		l, _ := ig.popEpochs(50*time.Millisecond, true)
		got = append(got, l...)
	}
	ig.waitFor(t, "a.log's second source open, the glob seeing its 16 bytes", func() bool {
		return s.st == stOpen && s.size == 16
	})
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "a scan seeing a.log truncated", func() bool { return s.size == 0 })
	time.Sleep(300 * time.Millisecond) // the source's own look
	tails, bytes, detail := ig.lost()
	ig.g.mu.Lock()
	st := s.st
	ig.g.mu.Unlock()
	t.Logf("first %q, then %q; state %v; lostTails %d lostBytes %d detail %q", first, got, st, tails, bytes, detail)
	if len(got) != 3 {
		t.Fatalf("delivered after the append %q, want a-1..a-3", got)
	}
	if tails != 0 || bytes != 0 {
		t.Errorf("a.log read to its end (a-1..a-3 delivered and acknowledged) then truncated: lostTails %d lostBytes %d (%q), want 0 0", tails, bytes, detail)
	}
}

// EARLIEST without pointers: a.log's three lines are read and
// acknowledged. logrotate copytruncate copies it to a.1.log (matched by the
// glob) and truncates it; the writer goes on at once: a-new is appended to
// a.log. a.1.log's first bytes match a.log's source's head: it is held back
// rotateWaitMillis. Meanwhile a.log's source saw the truncation, read its
// copy from offset 12 (nothing) and a.log from its start under a new epoch:
// its ReadPos is now a-new's end (6), a position in the new content. At the
// hold's end decideHeld compares a.log's size (6) with that ReadPos (6):
// "not truncated", so a.1.log is a new stream read from its start — c-0..c-2
// delivered a second time, no crash. (That ReadPos belongs to another epoch
// than the one the copy's offset is in.) DESIGN §10 Streams: a new key
// whose first bytes match a tracked file's fingerprint is held back; if the
// tracked file is truncated meanwhile it is its copy, not read again; §2
// each line once when nothing crashed.
func TestGlobEarliestNoPointerCopytruncateThenAppendCopyNotReadAgain(t *testing.T) {
	t.Parallel()
	content := "c-0\nc-1\nc-2\n"
	dir, data, a := aLogIn(t, content)
	ig, _ := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, func(c *GlobConfig) {
		c.Stream.Strategy = Earliest
		c.PointerDir = ""
	})
	first, _ := ig.popEpochs(time.Second, true)
	if err := os.WriteFile(filepath.Join(dir, "a.1.log"), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(a, 0); err != nil {
		t.Fatal(err)
	}
	appendTo(t, a, "a-new-0\na-new-1\na-new-2\n")
	got, _ := ig.popEpochs(2*time.Second, true)
	tails, bytes, _ := ig.lost()
	t.Logf("first %q; after the copytruncate and append %q; lostTails %d lostBytes %d", first, got, tails, bytes)
	if len(first) != 3 {
		t.Fatalf("first delivered %q", first)
	}
	if !slices.Equal(got, []string{"a-new-0", "a-new-1", "a-new-2"}) {
		t.Errorf("a.log copytruncated to a.1.log (matched) after its lines were delivered, then 3 lines appended: delivered %q; want [a-new-0 a-new-1 a-new-2] (the copy holds no unread line)", got)
	}
}

// EARLIEST without pointers, one slot: a.log holds a-0 and a partial last
// line "part" (no newline). Its first turn delivers a-0 and closes as
// inactive: resume point 4, Resume.Size 8 (the partial line's end). The
// writer then ends the line ("ial\n": a.log is 12 bytes, "partial" now a
// line) while b.log's stream holds the slot; the glob sees the 12 bytes
// and queues a.log's stream. a.log is deleted before its turn. leftUnread
// counts from max(Offset, Size) = 8 to 12: 4 bytes — but the line lost is
// "partial\n", bytes 4..12, 8 bytes. Size treats the once-partial line as
// never a loss even after its writer ended it. DESIGN §4 Nothing green over
// a loss: `lostBytes` counts the bytes known to be gone; an unterminated
// line is not a loss only while it is unterminated.
func TestGlobEarliestNoPointerPartialLineEndedThenDeletedCountsWholeLine(t *testing.T) {
	t.Parallel()
	ig, slow, a, b, sa, sb, first := twoClosedEarliest(t, "a-0\npart", "b-0\n")
	if r := sa.resume; r.Offset != 4 || r.Size != 8 {
		t.Fatalf("a.log's resume point %+v, want offset 4 size 8", *r)
	}
	slow.Store(true)
	appendTo(t, b, "b-1\n") // b.log's stream opens again, slowly: it holds the slot
	ig.waitFor(t, "b.log's stream opening", func() bool { return sb.st == stOpen })
	appendTo(t, a, "ial\n")
	ig.waitFor(t, "a look seeing a.log's 12 bytes, its stream queued", func() bool { return sa.size == 12 && sa.st == stQueued })
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	got, _ := ig.popEpochs(4*time.Second, true)
	tails, bytes, detail := ig.lost()
	t.Logf("first %q; then %q; lostTails %d lostBytes %d detail %q", first, got, tails, bytes, detail)
	if slices.Contains(got, "partial") {
		t.Fatalf("partial delivered: the deletion came after its turn")
	}
	if tails != 1 || bytes != 8 {
		t.Errorf("a.log's line \"partial\" (bytes 4..12, ended by its writer) deleted unread: lostTails %d lostBytes %d; want 1 lost tail of 8 bytes", tails, bytes)
	}
}

// COMMITTED glob: a.log's two lines are read and not acknowledged; its
// stream closes as inactive, its drain cut short, before its first commit
// (its pointer names no file), owing a commit. l-2 is appended (the glob
// sees a.log at 12 bytes; the stream is queued behind its owed commit),
// then a.log is moved out of the glob to another directory. The scan finds
// it gone; the acknowledgements come and the owed commit binds no file
// (findBeside finds nothing beside the path). The stream is started, its
// source finds nothing by its pointer (key 0): NotFound. closed()'s new
// branch (its pointer names no file) looks beside the path, finds nothing,
// and calls loseTailLocked — which counts only a tail noted at a source's
// Close (none: a.log was 8 bytes then). l-2, the 4 bytes the glob saw past
// the stream's read position, is lost with the feed lossless. DESIGN §10
// Forgetting: a file that disappears with an unread tail counts in
// lostTails as in §4; §4 Nothing green over a loss.
func TestGlobTouchedStreamMovedAwayWithUnboundPointerCountsSeenTail(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	away := t.TempDir()
	a := filepath.Join(dir, "a.log")
	if err := os.WriteFile(a, []byte("l-0\nl-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ig, _ := runGlobWith(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, func(c *GlobConfig) {
		c.CloseInactive = 100 * time.Millisecond
	}, func(g *Glob) { g.drainBound = 100 * time.Millisecond })
	first, _ := ig.popEpochs(500*time.Millisecond, false) // not acknowledged yet
	var s *gstream
	ig.waitFor(t, "a.log's stream closed owing a commit, its pointer naming no file", func() bool {
		s = ig.g.byPath[a]
		return s != nil && s.st == stClosed && s.owe != nil && !ig.g.pointerNames(s)
	})
	appendTo(t, a, "l-2\n")
	ig.waitFor(t, "a.log's stream queued behind its owed commit, 12 bytes seen", func() bool { return s.st == stQueued && s.size == 12 })
	if err := os.Rename(a, filepath.Join(away, "a.log")); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "a scan seeing a.log gone", func() bool { return s.gone })
	ig.q.AddDispatched(uint64(len(first)))
	ig.pub.Poke()
	got, _ := ig.popEpochs(2*time.Second, true)
	tails, bytes, detail := ig.lost()
	ig.g.mu.Lock()
	st, owes, queued := s.st, s.owe != nil, slices.Contains(ig.g.queue, s)
	ig.g.mu.Unlock()
	t.Logf("first %q; then %q; stream state %d owes %v queued %v; lostTails %d lostBytes %d detail %q", first, got, st, owes, queued, tails, bytes, detail)
	if len(first) != 2 {
		t.Fatalf("first delivered %q", first)
	}
	if !slices.Contains(got, "l-2") && (tails != 1 || bytes != 4) {
		t.Errorf("a.log moved out of the glob with l-2 (bytes 8..12, seen by the glob) unread: delivered %q, lostTails %d lostBytes %d; want l-2 counted lost (1 tail, 4 bytes)", got, tails, bytes)
	}
}

// LATEST, one slot, no pointers: a.log and b.log present at start, b.log
// holding 19 bytes of old lines (its end at the start: 19, EndHead its
// fingerprint). a.log's open is slow; while b.log's stream waits for its
// first turn, b.log is rewritten in place with 19 bytes of new lines (an
// application recreating its log with O_TRUNC, same size). The glob's look
// sees no shrink (19 → 19) and keeps EndAt 19; the source checks EndHead
// only when EndAt < size, so b.log's first turn starts at 19: the new
// lines, all written after the start, are delivered and counted by nobody.
// DESIGN §4 Same-size rewrites: a file rewritten to exactly its old size
// is a replacement unless its first bytes are the old ones; §10 LATEST
// reads files present at start from their end at the start (what is
// written after the start is delivered).
func TestGlobLatestQueuedRewrittenSameSizeReadsNewContent(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	bp := filepath.Join(dir, "b.log")
	if err := os.WriteFile(filepath.Join(dir, "a.log"), []byte("a-old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bp, []byte("old-0-xx\nold-1-xxx\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ig, _ := runOneSlotNoPointers(t, dir, data, Latest, 0, 1500*time.Millisecond, true)
	var b *gstream
	ig.waitFor(t, "b.log's stream queued", func() bool {
		b = ig.g.byPath[bp]
		return b != nil && b.st == stQueued && b.fromEnd && b.endAt == 19
	})
	if err := os.WriteFile(bp, []byte("new-0-xx\nnew-1-xxx\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, _ := ig.popEpochs(4*time.Second, true)
	tails, bytes, _ := ig.lost()
	t.Logf("delivered: %q; lostTails %d lostBytes %d", got, tails, bytes)
	for _, l := range []string{"new-0-xx", "new-1-xxx"} {
		if !slices.Contains(got, l) && tails == 0 {
			t.Errorf("b.log rewritten in place to its size (other first bytes) after the start while its stream waited for its first turn (LATEST): %q neither delivered nor counted; delivered %q", l, got)
		}
	}
}

// ONCE_EARLIEST, one slot, no pointers: a.log and b.log matched at start
// (b.log: "b-0\n", 4 bytes). a.log's open is slow (it holds the slot);
// b-late is appended to b.log after the start, before b.log's first turn.
// b.log's source takes its limit from its size at its first open (8), and
// Resume.Limit (this diff) carries that on: b-late, written after the
// start, is delivered. leftUnread meanwhile caps at startSize (4): the two
// disagree on what was due. DESIGN §10: ONCE_EARLIEST reads every file
// matched at start to its size when first matched (stat at start).
func TestGlobOnceEarliestQueuedGrownBeforeFirstTurnStopsAtSizeAtStart(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	a, b := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
	if err := os.WriteFile(a, []byte("a-0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte("b-0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ig, _ := runOneSlotNoPointers(t, dir, data, OnceEarliest, 0, 1500*time.Millisecond, true)
	var sb *gstream
	ig.waitFor(t, "b.log's stream queued", func() bool {
		sb = ig.g.byPath[b]
		return sb != nil && sb.st == stQueued
	})
	appendTo(t, b, "b-late\n") // after the start, before b.log's first turn
	got, _ := ig.popEpochs(4*time.Second, true)
	t.Logf("delivered %q", got)
	slices.Sort(got)
	if want := []string{"a-0", "b-0"}; !slices.Equal(got, want) {
		t.Errorf("ONCE_EARLIEST, b.log grown after the start while queued for its first turn: delivered %q, want %q (each file to its size at start)", got, want)
	}
}

// EARLIEST without pointers, one slot, closeInactive 100 ms: a.log and
// b.log are read and closed. a-1 is appended to a.log and delivered, not
// acknowledged; a.log's stream closes as inactive and stops (its drain
// waits for a-1's acknowledgement). Meanwhile a-2 is appended to a.log
// (never read: its source no longer reads) and b-1 to b.log (b.log's
// stream queued). a-1 is acknowledged: a.log's source closes (noteTail:
// bytes 8..12 unread; noteHead: Resume{Offset 8, Size 12} — Size, an fstat
// at release, includes a-2) and b.log's stream takes the slot, its open
// slow. a.log is truncated before its turn: seen() counts s.size −
// max(Offset, Size) = 12 − 12 = 0 and drops the resume point; the next
// turn reads a.log from 0 (nothing) and clears the noted tail. a-2 is lost
// and counted by nobody. DESIGN §4 Nothing green over a loss (a live
// truncation counts size last seen − read position: 12 − 8); §10 a file
// that loses its unread tail counts in lostTails.
func TestGlobEarliestNoPointerTailWrittenWhileStoppingThenTruncatedIsCounted(t *testing.T) {
	t.Parallel()
	ig, slow, a, b, sa, sb, first := twoClosedEarliest(t, "a-0\n", "b-0\n")
	appendTo(t, a, "a-1\n")
	var taken []string
	for end := time.Now().Add(3 * time.Second); len(taken) == 0 && time.Now().Before(end); {
		taken, _ = ig.popEpochs(20*time.Millisecond, false) // not acknowledged
	}
	ig.waitFor(t, "a.log's stream stopping", func() bool { return sa.st == stStopping })
	appendTo(t, a, "a-2\n")
	appendTo(t, b, "b-1\n")
	ig.waitFor(t, "the glob seeing a-2 and b-1", func() bool { return sa.size == 12 && sb.size == 8 })
	slow.Store(true)
	ig.q.AddDispatched(uint64(len(taken)))
	ig.pub.Poke()
	var r Resume
	var tailEnd, tailSize int64
	ig.waitFor(t, "b.log's stream opening, a.log's queued", func() bool {
		if sa.resume != nil {
			r = *sa.resume
		}
		tailEnd, tailSize = sa.tailEnd, sa.tailSize // under the glob's mutex
		return sb.st == stOpen && sa.st == stQueued
	})
	t.Logf("a.log's resume point %+v, noted tail %d..%d", r, tailEnd, tailSize)
	if err := os.Truncate(a, 0); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "a scan seeing a.log truncated", func() bool { return sa.size == 0 })
	got, _ := ig.popEpochs(4*time.Second, true)
	tails, bytes, detail := ig.lost()
	t.Logf("first %q; taken %q; then %q; lostTails %d lostBytes %d detail %q", first, taken, got, tails, bytes, detail)
	if slices.Contains(got, "a-2") {
		t.Fatalf("a-2 delivered: read before the truncation")
	}
	if tails != 1 || bytes != 4 {
		t.Errorf("a-2 (a.log bytes 8..12, written while its stream stopped, never read) cut by a truncation the glob saw: lostTails %d lostBytes %d; want 1 lost tail, 4 bytes", tails, bytes)
	}
}

// EARLIEST without pointers, one slot: a.log's first turn delivers a-0 and
// closes as inactive (resume point 4, head of "a-0\n"). a-1 is appended
// while b.log's stream holds the slot (a.log queued). copytruncate then
// copies a.log to a.0.log (matched, sorted before a.log) and truncates it.
// The scan admits a.0.log: its first bytes match a.log's resume head — a
// possible copy, held. seen(a.log) finds the shrink, counts a-1 lost and
// drops the resume point; at the hold's end a.0.log is a.log's copy
// (a.log truncated) and is marked done, "its tail read by that file's
// stream" — but a.log's next source starts with no resume point and opens
// the truncated a.log from 0: nobody reads the copy. a-1, whole in
// a.0.log, is never delivered. DESIGN §10 Streams: the truncated file's
// copy is read from the old offset under the old stream; §2 never lose a
// line.
func TestGlobEarliestNoPointerClosedCopytruncatedCopyTailIsRead(t *testing.T) {
	t.Parallel()
	ig, slow, a, b, sa, sb, first := twoClosedEarliest(t, "a-0\n", "b-0\n")
	slow.Store(true)
	appendTo(t, b, "b-1\n") // b.log's stream opens again, slowly: it holds the slot
	ig.waitFor(t, "b.log's stream opening", func() bool { return sb.st == stOpen })
	appendTo(t, a, "a-1\n")
	ig.waitFor(t, "a look seeing a-1, a.log's stream queued", func() bool { return sa.size == 8 && sa.st == stQueued })
	if err := os.WriteFile(filepath.Join(filepath.Dir(a), "a.0.log"), []byte("a-0\na-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(a, 0); err != nil {
		t.Fatal(err)
	}
	got, _ := ig.popEpochs(4*time.Second, true)
	tails, bytes, detail := ig.lost()
	ig.g.mu.Lock()
	c := ig.g.byPath[filepath.Join(filepath.Dir(a), "a.0.log")]
	copyDone := c != nil && c.done
	ig.g.mu.Unlock()
	t.Logf("first %q; then %q; a.0.log marked a copy (done) %v; lostTails %d lostBytes %d detail %q", first, got, copyDone, tails, bytes, detail)
	n := 0
	for _, l := range got {
		if l == "a-1" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("a.log copytruncated to a.0.log with a-1 unread: a-1 delivered %d times (delivered %q, lostTails %d); want once, read from the copy", n, got, tails)
	}
}

// EARLIEST without pointers, one slot: a.log's first turn delivers a-0 and
// closes as inactive (resume point 4). a-1 is appended while b.log's
// stream holds the slot; the glob sees a.log at 8 bytes and queues it.
// Before a.log's turn it is overwritten in place from byte 0 (one write)
// with 20 bytes of new lines, the glob's look seeing no shrink (8 → 20).
// a.log's source finds other first bytes than the resume head and reads
// it from its start: the new lines are delivered, but a-1 (bytes 4..8,
// seen by the glob, never read) is lost and counted by nobody — seen()
// counts only a shrink below the resume point, and the source, without a
// pointer, does not know what the glob saw. DESIGN §4 Nothing green over
// a loss: a replacement counts the bytes seen past the read position;
// §4 Same-size rewrites / replacement.
func TestGlobEarliestNoPointerRewrittenLargerBeforeTurnCountsUnreadBytes(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	a, b := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
	if err := os.WriteFile(a, []byte("a-0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte("b-0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ig, slow := runOneSlotNoPointers(t, dir, data, Earliest, 100*time.Millisecond, 2500*time.Millisecond, false)
	first, _ := ig.popEpochs(time.Second, true)
	var sa, sb *gstream
	ig.waitFor(t, "both streams closed", func() bool {
		sa, sb = ig.g.byPath[a], ig.g.byPath[b]
		return sa != nil && sb != nil && sa.st == stClosed && sb.st == stClosed && sa.resume != nil
	})
	slow.Store(true)
	appendTo(t, b, "b-1\n") // b.log's stream opens again, slowly: it holds the slot
	ig.waitFor(t, "b.log's stream opening", func() bool { return sb.st == stOpen })
	appendTo(t, a, "a-1\n")
	ig.waitFor(t, "a look seeing a-1, a.log's stream queued", func() bool { return sa.size == 8 && sa.st == stQueued })
	// Overwritten from byte 0 in one write (no shrink for any look to see).
	f, err := os.OpenFile(a, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("new-0-xxx\nnew-1-xxx\n"), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	got, _ := ig.popEpochs(4*time.Second, true)
	tails, bytes, detail := ig.lost()
	t.Logf("first %q; then %q; lostTails %d lostBytes %d detail %q", first, got, tails, bytes, detail)
	if !slices.Contains(got, "a-1") && (tails == 0 || bytes < 4) {
		t.Errorf("a-1 (a.log bytes 4..8, seen by the glob, never read) cut by an in-place rewrite: delivered %q, lostTails %d lostBytes %d; want it counted (1 lost tail, 4 bytes)", got, tails, bytes)
	}
}

// EARLIEST without pointers: a.log's three lines (12 bytes) are read and
// acknowledged. copytruncate copies it to a.1.log (matched) — a snapshot of
// those 12 bytes — while the writer appends c-3, which a.log's source reads
// (its fingerprint grows to 16 bytes: Head() now covers 16), then a.log is
// truncated. The glob's look at a.1.log compares its first bytes with
// Head(): 16 bytes wanted, 12 there, so it is not a candidate and is read as
// a new stream from its start — c-0..c-2 delivered a second time, no crash.
// (A copy is at most as long as what was read when it was made; the
// fingerprint's length at the glob's look is not that.) DESIGN §10
// Streams: a new key whose first bytes match a tracked file's fingerprint
// is held back and, the original truncated meanwhile, is its copy, not
// read again; §2 each line once when nothing crashed.
func TestGlobEarliestNoPointerCopyShorterThanGrownHeadReadAgainNotLost(t *testing.T) {
	t.Parallel()
	content := "c-0\nc-1\nc-2\n"
	dir, data, a := aLogIn(t, content)
	ig, _ := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, func(c *GlobConfig) {
		c.Stream.Strategy = Earliest
		c.PointerDir = ""
	})
	first, _ := ig.popEpochs(time.Second, true)
	appendTo(t, a, "c-3\n")
	var more []string
	for end := time.Now().Add(3 * time.Second); len(more) == 0 && time.Now().Before(end); {
		more, _ = ig.popEpochs(20*time.Millisecond, true)
	}
	var n uint64
	ig.waitFor(t, "a.log's source's head covering 16 bytes", func() bool {
		s := ig.g.byPath[a]
		if s != nil && s.src != nil {
			n, _ = s.src.Head()
		}
		return n == 16
	})
	if err := os.WriteFile(filepath.Join(dir, "a.1.log"), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(a, 0); err != nil {
		t.Fatal(err)
	}
	got, _ := ig.popEpochs(2*time.Second, true)
	tails, bytes, _ := ig.lost()
	t.Logf("first %q, then %q; after the copytruncate %q; lostTails %d lostBytes %d", first, more, got, tails, bytes)
	if len(first) != 3 || !slices.Equal(more, []string{"c-3"}) {
		t.Fatalf("before the copytruncate: %q then %q", first, more)
	}
	// Decided (README "Identity"): a file shorter than the original's
	// fingerprint is never taken for its copy — a few first bytes are no
	// proof (a header-only new file taken for a copy was lost, review 6):
	// it is read as a file of its own, its lines once more, nothing lost.
	if !slices.Equal(got, []string{"c-0", "c-1", "c-2"}) || tails != 0 || bytes != 0 {
		t.Errorf("a.log copytruncated to a.1.log (a 12-byte snapshot): delivered %q, lostTails %d lostBytes %d; want a.1.log read once whole, nothing lost", got, tails, bytes)
	}
}

// EARLIEST without pointers, one slot: a.log's first turn delivers a-0 and
// closes (resume point 4). a-1 is appended: the glob sees 8 bytes and
// starts a.log's stream, whose open is slow. While it opens, a.log is
// overwritten in place (one write, no shrink). No look checks a stream
// that is open, so the glob counts nothing: the source, finding other first
// bytes than its resume point's, reads the file from its start — and a-1,
// seen by the glob and never read, must be counted by it.
func TestGlobEarliestNoPointerRewrittenWhileItsStreamOpensCountsUnreadBytes(t *testing.T) {
	t.Parallel()
	ig, slow, a, _, sa, _, first := twoClosedEarliest(t, "a-0\n", "b-0\n")
	slow.Store(true)
	appendTo(t, a, "a-1\n")
	ig.waitFor(t, "a.log's stream opening", func() bool { return sa.size == 8 && sa.st == stOpen })
	f, err := os.OpenFile(a, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("new-0-xxx\nnew-1-xxx\n"), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	got, _ := ig.popEpochs(4*time.Second, true)
	tails, bytes, detail := ig.lost()
	t.Logf("first %q; then %q; lostTails %d lostBytes %d detail %q", first, got, tails, bytes, detail)
	if !slices.Equal(got, []string{"new-0-xxx", "new-1-xxx"}) {
		t.Errorf("after the rewrite: delivered %q, want the new file's two lines", got)
	}
	if tails != 1 || bytes != 4 {
		t.Errorf("a-1 (bytes 4..8, seen by the glob, never read) cut by an in-place rewrite during the open: lostTails %d lostBytes %d; want 1 and 4", tails, bytes)
	}
}

// copytruncateAfterReadOn writes content to a.log, runs a glob feed over it
// (cfg adjusts it), takes content's lines, appends more (taken too), then
// copies content alone to a.1.log (matched) — a snapshot taken before the
// source read on — and truncates a.log. It returns what was delivered after
// the copytruncate and the glob's losses.
func copytruncateAfterReadOn(t *testing.T, content, more string, cfg func(*GlobConfig)) (got []string, tails, bytes uint64) {
	t.Helper()
	dir, data, a := aLogIn(t, content)
	ig, _ := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, cfg)
	want := strings.Count(content, "\n")
	var first []string
	for end := time.Now().Add(3 * time.Second); len(first) < want && time.Now().Before(end); {
		got, _ := ig.popEpochs(50*time.Millisecond, true)
		first = append(first, got...)
	}
	appendTo(t, a, more)
	var after []string
	for end := time.Now().Add(3 * time.Second); len(after) < strings.Count(more, "\n") && time.Now().Before(end); {
		got, _ := ig.popEpochs(50*time.Millisecond, true)
		after = append(after, got...)
	}
	if len(first) != want || len(after) != strings.Count(more, "\n") {
		t.Fatalf("before the copytruncate: %d then %d lines", len(first), len(after))
	}
	time.Sleep(100 * time.Millisecond) // the source's look at the grown file
	if err := os.WriteFile(filepath.Join(dir, "a.1.log"), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(a, 0); err != nil {
		t.Fatal(err)
	}
	got, _ = ig.popEpochs(2*time.Second, true)
	tails, bytes, _ = ig.lost()
	return got, tails, bytes
}

// The same with a pointer (COMMITTED): a copy shorter than the file's
// grown head (its fingerprint) is read as a file of its own — duplicates,
// never a loss.
func TestGlobCommittedCopyShorterThanGrownHeadReadAgainNotLost(t *testing.T) {
	t.Parallel()
	got, tails, bytes := copytruncateAfterReadOn(t, "c-0\nc-1\nc-2\n", "c-3\n", nil)
	if !slices.Equal(got, []string{"c-0", "c-1", "c-2"}) || tails != 0 || bytes != 0 {
		t.Errorf("a 12-byte copy of a.log (16 bytes read and acknowledged) after a copytruncate: delivered %q, lostTails %d lostBytes %d; want it read once whole (shorter than the fingerprint: no proof it is a copy), nothing lost", got, tails, bytes)
	}
}

// A copy longer than the fingerprint (4 KiB) but shorter than what the
// source had consumed (it read on after the copy was taken) holds nothing
// unread: not read again, with or without a pointer.
func TestGlobCopyShorterThanConsumedNotReadAgain(t *testing.T) {
	t.Parallel()
	content, _ := pastFingerprint()
	for _, withPtr := range []bool{true, false} {
		t.Run(fmt.Sprintf("pointer=%v", withPtr), func(t *testing.T) {
			got, tails, bytes := copytruncateAfterReadOn(t, content, "more-0\nmore-1\n", func(c *GlobConfig) {
				if !withPtr {
					c.Stream.Strategy = Earliest
					c.PointerDir = ""
				}
			})
			if len(got) != 0 || tails != 0 || bytes != 0 {
				t.Errorf("a %d-byte copy of a.log (all read and acknowledged, and more) after a copytruncate: delivered again %d lines, lostTails %d lostBytes %d; want nothing and no loss",
					len(content), len(got), tails, bytes)
			}
		})
	}
}
