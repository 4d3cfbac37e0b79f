package pointer

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// slowSyncs replaces the file and directory fsyncs with counting ones that
// take d (a slow disk: callers pile up behind a running fsync).
func slowSyncs(t *testing.T, d time.Duration) (files, dirs *atomic.Int64) {
	files, dirs = &atomic.Int64{}, &atomic.Int64{}
	sf, sd := syncFile, syncDir
	syncFile = func(f *os.File) error {
		files.Add(1)
		time.Sleep(d)
		return sf(f)
	}
	syncDir = func(dir string) error {
		dirs.Add(1)
		time.Sleep(d)
		return sd(dir)
	}
	t.Cleanup(func() { syncFile, syncDir = sf, sd })
	return files, dirs
}

// Many pointers created at once (a glob feed's new files) share the
// epochs file's fsyncs and the pointer directory's: each returns only once
// its line and its directory entry are on disk, but callers arriving while
// an fsync runs share the next one. One by one, 64 new pointers cost 64
// epochs fsyncs and 64 directory fsyncs.
func TestNewPointersShareFsyncs(t *testing.T) {
	dir := t.TempDir()
	epochs := filepath.Join(dir, "f.epochs")
	if err := os.WriteFile(epochs, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	files, dirs := slowSyncs(t, 5*time.Millisecond)
	const n = 64
	ptrs := make([]*Pointer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := Open(filepath.Join(dir, fmt.Sprintf("%02d.ptr", i)), Options{EpochsPath: epochs, Input: fmt.Sprintf("/in/%02d.log", i)})
			if err != nil {
				t.Error(err)
				return
			}
			ptrs[i] = p
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	lines, err := ReadEpochs(epochs)
	if err != nil || len(lines) != n {
		t.Fatalf("epochs file: %d lines (%v), want %d", len(lines), err, n)
	}
	held := map[uint64]bool{}
	for _, l := range lines {
		held[l.Epoch] = true
	}
	for i, p := range ptrs {
		rec, err := Inspect(filepath.Join(dir, fmt.Sprintf("%02d.ptr", i)))
		if err != nil || rec.Epoch != p.Record().Epoch || !held[rec.Epoch] {
			t.Fatalf("pointer %d: %+v, %v; its epoch in the epochs file: %v", i, rec, err, held[rec.Epoch])
		}
		p.Close()
	}
	if f, d := files.Load(), dirs.Load(); f > n/4 || d > n/4 {
		t.Fatalf("%d new pointers: %d epochs fsyncs and %d directory fsyncs, want at most %d each (shared)", n, f, d, n/4)
	}
	t.Logf("%d new pointers: %d epochs fsyncs, %d directory fsyncs", n, files.Load(), dirs.Load())
}

// A caller never returns before an fsync that started after its line was
// written has finished: an append that arrives while an fsync runs waits
// for the next one.
func TestGroupedAppendWaitsForItsOwnFsync(t *testing.T) {
	dir := t.TempDir()
	epochs := filepath.Join(dir, "f.epochs")
	if err := os.WriteFile(epochs, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	durable := map[uint64]bool{} // lines written before an fsync that finished
	sf := syncFile
	syncFile = func(f *os.File) error {
		lines, _ := ReadEpochs(epochs)
		time.Sleep(20 * time.Millisecond)
		err := sf(f)
		mu.Lock()
		for _, l := range lines {
			durable[l.Epoch] = true
		}
		mu.Unlock()
		return err
	}
	t.Cleanup(func() { syncFile = sf })
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * 7 * time.Millisecond)
			e := uint64(i + 1)
			if err := AppendEpoch(epochs, EpochLine{Epoch: e, Time: time.Now(), Reason: "created"}); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			ok := durable[e]
			mu.Unlock()
			if !ok {
				t.Errorf("append of epoch %d returned before an fsync covering its line finished", e)
			}
		}()
	}
	wg.Wait()
	lines, err := ReadEpochs(epochs)
	if err != nil || len(lines) != 8 {
		t.Fatalf("%d lines, %v", len(lines), err)
	}
}

// A pointer Open creates is written to both slots with one msync (a Reset
// of an existing record takes two: the older slot first).
func TestCreatedPointerOneFlush(t *testing.T) {
	fake := &fakeMapping{}
	p, err := Open(ptrPath(t), Options{Map: fakeMap(fake)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if fake.flushes != 1 {
		t.Fatalf("new pointer: %d flushes, want 1", fake.flushes)
	}
	rec, errs, err := decode(fake.disk)
	if err != nil || errs[0] != nil || errs[1] != nil || rec.Epoch != p.Record().Epoch || !p.Synced() {
		t.Fatalf("on disk %+v %v %v, synced %v", rec, errs, err, p.Synced())
	}
	if err := p.Reset(NewEpoch(), nil, 0); err != nil {
		t.Fatal(err)
	}
	if fake.flushes != 3 {
		t.Fatalf("Reset after it: %d flushes in all, want 3", fake.flushes)
	}
}
