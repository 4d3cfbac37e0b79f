package file

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"tailfeed/internal/fileutil"
	"tailfeed/pointer"
)

// A stream given a gone file's pointer at the start (adoptByPath: genOwn)
// reads that file's tail, then the later generations beside its path, then
// its own file F3. Between two turns (maxOpenFiles, queued) its pointer
// names a later generation F2 (committed to F2's end), or no file (reset
// for the next one, nothing committed): neither is the gone file's key, to
// which the birth time rule for such a stream was limited, so a look at F3
// compared it with F2's first bytes, took it for a new file on a reused
// inode, and a second stream read F3 again from its start (audit 7 C, seen
// with the daemon's own log: the quiet writer's lines under two epochs, in
// exactlyOnce output). Until the pointer names F3 itself, F3 is told by
// birth time: born before the glob first saw the stream, it is its file.
func TestSameFileGenOwnStreamWhosePointerNamesALaterGeneration(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f2 := filepath.Join(dir, "w.log.1")
	f3 := filepath.Join(dir, "w.log")
	if err := os.WriteFile(f2, []byte("f2-0\nf2-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f3, []byte("f3-0\nf3-1\nf3-2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if birthTimeTarget(f3).IsZero() {
		t.Skip("SKIP: no birth times on this file system: a genOwn stream's file is told by its first bytes only")
	}
	dev, ino, err := fileutil.DevInoPath(f3)
	if err != nil {
		t.Fatal(err)
	}
	key := pointer.FileKey(dev, ino)
	for _, tc := range []struct {
		name string
		bind bool // the record names F2 (else: no file)
	}{{"pointer names the later generation", true}, {"pointer reset for the next file", false}} {
		t.Run(tc.name, func(t *testing.T) {
			ptrPath := filepath.Join(t.TempDir(), "s.ptr")
			p, err := pointer.Open(ptrPath, pointer.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.bind {
				f, err := os.Open(f2)
				if err != nil {
					t.Fatal(err)
				}
				d2, i2, _ := fileutil.DevIno(f)
				p.Bind(f, pointer.FileKey(d2, i2))
				if err := p.Commit(10); err != nil {
					t.Fatal(err)
				}
				f.Close()
			} else if err := p.Reset(pointer.NewEpoch(), nil, 0); err != nil {
				t.Fatal(err)
			}
			p.Close()
			g := &Glob{}
			for _, st := range []streamState{stQueued, stClosed} {
				s := &gstream{path: f3, first: f3, key: key, st: st, ptrPath: ptrPath, genOwn: true, goneKey: 12345,
					size: 5, seenAt: time.Now().Add(time.Hour)}
				if !g.sameFile(s, found{path: f3, born: bornNano(f3), dev: dev, ino: ino, size: 15}) {
					t.Errorf("state %d: the stream's own file, born before the glob saw it, grown, taken for another (a second stream reads it again)", st)
				}
				s.seenAt = time.Now().Add(-time.Hour)
				if g.sameFile(s, found{path: f3, born: bornNano(f3), dev: dev, ino: ino, size: 15}) {
					t.Errorf("state %d: a file born an hour after the glob saw the stream's taken for it (inode reuse)", st)
				}
			}
		})
	}
}
