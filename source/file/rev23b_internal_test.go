package file

// Review 23b (of 1799262, countGzGap after review 23a): a compressed gap
// generation beside a glob path is counted, once, and only where nobody
// reads it.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tailfeed/pointer"
)

// rev23bGapLines counts the gap's lines delivered.
func rev23bGapLines(got map[string]int, prefix string, n int) int {
	d := 0
	for i := range n {
		d += got[fmt.Sprintf("%s-%d", prefix, i)]
	}
	return d
}

// B: copytruncate + compress while stopped. P's file (the new w.log, 3
// lines, < 4 KiB: P names its whole content so far) grows by a tail while
// tailfeed is down; logrotate copies it to w.log.1 (copytruncate), cuts
// w.log, compresses the copy (w.log.1.gz, mtime kept) and the application
// writes on. The older pointer O's file is beside the path (w.log.2), so
// readGaps runs: the .gz's mtime is between O's file's birth and w.log's
// last write, its decompressed bytes longer than P's fingerprint (not
// "whole"): countGzGap counts it, all of its decompressed bytes. But P's
// source finds w.log cut and reads the unread tail from the .gz copy
// (copyAt → findGzCopy): the tail is delivered and counted lost, and the
// lines read before the stop are counted lost too.
func TestRev23BBCompressedCopytruncateCopyReadByThePathsSourceIsCountedLost(t *testing.T) {
	t.Parallel()
	r := newNoGapRig(t)
	// While stopped: O's file out beside the path; w.log grows, is copied,
	// cut and written on; the copy compressed.
	r.rename(r.x, r.w+".2")
	data := r.copytruncate(numbered("tail", 3), r.w+".1", false, nil)
	r.writeOn(numbered("gc", 3))
	got, _, tails, bytes, detail := r.startLogged("third", "")
	if tail := rev23bGapLines(got, "tail", 3); tail > 0 && tails > 0 && strings.Contains(detail, ".gz") {
		t.Errorf("the copytruncate copy %s was read by w.log's source (its tail delivered %d times) and counted lost as a gap generation: lostTails %d lostBytes %d (all %d decompressed bytes, %d of them delivered at the second start) %q",
			r.w+".1.gz", tail, tails, bytes, len(data), len(numbered("gb", 3)), detail)
	}
}

// C: the compressed gap the third start counts is a generation holding
// only the banner its application writes when it opens its log: the
// epochs line "lost" names the .gz's key with its whole decompressed
// content as first bytes. logrotate expires the .gz; while stopped, the
// next rotation's generation w.log.1 is given its inode (a freed inode is
// reused for the next file made in the directory) and begins, like every
// generation, with the banner; w.log (P's file) is rotated out to w.log.3
// and no new w.log is made yet. At the fourth start readGaps finds w.log.1
// between the files taken beside the path, and readGap's named[k] check
// takes the "lost" line — written before w.log.1 was born, naming the
// .gz's decompressed bytes — for "read (or adopted) by a stream before":
// w.log.1 is read by nobody and counted by nobody.
func TestRev23BCLostLineNamesAPlainGapOnTheGzsReusedInode(t *testing.T) {
	// (Not parallel: another test's file would take the freed inode.)
	const banner = "=== app started ===\n"
	r, got3, tails3, bytes3, detail3 := rev23aGz(t, numbered("ga", 3), banner, numbered("gb", 3), nil, 2*time.Second)
	if tails3 != 1 || !strings.Contains(detail3, r.w+".1.gz") {
		t.Skipf("the third start did not count the compressed gap: lostTails %d lostBytes %d %q (delivered %v)", tails3, bytes3, detail3, got3)
	}
	gzKey := rev18cKey(t, r.w+".1.gz")
	lines, _ := pointer.ReadEpochs(filepath.Join(r.data, "feeds", "f.epochs"))
	lostLine := false
	for _, l := range lines {
		if l.FileKey == gzKey || l.PrevFileKey == gzKey {
			if l.Reason != "lost" || l.PrevEpoch != 0 {
				t.Skipf("an epochs line other than the .gz's \"lost\" names its key: %+v", l)
			}
			lostLine = true
		}
	}
	if !lostLine {
		t.Fatalf("no epochs line \"lost\" names the counted .gz (key %016x): %+v", gzKey, lines)
	}
	if err := os.Remove(r.w + ".1.gz"); err != nil {
		t.Fatal(err)
	}
	late := banner + numbered("late", 3)
	reused := false
	for i := 0; i < 200 && !reused; i++ {
		r.write(r.w+".1", late)
		if rev18cKey(t, r.w+".1") == gzKey {
			reused = true
			break
		}
		os.Remove(r.w + ".1")
		time.Sleep(time.Millisecond)
	}
	if !reused {
		t.Skip("the .gz's inode given to no new file in 200 tries")
	}
	time.Sleep(20 * time.Millisecond)
	r.rename(r.w, r.w+".3")
	got, delivered, tails, bytes, detail := r.startLogged("fourth", "late")
	wantReadOrCounted(t, delivered, tails, "w.log.1 (%d bytes, born after the .gz counted at the third start was expired, on its inode) is neither read nor counted: the epochs line \"lost\" of the .gz named it (delivered %v; lostTails %d lostBytes %d %q)",
		len(late), got, tails, bytes, detail)
}

