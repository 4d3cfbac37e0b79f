package daemon

// Findings of the eleventh session's review 11b of 364c649..HEAD (a
// reload's owed lines, OldGiven, publishedMarks and the holds' places),
// fixed the same session: each test failed on the reviewed change (A and
// E caused by it; B and D on the code before it too); its comment gives
// the DESIGN rule, the scenario, expected vs observed. Finding C is still
// open (open_rev11b_test.go, -tags openfindings).

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tailfeed/status"
)

// TestRev11BAAddedBackReReadsLinesPublishedWhileGone — DESIGN §12
// "Reload": "adding the processor back re-reads nothing (its backlog
// stays held until released)".
//
// Scenario: slow (blocked) is given the 40 a-lines archive writes; reload
// 1 removes it (a hold, Throughs = a-39, the pointer pinned at 0). While
// it is gone the feed publishes b-0…b-9 (archive writes them). Reload 2
// adds slow back (a recorder). buildGroup: slow has no own skip (it was
// not in the stopped instance), a hold of it exists → throughMarks, which
// is still a-39: no reload updates a hold's places (markStop does so only
// at a clean stop). Before the change d.skips[slow] was the stopped
// instance's every published line (b-9) and it came first.
//
// Expected: slow receives nothing of the re-read from the pinned pointer
// (neither its held backlog nor the lines published while it was gone).
// Observed: it receives b-0…b-9 (see the failure); 3 of 3 runs. A
// regression: the test passes on 364c649 (product code checked out).
func TestRev11BAAddedBackReReadsLinesPublishedWhileGone(t *testing.T) {
	dir := t.TempDir()
	const n = 40
	rec := &recorder{}
	e := slowGiven40(t, dir, builds(blocked(t), rec.build), nil, "")
	e.reloadTo(rev10KeptBase, "reload 1 (remove slow)")
	e.waitFor("stalled by the hold", 10*time.Second, func(f status.FeedReport) bool { return f.Stalled != nil })
	e.appendLines(numbered("b-", 0, 10)...)
	e.waitFor("archive wrote the b lines", 10*time.Second, func(f status.FeedReport) bool { return f.Sequence >= n+10 || sub(t, f, "archive").Dispatched >= 10 })
	time.Sleep(300 * time.Millisecond)
	e.reloadTo(rev10KeptBase+slowLine, "reload 2 (add slow back)")
	time.Sleep(1500 * time.Millisecond)
	r := e.report().Feeds[0]
	t.Logf("after add-back: stalled %v, slow dispatched %d", r.Stalled != nil, sub(t, r, "slow").Dispatched)
	e.Stop()
	got := rec.got()
	if len(got) > 0 {
		t.Errorf("slow, added back, received %d lines of the re-read (%q … %q); want none (DESIGN §12: adding it back re-reads nothing)", len(got), got[0], got[len(got)-1])
	}
	checkOnce(t, dir, n+10)
}

// TestRev11BBOwedLostWhenThePolicyTurnsBestEffort — DESIGN §2 (never a
// gap), §5 (a best-effort line counts as acknowledged when queued or
// dropped — and a drop is counted), §7 (lossless false after any loss),
// §12 "Reload" (a removed subscriber's unfinished lines are held, counted
// in released when given up).
//
// Scenario: instance A: slow (PAUSE, blocked) is given the 40 lines
// archive writes and finishes none. Reload 1 makes slow DROP_AFTER_SPIN
// and adds newbie (blocked) with a window of 8: instance B re-reads from
// the pointer only 8 lines (slow's owed 40 lines are carried, but
// stopFeed keeps finalOwed for PAUSE queues only). Reload 2 removes slow
// (newbie unblocked, window opened).
//
// Expected: the 40 lines slow never finished are held (stalled "holds 40
// lines") or counted as a loss (dropped 40) — slow was given them in A
// and B gave it only 8 again. Observed: no hold; dropped 8 (the lines B
// queued, left at its stop), lossless false: the 32 lines A gave slow and
// B never gave again are given up uncounted — dropped understates the
// loss. Before the change the same (owed did not exist); the change
// carries owed for PAUSE queues only (stopFeed: finalOwed skips a
// best-effort queue), so this path is still open. 3 of 3 runs; fails
// on 364c649 too.
func TestRev11BBOwedLostWhenThePolicyTurnsBestEffort(t *testing.T) {
	owedBestEffortRemoved(t, false)
}

// TestRev11BDOwedLostWhenThePolicyTurnsBestEffortLossless — TestRev11BB
// with slow, in instance B, finishing the 8 lines B gives it (a
// recorder): nothing is left at B's stop, so nothing at all is counted.
//
// Expected: 40 lines held or counted, less those slow finished in B
// (lossless false: slow never received a-000008…a-000039). Observed: no hold, dropped 0,
// released 0, lossless TRUE — 32 lines a configured PAUSE subscriber was
// given and never finished are given up, the pointer passes them, and
// every status field says nothing was lost. 3 of 3 runs; fails on
// 364c649 too.
func TestRev11BDOwedLostWhenThePolicyTurnsBestEffortLossless(t *testing.T) {
	owedBestEffortRemoved(t, true)
}

