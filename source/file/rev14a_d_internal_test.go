// Review 14a, finding D: found and fixed in the fourteenth session.

package file

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tailfeed/pointer"
)

// w.log (2 lines) is read and committed under epoch E1. logrotate's
// copytruncate runs while tailfeed is up: w.log is copied to w.log.1 (not
// matched by *.log) and cut to 0; the stream reads the copy to its end
// (nothing past the pointer) and its pointer is Reset onto the empty
// w.log: (E2, w.log's key, no first bytes, offset 0). Killed so. While
// tailfeed is down the application writes 3 lines into w.log, which is
// deleted, and a new w.log (another inode, 2 lines) is put at the path.
// The change lets adoptByPath give this offset-0 pointer to the new w.log
// (before, countGone counted it: lostTails 1, nothing else). Its source
// counts the tail lost (right) and then scans the "later generations"
// against the pointer file's mtime: w.log.1, the copy made by the live
// copytruncate a moment before the Reset, is within the 2 s slack and is
// read again from its start under a new epoch — its 2 lines, delivered
// and committed under E1 in the first run, go out a second time under an
// epoch no sink holds: an exactlyOnce sink duplicates them (DESIGN §2
// "Built-in sinks with exactlyOnce: true … skip re-deliveries"; §2 "The
// duplicates after a crash are exactly the lines acknowledged since the
// last commit reached the pointer file"; the glob's own prevCopies rule
// "A copy an earlier source of this glob stream read … read already, no
// later generation"). At 7921d24 (before the change) this test passes.
// Observed: zero-0, zero-1 delivered again; 3 of 3 runs.
func TestRev14DCutPointerFileDeletedRereadsLiveCopytruncateCopy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := t.TempDir()
	pattern := filepath.Join(dir, "*.log")
	w := filepath.Join(dir, "w.log")
	if err := os.WriteFile(w, []byte(numbered("zero", 2)), 0o600); err != nil {
		t.Fatal(err)
	}
	ig, kill := runGlobKillable(t, pattern, data, func(*GlobConfig) {})
	if got := ig.popAll(time.Second); got != 2 {
		t.Fatalf("first run delivered %d lines, want 2", got)
	}
	var ptr string
	var e1 uint64
	ig.waitFor(t, "w.log committed", func() bool {
		s := ig.g.byPath[w]
		if s == nil || s.ptrPath == "" {
			return false
		}
		r, err := pointer.Inspect(s.ptrPath)
		if err == nil && r.Offset > 0 {
			ptr, e1 = s.ptrPath, r.Epoch
			return true
		}
		return false
	})
	raw, err := os.ReadFile(w)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w+".1", raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(w, 0); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the pointer Reset onto the empty w.log (key, no first bytes, offset 0)", func() bool {
		r, err := pointer.Inspect(ptr)
		return err == nil && r.Epoch != e1 && r.Offset == 0 && r.FileKey != 0 && r.FPLen == 0
	})
	if more := ig.popAll(300 * time.Millisecond); more != 0 {
		t.Fatalf("the live copytruncate delivered %d more lines, want 0", more)
	}
	kill()
	appendTo(t, w, numbered("first", 3))
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
	tails, nb, detail := ig2.lost()
	if strings.Contains(strings.Join(lines, ","), "zero-") {
		t.Errorf("restart: delivered %q (lostTails %d lostBytes %d %q): w.log.1's lines, delivered and committed in the first run, delivered again under a new epoch", lines, tails, nb, detail)
	}
	if tails != 1 {
		t.Errorf("restart: lostTails %d, want 1 (the deleted w.log's 3 lines)", tails)
	}
}
