// Review 14a, finding B: found and fixed in the fourteenth session.

package file

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"tailfeed/pointer"
)

// w.log (2 lines) is read and committed; it is then truncated to 0 while
// tailfeed runs (a copytruncate with its copy out of the glob), so its
// stream's pointer is Reset onto the empty file: a record that DOES name
// the file (its key) with no first bytes, at offset 0, under a new epoch
// E2. Killed so (no line of E2 published yet). While tailfeed is down the
// application writes 3 lines into w.log, w.log is deleted, and a new w.log
// (2 lines) takes its inode. The change makes ptrFor refuse the key for a
// record with no first bytes when the file was born after the pointer file
// was last written (inode reuse), and hands the pointer to adoptByPath; but
// resumeRotated's birth check (bornBy) is set only for a record whose key
// came from the epochs line (rec.FileKey == 0). With the key in the record
// the "case f != nil && key == rec.FileKey" branch takes the new w.log for
// the pointer's file (an empty fingerprint matches anything): the new file
// is read under the deleted file's epoch E2 from offset 0 (an exactlyOnce
// sink holding E2 positions of the old bytes would skip its first bytes),
// and the deleted file's 3 lines are not counted. Breaks DESIGN §10 "the
// same key with other first bytes is a new stream (inode reuse)" as the
// change means to apply it (README: "a file born after the pointer file was
// last written is another file, read from its start under a new epoch, and
// the gone one counted in lostTails") and §7 "Nothing green over a loss".
// (At 7921d24, before the change, ptrFor took the key alone and the
// result was the same: the change's new birth check in ptrFor is undone by
// resumeRotated, not a regression.)
// Observed: lostTails 0, the new w.log read under E2; every run in which
// the inode was reused (skips when the file system gives it to no new
// file, or reports no birth time).
func TestRev14BKeyedEmptyRecordInodeReusedAtPathReadUnderOldEpoch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := t.TempDir()
	pattern := filepath.Join(dir, "*.log")
	w := filepath.Join(dir, "w.log")
	if err := os.WriteFile(w, []byte(numbered("zero", 2)), 0o600); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(w, &st); err != nil {
		t.Fatal(err)
	}
	ino := uint64(st.Ino)
	ig, kill := runGlobKillable(t, pattern, data, func(*GlobConfig) {})
	if got := ig.popAll(time.Second); got != 2 {
		t.Fatalf("first run delivered %d lines, want 2", got)
	}
	var ptr string
	var e1 uint64
	ig.waitFor(t, "w.log committed", func() bool {
		s := ig.g.byPath[w]
		if s == nil || s.ptrPath == "" {
			return false
		}
		r, err := pointer.Inspect(s.ptrPath)
		if err == nil && r.Offset > 0 {
			ptr, e1 = s.ptrPath, r.Epoch
			return true
		}
		return false
	})
	if err := os.Truncate(w, 0); err != nil {
		t.Fatal(err)
	}
	var e2 uint64
	var rec pointer.Record
	ig.waitFor(t, "the pointer Reset onto the empty w.log (key, no first bytes, offset 0)", func() bool {
		r, err := pointer.Inspect(ptr)
		if err == nil && r.Epoch != e1 && r.Offset == 0 && r.FileKey != 0 && r.FPLen == 0 {
			rec, e2 = r, r.Epoch
			return true
		}
		return false
	})
	time.Sleep(300 * time.Millisecond)
	if r, _ := pointer.Inspect(ptr); r != rec {
		t.Fatalf("pointer moved on: %+v (was %+v)", r, rec)
	}
	kill()
	// Down: lines written into the cut w.log, then it is deleted and a new
	// w.log takes its inode.
	appendTo(t, w, numbered("first", 3))
	if err := os.Remove(w); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // born visibly after the pointer file's mtime
	reused := false
	for i := 0; i < 400 && !reused; i++ {
		if err := os.WriteFile(w, []byte(numbered("second", 2)), 0o600); err != nil {
			t.Fatal(err)
		}
		var st syscall.Stat_t
		if syscall.Stat(w, &st) == nil && uint64(st.Ino) == ino {
			reused = true
			break
		}
		os.Remove(w)
		time.Sleep(time.Millisecond)
	}
	if !reused {
		t.Skip("SKIP: the file system gave the deleted file's inode to no new file; the case cannot be placed")
	}
	if birthTimePath(w).IsZero() {
		t.Skip("SKIP: no birth time on this file system")
	}
	ig2, _, _ := runGlobOn(t, pattern, data)
	lines, epochs := ig2.popEpochs(3*time.Second, true)
	tails, bytes, detail := ig2.lost()
	bad := tails != 1 || len(lines) != 2 || !strings.HasPrefix(lines[0], "second-")
	for _, e := range epochs {
		if e == e2 {
			bad = true
		}
	}
	if bad {
		t.Errorf("restart: delivered %q under epochs %x (E2, the deleted file's, %x); lostTails %d lostBytes %d (%q); want the new w.log's 2 lines under a new epoch and lostTails 1 (the deleted w.log's 3 lines)", lines, epochs, e2, tails, bytes, detail)
	}
}
