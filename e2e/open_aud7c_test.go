//go:build openfindings

package e2e

// Aud7 C kept open (run with -tags openfindings; seed with AUD7_SEED, keep
// the run's directory with AUD7_KEEP), stated in README (Many files per
// feed, "What it cannot see"). Thirty-third session, seed
// 1796559392325910795, 10 runs: every run lost lines of a writer whose
// path never had a pointer (its files waiting for the one slot behind
// busier writers across every life, maxOpenFiles 3), lossless true in
// most. Three causes found:
//
//   - fixed: a file appearing while tailfeed ran, waiting for a slot, was
//     named in the unread list only after a second (unreadListDelay);
//     killed before, then rotated while down, it was read by nobody and
//     counted nowhere (9 of w2's 17 generations in one run). Now listed by
//     the scan that finds it (e2e/rev33_listed_at_once_test.go).
//   - fixed in the rig: a first daemon slower to its first scan than a
//     writer's first rotation had the generations rotated before it
//     counted missing (never in the glob while tailfeed looked).
//   - fixed in the thirty-fourth session (listedGapsLocked;
//     e2e/rev34_born_while_down_test.go): a generation born and rotated
//     out of the glob while tailfeed was down, at a path none of whose
//     files has a pointer, was read by nobody — the restart read the
//     listed files beside the path and the file at it, not the
//     generations born between them. Still open: such a generation
//     compressed by then (a .gz), or on a file system without birth
//     times — uncounted. Also seen once: the
//     oldest listed generation of such a path missing after two renames
//     while it waited, and a listed file counted gone by the next start
//     although another entry of its key was found and read (lossless
//     false, a false count); not reduced to a small case yet.

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestAud7CRenameFastKill9LosesLines: the writers of B rotated every
// 0.35–0.53 s (logrotate `create`, every generation kept on disk beside the
// path, none matched by ./in/*.log), maxOpenFiles 3, closeInactiveMillis
// 200, 10 SIGKILLs at random moments, then a last clean start that must
// read everything. DESIGN §4: "Restart after rotation: every generation
// still on disk … Reading a file twice is a duplicate, never a gap";
// README: "`create` (rename), live or stopped, any number of rotations |
// nothing", and for a glob "a file renamed out beside its path, found there
// by its key, is read to its end as usual" and "a new app.log takes the
// pointer of the file last at that path and reads app.log.1's unread tail
// and the later generations beside it first".
//
// Observed in 3 of 3 runs at this rate (and 4 of 4 with rotations
// 0.35–1.05 s apart; 0 of 3 at 0.7–1.05 s): lines never delivered although
// their generation is on disk — w1 1,485 + w2 1,044 of ~12,100 (101,185
// bytes); w1 1,796 + w2 1,472 + w3 1 (130,721 bytes); w1 374 + w2 441 of
// ~7,900 (32,603 bytes against a ledger of lostBytes 25,279, lostTails 5).
// In the fourth, 236,518 bytes (w1 2,467, w2 3,425, w3 20 lines) against
// lostBytes 28,351 and lostTails 7. The losses are counted only in part and
// wrongly: the ledger's entries say "glob file …/w1.log renamed out of the
// glob or deleted before its stream read it to its end: its 11931 bytes …
// were never read" or "glob file gone while stopped (pointer … at offset
// 0); its unread tail, if any, is lost" for files that sit on disk beside
// their path under w1.log.N — findable, never gone (DESIGN §4 counts in
// lostTails only a tail "that cannot be found (deleted, or compressed in a
// format not read)"). In two runs a whole generation of the quiet writer
// (w3.log.9, 4 lines; w3.log.1, 6 lines) never appears in the epochs file
// at all; D is that case made small, where it is not counted at all. The writer renames and
// reopens atomically: no line is ever written to a renamed file.
// Duplicates are not asserted here (rotations < 2 s apart fall in §4's
// 2 s mtime slack).
//
// Thirteenth session: after the B fixes 4 of 5 runs passed (one with a
// false lostTails), the fifth lost 8 lines of the quiet writer's three
// oldest generations silently; after the D fix too, 3 of 5: one lost 9
// lines of the quiet writer with a lostTails 1 (lossless false), one 511
// lines of a busy writer (w1) and 8 of the quiet one silently (lossless
// true, ledger empty).
//
// Twenty-second session: 20 runs of 20 passed (17 on the code of that
// session, 3 on the twenty-first's: no loss, no count, lossless true, 37–113
// rotations and 10 kills each), so the fixes of the sessions between
// (generation gaps, genOwn streams, held marks) closed it; back in the
// default build as a regression test.
func TestAud7CRenameFastKill9LosesLines(t *testing.T) {
	res, st, body, r := a7scenario(t, "./in/*.log", a7small, a7fourWriters("rename"), 10, 350*time.Millisecond)
	sum, miss, _, _ := r.summary(res)
	t.Logf("%s", sum)
	f := st.Feeds[0]
	t.Logf("status: lossless %v lostTails %d lostBytes %d; losses ledger: %s", st.Lossless, f.LostTails, f.LostBytes, tail(r.losses, 2000))
	missBytes := 0
	for tag, rr := range res {
		missBytes += rr.missBytes
		if rr.missing > 0 {
			t.Errorf("%s: %d of %d lines never delivered (first %s) although every generation is on disk", tag, rr.missing, rr.total, rr.firstMissing)
		}
	}
	if miss > 0 {
		lt, lb := a7ledger(r.losses)
		t.Logf("%d bytes of lines missing; the losses ledger counts lostTails %d, lostBytes %d", missBytes, lt, lb)
		_ = body
		if k := os.Getenv("AUD7_KEEP"); k != "" {
			os.RemoveAll(k)
			exec.Command("cp", "-a", r.e.dir, k).Run()
		}
	}
}
