package file

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// COMMITTED, glob *.log: a.log's five lines are read and committed; the
// daemon stops. While it is down the application writes a-5, a-6 and
// logrotate renames a.log to a.log.1 (out of the glob, rename rotation,
// `create`), the application writing b-1 to a new a.log. At the restart
// no matched file has the pointer's key: the new a.log (its stream's first
// path) takes the pointer (adoptByPath), its source finds a.log.1 beside
// the path by the pointer's key and reads a-5, a-6 from the offset, then
// a.log under a new epoch (DESIGN §4 "Restart after rotation", §10: §4
// applies to each file). Before, the pointer was counted gone
// (lostTails 1) and a-5, a-6 were never read.
func TestGlobAdoptByPathRenamedOutWhileStoppedTailReadFromRenamedFile(t *testing.T) {
	t.Parallel()
	dir, data, a := aLogIn(t, numbered("a", 5))
	ig, stop := runGlobQuiet(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond)
	if first, _ := ig.popEpochs(time.Second, true); len(first) != 5 {
		t.Fatalf("first turn delivered %d lines, want 5", len(first))
	}
	time.Sleep(300 * time.Millisecond) // committed
	stop()
	appendTo(t, a, "a-5\na-6\n")
	if err := os.Rename(a, a+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a, []byte("b-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ig2, _ := runGlobQuiet(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond)
	got, _ := ig2.popEpochs(1500*time.Millisecond, true)
	if tails, bytes, detail := ig2.lost(); strings.Join(got, ",") != "a-5,a-6,b-1" || tails != 0 {
		t.Fatalf("rename rotation out of the glob while stopped, a new a.log: delivered %q, lostTails %d lostBytes %d (%q); want a-5,a-6,b-1 and 0",
			got, tails, bytes, detail)
	}
}
