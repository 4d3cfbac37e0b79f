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
func TestReviewCreatedPointerHoldsEpochWhoseLineFsyncFailed(t *testing.T) {
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
