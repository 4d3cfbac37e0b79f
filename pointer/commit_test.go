package pointer

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestCommitForwardOnly(t *testing.T) {
	path := ptrPath(t)
	p := mustOpen(t, path, Options{})
	if err := p.Commit(100); err != nil {
		t.Fatal(err)
	}
	before, rec := readFile(t, path), p.Record()

	if err := p.Commit(50); !errors.Is(err, ErrBackwards) {
		t.Fatalf("Commit(50) after 100 = %v, want ErrBackwards", err)
	}
	if err := p.Store(-1); !errors.Is(err, ErrBackwards) {
		t.Fatalf("Store(-1) = %v, want ErrBackwards", err)
	}
	if p.Record() != rec || !bytes.Equal(readFile(t, path), before) || !p.Synced() {
		t.Fatal("a backwards commit changed the pointer")
	}
	if err := p.Commit(100); err != nil { // nothing changed: no write
		t.Fatal(err)
	}
	if p.Record() != rec || !bytes.Equal(readFile(t, path), before) {
		t.Fatalf("an unchanged commit wrote: %+v, was %+v", p.Record(), rec)
	}
	if err := p.Reset(NewEpoch(), nil, 0); err != nil {
		t.Fatal(err)
	}
	if err := p.Commit(10); err != nil { // a new epoch starts again at 0
		t.Fatalf("Commit(10) under a new epoch: %v", err)
	}
}

func TestStoreThenSync(t *testing.T) {
	path := ptrPath(t)
	p := mustOpen(t, path, Options{})
	start := p.Record()
	if err := p.Store(100); err != nil {
		t.Fatal(err)
	}
	r := p.Record()
	if p.Synced() || r.Offset != 100 || r.Commits != start.Commits+1 || r.Epoch != start.Epoch {
		t.Fatalf("after Store: %+v synced %v", r, p.Synced())
	}
	if got, _ := Inspect(path); got != r { // in the page cache: survives kill -9
		t.Fatalf("Inspect after Store = %+v, want %+v", got, r)
	}
	if err := p.Sync(); err != nil || !p.Synced() {
		t.Fatalf("Sync = %v, synced %v", err, p.Synced())
	}
	if err := p.Sync(); err != nil { // nothing new
		t.Fatal(err)
	}
	p.Close()
	q := mustOpen(t, path, Options{})
	if got := q.Record(); got != r {
		t.Fatalf("reopen = %+v, want %+v", got, r)
	}
}

// The slot rule: stores between two syncs rewrite one slot; the synced
// record in the other slot stays intact until the next successful msync.
func TestStoresBetweenSyncsKeepSyncedSlot(t *testing.T) {
	fake := &fakeMapping{}
	p := mustOpen(t, ptrPath(t), Options{Map: fakeMap(fake)})
	if err := p.Commit(10); err != nil {
		t.Fatal(err)
	}
	synced := p.Record()
	other := 1 - int(synced.Slot-'A')
	for _, off := range []int64{20, 30, 40} {
		if err := p.Store(off); err != nil {
			t.Fatal(err)
		}
		if got := p.Record().Slot; got != slotName(other) {
			t.Fatalf("Store(%d) wrote slot %c, want %c", off, got, slotName(other))
		}
		if r, err := decodeSlot(slotBytes(fake.mem, int(synced.Slot-'A')), synced.Slot); err != nil || r != synced {
			t.Fatalf("Store(%d) touched the synced slot: %+v %v", off, r, err)
		}
	}
	if err := p.Sync(); err != nil {
		t.Fatal(err)
	}
	if r, _ := Decode(fake.disk); r.Offset != 40 {
		t.Fatalf("disk after Sync: %+v", r)
	}
	if err := p.Store(50); err != nil {
		t.Fatal(err)
	}
	if got := p.Record().Slot; got != synced.Slot {
		t.Fatalf("first Store after Sync wrote slot %c, want %c", got, synced.Slot)
	}
}

