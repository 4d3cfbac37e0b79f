// Review 13b, finding A: parked in the thirteenth session, fixed in the
// fourteenth (a pointer bound while its file was empty is given to the
// file at its path at the start, whose source finds that file beside the
// path by its key and reads it from its start).

package file

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Two live rotations while tailfeed runs, the application writing nothing
// in between: A (read, committed) → w.log.1, an empty B at w.log; then
// A → w.log.2, B → w.log.1, an empty C at w.log. forgetOrHold kept A's
// pointer at the first rotation (B empty, no pointer), but forgetHeld
// forgets it at the second ("the kept file is gone from beside its path":
// heldAt is w.log.1 and A is now w.log.2), and B — never read, no pointer
// — is held with no pointer to keep. Nothing on disk names the path any
// more: kill -9, 3 lines written into C, another rotation while down
// (C → w.log.1, a new w.log with 2 lines): the restart never reads C's 3
// lines (they are on disk at w.log.1) — the loss audit 7 D was about, one
// rotation later. What it counts instead is lostTails 1 for B, the empty
// file held at rotation 2 with a pointer at offset 0 (nothing of it was
// ever there to lose): a loss counted for the wrong file, the real one not
// read. Seen: 2 lines delivered, lostTails 1, 3 of 3 runs. Breaks DESIGN §4 "Restart after rotation: every generation still
// on disk … read every later generation" and §7 "lossless is true only
// while tailfeed can show that no line was skipped".
func TestRev13BATwoEmptyRotationsWhileRunningThenRotatedWhileDown(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	pattern := filepath.Join(dir, "*.log")
	w := filepath.Join(dir, "w.log")
	if err := os.WriteFile(w, []byte(numbered("first", 2)), 0o600); err != nil {
		t.Fatal(err)
	}
	ig, kill := runGlobKillable(t, pattern, data, func(c *GlobConfig) {})
	if got := ig.popAll(time.Second); got != 2 {
		t.Fatalf("first run delivered %d lines, want 2", got)
	}
	var a *gstream
	ig.waitFor(t, "w.log's stream read, committed, closed", func() bool {
		a = ig.g.byPath[w]
		return a != nil && a.st == stClosed && a.owe == nil
	})
	// Rotation 1: B empty.
	if err := os.Rename(w, w+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var b *gstream
	ig.waitFor(t, "A kept for the empty B", func() bool {
		b = ig.g.byPath[w]
		return a.gone && a.st == stClosed && a.held && b != nil && b != a && b.empty
	})
	time.Sleep(300 * time.Millisecond)
	// Rotation 2: B still empty.
	if err := os.Rename(w+".1", w+".2"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(w, w+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the empty C tracked at w.log", func() bool {
		c := ig.g.byPath[w]
		return c != nil && c != a && c != b && c.empty && b.gone
	})
	time.Sleep(600 * time.Millisecond) // scans, closes, housekeeping
	kill()
	// Down: C written to, rotated again.
	appendTo(t, w, numbered("second", 3))
	for _, mv := range [][2]string{{w + ".2", w + ".3"}, {w + ".1", w + ".2"}, {w, w + ".1"}} {
		if err := os.Rename(mv[0], mv[1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(w, []byte(numbered("third", 2)), 0o600); err != nil {
		t.Fatal(err)
	}
	ig2, _, _ := runGlobOn(t, pattern, data)
	got := ig2.popAll(3 * time.Second)
	tails, bytes, detail := ig2.lost()
	if got != 5 || tails != 0 {
		t.Errorf("restart: %d lines delivered, want 5 (C's 3, written into the empty w.log while down, and the new w.log's 2); lostTails %d lostBytes %d (%q), want 0: every generation is on disk", got, tails, bytes, detail)
	}
}
