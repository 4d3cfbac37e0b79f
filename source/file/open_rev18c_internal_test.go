//go:build openfindings

// Review 18c, finding C: parked in the eighteenth session (go test
// -tags openfindings -run 'TestRev18CC' ./source/file). readGaps reads a
// generation born between two pointers' files that nobody reads; this is
// a case it does not cover, lost silently as before it (a compressed gap
// generation). README states it. (B, an empty new file bound with no key,
// and E, a symlinked path's target directory, are fixed: the twentieth
// session, rev18c_b_internal_test.go.)

package file

import (
	"fmt"
	"testing"
	"time"
)

// The gap generation was compressed (logrotate's compress without
// delaycompress) before the start that would read it: readGaps skips .gz
// names, nobody reads it, nothing counted.
func TestRev18CCCompressedGapGenerationIsLost(t *testing.T) {
	r := newRev18cRig(t)
	r.write(r.w, numbered("ga", 3))
	if birthTimeTarget(r.w).IsZero() {
		t.Skip("no birth times")
	}
	r.run(1500*time.Millisecond, nil)
	r.rename(r.w, r.x)
	time.Sleep(20 * time.Millisecond)
	r.write(r.w+".1", numbered("gap", 3))
	time.Sleep(20 * time.Millisecond)
	r.write(r.w, numbered("gb", 3))
	r.run(1500*time.Millisecond, nil)
	r.rename(r.x, r.w+".2")
	gzipTo(t, r.w+".1", r.w+".1.gz")
	got, tails, bytes, detail := r.run(2*time.Second, nil)
	for i := range 3 {
		if l := fmt.Sprintf("gap-%d", i); got[l] != 1 && tails == 0 {
			t.Errorf("%s delivered %d times, nothing counted lost (delivered %v; lostTails %d lostBytes %d %q)", l, got[l], got, tails, bytes, detail)
		}
	}
}