// A failed msync stays a failure: Synced is false, the error matches the
// errno, what reached the disk is the previously synced record, and the next
// commit rewrites the slot before syncing again.
func TestCommitFailingFlush(t *testing.T) {
	recoveries := []struct {
		name   string
		offset int64 // where the pointer stands after recovery
		step   func(p *Pointer) error
	}{
		{"commit same offset", 200, func(p *Pointer) error { return p.Commit(200) }},
		{"commit further", 300, func(p *Pointer) error { return p.Commit(300) }},
		{"store then sync", 300, func(p *Pointer) error { p.Store(300); return p.Sync() }},
		{"sync alone", 200, func(p *Pointer) error { return p.Sync() }},
	}
	for _, errno := range []syscall.Errno{syscall.EIO, syscall.ENOSPC} {
		for _, rc := range recoveries {
			t.Run(errno.Error()+"/"+rc.name, func(t *testing.T) {
				path := ptrPath(t)
				fake := &fakeMapping{}
				p := mustOpen(t, path, Options{Map: fakeMap(fake)})
				if err := p.Commit(100); err != nil {
					t.Fatal(err)
				}
				good := p.Record()

				fake.fail = []error{errno}
				err := p.Commit(200)
				if !errors.Is(err, errno) || !errors.Is(err, ErrSync) {
					t.Fatalf("Commit with failing msync = %v, want %v and ErrSync", err, errno)
				}
				if p.Synced() {
					t.Fatal("Synced() = true after a failed msync")
				}
				crashed := bytes.Clone(fake.disk) // what a power loss now would leave

				if err := rc.step(p); err != nil {
					t.Fatalf("recovery: %v", err)
				}
				if !p.Synced() {
					t.Fatal("Synced() = false after a successful recovery")
				}
				if r, err := Decode(fake.disk); err != nil || r.Offset != rc.offset || r != p.Record() {
					t.Fatalf("disk after recovery = %+v, %v; want %+v", r, err, p.Record())
				}
				p.Close()

				if err := os.WriteFile(path, crashed, 0o644); err != nil {
					t.Fatal(err)
				}
				q := mustOpen(t, path, Options{})
				if got := q.Record(); got.Offset != good.Offset || got.Epoch != good.Epoch {
					t.Fatalf("reopen after the failed msync = %+v, want the synced %+v", got, good)
				}
			})
		}
	}
}

func TestResetLeavesNoOlderEpoch(t *testing.T) {
	path := ptrPath(t)
	p := mustOpen(t, path, Options{})
	for _, off := range []int64{100, 200, 300} {
		if err := p.Commit(off); err != nil {
			t.Fatal(err)
		}
	}
	old := p.Record().Epoch
	in, key, _ := input(t, filepath.Join(t.TempDir(), "in"), []byte("hello\n"))
	epoch := NewEpoch()
	if err := p.Reset(epoch, in, key); err != nil {
		t.Fatal(err)
	}
	want := Record{Epoch: epoch, FileKey: key, FPLen: 6, FP: Fingerprint([]byte("hello\n")), Layout: 1}
	check := func(stage string) {
		a, b, errA, errB := slots(readFile(t, path))
		for _, s := range []struct {
			r   Record
			err error
		}{{a, errA}, {b, errB}} {
			if s.err == nil && s.r.Epoch == old {
				t.Fatalf("%s: slot %c still holds the old epoch: %+v", stage, s.r.Slot, s.r)
			}
		}
	}
	check("after Reset")
	got := p.Record()
	got.Commits, got.Slot = 0, 0
	if got != want || !p.Synced() {
		t.Fatalf("Record after Reset = %+v, want %+v", got, want)
	}
	if err := p.Commit(6); err != nil {
		t.Fatal(err)
	}
	check("after a commit")
	if err := p.Reset(0, nil, 0); !errors.Is(err, ErrZeroEpoch) {
		t.Fatalf("Reset(0) = %v", err)
	}
}