// D: the gap w.log.1 is compressed at once (logrotate's compress without
// delaycompress, the application creating its new log at its next write:
// the .gz is born before the new w.log). While stopped, the new w.log (P's
// file, written 20 ms after the gap) is rotated out too (w.log.3) and a
// newer w.log made. At the third start the .gz's mtime is within
// mtimeSlack of P's file's, so countGzGap leaves it to the path's source
// ("whose later generations, this one among them, its source reads through
// gzip", README). That source scans the later generations of P's file
// born after it (scanGenerations' born: birthTime of P's file, found by
// its key) unless modified at or after its mtime: the .gz, born before P's
// file and written before it, is not among them. Neither read nor counted.
func TestRev23BDGzBornBeforeThePointersFileWithinTheSlackIsLostSilently(t *testing.T) {
	t.Parallel()
	r := newRev18cRig(t)
	r.firstStart(numbered("ga", 3), nil)
	r.rename(r.w, r.x)
	time.Sleep(20 * time.Millisecond)
	gap := numbered("gap", 3)
	r.write(r.w+".1", gap)
	gzipLikeGzip(t, r.w+".1", r.w+".1.gz", false)
	time.Sleep(20 * time.Millisecond)
	r.write(r.w, numbered("gb", 3))
	r.run(1500*time.Millisecond, nil)
	r.rename(r.x, r.w+".2")
	r.rotate(r.w+".3", numbered("gc", 3))
	got, delivered, tails, bytes, detail := r.startLogged("third", "gap")
	wantReadOrCounted(t, delivered, tails, "the compressed gap %s (%d bytes) is neither read nor counted: lostTails %d lostBytes %d %q (delivered %v)",
		r.w+".1.gz", len(gap), tails, bytes, detail, got)
}

// F: two gap generations between x.log (O's file) and the new w.log hold
// the same bytes — the banner the application writes when it opens its
// log, nothing after it — and both are compressed before the third start.
// countGzGap counts the first and appends its epochs line "lost", whose
// first bytes (the whole decompressed content) it then matches the second
// against as "its content was read (or adopted) by a stream before": no
// stream read either; one is counted, the other lost silently.
func TestRev23BFTwoCompressedGapsWithTheSameBytesCountedOnce(t *testing.T) {
	t.Parallel()
	const banner = "=== app started ===\n"
	r := newRev18cRig(t)
	r.firstStart(numbered("ga", 3), nil)
	r.rename(r.w, r.x)
	time.Sleep(20 * time.Millisecond)
	r.write(r.w+".3", banner)
	time.Sleep(20 * time.Millisecond)
	r.write(r.w+".1", banner)
	time.Sleep(20 * time.Millisecond)
	r.write(r.w, numbered("gb", 3))
	r.run(1500*time.Millisecond, nil)
	r.rename(r.x, r.w+".2")
	gzipLikeGzip(t, r.w+".3", r.w+".3.gz", false)
	gzipLikeGzip(t, r.w+".1", r.w+".1.gz", false)
	got, _, tails, bytes, detail := r.startLogged("third", "")
	if got[strings.TrimSuffix(banner, "\n")] == 0 && (tails != 2 || bytes != 2*uint64(len(banner))) {
		t.Errorf("two compressed gap generations (w.log.1.gz, w.log.3.gz, %d bytes each, read by no stream) counted as lostTails %d lostBytes %d %q, want lostTails 2 lostBytes %d (delivered %v)",
			len(banner), tails, bytes, detail, 2*len(banner), got)
	}
}
