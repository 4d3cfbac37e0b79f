// Review 15b, finding A: found and fixed in the fifteenth session
// (preempt leaves a gone stream open until it has been quiet for
// rotateWaitMillis; housekeeping then closes it and lets its pointer go).

// Review 15b, finding A (c879b1a: caughtUpOut requires the stream quiet for
// rotateWaitMillis).

package file

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"tailfeed/pointer"
)

// Scenario: maxOpenFiles 1, rotateWaitMillis 1 s, closeInactive 5 s.
// w.log is read, acknowledged and committed; logrotate (olddir) moves it
// out of the glob to another directory. The scan sees w.log gone; its
// stream stays open (caught up) to read it where it went. a.log gets a
// line and wants the only slot: preempt stops the gone stream at once,
// well within rotateWait of its last growth, so caughtUpOut now says "not
// quiet" and the pointer is kept. Nothing looks at that decision again:
// the moved file then stays quiet for many rotateWaits (nobody writes to
// it), yet its pointer keeps naming it until forgetAfterMillis (24 h by
// default) — it is never "let go" once rotateWait has passed. The daemon
// is stopped cleanly, logrotate deletes the old file (every line of it was
// delivered and committed long before), and the restart counts it as a
// lost tail: lostTails 1, feed lossy, for a file nothing was lost from.
// DESIGN §4 "A file that was read to its end, committed and then deleted
// is not a lost tail: once such a file is closed with every line
// acknowledged, the pointer records that nothing of it is pending ... and
// a restart that cannot find it loses nothing"; §10 "A file renamed out of
// the glob is read to its end (rotateWaitMillis after its last growth),
// then closed".
// Observed: fails 5 of 5 at 3a17f1e (lostTails 1 at the restart; the
// pointer still names w.log 4 s after its stream closed). 1 of 1 passes at
// 161680f. At a9dcbba it fails too (1 of 1) (caughtUpOut did not exist; the pointer was always
// kept: review 13b D); at 57e01b4/b455982 (caughtUpOut without the
// rotateWait condition) the pointer was let go. So c879b1a brings 13b D
// back for every stream preempted within rotateWait of its last growth.
func TestRev15BAPreemptedGoneStreamPointerNeverLetGoAfterRotateWait(t *testing.T) {
	t.Parallel()
	dir, other, data := t.TempDir(), t.TempDir(), t.TempDir()
	pattern := filepath.Join(dir, "*.log")
	a, w := filepath.Join(dir, "a.log"), filepath.Join(dir, "w.log")
	if err := os.WriteFile(a, []byte(numbered("a", 2)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w, []byte(numbered("w", 3)), 0o600); err != nil {
		t.Fatal(err)
	}
	ig, stop := runGlobWith(t, pattern, data, 2*time.Second, func(c *GlobConfig) {
		c.MaxOpenFiles = 1
		c.CloseInactive = 5 * time.Second
		c.Stream.RotateWait = time.Second
	}, nil)
	if got := ig.popAll(time.Second); got != 5 {
		t.Fatalf("delivered %d lines, want 5", got)
	}
	var s *gstream
	ig.waitFor(t, "w.log's stream open, committed", func() bool {
		s = ig.g.byPath[w]
		return s != nil && s.st == stOpen && s.src.CommitOK() && s.sp.Pending() == 0
	})
	key := s.key
	moved := filepath.Join(other, "w.log")
	if err := os.Rename(w, moved); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the scan saw w.log gone", func() bool { return s.gone })
	appendTo(t, a, "a-late\n") // a.log wants the slot
	ig.waitFor(t, "the gone stream closed", func() bool { return s.st == stClosed && s.owe == nil })
	// The moved file stays quiet for 4 rotateWaits: read to its end,
	// committed, closed, nothing pending.
	got := ig.popLines(4 * time.Second)
	ig.g.mu.Lock()
	ptr := s.ptrPath
	ig.g.mu.Unlock()
	names := false
	if ptr != "" {
		if rec, err := pointer.Inspect(ptr); err == nil && rec.FileKey == key {
			names = true
		}
	}
	tails, _, _ := ig.lost()
	t.Logf("running: lines %v; pointer %s names w.log: %v; lostTails %d", got, filepath.Base(ptr), names, tails)
	stop()
	if err := os.Remove(moved); err != nil { // logrotate's next run deletes it
		t.Fatal(err)
	}
	ig2, _, stop2 := runGlobOn(t, pattern, data)
	lines2 := ig2.popLines(2 * time.Second)
	tails2, bytes2, detail2 := ig2.lost()
	stop2()
	if tails+tails2 != 0 {
		t.Errorf("w.log moved out of the glob, read to its end, committed, quiet for 4 s (rotateWaitMillis 1 s) before a clean stop, deleted while stopped: the restart counts lostTails %d lostBytes %d (%q), lines %v; want nothing lost (its stream was preempted within rotateWait, and the pointer kept then was never let go: still naming it after 4 rotateWaits: %v)",
			tails+tails2, bytes2, detail2, lines2, names)
	}
}
