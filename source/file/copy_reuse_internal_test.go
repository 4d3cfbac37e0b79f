package file

// A copy's key is its inode: logrotate's compress deletes a copy, and the
// next rotation's copy may be given the same inode (the eleventh session:
// TestRev10BFixedCShortCopyGzReadAgain failed 1 run in 12 under -race so,
// two lines of the second copy read again from its .gz).

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"tailfeed/internal/fileutil"
	"tailfeed/pointer"
)

// A later copy under an earlier copy's key is kept beside it: each one's
// first bytes and size tell its own .gz. Before the fix the later one was
// taken for the earlier (same key) and not kept, and its .gz was read
// again as a later generation.
func TestNoteCopyKeepsALaterCopyOnAReusedKey(t *testing.T) {
	t.Parallel()
	var s gstream
	at := time.Now()
	for i, c := range []CopyTaken{
		{Key: 7, At: at, HeadLen: 10, Head: 1, Size: 100},
		{Key: 7, At: at, HeadLen: 10, Head: 1, Size: 100},                                 // the same copy noted again (the stream restarted)
		{Key: 7, At: at.Add(time.Millisecond), HeadLen: 10, Head: 1, Size: 100, Epoch: 3}, // taken again by a later source
		{Key: 7, At: at.Add(time.Second), HeadLen: 18, Head: 2, Size: 18},
	} {
		src := &Source{}
		src.copiesTaken.Store(&[]CopyTaken{c})
		s.noteCopy(src)
		t.Logf("after %d: %+v", i, s.copies)
	}
	if len(s.copies) != 2 || s.copies[1].Size != 18 {
		t.Fatalf("copies = %+v, want the two copies of key 7 once each", s.copies)
	}
}

// A plain generation on a taken copy's key is that copy only if its first
// bytes are the copy's; another file given the inode since is read. Before
// the fix any file on the key was left out: a later generation so placed
// was never read.
func TestPrevCopyTellsAReusedInodeByItsFirstBytes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "a.log.1")
	if err := os.WriteFile(p, []byte("copied-line-0\ncopied-line-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dev, ino, err := fileutil.DevInoPath(p)
	if err != nil {
		t.Fatal(err)
	}
	gf := genFile{path: p, dev: dev, ino: ino}
	key := pointer.FileKey(dev, ino)
	same := []byte("copied-line-0\ncopied-line-1\n")
	other := []byte("another-file\n")
	for _, tc := range []struct {
		name string
		c    CopyTaken
		want bool
	}{
		{"its first bytes", CopyTaken{Key: key, HeadLen: len(same), Head: pointer.Fingerprint(same)}, true},
		{"first bytes not recorded", CopyTaken{Key: key}, true},
		{"another file on the key", CopyTaken{Key: key, HeadLen: len(other), Head: pointer.Fingerprint(other)}, false},
		{"another key", CopyTaken{Key: key + 1}, false},
	} {
		s := &Source{cfg: Config{prevCopies: []CopyTaken{tc.c}}}
		if got := s.prevCopy(gf); got != tc.want {
			t.Errorf("%s: prevCopy = %v, want %v", tc.name, got, tc.want)
		}
	}
}
