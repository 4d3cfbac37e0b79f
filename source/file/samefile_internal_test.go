package file

import (
	"os"
	"path/filepath"
	"testing"
	"time"

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
	t.Parallel()
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
		if g.sameFile(s, found{path: neu, born: bornNano(neu), dev: dev, ino: ino, size: 21}) {
			t.Errorf("state %d: a file with the stream's key and other first bytes taken for the stream's file", st)
		}
		// The stream's own file renamed: the same first bytes.
		s.gone = false
		if !g.sameFile(s, found{path: old, born: bornNano(old), dev: dev, ino: ino, size: 21}) || !g.sameFile(&gstream{path: neu, key: key, st: st, src: src, ptrPath: ptrPath}, found{path: old, born: bornNano(old), dev: dev, ino: ino, size: 21}) {
			t.Errorf("state %d: the stream's own file (its first bytes) not taken for it", st)
		}
	}
	// Held open by the source: the key proves it (no read).
	src.fds.add(&reader{key: key})
	s := &gstream{path: old, key: key, st: stOpen, src: src, ptrPath: ptrPath, gone: true}
	if !g.sameFile(s, found{path: filepath.Join(dir, "gone.log"), dev: dev, ino: ino}) {
		t.Error("a file its source holds open not taken for the stream's file")
	}
}

// TestSameFileWithoutAPointerOrAFirstRead: review 9's XA and XB. A stream
// without a pointer (EARLIEST, LATEST) is told by the first bytes its
// source read; a stream nothing of which was read (waiting for its first
// turn) by birth time: a file born after the glob first saw the stream's
// is another one (the inode reused). Before, a stream without a pointer
// took any file under its key for its own: the new file was never read
// (EARLIEST, LATEST) or the deleted waiting file's bytes were never
// counted.
func TestSameFileWithoutAPointerOrAFirstRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	oldBody := []byte("o-0\no-1\n")
	neu := filepath.Join(dir, "n.log")
	if err := os.WriteFile(neu, []byte("n-0\nn-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g := &Glob{}
	src := &Source{}
	src.head.Store(&headFP{n: uint64(len(oldBody)), fp: pointer.Fingerprint(oldBody)})
	for _, st := range []streamState{stClosed, stQueued} {
		s := &gstream{path: filepath.Join(dir, "o.log"), key: 7, st: st, src: src, gone: true}
		if g.sameFile(s, found{path: neu, born: bornNano(neu)}) {
			t.Errorf("state %d, no pointer: a file with other first bytes taken for the stream's", st)
		}
	}
	if birthTimeTarget(neu).IsZero() {
		t.Log("no birth times here: the waiting-stream case is not checked")
		return
	}
	w := &gstream{path: filepath.Join(dir, "o.log"), key: 7, st: stQueued, seenAt: time.Now().Add(-time.Hour)}
	if g.sameFile(w, found{path: neu, born: bornNano(neu)}) {
		t.Error("a file born an hour after the glob saw a waiting stream's file taken for it")
	}
	w.seenAt = time.Now().Add(time.Hour)
	if !g.sameFile(w, found{path: neu, born: bornNano(neu)}) {
		t.Error("a waiting stream's file, born before the glob saw it, renamed: not taken for it")
	}
	// Review 9d's XF: deleted and made again at its own path (the inode
	// reused), before a look saw it gone.
	at := &gstream{path: neu, key: 7, st: stQueued, size: 1, seenAt: time.Now().Add(-time.Hour)}
	if g.sameFile(at, found{path: neu, born: bornNano(neu), size: 8}) {
		t.Error("a file born an hour after the glob saw a waiting stream's file, at its path, taken for it")
	}
	at.seenAt = time.Now().Add(time.Hour)
	if !g.sameFile(at, found{path: neu, born: bornNano(neu), size: 8}) {
		t.Error("a waiting stream's file, grown at its path, not taken for it")
	}
}

// TestSameFileHeldBehindACopy: review 9's XC. While a stream's source
// reads a copytruncate's copy (the pointer names the copy), its own file
// stays open behind it: renamed within the glob, it is still the stream's
// file. The earlier fix asked only about the source's current file (the
// copy) and compared the renamed file with the copy's first bytes: a new
// stream, its lines delivered twice.
func TestSameFileHeldBehindACopy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cp := filepath.Join(dir, "a.log.1")
	if err := os.WriteFile(cp, []byte("a-0\na-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := filepath.Join(dir, "b.log")
	if err := os.WriteFile(b, []byte("new-0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cf, err := os.Open(cp)
	if err != nil {
		t.Fatal(err)
	}
	defer cf.Close()
	ptrPath := filepath.Join(dir, "s.ptr")
	p, err := pointer.Open(ptrPath, pointer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Reset(pointer.NewEpoch(), cf, 99); err != nil { // names the copy
		t.Fatal(err)
	}
	p.Close()
	src := &Source{}
	src.fds.add(&reader{key: 99}) // the copy, read now
	src.fds.add(&reader{key: 5})  // the stream's own file, queued behind it
	s := &gstream{path: filepath.Join(dir, "a.log"), key: 5, st: stOpen, src: src, ptrPath: ptrPath}
	if !(&Glob{}).sameFile(s, found{path: b, born: bornNano(b)}) {
		t.Error("the stream's file, held open behind the copy its source reads, renamed within the glob: not taken for it")
	}
}

// TestOpenFileGrownFstatsTheDescriptor: review 9d's XD. A report on an
// open file whose path names it no more (renamed out, deleted) said
// CAUGHT_UP on the source's last look alone while its writer appended
// through the descriptor it kept (DESIGN §7: an fstat must show nothing
// past the read position). OpenFileGrown fstats the source's descriptor.
func TestOpenFileGrownFstatsTheDescriptor(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "a.log")
	if err := os.WriteFile(p, []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	s := &Source{}
	if s.OpenFileGrown(0) {
		t.Error("no file open, yet grown")
	}
	s.curFile.Store(f)
	if err := os.Rename(p, p+".1"); err != nil {
		t.Fatal(err)
	}
	if s.OpenFileGrown(2) {
		t.Error("read to its end (2 bytes), yet grown")
	}
	w, err := os.OpenFile(p+".1", os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("y\n"))
	w.Close()
	if !s.OpenFileGrown(2) {
		t.Error("written on through another descriptor after its rename: not grown")
	}
	f.Close()
	if s.OpenFileGrown(2) {
		t.Error("closed meanwhile, yet grown")
	}
}

// bornNano is the birth time of the file path names, as a walk's found
// carries it (0: none known).
func bornNano(p string) int64 {
	if bt := birthTimeTarget(p); !bt.IsZero() {
		return bt.UnixNano()
	}
	return 0
}
