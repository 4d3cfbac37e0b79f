package file

import (
	"fmt"
	"os"
	"path/filepath"
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
	t.Parallel()
	r := emptyBoundRig(t, 0)
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
	t.Parallel()
	r := emptyBoundRig(t, 0)
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

// A symlinked path: d/w.log → t/real.log, the generations beside the
// target (t/real.log.1, .2), outside the glob's directory. besideAtStart
// finds the older pointer's file beside the target; readGaps lists only
// the first path's own directory (d, w.log's rotated names): the gap
// generation beside the target was read by nobody, nothing counted
// (parked until the twentieth session: readGaps lists the target's
// directory too, under the target's name).
func TestRev18CESymlinkedPathGapBesideTheTargetIsRead(t *testing.T) {
	t.Parallel()
	d, tdir, data := t.TempDir(), t.TempDir(), t.TempDir()
	pattern := filepath.Join(d, "*.log")
	w, x := filepath.Join(d, "w.log"), filepath.Join(d, "x.log")
	real := filepath.Join(tdir, "real.log")
	r := &rev18cRig{t: t, dir: d, data: data, pattern: pattern, w: w, x: x}
	r.write(real, numbered("ga", 3))
	if birthTimeTarget(real).IsZero() {
		t.Skip("SKIP: no birth times on this file system: a gap generation is not looked for")
	}
	symlink := func(to, at string) {
		t.Helper()
		if err := os.Symlink(to, at); err != nil {
			t.Fatal(err)
		}
	}
	symlink(real, w)
	got, _, _, _ := r.run(1500*time.Millisecond, nil)
	if len(got) != 3 {
		t.Fatalf("first run delivered %v", got)
	}
	// While stopped: the older file moves to real.log.2, followed within
	// the glob by x.log (it keeps its pointer); a generation real.log.1;
	// a new real.log, at w.log.
	r.rename(w, x)
	r.rename(real, real+".2")
	if err := os.Remove(x); err != nil {
		t.Fatal(err)
	}
	symlink(real+".2", x)
	time.Sleep(20 * time.Millisecond)
	r.write(real+".1", numbered("gap", 3))
	time.Sleep(20 * time.Millisecond)
	r.write(real, numbered("gb", 3))
	symlink(real, w)
	got, _, _, _ = r.run(1500*time.Millisecond, nil)
	if got["gb-0"] != 1 {
		t.Fatalf("second run delivered %v, want real.log's 3 lines", got)
	}
	if err := os.Remove(x); err != nil { // the older file out of the glob, beside w.log's target
		t.Fatal(err)
	}
	got, tails, bytes, detail := r.run(2*time.Second, nil)
	for i := range 3 {
		if l := fmt.Sprintf("gap-%d", i); got[l] != 1 || tails != 0 {
			t.Errorf("%s delivered %d times, want once and nothing lost (delivered %v; lostTails %d lostBytes %d %q)", l, got[l], got, tails, bytes, detail)
		}
	}
}

// emptyBoundRig: w.log (3 ga- lines) read by a first run; while stopped it
// is renamed within the glob to x.log, a gap generation w.log.1 (3 gap-
// lines) written, then an empty w.log (logrotate's create); after settle,
// a second run binds w.log's pointer while it is empty (no key). Skips
// where the file system tells no birth times (gaps are not looked for).
func emptyBoundRig(t *testing.T, settle time.Duration) *rev18cRig {
	t.Helper()
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
	time.Sleep(settle)
	r.run(1500*time.Millisecond, nil)
	return r
}
