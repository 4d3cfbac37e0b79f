package file

import (
	"os"
	"sync/atomic"
	"testing"

	"tailfeed/pointer"
)

// rev28BMap is a pointer Mapping counting its flushes (msyncs).
type rev28BMap struct {
	f   *os.File
	mem []byte
	n   *atomic.Int64
}

func (m *rev28BMap) Bytes() []byte { return m.mem }
func (m *rev28BMap) Close() error  { return nil }
func (m *rev28BMap) Flush() error {
	m.n.Add(1)
	if _, err := m.f.WriteAt(m.mem, 0); err != nil {
		return err
	}
	return m.f.Sync()
}

// Probe: a glob over files present with content at start costs no more
// msyncs per file than before the change (headFirst: adopted with first
// bytes, nothing to store before the first line).
func TestRev28BProbeGlobStartMsyncsPerFile(t *testing.T) {
	const files = 60
	var n atomic.Int64
	runGlobOver(t, files, func(path string, o pointer.Options) (*pointer.Pointer, error) {
		o.Map = func(f *os.File) (pointer.Mapping, error) {
			m := &rev28BMap{f: f, mem: make([]byte, pointer.Size), n: &n}
			_, err := f.ReadAt(m.mem, 0)
			return m, err
		}
		return pointer.Open(path, o)
	})
	t.Logf("%d msyncs for %d files", n.Load(), files)
	if n.Load() > files {
		t.Errorf("%d msyncs for %d files, want at most %d (one each, as before the change)", n.Load(), files, files)
	}
}