func owedBestEffortRemoved(t *testing.T, finishInB bool) {
	dir := t.TempDir()
	const n = 40
	slowA, slowB := newBlocker(), newBlocker()
	if finishInB {
		close(slowB.open)
	}
	t.Cleanup(func() {
		close(slowA.open)
		if !finishInB {
			close(slowB.open)
		}
	})
	e := slowGiven40(t, dir, builds(slowA.build, slowB.build), map[string]Build{"newbie": blockedThenOpen(t)}, "")
	bestEffort := strings.Replace(rev10KeptSmall, "maxPendingAcks: 8}", "maxPendingAcks: 8, overload: {subscribers: {slow: {policy: DROP_AFTER_SPIN}}}}", 1)
	if bestEffort == rev10KeptSmall {
		t.Fatal("config not changed")
	}
	e.reloadTo(bestEffort+slowLine+newbieLine, "reload 1")
	time.Sleep(time.Second) // B re-reads up to the window (newbie blocked)
	r := e.report().Feeds[0]
	t.Logf("instance B: sequence %d, slow position %d, lossless %v", r.Sequence, sub(t, r, "slow").Position, r.Lossless)
	want := uint64(n)
	if finishInB {
		want -= sub(t, r, "slow").Position - n // finished in B (positions number on from A's 40): not lost
	}
	e.reloadTo(rev10KeptBase+newbieLine, "reload 2")
	time.Sleep(2 * time.Second)
	r = e.report().Feeds[0]
	stalled := stalledOf(r)
	t.Logf("instance C: stalled %q, lossless %v, dropped %d, released %d", stalled, r.Lossless, r.Dropped, r.Released)
	e.Stop()
	if !strings.Contains(stalled, "holds 40 lines") && r.Dropped+r.Released < want || r.Lossless {
		t.Errorf("slow was given 40 lines (PAUSE) and finished none; removed, they are held as %q and counted dropped %d, released %d (lossless %v): the lines A gave it that B did not give again are neither held nor counted (DESIGN §7: dropped, lossless are true; §12)", stalled, r.Dropped, r.Released, r.Lossless)
	}
}

// TestRev11BEPathChangeCarriesOwedIntoAHold — DESIGN §12 "Reload": "if its
// `path` changed, the old pointer is renamed … and the new path starts as a
// new feed"; a removed processor holds (stalled "holds N lines") only
// "what it did not finish"; §7: stalled and released are true.
//
// Scenario: slow (blocked) is given 40 lines of app.log and finishes none.
// Reload 1 changes the feed's path to app2.log (slow now a recorder): the
// feed starts on app2.log as a new feed, yet inherit carries the stopped
// instance's finalOwed (slow: 40) and its published marks (app.log's
// epoch): OldGiven can never count a line of the new file against them.
// slow finishes every line of app2.log. Reload 2 removes slow.
//
// Expected: no hold (slow finished every line its feed gave it on the
// new path; the old file is no longer the feed's) — the feed not stalled.
// Observed: "removed subscriber slow holds 40 lines": the feed stalls,
// its pointer pinned, for lines of a file it no longer reads, and a
// release would count 40 lines released that were given up at the path
// change (see the failure). 3 of 3 runs. A regression: passes on
// 364c649 (owed did not exist).
func TestRev11BEPathChangeCarriesOwedIntoAHold(t *testing.T) {
	dir := t.TempDir()
	const n = 40
	rec := &recorder{}
	e := slowGiven40(t, dir, builds(blocked(t), rec.build), nil, "")
	writeNumbered(t, filepath.Join(dir, "app2.log"), "n-", 5)
	moved := strings.Replace(rev10KeptBase, "%DIR%/app.log", "%DIR%/app2.log", 1)
	e.reloadTo(moved+slowLine, "reload 1 (path change)")
	e.waitFor("slow finished app2.log", 10*time.Second, func(f status.FeedReport) bool {
		return strings.HasSuffix(f.Path, "app2.log") && f.Settled && len(rec.got()) == 5
	})
	e.reloadTo(moved, "reload 2 (remove slow)")
	time.Sleep(time.Second)
	r := e.report().Feeds[0]
	e.Stop()
	t.Logf("slow received %q on app2.log", rec.got())
	if r.Stalled != nil {
		t.Errorf("stalled %q after slow, which finished every line of app2.log, was removed; want not stalled (its owed lines were app.log's, a file the feed no longer reads)", *r.Stalled)
	}
}
