package file

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A live rotation (w.log → w.log.1 beside the glob, a new, empty w.log)
// after w.log was read and committed; the old file's stream reads w.log.1
// to its end and closes; the new w.log has no pointer yet (nothing to read).
// The daemon dies (no final commit). While it is down the application
// writes 3 lines to w.log and logrotate rotates again (w.log.1 → w.log.2,
// w.log → w.log.1, a new w.log with 2 lines). Every file is on disk: the
// restart must deliver the 5 new lines, or count what it cannot. Before,
// the old file's pointer was reset to the empty record when its stream
// closed beside the path (forgetClosed), the empty successor had none, and
// nothing at the restart named w.log.1: its 3 lines were never read and
// never counted (audit 7 D: lossless true, an empty ledger; DESIGN §4
// "Restart after rotation: every generation still on disk … read every later
// generation", §7 "lossless is true only while tailfeed can show that no
// line was skipped").
func TestGlobEmptySuccessorRotatedWhileDownIsRead(t *testing.T) {
	t.Parallel()
	// open: the old file's stream still open at the rotation (its source
	// follows the rename, reads the file to its end and lets it go:
	// WaitingForFile); closed: closed as inactive before it (the scan finds
	// the file beside its path, a turn reads it there).
	for _, open := range []bool{false, true} {
		t.Run(map[bool]string{false: "closed", true: "open"}[open], func(t *testing.T) { emptySuccessorRotatedWhileDown(t, open) })
	}
}

func emptySuccessorRotatedWhileDown(t *testing.T, open bool) {
	dir, data := t.TempDir(), t.TempDir()
	pattern := filepath.Join(dir, "*.log")
	w := filepath.Join(dir, "w.log")
	if err := os.WriteFile(w, []byte(numbered("first", 2)), 0o600); err != nil {
		t.Fatal(err)
	}
	inactive := 50 * time.Millisecond
	if open {
		inactive = time.Hour
	}
	ig, stopRun := runGlobKillable(t, pattern, data, func(c *GlobConfig) { c.CloseInactive = inactive })
	if got := ig.popAll(time.Second); got != 2 {
		t.Fatalf("first run delivered %d lines, want 2", got)
	}
	var old *gstream
	ig.waitFor(t, "w.log's stream read, committed", func() bool {
		old = ig.g.byPath[w]
		if open {
			return old != nil && old.st == stOpen && old.src.CommitOK() && old.sp.Pending() == 0
		}
		return old != nil && old.st == stClosed && old.owe == nil
	})
	// Live rotation: the new w.log is empty.
	if err := os.Rename(w, w+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the old stream read w.log.1 to its end and closed; the empty w.log tracked", func() bool {
		n := ig.g.byPath[w]
		return old.gone && old.st == stClosed && n != nil && n != old && n.empty
	})
	time.Sleep(300 * time.Millisecond) // housekeeping after the close
	stopRun()                          // killed: no drain, no final commit
	// Down: written to, rotated again.
	appendTo(t, w, numbered("second", 3))
	if err := os.Rename(w+".1", w+".2"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(w, w+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w, []byte(numbered("third", 2)), 0o600); err != nil {
		t.Fatal(err)
	}
	ig2, _, _ := runGlobOn(t, pattern, data)
	got := ig2.popAll(3 * time.Second)
	tails, bytes, detail := ig2.lost()
	if got != 5 && tails == 0 {
		t.Errorf("restart: %d lines delivered, want 5 (w.log.1's 3, written into the empty w.log while down, and the new w.log's 2); none counted lost (lostTails %d, lostBytes %d, %q)", got, tails, bytes, detail)
	}
	if got != 5 {
		t.Errorf("restart: %d lines delivered, want 5; lostTails %d (%q)", got, tails, detail)
	}
}

// The kept pointer of the test above is forgotten once the new file's own
// pointer holds a commit: the rotated file (w.log.1) deleted later while
// tailfeed is stopped is then not counted "gone while stopped" (a false
// lostTails for a file read to its end).
func TestGlobEmptySuccessorKeptPointerForgottenOnceItCommits(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	pattern := filepath.Join(dir, "*.log")
	w := filepath.Join(dir, "w.log")
	if err := os.WriteFile(w, []byte(numbered("first", 2)), 0o600); err != nil {
		t.Fatal(err)
	}
	ig, _, stop := runGlobOn(t, pattern, data)
	if got := ig.popAll(time.Second); got != 2 {
		t.Fatalf("first run delivered %d lines, want 2", got)
	}
	var old *gstream
	ig.waitFor(t, "w.log's stream closed, committed", func() bool {
		old = ig.g.byPath[w]
		return old != nil && old.st == stClosed && old.owe == nil
	})
	oldPtr := old.ptrPath
	if err := os.Rename(w, w+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the old stream read w.log.1 to its end and closed, kept", func() bool {
		return old.gone && old.st == stClosed && old.held
	})
	appendTo(t, w, numbered("second", 3))
	if got := ig.popAll(2 * time.Second); got != 3 {
		t.Errorf("the new w.log's lines delivered: %d, want 3", got)
	}
	ig.waitFor(t, "the kept pointer forgotten", func() bool { return !old.held })
	stop()
	if err := os.Remove(w + ".1"); err != nil {
		t.Fatal(err)
	}
	ig2, _, _ := runGlobOn(t, pattern, data)
	got := ig2.popAll(time.Second)
	tails, bytes, detail := ig2.lost()
	if got != 0 || tails != 0 || bytes != 0 {
		t.Errorf("restart after w.log.1 (read to its end) was deleted while stopped: %d lines delivered, lostTails %d lostBytes %d (%q); want nothing (old pointer %s)", got, tails, bytes, detail, oldPtr)
	}
}

// runGlobKillable runs a glob as runGlobOn does (closeInactive 50 ms, a
// 300 ms drain bound), set changing its config; kill ends its Run without
// the drain and the final commit.
func runGlobKillable(t *testing.T, pattern, data string, set func(*GlobConfig)) (ig *internalGlob, kill func()) {
	t.Helper()
	ig, kill, _ = runGlobKill(t, pattern, data, 5*time.Second, func(c *GlobConfig) {
		c.CloseInactive = 50 * time.Millisecond
		set(c)
	}, func(g *Glob) { g.drainBound = 300 * time.Millisecond })
	return ig, kill
}
