package file_test

import (
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/pointer"
	"tailfeed/source/file"
)

// gatedMapping is an in-memory pointer mapping whose Flush, once armed,
// blocks until released: a disk that takes its time.
type gatedMapping struct {
	buf     []byte
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (m *gatedMapping) Bytes() []byte { return m.buf }
func (m *gatedMapping) Close() error  { return nil }
func (m *gatedMapping) Flush() error {
	if m.armed.Load() {
		select {
		case m.entered <- struct{}{}:
		default:
		}
		<-m.release
	}
	return nil
}

// The pointer's msync runs off the reading path: while one hangs, new lines
// are still read and delivered; the commit is not reported synced until it
// returns, and then covers everything acknowledged meanwhile.
func TestSlowMsyncDoesNotHoldReading(t *testing.T) {
	t.Parallel()
	m := &gatedMapping{buf: make([]byte, pointer.Size), entered: make(chan struct{}, 1), release: make(chan struct{})}
	r := newRig(t, "", rigOpts{strategy: file.Committed, ptrMap: func(*os.File) (pointer.Mapping, error) { return m, nil }})
	appendTo(t, r.path, numbered("a", 0, 5)...)
	r.start()
	r.waitLines(5)
	r.waitSettled()

	release := sync.OnceFunc(func() {
		m.armed.Store(false)
		close(m.release)
	})
	t.Cleanup(release) // before the rig's stop, which waits for the msync
	m.armed.Store(true)
	appendTo(t, r.path, numbered("a", 5, 1)...)
	select {
	case <-m.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("no msync after a new line was acknowledged")
	}
	appendTo(t, r.path, numbered("a", 6, 10)...)
	r.waitLines(16) // read and delivered while the msync hangs
	if r.src.CommitOK() {
		t.Fatal("commit reported synced while its msync hangs")
	}
	release()
	r.waitSettled()
	st, _ := os.Stat(r.path)
	if rec := r.ptr.Record(); rec.Offset != st.Size() {
		t.Fatalf("pointer at %d, file size %d", rec.Offset, st.Size())
	}
}
