package file

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A file read to its end, committed, then deleted while the daemon is
// stopped: the restart counts it gone (countGone) and resets its pointer to
// the empty record, and its files row still names it as its stream read it
// — its path, its file key, the epoch and the end it was read under and to
// — not the empty record's made-up key, no path and offset 0 (DESIGN §10
// "files", GONE).
func TestGlobGoneWhileStoppedRowNamesTheFile(t *testing.T) {
	t.Parallel()
	dir, data, a := aLogIn(t, numbered("a", 3))
	ig, stop := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, nil)
	if got, _ := ig.popEpochs(time.Second, true); strings.Join(got, ",") != "a-0,a-1,a-2" {
		t.Fatalf("delivered %q, want a-0..a-2", got)
	}
	var before FileStatus
	waitTrue(t, "a.log read and committed", func() bool {
		rec, _, err := ig.pointer()
		fs := ig.g.Files()
		if len(fs) == 1 {
			before = fs[0]
		}
		return err == nil && rec.Offset == 12 && before.Epoch != nil
	})
	stop()
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	ig2, _ := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, nil)
	var fs []FileStatus
	waitTrue(t, "the gone a.log listed", func() bool {
		fs = ig2.g.Files()
		return len(fs) == 1
	})
	f := fs[0]
	if f.Path != a || f.FileKey != before.FileKey || f.Epoch == nil || *f.Epoch != *before.Epoch || f.Offset != 12 || f.Size != 12 || f.State != "GONE" {
		t.Fatalf("row of a.log deleted while stopped: %+v (epoch %v); want path %s, key %s, epoch %s, offset = size = 12, GONE",
			f, f.Epoch, a, before.FileKey, *before.Epoch)
	}
}

// waitTrue polls cond (which takes the glob's mutex itself, as Files does)
// for 10 s.
func waitTrue(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%s: not after 10 s", what)
		}
	}
}
