package file

// Review 24d, findings B (the source's own part) and D, parked in the
// twenty-fourth session (older than that session's change: they failed at
// 083c653 too), fixed in the twenty-fifth: a generation scan left out any
// .gz with a plain file of its name ("its twin is read"), also when that
// file is another generation (B) or a twin no source reads (D: its name no
// generation name). Now only a twin read instead leaves it out
// (twinRead: the file of its name holding every first byte of the .gz,
// a generation name or a glob file). Both failed before the fix (1 of 1,
// the source's rule restored).

import (
	"os"
	"testing"
	"time"
)

// B (gzOnly; the source's twin rule against readGaps'): P's file
// compressed (w.log.2.gz: its source reads it from the pointer, then the
// generations modified from its mtime less mtimeSlack on). A later
// generation L ("gd" lines) is compressed to w.log.1.gz; a still later
// one M ("ge" lines) is the plain w.log.1 (delaycompress added): not L's
// twin. P's source (scanGenerations) left out any .gz with a plain file
// of its name ("its twin is read") — L's .gz — and read M; readGaps
// judges L's .gz on its own (gzTwin: no twin) and countGzGap finds it in
// P's source's window (a later generation that source reads): not
// counted. L's 3 lines were neither read nor counted. Now P's source reads
// L's .gz (no twin of it beside it): each line once, nothing counted. (The
// gap, w.log.1's former content, is not in this scenario: O's file only
// bounds it.)
func TestRev24DRGzOnlyLaterGzBesideANonTwinPlainOfItsNameRead(t *testing.T) {
	t.Parallel()
	r := rev25aLaterGz(t, false) // L compressed
	time.Sleep(20 * time.Millisecond)
	r.write(r.w, numbered("ge", 3)) // M
	r.rename(r.w, r.w+".1")         // plain, beside L's .gz (delaycompress)
	time.Sleep(20 * time.Millisecond)
	r.write(r.w, numbered("gc", 3))
	got, tails, bytes, detail := r.run(2500*time.Millisecond, nil)
	t.Logf("third start: lostTails %d lostBytes %d %q (delivered %v)", tails, bytes, detail, got)
	l := len(numbered("gd", 3))
	if n := rev23bGapLines(got, "gd", 3); n != 3 || tails != 0 {
		t.Errorf("the later generation w.log.1.gz (%d decompressed bytes) beside a plain w.log.1 that is not its twin: %d of its 3 lines read, lostTails %d lostBytes %d %q; want each read once by P's source, nothing counted",
			l, n, tails, bytes, detail)
	}
	if rev23bGapLines(got, "ge", 3) != 3 || rev23bGapLines(got, "gc", 3) != 3 {
		t.Errorf("third start delivered %v, want ge-0..2 and gc-0..2 once", got)
	}
}

// D (gzOnly; review 24c C's configuration, a later generation instead of
// a gap): rotatedNames lists the compressed generations only
// ("w.log.*.gz"). P's file compressed (w.log.2.gz: its source reads it
// from the pointer, then the later generations through gzip). A later
// generation L ("gd" lines) is being compressed at the start: w.log.1.gz
// whole, its plain twin w.log.1 still beside it (gzip not yet past its
// unlink, or gzip -k). P's source leaves out L's .gz ("its plain twin
// still exists; reading the twin") but never lists the twin (not a
// generation name); readGaps looks at the twin from the .gz's side
// (gapTwin) and finds it in P's source's window (read by that source):
// not counted. gzip then finishes (the twin unlinked 0.5 s into the run):
// the .gz was not looked at again, L's 3 lines neither read nor counted.
// Now P's source reads L's .gz (its twin is read by nobody): each line
// once, nothing counted.
func TestRev24DRGzOnlyLaterGenerationTwinNotAGenerationNameRead(t *testing.T) {
	t.Parallel()
	r := rev25aLaterGz(t, true) // L being compressed: its twin still there
	time.Sleep(20 * time.Millisecond)
	r.write(r.w, numbered("gc", 3))
	go func() {
		time.Sleep(500 * time.Millisecond)
		os.Remove(r.w + ".1") // gzip finishes just after the start: only the .gz is left
	}()
	got, tails, bytes, detail := r.rev24crRunNames([]string{"w.log.*.gz"}, 3*time.Second)
	t.Logf("third start: lostTails %d lostBytes %d %q (delivered %v)", tails, bytes, detail, got)
	l := len(numbered("gd", 3))
	if n := rev23bGapLines(got, "gd", 3); n != 3 || tails != 0 {
		t.Errorf("the later generation w.log.1.gz (%d decompressed bytes) with its plain twin beside it, rotatedNames listing .gz names only: %d of its 3 lines read, lostTails %d lostBytes %d %q; want each read once by P's source, nothing counted",
			l, n, tails, bytes, detail)
	}
	if rev23bGapLines(got, "gc", 3) != 3 {
		t.Errorf("third start delivered %v, want gc-0..2 once", got)
	}
}

// rev25aLaterGz: rev24aRig after its second start, stopped, with O's file
// out beside the path (w.log.3), no gap, P's file rotated and compressed
// (w.log.2.gz: gzOnly), and — past P's .gz's mtime by more than
// mtimeSlack — a later generation L ("gd" lines) rotated to w.log.1 and
// compressed to w.log.1.gz, its plain twin kept when keep.
func rev25aLaterGz(t *testing.T, keep bool) *rev18cRig {
	r := rev24aRig(t)
	r.rename(r.x, r.w+".3")
	if err := os.Remove(r.w + ".1"); err != nil { // no gap here
		t.Fatal(err)
	}
	r.rename(r.w, r.w+".2")
	gzipLikeGzip(t, r.w+".2", r.w+".2.gz", false) // P compressed: gzOnly
	time.Sleep(mtimeSlack + 200*time.Millisecond)
	r.write(r.w, numbered("gd", 3)) // L
	r.rename(r.w, r.w+".1")
	gzipLikeGzip(t, r.w+".1", r.w+".1.gz", keep)
	return r
}
