// Review 16b, finding C: found and fixed in the sixteenth session.

// Review 16b, finding C (9b68b88: a watched stream whose file is deleted is
// no longer watched, but its key is never retired).

package file

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tailfeed/internal/fileutil"
	"tailfeed/pointer"
)

// Scenario: a stream watched out of the glob (watchedOut, rotateWaitMillis
// 3 s: w.log renamed to w.log.1, read there, closed within rotateWait of
// its last growth to give a.log the only slot). w.log.1 is deleted;
// housekeeping's next look finds it nowhere and stops watching it
// (glob.go:2912-2922) without retiring its key — closed() retires the key
// of a gone stream whose file is not at its path, lookWatched's quiet
// branch does too, this branch does not, and the scan never looks at a
// stream already gone again. A new file is then created (first under a name
// the glob does not match, then renamed to x.log) and the file system
// gives it the deleted file's inode (ext4 does within a few files); its
// first lines are the same as w's (a common header: here the
// same numbered lines). The scan finds the key tracked, not retired, the
// pointer's fingerprint matching (sameFile, glob.go:1351-1353): x.log is
// taken for w.log.1 renamed back into the glob, and is read from w's
// offset — its first 4 lines are never delivered, nothing counted.
// DESIGN §10 "Streams": "a key whose file was seen deleted (or renamed out
// and closed) is retired, so a file that later appears with it is a new
// stream whatever its first bytes"; "A new key is a new stream, read from
// its start"; §2 no gap.
// Expected: x.log's 6 lines delivered. Observed: only x-5, x-6 (the first
// 16 bytes skipped): 6 of 6 here (ext4, the inode reused; skips
// otherwise).
func TestRev16BCWatchedFileDeletedKeyNotRetiredInodeReuseSkipsNewFile(t *testing.T) {
	t.Parallel()
	ig, s, a, moved, stop := watchedOut(t, 3*time.Second)
	defer stop()
	ig.g.mu.Lock()
	key, ptr := s.key, s.ptrPath
	ig.g.mu.Unlock()
	if rec, err := pointer.Inspect(ptr); err != nil || rec.FileKey != key {
		t.Fatalf("w.log.1's pointer does not name it: %+v %v", rec, err)
	}
	if err := os.Remove(moved); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "w.log.1 no longer watched", func() bool { return !s.watching })
	x := filepath.Join(filepath.Dir(a), "x.log")
	tmp := ""
	for i := 0; i < 500 && tmp == ""; i++ { // the lowest free inode is taken first
		p := filepath.Join(filepath.Dir(a), fmt.Sprintf("x-%d.tmp", i))
		if err := os.WriteFile(p, []byte(numbered("w", 3)+"w-4\nx-5\nx-6\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		dev, ino, err := fileutil.DevInoPath(p)
		if err != nil {
			t.Fatal(err)
		}
		if pointer.FileKey(dev, ino) == key {
			tmp = p
		}
	}
	if tmp == "" {
		t.Skip("the file system gave no new file the deleted w.log.1's inode (500 tries)")
	}
	if err := os.Rename(tmp, x); err != nil { // into the glob
		t.Fatal(err)
	}
	got := map[string]int{}
	for k, v := range ig.popLines(3 * time.Second) {
		got[k] += v
	}
	tails, bytes, detail := ig.lost()
	ig.g.mu.Lock()
	followed := s.path == x && !s.gone
	retired := ig.g.retired[key]
	ig.g.mu.Unlock()
	t.Logf("x.log delivered %v; taken for the watched stream's file: %v (key retired %v); lostTails %d lostBytes %d (%q)", got, followed, retired, tails, bytes, detail)
	n := 0
	for _, l := range []string{"w-0", "w-1", "w-2", "w-4", "x-5", "x-6"} {
		if got[l] > 0 {
			n++
		}
	}
	if n != 6 {
		t.Errorf("x.log, a new file (6 lines) given the inode of w.log.1 (renamed out, closed, watched, then deleted): %d of its lines delivered (%v), taken for w.log.1's stream %v, lostTails %d; want all 6 (a new stream from its start: the key of a file renamed out and closed, seen deleted, is retired)",
			n, got, followed, tails)
	}
}
