package daemon

// Finding E of the twelfth session's review 12c (parked until the
// twentieth session): a glob feed's path changed to its only file's own
// path counted the lines a subscriber had not finished released although
// the new feed gives them all again (an overcount: lossless false without
// a loss). readAgainAt asks the glob for the epoch its stream of that file
// read it under (Glob.EpochOf) as it asks a single-file source.

import (
	"os"
	"path/filepath"
	"strings"
	"tailfeed/status"
	"testing"
	"time"
)

// TestRev12CEGlobToItsOnlyFileCountsReDeliveredLines — as B: DESIGN §7
// "lossless: … released … are 0"; §12 the new path "starts as a new feed
// under its readStrategy" (COMMITTED, a new pointer: from 0).
//
// Scenario: a glob feed app*.log matching one file, app.log; slow
// (blocked) is given its 40 lines and finishes none. A reload changes the
// path to app.log itself (COMMITTED). committedAt answers false for any
// glob, so the 40 lines are counted released — and the new feed reads
// app.log from 0, giving slow (now working) all 40 again.
//
// Expected: released 0, lossless true (every line was given again).
// Observed before the fix: released 40, lossless false, losses.jsonl
// released 40 — a loss counted for lines re-delivered. 3 of 3 runs. Not a regression
// (sameFileAt answered false for a glob too); lower severity than B: a
// glob matching several files gives up the other files' lines for real,
// but counts n per processor, not per file.
func TestRev12CEGlobToItsOnlyFileCountsReDeliveredLines(t *testing.T) {
	dir := t.TempDir()
	rec := &recorder{}
	e := globSlowGiven40(t, dir, "", rec)
	e.reloadTo(rev10KeptBase+slowLine, "reload (glob to its only file)")
	f := e.waitFor("slow given the 40 lines again", 10*time.Second, func(f status.FeedReport) bool {
		return strings.HasSuffix(f.Path, "app.log") && f.Settled && len(rec.got()) >= 40
	})
	e.Stop()
	if len(rec.got()) >= 40 && (f.Released != 0 || !f.Lossless || ledgerAmount(t, dir, "released") != 0) {
		t.Errorf("slow was given all %d lines again by the new path (the glob's only file, read from 0), yet released %d, lossless %v, losses.jsonl released %d; want 0, true, 0",
			len(rec.got()), f.Released, f.Lossless, ledgerAmount(t, dir, "released"))
	}
}

// The glob matched two files and slow finished neither: a path change to
// one of them gives it that file's lines again, the other's never — a
// loss, counted (released: the processor's unfinished lines, as a path
// change to another file counts them; never 0, never lossless).
func TestGlobToOneOfItsFilesCountsTheOthersLines(t *testing.T) {
	dir := t.TempDir()
	writeNumbered(t, filepath.Join(dir, "app.log"), "a-", 40)
	writeNumbered(t, filepath.Join(dir, "app2.log"), "b-", 40)
	glob := strings.Replace(rev10KeptBase, "%DIR%/app.log", "%DIR%/app*.log", 1)
	rec := &recorder{}
	e := startIn(t, dir, glob+slowLine, Options{Processors: map[string]Build{"slow": builds(blocked(t), rec.build)}})
	e.waitFor("archive done, slow given 80", 20*time.Second, func(f status.FeedReport) bool {
		return sub(t, f, "archive").Dispatched == 80 && sub(t, f, "slow").Position == 80
	})
	e.reloadTo(rev10KeptBase+slowLine, "reload (glob to one of its files)")
	f := e.waitFor("slow given app.log again", 10*time.Second, func(f status.FeedReport) bool {
		return strings.HasSuffix(f.Path, "app.log") && f.Settled && len(rec.got()) >= 40
	})
	e.Stop()
	if f.Released < 40 || f.Lossless || ledgerAmount(t, dir, "released") < 40 {
		t.Errorf("slow never given app2.log's 40 lines again, yet released %d, lossless %v, losses.jsonl released %d; want ≥ 40, false, ≥ 40",
			f.Released, f.Lossless, ledgerAmount(t, dir, "released"))
	}
}

// The glob's only file was cut right before the path change (shorter than
// what was published of it, seen by the glob or not): the new path's read
// from its start gives the lines slow did not finish no more — counted
// released.
func TestGlobToItsOnlyFileCutShorterCountsReleased(t *testing.T) {
	dir := t.TempDir()
	writeNumbered(t, filepath.Join(dir, "app.log"), "a-", 40)
	glob := strings.Replace(rev10KeptBase, "%DIR%/app.log", "%DIR%/app*.log", 1)
	e := startIn(t, dir, glob+slowLine, Options{Processors: map[string]Build{"slow": builds(blocked(t), (&recorder{}).build)}})
	e.waitFor("archive done, slow given 40", 20*time.Second, func(f status.FeedReport) bool {
		return sub(t, f, "archive").Dispatched == 40 && sub(t, f, "slow").Position == 40
	})
	if err := os.Truncate(filepath.Join(dir, "app.log"), 0); err != nil {
		t.Fatal(err)
	}
	e.reloadTo(rev10KeptBase+slowLine, "reload (glob to its cut file)")
	f := e.waitFor("the new path read", 10*time.Second, func(f status.FeedReport) bool {
		return strings.HasSuffix(f.Path, "app.log") && f.State == "CAUGHT_UP"
	})
	e.Stop()
	if f.Released != 40 || f.Lossless {
		t.Errorf("app.log cut to 0 bytes before the path change: released %d, lossless %v; want 40, false", f.Released, f.Lossless)
	}
}

// globSlowGiven40 starts a glob feed app*.log (settings: extra feed keys
// added to its line, "" for none) over an empty app.log with slow blocked
// (rec takes its later builds), writes 40 a- lines and returns once
// archive finished them and slow was given them.
func globSlowGiven40(t *testing.T, dir, settings string, rec *recorder) *env {
	t.Helper()
	in := filepath.Join(dir, "app.log")
	if err := os.WriteFile(in, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	glob := strings.Replace(rev10KeptBase, "%DIR%/app.log", "%DIR%/app*.log", 1)
	if settings != "" {
		glob = strings.Replace(glob, "queueCapacity: 64}", "queueCapacity: 64, "+settings+"}", 1)
	}
	e := startIn(t, dir, glob+slowLine, Options{Processors: map[string]Build{"slow": builds(blocked(t), rec.build)}})
	e.input = in
	e.appendLines(numbered("a-", 0, 40)...)
	e.waitFor("archive done, slow given 40", 20*time.Second, func(f status.FeedReport) bool {
		return sub(t, f, "archive").Dispatched == 40 && sub(t, f, "slow").Position == 40
	})
	return e
}
