package file

import (
	"fmt"
	"testing"
	"time"
)

// The new w.log was empty when its stream bound its pointer (logrotate's
// create; the application had not written yet) and the run stopped; the
// application writes to it afterwards. The pointer names w.log by its key
// with no first bytes: readGaps skips the path (rec.FPLen == 0), the gap
// generation was read by nobody, lossless (parked until the twentieth
// session: the file at the path, read from its start by its stream, now
// bounds the gaps).
func TestRev18CBGapBeforeAnEmptyBoundNewFileIsRead(t *testing.T) {
	r := newRev18cRig(t)
	r.write(r.w, numbered("ga", 3))
	if birthTimeTarget(r.w).IsZero() {
		t.Skip("SKIP: no birth times on this file system: a gap generation is not looked for")
	}
	r.run(1500*time.Millisecond, nil)
	r.rename(r.w, r.x)
	time.Sleep(20 * time.Millisecond)
	r.write(r.w+".1", numbered("gap", 3))
	time.Sleep(20 * time.Millisecond)
	r.write(r.w, "") // logrotate's create: empty
	r.run(1500*time.Millisecond, nil)
	time.Sleep(20 * time.Millisecond)
	r.write(r.w, numbered("gb", 3)) // the application writes (in place)
	r.rename(r.x, r.w+".2")
	got, tails, bytes, detail := r.run(2*time.Second, nil)
	for i := range 3 {
		if l := fmt.Sprintf("gap-%d", i); got[l] != 1 {
			t.Errorf("%s delivered %d times at the third start, want 1 (delivered %v; lostTails %d lostBytes %d %q)", l, got[l], got, tails, bytes, detail)
		}
	}
}

// The same with nothing written to the new w.log after the start that
// bound it: the gap generation is read all the same, and a fourth start
// reads nothing again.
func TestRev18CBGapBeforeAnEmptyBoundNewFileStillEmptyIsReadOnce(t *testing.T) {
	r := newRev18cRig(t)
	r.write(r.w, numbered("ga", 3))
	if birthTimeTarget(r.w).IsZero() {
		t.Skip("SKIP: no birth times on this file system: a gap generation is not looked for")
	}
	r.run(1500*time.Millisecond, nil)
	r.rename(r.w, r.x)
	time.Sleep(20 * time.Millisecond)
	r.write(r.w+".1", numbered("gap", 3))
	time.Sleep(20 * time.Millisecond)
	r.write(r.w, "")
	r.run(1500*time.Millisecond, nil)
	r.rename(r.x, r.w+".2")
	got, tails, _, _ := r.run(2*time.Second, nil)
	for i := range 3 {
		if l := fmt.Sprintf("gap-%d", i); got[l] != 1 || tails != 0 {
			t.Errorf("%s delivered %d times at the third start (lostTails %d), want once, nothing lost (delivered %v)", l, got[l], tails, got)
		}
	}
	if got, tails, _, _ := r.run(time.Second, nil); len(got) != 0 || tails != 0 {
		t.Errorf("fourth start delivered %v (lostTails %d), want nothing", got, tails)
	}
}
