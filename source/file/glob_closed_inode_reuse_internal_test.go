package file

import (
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/internal/fileutil"
	"tailfeed/pointer"
)

// found and fixed in the seventeenth session (CI on 1f15ec2,
// TestRev9COKRenameOverDelivered, replacement 213 of 300): a.log, read to
// its end by an open stream, is renamed over; rotateWaitMillis later its
// source closes the deleted file's descriptor, and a new file renamed over
// a.log is given the freed inode at once. The reader counted the
// descriptor as held (Source.holds) until after its close, and a scan in
// between took the new file, at the open stream's key, for that stream's
// own, already read to its end: CLOSED at offset = size, the feed
// CAUGHT_UP and settled, and the new file's lines were never read.
//
// The source's close hook runs right after the descriptor is closed (the
// inode free): the test makes a file on that inode, renames it over a.log
// and lets a scan look before the source goes on. Rounds repeat until the
// file system gives the freed inode to the new file.
func TestGlobFileOnInodeFreedByClosingStreamIsRead(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	a := filepath.Join(dir, "a.log")
	if err := os.WriteFile(a, []byte(numbered("a00", 3)), 0o600); err != nil {
		t.Fatal(err)
	}
	var (
		armed   atomic.Uint64 // the key whose close the hook waits for
		round   atomic.Int32
		reused  atomic.Int32 // the last round whose new file got the freed inode
		rounds  atomic.Int32 // how many did
		hookErr atomic.Value
		ig      *internalGlob
	)
	// onClose runs in the closing source's goroutine, the inode free.
	onClose := func(want uint64) {
		r := round.Load()
		// Same size as the file renamed over (a%02d vs b%02d lines): not
		// grown past what the stream read, nothing made its stream look
		// again.
		content := []byte(numbered(fmt.Sprintf("b%02d", r), 3))
		var tmp string
		for i := 0; i < 20 && tmp == ""; i++ {
			p := filepath.Join(dir, fmt.Sprintf("reuse-%d-%d.tmp", r, i))
			if err := os.WriteFile(p, content, 0o600); err != nil {
				hookErr.Store(err)
				return
			}
			if k, err := keyOfPath(p); err == nil && k == want {
				tmp = p
			} else {
				os.Remove(p)
			}
		}
		if tmp == "" {
			return // not given the inode this round
		}
		if err := os.Rename(tmp, a); err != nil {
			hookErr.Store(err)
			return
		}
		reused.Store(r)
		rounds.Add(1)
		// A scan's look at it (keys rebuilt under mu) before the source
		// goes on.
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
		c.Stream.RotateWait = 50 * time.Millisecond
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
	waitDelivered := func(prefix string) {
		t.Helper()
		for end := time.Now().Add(10 * time.Second); !delivered(prefix); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("%s's 3 lines not delivered within 10 s; files %+v", prefix, ig.g.Files())
			}
		}
	}
	waitDelivered("a00")
	for r := int32(1); r <= 20 && rounds.Load() < 3; r++ {
		round.Store(r)
		k, err := keyOfPath(a)
		if err != nil {
			t.Fatal(err)
		}
		armed.Store(k)
		// Renamed over: its stream's source closes a.log's old file
		// rotateWaitMillis later (the hook runs then).
		tmp := filepath.Join(dir, "next.tmp")
		if err := os.WriteFile(tmp, []byte(numbered(fmt.Sprintf("a%02d", r), 3)), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, a); err != nil {
			t.Fatal(err)
		}
		waitDelivered(fmt.Sprintf("a%02d", r))
		for end := time.Now().Add(10 * time.Second); armed.Load() != 0; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("round %d: a.log's old file not closed within 10 s", r)
			}
		}
		if err, _ := hookErr.Load().(error); err != nil {
			t.Fatal(err)
		}
		if reused.Load() == r {
			waitDelivered(fmt.Sprintf("b%02d", r))
		}
	}
	if rounds.Load() == 0 {
		t.Skip("the file system never gave the freed inode to the next file made in 20 rounds: the case did not arise")
	}
	t.Logf("%d rounds in which a new file got the freed inode, its lines delivered", rounds.Load())
}

func keyOfPath(p string) (uint64, error) {
	f, err := os.Open(p)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	dev, ino, err := fileutil.DevIno(f)
	if err != nil {
		return 0, err
	}
	return pointer.FileKey(dev, ino), nil
}
