package daemon

// Review 20d (the fixes of review 20c: per-subscriber finalUnpos / owedUnpos
// carried across a reload keeping the path; readAgainAt ignoring removed
// subscribers' late lines).

import (
	"strings"
	"tailfeed/status"
	"testing"
	"time"
)

// rev20dBestEffortSlow: rev10KeptBase with slow's overload policy
// DROP_AFTER_SPIN (best-effort).
var rev20dBestEffortSlow = strings.Replace(rev10KeptBase, "queueCapacity: 64}",
	"queueCapacity: 64, overload: {subscribers: {slow: {policy: DROP_AFTER_SPIN, spinBoundMillis: 1}}}}", 1)

// TestRev20DAPathChangeAfterAPolicyChangeToBestEffortGivesUpOwedLateLinesUncounted
// — DESIGN §4 "Nothing green over a loss", §7 released / lossless; §12 /
// README "Reload": what a kept subscriber was given and did not finish is
// counted (released) unless the new path reads it all again. stopFeed
// notes finalUnpos only for a queue that is not best-effort
// ("!q.BestEffort() && …"), yet a best-effort queue carries what an earlier
// (holding) instance gave it and it did not finish (finalOwed = owedLeft,
// "carried"): the carried late lines lose their owedUnpos flag.
//
// Scenario: review 20c A's, but reload 1 (path unchanged) changes slow's
// policy to DROP_AFTER_SPIN instead of a feed setting: slow (holding in
// instance 1) had not finished the 5 late lines (owed 5, owedUnpos true).
// Instance 2: slow best-effort, owed 5 carried; at its stop finalUnpos
// is not set for it (best-effort), finalOwed[slow] = 5. Reload 2 changes
// the path to link.log, a symlink to app.log: readAgainAt sees no
// finalUnpos, answers "read again", and nothing is counted.
//
// Expected: slow given the 5 late lines again, or them counted (released
// or dropped 5), lossless false. Observed before the fix (3 of 3): slow given only the 10
// n- lines, released 0, dropped 0, lossless true, settled; losses.jsonl
// empty. Control: the same run with reload 2 changing the path to another
// file counts released 5 (the owed lines are carried; only the flag is
// lost). Older than 1e242f7 (finalUnpositioned had the same hole): the
// fix of review 20c A is incomplete for a queue best-effort at the stop.
func TestRev20DAPathChangeAfterAPolicyChangeToBestEffortGivesUpOwedLateLinesUncounted(t *testing.T) {
	dir := t.TempDir()
	rec := &recorder{}
	e := startIn(t, dir, rev10KeptBase+slowLine, Options{Processors: map[string]Build{"slow": builds(newPrefixGate(t, "late-").build, rec.build)}})
	e.rotateWithLateLines(t, "slow")
	time.Sleep(300 * time.Millisecond)
	e.reloadTo(rev20dBestEffortSlow+slowLine, "reload 1 (slow's policy to best-effort)")
	f1 := e.waitFor("reload 1 caught up", 10*time.Second, func(f status.FeedReport) bool {
		return f.State == "CAUGHT_UP"
	})
	time.Sleep(300 * time.Millisecond)
	f1 = e.report().Feeds[0]
	t.Logf("after reload 1: released %d dropped %d lossless %v stalled %v settled %v slow %+v", f1.Released, f1.Dropped, f1.Lossless, f1.Stalled, f1.Settled, sub(t, f1, "slow"))
	f := e.reloadToLink(t, strings.Replace(rev20dBestEffortSlow, "%DIR%/app.log", "%DIR%/link.log", 1)+slowLine, "reload 2 (path change to a symlink to the open file)", rec, 10)
	again := 0
	for _, l := range rec.got() {
		if strings.HasPrefix(l, "late-") {
			again++
		}
	}
	t.Logf("after reload 2: slow given %d late- lines again (%d in all); released %d dropped %d lossless %v stalled %v settled %v; losses.jsonl released %d dropped %d",
		again, len(rec.got()), f.Released, f.Dropped, f.Lossless, f.Stalled, f.Settled, ledgerAmount(t, dir, "released"), ledgerAmount(t, dir, "dropped"))
	if again >= 5 {
		return
	}
	if counted := f.Released + f.Dropped; counted < uint64(5-again) || f.Lossless {
		t.Errorf("slow (best-effort since reload 1) was given %d of its 5 unfinished late- lines again; released %d dropped %d lossless %v (losses.jsonl released %d dropped %d); want the rest counted, lossless false",
			again, f.Released, f.Dropped, f.Lossless, ledgerAmount(t, dir, "released"), ledgerAmount(t, dir, "dropped"))
	}
}

// TestRev20DBPolicyBestEffortAndBackThenPathChangeGivesUpOwedLateLinesUncounted
// — the same clauses as A; the carried flag lost for good: reload 1 (path
// unchanged) makes slow best-effort (owed 5 late lines carried, owedUnpos
// true), reload 2 (path unchanged) makes it holding again: instance 2's
// stop did not note finalUnpos for the best-effort queue, so instance 3
// carries owed 5 with owedUnpos false. Reload 3 changes the path to
// link.log, a symlink to app.log: readAgainAt answers "read again" and the
// 5 late lines slow never finished are counted nowhere.
//
// Observed before the fix (3 of 3): released 0, lossless true, settled; after reload 2
// slow's row already reads dispatched 55, drained (it finished 50).
// Control: reload 3 to another file counts released 5.
func TestRev20DBPolicyBestEffortAndBackThenPathChangeGivesUpOwedLateLinesUncounted(t *testing.T) {
	dir := t.TempDir()
	rec := &recorder{}
	e := startIn(t, dir, rev10KeptBase+slowLine, Options{Processors: map[string]Build{"slow": builds(newPrefixGate(t, "late-").build, rec.build)}})
	e.rotateWithLateLines(t, "slow")
	time.Sleep(300 * time.Millisecond)
	e.reloadTo(rev20dBestEffortSlow+slowLine, "reload 1 (slow's policy to best-effort)")
	e.waitFor("reload 1 caught up", 10*time.Second, func(f status.FeedReport) bool { return f.State == "CAUGHT_UP" })
	time.Sleep(300 * time.Millisecond)
	e.reloadTo(rev10KeptBase+slowLine, "reload 2 (slow holding again)")
	e.waitFor("reload 2 caught up", 10*time.Second, func(f status.FeedReport) bool { return f.State == "CAUGHT_UP" })
	time.Sleep(300 * time.Millisecond)
	f2 := e.report().Feeds[0]
	t.Logf("after reload 2: released %d dropped %d lossless %v slow %+v", f2.Released, f2.Dropped, f2.Lossless, sub(t, f2, "slow"))
	f := e.reloadToLink(t, strings.Replace(rev10KeptBase, "%DIR%/app.log", "%DIR%/link.log", 1)+slowLine, "reload 3 (path change to a symlink to the open file)", rec, 10)
	t.Logf("after reload 3: released %d dropped %d lossless %v stalled %v settled %v", f.Released, f.Dropped, f.Lossless, f.Stalled, f.Settled)
	wantGivenAgainOrReleased(t, dir, f, rec.got(), "late-", 5, "the late lines in the rotated app.log.1")
}
