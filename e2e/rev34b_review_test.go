package e2e

// Review 34b: the second commit on listedGapsLocked / listedOrder
// (547cdd7): exact-copy test (sameBytes), pointer keys, empty and
// any-mtime generations, order by birth.

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRev34BXASameBytesGenerationSkipped: DESIGN §10 "any other new key is
// a new stream" (a new key is a copy only when its first bytes match a
// stream whose file is now shorter than its offset), §4 "every generation
// still on disk". z.log (z #0..#2) listed, kill -9; while down the
// application writes exactly the same three lines to its next generation
// (a job whose every run logs the same lines), rename rotation twice, c #0
// at the new z.log. The listed file is found by its key at z.log.2, intact:
// z.log.1 is no copy of it but a generation of its own with the same bytes.
// Expected: z #0..#2 delivered twice each, c #0 once. Observed (3/3 runs):
// z #0..#2 once each, lostTails 0, lossless true, 0 generations queued.
// Suspected cause: the second commit's exact-copy test (sameBytes against
// every listed file in by[path], listedGapsLocked) skips z.log.1 although
// the listed file was found by its key, intact and not shorter than its
// offset — not a copy by §10's rule.
func TestRev34BXASameBytesGenerationSkipped(t *testing.T) {
	e := rev34ADown(t, "", false, nil, func(e *env, z string) {
		mustRename(t, z, z+".1")
		time.Sleep(20 * time.Millisecond)
		appendTo(t, z, "z #0\nz #1\nz #2\n")
		time.Sleep(20 * time.Millisecond)
		mustRename(t, z+".1", z+".2")
		mustRename(t, z, z+".1")
		time.Sleep(20 * time.Millisecond)
		appendTo(t, z, "c #0\n")
	}, []string{"c #0"}, nil)
	n := rev31BCounts(e)
	for _, l := range []string{"z #0", "z #1", "z #2"} {
		if n[l] != 2 {
			t.Errorf("%s delivered %d times, want 2 (the listed file and the generation with the same bytes)", l, n[l])
		}
	}
}

// TestRev34BXBCopyThenCreateLost: DESIGN §10 "Order", §4. z.log (z #0..#2)
// listed, kill -9; while down a copytruncate rotation (z.log copied to
// z.log.1, cut, b #0 written to it), then a create rotation (z.log.1 →
// z.log.2, z.log → z.log.1, a new z.log with c #0) — logrotate's
// configuration changed between two runs. Birth order (z.log.1 older than
// its copy z.log.2) is not the order of the content here.
// Expected: every line once, z before b before c. Observed (3/3 runs):
// b #0 delivered 0 times, lostTails 0, lossless true, ledger empty, 0
// generations queued. Suspected cause: readListedBeside takes the copy
// (z.log.2) for the listed file (its key's file was cut and rewritten);
// listedGapsLocked's low bound is that copy's birth, and z.log.1 (the
// listed inode, b #0) was born before it, so it is skipped; nobody else
// reads it. Likely present since the first commit (not checked there).
func TestRev34BXBCopyThenCreateLost(t *testing.T) {
	rev34ADown(t, "", false, nil, func(e *env, z string) {
		b, err := os.ReadFile(z)
		if err != nil {
			t.Fatal(err)
		}
		rev34ACreate(t, z+".1", string(b))
		if err := os.Truncate(z, 0); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
		appendTo(t, z, "b #0\n")
		time.Sleep(20 * time.Millisecond)
		mustRename(t, z+".1", z+".2")
		mustRename(t, z, z+".1")
		time.Sleep(20 * time.Millisecond)
		appendTo(t, z, "c #0\n")
	}, []string{"z #0", "z #1", "z #2", "b #0", "c #0"}, []string{"z #2", "b #0", "c #0"})
}

