package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tailfeed/status"
)

// A reload that changes a feed's path starts the new path as a new feed
// (DESIGN §12); the lines of the old file a pointer-holding subscriber was
// given and did not finish are never given to it again. They were skipped
// for it, so the feed is not lossless (§4 "Nothing green over a loss"):
// counted in `released` (given up by the operator's change, as a release
// gives up a hold's lines) and in losses.jsonl, before the old pointer
// moves aside.
func TestPathChangeCountsWhatASubscriberDidNotFinish(t *testing.T) {
	dir := t.TempDir()
	rec := &recorder{}
	e := slowGiven40(t, dir, builds(blocked(t), rec.build), nil, "")
	writeNumbered(t, filepath.Join(dir, "app2.log"), "n-", 5)
	moved := strings.Replace(rev10KeptBase, "%DIR%/app.log", "%DIR%/app2.log", 1)
	e.reloadTo(moved+slowLine, "reload (path change)")
	f := e.waitFor("slow finished app2.log", 10*time.Second, func(f status.FeedReport) bool {
		return strings.HasSuffix(f.Path, "app2.log") && f.Settled && len(rec.got()) == 5
	})
	e.Stop()
	if f.Released != 40 || f.Lossless {
		t.Errorf("after a path change gave up the 40 lines of app.log slow was given and did not finish: released %d, lossless %v; want 40, false", f.Released, f.Lossless)
	}
	if got := ledgerAmount(t, dir, "released"); got != 40 {
		t.Errorf("losses.jsonl: %d released lines, want 40", got)
	}
}

// A glob feed whose path changes to another glob keeps its per-file
// pointers (README "Reload"): the lines of a file still matched that a
// subscriber was given and did not finish are read again from its
// pointer, never given up — nothing counted released.
func TestGlobPathChangeReReadsWhatASubscriberDidNotFinish(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	if err := os.MkdirAll(in, 0o755); err != nil {
		t.Fatal(err)
	}
	writeNumbered(t, filepath.Join(in, "a.log"), "a-", 40)
	base := strings.Replace(rev10KeptBase, "path: %DIR%/app.log", `path: "%DIR%/in/*.log"`, 1)
	rec := &recorder{}
	e := startIn(t, dir, base+slowLine, Options{Processors: map[string]Build{"slow": builds(blocked(t), rec.build)}})
	e.waitFor("archive done, slow given 40", 20*time.Second, func(f status.FeedReport) bool {
		return sub(t, f, "archive").Dispatched == 40 && sub(t, f, "slow").Position == 40
	})
	e.reloadTo(strings.Replace(base, "/in/*.log", "/in/a*.log", 1)+slowLine, "reload (glob path change)")
	f := e.waitFor("slow given a.log again", 10*time.Second, func(f status.FeedReport) bool {
		return f.Settled && len(rec.got()) == 40
	})
	e.Stop()
	if f.Released != 0 || !f.Lossless {
		t.Errorf("a glob path change that still matches a.log: released %d, lossless %v; want 0, true (its lines are read again from its pointer)", f.Released, f.Lossless)
	}
}

// Review 12a (fixed in the same session: a path naming the same file is no
// change of file, sameFileAt).
// TestRev12ACPathChangeToTheSameFileCountsReleased — DESIGN §7 "lossless:
// … released … are 0"; §4 "Nothing green over a loss" and its converse
// (lossless false only over a loss); the change (README "Reload"): "The
// lines of the old file a subscriber kept by the reload was given and had
// not finished are never given to it again: they are given up, counted in
// released".
//
// Scenario: slow (blocked) is given 40 lines of app.log and finishes none.
// A reload changes the feed's path to link.log, a symlink to app.log (the
// same file; DESIGN §4 resolves symlinks at every check). The new path is
// a new feed from 0 (COMMITTED, no pointer): slow, open now, is given and
// finishes all 40 lines again.
//
// Expected: released 0, lossless true (no line was skipped for slow).
// Observed: released 40, losses.jsonl released 40, lossless false — the
// count is made from the old instance's finalOwed without looking at what
// the new path re-reads. 3 of 3 runs.
func TestRev12ACPathChangeToTheSameFileCountsReleased(t *testing.T) {
	dir := t.TempDir()
	rec := &recorder{}
	e := slowGiven40(t, dir, builds(blocked(t), rec.build), nil, "")
	if err := os.Symlink(filepath.Join(dir, "app.log"), filepath.Join(dir, "link.log")); err != nil {
		t.Fatal(err)
	}
	moved := strings.Replace(rev10KeptBase, "%DIR%/app.log", "%DIR%/link.log", 1)
	e.reloadTo(moved+slowLine, "reload (path change to a symlink to the same file)")
	f := e.waitFor("slow finished the 40 lines through link.log", 10*time.Second, func(f status.FeedReport) bool {
		return strings.HasSuffix(f.Path, "link.log") && f.Settled && len(rec.got()) == 40
	})
	e.Stop()
	if f.Released != 0 || !f.Lossless {
		t.Errorf("slow was given and finished every one of the 40 lines again through link.log: released %d, lossless %v; want 0, true (ledger released %d)",
			f.Released, f.Lossless, ledgerAmount(t, dir, "released"))
	}
}

// writeNumbered writes n numbered lines (prefix) to path, replacing it.
func writeNumbered(t *testing.T, path, prefix string, n int) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(numbered(prefix, 0, n), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// wantGivenAgainOrReleased fails t unless a subscriber that had not
// finished n lines (prefix; what names them) before a path change was given
// them all again (got) or they are counted: released n in the report f and
// in losses.jsonl, lossless false.
func wantGivenAgainOrReleased(t *testing.T, dir string, f status.FeedReport, got []string, prefix string, n int, what string) {
	t.Helper()
	again := 0
	for _, l := range got {
		if strings.HasPrefix(l, prefix) {
			again++
		}
	}
	if again >= n {
		return
	}
	if led := ledgerAmount(t, dir, "released"); f.Released != uint64(n) || f.Lossless || led != uint64(n) {
		t.Errorf("slow was given %d of the %d lines (%s) again (%d lines in all: %q…); released %d, lossless %v, losses.jsonl released %d; want them counted released, lossless false",
			again, n, what, len(got), got[:min(3, len(got))], f.Released, f.Lossless, led)
	}
}
