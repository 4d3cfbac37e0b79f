// Review 13a finding (thirteenth session), fixed in the same session.

package file

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Review of 78ea949, race 1 (`unlisted`). A glob file read to its end,
// committed and closed is deleted, and a new file created at its path takes
// its inode between a scan's walk (which did not list the path: the walk saw
// the deletion) and that scan's look. The new file begins with the same
// bytes as the deleted one (an application banner / CSV header longer than
// the fingerprint, as most logs written by one program do). The diff leaves
// the stream to "the next scan (sameFile)", and sameFile, finding the
// pointer's fingerprint at the head of the new file, takes it for the old
// file: the stream resumes at the deleted file's offset inside the new file,
// and the new file's lines before that offset are never delivered and never
// counted (lostTails 0): a silent loss. The file's birth time (after the
// stream was first seen) tells it apart, as the diff does for genOwn.
//
// DESIGN §10 "Streams": "a key whose file was seen deleted ... is retired, so
// a file that later appears with it is a new stream whatever its first
// bytes"; "A new key is a new stream, read from its start". Had the walk
// come a moment later (deletion seen by walk and look), the key is retired
// and the new file read whole: the race changes the outcome.
func TestRev13AInodeReusedAfterWalkWithSameHeadIsReadWhole(t *testing.T) {
	t.Parallel()
	var hb strings.Builder
	for i := 0; hb.Len() < 4200; i++ {
		hb.WriteString("# banner: app v1.2.3 format=ts,level,msg fields=" + strings.Repeat("x", 40) + "\n")
	}
	header := hb.String()
	hdrLines := strings.Count(header, "\n")
	dir, data, path := aLogIn(t, header+numbered("old", 5))
	pattern := filepath.Join(dir, "*.log")
	newContent := header + numbered("new", 40)
	var armed atomic.Bool
	var reused, tries atomic.Int32
	var oldIno uint64
	hook := func(list []found) {
		if !armed.Load() {
			return
		}
		for _, f := range list {
			if f.path == path {
				return
			}
		}
		defer armed.Store(false)
		for i := 0; i < 200; i++ {
			tries.Add(1)
			if err := os.WriteFile(path, []byte(newContent), 0o600); err != nil {
				return
			}
			var st syscall.Stat_t
			if syscall.Stat(path, &st) == nil && st.Ino == oldIno {
				reused.Store(1)
				return
			}
			os.Remove(path)
			time.Sleep(time.Millisecond)
		}
	}
	ig, stop := runGlobWith(t, pattern, data, 5*time.Second, func(c *GlobConfig) {
		c.CloseInactive = 50 * time.Millisecond
	}, func(g *Glob) { g.afterWalk = hook })
	defer stop()
	if got := ig.popAll(time.Second); got != hdrLines+5 {
		t.Fatalf("first file: %d lines, want %d", got, hdrLines+5)
	}
	ig.waitFor(t, "a.log's stream closed, committed", func() bool {
		for _, s := range ig.g.byKey {
			return s.st == stClosed && s.owe == nil && s.offset == int64(len(header)+len(numbered("old", 5)))
		}
		return false
	})
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	oldIno = st.Ino
	time.Sleep(20 * time.Millisecond) // the new file born visibly after the stream was seen
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
		t.Skipf("SKIP: the new file got another inode in %d tries", tries.Load())
	}
	got := ig.popAll(2 * time.Second)
	tails, bytes, detail := ig.lost()
	if got != hdrLines+40 {
		t.Errorf("the new a.log (a new file on the deleted one's inode, born after it): %d lines delivered, want %d (read from its start); lostTails %d lostBytes %d (%q)",
			got, hdrLines+40, tails, bytes, detail)
	}
}
