package file

// Review 24a (independent review of the twenty-fourth session's change:
// readGaps finds the path's pointer's own file compressed too by gzCopyOf).
// A (an overcount the change made) and B, C (silent losses before it) are
// fixed: readGaps mirrors copyAt (a plain copy first), bounds at the later
// of the two copies, and reads a compressed gap's plain twin. D is parked
// (open_rev24a_internal_test.go).

import (
	"os"
	"testing"
	"time"
)

const rev24arHdr = "time,level,msg\n" // every generation begins with it (a CSV header)

// A: every generation of w.log begins with the same header line (review
// 18c A's premise). P's file (the second w.log) held only its header when
// its pointer last committed: P's first bytes are the header, 15 bytes, and
// its offset 15. While stopped: O's file out beside the path (w.log.2), the
// gap compressed (w.log.1.gz), P's file grown, rotated to w.log.3 and
// compressed, a new w.log made. P's source (copyAt) looks for a plain copy
// first (findCopy: any regular file beside the path holding P's first bytes
// and offset, the last written): O's w.log.2 begins with the header, so it
// is taken for P's copy, and the later generations are read from ITS mtime
// (the first start's) less mtimeSlack on: the gap w.log.1.gz is read by
// the source. readGaps' new branch looks only for a .gz (gzCopyOf), bounds
// the source's window at w.log.3.gz's mtime, and counts the gap lost: it
// is delivered AND counted (an overcount; before the change readGaps
// skipped the path and counted nothing). Fixed: readGaps takes the source's
// window from the plain copy findCopy would take.
func TestRev24ARSharedHeaderPlainCopyPickedBySourceGapDeliveredAndCounted(t *testing.T) {
	t.Parallel()
	r, _ := rev24aGapRig(t, rev24arHdr, rev24arHdr) // P's file: only its header at the second start
	// While stopped.
	r.rename(r.x, r.w+".2")
	gzipLikeGzip(t, r.w+".1", r.w+".1.gz", false)
	rev24aAppend(t, r.w, numbered("gb", 3))
	r.rotate(r.w+".3", rev24arHdr+numbered("gc", 3))
	gzipLikeGzip(t, r.w+".3", r.w+".3.gz", false)
	got, tails, bytes, detail := r.startFor("third", 2500*time.Millisecond)
	delivered := rev23bGapLines(got, "gap", 3)
	wantNotReadAndCounted(t, delivered, tails, "the gap w.log.1.gz is delivered (%d of its 3 lines, by the path's source, which took O's w.log.2 for P's plain copy and read the later generations from its mtime) and counted lost as well: lostTails %d lostBytes %d %q (overcount)",
		delivered, tails, bytes, detail)
	wantReadOrCounted(t, delivered, tails, "the gap w.log.1.gz is neither read nor counted (delivered %v)", got)
}

// B: the same shared header, with a plain generation newer than P's .gz
// beside the path (L, w.log.4: rotated after P's file and not compressed
// yet — logrotate still running at the start, or delaycompress for the
// newest one). P's source takes L for P's plain copy (findCopy: the last
// written plain file holding P's 15 first bytes and offset) and reads the
// later generations from L's mtime on: neither P's own .gz (w.log.3.gz,
// its tail "gb" unread) nor the gap w.log.1.gz (last written within
// mtimeSlack before P's file) is read. readGaps' new branch takes
// w.log.3.gz for what P's source reads (cutCopy: not counted) and puts the
// gap inside the source's window (its mtime at or after w.log.3.gz's less
// mtimeSlack: not counted). Both are lost silently (lostTails 0). Fixed:
// the bound is the later of L and the .gz, the window L's: both counted.
func TestRev24ARSharedHeaderNewerPlainCopyPickedBySourceGzLostSilently(t *testing.T) {
	t.Parallel()
	r := rev24arNewerPlainCopy(t)
	got, tails, _, detail := r.startFor("third", 2500*time.Millisecond)
	gb, gaps := rev23bGapLines(got, "gb", 3), rev23bGapLines(got, "gap", 3)
	unread := uint64(0) // each file nobody read is counted once, one read is not
	if gb == 0 {
		unread++
	}
	if gaps == 0 {
		unread++
	}
	if tails != unread {
		t.Errorf("P's tail (gb, in w.log.3.gz: %d delivered) and the gap (w.log.1.gz: %d delivered) are each to be read or counted once: lostTails %d, want %d (%q; delivered %v)",
			gb, gaps, tails, unread, detail, got)
	}
	if gd := rev23bGapLines(got, "gd", 3); gd != 3 {
		t.Errorf("L's lines (gd, w.log.4, read by P's source as its copy) delivered %d times, want 3 (delivered %v)", gd, got)
	}
}

