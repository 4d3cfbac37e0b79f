package file

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"tailfeed/pointer"
)

// A glob file read to its end, committed and closed is deleted, and a new
// file created at its path takes its inode — between a scan's walk (which
// did not list the path) and that scan's look at the streams it did not
// find. The look found the key at the path again: it marked the stream gone
// without forgetting it (its file "still at its path"), and the next scan,
// seeing the key with other first bytes, skipped the forget for a stream
// already gone. Its pointer kept naming the deleted file, and the next start
// counted it "gone while stopped": lostTails 1, lossless false, every line
// delivered (CI of afab7bb: TestAud7EDeletedClosedFileCountedLost; 3 of
// 120 runs under load before the fix). The pointer must record that nothing
// of the deleted file is pending, and the new file must be read whole.
func TestGlobInodeReusedBetweenWalkAndLookIsForgotten(t *testing.T) {
	t.Parallel()
	dir, data, path := aLogIn(t, numbered("line", 5))
	pattern := filepath.Join(dir, "*.log")
	var armed atomic.Bool
	var reused, tries atomic.Int32
	var oldIno uint64
	hook := func(list []found) {
		if !armed.Load() {
			return
		}
		for _, f := range list {
			if f.path == path {
				return // walked before the deletion: the next scan
			}
		}
		defer armed.Store(false)
		for i := 0; i < 200; i++ {
			tries.Add(1)
			if err := os.WriteFile(path, []byte(numbered("new", 3)), 0o600); err != nil {
				return
			}
			var st syscall.Stat_t
			if syscall.Stat(path, &st) == nil && st.Ino == oldIno {
				reused.Store(1)
				return
			}
			os.Remove(path)
			time.Sleep(time.Millisecond) // its inode freed once nothing holds it
		}
	}
	ig, stop := runGlobWith(t, pattern, data, 5*time.Second, func(c *GlobConfig) {
		c.CloseInactive = 50 * time.Millisecond
	}, func(g *Glob) { g.afterWalk = hook })
	s := ig.firstTurnCommitted(t)
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	oldIno = st.Ino
	oldPtr := s.ptrPath
	armed.Store(true)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(10 * time.Second); armed.Load(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("no scan after the deletion in 10 s")
		}
	}
	if reused.Load() == 0 {
		if _, err := os.Stat(path); err != nil {
			os.WriteFile(path, []byte(numbered("new", 3)), 0o600)
		}
		t.Skipf("SKIP: the filesystem gave the new file another inode in %d tries; the case needs the deleted file's", tries.Load())
	}
	if got := ig.popAll(2 * time.Second); got != 3 {
		t.Errorf("the new file's lines delivered: %d, want 3", got)
	}
	stop()
	if rec, err := pointer.Inspect(oldPtr); err != nil || rec.FileKey != 0 {
		t.Errorf("the deleted file's pointer after the stop: %+v (%v); want the empty record (nothing of it pending)", rec, err)
	}
	ig2, _, _ := runGlobOn(t, pattern, data)
	if got := ig2.popAll(time.Second); got != 0 {
		t.Errorf("restart after a clean stop: %d lines delivered again, want 0", got)
	}
	tails, bytes, detail := ig2.lost()
	if tails != 0 || bytes != 0 {
		t.Errorf("restart: lostTails %d lostBytes %d (%q); want none: the deleted file was read to its end and committed", tails, bytes, detail)
	}
}