// A crash between the two msyncs of a Reset still yields (new epoch, 0); a
// crash before the first one yields the old record; a later Commit finishes
// the Reset so that no slot of the old epoch remains.
func TestResetCrashBetweenSyncs(t *testing.T) {
	tests := []struct {
		name      string
		fail      []error
		wantEpoch string // "new" or "old"
	}{
		{"first msync fails", []error{syscall.EIO}, "old"},
		{"second msync fails", []error{nil, syscall.EIO}, "new"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := ptrPath(t)
			fake := &fakeMapping{}
			p := mustOpen(t, path, Options{Map: fakeMap(fake)})
			for _, off := range []int64{100, 200} {
				if err := p.Commit(off); err != nil {
					t.Fatal(err)
				}
			}
			old := p.Record()
			epoch := NewEpoch()
			fake.fail = tt.fail
			if err := p.Reset(epoch, nil, 0); !errors.Is(err, syscall.EIO) {
				t.Fatalf("Reset = %v, want EIO", err)
			}
			if p.Synced() {
				t.Fatal("Synced() after a failed Reset")
			}
			crashed := bytes.Clone(fake.disk)

			if err := p.Commit(5); err != nil { // finishes both slots
				t.Fatal(err)
			}
			a, b, errA, errB := slots(fake.disk)
			if errA != nil || errB != nil || a.Epoch != epoch || b.Epoch != epoch {
				t.Fatalf("after the Reset was finished: %+v %v / %+v %v", a, errA, b, errB)
			}
			p.Close()

			os.WriteFile(path, crashed, 0o644)
			q := mustOpen(t, path, Options{})
			got := q.Record()
			switch tt.wantEpoch {
			case "new":
				if got.Epoch != epoch || got.Offset != 0 {
					t.Fatalf("crash between the msyncs: %+v, want (new epoch, 0)", got)
				}
			case "old":
				if got.Epoch != old.Epoch || got.Offset != old.Offset {
					t.Fatalf("crash before the first msync: %+v, want %+v", got, old)
				}
			}
		})
	}
}

func TestOpenFailsWhenSyncFails(t *testing.T) {
	fake := &fakeMapping{fail: []error{syscall.EIO}}
	_, err := Open(ptrPath(t), Options{Map: fakeMap(fake)})
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("Open with failing msync = %v, want EIO", err)
	}
}

func TestCloseIsIdempotent(t *testing.T) {
	path := ptrPath(t)
	p, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if err := p.Commit(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Commit after Close = %v", err)
	}
	if err := p.Sync(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Sync after Close = %v", err)
	}
	mustOpen(t, path, Options{}) // the lock is gone
}

// The fingerprint grows at commit up to 4096 bytes, read from the bound
// descriptor, and stops growing if the bytes it covers changed.
func TestStoreGrowsFingerprint(t *testing.T) {
	dir := t.TempDir()
	inPath := filepath.Join(dir, "in")
	in, key, _ := input(t, inPath, []byte("HDR\n"))
	p := mustOpen(t, filepath.Join(dir, "p"), Options{})
	if err := p.Adopt(in, key); err != nil {
		t.Fatalf("Adopt = %v", err)
	}
	if err := p.Commit(4); err != nil {
		t.Fatal(err)
	}
	if r := p.Record(); r.FPLen != 4 || r.FileKey != key || r.FP != Fingerprint([]byte("HDR\n")) {
		t.Fatalf("after the first commit: %+v", r)
	}
	body := bytes.Repeat([]byte("0123456789abcdef"), 400) // 6,400 bytes
	appendTo(t, inPath, body[:1000])
	if err := p.Commit(10); err != nil {
		t.Fatal(err)
	}
	if r := p.Record(); r.FPLen != 1004 {
		t.Fatalf("FPLen = %d, want 1004 (covers the first bytes, whatever the offset)", r.FPLen)
	}
	appendTo(t, inPath, body[1000:])
	if err := p.Commit(20); err != nil {
		t.Fatal(err)
	}
	all := append([]byte("HDR\n"), body...)
	if r := p.Record(); r.FPLen != MaxFingerprint || r.FP != Fingerprint(all[:MaxFingerprint]) {
		t.Fatalf("after growth past 4 KiB: FPLen %d", r.FPLen)
	}

	// A small file rewritten under the descriptor: the fingerprint stays.
	small := filepath.Join(dir, "small")
	sf, skey, _ := input(t, small, []byte("abc"))
	if err := p.Reset(NewEpoch(), sf, skey); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(small, []byte("xyz and more bytes"), 0o644)
	if err := p.Commit(3); err != nil {
		t.Fatal(err)
	}
	if r := p.Record(); r.FPLen != 3 || r.FP != Fingerprint([]byte("abc")) {
		t.Fatalf("fingerprint grew over changed bytes: %+v", r)
	}
}

