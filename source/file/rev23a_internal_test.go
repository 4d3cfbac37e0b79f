package file

// Review 23a (of 612e8c8, countGzGap): a compressed gap generation beside
// a glob path is counted, once, instead of lost silently.

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"tailfeed/pointer"
)

// rev23aGz builds the gap scenario of gapRig with the gap generation
// compressed before the third start, with the contents given (older:
// x.log's, then w.log.2, and extra, if set, writing the feed's other files
// before the first start; gap: w.log.1, compressed to w.log.1.gz; newer:
// the new w.log), and runs the third start for third.
func rev23aGz(t *testing.T, older, gap, newer string, extra func(r *rev18cRig), third time.Duration) (*rev18cRig, map[string]int, uint64, uint64, string) {
	r := newRev18cRig(t)
	r.firstStart(older, extra)
	got, tails, bytes, detail := r.compressedGapStart(gap, newer, false, third)
	return r, got, tails, bytes, detail
}

// The steps the compressed gap scenarios of reviews 18c and 23 share, on
// the rig of review 18c: a first start reads w.log (pointer O); w.log is
// renamed within the glob to x.log and a new w.log (P's file) made, with
// or without a gap generation w.log.1 between them; while stopped, x.log
// goes out beside the path (readGaps runs), files are compressed, grown,
// copied and cut; a later start is run and what it delivered and counted
// lost looked at.

// firstStart writes older to w.log — then, where also is set, the feed's
// other files — skips where the file system keeps no birth times (readGaps
// does not run) and runs the first start: its pointer O takes w.log.
func (r *rev18cRig) firstStart(older string, also func(r *rev18cRig)) {
	r.t.Helper()
	r.write(r.w, older)
	if also != nil {
		also(r)
	}
	if birthTimeTarget(r.w).IsZero() {
		r.t.Skip("no birth times: readGaps does not run (README)")
	}
	r.run(1500*time.Millisecond, nil)
}

// rotate renames w.log to to and, 20 ms later, makes a new w.log holding
// newer.
func (r *rev18cRig) rotate(to, newer string) {
	r.t.Helper()
	r.rename(r.w, to)
	time.Sleep(20 * time.Millisecond)
	r.write(r.w, newer)
}

// rotateWithGap renames w.log (O's file) to x.log within the glob and
// writes the gap generation w.log.1 (gap) beside the path 20 ms later and
// the new w.log (newer, P's file) 20 ms after that. It returns the moment
// of the gap's last write.
func (r *rev18cRig) rotateWithGap(gap, newer string) time.Time {
	r.t.Helper()
	r.rename(r.w, r.x)
	time.Sleep(20 * time.Millisecond)
	r.write(r.w+".1", gap)
	gapMod := time.Now()
	time.Sleep(20 * time.Millisecond)
	r.write(r.w, newer)
	return gapMod
}

// secondStartReadsW runs the second start for d and skips unless it
// delivered the new w.log's lines (gb-0 to gb-2), each once.
func (r *rev18cRig) secondStartReadsW(d time.Duration) {
	r.t.Helper()
	got2, _, _, _ := r.run(d, nil)
	if rev23bGapLines(got2, "gb", 3) != 3 {
		r.t.Skipf("the second start did not read w.log (delivered %v)", got2)
	}
}

// newNoGapRig is a rig with no gap generation: after the first start
// w.log (O's file) is renamed to x.log and the new w.log (P's file) made
// 20 ms later; it skips unless the second start (1.5 s) reads it.
func newNoGapRig(t *testing.T) *rev18cRig {
	r := newRev18cRig(t)
	r.firstStart(numbered("ga", 3), nil)
	r.rotate(r.x, numbered("gb", 3))
	r.secondStartReadsW(1500 * time.Millisecond)
	return r
}

// compressedGapStart is the gap scenario after the first start: the gap
// w.log.1 and the new w.log written (rotateWithGap), the second start,
// then, while stopped, x.log out beside the path (w.log.2) and the gap
// compressed to w.log.1.gz (its plain file kept if keep: gzip between its
// write and its unlink); it runs the third start for third.
func (r *rev18cRig) compressedGapStart(gap, newer string, keep bool, third time.Duration) (map[string]int, uint64, uint64, string) {
	r.t.Helper()
	r.rotateWithGap(gap, newer)
	r.run(1500*time.Millisecond, nil)
	r.rename(r.x, r.w+".2")
	gzipLikeGzip(r.t, r.w+".1", r.w+".1.gz", keep)
	return r.run(third, nil)
}

