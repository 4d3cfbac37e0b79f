//go:build openfindings

// Parked (thirteenth session): fails on the product as it is; see the
// issue 13 closing note. go test -tags openfindings ./source/file -run TestRev13A

package file

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// Review of 78ea949, race 2 (genOwn). While tailfeed was stopped, w.log was
// renamed to w.log.1 (out of the glob) with two lines its stream had not
// read, and a new w.log written. At the start the new w.log takes the old
// pointer (adoptByPath, genOwn: its source is to read w.log.1's tail first,
// then its own file). While that stream waits for a slot (maxOpenFiles 1),
// the new w.log is deleted. The scan finds the waiting stream gone and,
// the pointer not naming w.log's key, takes it for "unread" (neverRead):
// it counts from the pointer's offset — an offset in w.log.1, not in w.log
// — to w.log's size, which is less, so nothing is counted, and the stream
// is taken off the queue (closed, gone). w.log.1's two lines (beside the
// path, still there) are not read in this run (the pointer still names
// w.log.1 at offset 20: only a restart before forgetAfter would read them),
// and w.log's three lines, deleted unread, are never counted: lostTails 0.
//
// DESIGN §4/§10: the generation a pointer names is read before the file at
// the path ("at a start ... a pointer's generation, then the later
// generations, before the file at the path"); "A file that disappears with
// an unread tail counts in lostTails"; §2: never lose a line silently.
func TestRev13AGenOwnWaitingFileDeletedLosesOldTailSilently(t *testing.T) {
	dir, data := t.TempDir(), t.TempDir()
	pattern := filepath.Join(dir, "*.log")
	a, w := filepath.Join(dir, "a.log"), filepath.Join(dir, "w.log")
	for p, c := range map[string]string{a: numbered("a", 5), w: numbered("w", 5)} {
		if err := os.WriteFile(p, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ig, _, stop := runGlobOn(t, pattern, data)
	if got := ig.popAll(2 * time.Second); got != 10 {
		t.Fatalf("first run delivered %d lines, want 10", got)
	}
	stop()
	appendTo(t, w, numbered("tail", 2))
	if err := os.Rename(w, w+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w, []byte(numbered("n", 3)), 0o600); err != nil {
		t.Fatal(err)
	}
	var opens atomic.Int32
	release := make(chan struct{})
	ig2, stop2 := runGlobWith(t, pattern, data, 5*time.Second, func(c *GlobConfig) {
		c.MaxOpenFiles = 1
		c.CloseInactive = 50 * time.Millisecond
		c.Stream.OpenHook = func() {
			if opens.Add(1) == 1 {
				<-release // the first stream's open holds the one slot
			}
		}
	}, nil)
	defer stop2()
	var gen *gstream
	ig2.waitFor(t, "w.log's stream, given the old pointer, waiting for the slot", func() bool {
		for _, s := range ig2.g.byKey {
			if s.genOwn && s.st == stQueued {
				gen = s
			}
		}
		return gen != nil
	})
	if err := os.Remove(w); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond) // scans (every 100 ms) see w.log gone
	close(release)
	got := ig2.popAll(3 * time.Second)
	tails, bytes, detail := ig2.lost()
	// w.log.1's 2 lines ("tail-0\ntail-1\n", 14 bytes) are beside its path:
	// read (2 delivered), or at the very least counted; w.log's 3 lines
	// ("n-0\nn-1\nn-2\n", 12 bytes) were deleted unread: counted.
	if got < 2 && bytes < 14+12 || got >= 2 && bytes < 12 {
		t.Errorf("after the restart: %d lines delivered (want w.log.1's 2), lostTails %d lostBytes %d (%q): w.log.1's tail and the deleted w.log's 12 bytes are neither delivered nor counted",
			got, tails, bytes, detail)
	}
}
