package file

// Review 25a (the twin rule), the glob side: C, failing on the reviewed
// code, fixed in the twenty-fifth session (readGaps leaves a .gz whose twin
// the path's source does not read instead to that source's window). (The
// single-file findings: rev25a_review_test.go.)

import (
	"testing"
	"time"
)

// C (NEW with this change: a duplicate where there was none; review 24d
// D's configuration, rotatedNames naming only the compressed generations,
// "w.log.*.gz"): a glob over *.log. O's file (w.log, "ga") read, renamed
// within the glob to x.log; the gap G (w.log.1, "gap") written 20 ms
// later, P's file (the new w.log, "gb") 20 ms after that; the second start
// reads x.log and w.log. While stopped: x.log out beside the path
// (w.log.2), P's file rotated to a plain w.log.3 (found beside the path by
// its key), a new w.log ("gc"), and G compressed keeping its plain file
// (w.log.1.gz whole beside w.log.1: gzip -k, or gzip not yet past its
// unlink). readGaps looks at the twin w.log.1 instead of the .gz (gzTwin)
// and finds it a gap: born before P's file, so outside P's source's window
// (born before P and last written before it): it queues w.log.1 and reads
// it. P's source now takes w.log.1.gz for a later generation (its twin is
// no generation name, twinRead: "nobody reads it"): born at the
// compression, last written 20 ms before P's file — in its window — and
// reads it too. The parent left the .gz out (a file of its name), so the
// gap was read once, by readGaps.
func TestRev25ARCGzOnlyNamesGapTwinKeptReadByReadGapsAndBySource(t *testing.T) {
	t.Parallel()
	names := []string{"w.log.*.gz"}
	r := newRev18cRig(t)
	r.write(r.w, numbered("ga", 3))
	if birthTimeTarget(r.w).IsZero() {
		t.Skip("no birth times: readGaps does not run (README)")
	}
	r.rev24crRunNames(names, 1500*time.Millisecond)
	r.rotateWithGap(numbered("gap", 3), numbered("gb", 3))
	got2, _, _, _ := r.rev24crRunNames(names, 1500*time.Millisecond)
	if rev23bGapLines(got2, "gb", 3) != 3 {
		t.Skipf("the second start did not read w.log (delivered %v)", got2)
	}
	r.rename(r.x, r.w+".2")
	r.rotate(r.w+".3", numbered("gc", 3))        // P plain beside the path
	gzipLikeGzip(t, r.w+".1", r.w+".1.gz", true) // G compressed, its plain file kept
	got, tails, bytes, detail := r.rev24crRunNames(names, 2500*time.Millisecond)
	t.Logf("third start: lostTails %d lostBytes %d %q (delivered %v)", tails, bytes, detail, got)
	r.logEpochs() // w.log.1 (readGaps' stream) and w.log.1.gz (P's source's Reset) both named
	for _, l := range []string{"gap-0", "gap-1", "gap-2"} {
		if got[l] > 1 {
			t.Errorf("%s delivered %d times at the third start, want once (read by readGaps from the plain w.log.1 and by P's source from w.log.1.gz); delivered %v", l, got[l], got)
		}
	}
	if n := rev23bGapLines(got, "gap", 3); n == 0 && tails == 0 {
		t.Errorf("the gap neither read nor counted: delivered %v, lostTails %d", got, tails)
	}
	wantGcOnce(t, got)
}
