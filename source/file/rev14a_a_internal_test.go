// Review 14a, finding A: found and fixed in the fourteenth session.

package file

import (
	"os"
	"testing"
	"time"
)

// A previous rotation left w.log.1 (not matched by *.log) beside the path,
// written shortly before tailfeed started. The empty w.log at the start is
// given a pointer naming its key with nothing committed (offset 0, no
// first bytes). Killed so; while tailfeed is down the application writes
// 3 lines into w.log, which is then deleted (an operator's rm, or
// logrotate "rotate 0") and a new w.log (another inode) put at the path
// with 2 lines. w.log's 3 lines are
// gone: DESIGN §4 "A pointer's unread tail that cannot be found (deleted
// …) is WARNed … and counted in lostTails (lossless false)", §7 "Nothing
// green over a loss". Before the change the pointer went to countGone:
// lostTails 1. Now adoptByPath gives it to the new w.log; resumeRotated
// does not find the file by its key, takes the "deferLost" path (read the
// generations beside the path as for an unnamed record; a lost tail only
// when there is none) and finds w.log.1 — an older, unrelated generation
// (another key, a plain file, born before the pointer's file) whose mtime
// is within the 2 s reference slack of the pointer file's mtime. It reads
// w.log.1 again under a new epoch (its lines delivered a second time) and
// counts nothing: lostTails 0, lossless true, 3 lines lost silently.
// Observed: lostTails 0, w.log.1's 2 lines re-read; 3 of 3 runs. At the
// commit before the change (7921d24) this test passes (lostTails 1).
func TestRev14AEmptyPointerFileDeletedWithOlderGenerationBesideIsSilentLoss(t *testing.T) {
	t.Parallel()
	pattern, data, w, _, _ := emptyFileKilled(t, numbered("older", 2))
	appendTo(t, w, numbered("first", 3))
	// The new w.log made before the old one is deleted: another inode (no
	// inode reuse here).
	if err := os.WriteFile(w+".new", []byte(numbered("second", 2)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(w); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(w+".new", w); err != nil {
		t.Fatal(err)
	}
	ig2, _, _ := runGlobOn(t, pattern, data)
	lines, _ := ig2.popEpochs(3*time.Second, true)
	tails, bytes, detail := ig2.lost()
	if tails != 1 {
		t.Errorf("restart: delivered %q; lostTails %d lostBytes %d (%q), want lostTails 1: w.log's 3 lines (written while down, then deleted) are gone and must be counted", lines, tails, bytes, detail)
	}
}
