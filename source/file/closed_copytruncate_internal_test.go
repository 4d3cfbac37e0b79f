// A finding of the ninth session's review 9d, fixed in the tenth: a closed
// glob file appended to and copytruncated between two looks.

package file

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestRev9DFixedHClosedStreamCopytruncatedLinesReadFromItsCopy — DESIGN §4
// "Nothing green over a loss": a truncation with no copy counts; a
// copytruncate's copy is read ("a copy … looked for in the path's
// directory"); §10 a CLOSED file is still tracked and its identity checked
// at every look; §2 no line lost. a.log (5 lines) is read, acknowledged and
// closed as inactive (closeInactiveMillis 300). Then, between two looks of
// the glob, 3 lines are appended to it and it is rotated by copytruncate
// (cp a.log a.log.1 — outside the glob *.log —, truncate, 2 new lines), 3
// times. Expected: each round's 3 appended lines delivered (from the copy,
// as a single-file source's readCopy does: first bytes match, the copy is
// no shorter than what was consumed) or counted lost (lostTails/lostBytes
// > 0), none twice. Before the fix, in 3 of 4 runs some rounds' appended
// lines (9, 6, 3 of 9) were never delivered and nothing was counted:
// sameFile took the closed stream's key with other first bytes for inode
// reuse (a ghost stream and a new one read from 0), so neither the cut
// file's tail nor its copy was looked at; a round whose refill was as long
// as what was read was not reopened at all; and the reopened source read
// the earlier rounds' copies again as later generations (13 duplicates).
func TestRev9DFixedHClosedStreamCopytruncatedLinesReadFromItsCopy(t *testing.T) {
	t.Parallel()
	ig := startInternalGlob(t, 300*time.Millisecond, 5*time.Second)
	dir := filepath.Dir(ig.g.cfg.Stream.Path)
	a := filepath.Join(dir, "a.log")
	stop := ig.consumeAll()
	var want []string
	for round := range 3 {
		ig.waitFor(t, "a.log's stream closed as inactive", func() bool {
			s := ig.g.byPath[a]
			return s != nil && s.st == stClosed
		})
		time.Sleep(150 * time.Millisecond)
		f, err := os.OpenFile(a, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			l := fmt.Sprintf("r%d-late-%d", round, i)
			want = append(want, l)
			fmt.Fprintln(f, l)
		}
		f.Close()
		// copytruncate at once (before the glob's next look, 100 ms).
		want = append(want, copytruncateRound(t, a, filepath.Join(dir, fmt.Sprintf("a.log.%d", round+1)), round)...)
		time.Sleep(1200 * time.Millisecond)
	}
	time.Sleep(1500 * time.Millisecond)
	got := stop()
	var missing, twice []string
	for _, l := range want {
		if got[l] == 0 {
			missing = append(missing, l)
		}
	}
	for l, n := range got {
		if n > 1 {
			twice = append(twice, l)
		}
	}
	tails, bytes, detail := ig.lost()
	t.Logf("%d distinct lines delivered; missing %v; delivered more than once %v; lostTails %d lostBytes %d detail %q", len(got), missing, twice, tails, bytes, detail)
	if len(twice) > 0 {
		t.Errorf("%d lines delivered more than once with no crash and no restart: %v", len(twice), twice)
	}
	if len(missing) > 0 && tails == 0 && bytes == 0 {
		t.Errorf("%d of %d lines appended to a closed glob file and then rotated by copytruncate (copy a.log.N beside it) were never delivered, and nothing was counted lost (lostTails 0, lostBytes 0): %v. DESIGN §2 no line lost; §4 nothing green over a loss",
			len(missing), len(want), missing)
	}
}
