package file

// Review 25d, the glob side (decideHeld's tookAsCopy with copyTakeSlack
// and birth times). go test -count=1 -run 'TestRev25DR' ./source/file
// D (older: a copy taken by a stream closed before a rescan met it was read
// again) failed on the reviewed code (79154bc); fixed in the twenty-fifth
// session: admit's tookForCopy looks at the copies closed streams took
// (gstream.copies) too.

import (
	"path/filepath"
	"testing"
	"time"
)

// rev25dRunGlob is rev25bRunGlobMid with the glob's fsnotify off (noNotify:
// discovery by rescan only, every scan) and closeInactive inactive.
func rev25dRunGlob(t *testing.T, pattern, data string, exclude []string, noNotify bool, scan, inactive, d time.Duration, mid func()) (map[string]int, uint64, uint64, string) {
	t.Helper()
	return rev25RunGlobSet(t, pattern, data, d, mid, func(c *GlobConfig) {
		c.Stream.Logger = rev25bLog(t)
		c.Stream.NoNotify = noNotify
		c.Exclude = exclude
		c.ScanInterval = scan
		c.CloseInactive = inactive
	})
}

// D (older: fails at a54cbb9, 7caa5d4 and d78bdda too — the latest patch's copyTakeSlack is not
// what drops it; probed for item 4, "a take before the hold"): a duplicate
// of a whole copy. A glob "dir/*" excluding "dir/*.gz", no fsnotify (a
// file system without inotify events — NFS, a FUSE mount: discovery by
// rescan only, scanInterval 3 s here, 10 s by default). w.log ("ga" lines)
// is read and committed, its stream open. Right after a scan logrotate's
// copytruncate runs: the copy w.log.1, w.log cut. w.log's source (polling
// its file every 50 ms) finds it truncated at once and takes w.log.1 for
// its copy (a CopyTaken of its key, read from offset 15: nothing unread);
// then, inactive, the stream is closed (closeInactive 700 ms: its takes
// move to gstream.copies). The next scan, ~2.7 s after the take, meets
// w.log.1: admit's tookForCopy asks only open sources (c.src nil: the
// closed stream's copies are not looked at), and it is not held back
// either (copyCandidate: no "held back" in the log — w.log's stream now
// stands for the cut file): enqueued, read from its start as a file of
// its own, ga-0..2 delivered twice. With the stream still open at the scan
// (closeInactive 10 s) it passes: tookForCopy finds the take. The README:
// a copytruncate copy the original's stream took "is not read again —
// also when a rescan meets it only after the truncation". (Were it held,
// the latest patch's copyTakeSlack would drop the take too: more than 1 s
// before the hold began.)
func TestRev25DRDCopyTakenBeforeARescanMetItReadAgain(t *testing.T) {
	t.Parallel()
	dir, data, pattern, exclude, w := rev25GlobGa(t)
	w1 := filepath.Join(dir, "w.log.1")
	got, tails, lbytes, detail := rev25dRunGlob(t, pattern, data, exclude, true, 3*time.Second, 700*time.Millisecond, 5*time.Second, func() {
		time.Sleep(300 * time.Millisecond) // read and committed, its stream open; the next scan 2.7 s away
		rev25CopyTruncate(t, w, w1)
	})
	t.Logf("run: lostTails %d lostBytes %d %q (delivered %v)", tails, lbytes, detail, got)
	if got["ga-0"] != 1 || got["ga-2"] != 1 {
		t.Errorf("delivered %v, want ga-0..2 once: w.log.1, the copytruncate copy w.log's source took, read again as a file of its own (the take more than copyTakeSlack before the rescan that held it back)", got)
	}
}
