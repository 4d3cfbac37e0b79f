//go:build openfindings

package daemon

// Open finding of the eleventh session's review 11a (issue 13 closing
// note): it fails on the product as it is, kept out of the default build
// until fixed (go test -tags openfindings ./internal/daemon -run TestRev11AA).
// A hold made by a reload counts only the lines the instance it stops was
// given again (its re-read), not those an earlier instance gave the
// subscriber that this one had not re-read yet: stalled and released
// understate what is given up (the lines themselves are not lost: the
// subscriber, added back, receives them).

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"tailfeed/status"
)

// TestRev11AAHoldCountsOnlyTheReReadLines — DESIGN §12 "Reload": "A
// removed processor … what it did not finish keeps holding the pointer —
// the feed reports `stalled` (`removed subscriber <name> holds N lines`)
// until POST /admin/release … gives it up (counted in `released`)"; §5
// "Holds": the backlog given up is counted in released; §7: lossless and
// released are true counts.
//
// Scenario: slow (blocked) is given 40 lines and finishes none (archive
// writes them). Reload 1 changes the feed (window of 8) so it restarts
// from its pointer (0): the restarted instance re-reads only the first
// few lines before the window fills (slow, still blocked, was given at
// most 8 of them). Reload 2 removes slow: it did not finish 40 lines.
// stopFeed makes the hold of q.Position()-q.AckPoint() of the instance
// in between only — the change now gives the hold's Throughs every line
// the earlier instances published (publishedMarks: line 40), but its
// Lines still count only this instance's re-read.
//
// Expected: stalled "removed subscriber slow holds 40 lines", and the
// release reports and counts 40 released lines (slow gave up 40).
// Observed: see the failure (the hold counts the re-read's few lines;
// released counts the same few, while the 40 lines are given up: a
// status field that lies, understating the loss).
func TestRev11AAHoldCountsOnlyTheReReadLines(t *testing.T) {
	dir := t.TempDir()
	const n = 40
	slow := newBlocker()
	t.Cleanup(func() { close(slow.open) })
	e := startIn(t, dir, rev10KeptBase+"  - {name: slow, feed: app, type: discard}\n", Options{Processors: map[string]Build{"slow": slow.build}})
	e.appendLines(numbered("a-", 0, n)...)
	e.waitFor("archive done, slow given 40", 20*time.Second, func(f status.FeedReport) bool {
		return sub(t, f, "archive").Dispatched == n && sub(t, f, "slow").Position == n
	})
	e.rewrite(rev10KeptSmall + "  - {name: slow, feed: app, type: discard}\n")
	if code, body := e.reload(); code != http.StatusOK {
		t.Fatalf("reload 1: %d %s", code, body)
	}
	time.Sleep(time.Second) // the re-read stops at the window
	e.rewrite(rev10KeptSmall)
	if code, body := e.reload(); code != http.StatusOK {
		t.Fatalf("reload 2: %d %s", code, body)
	}
	f := e.waitFor("stalled by the hold", 10*time.Second, func(f status.FeedReport) bool { return f.Stalled != nil })
	t.Logf("stalled: %q", *f.Stalled)
	if !strings.Contains(*f.Stalled, "holds 40 lines") {
		t.Errorf("stalled = %q, want \"removed subscriber slow holds 40 lines\" (slow finished none of the 40 lines it was given)", *f.Stalled)
	}
	code, body := e.do(http.MethodPost, "/admin/release/app/slow", "sesame")
	var rr status.ReleaseResult
	json.Unmarshal(body, &rr)
	t.Logf("release: %d %s", code, body)
	r := e.report()
	t.Logf("released %d, lossless %v", r.Feeds[0].Released, r.Feeds[0].Lossless)
	if rr.Released != n || r.Feeds[0].Released != n {
		t.Errorf("release gave up %d lines, feed.status released %d; want %d each (slow finished none of the 40 lines, all given up)", rr.Released, r.Feeds[0].Released, n)
	}
	e.Stop()
	checkOnce(t, dir, n)
}
