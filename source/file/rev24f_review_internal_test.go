package file

// Review 24f (independent review of b2cff3a: gzCopyOf lists the .gz
// generations as scanGenerations does). Finding A: scanGenerationsOnce
// marks an identity seen before it leaves out a .gz with a plain file of
// its name, so a hard link of that .gz under a later name is left out too
// (findGzCopy takes no copy); gzCopyOf judges each name on its own and
// takes the second link: readGaps' window (genRef the .gz's mtime) is not
// the source's (the pointer file's mtime), and readGap skips a plain gap
// nobody reads. Fixed: gzCopyOf takes a file once, under its first name
// listed. TestRev24FRGzOnlyCopyOutsideStemGapCounted is a check
// (passes): the gzOnly branch with P's .gz outside the path's stem.

import (
	"os"
	"testing"
	"time"
)

// A (cut branch, hard-linked .gz): as TestRev24ERCutGzCopyBesideNonTwinPlainGapSilentlyLost,
// and P's compressed copy w.log.2.gz also hard-linked as w.log.5.gz (no
// plain file of that name). P's source's findGzCopy (scanGenerations)
// meets w.log.2.gz first (directory order), marks its identity seen, leaves
// it out for the plain w.log.2 beside it, then leaves out w.log.5.gz as
// seen: no copy, its ref is the pointer file's mtime (more than mtimeSlack
// after P's write), the gap outside its scan. gzCopyOf takes w.log.5.gz:
// genRef is P's mtime, the gap (20 ms before P) inside, readGap skips it.
// Read by nobody, not counted.
func TestRev24FRCutGzCopyHardLinkSeenGapSilentlyLost(t *testing.T) {
	t.Parallel()
	r, pk := rev24erRig(t, numbered("gb", 3), mtimeSlack+500*time.Millisecond)
	// While stopped.
	r.rename(r.x, r.w+".3")
	rev24erCopy(t, r.w, r.w+".2")                 // logrotate's copytruncate: a copy, P's mtime kept
	gzipLikeGzip(t, r.w+".2", r.w+".2.gz", false) // the copy compressed
	if err := os.Link(r.w+".2.gz", r.w+".5.gz"); err != nil {
		t.Fatal(err) // the same .gz under a second generation name
	}
	r.rename(r.w+".1", r.w+".2")    // the gap, plain, beside P's .gz: not its twin
	r.write(r.w, numbered("gc", 3)) // P's file cut and written on in place: the cut branch
	rev24erSameKey(t, r.w, pk)
	got, tails, bytes, detail := r.run(2500*time.Millisecond, nil)
	t.Logf("third start: lostTails %d lostBytes %d %q (delivered %v)", tails, bytes, detail, got)
	gap := len(numbered("gap", 3))
	if n := rev23bGapLines(got, "gap", 3); n == 0 && bytes < uint64(gap) {
		t.Errorf("the gap w.log.2: neither read (readGap takes it for a later generation P's source reads from w.log.5.gz's mtime; the source's scan leaves that hard link out as seen, takes no copy and scans from its pointer file's mtime) nor its bytes counted: lostTails %d lostBytes %d %q",
			tails, bytes, detail)
	}
	if rev23bGapLines(got, "gc", 3) != 3 {
		t.Errorf("third start delivered %v, want gc-0..2 once", got)
	}
}

// Check (gzOnly branch, P's .gz outside the path's stem; rotatedNames
// ["w.log.*", "old-*"]): P's file grows by a tail more than mtimeSlack after
// its first write, then, while stopped, is renamed to old-w.log and
// compressed (old-w.log.gz, mtime P's last write), the gap compressed
// (w.log.1.gz, its mtime 20 ms before P's first write), and a new w.log
// made. P's source reads old-w.log.gz from the pointer (findGzCopy) and
// scans from its mtime: the gap .gz is outside, so readGaps must count it
// (gzCopyOf finds old-w.log.gz: genRef its mtime). Expected to pass.
func TestRev24FRGzOnlyCopyOutsideStemGapCounted(t *testing.T) {
	t.Parallel()
	r, _ := rev24erRig(t, numbered("gb", 3), 0)
	// While stopped.
	time.Sleep(mtimeSlack + 500*time.Millisecond)
	f, err := os.OpenFile(r.w, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(numbered("gt", 3)) // P's unread tail
	f.Close()
	r.rename(r.x, r.w+".3")
	gzipLikeGzip(t, r.w+".1", r.w+".1.gz", false) // the gap compressed
	r.rename(r.w, r.dir+"/old-w.log")
	gzipLikeGzip(t, r.dir+"/old-w.log", r.dir+"/old-w.log.gz", false) // P compressed, outside the stem
	r.write(r.w, numbered("gc", 3))                                   // a new file at the path
	got, tails, bytes, detail := r.rev24crRunNames([]string{"w.log.*", "old-*"}, 2500*time.Millisecond)
	t.Logf("third start: lostTails %d lostBytes %d %q (delivered %v)", tails, bytes, detail, got)
	gap := len(numbered("gap", 3))
	if n := rev23bGapLines(got, "gap", 3); n == 0 && bytes < uint64(gap) {
		t.Errorf("the compressed gap w.log.1.gz: neither read nor counted: lostTails %d lostBytes %d %q", tails, bytes, detail)
	}
	if rev23bGapLines(got, "gt", 3) != 3 || rev23bGapLines(got, "gc", 3) != 3 {
		t.Errorf("third start delivered %v, want gt-0..2 and gc-0..2 once", got)
	}
}
