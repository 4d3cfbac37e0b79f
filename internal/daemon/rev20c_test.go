package daemon

// Review 20c (the fixes of reviews 20a and 20b: readAgainAt checks the
// first bytes read under the epoch, and a holding subscriber's unfinished
// late lines, Publisher.UnpositionedAfter, at the stop).

import (
	"strings"
	"tailfeed/status"
	"testing"
	"time"
)

// TestRev20CAPathChangeAfterASettingsReloadGivesUpOwedLateLinesUncounted
// — DESIGN §4 "Nothing green over a loss", §7 released; §12 / README
// "Reload": what a kept subscriber was given and did not finish is counted
// released unless the new path reads it all again. The fix of review 20b
// B (finalUnpositioned) looks at the stopping instance's publisher only.
//
// Scenario: review 20b B's (slow finishes every line but the late ones;
// 40 a-, rotation, 10 n-, 5 late- lines written to app.log.1 through the
// old descriptor, delivered downgraded, unfinished by slow). Reload 1
// changes a setting only (pollIntervalMillis): the feed is stopped and
// started again from its pointer (the new app.log); slow's 5 late lines
// are carried as owed (finalOwed), never given again. Reload 2 changes the
// path to link.log, a symlink to app.log: the stopping instance (reload
// 1's) published no late line, finalUnpositioned is false, no mark names
// the late epoch: readAgainAt says "read again" and nothing is counted.
//
// Expected: slow given the 5 late lines again, or released 5, lossless
// false, losses.jsonl released 5. Observed before the fix (3 of 3): slow given none of them again
// (only the 10 n- lines), released 0, lossless true, settled (3 of 3).
// After reload 1 slow still had them in its queue (position 55, finished
// 50): the loss is reload 2's. The single-reload case (review 20b B) passes.
func TestRev20CAPathChangeAfterASettingsReloadGivesUpOwedLateLinesUncounted(t *testing.T) {
	dir := t.TempDir()
	rec := &recorder{}
	e := startIn(t, dir, rev10KeptBase+slowLine, Options{Processors: map[string]Build{"slow": builds(newPrefixGate(t, "late-").build, rec.build)}})
	e.rotateWithLateLines(t, "slow")
	time.Sleep(300 * time.Millisecond)
	e.reloadTo(strings.Replace(rev10KeptBase, "pollIntervalMillis: 20", "pollIntervalMillis: 25", 1)+slowLine, "reload 1 (a setting only)")
	f1 := e.waitFor("reload 1 settled or stalled", 10*time.Second, func(f status.FeedReport) bool {
		return sub(t, f, "archive").Dispatched >= 0 && f.State == "CAUGHT_UP"
	})
	t.Logf("after reload 1: released %d lossless %v stalled %v settled %v slow %+v", f1.Released, f1.Lossless, f1.Stalled, f1.Settled, sub(t, f1, "slow"))
	f := e.reloadToLink(t, strings.Replace(strings.Replace(rev10KeptBase, "%DIR%/app.log", "%DIR%/link.log", 1), "pollIntervalMillis: 20", "pollIntervalMillis: 25", 1)+slowLine, "reload 2 (path change to a symlink to the open file)", rec, 10)
	t.Logf("after reload 2: released %d lossless %v stalled %v settled %v", f.Released, f.Lossless, f.Stalled, f.Settled)
	wantGivenAgainOrReleased(t, dir, f, rec.got(), "late-", 5, "the late lines in the rotated app.log.1")
}

// TestRev20CCRemovedSubscribersLateLinesCountKeptOnesLinesReleased — DESIGN
// §7 "lossless: … released … are 0" (lossless false only over a loss),
// §5/§12 released: "lines given up"; README "Reload": the lines a kept
// subscriber did not finish are given up (released) unless the new path
// reads them all again. Review 20b B's fix sets finalUnpositioned for any
// holding queue at the stop — also one the same reload removes (its
// unfinished lines become a hold, kept in removed.json, not the kept
// subscribers' concern) — and readAgainAt then answers false for every
// kept subscriber.
//
// Scenario: single-file COMMITTED feed app.log; subscribers archive, slow
// (blocks on m- lines) and rm (blocks on late- lines). 40 a- lines
// (finished by all); logrotate: app.log renamed to app.log.1, a new
// app.log with 10 n- lines (finished by all: the barrier crossed); 5 late-
// lines written to app.log.1 through the old descriptor (downgraded; slow
// finishes them, rm does not); 10 m- lines appended to app.log (slow does
// not finish them). A reload removes rm and changes the path to link.log,
// a symlink to app.log. The new feed reads app.log from its start: slow is
// given the n- and m- lines again.
//
// Expected: slow given its 10 unfinished m- lines again, released 0 for
// it (rm's late lines are a hold, stalled, not released). Observed before the fix (3 of 3): slow
// given its 10 m- lines again, yet released 10, lossless false, losses.jsonl
// released 10 (stalled "removed subscriber rm holds 15 lines"), 3 of 3.
// Without "|| f.finalUnpositioned" in readAgainAt (before 683a28a) it
// passes: a regression of review 20b B's fix.
func TestRev20CCRemovedSubscribersLateLinesCountKeptOnesLinesReleased(t *testing.T) {
	dir := t.TempDir()
	rec := &recorder{}
	rmLine := "  - {name: rm, feed: app, type: discard}\n"
	e := startIn(t, dir, rev10KeptBase+slowLine+rmLine, Options{Processors: map[string]Build{
		"slow": builds(newPrefixGate(t, "m-").build, rec.build), "rm": newPrefixGate(t, "late-").build}})
	e.rotateWithLateLines(t, "slow", "rm")
	e.appendLines(numbered("m-", 0, 10)...)
	e.waitFor("the m- lines given", 10*time.Second, func(f status.FeedReport) bool {
		return sub(t, f, "slow").Position == 65 && sub(t, f, "archive").Dispatched == 65
	})
	time.Sleep(300 * time.Millisecond)
	if f := e.report().Feeds[0]; sub(t, f, "slow").Dispatched != 55 || sub(t, f, "rm").Dispatched != 50 {
		t.Fatalf("before the reload slow finished %d (want 55), rm %d (want 50)", sub(t, f, "slow").Dispatched, sub(t, f, "rm").Dispatched)
	}
	f := e.reloadToLink(t, strings.Replace(rev10KeptBase, "%DIR%/app.log", "%DIR%/link.log", 1)+slowLine, "reload (rm removed, path change to a symlink to the open file)", rec, 20)
	again := 0
	for _, l := range rec.got() {
		if strings.HasPrefix(l, "m-") {
			again++
		}
	}
	t.Logf("slow given %d m- lines again (%d in all); released %d lossless %v stalled %q; losses.jsonl released %d",
		again, len(rec.got()), f.Released, f.Lossless, stalledOf(f), ledgerAmount(t, dir, "released"))
	if again < 10 {
		t.Fatalf("slow given %d of its 10 unfinished m- lines again; the scenario expects the new path to read app.log from its start", again)
	}
	if f.Released != 0 || ledgerAmount(t, dir, "released") != 0 {
		t.Errorf("slow was given every one of its 10 unfinished m- lines again by the new path; rm (removed) holds its late lines: released %d, lossless %v, losses.jsonl released %d; want released 0 (nothing of slow's given up)",
			f.Released, f.Lossless, ledgerAmount(t, dir, "released"))
	}
}
