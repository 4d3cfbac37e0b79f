package file

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tailfeed/pointer"
)

// A restart (a reload's, or a stopped one's) whose glob path no longer
// matches a file still at its path — the path narrowed (*.log to a*.log)
// or moved to another directory — counts no loss for it: the operator
// chose not to read it any more, as with an exclude (DESIGN §12: a changed
// path starts as a new feed; §7 lossless: nothing was skipped). Before,
// the file was taken for one gone while stopped: lostTails 1 each.
func TestGlobPathChangedAtRestartIsNoLoss(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		unread bool
		moved  bool
	}{{"narrowed", false, false}, {"narrowed-unread", true, false}, {"moved", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			dir, data, a := aLogIn(t, numbered("a", 3))
			b := filepath.Join(dir, "b.log")
			if err := os.WriteFile(b, []byte(numbered("b", 3)), 0o600); err != nil {
				t.Fatal(err)
			}
			ig, stop := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, nil)
			if got, _ := ig.popEpochs(time.Second, true); len(got) != 6 {
				t.Fatalf("delivered %q, want a-0..a-2 and b-0..b-2", got)
			}
			waitTrue(t, "both files committed to their end", func() bool {
				ptrs, _ := filepath.Glob(filepath.Join(ig.ptrDir, "*.ptr"))
				n := 0
				for _, p := range ptrs {
					if rec, err := pointer.Inspect(p); err == nil && rec.Offset == 12 {
						n++
					}
				}
				return n == 2
			})
			stop()
			if tc.unread {
				appendTo(t, b, "b-3\n")
			}
			pattern, want := filepath.Join(dir, "a*.log"), "a-3"
			if tc.moved {
				other := t.TempDir()
				c := filepath.Join(other, "c.log")
				if err := os.WriteFile(c, []byte("c-0\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				pattern, want = filepath.Join(other, "*.log"), "c-0"
			}
			ig2, _ := runGlobCfg(t, pattern, data, 200*time.Millisecond, nil)
			if !tc.moved {
				appendTo(t, a, "a-3\n")
			}
			got, _ := ig2.popEpochs(time.Second, true)
			if tails, bytes, detail := ig2.lost(); strings.Join(got, ",") != want || tails != 0 || bytes != 0 {
				t.Fatalf("glob path changed to %s at a restart (b.log still at its path, unread bytes: %v): delivered %q, lostTails %d, lostBytes %d (%q); want %s, 0, 0",
					pattern, tc.unread, got, tails, bytes, detail, want)
			}
		})
	}
}
