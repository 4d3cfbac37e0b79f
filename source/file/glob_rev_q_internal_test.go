package file

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tailfeed/pointer"
)

// Review of dec2e (tookIt, markCopy, copyNearby, behindLocked, decideHeld).

// COMMITTED, while running, one slot: a.log and b.log (five lines, 20
// bytes each). a.log's lines are delivered, not acknowledged: its stream
// holds the slot and b.log waits queued, never read. b.log is then cut to
// 0 — no copy is made anywhere (the application restarted and truncated
// its log; logrotate's copytruncate failed after the cut; an operator's
// `: > b.log`). Its 20 bytes, b-0..b-4, are never delivered. dec2e's
// copyNearby takes any regular file in the directory modified within
// scanInterval+rotateWait+2 s and at least as large as b.log's seen bytes
// for "the copy a copytruncate left": here a.log itself (20 bytes, written
// at the start) and access.txt, a log of another application outside the
// glob written meanwhile. So the cut counts nothing: lostTails 0,
// lostBytes 0, and the feed settles lossless over five lost lines. In a
// real log directory another log is almost always written that recently
// and is larger than one file's unread bytes. DESIGN §4 "Rotation,
// truncation, replacement" counts a truncation "with no copy found" (a
// copy is found by its content — the fingerprint — not by its size and
// mtime), §4 "Nothing green over a loss", §2.
func TestGlobNeverReadFileCutWithNoCopyIsCountedDespiteBusyNeighbour(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	var bLines []string
	for _, n := range []string{"a", "b"} {
		var sb strings.Builder
		for i := range 5 {
			fmt.Fprintf(&sb, "%s-%d\n", n, i)
			if n == "b" {
				bLines = append(bLines, fmt.Sprintf("%s-%d", n, i))
			}
		}
		if err := os.WriteFile(filepath.Join(dir, n+".log"), []byte(sb.String()), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ig, _ := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, func(c *GlobConfig) { c.MaxOpenFiles = 3 })
	if ig.g.maxSlots != 1 {
		t.Fatalf("maxSlots %d, want 1", ig.g.maxSlots)
	}
	n := ig.take(t) // a.log's lines, not acknowledged: its stream holds the slot
	bp := filepath.Join(dir, "b.log")
	var b *gstream
	ig.waitFor(t, "b.log's stream queued, never read", func() bool {
		b = ig.g.byPath[bp]
		return b != nil && b.st == stQueued && b.ptrPath == "" && !b.touched
	})
	// Another application's log beside it, outside the glob, being written.
	if err := os.WriteFile(filepath.Join(dir, "access.txt"), []byte(strings.Repeat("GET / 200\n", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	// b.log cut; no copy of it anywhere.
	if err := os.Truncate(bp, 0); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "a look seeing b.log cut", func() bool { return b.size == 0 })
	ig.q.AddDispatched(n)
	ig.pub.Poke()
	got, _ := ig.popEpochs(2*time.Second, true)
	seen := map[string]int{}
	for _, l := range got {
		seen[l]++
	}
	tails, bytes, detail := ig.lost()
	st := ig.g.State()
	t.Logf("delivered after the cut %q; state %v lostTails %d lostBytes %d detail %q", got, st, tails, bytes, detail)
	missing := 0
	for _, l := range bLines {
		if seen[l] == 0 {
			missing++
		}
	}
	if missing == 0 {
		t.Fatalf("b.log's lines delivered after all: the premise does not hold")
	}
	if tails == 0 || bytes < 20 {
		t.Errorf("b.log cut before its first turn, no copy anywhere: %d of its lines never delivered, yet lostTails %d lostBytes %d (state %v)", missing, tails, bytes, st)
	}
}

// COMMITTED, while running, one slot, glob "*.log": a.log's five lines are
// delivered, not acknowledged (its stream holds the slot); b.log (five
// lines, 20 bytes) waits queued, never read. logrotate copytruncate with
// its default names: b.log copied to b.log.1 — outside the glob — and cut
// to 0. dec2e's copyNearby finds b.log.1 (recent, 20 bytes) and takes it
// for "the copy … read as a file of its own": nothing is counted. But
// b.log.1 is matched by nothing: the glob does not read it, and b.log's
// stream, never opened, has no fingerprint by which its source would look
// for a copy. b-0..b-4 are never delivered; lostTails 0, lostBytes 0, the
// feed CAUGHT_UP. (Before dec2e the cut was counted: 1 tail, 20 bytes.)
// DESIGN §4 "Rotation, truncation, replacement" / "Nothing green over a
// loss" (a truncation with no copy read counts size last seen − read
// position), §10 (a copy is read from the old offset), §2.
func TestGlobNeverReadFileCopytruncatedOutOfGlobIsReadOrCounted(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	for _, n := range []string{"a", "b"} {
		if err := os.WriteFile(filepath.Join(dir, n+".log"), []byte(numbered(n, 5)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ig, _ := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, func(c *GlobConfig) { c.MaxOpenFiles = 3 })
	if ig.g.maxSlots != 1 {
		t.Fatalf("maxSlots %d, want 1", ig.g.maxSlots)
	}
	n := ig.take(t)
	bp := filepath.Join(dir, "b.log")
	var b *gstream
	ig.waitFor(t, "b.log's stream queued, never read", func() bool {
		b = ig.g.byPath[bp]
		return b != nil && b.st == stQueued && b.ptrPath == "" && !b.touched
	})
	old, err := os.ReadFile(bp)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bp+".1", old, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(bp, 0); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "a look seeing b.log cut", func() bool { return b.size == 0 })
	ig.q.AddDispatched(n)
	ig.pub.Poke()
	got, _ := ig.popEpochs(3*time.Second, true)
	seen := map[string]int{}
	for _, l := range got {
		seen[l]++
	}
	tails, bytes, detail := ig.lost()
	st := ig.g.State()
	t.Logf("delivered after the copytruncate %q; state %v lostTails %d lostBytes %d detail %q", got, st, tails, bytes, detail)
	missing := 0
	for _, l := range strings.Fields(string(old)) {
		if seen[l] == 0 {
			missing++
		}
	}
	if missing > 0 && (tails == 0 || bytes < uint64(len(old))) {
		t.Errorf("b.log copytruncated to b.log.1 (outside the glob) before its first turn: %d of its 5 lines never delivered, lostTails %d lostBytes %d (state %v)", missing, tails, bytes, st)
	}
}

// The same as TestGlobNeverReadFileCopytruncatedIntoGlobIsNotALoss (dec2d
// review), with the copy keeping the original's times, as `cp -p`,
// `rsync -t` or a backup tool's copy does: b.log (written an hour ago,
// never read, queued behind a.log) is copied into the glob as b-1.log with
// its mtime, then cut. b-1.log is read whole as a new file — every line of
// b.log delivered — yet dec2e's copyNearby, which recognises a copy by its
// mtime being within scanInterval+rotateWait+2 s of now, finds none, and
// the cut counts lostTails 1, lostBytes 20: a loss that did not happen,
// and lossless false for good. DESIGN §4 "Nothing green over a loss"
// counts a truncation "with no copy found"; the copy is found by content
// (§3 fingerprint), not by its times ("its times alone changing is no
// change"); a false loss is a status lie (§2). (Also on dec2e's parent,
// which counted every such cut: copyNearby fixes only copies with a new
// mtime.)
func TestGlobNeverReadFileCopiedWithItsTimesIntoGlobIsNotALoss(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	hourAgo := time.Now().Add(-time.Hour)
	for _, n := range []string{"a", "b"} {
		p := filepath.Join(dir, n+".log")
		if err := os.WriteFile(p, []byte(numbered(n, 5)), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, hourAgo, hourAgo); err != nil {
			t.Fatal(err)
		}
	}
	ig, _ := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, func(c *GlobConfig) { c.MaxOpenFiles = 3 })
	if ig.g.maxSlots != 1 {
		t.Fatalf("maxSlots %d, want 1", ig.g.maxSlots)
	}
	n := ig.take(t)
	bp := filepath.Join(dir, "b.log")
	var b *gstream
	ig.waitFor(t, "b.log's stream queued, never read", func() bool {
		b = ig.g.byPath[bp]
		return b != nil && b.st == stQueued && b.ptrPath == "" && !b.touched
	})
	old, err := os.ReadFile(bp)
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(dir, "b-1.log")
	if err := os.WriteFile(cp, old, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(cp, hourAgo, hourAgo); err != nil { // cp -p
		t.Fatal(err)
	}
	if err := os.Truncate(bp, 0); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "a look seeing b.log cut", func() bool { return b.size == 0 })
	ig.q.AddDispatched(n)
	ig.pub.Poke()
	got, _ := ig.popEpochs(3*time.Second, true)
	seen := map[string]int{}
	for _, l := range got {
		seen[l]++
	}
	tails, bytes, detail := ig.lost()
	t.Logf("delivered after the copytruncate %q; lostTails %d lostBytes %d detail %q", got, tails, bytes, detail)
	for _, l := range strings.Fields(string(old)) {
		if seen[l] == 0 {
			t.Fatalf("%q not delivered (b-1.log not read): the premise does not hold", l)
		}
	}
	if tails != 0 || bytes != 0 {
		t.Errorf("every line of b.log delivered (from its copy b-1.log, which kept b.log's times), yet lostTails %d lostBytes %d counted", tails, bytes)
	}
}

// COMMITTED, while running, closeInactiveMillis 300, rotateWaitMillis 200:
// a.log's first five lines are delivered and acknowledged (committed: its
// pointer holds a fingerprint); five more are appended and delivered, not
// yet acknowledged (a slow subscriber). a.log's stream is closed as
// inactive: its source stopped, draining (stStopping, src still set)
// while the five lines wait for their acknowledgements. logrotate
// copytruncate into the glob: a.log copied whole to a-1.log (ten lines),
// a.log cut to 0. a-1.log matches a.log's fingerprint and is held; a.log
// is truncated within the hold, so by DESIGN §10 "Streams" a-1.log is its
// copy, read from the old offset. dec2e's decideHeld: the original's
// stream "is open" (c.src != nil) so a-1.log is a copy only if that stream
// took it — but a stopping source reads nothing and never looks, and the
// "original truncated" branch now requires c.src == nil: a-1.log is read
// from its start as a new stream, and its ten lines, all already
// delivered by a.log's stream, are delivered again without a crash. (On
// dec2e's parent: each line once.) §2 (no duplicate without a crash),
// §10 (truncated within the hold: the copy).
func TestGlobHeldCopyOfStoppingOriginalIsNotReadAgain(t *testing.T) {
	t.Parallel()
	dir, data, a := aLogIn(t, numbered("a", 5))
	ig, _ := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, func(c *GlobConfig) { c.CloseInactive = 300 * time.Millisecond })
	seen := map[string]int{}
	first, _ := ig.popEpochs(time.Second, true)
	for _, l := range first {
		seen[l]++
	}
	if len(first) != 5 {
		t.Fatalf("first turn delivered %d lines, want 5", len(first))
	}
	var sa *gstream
	ig.waitFor(t, "a.log's first lines committed", func() bool {
		sa = ig.g.byPath[a]
		if sa == nil || sa.ptrPath == "" {
			return false
		}
		rec, err := pointer.Inspect(sa.ptrPath)
		return err == nil && rec.FPLen > 0 && rec.Offset == 20
	})
	appendTo(t, a, "a-5\na-6\na-7\na-8\na-9\n")
	n := ig.take(t) // a-5..a-9, not acknowledged
	ig.waitFor(t, "a.log's stream closed as inactive, draining", func() bool { return sa.st == stStopping })
	old, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(dir, "a-1.log")
	if err := os.WriteFile(cp, old, 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if err := os.Truncate(a, 0); err != nil {
		t.Fatal(err)
	}
	var decided string
	ig.waitFor(t, "a-1.log held and its hold decided", func() bool {
		s := ig.g.byPath[cp]
		if s == nil || s.copyOf != nil || s.seenAt.IsZero() {
			return false
		}
		decided = fmt.Sprintf("done %v isCopy %v st %v; a.log's stream st %v", s.done, s.isCopy, s.st, sa.st)
		return true
	})
	stillStopping := sa.st == stStopping
	// a-5..a-9: delivered once (take popped them).
	for i := 5; i < 10; i++ {
		seen[fmt.Sprintf("a-%d", i)]++
	}
	ig.q.AddDispatched(n)
	ig.pub.Poke()
	got, _ := ig.popEpochs(3*time.Second, true)
	for _, l := range got {
		seen[l]++
	}
	tails, bytes, _ := ig.lost()
	twice := 0
	for i := range 10 {
		if seen[fmt.Sprintf("a-%d", i)] > 1 {
			twice++
		}
	}
	t.Logf("at the hold's end: a-1.log %s (stopping then: %v); delivered after %q; lines delivered twice %d of 10; lostTails %d lostBytes %d",
		decided, stillStopping, got, twice, tails, bytes)
	if twice > 0 {
		t.Errorf("%d of a.log's 10 lines delivered twice without a crash: its copy a-1.log (a.log truncated within the hold, its stream stopping) read from its start", twice)
	}
}
