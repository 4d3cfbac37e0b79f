package file

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tailfeed/pointer"
)

// A restart (a reload's) whose config now excludes a file still at its
// path counts no loss for it: read to its end or not, the operator chose
// not to read it any more, as with a changed path (DESIGN §12). Before, it
// was taken for a file gone while stopped: lostTails 1.
func TestGlobExcludedAtRestartIsNoLoss(t *testing.T) {
	t.Parallel()
	for _, unread := range []bool{false, true} {
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
		if unread {
			appendTo(t, b, "b-3\n")
		}
		excl := func(c *GlobConfig) { c.Exclude = []string{b} }
		ig2, _ := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, excl)
		appendTo(t, a, "a-3\n")
		got, _ := ig2.popEpochs(time.Second, true)
		if tails, bytes, detail := ig2.lost(); strings.Join(got, ",") != "a-3" || tails != 0 || bytes != 0 {
			t.Fatalf("b.log (unread bytes: %v) excluded at a restart, still at its path: delivered %q, lostTails %d, lostBytes %d (%q); want a-3, 0, 0",
				unread, got, tails, bytes, detail)
		}
	}
}
