package file

// Review 23a (of 612e8c8, countGzGap): a compressed gap generation beside
// a glob path is counted, once, instead of lost silently.

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// rev23aGz builds the gap scenario of rev18cGzGap with the contents given
// (older: x.log's, then w.log.2; gap: w.log.1, compressed to w.log.1.gz
// before the third start; newer: the new w.log) and runs the third start
// for third.
func rev23aGz(t *testing.T, older, gap, newer string, extra func(r *rev18cRig), third time.Duration) (*rev18cRig, map[string]int, uint64, uint64, string) {
	r := newRev18cRig(t)
	r.write(r.w, older)
	if extra != nil {
		extra(r)
	}
	if birthTimeTarget(r.w).IsZero() {
		t.Skip("no birth times: readGaps does not run (README)")
	}
	r.run(1500*time.Millisecond, nil)
	r.rename(r.w, r.x)
	time.Sleep(20 * time.Millisecond)
	r.write(r.w+".1", gap)
	time.Sleep(20 * time.Millisecond)
	r.write(r.w, newer)
	r.run(1500*time.Millisecond, nil)
	r.rename(r.x, r.w+".2")
	gzipLikeGzip(t, r.w+".1", r.w+".1.gz", false)
	got, tails, bytes, detail := r.run(third, nil)
	return r, got, tails, bytes, detail
}

// A: every generation begins with the same header line; the new w.log
// held only its header when its stream bound and committed it, so its
// pointer (and its epochs line) names the header alone. countGzGap takes
// any prefix match for "a compressed copy of a pointer's file" (readGap
// asks the whole fingerprint or the whole file: review 18c A): the
// compressed gap's lines are read by nobody and counted by nobody.
func TestRev23AACompressedGapSharingTheNewFilesHeaderIsLostSilently(t *testing.T) {
	t.Parallel()
	const hdr = "time,level,msg\n"
	gap := hdr + numbered("gap", 3)
	r, got, tails, bytes, detail := rev23aGz(t, hdr+numbered("ga", 3), gap, hdr, nil, 2*time.Second)
	delivered := 0
	for i := range 3 {
		delivered += got[fmt.Sprintf("gap-%d", i)]
	}
	if delivered == 0 && tails == 0 {
		t.Errorf("the compressed gap %s (%d bytes) is neither read nor counted: lostTails %d lostBytes %d %q (delivered %v)",
			r.w+".1.gz", len(gap), tails, bytes, detail, got)
	}
}

// B: another file of the feed (z.log, another service writing the same
// CSV format) was bound holding only its header: the epochs file names
// its key with the header as its first bytes. countGzGap matches the gap's
// decompressed head against every epochs line of every key, by prefix: the
// compressed gap (its own header, then its lines, never read by any
// stream) is taken for "read before" and lost silently.
func TestRev23ABCompressedGapSharingAnotherFilesHeaderIsLostSilently(t *testing.T) {
	t.Parallel()
	const hdr = "time,level,msg\n"
	gap := hdr + numbered("gap", 3)
	r, got, tails, bytes, detail := rev23aGz(t, numbered("ga", 3), gap, numbered("gb", 3), func(r *rev18cRig) {
		r.write(filepath.Join(r.dir, "z.log"), hdr)
	}, 2*time.Second)
	delivered := 0
	for i := range 3 {
		delivered += got[fmt.Sprintf("gap-%d", i)]
	}
	if delivered == 0 && tails == 0 {
		t.Errorf("the compressed gap %s (%d bytes) is neither read nor counted: lostTails %d lostBytes %d %q (delivered %v)",
			r.w+".1.gz", len(gap), tails, bytes, detail, got)
	}
}

// C: the third start counts the compressed gap and is stopped cleanly
// (SIGTERM: drain, final commit) soon after — before the stream of the
// older pointer (taken beside the path, w.log.2) is closed, which is
// rotateWait after its last growth (5 s by default). Its pointer still
// names w.log.2, the fourth start takes it beside the path again, and
// countGzGap counts the same .gz again. README: counted once; only a
// kill -9 before the start's streams finish may count it again.
func TestRev23ACCleanStopSoonAfterTheStartCountsTheGapAgain(t *testing.T) {
	t.Parallel()
	gap := numbered("gap", 3)
	r, got3, tails3, bytes3, detail3 := rev23aGz(t, numbered("ga", 3), gap, numbered("gb", 3), nil, 50*time.Millisecond)
	got4, tails4, bytes4, detail4 := r.run(1500*time.Millisecond, nil)
	if tails3+tails4 != 1 || bytes3+bytes4 != uint64(len(gap)) {
		t.Errorf("the compressed gap counted %d times over a start stopped cleanly 50 ms in and the next start, want once: third start lostTails %d lostBytes %d %q (delivered %v); fourth start lostTails %d lostBytes %d %q (delivered %v)",
			tails3+tails4, tails3, bytes3, detail3, got3, tails4, bytes4, detail4, got4)
	}
}

// D: while stopped before the third start, the new w.log (gb, pointer P)
// is rotated too (w.log -> w.log.3, a newer w.log). The file at the path
// takes P (adoptByPath: the file written last); its source reads P's file
// and then the later generations — w.log.1.gz among them (its mtime within
// the 2 s slack of P's file's, its birth the compression's), through gzip.
// countGzGap bounds the gap by P's file's mtime and counts the same .gz
// lost: its lines delivered and counted lost (DESIGN §4 a loss only where
// a line was skipped).
func TestRev23ADCompressedGapReadAsALaterGenerationIsCountedLost(t *testing.T) {
	t.Parallel()
	r := newRev18cRig(t)
	r.write(r.w, numbered("ga", 3))
	if birthTimeTarget(r.w).IsZero() {
		t.Skip("no birth times: readGaps does not run (README)")
	}
	r.run(1500*time.Millisecond, nil)
	r.rename(r.w, r.x)
	time.Sleep(20 * time.Millisecond)
	gap := numbered("gap", 3)
	r.write(r.w+".1", gap)
	time.Sleep(20 * time.Millisecond)
	r.write(r.w, numbered("gb", 3))
	r.run(1500*time.Millisecond, nil)
	r.rename(r.x, r.w+".2")
	r.rename(r.w, r.w+".3")
	time.Sleep(20 * time.Millisecond)
	r.write(r.w, numbered("gc", 3))
	gzipLikeGzip(t, r.w+".1", r.w+".1.gz", false)
	got, tails, bytes, detail := r.run(2*time.Second, nil)
	delivered := 0
	for i := range 3 {
		delivered += got[fmt.Sprintf("gap-%d", i)]
	}
	t.Logf("delivered %d gap lines; lostTails %d lostBytes %d %q (delivered %v)", delivered, tails, bytes, detail, got)
	if delivered > 0 && tails > 0 {
		t.Errorf("the compressed gap's lines were delivered (%d) and counted lost: lostTails %d lostBytes %d %q (delivered %v)",
			delivered, tails, bytes, detail, got)
	}
	if delivered == 0 && tails == 0 {
		t.Errorf("the compressed gap neither read nor counted (delivered %v)", got)
	}
}
