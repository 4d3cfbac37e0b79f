package file

// Review 23d (of 1194b25: gzCopyOf and the cut file's window, epochsNamed
// ignoring lines written at this start and a "lost" line's previous
// identity).

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tailfeed/pointer"
)

func rev23dAppend(t *testing.T, p, s string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// heldReadToItsEnd is the layout of C (and 23e A) after the first start:
// w.log (O's file) renamed to x.log, the new w.log (H's file) bound while
// short, then grown past 4 KiB (its record names its whole first 4 KiB)
// and rotated live to w.log.1 with an empty w.log made; H's stream reads
// it to its end, commits and closes, and its pointer is held for the
// empty file; then the glob is stopped. It skips unless H's pointer names
// H's whole first 4 KiB at its end.
func (r *rev18cRig) heldReadToItsEnd() {
	t := r.t
	t.Helper()
	r.rotate(r.x, numbered("ha", 3))
	ig, _, stop := runGlobOn(t, r.pattern, r.data)
	ig.popAll(time.Second)
	big := numbered("big", 600)
	rev23dAppend(t, r.w, big)
	ig.popAll(time.Second)
	time.Sleep(300 * time.Millisecond)
	h := ig.rotateToEmpty(t, r.w, "H's stream read, committed, closed", func(s *gstream) bool { return s.st == stClosed && s.owe == nil })
	ig.popAll(500 * time.Millisecond)
	time.Sleep(300 * time.Millisecond)
	stop()
	rec, err := pointer.Inspect(h.ptrPath)
	if err != nil {
		t.Fatal(err)
	}
	if rec.FPLen != pointer.MaxFingerprint || rec.Offset != int64(len(numbered("ha", 3))+len(big)) {
		t.Skipf("H's pointer does not name its whole first 4 KiB at its end: %+v", rec)
	}
}

// heldCompressedStart: while stopped after heldReadToItsEnd, O's x.log
// goes out beside the path (w.log.9), H's file is shifted and compressed
// (w.log.2.gz) and the empty w.log goes to w.log.1 (nocreate): nothing at
// the path. It runs the third start for 2 s, logs the epochs file and
// returns what the start delivered and counted lost.
func (r *rev18cRig) heldCompressedStart() (map[string]int, uint64, uint64, string) {
	r.t.Helper()
	r.rename(r.x, r.w+".9")
	r.rename(r.w+".1", r.w+".2")
	gzipLikeGzip(r.t, r.w+".2", r.w+".2.gz", false)
	r.rename(r.w, r.w+".1")
	got, tails, bytes, detail := r.run(2*time.Second, nil)
	r.logEpochs()
	return got, tails, bytes, detail
}

// A: 23b E's layout, O's file past 4 KiB. O's file (w.log, then x.log in
// the glob) is bound while short (its epochs line names 15 bytes), then
// grows past 4 KiB and is read to its end: its record names its whole
// first 4 KiB. While stopped it grows by a tail, goes out beside the path
// (w.log.3) and is compressed; P's y.log goes out too (w.log.2: readGaps
// runs). countGone counts O's file gone ("lost", its previous identity
// the whole 4 KiB). Before 1194b25 epochsNamed gave countGzGap that
// identity and w.log.3.gz (its first 4 KiB O's, read by O's stream) was
// not counted again — README: only a record shorter than 4 KiB counts it
// twice. Now the line is skipped (written at this start, and "lost"): the
// .gz is counted as a gap as well — O's tail counted twice, O's read lines
// counted lost.
func TestRev23DAOlderPointersWholeFingerprintFileCompressedCountedTwice(t *testing.T) {
	t.Parallel()
	r := newRev18cRig(t)
	y := filepath.Join(r.dir, "y.log")
	r.firstStart(numbered("ga", 3), nil)
	big := numbered("big", 600)
	rev23dAppend(t, r.w, big)
	r.run(1500*time.Millisecond, nil)
	r.rotate(r.x, numbered("gb", 3))
	r.run(1500*time.Millisecond, nil)
	r.rotate(y, numbered("gc", 3))
	r.run(1500*time.Millisecond, nil)
	// While stopped.
	time.Sleep(20 * time.Millisecond)
	rev23dAppend(t, r.x, numbered("tail", 3))
	r.rename(y, r.w+".2")
	r.rename(r.x, r.w+".3")
	gzipLikeGzip(t, r.w+".3", r.w+".3.gz", false)
	time.Sleep(20 * time.Millisecond)
	rev23dAppend(t, r.w, numbered("gd", 3))
	got, tails, bytes, detail := r.run(2*time.Second, nil)
	r.logEpochs()
	t.Logf("fifth start: tail delivered %d; lostTails %d lostBytes %d %q (delivered %d distinct lines)",
		rev23bGapLines(got, "tail", 3), tails, bytes, detail, len(got))
	if strings.Contains(detail, "w.log.3.gz") || tails > 1 {
		t.Errorf("O's file, compressed beside the path (w.log.3.gz: its first 4 KiB the whole fingerprint its pointer and the \"lost\" line name, %d of its bytes read before), is counted as a gap generation as well as gone: lostTails %d lostBytes %d %q",
			len(numbered("ga", 3))+len(big), tails, bytes, detail)
	}
}

// B: logrotate's copytruncate + compress + delaycompress while stopped.
// O's file x.log goes out beside the path (w.log.9: readGaps runs); the
// gap w.log.1 (read by no stream, last written before P's file w.log was
// made, within mtimeSlack of P's pointer's last commit) is shifted and
// compressed (w.log.2.gz); w.log grows by a tail, is copied to a PLAIN
// w.log.1 (delaycompress) more than mtimeSlack after the gap's last write,
// cut and written on. P's source finds the plain copy first (copyAt:
// findCopy before findGzCopy), reads it from the pointer and then the
// generations modified from the copy's mtime less mtimeSlack: not the gap.
// gzCopyOf looks at .gz files only: no copy, so the window is taken from
// the pointer file's mtime, which covers the gap: countGzGap leaves it to
// P's source. Read by nobody, counted by nobody (before 1194b25 it was
// counted: a cut file's source had no window there).
func TestRev23DBPlainCopyOfCutPathFileLeavesCompressedGapUncounted(t *testing.T) {
	t.Parallel()
	r := newRev18cRig(t)
	r.firstStart(numbered("ga", 3), nil)
	gap := numbered("gap", 3)
	gapMod := r.rotateWithGap(gap, numbered("gb", 3))
	r.secondStartReadsW(1200 * time.Millisecond)
	ptrs, _ := filepath.Glob(filepath.Join(r.data, "feeds", "f", "*.ptr"))
	var ptrMod time.Time
	for _, p := range ptrs {
		if st, err := os.Stat(p); err == nil && st.ModTime().After(ptrMod) {
			ptrMod = st.ModTime()
		}
	}
	// While stopped.
	if d := mtimeSlack + 300*time.Millisecond - time.Since(gapMod); d > 0 {
		time.Sleep(d)
	}
	r.rename(r.x, r.w+".9")
	r.rename(r.w+".1", r.w+".2")
	gzipLikeGzip(t, r.w+".2", r.w+".2.gz", false)
	r.copytruncate(numbered("tail", 3), r.w+".1", true, nil) // the plain copy (delaycompress)
	r.writeOn(numbered("gc", 3))
	got, delivered, tails, bytes, detail := r.startLogged("third", "gap")
	t.Logf("third start: tail lines delivered %d; newest pointer mtime %v after the gap's write",
		rev23bGapLines(got, "tail", 3), ptrMod.Sub(gapMod))
	wantReadOrCounted(t, delivered, tails, "the compressed gap %s (%d decompressed bytes, read by no stream) is neither read nor counted: the cut path file's source read its plain copy %s and the generations after it, gzCopyOf found no .gz copy and left the gap to that source by the pointer file's mtime (lostTails %d lostBytes %d %q; delivered %v)",
		r.w+".2.gz", len(gap), r.w+".1", tails, bytes, detail, got)
}

// C: as A, with no loss at all: the "forgotten" line countGone writes at
// this start for a held pointer's file read to its end is skipped too.
// H's file (the new w.log, bound while short, then grown past 4 KiB: its
// record names its whole first 4 KiB) is rotated live to w.log.1 with an
// empty w.log made; H's stream reads it to its end, commits and closes,
// and its pointer is held for the empty file. While stopped: O's x.log
// goes out beside the path (w.log.9), H's file is shifted and compressed
// (w.log.2.gz), the empty w.log goes to w.log.1 (nocreate): nothing at
// the path. countGone finds H's file gone with its held mark: nothing of
// it pending, "forgotten" (its previous identity H's whole 4 KiB). Before
// 1194b25 epochsNamed gave countGzGap that identity: w.log.2.gz, every
// byte of it read, was not counted. Now the line (written at this start)
// is skipped and the .gz is counted lost: a loss where no line was
// skipped.
func TestRev23DCHeldFileReadToItsEndCompressedCountedLost(t *testing.T) {
	t.Parallel()
	r := newRev18cRig(t)
	r.firstStart(numbered("ga", 3), nil)
	r.heldReadToItsEnd()
	// While stopped.
	got, tails, bytes, detail := r.heldCompressedStart()
	t.Logf("third start: lostTails %d lostBytes %d %q (delivered %d distinct lines)", tails, bytes, detail, len(got))
	if tails > 0 || strings.Contains(detail, "w.log.2.gz") {
		t.Errorf("H's file, read to its end and committed (held), compressed while stopped (w.log.2.gz), is counted lost as a gap generation: lostTails %d lostBytes %d %q",
			tails, bytes, detail)
	}
}
