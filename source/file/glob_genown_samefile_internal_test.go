package file

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// While tailfeed was stopped, w.log was renamed to w.log.1 (out of the
// glob) with two lines its stream had not read, and a new w.log written.
// At the start the new w.log takes the old pointer (adoptByPath: its
// source reads w.log.1's tail first, then its own file). While that stream
// waits for a slot (maxOpenFiles 1, the other file's stream opening) the
// application appends to w.log and a scan looks: the pointer still names
// w.log.1, whose first bytes are not w.log's, and the scan took w.log for a
// new file on a reused inode — a second stream read it from its start
// beside the first, every line of it delivered twice (audit 7 B: an
// "adopted" and a "reset" epoch for the same file key 2–9 ms apart,
// duplicates in exactlyOnce output and a false lostTails at a later start).
func TestGlobGenOwnStreamWaitingIsNotTakenForInodeReuse(t *testing.T) {
	t.Parallel()
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
	// Stopped: rotated with an unread tail, a new w.log.
	appendTo(t, w, numbered("tail", 2))
	if err := os.Rename(w, w+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w, []byte(numbered("new", 3)), 0o600); err != nil {
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
	appendTo(t, w, numbered("more", 2))
	time.Sleep(400 * time.Millisecond) // scans (every 100 ms) look at the grown w.log
	close(release)
	got := ig2.popAll(3 * time.Second)
	ig2.g.mu.Lock()
	streams := 0
	for _, s := range ig2.g.byKey {
		if s.path == w {
			streams++
		}
	}
	gone := gen.gone || gen.keyReused
	ig2.g.mu.Unlock()
	if got != 7 || gone {
		t.Errorf("after the restart: %d lines delivered (want w.log.1's 2 and w.log's 5), %d streams at w.log, its adopting stream taken for gone: %v", got, streams, gone)
	}
}
