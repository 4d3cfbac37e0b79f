package file_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"tailfeed/source/file"
)

// Rotated while stopped to an empty new file, the old one last written a
// minute ago: the writer finished with it long before this open, so the
// source goes on to the new file at once instead of waiting rotateWait
// from its own open. Counted from the open, a glob stream started again
// for each turn (preempted within rotateWait, two such streams sharing one
// slot) never switched to its empty file and the feed never settled
// (audit 7 C, eighteenth session).
func TestRotatedWhileStoppedEmptyNewFileSwitchedOnceOldFileQuiet(t *testing.T) {
	t.Parallel()
	r2 := restartAfterRotationToEmpty(t, time.Minute)
	r2.waitFor("the switch to the empty new file", 5*time.Second, func() bool {
		return strings.Contains(r2.logs.String(), "switching to the next file")
	})
	appendTo(t, r2.path, numbered("b", 0, 2)...)
	gs := r2.waitLines(2)
	if got := lines(gs); strings.Join(got, ",") != "b-00000,b-00001" {
		t.Fatalf("after the restart: %q, want the new file's 2 lines only", got)
	}
}

// The old file written just before the restart: the writer may still be
// finishing with it, so the empty new file waits rotateWait from that
// write (not switched at once).
func TestRotatedWhileStoppedEmptyNewFileWaitsWhileOldFileFresh(t *testing.T) {
	t.Parallel()
	r2 := restartAfterRotationToEmpty(t, 0)
	r2.waitFor("the new file queued", 5*time.Second, func() bool {
		return strings.Contains(r2.logs.String(), "queued behind the open one")
	})
	time.Sleep(time.Second)
	if strings.Contains(r2.logs.String(), "switching to the next file") {
		t.Fatal("switched to the empty new file while the rotated one was written less than rotateWait ago")
	}
}

// restartAfterRotationToEmpty reads three lines (rotateWait 10 s), stops,
// dates the file quietFor back (0: left as written), renames it to .1,
// creates an empty file at the path and starts again.
func restartAfterRotationToEmpty(t *testing.T, quietFor time.Duration) *rig {
	t.Helper()
	opts := rigOpts{strategy: file.Committed, rotateWait: 10 * time.Second}
	r := newRig(t, "", opts)
	appendTo(t, r.path, numbered("a", 0, 3)...)
	r.start()
	r.waitLines(3)
	r.waitSettled()
	r.stop()
	if quietFor > 0 {
		old := time.Now().Add(-quietFor)
		if err := os.Chtimes(r.path, old, old); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Rename(r.path, r.path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return newRig(t, r.dir, opts).start()
}
