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

// Review 36 D (of the first fix above): b.log, listed unread by the previous run, was
// deleted while tailfeed was down and its inode taken by another file
// (other first bytes) at b.log. The first scan finds that file at b.log by
// the listed key; it is renamed within the glob (d.log) before
// readListedBesideAll looks. listedInGlob takes it for the listed file
// "gone since": countUnreadGone does not count b.log's bytes, and the new
// file's stream follows it to d.log and reads it — nothing counted for the
// listed file's 3 lines that were never read.
func TestRev36ListedInodeReusedRenamedWithinGlobCounted(t *testing.T) {
	t.Parallel()
	l := rev36Listed(t)
	dir, data, b, pattern, one := l.dir, l.data, l.b, l.pattern, l.one
	bd, bi, _ := fileutil.DevInoPath(b)
	bk := pointer.FileKey(bd, bi)
	os.Remove(b)
	time.Sleep(6 * time.Second) // ext4 does not reuse an inode deleted in the last seconds
	found := false
	for i := 0; i < 40000 && !found; i++ {
		p := filepath.Join(dir, fmt.Sprintf("n%d.tmp", i))
		if err := os.WriteFile(p, []byte(numbered("n", 4)), 0o600); err != nil {
			t.Fatal(err)
		}
		d, i2, _ := fileutil.DevInoPath(p)
		if pointer.FileKey(d, i2) == bk {
			os.Rename(p, b)
			found = true
			t.Logf("inode reused after %d files", i+1)
		}
	}
	if !found {
		t.Skip("inode not reused")
	}
	d := filepath.Join(dir, "d.log")
	pre := func(g *Glob) {
		g.firstScanStep = func(at int) {
			if at == 0 {
				os.Rename(b, d)
			}
		}
	}
	ig, stop := runGlobWith(t, pattern, data, 200*time.Millisecond, one, pre)
	got := ig.popLines(4 * time.Second)
	tails, bytes, detail := ig.lost()
	stop()
	t.Logf("n-0 %d b-0 %d; lost %d %d %q", got["n-0"], got["b-0"], tails, bytes, detail)
	if tails == 0 {
		t.Errorf("b.log's 3 listed lines never read, lostTails 0 (lossless)")
	}
}
