//go:build openfindings

package file

// Review 26c, finding C: parked in the twenty-sixth session (go test -tags
// openfindings -count=1 -run 'TestRev26CRC' ./source/file). Where the file
// system keeps no birth times, a new file on the inode of a copy its
// original's source took, renamed between the glob's walk and its look, is
// taken for that copy: headStill cannot open the path the walk listed and
// answers "not known". Returning "not a copy" there would send a real copy
// that gzip unlinked meanwhile to the other rules; the walk's own stat is
// what would tell. Needs: no birth times, inode reuse and a rename in the
// microseconds between walk and look.

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// C (headStill's "unknown → true": a held path that names no file now is
// taken for still the copy; no birth times — overlayfs; not parallel): A2
// of review 26a, with w2.log moved within the glob between the scan's walk
// and its look (a rename by the application or a log manager just after
// the file was made; on a glob of thousands of files the walk and the look
// are far apart). A glob "dir/*.log"; w.log ("ga" lines) read, committed,
// closed; copytruncate + compress: w.log's source takes w.log.1 for its
// copy, gzip writes w.log.1.gz and unlinks w.log.1. 2.5 s later a new log
// w2.log ("gn" lines only: not w.log's first bytes) appears on the inode
// w.log.1 had; the walk that lists it is followed (afterWalk) by its
// rename to w3.log. DESIGN §4: "Reading a file twice is a duplicate, never
// a gap"; §10: "A new key is a new stream, read from its start". 26a A2's
// fix: tookIt reads the file's first bytes (headStill) and finds them
// other than the take's. Observed: headStill opens the listed path, finds
// no file there and answers "not known → true"; birthTimePath of that path
// is zero too, so tookIt falls to "first seen within a minute of the take":
// w2.log is marked a copy of w.log; the next scan follows the key to
// w3.log as a rename (sameFile: a stream never read, no birth time), still
// a copy — gn-0..2 never read, lostTails 0 (glob.go headStill ~1968: an
// open error is "true"; the walk's own stat, found.born and its key, is not
// used).
func TestRev26CRCNewFileOnCopyInodeMovedAfterWalkTakenForCopyNoBirthTimes(t *testing.T) {
	dir, data := t.TempDir(), t.TempDir()
	rev22aNoBirthTimes(t, dir)
	w, w1 := filepath.Join(dir, "w.log"), filepath.Join(dir, "w.log.1")
	w2, w3 := filepath.Join(dir, "w2.log"), filepath.Join(dir, "w3.log")
	if err := os.WriteFile(w, []byte(numbered("ga", 3)), 0o600); err != nil {
		t.Fatal(err)
	}
	var moved atomic.Bool
	hook := func(list []found) {
		for _, f := range list {
			if f.path == w2 && !moved.Load() {
				if err := os.Rename(w2, w3); err == nil {
					moved.Store(true)
				}
			}
		}
	}
	ig, stop := runGlobWith(t, filepath.Join(dir, "*.log"), data, 5*time.Second, func(c *GlobConfig) {
		c.Stream.Logger = rev25bLog(t)
		c.CloseInactive = 50 * time.Millisecond
	}, func(g *Glob) {
		g.drainBound = 300 * time.Millisecond
		g.afterWalk = hook
	})
	c := ig.consumeAll()
	time.Sleep(800 * time.Millisecond) // read, committed, closed (closeInactive 50 ms)
	rev25CopyTruncate(t, w, w1)
	rev24aAppend(t, w, "# app started\n")
	time.Sleep(600 * time.Millisecond) // w.log's source takes w.log.1 for its copy
	hold := filepath.Join(t.TempDir(), "hold")
	if err := os.Link(w1, hold); err != nil {
		t.Fatal(err)
	}
	gzipLikeGzip(t, w1, w1+".gz", false)
	time.Sleep(2500 * time.Millisecond)
	if err := os.WriteFile(hold, []byte(numbered("gn", 3)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(hold, w2); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	got := c()
	tails, lbytes, detail := ig.lost()
	stop()
	t.Logf("run: moved after the walk %v; lostTails %d lostBytes %d %q (delivered %v)", moved.Load(), tails, lbytes, detail, got)
	if !moved.Load() {
		t.Fatal("the walk never listed w2.log")
	}
	if got["ga-0"] != 1 || got["ga-2"] != 1 {
		t.Errorf("delivered %v, want ga-0..2 once", got)
	}
	if n := rev23bGapLines(got, "gn", 3); n != 3 && tails == 0 {
		t.Errorf("w2.log's gn lines delivered %d times in all (want 3) and lostTails 0: the new file on w.log.1's freed inode, moved to w3.log between the walk and the look, was taken for w.log's copy — headStill could not open the listed path and said \"still the copy\" (not known → true), no birth time: tookIt's minute — never read, a loss nobody counted", n)
	}
}
