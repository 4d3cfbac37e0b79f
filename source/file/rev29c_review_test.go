package file_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/pointer"
	"tailfeed/source/file"
)

// rev29CGateMap is a pointer Mapping whose Bytes stand for the page cache
// (what a kill -9 leaves) and whose Flush (msync) writes them to the file;
// while gated, a Flush of a record past offset 0 blocks until release is
// closed (a slow disk). dead: Flush no longer writes (the process is gone).
type rev29CGateMap struct {
	f       *os.File
	mu      sync.Mutex
	buf     []byte
	gated   atomic.Bool
	dead    atomic.Bool
	blocked chan struct{}
	once    sync.Once
	release chan struct{}
	flushes *atomic.Int64 // nil: not counted
}

func (m *rev29CGateMap) Bytes() []byte { return m.buf }
func (m *rev29CGateMap) Close() error  { return nil }
func (m *rev29CGateMap) Flush() error {
	if m.flushes != nil {
		m.flushes.Add(1)
	}
	if m.gated.Load() {
		if rec, err := pointer.Decode(m.buf); err == nil && rec.Offset > 0 {
			m.once.Do(func() { close(m.blocked) })
			<-m.release
		}
	}
	if m.dead.Load() {
		return nil
	}
	if _, err := m.f.WriteAt(m.buf, 0); err != nil {
		return err
	}
	return m.f.Sync()
}

// Cost probe: a single-file feed on a small file (< 4 KiB) appended to one
// line at a time, each line read, acknowledged and settled before the next.
// headGrow adds no msync (stores only); logged: stores (commit counter) and
// msyncs per line. Passes when msyncs stay at most ~one per line.
func TestRev29COKTinyBatchesNoExtraMsync(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := filepath.Join(dir, "app.log")
	if err := os.WriteFile(in, []byte("=== start ===\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var flushes atomic.Int64
	var gm *rev29CGateMap
	r := newRig(t, dir, rigOpts{strategy: file.Committed, ptrMap: func(f *os.File) (pointer.Mapping, error) {
		m := &rev29CGateMap{f: f, buf: make([]byte, pointer.Size), blocked: make(chan struct{}), release: make(chan struct{}), flushes: &flushes}
		if _, err := f.ReadAt(m.buf, 0); err != nil {
			return nil, err
		}
		gm = m
		return m, nil
	}}).start()
	r.waitLines(1)
	r.waitSettled()
	c0, f0 := r.ptr.Record().Commits, flushes.Load()
	const n = 40
	for i := range n {
		appendTo(t, in, fmt.Sprintf("line-%02d", i))
		r.waitLines(2 + i)
		r.waitSettled()
	}
	c1, f1 := r.ptr.Record().Commits, flushes.Load()
	_ = gm
	t.Logf("%d lines one at a time: %d stores counted as commits, %d msyncs (fpLen %d)", n, c1-c0, f1-f0, r.ptr.Record().FPLen)
	if f1-f0 > n+2 {
		t.Errorf("%d msyncs for %d lines, want at most %d", f1-f0, n, n+2)
	}
}

// Probe (power loss): a batch whose first bytes headGrow stored, never
// acknowledged by the stop (the drain timing out): the disk (what a Flush
// wrote) holds the grown first bytes after the stop (DESIGN §3 "msyncs ...
// at stop").
func TestRev29COKHeadGrowSyncedAtStop(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := filepath.Join(dir, "app.log")
	if err := os.WriteFile(in, []byte("=== start ===\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	held := make(chan struct{}) // never closed: payload-1 is never finished
	r := newRig(t, dir, rigOpts{strategy: file.Committed, hold: map[string]chan struct{}{"payload-1": held},
		ptrMap: func(f *os.File) (pointer.Mapping, error) {
			m := &rev29CGateMap{f: f, buf: make([]byte, pointer.Size), blocked: make(chan struct{}), release: make(chan struct{})}
			_, err := f.ReadAt(m.buf, 0)
			return m, err
		}}).start()
	r.waitLines(1)
	r.waitSettled()
	appendTo(t, in, "payload-1")
	r.waitFor("payload-1 published", 20*time.Second, func() bool { return r.pub.Sequence() >= 2 })
	// The ordered stop whose drain timed out: no acknowledgement came.
	r.cancel()
	r.cancel = nil
	<-r.done
	r.gstop()
	<-r.group.Done()
	if err := r.src.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "app.ptr"))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := pointer.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("on disk after the stop: offset %d fpLen %d commits %d", rec.Offset, rec.FPLen, rec.Commits)
	if rec.FPLen < 24 {
		t.Errorf("on disk after a stop: fpLen %d while payload-1 ending at 24 was published under epoch %016x (want >= 24, msynced at stop)", rec.FPLen, rec.Epoch)
	}
}
