package pointer

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Review (issue 13, DESIGN §4 "The pointer's creation and each Reset append
// a line to dataDir/feeds/<feed>.epochs ... so any epoch a pointer ever held
// can be mapped back to its file", write-ahead: the line is fsynced before
// a slot holds the epoch). logEpoch only logs a failed append, and reset
// goes on to write and msync the epoch into both slots: Open returns a
// pointer holding an epoch whose epochs line never reached the disk (here
// the epochs fsync fails with EIO, as the group leader's fsync does for
// every caller of its batch). Lines are then published under an epoch no
// catch-up can map back to its file.
func TestCreatedPointerRefusesEpochWhoseLineFsyncFailed(t *testing.T) {
	dir := t.TempDir()
	epochs := filepath.Join(dir, "f.epochs")
	if err := os.WriteFile(epochs, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	sf := syncFile
	syncFile = func(*os.File) error { return errors.New("input/output error") }
	defer func() { syncFile = sf }()
	path := filepath.Join(dir, "0000000000000001.ptr")
	p, err := Open(path, Options{EpochsPath: epochs, Input: "/in/a.log"})
	if err != nil {
		t.Logf("Open refused the pointer (write-ahead kept): %v", err)
		return
	}
	defer p.Close()
	rec, ierr := Inspect(path)
	if ierr != nil {
		t.Fatal(ierr)
	}
	t.Errorf("Open succeeded and the pointer file holds epoch %016x (synced %v) although the epochs line for it failed its fsync: the write-ahead rule is broken",
		rec.Epoch, p.Synced())
}

// A Reset whose epochs line fails its fsync returns the error and leaves
// the pointer file holding the previous record; the next Sync writes the
// line, then both slots.
func TestResetHoldsEpochUntilItsLineIsFsynced(t *testing.T) {
	dir := t.TempDir()
	epochs := filepath.Join(dir, "f.epochs")
	path := filepath.Join(dir, "0000000000000001.ptr")
	p, err := Open(path, Options{EpochsPath: epochs, Input: "/in/a.log"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Commit(10); err != nil {
		t.Fatal(err)
	}
	old := p.Record().Epoch
	sf := syncFile
	syncFile = func(*os.File) error { return errors.New("input/output error") }
	const next = 0x1234
	if err := p.Reset(next, nil, 0); err == nil {
		syncFile = sf
		t.Fatal("Reset succeeded although its epochs line failed its fsync")
	}
	if err := p.Store(5); err != nil {
		syncFile = sf
		t.Fatal(err)
	}
	if err := p.Sync(); err == nil {
		syncFile = sf
		t.Fatal("Sync succeeded although the owed epochs line still fails")
	}
	syncFile = sf
	if rec, err := Inspect(path); err != nil || rec.Epoch != old || rec.Offset != 10 {
		t.Fatalf("pointer file %+v (%v): want the previous epoch %016x at 10 while the line is owed", rec, err, old)
	}
	if err := p.Sync(); err != nil {
		t.Fatal(err)
	}
	rec, err := Inspect(path)
	if err != nil || rec.Epoch != next || rec.Offset != 5 {
		t.Fatalf("after the line was written: %+v (%v), want epoch %x at 5", rec, err, next)
	}
	lines, err := ReadEpochs(epochs)
	if err != nil || len(lines) == 0 || lines[len(lines)-1].Epoch != next {
		t.Fatalf("epochs file %+v (%v): want a last line for %x", lines, err, next)
	}
}