// Bind(nil, key) stops the growth: Stores keep the key and the fingerprint
// while the input grows (a descriptor whose content is gone is unbound so).
func TestBindNilStopsFingerprintGrowth(t *testing.T) {
	dir := t.TempDir()
	inPath := filepath.Join(dir, "in")
	in, key, _ := input(t, inPath, []byte("HDR\n"))
	p := mustOpen(t, filepath.Join(dir, "p"), Options{})
	if err := p.Adopt(in, key); err != nil {
		t.Fatalf("Adopt = %v", err)
	}
	if err := p.Commit(4); err != nil {
		t.Fatal(err)
	}
	p.Bind(nil, key)
	appendTo(t, inPath, []byte("more bytes\n"))
	if err := p.Commit(15); err != nil {
		t.Fatal(err)
	}
	if r := p.Record(); r.Offset != 15 || r.FileKey != key || r.FPLen != 4 || r.FP != Fingerprint([]byte("HDR\n")) {
		t.Fatalf("after Bind(nil): %+v", r)
	}
	p.Bind(in, key) // bound again: it grows
	if err := p.Commit(15); err != nil {
		t.Fatal(err)
	}
	if r := p.Record(); r.FPLen != 15 {
		t.Fatalf("bound again: FPLen %d, want 15", r.FPLen)
	}
}

func appendTo(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

// openBench opens a pointer bound to a 8 KiB input whose fingerprint
// already covers 4096 bytes: the steady path.
func openBench(tb testing.TB) *Pointer {
	dir := tb.TempDir()
	inPath := filepath.Join(dir, "in")
	if err := os.WriteFile(inPath, bytes.Repeat([]byte("x"), 8192), 0o644); err != nil {
		tb.Fatal(err)
	}
	in, err := os.Open(inPath)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { in.Close() })
	p, err := Open(filepath.Join(dir, "p"), Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { p.Close() })
	p.Bind(in, 1)
	if err := p.Commit(1); err != nil {
		tb.Fatal(err)
	}
	if p.Record().FPLen != MaxFingerprint {
		tb.Fatalf("FPLen %d", p.Record().FPLen)
	}
	return p
}

func TestStoreSyncDoNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	p := openBench(t)
	off := int64(1)
	allocs := testing.AllocsPerRun(50, func() {
		off++
		if err := p.Store(off); err != nil {
			t.Fatal(err)
		}
		if err := p.Sync(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Store+Sync: %v allocations per run, want 0", allocs)
	}
}

func BenchmarkStore(b *testing.B) {
	p := openBench(b)
	b.ReportAllocs()
	off := int64(1)
	for b.Loop() {
		off++
		if err := p.Store(off); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCommit(b *testing.B) {
	p := openBench(b)
	b.ReportAllocs()
	off := int64(1)
	for b.Loop() {
		off++
		if err := p.Commit(off); err != nil {
			b.Fatal(err)
		}
	}
}
