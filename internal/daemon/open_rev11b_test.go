//go:build openfindings

package daemon

// Open finding of the eleventh session's review 11b (issue 13 closing
// note): it fails on the product as it is, kept out of the default build
// until fixed (go test -tags openfindings ./internal/daemon -run TestRev11BC).
// What a subscriber was given and did not finish carries across reloads
// (a hold counts it) but not across a restart: a hold made after a
// restart whose re-read a full window cut short counts only what this
// run gave the subscriber again. The twelfth session persisted the owed
// counts at every clean stop (removed.json "owed") and reverted it: its
// review (12a) showed the count going stale or lost on every path it did
// not cover (a failed start, a feed added or removed by a reload, a
// truncation while stopped, a path spelled otherwise, lines re-given that
// the subscriber had finished) — overcounts where this one undercounts.

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"tailfeed/status"
)

// TestRev11BCHoldAfterARestartForgetsWhatEarlierRunsGave — DESIGN §12
// "Reload": a removed processor's unfinished lines keep holding — stalled
// "removed subscriber <name> holds N lines" — until released, "counted in
// released"; §7: released is a true count; the change's own rule (hold =
// this instance's unfinished + owed, lines earlier instances gave it).
//
// Scenario: run 1: slow (blocked) is given the 40 lines archive writes
// and finishes none. Reload 1 adds newbie (blocked) with a window of 8:
// the restarted instance re-reads 8 lines (slow owed 40). Clean stop
// (pointer at 0: slow and newbie finished nothing). Run 2, same config:
// the re-read from 0 stops at the window again (slow given 8). Reload 2
// removes slow. owed is not persisted (Feed.owed lives in memory only),
// so the hold counts 8.
//
// Expected: stalled "removed subscriber slow holds 40 lines" and the
// release counts 40 (slow finished none of the 40 lines it was given).
// Observed: holds 8 lines, released 8 — the same under-count TestRev11AA
// fixed for reloads, back after a clean restart in between; the other 32
// are given up uncounted (see the failure). 3 of 3 runs. Fails on
// 364c649 too (not a regression: a gap the change's owed leaves open).
func TestRev11BCHoldAfterARestartForgetsWhatEarlierRunsGave(t *testing.T) {
	dir := t.TempDir()
	const n = 40
	slowA, newbieA := newBlocker(), newBlocker()
	t.Cleanup(func() { close(slowA.open); close(newbieA.open) })
	e := slowGiven40(t, dir, slowA.build, map[string]Build{"newbie": newbieA.build}, "")
	e.reloadTo(rev10KeptSmall+slowLine+newbieLine, "reload 1")
	time.Sleep(time.Second) // the re-read stops at the window
	e.Stop()

	slowB, newbieB := newBlocker(), newBlocker()
	t.Cleanup(func() { close(slowB.open); close(newbieB.open) })
	e = startIn(t, dir, rev10KeptSmall+slowLine+newbieLine, Options{Processors: map[string]Build{"slow": slowB.build, "newbie": newbieB.build}})
	time.Sleep(time.Second)
	r := e.report().Feeds[0]
	t.Logf("run 2: sequence %d, slow position %d", r.Sequence, sub(t, r, "slow").Position)
	e.reloadTo(rev10KeptSmall+newbieLine, "reload 2 (remove slow)")
	f := e.waitFor("stalled by the hold", 10*time.Second, func(f status.FeedReport) bool { return f.Stalled != nil })
	t.Logf("stalled: %q", *f.Stalled)
	code, body := e.do(http.MethodPost, "/admin/release/app/slow", "sesame")
	t.Logf("release: %d %s", code, body)
	r = e.report().Feeds[0]
	e.Stop()
	if !strings.Contains(*f.Stalled, "holds 40 lines") || r.Released != n {
		t.Errorf("stalled %q, released %d; want \"holds 40 lines\" and released 40 (slow finished none of the 40 lines it was given)", *f.Stalled, r.Released)
	}
}
