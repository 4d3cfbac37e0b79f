package file

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Review 16c A's rotation (w.log renamed to w.log.1, its stream closed for
// the new w.log while watched, w.log.1 deleted half a second later by
// compress) without fsnotify: no write event can show that nothing was
// appended to w.log.1 after its stream closed, so its deletion is counted
// (DESIGN §4 "Nothing green over a loss"; the README's overcount), where
// with fsnotify it is not (rev16c_a).
func TestGlobWatchedOutGoneWithoutNotifyCounted(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	pattern := filepath.Join(dir, "*.log")
	w := filepath.Join(dir, "w.log")
	if err := os.WriteFile(w, []byte(numbered("w", 3)), 0o600); err != nil {
		t.Fatal(err)
	}
	ig, stop := runGlobWith(t, pattern, data, 2*time.Second, func(c *GlobConfig) {
		c.MaxOpenFiles = 1
		c.Stream.RotateWait = 3 * time.Second
		c.Stream.NoNotify = true
	}, nil)
	defer stop()
	if got := ig.popAll(time.Second); got != 3 {
		t.Fatalf("delivered %d lines, want 3", got)
	}
	moved := w + ".1"
	if err := os.Rename(w, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w, []byte(numbered("n", 2)), 0o600); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	watched := false
	for end := time.Now().Add(3 * time.Second); !watched && time.Now().Before(end); {
		for k, v := range ig.popLines(20 * time.Millisecond) {
			got[k] += v
		}
		ig.g.mu.Lock()
		for _, s := range ig.g.watchOut {
			watched = watched || s.path == moved
		}
		ig.g.mu.Unlock()
	}
	if !watched {
		t.Skip("SKIP: w.log.1's stream was not watched (quiet before the new w.log took its slot)")
	}
	if err := os.Remove(moved); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
		for k, v := range ig.popLines(20 * time.Millisecond) {
			got[k] += v
		}
	}
	tails, _, detail := ig.lost()
	if got["n-0"] != 1 || got["n-1"] != 1 || tails != 1 {
		t.Errorf("lines %v, lostTails %d (%q); want n-0, n-1 once and lostTails 1 (no fsnotify: nothing shows w.log.1 got no line after its stream closed)", got, tails, detail)
	}
}
