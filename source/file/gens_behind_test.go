package file_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"tailfeed/pointer"
	"tailfeed/source/file"
)

// Regression tests for generations a restart skipped although their lines
// were never read (e2e TestAud2XKill9CopytruncateThenRotationLosesGeneration,
// TestAud2XKill9…SoakGap): the pointer and epochs file are set up directly,
// as a kill -9 leaves them.

// setPointer leaves, in dir's pointer file (app.ptr, epochs app.epochs), a
// record under a new epoch naming the file at path (its key and first
// bytes) at offset, as a run killed there leaves it. It returns the epoch.
func setPointer(t *testing.T, dir, path string, offset int64) uint64 {
	t.Helper()
	p, err := pointer.Open(filepath.Join(dir, "app.ptr"), pointer.Options{EpochsPath: filepath.Join(dir, "app.epochs"), Input: filepath.Join(dir, "app.log")})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	id := identity(t, path)
	epoch := pointer.NewEpoch()
	if err := p.Reset(epoch, f, pointer.FileKey(id[0], id[1])); err != nil {
		t.Fatal(err)
	}
	if err := p.Commit(offset); err != nil {
		t.Fatal(err)
	}
	return epoch
}

// fileSize is the size of the file at path.
func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// expectAll fails unless every line of want was delivered at least once
// (duplicates are allowed: never a gap).
func expectAll(t *testing.T, r *rig, want ...[]string) {
	t.Helper()
	c := counts(r.rec.all())
	for _, ls := range want {
		for _, l := range ls {
			if c[l] == 0 {
				t.Fatalf("line %q never delivered (lostTails %d); delivered %v\nlog:\n%s", l, r.src.LostTails(), lines(r.rec.all()), tailOf(r.logs.String(), 40))
			}
		}
	}
}

// Mechanism 1 (statx birth time): a copytruncate's original keeps its
// inode, so it is born before its copies although its refill is newer than
// every copy. A restart whose pointer names a copy by its key (the copy
// read on after a live copytruncate, Bind; or a copy the pointer moved back
// onto when a restart read generations within the 2 s slack again) took
// the original, refilled and rotated away, for an earlier generation
// ("created before the pointer's file") and never read its refill, with
// lossless true. A file modified after the pointer's file was last is not
// an earlier one, whatever its birth time: it is read.
func TestRestartReadsCopytruncatedOriginalBornBeforeThePointersCopy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := filepath.Join(dir, "app.log")
	appendTo(t, in, numbered("a", 0, 200)...) // the original: born first
	time.Sleep(30 * time.Millisecond)
	data, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in+".1", data, 0o644); err != nil { // the copy
		t.Fatal(err)
	}
	if err := os.Truncate(in, 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond)
	appendTo(t, in, numbered("r", 0, 50)...) // the refill, newer than the copy
	// The pointer read the copy to its end (the copy's key, bound).
	setPointer(t, dir, in+".1", fileSize(t, in+".1"))
	// Rotated while stopped: the refilled original away, a new file.
	mustRename(t, in+".1", in+".2")
	mustRename(t, in, in+".1")
	appendTo(t, in, numbered("c", 0, 10)...)

	r := newRig(t, dir, rigOpts{strategy: file.Committed}).start()
	r.waitLines(10)
	r.waitSettled()
	time.Sleep(200 * time.Millisecond)
	expectAll(t, r, numbered("r", 0, 50), numbered("c", 0, 10))
	if c := counts(r.rec.all()); c["a-00000"] != 0 {
		t.Fatalf("the copy read to its end by the pointer was read again: %v", lines(r.rec.all()))
	}
}
