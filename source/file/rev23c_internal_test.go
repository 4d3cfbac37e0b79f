package file

// Review 23c (of fc50baf, countGzGap and readGap after review 23b).

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tailfeed/pointer"
)

// A: the generations of w.log begin with the same CSV header (x.log, O's
// file, was written before it was: no plain copy of P's file by its first
// bytes). The new w.log (P's file) held only its header when its stream
// bound and committed it (P names the header alone: 23a A's state). While stopped:
// x.log (O's file) goes out beside the path (w.log.2); the gap w.log.1
// (header + its lines) is compressed; w.log grows by a tail, logrotate's
// copytruncate copies it (w.log.4, compressed to w.log.4.gz) and cuts it,
// and the application writes on. At the third start readGaps finds the
// path's file cut (cut), and countGzGap leaves every .gz whose decompressed
// bytes begin with P's first bytes and hold its offset to P's source ("a
// compressed copy of the path's file"): the gap, by its header alone. P's
// source takes the copy modified last (findGzCopy: w.log.4.gz, the real
// copy), and the gap (modified more than mtimeSlack before it) is no later
// generation of that copy: read by nobody, counted by nobody.
func TestRev23CACutPathFileHidesACompressedGapSharingItsHeader(t *testing.T) {
	t.Parallel()
	const hdr = "time,level,msg\n"
	r := newRev18cRig(t)
	r.firstStart(numbered("ga", 3), nil) // (written before the header was: no copy of P's file by its first bytes)
	gap := hdr + numbered("gap", 3)
	r.rotateWithGap(gap, hdr)
	got2, _, _, _ := r.run(1500*time.Millisecond, nil)
	if got2[strings.TrimSuffix(hdr, "\n")] == 0 {
		t.Skipf("the second start did not read w.log's header (delivered %v)", got2)
	}
	// While stopped.
	r.rename(r.x, r.w+".2")
	gzipLikeGzip(t, r.w+".1", r.w+".1.gz", false)
	time.Sleep(mtimeSlack + 200*time.Millisecond) // the copy is made later than the gap's slack
	r.copytruncate(numbered("tail", 3), r.w+".4", false, nil)
	r.writeOn(numbered("gc", 3))
	got, delivered, tails, bytes, detail := r.startLogged("third", "gap")
	t.Logf("third start: tail lines delivered %d", rev23bGapLines(got, "tail", 3))
	wantReadOrCounted(t, delivered, tails, "the compressed gap %s (%d decompressed bytes, read by no stream) is neither read nor counted: it shares the cut path file's header, its pointer's only first bytes (lostTails %d lostBytes %d %q; delivered %v)",
		r.w+".1.gz", len(gap), tails, bytes, detail, got)
}

// B: as 23b B (copytruncate + compress while stopped), with a gap
// generation: O's file x.log, then w.log.1 (the gap, read by no stream),
// then the new w.log (P's file). While stopped: x.log goes out beside the
// path (w.log.2), the gap is compressed (w.log.1.gz), w.log grows by a
// tail, is copied (w.log.4, compressed to w.log.4.gz), cut and written on
// — within mtimeSlack of the gap's last write. P's source finds w.log cut,
// reads the copy from its pointer and then, as after every file it takes
// beside the path, the generations modified at or after the copy's mtime
// less mtimeSlack (scanGenerations, no birth bound for a copy): the gap
// among them. countGzGap bounds no such window for a cut path file
// (genScan is set only for a pointer's file found by its key) and counts
// the same .gz lost: its lines delivered and counted lost (DESIGN §4: a
// loss only where a line was skipped).
func TestRev23CBGapReadAfterTheCutPathFilesCopyIsCountedLost(t *testing.T) {
	t.Parallel()
	r := newRev18cRig(t)
	r.firstStart(numbered("ga", 3), nil)
	gapMod := r.rotateWithGap(numbered("gap", 3), numbered("gb", 3))
	r.secondStartReadsW(1200 * time.Millisecond)
	// While stopped.
	r.rename(r.x, r.w+".2")
	gzipLikeGzip(t, r.w+".1", r.w+".1.gz", false)
	r.copytruncate(numbered("tail", 3), r.w+".4", false, func() {
		if time.Since(gapMod) > mtimeSlack-200*time.Millisecond {
			t.Skipf("the copy was made %v after the gap's last write, not within mtimeSlack", time.Since(gapMod))
		}
	})
	r.writeOn(numbered("gc", 3))
	got, delivered, tails, bytes, detail := r.startLogged("third", "gap")
	t.Logf("third start: tail lines delivered %d", rev23bGapLines(got, "tail", 3))
	wantNotReadAndCounted(t, delivered, tails, "the compressed gap %s was read by w.log's source after its cut file's copy (its lines delivered %d times) and counted lost: lostTails %d lostBytes %d %q (delivered %v)",
		r.w+".1.gz", delivered, tails, bytes, detail, got)
	wantReadOrCounted(t, delivered, tails, "the compressed gap %s neither read nor counted (delivered %v)", r.w+".1.gz", got)
}

