package file_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"tailfeed/source/file"
)

// DESIGN §10 "Order": the epoch barrier of §4 holds per path: a
// new file at a path is published after every line of the file previously
// at that path is acknowledged). The scheduler's barrierDone counts a
// closed stream as done; since closefix a stream is closed with lines
// unacknowledged (its drain gave up: an owed commit). A file then replaced
// at its path (deleted, recreated) is started at once and its lines are
// published while the old file's lines still wait for their
// acknowledgement.
func TestGlobPathBarrierWaitsForOwedClosedStream(t *testing.T) {
	r, a := closedOwing(t)
	defer r.stop()
	if r.pub.Pending() != 5 {
		t.Fatalf("pending %d, want 5", r.pub.Pending())
	}
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	writeLines(t, a, "c", 3) // another file at the same path
	time.Sleep(1500 * time.Millisecond)
	if n := r.count(); n > 5 {
		t.Errorf("%d lines taken while the 5 lines of the file previously at %s are unacknowledged (pending %d): the new file's lines were published past the per-path barrier",
			n, a, r.pub.Pending())
	}
	r.hold.Store(false)
	r.waitLines(8, 10*time.Second)
}

// closedOwing runs a glob rig over dir/*.log whose subscriber takes a.log's
// five lines without acknowledging them, and waits until a.log is closed
// for inactivity owing their commit (its drain gave up after 200 ms).
func closedOwing(t *testing.T) (r *globRig, a string) {
	t.Helper()
	t.Cleanup(file.SetStopDrainBound(200 * time.Millisecond))
	dir, data := t.TempDir(), t.TempDir()
	r = newGlobRig(t, dir, data, filepath.Join(dir, "*.log"), 16)
	r.hold.Store(true) // taken, not acknowledged
	a = filepath.Join(dir, "a.log")
	writeLines(t, a, "a", 5)
	r.waitLines(5, 10*time.Second)
	waitFor(t, "a.log closed (inactive) with its lines unacknowledged", 10*time.Second, func() bool {
		c := r.g.Counts()
		return c.Tracked == 1 && c.Open == 0
	})
	return r, a
}