// TestRev34BOKEmptyGenerationRotatedAgain: the empty generation
// listedGapsLocked now queues (34a F) written after the restart's scan and
// rotated again while running (z.log.1 → z.log.2, z.log → z.log.1, a new
// z.log): the queued stream and the path's own rotation handling must not
// both read it. Expected: b #0, c #0, d #0 once each, in order. Passed
// 3/3 runs.
func TestRev34BOKEmptyGenerationRotatedAgain(t *testing.T) {
	var zp string
	rev34AAfterStart = func(e *env) {
		appendTo(t, zp+".1", "b #0\n")
		time.Sleep(20 * time.Millisecond)
		appendTo(t, zp, "c #0\n")
		time.Sleep(300 * time.Millisecond)
		mustRename(t, zp+".2", zp+".3")
		mustRename(t, zp+".1", zp+".2")
		mustRename(t, zp, zp+".1")
		rev34ACreate(t, zp, "")
		time.Sleep(20 * time.Millisecond)
		appendTo(t, zp, "d #0\n")
	}
	defer func() { rev34AAfterStart = nil }()
	rev34ADown(t, "", false, nil, func(e *env, z string) {
		zp = z
		mustRename(t, z, z+".1")
		rev34ACreate(t, z, "")
		time.Sleep(20 * time.Millisecond)
		mustRename(t, z+".1", z+".2")
		mustRename(t, z, z+".1")
		rev34ACreate(t, z, "")
	}, []string{"z #0", "z #1", "z #2", "b #0", "c #0", "d #0"}, []string{"z #2", "b #0", "c #0", "d #0"})
}

// TestRev34BXCCopyListedAcrossKillsOrder: DESIGN §10 "Order", the case
// listedOrder served before by mtime (two generations of one path listed
// across two kills, review 31c) with a copytruncate in the first down
// time. z.log (z #0..#2) listed, kill -9; while down copytruncate (the
// copy z.log.1 holds z, the listed inode is cut, b #0 written to it); a
// second run lists both (the copy beside the path, the cut file at it)
// and is killed -9 before reading them; while down a create rotation
// (z.log.1 → z.log.2, z.log → z.log.1, a new z.log with c #0). The copy
// was born after the inode it copied, though its content is older.
// Expected: every line once, z before b before c. Observed (3/3 runs):
// every line once, lossless true, but b #0 (sink index 900) before z #0..#2
// (901..903). Suspected cause: the second commit's listedOrder sorts the
// two listed files by birth first: the listed inode (z.log.1, b) was born
// before its copy (z.log.2, z); by mtime (the order before) the copy,
// last written at the copy, came first.
func TestRev34BXCCopyListedAcrossKillsOrder(t *testing.T) {
	e := newEnv(t, rev31BManyTmpl)
	rev31BFiller(t, e, 300)
	d := e.start()
	waitUntil(t, "the start over", 30*time.Second, func() bool { return strings.Contains(d.log(), "glob feed started") })
	z := e.path("logs/z.log")
	appendTo(t, z, "z #0\nz #1\nz #2\n")
	k := fileKeyOf(t, z)
	waitUntil(t, "z.log listed", 10*time.Second, func() bool { return rev31BListed(t, e, k) })
	d.kill()
	if rev31BCounts(e)["z #0"] > 0 {
		t.Skip("z.log read before the first kill")
	}
	b, err := os.ReadFile(z)
	if err != nil {
		t.Fatal(err)
	}
	rev34ACreate(t, z+".1", string(b))
	if err := os.Truncate(z, 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	appendTo(t, z, "b #0\n")
	kc := fileKeyOf(t, z+".1")
	d = e.start()
	waitUntil(t, "the copy listed", 30*time.Second, func() bool { return rev31BListed(t, e, kc) && rev31BListed(t, e, k) })
	d.kill()
	if n := rev31BCounts(e); n["z #0"] > 0 || n["b #0"] > 0 {
		t.Skip("z or b read before the second kill")
	}
	mustRename(t, z+".1", z+".2")
	mustRename(t, z, z+".1")
	time.Sleep(20 * time.Millisecond)
	appendTo(t, z, "c #0\n")
	rev34AReadOnce(t, e, "f0299 #2", "z.log", "z #0", "z #1", "z #2", "b #0", "c #0")
	got := rev31Lines(e.path("out/once.jsonl"))
	order := []string{"z #2", "b #0", "c #0"}
	for i := 1; i < len(order); i++ {
		a, b := slices.Index(got, order[i-1]), slices.Index(got, order[i])
		if a < 0 || b < 0 || a > b {
			t.Errorf("%s at %d, %s at %d: want the path's generations oldest first", order[i-1], a, order[i], b)
		}
	}
}