// D: B's root without a gap generation and without timing: two
// copytruncate + compress rotations while stopped. O's file x.log is out
// beside the path (w.log.9), so readGaps runs for w.log. w.log (P's file,
// read to its end) grows by tail1, is copied (to w.log.2.gz in the end)
// and cut; the application writes tail2, and the second rotation copies
// that (w.log.1.gz) and cuts again; the application writes on. P's source
// finds w.log cut, takes the copy holding P's first bytes (w.log.2.gz),
// reads tail1 from the pointer and then the generations modified since
// (the second copy, later: tail2) — every line read. countGzGap leaves
// only a .gz holding P's first bytes to that source (cut): the second
// copy, which begins with tail2, is counted lost as a gap generation
// although its lines are delivered.
func TestRev23CDSecondCopytruncateCopyReadAndCountedLost(t *testing.T) {
	t.Parallel()
	r := newNoGapRig(t)
	// While stopped.
	r.rename(r.x, r.w+".9")
	r.copytruncate(numbered("tail1", 3), r.w+".1", false, nil)
	r.writeOn(numbered("tail2", 3))
	r.rename(r.w+".1.gz", r.w+".2.gz")
	r.copytruncate("", r.w+".1", false, nil)
	r.writeOn(numbered("gc", 3))
	got, tails, bytes, detail := r.run(2*time.Second, nil)
	t1, t2 := rev23bGapLines(got, "tail1", 3), rev23bGapLines(got, "tail2", 3)
	t.Logf("third start: tail1 delivered %d, tail2 %d; lostTails %d lostBytes %d %q (delivered %v)", t1, t2, tails, bytes, detail, got)
	wantNotReadAndCounted(t, t2, tails, "the second copytruncate copy %s was read by w.log's source (tail2 delivered %d times) and counted lost: lostTails %d lostBytes %d %q (delivered %v)",
		r.w+".1.gz", t2, tails, bytes, detail, got)
}

// F: z.log, another file of the feed in the same CSV format, held only its
// header when its stream read and committed it. It is deleted while
// stopped and its inode given to the next file made in the directory: the
// gap generation w.log.1 (the header, then its lines). At the next start
// countGone moves z.log's pointer off its gone file: its epochs line
// names z.log's key and first bytes (the header) as the file left — and is
// written after the gap's birth. At the start after that (O's file out
// beside the path, readGaps runs), readGap takes that line, "written after
// its birth" (the 23b C rule), for one naming the gap: read (or adopted)
// by a stream before. The gap is read by nobody and counted by nobody.
func TestRev23CFLineMovingAGonePointerOffNamesTheGapOnItsReusedInode(t *testing.T) {
	// (Not parallel: another test's file would take the freed inode.)
	const hdr = "time,level,msg\n"
	r := newRev18cRig(t)
	z := filepath.Join(r.dir, "z.log")
	r.firstStart(numbered("ga", 3), func(r *rev18cRig) { r.write(z, hdr) })
	zKey := rev18cKey(t, z)
	r.rename(r.w, r.x)
	if err := os.Remove(z); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	gap := hdr + numbered("gap", 3)
	// The gap is written under a scratch name until a file is given
	// z.log's inode (ext4 holds a just-freed inode back a while), then
	// renamed into place (its birth is its creation's).
	reused := false
	var scratch []string
	for i := 0; i < 600 && !reused; i++ {
		c := filepath.Join(r.dir, fmt.Sprintf("scratch-%d.tmp", i))
		r.write(c, gap)
		if rev18cKey(t, c) == zKey {
			r.rename(c, r.w+".1")
			reused = true
			break
		}
		scratch = append(scratch, c)
		time.Sleep(20 * time.Millisecond)
	}
	for _, c := range scratch {
		os.Remove(c)
	}
	if !reused {
		t.Skip("z.log's inode given to no new file in 12 s")
	}
	gapBorn := birthTimePath(r.w + ".1")
	time.Sleep(20 * time.Millisecond)
	r.write(r.w, numbered("gb", 3))
	r.run(1500*time.Millisecond, nil)
	lines, _ := pointer.ReadEpochs(filepath.Join(r.data, "feeds", "f.epochs"))
	late := false
	for _, l := range lines {
		if (l.FileKey == zKey || l.PrevFileKey == zKey) && l.Time.After(gapBorn) {
			late = true
			t.Logf("an epochs line naming z.log's key written after the gap's birth: %+v", l)
		}
	}
	if !late {
		t.Skipf("no epochs line names z.log's key after the gap's birth: %+v", lines)
	}
	r.rename(r.x, r.w+".2")
	got, delivered, tails, bytes, detail := r.startLogged("third", "gap")
	wantReadOrCounted(t, delivered, tails, "the gap generation %s (%d bytes, on deleted z.log's inode) is neither read nor counted: the line moving z.log's pointer off its gone file named it (lostTails %d lostBytes %d %q; delivered %v)",
		r.w+".1", len(gap), tails, bytes, detail, got)
}
