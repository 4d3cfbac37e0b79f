// Review 17a, findings A and B: found in the seventeenth session, fixed in
// the eighteenth (sameFile: a file born after the glob first saw a
// stream's, its inode not pinned by the stream's source, is another file).

package file

import (
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// review 17a A: a.log, read to its end by an open stream, is deleted. The
// deletion's event names an open stream's path (drainEvents: a poke, no
// rescan), and with scanIntervalMillis past rotateWaitMillis (the
// defaults: 10 s, 5 s) no scan sees a.log gone before its source closes
// the descriptor, rotateWaitMillis later. A new a.log is then given the
// freed inode, and a scan (any other file's event) looks before the glob
// books the stream closed: sameFile's "at its path, never seen gone, open"
// rule takes it for the stream's own (its source holds nothing any more),
// seen() copies its size and mtime into the stream, and from then on
// "f.size == s.size && f.mod == s.mod" keeps it the stream's after the
// close: its lines are never read, the feed CAUGHT_UP.
func TestRev17AAFileOnInodeFreedBeforeAnyScanSawTheDeletionIsRead(t *testing.T) {
	t.Parallel()
	for attempt := 1; attempt <= 5; attempt++ {
		if rev17aReused(t, attempt, false) {
			return
		}
	}
	t.Skip("SKIP: the file system never gave the freed inode to the next file made: the case did not arise")
}

// review 17a B: a.log, read to its end by an open stream, is deleted; no
// scan sees it gone (its event names an open stream's path: a poke, no
// rescan; scanIntervalMillis past rotateWaitMillis), its source closes the
// descriptor rotateWaitMillis later, and a new a.log is given the freed
// inode with the old file's size and mtime (cp -p, rsync -t, touch -r; or
// made within one coarse kernel tick of the old file's last write). No scan
// looks in between (unlike A): the stream is booked closed, never seen
// gone, its key not retired. The next scan's sameFile takes the file for
// the stream's on "at its path, f.size == s.size && f.mod == s.mod" before
// any birth time or first-byte check: its lines are never read, the feed
// CAUGHT_UP.
func TestRev17ABSameSizeSameMtimeFileOnFreedInodeIsRead(t *testing.T) {
	t.Parallel()
	for attempt := 1; attempt <= 5; attempt++ {
		if rev17aReused(t, attempt, true) {
			return
		}
	}
	t.Skip("SKIP: the file system never gave the freed inode to the next file made: the case did not arise")
}

// rev17aReused runs one round; false when the new file was not given the
// freed inode. sameMtime (B): the new file gets the old one's mtime and no
// scan looks until the stream is closed; else (A) a scan looks before the
// source goes on from the close.
func rev17aReused(t *testing.T, attempt int, sameMtime bool) bool {
	dir, data := t.TempDir(), t.TempDir()
	a := filepath.Join(dir, "a.log")
	if err := os.WriteFile(a, []byte(numbered("a00", 3)), 0o600); err != nil {
		t.Fatal(err)
	}
	if birthTimeTarget(a).IsZero() {
		t.Skip("SKIP: no birth times on this file system: a file on a freed inode with the old one's size and mtime cannot be told apart (README \"Rewrites tailfeed cannot see\")")
	}
	var (
		armed   atomic.Uint64
		reused  atomic.Bool
		hookErr atomic.Value
		ig      *internalGlob
		oldMod  time.Time
	)
	onClose := func(want uint64) {
		// The same size as a.log's old content: nothing grew.
		content := []byte(numbered("b00", 3))
		for i := 0; i < 20; i++ {
			if err := os.WriteFile(a, content, 0o600); err != nil {
				hookErr.Store(err)
				return
			}
			if k, err := keyOfPath(a); err == nil && k == want {
				reused.Store(true)
				break
			}
			os.Remove(a)
		}
		if !reused.Load() {
			return
		}
		if sameMtime {
			if err := os.Chtimes(a, oldMod, oldMod); err != nil {
				hookErr.Store(err)
			}
			return
		}
		// Another file's event: a rescan, before the source goes on (the
		// glob books its stream closed only after that).
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("kick-%d", attempt)), nil, 0o600); err != nil {
			hookErr.Store(err)
			return
		}
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(2 * time.Millisecond) {
			ig.g.mu.Lock()
			p := ig.g.keys[want]
			ig.g.mu.Unlock()
			if p == a {
				return
			}
		}
	}
	ig, stop := runGlobWith(t, filepath.Join(dir, "*.log"), data, 5*time.Second, func(c *GlobConfig) {
		c.ScanInterval = time.Hour // the default 10 s, past rotateWaitMillis: no periodic look in between
		c.Stream.RotateWait = 100 * time.Millisecond
		c.Stream.CloseHook = func(k uint64) {
			if k != 0 && armed.Load() == k {
				onClose(k)
				armed.Store(0)
			}
		}
	}, nil)
	defer stop()
	count, stopConsume := ig.consumeLive()
	defer stopConsume()
	delivered := func(prefix string) bool {
		for i := range 3 {
			if count(fmt.Sprintf("%s-%d", prefix, i)) == 0 {
				return false
			}
		}
		return true
	}
	for end := time.Now().Add(10 * time.Second); !delivered("a00"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("a00's lines not delivered; files %+v", ig.g.Files())
		}
	}
	k, err := keyOfPath(a)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(a)
	if err != nil {
		t.Fatal(err)
	}
	oldMod = st.ModTime()
	ig.g.mu.Lock()
	s0 := ig.g.byKey[k] // a.log's stream
	ig.g.mu.Unlock()
	armed.Store(k)
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(10 * time.Second); armed.Load() != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("a.log's deleted file not closed within 10 s; files %+v", ig.g.Files())
		}
	}
	if err, _ := hookErr.Load().(error); err != nil {
		t.Fatal(err)
	}
	if !reused.Load() {
		return false
	}
	if sameMtime {
		ig.waitFor(t, "a.log's old stream closed", func() bool {
			// (Or already gone from the key: its close asks for a scan,
			// which may have met the new file on its inode first.)
			s := ig.g.byKey[k]
			return s == nil || s != s0 || s.st == stClosed
		})
		time.Sleep(500 * time.Millisecond)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("kick-%d", attempt)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		// A scan (another file's event) now the stream is closed.
	}
	for end := time.Now().Add(5 * time.Second); !delivered("b00"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the new a.log on the freed inode: its 3 lines not delivered within 5 s (state %v, files %+v)",
				ig.g.State(), ig.g.Files())
		}
	}
	return true
}