// copytruncate is logrotate's copytruncate while stopped: w.log grows by
// tail (if any), is copied to to, beforeCut (if set) runs, w.log is cut
// and the copy compressed to to+".gz" unless plain (delaycompress). It
// returns the bytes copied.
func (r *rev18cRig) copytruncate(tail, to string, plain bool, beforeCut func()) []byte {
	r.t.Helper()
	if tail != "" {
		rev23dAppend(r.t, r.w, tail)
	}
	data, err := os.ReadFile(r.w)
	if err != nil {
		r.t.Fatal(err)
	}
	r.write(to, string(data))
	if beforeCut != nil {
		beforeCut()
	}
	if err := os.Truncate(r.w, 0); err != nil {
		r.t.Fatal(err)
	}
	if !plain {
		gzipLikeGzip(r.t, to, to+".gz", false)
	}
	return data
}

// writeOn is the application writing s to w.log 50 ms after a cut.
func (r *rev18cRig) writeOn(s string) {
	r.t.Helper()
	time.Sleep(50 * time.Millisecond)
	rev23dAppend(r.t, r.w, s)
}

// startLogged runs a start for 2 s and logs, as the start named which,
// how many of the lines prefix-0 to prefix-2 it delivered (where prefix
// is set) and what it counted lost.
func (r *rev18cRig) startLogged(which, prefix string) (got map[string]int, delivered int, tails, bytes uint64, detail string) {
	r.t.Helper()
	got, tails, bytes, detail = r.run(2*time.Second, nil)
	if prefix == "" {
		r.t.Logf("%s start: lostTails %d lostBytes %d %q (delivered %v)", which, tails, bytes, detail, got)
		return got, 0, tails, bytes, detail
	}
	delivered = rev23bGapLines(got, prefix, 3)
	r.t.Logf("%s start: %s lines delivered %d; lostTails %d lostBytes %d %q (delivered %v)", which, prefix, delivered, tails, bytes, detail, got)
	return got, delivered, tails, bytes, detail
}

// logEpochs logs every line of the feed's epochs file.
func (r *rev18cRig) logEpochs() {
	r.t.Helper()
	lines, _ := pointer.ReadEpochs(filepath.Join(r.data, "feeds", "f.epochs"))
	for _, l := range lines {
		r.t.Logf("epochs: %s key %x fpLen %d prevKey %x prevFPLen %d %s", l.Reason, l.FileKey, l.FPLen, l.PrevFileKey, l.PrevFPLen, l.Path)
	}
}

// The checks on a start: each fails the test with the message given
// (format and args) where it does not hold.

// wantNotCounted: the start counted nothing lost.
func wantNotCounted(t *testing.T, tails, bytes uint64, format string, args ...any) {
	t.Helper()
	if tails != 0 || bytes != 0 {
		t.Errorf(format, args...)
	}
}

// wantReadOrCounted: the lines looked for were delivered or something was
// counted lost (not neither: a loss no count names).
func wantReadOrCounted(t *testing.T, delivered int, tails uint64, format string, args ...any) {
	t.Helper()
	if delivered == 0 && tails == 0 {
		t.Errorf(format, args...)
	}
}

// wantNotReadAndCounted: the lines looked for were not both delivered and
// counted lost (DESIGN §4: a loss only where a line was skipped).
func wantNotReadAndCounted(t *testing.T, delivered int, tails uint64, format string, args ...any) {
	t.Helper()
	if delivered > 0 && tails > 0 {
		t.Errorf(format, args...)
	}
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
	wantReadOrCounted(t, rev23bGapLines(got, "gap", 3), tails, "the compressed gap %s (%d bytes) is neither read nor counted: lostTails %d lostBytes %d %q (delivered %v)",
		r.w+".1.gz", len(gap), tails, bytes, detail, got)
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
	wantReadOrCounted(t, rev23bGapLines(got, "gap", 3), tails, "the compressed gap %s (%d bytes) is neither read nor counted: lostTails %d lostBytes %d %q (delivered %v)",
		r.w+".1.gz", len(gap), tails, bytes, detail, got)
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
	r.firstStart(numbered("ga", 3), nil)
	gap := numbered("gap", 3)
	r.rotateWithGap(gap, numbered("gb", 3))
	r.run(1500*time.Millisecond, nil)
	r.rename(r.x, r.w+".2")
	r.rotate(r.w+".3", numbered("gc", 3))
	gzipLikeGzip(t, r.w+".1", r.w+".1.gz", false)
	got, delivered, tails, bytes, detail := r.startLogged("third", "gap")
	wantNotReadAndCounted(t, delivered, tails, "the compressed gap's lines were delivered (%d) and counted lost: lostTails %d lostBytes %d %q (delivered %v)",
		delivered, tails, bytes, detail, got)
	wantReadOrCounted(t, delivered, tails, "the compressed gap neither read nor counted (delivered %v)", got)
}
