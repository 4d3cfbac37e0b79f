package pointer

import (
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
)

// Review of DeferSync (commit ff04e3a): the "directory entry not fsynced
// yet" debt (dirOwed) lives only in the Pointer that created the file. A
// file created with DeferSync and closed before a Sync fsynced its
// directory (kill -9 before the stream's first commit step, or a first
// Sync whose directory fsync failed, then the source's Close) is opened
// again as an existing file: Open neither fsyncs the directory nor marks it
// owed, so nothing ever makes the entry durable, yet Commit returns nil and
// Synced is true. Before the change a pointer file that held a record always
// had its directory entry fsynced (openFile, before the first write). After
// a power loss the file can be gone although its commits were reported
// durable: the glob then reads that file again from its start under a new
// epoch (every acknowledged line re-delivered, beyond DESIGN §2's
// duplicates, and exactlyOnce sinks cannot skip them).

// countDirSyncs replaces the directory fsync: the first fail calls return
// EIO, every call that succeeds is counted.
func countDirSyncs(t *testing.T, fail int) *atomic.Int64 {
	t.Helper()
	ok := &atomic.Int64{}
	left := &atomic.Int64{}
	left.Store(int64(fail))
	sd := syncDir
	syncDir = func(dir string) error {
		if left.Add(-1) >= 0 {
			return syscall.EIO
		}
		if err := sd(dir); err != nil {
			return err
		}
		ok.Add(1)
		return nil
	}
	t.Cleanup(func() { syncDir = sd })
	return ok
}

// kill -9 before the first Sync, then the restart opens the pointer again
// (the glob passes DeferSync; an existing file is opened as without it)
// and commits: the commit is reported synced while the file's directory
// entry was never fsynced by anyone.
func TestDeferSyncReopenAfterKillSyncsDirectoryEntry(t *testing.T) {
	dirs := countDirSyncs(t, 0)
	path := filepath.Join(t.TempDir(), "00000000000000dd.ptr")
	p, err := Open(path, Options{Epoch: 0xdd, DeferSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil { // no Sync: what a killed process leaves
		t.Fatal(err)
	}
	q, err := Open(path, Options{DeferSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if q.Fresh() || q.Record().Epoch != 0xdd {
		t.Fatalf("reopened: fresh %v, epoch %x; want the page-cache record", q.Fresh(), q.Record().Epoch)
	}
	if err := q.Commit(100); err != nil {
		t.Fatal(err)
	}
	if q.Synced() && dirs.Load() == 0 {
		t.Fatalf("Commit(100) returned nil and Synced is true, but the pointer file's directory entry was never fsynced (%d directory fsyncs): a power loss can remove the file under a commit reported durable", dirs.Load())
	}
}

// The first Sync's directory fsync fails (the source's Close: the final
// commit fails, the glob owes the commit and makes it later by opening the
// pointer again, commitOwed): the commit made on the reopened pointer is
// reported synced, the directory entry never was.
func TestDeferSyncFailedDirectorySyncThenReopen(t *testing.T) {
	dirs := countDirSyncs(t, 1)
	path := filepath.Join(t.TempDir(), "00000000000000ee.ptr")
	p, err := Open(path, Options{Epoch: 0xee, DeferSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Sync(); err == nil {
		t.Fatal("first Sync with a failing directory fsync succeeded")
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	q, err := Open(path, Options{}) // as glob.commitOwed opens it
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if err := q.Commit(100); err != nil {
		t.Fatal(err)
	}
	if q.Synced() && dirs.Load() == 0 {
		t.Fatalf("owed Commit(100) returned nil and Synced is true, but the pointer file's directory entry was never fsynced (%d successful directory fsyncs)", dirs.Load())
	}
}

// The first Sync's directory fsync fails, then a Reset comes before any
// other Sync (a source crossing an epoch barrier with nothing stored): the
// Reset pays the directory debt with its slots. Before, it wrote and
// msynced both slots but left the debt: Synced stayed false with nothing
// stored to sync again, and a deleted file's forget (which waits for
// Synced) never came.
func TestDeferSyncResetPaysDirectoryDebt(t *testing.T) {
	dirs := countDirSyncs(t, 1)
	p, err := Open(filepath.Join(t.TempDir(), "00000000000000ff.ptr"), Options{Epoch: 0xff, DeferSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Sync(); err == nil {
		t.Fatal("first Sync with a failing directory fsync succeeded")
	}
	if err := p.Reset(NewEpoch(), nil, 0); err != nil {
		t.Fatal(err)
	}
	if !p.Synced() || dirs.Load() != 1 {
		t.Fatalf("after the Reset: synced %v, %d directory fsyncs; want true, 1", p.Synced(), dirs.Load())
	}
}
