package file

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// Review 20c (the fixes of reviews 20a and 20b).

// TestRev20CBGapGenerationHiddenWhenTheAdoptedGoneFileIsDeleted — DESIGN
// §4 "Restart after rotation: every generation still on disk" is read
// (reading a file twice is a duplicate, never a gap); "Nothing green over
// a loss". Review 20a G's fix bounds readGaps, for an empty-bound pointer
// given at this start to the file at the path (adoptByPath, genOwn), by
// the gone file the pointer's key names, looked for beside the path
// (keyBeside); when that file is not found (deleted: logrotate's
// "rotate N" removing the oldest generation), readGaps now skips the path
// altogether (continue), where it bounded the gaps by the file at the path
// before.
//
// Scenario: review 20a G's rig (run 1 reads w.log X; X renamed to x.log, a
// gap generation w.log.1 written, an empty w.log Z made; run 2 binds Z's
// pointer while empty), the gap generation written more than the
// generation scan's 2 s slack before run 2. While down: Z gets 3 gb-
// lines and is rotated to w.log.2, the gap generation to w.log.3, a new
// w.log (Y2) gets 3 y2- lines and is rotated to w.log.1, a new w.log (Z')
// gets 3 gc- lines, X leaves the glob (w.log.4), and Z (w.log.2) is
// deleted last (no file made after it: no inode reuse). Run 3: Z' takes
// Z's pointer (adoptByPath); its source finds Z gone and counts its tail
// lost (lostTails 1: right, the gb- lines are gone); X's pointer is taken
// beside (besideAtStart); readGaps: atGone is Z's key, keyBeside finds
// nothing: continue.
//
// Expected: y2-0..2 and gap-0..2 delivered once (both on disk, named by
// no pointer), or counted lost. Observed before the fix (3 of 3): only gc-0..2, lostTails 1 (Z's),
// 3 of 3. Before the change (a932216's glob.go/source.go): every line
// delivered once, 3 of 3 passed. (With Z deleted before Y2 is written,
// Y2 takes Z's inode; y2- is then missed before the change too, 2 of 3.)
func TestRev20CBGapGenerationHiddenWhenTheAdoptedGoneFileIsDeleted(t *testing.T) {
	t.Parallel()
	r := emptyBoundRig(t, 2500*time.Millisecond)
	time.Sleep(2500 * time.Millisecond)
	r.write(r.w, numbered("gb", 3))
	r.rename(r.w+".1", r.w+".3")
	r.rename(r.w, r.w+".2")
	time.Sleep(20 * time.Millisecond)
	r.write(r.w, numbered("y2", 3))
	r.rename(r.w, r.w+".1")
	time.Sleep(20 * time.Millisecond)
	r.write(r.w, numbered("gc", 3))
	r.rename(r.x, r.w+".4")
	// Z deleted last (logrotate's oldest generation removed; no file is
	// made after, so none takes its inode).
	if err := os.Remove(r.w + ".2"); err != nil {
		t.Fatal(err)
	}
	got, tails, bytes, detail := r.run(3*time.Second, nil)
	t.Logf("third start: delivered %v; lostTails %d lostBytes %d %q", got, tails, bytes, detail)
	for _, p := range []string{"gc", "y2", "gap"} {
		for i := range 3 {
			// (lostTails 1 is Z's; more would count these.)
			if l := fmt.Sprintf("%s-%d", p, i); got[l] != 1 && !(p != "gc" && tails > 1) {
				t.Errorf("%s delivered %d times at the third start, want once (delivered %v; lostTails %d lostBytes %d %q)", l, got[l], got, tails, bytes, detail)
			}
		}
	}
}
