package file

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The soak's case (forty-first session, seed 1796663023939793806): b.log's
// first bytes changed while tailfeed was stopped, so the start reset its
// stream's pointer to 0 under a new epoch; in the next millisecond, before
// the stream read a line, logrotate's copytruncate copied it to b.log.1
// (outside the glob) and cut it. The copy holds every byte: all of them are
// delivered, and nothing but the rewrite while stopped is counted (lostTails
// 1 without bytes: lines written after the stop may have been in what the
// rewrite replaced, DESIGN §4). Before the fix the stream had taken its
// first bytes after the cut, did not recognise the copy, and counted the
// file lost ("cut short to 0 bytes … read to 0": lostTails 1, lostBytes its
// size).
func TestGlobStartCopytruncateRightAfterTheOpenReadsTheCopy(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	b := filepath.Join(dir, "b.log")
	if err := os.WriteFile(b, []byte(numbered("old", 3)), 0o600); err != nil {
		t.Fatal(err)
	}
	ig, _, stop := runGlobOn(t, filepath.Join(dir, "*.log"), data)
	if got := ig.popAll(2 * time.Second); got != 3 {
		t.Fatalf("first run delivered %d lines, want 3", got)
	}
	stop()
	// Stopped: rewritten in place, other first bytes, past 4 KiB.
	content := numbered(strings.Repeat("x", 40)+"-new", 200)
	if err := os.WriteFile(b, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	var cut atomic.Bool
	ig2, stop2 := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 5*time.Second, func(c *GlobConfig) {
		c.Stream.StartHook = func(at string) {
			if at == "opened" && cut.CompareAndSwap(false, true) {
				copyTruncateFile(t, b, b+".1")
			}
		}
	})
	defer stop2()
	got := ig2.popAll(3 * time.Second)
	if !cut.Load() {
		t.Fatal("the hook never ran")
	}
	tails, bytes, detail := ig2.lost()
	if got != 200 || tails != 1 || bytes != 0 || strings.Contains(detail, "cut short") {
		t.Fatalf("after the restart: %d lines delivered, want the copy's 200; lostTails %d, lostBytes %d (%q), want 1 (the rewrite while stopped), 0", got, tails, bytes, detail)
	}
}

// copyTruncateFile copies path to to, then truncates path in place (as
// logrotate's copytruncate).
func copyTruncateFile(t *testing.T, path, to string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Error(err)
		return
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Error(err)
		return
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Error(err)
	}
}
