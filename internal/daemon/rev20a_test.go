package daemon

// Review 20a (the twentieth session's change: readAgainAt asks a glob for
// the epoch of its stream of the new path's file, Glob.EpochOf).

import (
	"os"
	"path/filepath"
	"strings"
	"tailfeed/status"
	"testing"
	"time"
)

// TestRev20AAGlobPathChangeAfterACopytruncateGivesUpUncounted — DESIGN §7
// "lossless: … released … are 0" only when nothing was given up; §12 a
// path change gives up (released) what a kept subscriber did not finish,
// unless the new path reads it all again. The glob twin of review 12c C
// (TestRev12CCPathChangeAfterACopytruncateGivesUpUncounted), which the
// single-file feed passes because its source's open file is the copy.
//
// Scenario: glob feed app*.log matching one file, app.log; slow (blocked)
// is given its 40 a- lines and finishes none. logrotate's copytruncate:
// app.log copied to app.log.1 (not matched by app*.log), app.log truncated
// in place (same inode) and 60 n- lines (longer than the 40 a- lines)
// written to it. The glob's stream reads the copy, then waits at the
// epoch barrier for slow: its epoch is still the a- lines'. A reload
// changes the path to app.log. readAgainAt: EpochOf(app.log's key) is the
// a- lines' epoch, app.log is at least as long as what was published
// under it — "read again" — but app.log now holds only the n- lines: the
// new feed (a new pointer, from 0) gives slow the n- lines, never the a-.
//
// Expected: slow given the 40 a- lines again, or released 40, lossless
// false, losses.jsonl released 40. Observed before the fix: see the review 20a note (3 of 3 failed).
func TestRev20AAGlobPathChangeAfterACopytruncateGivesUpUncounted(t *testing.T) {
	dir := t.TempDir()
	rec := &recorder{}
	e := globSlowGiven40(t, dir, "", rec)
	in := e.input
	b, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "app.log.1"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(in, 0); err != nil {
		t.Fatal(err)
	}
	e.appendLines(numbered("n-", 0, 60)...)
	time.Sleep(time.Second) // the glob's stream sees the copytruncate
	e.reloadTo(rev10KeptBase+slowLine, "reload (glob to its copytruncated file)")
	f := e.waitFor("the new path settled", 10*time.Second, func(f status.FeedReport) bool {
		return strings.HasSuffix(f.Path, "app.log") && f.Settled && len(rec.got()) >= 60
	})
	e.Stop()
	wantGivenAgainOrReleased(t, dir, f, rec.got(), "a-", 40, "the lines now in the copy app.log.1 only")
}

// TestRev20ABGlobPathChangeAfterATruncationGivesUpUncounted — the same
// with a plain truncation (no copy: the a- lines are gone from the disk,
// the glob's stream read them all, so nothing is lost at the truncation
// itself): slow's 40 unfinished lines can be given by nobody.
func TestRev20ABGlobPathChangeAfterATruncationGivesUpUncounted(t *testing.T) {
	dir := t.TempDir()
	rec := &recorder{}
	e := globSlowGiven40(t, dir, "", rec)
	in := e.input
	if err := os.Truncate(in, 0); err != nil {
		t.Fatal(err)
	}
	e.appendLines(numbered("n-", 0, 60)...)
	time.Sleep(time.Second) // the glob's stream sees the truncation
	e.reloadTo(rev10KeptBase+slowLine, "reload (glob to its truncated file)")
	f := e.waitFor("the new path settled", 10*time.Second, func(f status.FeedReport) bool {
		return strings.HasSuffix(f.Path, "app.log") && f.Settled && len(rec.got()) >= 60
	})
	e.Stop()
	wantGivenAgainOrReleased(t, dir, f, rec.got(), "a-", 40, "truncated away")
}

// TestRev20ACPathChangeAfterATruncationInPlaceGivesUpUncounted — the
// single-file twin of B (not a regression of this change: readAgainAt's
// single-file branch has it since review 12c). app.log truncated in place
// and regrown past what was published of it, seen by the source (it reads
// app.log from its start under a new epoch, waiting at the barrier for
// slow); a reload changes the path to link.log, a symlink to app.log.
// FileIdentity is app.log's inode (truncated in place: the same),
// src.Epoch() the a- lines' epoch, app.log long enough: "read again" —
// but the a- lines are on no disk any more.
//
// Expected: released 40, lossless false. Observed before the fix: see the review 20a note (3 of 3 failed).
func TestRev20ACPathChangeAfterATruncationInPlaceGivesUpUncounted(t *testing.T) {
	dir := t.TempDir()
	rec := &recorder{}
	e := slowGiven40(t, dir, builds(blocked(t), rec.build), nil, "")
	in := filepath.Join(dir, "app.log")
	if err := os.Truncate(in, 0); err != nil {
		t.Fatal(err)
	}
	e.appendLines(numbered("n-", 0, 60)...)
	time.Sleep(time.Second) // the source sees the truncation
	if err := os.Symlink(in, filepath.Join(dir, "link.log")); err != nil {
		t.Fatal(err)
	}
	e.reloadTo(strings.Replace(rev10KeptBase, "%DIR%/app.log", "%DIR%/link.log", 1)+slowLine, "reload (path change to a symlink to the truncated file)")
	f := e.waitFor("the new path settled", 10*time.Second, func(f status.FeedReport) bool {
		return strings.HasSuffix(f.Path, "link.log") && f.Settled && len(rec.got()) >= 60
	})
	e.Stop()
	wantGivenAgainOrReleased(t, dir, f, rec.got(), "a-", 40, "truncated away")
}
