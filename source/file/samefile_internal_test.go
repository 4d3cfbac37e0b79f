package file

import (
	"os"
	"path/filepath"
	"testing"

	"tailfeed/internal/fileutil"
	"tailfeed/pointer"
)

// TestSameFileTellsAReusedKeyByItsFirstBytes: a glob stream whose source
// let its file go (deleted, read to its end: the pointer reset to the empty
// record) is still booked open for a moment, and the file system may give
// the freed inode to a new file at once. Audit 4 found such a file (another
// name, other first bytes) taken for the stream's own file, renamed, at the
// stream's old offset: never read, the feed settled and lossless
// (e2e TestAud4GXNewNameWithRetiredInodeNeverRead). The key proves the file
// only while the source holds it open; otherwise the first bytes tell
// (DESIGN §10: the same key with other first bytes is a new stream).
func TestSameFileTellsAReusedKeyByItsFirstBytes(t *testing.T) {
	dir := t.TempDir()
	oldBody := []byte("f020-0\nf020-1\nf020-2\n")
	old := filepath.Join(dir, "f020.log")
	neu := filepath.Join(dir, "f036.log")
	if err := os.WriteFile(old, oldBody, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(neu, []byte("f036-0\nf036-1\nf036-2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ptrPath := filepath.Join(dir, "s.ptr")
	p, err := pointer.Open(ptrPath, pointer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Reset(pointer.NewEpoch(), nil, 0); err != nil { // forgotten: the empty record
		t.Fatal(err)
	}
	p.Close()
	dev, ino, err := fileutil.DevInoPath(old)
	if err != nil {
		t.Fatal(err)
	}
	key := pointer.FileKey(dev, ino)
	src := &Source{}
	src.head.Store(&headFP{n: uint64(len(oldBody)), fp: pointer.Fingerprint(oldBody)})
	g := &Glob{}
	for _, st := range []streamState{stOpen, stStopping, stClosed} {
		s := &gstream{path: old, key: key, st: st, src: src, ptrPath: ptrPath, gone: true, size: 21}
		// The new file, found under the freed key (as the file system
		// hands it out): another name, other first bytes.
		if g.sameFile(s, found{path: neu, dev: dev, ino: ino, size: 21}) {
			t.Errorf("state %d: a file with the stream's key and other first bytes taken for the stream's file", st)
		}
		// The stream's own file renamed: the same first bytes.
		s.gone = false
		if !g.sameFile(s, found{path: old, dev: dev, ino: ino, size: 21}) || !g.sameFile(&gstream{path: neu, key: key, st: st, src: src, ptrPath: ptrPath}, found{path: old, dev: dev, ino: ino, size: 21}) {
			t.Errorf("state %d: the stream's own file (its first bytes) not taken for it", st)
		}
	}
	// Held open by the source: the key proves it (no read).
	src.fileDev.Store(dev)
	src.fileIno.Store(ino)
	src.fileOpen.Store(true)
	s := &gstream{path: old, key: key, st: stOpen, src: src, ptrPath: ptrPath, gone: true}
	if !g.sameFile(s, found{path: filepath.Join(dir, "gone.log"), dev: dev, ino: ino}) {
		t.Error("a file its source holds open not taken for the stream's file")
	}
}
