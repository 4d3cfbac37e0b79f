package file

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"tailfeed/pointer"
)

// Review 9c A (parked since the ninth session, fixed in the twenty-second):
// a file renamed within the glob while tailfeed ran (a.log → z.txt under
// *) and then excluded by a restart's config (exclude *.txt), its first
// path a.log still matched, was counted "glob file gone while stopped"
// (lostTails 1, lossless false): at a start nothing told that rename from a
// rotation out of the glob while stopped. The clean stop's moved list
// (movedListName) tells it.

// movedThenExcluded runs *, reads a.log (3 lines) and k.log to their end,
// renames a.log to z.txt while running, waits for the glob to follow it,
// stops cleanly, runs between (nil: nothing) while stopped, then starts
// again excluding *.txt and returns what the second run delivered and
// counted.
func movedThenExcluded(t *testing.T, between func(dir string)) (got map[string]int, tails, bytes uint64, detail string) {
	t.Helper()
	dir, data, a := aLogIn(t, numbered("a", 3))
	k := filepath.Join(dir, "k.log")
	if err := os.WriteFile(k, []byte(numbered("k", 2)), 0o600); err != nil {
		t.Fatal(err)
	}
	z := filepath.Join(dir, "z.txt")
	ig, stop := runGlobCfg(t, filepath.Join(dir, "*"), data, time.Second, nil)
	if n := len(ig.popLines(time.Second)); n != 5 {
		t.Fatalf("first run delivered %d distinct lines, want 5", n)
	}
	if err := os.Rename(a, z); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "a.log's stream followed to z.txt", func() bool {
		for _, s := range ig.g.byKey {
			if s.path == z && s.first == a && !s.gone {
				return true
			}
		}
		return false
	})
	waitTrue(t, "both pointers committed to their file's end", func() bool {
		ptrs, _ := filepath.Glob(filepath.Join(ig.ptrDir, "*.ptr"))
		n := 0
		for _, p := range ptrs {
			if rec, err := pointer.Inspect(p); err == nil && (rec.Offset == 12 || rec.Offset == 8) {
				n++
			}
		}
		return n == 2
	})
	stop()
	if between != nil {
		between(dir)
	}
	excl := func(c *GlobConfig) { c.Exclude = []string{filepath.Join(dir, "*.txt")} }
	ig2, stop2 := runGlobCfg(t, filepath.Join(dir, "*"), data, time.Second, excl)
	defer stop2()
	appendTo(t, k, "k-2\n")
	got = ig2.popLines(1500 * time.Millisecond)
	tails, bytes, detail = ig2.lost()
	if _, err := os.Stat(filepath.Join(ig2.ptrDir, movedListName)); !os.IsNotExist(err) {
		t.Errorf("the moved list is still there after the start (stat: %v)", err)
	}
	return got, tails, bytes, detail
}

// The file still at its name in the glob at the stop, which the new config
// excludes: not read any more, no loss (before the fix: lostTails 1, 3 of 3
// runs).
func TestMovedWithinGlobThenExcludedIsNoLoss(t *testing.T) {
	t.Parallel()
	got, tails, bytes, detail := movedThenExcluded(t, nil)
	wantLines(t, got, "k-2")
	if tails != 0 || bytes != 0 {
		t.Errorf("z.txt (a.log renamed within the glob before the stop, read to its end) excluded at the restart: lostTails %d lostBytes %d (%q); want nothing counted", tails, bytes, detail)
	}
}

// The moved list names z.txt, but z.txt is deleted while stopped: gone, its
// lines appended before the stop unread — counted as before.
func TestMovedWithinGlobThenDeletedStillCounts(t *testing.T) {
	t.Parallel()
	_, tails, _, detail := movedThenExcluded(t, func(dir string) {
		if err := os.Remove(filepath.Join(dir, "z.txt")); err != nil {
			t.Fatal(err)
		}
	})
	if tails != 1 {
		t.Errorf("z.txt deleted while stopped: lostTails %d (%q), want 1 (gone while stopped, as without the list)", tails, detail)
	}
}

// z.txt replaced while stopped by another file (other first bytes) under
// the same name: the list's entry names the old file's first bytes —
// counted as before.
func TestMovedWithinGlobThenReplacedStillCounts(t *testing.T) {
	t.Parallel()
	_, tails, _, detail := movedThenExcluded(t, func(dir string) {
		z := filepath.Join(dir, "z.txt")
		if err := os.Remove(z); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(z, []byte(numbered("other", 3)), 0o600); err != nil {
			t.Fatal(err)
		}
	})
	if tails != 1 {
		t.Errorf("z.txt replaced by another file while stopped: lostTails %d (%q), want 1", tails, detail)
	}
}

// Moved again while stopped to another excluded name (y.txt): the list says
// z.txt; nothing tells the second rename from a rotation — counted as
// without the list (the conservative side).
func TestMovedWithinGlobThenMovedAgainStillCounts(t *testing.T) {
	t.Parallel()
	_, tails, _, detail := movedThenExcluded(t, func(dir string) {
		if err := os.Rename(filepath.Join(dir, "z.txt"), filepath.Join(dir, "y.txt")); err != nil {
			t.Fatal(err)
		}
	})
	if tails != 1 {
		t.Errorf("z.txt renamed to y.txt while stopped: lostTails %d (%q), want 1", tails, detail)
	}
}

// A kill -9 writes no list: the start counts the file as before (an
// overcount the README states), and a list left by an earlier stop is not
// taken for this run's.
func TestMovedWithinGlobThenKillCountsAsBefore(t *testing.T) {
	t.Parallel()
	dir, data, a := aLogIn(t, numbered("a", 3))
	z := filepath.Join(dir, "z.txt")
	ig, kill, _ := runGlobKill(t, filepath.Join(dir, "*"), data, time.Second, nil, nil)
	if n := len(ig.popLines(time.Second)); n != 3 {
		t.Fatalf("first run delivered %d distinct lines, want 3", n)
	}
	if err := os.Rename(a, z); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "a.log's stream followed to z.txt", func() bool {
		for _, s := range ig.g.byKey {
			if s.path == z && !s.gone {
				return true
			}
		}
		return false
	})
	time.Sleep(200 * time.Millisecond) // its commit synced (CommitSync 5 ms)
	kill()
	if _, err := os.Stat(filepath.Join(ig.ptrDir, movedListName)); !os.IsNotExist(err) {
		t.Fatalf("a kill wrote a moved list (stat: %v)", err)
	}
	excl := func(c *GlobConfig) { c.Exclude = []string{filepath.Join(dir, "*.txt")} }
	ig2, stop2 := runGlobCfg(t, filepath.Join(dir, "*"), data, time.Second, excl)
	defer stop2()
	ig2.popLines(500 * time.Millisecond)
	if tails, _, detail := ig2.lost(); tails != 1 {
		t.Errorf("after a kill -9: lostTails %d (%q), want 1 (no list: nothing tells the rename within the glob)", tails, detail)
	}
}
