package e2e

// Review 32c of the thirty-second session (7eed1a5): followBeside, the cut
// count of readListedBeside, the rank tie-break of listedOrder, and the
// stop's new entry for a previous run's listed file a genOwn stream reads
// as a later generation (waitingAtStop, review 32b F).
//
// Findings (fail on e5d951e):
//   A TestRev32CXSymlinkEqualMtimeRankOrder — two generations listed under
//     a symlinked path, beside its target, equal mtimes: the rank
//     tie-break ranks them against the link's base name and publishes the
//     newer first (5/5).
//   B TestRev32CXBesideRenamedBackIntoGlobStopped — a waiting beside file
//     renamed back into the glob just before a stop: counted lost by the
//     stop, read in full by the next start (lossless false, nothing lost;
//     about 1 round in 6, the test's 10 rounds 2/2; probably older than
//     7eed1a5).
// OK: TestRev32COKGenerationListedStoppedKeptReadOnce,
// TestRev32COKGenerationDeletedWhileRunningStopped.
// Both fixed in the same session: A listedOrder ranks a file beside a
// symlinked path's target against the target's base name; B followBeside
// tells a file back in the glob (back): the stop neither lists nor counts
// it, the next start's scan reads it.

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestRev32COKGenerationListedStoppedKeptReadOnce (OK, 1/1: a #0, a #1, c #0 once, c #0 first — README's genOwn limit — lossless true): DESIGN §4 "Reading a
// file twice is a duplicate, never a gap" / §10 streams (every line once
// is what the OK variant TestRev32BOKGenOwnStopped asserts), and §4
// "**Nothing green over a loss.**" (lossless must not go false when
// nothing was lost). Scenario: rev32BGenerationDeleted's first two runs
// (1,000 "f" fillers; a.log = X read; a.log → a.log.1, A = a #0, a #1
// waiting, a clean stop; while down 2,000 "0" fillers sorted before
// a.log, a.log.1 → a.log.2, a.log → a.log.1 = A, a new a.log = C; the
// second start stopped at once: A is a later generation of C's adopted
// pointer — 7eed1a5's new waitingAtStop branch lists A under a.log, head
// a.log.1). Unlike TestRev32BXGenerationNotListedDeletedSilent, A is NOT
// deleted while down. A third start runs until settled.
// Expected: a #0, a #1, c #0 once each, lossless true, lostTails 0.
// Suspected risk: the third start reads A twice — once as the list's
// beside file (readListedBesideAll → readListedBeside, glob.go:5759; the
// entry's key is neither in ptrKeys nor in the glob) and once as a later
// generation by C's source (its pointer still names X) — or counts it.
func TestRev32COKGenerationListedStoppedKeptReadOnce(t *testing.T) {
	e, a := rev32BGenOwnFirstRun(t)
	for i := range 2000 {
		appendTo(t, e.path(fmt.Sprintf("logs/0%04d.log", i)), fmt.Sprintf("0%04d #0\n", i))
	}
	if err := os.Rename(a+".1", a+".2"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(a, a+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, a, "c #0\n")
	d := e.start()
	waitUntil(t, "the start over", 30*time.Second, func() bool { return strings.Contains(d.log(), "glob feed started") })
	d.stop()
	if n := rev31BCounts(e); n["a #0"] > 0 || n["c #0"] > 0 {
		t.Skip("A or C read before the stop")
	}
	lb, _ := os.ReadFile(e.path("state/feeds/app/unread.list"))
	t.Logf("list after the second run: a entries %v; ledger %v", rev31CGrep(string(lb), "a.log"), rev31BLedger(e, "a.log"))
	d = e.start()
	waitUntil(t, "the fillers read", 120*time.Second, func() bool { return rev31BCounts(e)["01999 #0"] > 0 && rev31BCounts(e)["f0999 #2"] > 0 })
	d.waitFor("settled", 120*time.Second, func(r *report) bool { return r.Settled })
	time.Sleep(time.Second)
	r, err := d.status()
	if err != nil {
		t.Fatal(err)
	}
	n := rev31BCounts(e)
	f := r.Feeds[0]
	var order []string
	for _, l := range rev31Lines(e.path("out/once.jsonl")) {
		if strings.HasPrefix(l, "a #") || strings.HasPrefix(l, "c #") || strings.HasPrefix(l, "x #") {
			order = append(order, l)
		}
	}
	t.Logf("a/c/x in the sink %v; lossless %v lostTails %d lostBytes %d; ledger %v", order, r.Lossless, f.LostTails, f.LostBytes, rev31BLedger(e, "a.log"))
	t.Logf("third run's log on a.log: %v", rev31CGrep(d.log(), "a.log"))
	if n["a #0"] != 1 || n["a #1"] != 1 || n["c #0"] != 1 || !r.Lossless || f.LostTails != 0 {
		t.Errorf("a #0, a #1, c #0 delivered %d/%d/%d times, want once each; lossless %v lostTails %d lostBytes %d (nothing was lost)",
			n["a #0"], n["a #1"], n["c #0"], r.Lossless, f.LostTails, f.LostBytes)
	}
}

// TestRev32CXSymlinkEqualMtimeRankOrder: DESIGN §10 "**Order.** The epoch
// barrier of §4 holds per path: a new file at a path is published after
// every line of the file previously at that path is acknowledged"; §4
// generations "are read oldest first by mtime, ties by rotation rank (a
// higher number first…)", and "**Symlinks.** … Generations and copies are
// looked for beside the final target under the target's base name".
// Scenario: TestRev32BXEqualMtimeGenerationsOrder with the glob's
// logs/z.log a symlink to data/z.real: a first run (200 fillers) killed -9
// with z.real = z #0..#2 listed; while down z.real → z.real.1, a new
// z.real = z #3, z #4; a second start stopped at once (lists z.real.1
// beside logs/z.log and z.real under logs/z.log); while down logrotate
// again in data/ — z.real.1 → z.real.2, z.real → z.real.1, a new z.real =
// z #5 — the two rotated files with the same mtime. A third start finds
// both beside the link's target from the list (readListedBesideAll) and
// chains them with listedOrder's new rank tie-break.
// Observed (5/5 runs): sink order z #3, z #4, z #0, z #1, z #2, z #5 —
// z.real.1 (the newer generation) published before z.real.2, lossless
// true (every line once, out of order). Deterministic: the tie-break
// itself orders them wrong (before 7eed1a5 the tie fell by map order,
// about half the time).
// Expected: z #0..#5 in order (z.real.2 before z.real.1).
// Suspected cause: source/file/glob.go:5810-5817 — listedOrder ranks the
// files by rankOf(filepath.Base(a.path), filepath.Base(p)) with p the
// LINK's path (base "z.log"); the files beside the target are named after
// the target ("z.real.N"), so TrimPrefix leaves "z.real.2"/"z.real.1",
// which do not parse as numbers and become "dates" "2~" and "1~"
// (generations.go:135-148): compared as dates, an earlier "date" first —
// z.real.1 (the newer) before z.real.2, the reverse of the rank rule.
func TestRev32CXSymlinkEqualMtimeRankOrder(t *testing.T) {
	e := newEnv(t, rev31BManyTmpl)
	rev31BFiller(t, e, 200)
	if err := os.MkdirAll(e.path("data"), 0o755); err != nil {
		t.Fatal(err)
	}
	real := e.path("data/z.real")
	appendTo(t, real, "z #0\nz #1\nz #2\n")
	if err := os.Symlink(real, e.path("logs/z.log")); err != nil {
		t.Fatal(err)
	}
	rev31BKilledFirstRun(t, e, real)
	if err := os.Rename(real, real+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, real, "z #3\nz #4\n")
	k := fileKeyOf(t, real+".1")
	rev32BStartStop(t, e)
	lb, _ := os.ReadFile(e.path("state/feeds/app/unread.list"))
	t.Logf("list after the second run: %v", rev31CGrep(string(lb), "z."))
	if !rev31BListed(t, e, k) {
		t.Fatalf("the stop did not list z.real.1 (key %d)", k)
	}
	if err := os.Rename(real+".1", real+".2"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(real, real+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, real, "z #5\n")
	tick := time.Now().Add(-10 * time.Second).Truncate(time.Second)
	for _, p := range []string{real + ".2", real + ".1"} {
		if err := os.Chtimes(p, tick, tick); err != nil {
			t.Fatal(err)
		}
	}
	d, r := rev32BSettle(t, e)
	waitUntil(t, "z #5", 20*time.Second, func() bool { return rev31BCounts(e)["z #5"] > 0 })
	t.Logf("third run's log on z: %v", rev31CGrep(d.log(), "z.real"))
	d.stop()
	order := rev31CZOrder(e)
	want := []string{"z #0", "z #1", "z #2", "z #3", "z #4", "z #5"}
	t.Logf("z in the sink: %v lossless %v lostTails %d", order, r.Lossless, r.Feeds[0].LostTails)
	if strings.Join(order, ",") != strings.Join(want, ",") || !r.Lossless {
		t.Errorf("z in the sink %v, want %v (z.real.2, then z.real.1, then z.real); lossless %v lostTails %d", order, want, r.Lossless, r.Feeds[0].LostTails)
	}
}

// TestRev32COKGenerationDeletedWhileRunningStopped (OK 1/1: the stop's
// Close counts A — "glob file …/a.log.1, out of the glob, was not read
// before the stop: its 10 bytes" — lossless false at the third start): DESIGN §4 "**Nothing
// green over a loss.** `lossless` is true only while tailfeed can show
// that no line was skipped. Every case where it cannot is counted".
// Scenario: TestRev32BXGenerationNotListedDeletedSilent's setup (A = a #0,
// a #1, listed by the first run's stop, is a.log.1 at the second start, a
// later generation of C's adopted pointer: readAsGeneration), but A is
// deleted WHILE the second run runs (a second after "glob feed started",
// C's source still queued behind the 2,000 "0" fillers), then the second
// run is stopped; a third start runs until settled.
// Expected: A's 10 bytes, never read, counted (lostTails ≥ 1, lossless
// false), as the list/Close would count a waiting file deleted before the
// stop. Suspected cause: 7eed1a5's new waitingAtStop branch
// (glob.go:5641-5652) lists A only when followBeside finds it and drops
// it otherwise; Close (glob.go:5548-5551) counts neither leftBeside nor
// readAsGeneration streams, so a deleted A is named nowhere.
func TestRev32COKGenerationDeletedWhileRunningStopped(t *testing.T) {
	e, a := rev32BGenOwnFirstRun(t)
	for i := range 2000 {
		appendTo(t, e.path(fmt.Sprintf("logs/0%04d.log", i)), fmt.Sprintf("0%04d #0\n", i))
	}
	if err := os.Rename(a+".1", a+".2"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(a, a+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, a, "c #0\n")
	d := e.start()
	waitUntil(t, "the start over", 30*time.Second, func() bool { return strings.Contains(d.log(), "glob feed started") })
	if err := os.Remove(a + ".1"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	if n := rev31BCounts(e); n["a #0"] > 0 || n["c #0"] > 0 {
		t.Skip("A or C read before the deletion")
	}
	r0, _ := d.status()
	d.stop()
	if r0 != nil {
		t.Logf("second run before the stop: lossless %v lostTails %d", r0.Lossless, r0.Feeds[0].LostTails)
	}
	lb, _ := os.ReadFile(e.path("state/feeds/app/unread.list"))
	t.Logf("list after the second run: a entries %v; ledger %v", rev31CGrep(string(lb), "a.log"), rev31BLedger(e, "a.log"))
	t.Logf("second run's log on a.log: %v", rev31CGrep(d.log(), "a.log"))
	d = e.start()
	waitUntil(t, "the fillers read", 120*time.Second, func() bool { return rev31BCounts(e)["01999 #0"] > 0 && rev31BCounts(e)["f0999 #2"] > 0 })
	d.waitFor("settled", 120*time.Second, func(r *report) bool { return r.Settled })
	time.Sleep(time.Second)
	r, err := d.status()
	if err != nil {
		t.Fatal(err)
	}
	n := rev31BCounts(e)
	f := r.Feeds[0]
	t.Logf("a #0 ×%d c #0 ×%d; lossless %v lostTails %d lostBytes %d; ledger %v", n["a #0"], n["c #0"], r.Lossless, f.LostTails, f.LostBytes, rev31BLedger(e, "a.log"))
	lost := f.LostTails > 0 || !r.Lossless || (r0 != nil && r0.Feeds[0].LostTails > 0)
	if n["a #0"] == 0 && !lost {
		t.Errorf("A (a.log.1, 10 bytes, never read) deleted while the second run ran: not delivered, yet lossless %v lostTails %d", r.Lossless, f.LostTails)
	}
}

// TestRev32CXBesideRenamedBackIntoGlobStopped: DESIGN §4 "**Nothing green
// over a loss.** `lossless` is true only while tailfeed can show that no
// line was skipped" — and the project's promise that no loss is counted
// when nothing was lost. Scenario: rev31BRotatedWhileDown (z.log.1 = z
// #0..#2 listed by a kill -9, a new z.log = z #3, z #4); a second start
// queues z.log.1 beside logs/z.log (readListedBeside, behind 200 fillers);
// as soon as "glob feed started" is logged z.log.1 is renamed back INTO
// the glob (logs/zz.log) and the run is stopped at once; a third start
// settles. Observed (in the rounds where the stop beats the glob's own
// look at the rename, about 1 in 6; with up to 10 rounds the test failed
// 2/2 runs, single rounds 1/6): the stop WARNs "glob file …/z.log.1, out of
// the glob, was not read before the stop: its 15 bytes from offset 0" and
// ledgers lostTails 1 / lostBytes 15, and the third start reads zz.log in
// the glob in full (z #0..#4 once each) — lossless false for a loss that
// never happened. Expected: lossless true, nothing counted (the file is in
// the glob: the next start reads it).
// Suspected cause: source/file/glob.go:2951-2960 — followBeside finds the
// file by key but refuses it when the glob matches its new name
// (!g.matched(p)) and returns false, leaving s.path stale; Close
// (glob.go:5548-5555) then counts it as "out of the glob" by the stale
// s.path. (Close judged by exists(s.path, s.key) before 7eed1a5, so this is
// probably not new in 7eed1a5 — not checked on its parent — but it is the
// branch followBeside adds for renames after leaving: a file it finds
// matched should be left to the glob, not counted.)
func TestRev32CXBesideRenamedBackIntoGlobStopped(t *testing.T) {
	// Up to 10 rounds (~2 s each): the stop must come before the glob's
	// own look at the rename, about 1 round in 6.
	for round := range 10 {
		if !rev32CRenamedBackRound(t, round) {
			return
		}
	}
}

// rev32CRenamedBackRound: one round; false when it failed.
func rev32CRenamedBackRound(t *testing.T, round int) bool {
	e := newEnv(t, rev31BManyTmpl)
	rev31BRotatedWhileDown(t, e)
	z := e.path("logs/z.log")
	d := e.start()
	waitUntil(t, "the start over", 20*time.Second, func() bool { return strings.Contains(d.log(), "glob feed started") })
	if err := os.Rename(z+".1", e.path("logs/zz.log")); err != nil {
		t.Fatal(err)
	}
	d.stop()
	if n := rev31BCounts(e); n["z #0"] > 0 {
		return true // z.log.1 read before the stop: nothing to show
	}
	d, r := rev32BSettle(t, e)
	d.stop()
	n := rev31BCounts(e)
	f := r.Feeds[0]
	if n["z #0"] == 0 || n["z #2"] == 0 || n["z #3"] == 0 {
		t.Errorf("round %d: z lines missing: %d/%d/%d", round, n["z #0"], n["z #2"], n["z #3"])
		return false
	}
	if !r.Lossless || f.LostTails != 0 {
		t.Logf("round %d: ledger %v", round, rev31BLedger(e, "z"))
		t.Errorf("round %d: z.log.1 (renamed back into the glob as zz.log before the stop) read in full at the next start (z #0..#4 ×%d/%d/%d/%d/%d), yet lossless %v lostTails %d lostBytes %d",
			round, n["z #0"], n["z #1"], n["z #2"], n["z #3"], n["z #4"], r.Lossless, f.LostTails, f.LostBytes)
		return false
	}
	return true
}
