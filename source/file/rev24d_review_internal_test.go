package file

// Review 24d (independent review of 8f30b99: gzTwin, the twin looked at
// from its .gz's side, countGzGap without a twin check, countGap's "also"
// keys). Fixed: A, A' (a file sharing only a header with a .gz is no twin:
// gzTwin wants every first byte the .gz has), B's readGaps part (a .gz
// beside another file of its name is outside its source's window) and E
// (readGap leaves the source's window to the source). B's source part, C
// and D are parked (open_rev24d_internal_test.go); all fail at 083c653.

import (
	"testing"
	"time"
)

// rev24drRig is rev24aRig with every generation beginning with hdr (a CSV
// header, a banner the application writes when it opens its log): w.log
// (O's file: hdr + 3 "ga" lines) read; renamed to x.log; the gap w.log.1
// (hdr + 3 "gap" lines) written; more than mtimeSlack later the new w.log
// (P's file: pHdr) read by the second start.
func rev24drRig(t *testing.T, hdr, p string) *rev18cRig {
	t.Helper()
	r, _ := rev24aGapRig(t, hdr, p)
	return r
}

const rev24drHdr = "time,level,msg\n"

// A (not gzOnly; review 24c B' with a shared header): P's file (the new
// w.log) held only the application's header when read at the second
// start. While stopped: O's file goes out beside the path (w.log.3), the
// gap is compressed (w.log.1.gz), P's file is rotated to the plain
// w.log.1 (delaycompress added) and a new w.log is written. gzTwin takes
// w.log.1 (P's file) for the .gz's plain twin: P's 15 bytes are the
// first 15 the .gz decompresses to ("as far as both go") — a shared
// header, not a copy (the rule readGap and gapFile.unread keep since
// review 18c A). readGap on P's file: P's own file, not a gap; the .gz is
// never looked at. The gap's 3 lines are neither read nor counted: silent
// loss. (The same with P's file holding more than the header: counted,
// TestRev24CRGapBesideThePointersPlainFileOfItsNameSilentlyLost.)
func TestRev24DRSharedHeaderPlainFileTakenForTheGzTwinGapSilentlyLost(t *testing.T) {
	t.Parallel()
	r := rev24drRig(t, rev24drHdr, rev24drHdr)
	r.gapCompressedBeside(r.w + ".3")
	r.rotate(r.w+".1", rev24drHdr+numbered("gc", 3)) // P, plain (delaycompress), its name the gap's .gz's less .gz
	got, tails, bytes, detail := r.startFor("third", 2500*time.Millisecond)
	gap := len(rev24drHdr + numbered("gap", 3))
	wantGapReadOrCountedOnce(t, got, tails, bytes, gap, "the compressed gap w.log.1.gz (%d decompressed bytes, read by no stream) beside P's plain w.log.1 holding only the shared header: neither read nor counted (lostTails %d lostBytes %d %q)",
		gap, tails, bytes, detail)
	wantGcOnce(t, got)
}

// A' (gzOnly; review 24c B with a shared header): P's file compressed
// (w.log.2.gz); a later generation L that holds only the header so far
// (the application reopened its log, wrote its banner, was rotated at
// once: delaycompress) is the plain w.log.1 beside the gap's w.log.1.gz.
// gzTwin takes L for the gap's twin (its header is the .gz's first bytes
// as far as L goes); gapTwin finds L a later generation P's source reads
// and returns; the .gz is never looked at. The gap's lines are neither
// read nor counted.
func TestRev24DRGzOnlySharedHeaderLaterGenerationTakenForTwinGapSilentlyLost(t *testing.T) {
	t.Parallel()
	r := rev24drRig(t, rev24drHdr, rev24drHdr+numbered("gb", 3))
	r.gapCompressedBeside(r.w + ".3")
	r.laterPlainBesideGz(rev24drHdr, rev24drHdr+numbered("gc", 3)) // L: its header only
	got, tails, bytes, detail := r.startFor("third", 2500*time.Millisecond)
	gap := len(rev24drHdr + numbered("gap", 3))
	wantGapReadOrCountedOnce(t, got, tails, bytes, gap, "the compressed gap w.log.1.gz (%d decompressed bytes, read by no stream) beside a later header-only plain w.log.1 (not its twin): neither read nor counted (lostTails %d lostBytes %d %q)",
		gap, tails, bytes, detail)
	wantGcOnce(t, got)
}

// B (readGaps' part fixed with the review, the source's in the
// twenty-fifth session) and E (found building it): the gap G (w.log.1,
// last written 20 ms before P's file) compressed while stopped
// (w.log.1.gz, in P's source's window: modified within mtimeSlack of P's
// .gz's mtime), P's file rotated and compressed (w.log.2.gz, taken for the
// copy of P's file cut: the path's new file adopts P's pointer), and a
// later generation M rotated to a plain w.log.1 (delaycompress) beside G's
// .gz: not its twin. P's source left out any .gz with a plain file of its
// name, so it did not read G's .gz although it is in its window, and
// readGaps counted it (before that, neither read nor counted); now the
// source takes only a twin (twinRead) for the .gz's content, reads G's
// .gz as a later generation, and readGaps leaves it to it: read once, not
// counted. E: readGap read M from its start as a gap (born before the
// path's new file) while P's source read it as a later generation:
// delivered twice, also at 083c653; readGap now leaves the source's window
// to the source, as countGzGap does.
func TestRev24DRGapInTheSourcesWindowBesideANonTwinPlainOfItsNameReadBySource(t *testing.T) {
	t.Parallel()
	r := newRev18cRig(t)
	r.firstStart(numbered("ga", 3), nil)
	time.Sleep(mtimeSlack) // O's file well before P's window
	r.rotateWithGap(numbered("gap", 3), numbered("gb", 3))
	if got, _, _, _ := r.run(1500*time.Millisecond, nil); rev23bGapLines(got, "gb", 3) != 3 {
		t.Fatalf("the second start did not read w.log once (delivered %v)", got)
	}
	// While stopped.
	r.gapCompressedBeside(r.w + ".3")
	r.rotate(r.w+".2", numbered("ge", 3)) // M
	gzipLikeGzip(t, r.w+".2", r.w+".2.gz", false)
	r.rotate(r.w+".1", numbered("gc", 3)) // M plain, beside G's .gz
	got, tails, bytes, detail := r.startFor("third", 2500*time.Millisecond)
	gap := len(numbered("gap", 3))
	if n := rev23bGapLines(got, "gap", 3); n != 3 || tails != 0 {
		t.Errorf("the gap w.log.1.gz (%d bytes) beside a plain w.log.1 that is not its twin: %d of its 3 lines delivered, lostTails %d lostBytes %d %q; want it read once by P's source (a later generation in its window), not counted",
			gap, n, tails, bytes, detail)
	}
	if rev23bGapLines(got, "ge", 3) != 3 || rev23bGapLines(got, "gc", 3) != 3 {
		t.Errorf("third start delivered %v, want ge-0..2 and gc-0..2 once", got)
	}
}
