package pointer

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// deferredNew opens a new pointer with DeferSync and the epochs file in its
// directory, counting the file and directory fsyncs (no delay) and the
// msyncs (fake).
func deferredNew(t *testing.T) (p *Pointer, fake *fakeMapping, epochs string, dirs func() int64) {
	t.Helper()
	dir := t.TempDir()
	epochs = filepath.Join(dir, "f.epochs")
	if err := os.WriteFile(epochs, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, d := slowSyncs(t, 0)
	fake = &fakeMapping{}
	p, err := Open(filepath.Join(dir, "00000000000000aa.ptr"), Options{Map: fakeMap(fake), EpochsPath: epochs,
		Input: "/in/a.log", Epoch: 0xaa, DeferSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, fake, epochs, d.Load
}

// A new pointer opened with DeferSync is written (both slots, and its
// epochs line fsynced first, as always) but neither msynced nor its
// directory fsynced in Open: a glob feed's streams sync it with their first
// commit, off the way to their first line (bench 7a: those msyncs on the
// way were 0.15 s of a 1,000-file start). Synced says so until the first
// Sync, which fsyncs the directory and msyncs both slots at once.
func TestDeferSyncNewPointerSyncedByFirstSync(t *testing.T) {
	p, fake, epochs, dirs := deferredNew(t)
	if fake.flushes != 0 || dirs() != 0 {
		t.Fatalf("Open: %d msyncs, %d directory fsyncs; want none", fake.flushes, dirs())
	}
	if p.Synced() {
		t.Fatal("Synced before the first Sync")
	}
	if b, _ := os.ReadFile(epochs); !strings.Contains(string(b), `"created"`) {
		t.Fatalf("epochs file %q has no created line (write-ahead)", b)
	}
	// Stored, not synced: kill -9 keeps what the mapping holds.
	if rec, _, err := decode(fake.mem); err != nil || rec.Epoch != 0xaa || rec.Offset != 0 {
		t.Fatalf("mapping holds %+v, %v; want epoch aa at 0", rec, err)
	}
	if err := p.Sync(); err != nil {
		t.Fatal(err)
	}
	if fake.flushes != 1 || dirs() != 1 || !p.Synced() {
		t.Fatalf("first Sync: %d msyncs, %d directory fsyncs, synced %v; want 1, 1, true", fake.flushes, dirs(), p.Synced())
	}
	rec, errs, err := decode(fake.disk)
	if err != nil || errs[0] != nil || errs[1] != nil || rec.Epoch != 0xaa {
		t.Fatalf("on disk %+v %v %v; want both slots at epoch aa", rec, errs, err)
	}
	if err := p.Sync(); err != nil || fake.flushes != 1 || dirs() != 1 {
		t.Fatalf("second Sync with nothing new: %v, %d msyncs, %d directory fsyncs", err, fake.flushes, dirs())
	}
}

// The first commit after a deferred creation goes to slot B and its msync
// carries the creation record in A with it: on disk afterwards, B is the
// newest and A the creation record (the slot rule holds: a store never
// overwrites the only valid record).
func TestDeferSyncFirstCommitCarriesCreation(t *testing.T) {
	p, fake, _, _ := deferredNew(t)
	if err := p.Commit(300); err != nil {
		t.Fatal(err)
	}
	if fake.flushes != 1 {
		t.Fatalf("%d msyncs for the first commit, want 1", fake.flushes)
	}
	a, errA := decodeSlot(slotBytes(fake.disk, 0), 'A')
	b, errB := decodeSlot(slotBytes(fake.disk, 1), 'B')
	if errA != nil || errB != nil || a.Offset != 0 || b.Offset != 300 || a.Epoch != 0xaa || b.Epoch != 0xaa {
		t.Fatalf("on disk A %+v (%v), B %+v (%v); want A at 0, B at 300", a, errA, b, errB)
	}
}

// A failed first msync is reported (ErrSync and the errno), leaves the
// pointer unsynced, and the next Sync rewrites and flushes it.
func TestDeferSyncFailedFirstSyncRetried(t *testing.T) {
	p, fake, _, _ := deferredNew(t)
	fake.fail = []error{syscall.EIO}
	if err := p.Sync(); !errors.Is(err, ErrSync) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("first Sync with a failing msync = %v, want ErrSync and EIO", err)
	}
	if p.Synced() {
		t.Fatal("Synced after a failed msync")
	}
	if err := p.Sync(); err != nil || !p.Synced() {
		t.Fatalf("retry: %v, synced %v", err, p.Synced())
	}
	if rec, _, err := decode(fake.disk); err != nil || rec.Epoch != 0xaa {
		t.Fatalf("on disk after the retry: %+v, %v", rec, err)
	}
}

// kill -9 before the first Sync: the record is in the page cache (a real
// mapping), so the next Open finds it, epoch kept, not a fresh start.
func TestDeferSyncSurvivesCloseWithoutSync(t *testing.T) {
	path := filepath.Join(t.TempDir(), "00000000000000bb.ptr")
	p, err := Open(path, Options{Epoch: 0xbb, DeferSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil { // no Sync: as a killed process leaves it
		t.Fatal(err)
	}
	q, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if q.Fresh() || q.Record().Epoch != 0xbb || !q.Synced() {
		t.Fatalf("reopened: fresh %v (%s), epoch %x, synced %v", q.Fresh(), q.FreshReason(), q.Record().Epoch, q.Synced())
	}
}

// An existing pointer file is opened as without DeferSync (its record is
// flushed once at open, Synced true).
func TestDeferSyncExistingFileAsBefore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "00000000000000cc.ptr")
	p, err := Open(path, Options{Epoch: 0xcc})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	fake := &fakeMapping{}
	q, err := Open(path, Options{Map: fakeMap(fake), DeferSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if fake.flushes != 1 || !q.Synced() || q.Record().Epoch != 0xcc {
		t.Fatalf("existing file with DeferSync: %d msyncs, synced %v, epoch %x", fake.flushes, q.Synced(), q.Record().Epoch)
	}
}

// The first Adopt of a pointer Open created writes its "adopted" line
// without reading the epochs file's tail (its epoch is new: no adopted line
// of it can be there); a glob start read it once per new stream. A later
// Adopt on the same Pointer still checks the tail (one line per file).
func TestAdoptOfCreatedPointerReadsNoEpochsTail(t *testing.T) {
	dir := t.TempDir()
	epochs := filepath.Join(dir, "f.epochs")
	input := filepath.Join(dir, "a.log")
	if err := os.WriteFile(input, []byte("line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	reads := 0
	orig := readLastLine
	readLastLine = func(path string) (EpochLine, bool) { reads++; return orig(path) }
	t.Cleanup(func() { readLastLine = orig })
	p, err := Open(filepath.Join(dir, "00000000000000ab.ptr"), Options{EpochsPath: epochs, Input: input, Epoch: 0xab, DeferSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	in, key, _ := openInput(t, input)
	if err := p.Adopt(in, key); err != nil {
		t.Fatal(err)
	}
	if reads != 0 {
		t.Fatalf("first Adopt of a created pointer read the epochs tail %d times", reads)
	}
	if err := p.Adopt(in, key); err != nil {
		t.Fatal(err)
	}
	if adopted := countReason(t, epochs, "adopted"); reads != 1 || adopted != 1 {
		t.Fatalf("after a second Adopt: %d tail reads, %d adopted lines; want 1, 1", reads, adopted)
	}
}

// countReason is the number of lines of the epochs file with reason.
func countReason(t *testing.T, epochs, reason string) int {
	t.Helper()
	got, err := ReadEpochs(epochs)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range got {
		if l.Reason == reason {
			n++
		}
	}
	return n
}