// rev24arNewerPlainCopy builds B's scenario up to its third start: every
// generation begins with rev24arHdr; w.log (O's file) read (firstStart),
// renamed to x.log; 20 ms later the gap w.log.1 (2 "gap" lines) and 20 ms
// after that P's w.log (only its header) read by the second start. While
// stopped: x.log out beside the path (w.log.2); the gap's last write
// (gap-2) 300 ms before P's ("gb" lines); the gap compressed; P's file
// rotated to w.log.3 (a header-only w.log 20 ms later) and compressed;
// more than mtimeSlack later L ("gd" lines) written to w.log and rotated
// to the plain w.log.4 (not compressed yet), a new w.log ("gc") 20 ms
// later.
func rev24arNewerPlainCopy(t *testing.T) *rev18cRig {
	t.Helper()
	r := newRev18cRig(t)
	r.firstStart(rev24arHdr+numbered("ga", 3), nil)
	r.rename(r.w, r.x)
	time.Sleep(20 * time.Millisecond)
	r.write(r.w+".1", rev24arHdr+numbered("gap", 2))
	time.Sleep(20 * time.Millisecond)
	r.write(r.w, rev24arHdr) // P's file: only its header at the second start
	r.run(1500*time.Millisecond, nil)
	// While stopped.
	r.rename(r.x, r.w+".2")
	rev24aAppend(t, r.w+".1", "gap-2\n") // the gap's last write...
	time.Sleep(300 * time.Millisecond)
	rev24aAppend(t, r.w, numbered("gb", 3)) // ...within mtimeSlack before P's
	gzipLikeGzip(t, r.w+".1", r.w+".1.gz", false)
	r.rotate(r.w+".3", rev24arHdr)
	gzipLikeGzip(t, r.w+".3", r.w+".3.gz", false)
	time.Sleep(mtimeSlack + 300*time.Millisecond)
	rev24aAppend(t, r.w, numbered("gd", 3))          // L
	r.rotate(r.w+".4", rev24arHdr+numbered("gc", 3)) // (not compressed yet)
	return r
}

// C: the scenario of TestRev24ACompressedGapCountedWhenThePointersFileIsCompressedToo,
// the gap's compression not finished at the third start (its .gz written
// whole, its plain file not unlinked yet — or gzip -k, logrotate's
// compresscmd keeping the original). countGzGap leaves a .gz with a plain
// twin to the twin (readGap reads it where P's file is found by its key),
// but with P's file compressed (gzOnly) readGaps looks at no plain file:
// the twin is not read, the .gz not counted, nobody looks again once gzip
// unlinks the twin. The gap is lost silently. Fixed: the twin of a .gz
// that is a gap is read (readGzTwin).
func TestRev24ARGapWithPlainTwinNeitherReadNorCountedWhenPsFileIsCompressed(t *testing.T) {
	t.Parallel()
	r := rev24aGzOnly(t, true) // the plain twin still there
	got, tails, _, detail := r.startFor("third", 2*time.Second)
	if n := rev23bGapLines(got, "gap", 3); n > 0 || tails > 0 {
		if n > 0 && (n != 3 || tails != 0) {
			t.Errorf("the gap's plain twin read: %d of its 3 lines delivered, lostTails %d %q, want 3 and 0", n, tails, detail)
		}
		return
	}
	// gzip unlinks the twin; a fourth start.
	if err := os.Remove(r.w + ".1"); err != nil {
		t.Fatal(err)
	}
	got4, tails4, _, _ := r.startFor("fourth", 2*time.Second)
	if n := rev23bGapLines(got4, "gap", 3); n == 0 && tails4 == 0 {
		t.Errorf("the gap (w.log.1, compressed to w.log.1.gz, plain twin unlinked only after the third start) is neither read nor counted at the third start (lostTails %d, delivered %v) nor at the fourth (lostTails %d, delivered %v)",
			tails, got, tails4, got4)
	}
}
