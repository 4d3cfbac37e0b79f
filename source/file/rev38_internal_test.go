package file

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A glob stream's file read whole and committed, its stream closed as
// inactive, then rotated by logrotate's create + compress: renamed out of
// the glob (app.log.1), compressed to app.log.1.gz and removed, all in a
// few milliseconds. The rename restarts the stream (a file renamed out of
// the glob is read to its end) under its new name; when its source looks,
// the file is gone and its compressed copy is app.log.1.gz — "<name>.gz"
// of the stream's new name, which no rotated name of app.log.1 covers, so
// the copy was not found and the file's (empty) tail was counted lost: a
// false loss (the thirty-eighth session's CI1,
// TestRev29BOKLiveCreateCompressClosed: lostTails 1, lostBytes 0). The
// open hook does the compress and the removal between the source's stat
// and its open, the widest form of that window.
func TestRev38RenamedOutThenCompressedIsNoLoss(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	logs := filepath.Join(root, "logs")
	if err := os.Mkdir(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	app := filepath.Join(logs, "app.log")
	var armed atomic.Bool
	var compressed atomic.Int32
	ig, stop := runGlobCfg(t, filepath.Join(logs, "*.log"), state, time.Second, func(c *GlobConfig) {
		c.CloseInactive = 200 * time.Millisecond
		c.Stream.OpenHook = func() {
			if _, err := os.Stat(app + ".1"); err == nil && armed.CompareAndSwap(true, false) {
				gzipLikeGzip(t, app+".1", app+".1.gz", false)
				compressed.Add(1)
			}
		}
	})
	defer stop()
	var lines []string
	for i := range 20 {
		lines = append(lines, fmt.Sprintf("a #%02d", i))
	}
	if err := os.WriteFile(app, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for end := time.Now().Add(20 * time.Second); len(got) < len(lines) && time.Now().Before(end); {
		ls, _ := ig.popEpochs(50*time.Millisecond, true)
		for _, l := range ls {
			got[l]++
		}
	}
	if len(got) != len(lines) {
		t.Fatalf("%d of %d lines delivered", len(got), len(lines))
	}
	ig.waitFor(t, "app.log's stream committed and closed", func() bool {
		for _, s := range ig.g.byKey {
			if s.st != stClosed {
				return false
			}
		}
		return len(ig.g.byKey) == 1
	})
	armed.Store(true)
	if err := os.Rename(app, app+".1"); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the rename's turn compressed app.log.1", func() bool { return compressed.Load() == 1 })
	for l, n := range ig.popLines(time.Second) {
		got[l] += n
	}
	for _, l := range lines {
		if got[l] != 1 {
			t.Errorf("%s delivered %d times, want 1", l, got[l])
		}
	}
	if tails, bytes, detail := ig.lost(); tails != 0 || bytes != 0 {
		t.Errorf("lostTails %d lostBytes %d (%q): want none (every line was read and committed; its copy is app.log.1.gz)", tails, bytes, detail)
	}
}
