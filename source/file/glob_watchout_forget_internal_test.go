package file

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A file out of the glob whose stream gave up its slot within
// rotateWaitMillis of its last growth is watched (lookWatched): a line its
// writer appends then is read. Found while writing that change: forget
// (forgetAfterMillis after the file was seen gone) did not know the
// stream was watched — with a forgetAfterMillis shorter than
// rotateWaitMillis it deleted the pointer and dropped the stream while
// the watch still held it, and the watch then queued a stream the glob no
// longer tracked. DESIGN §10 "Forgetting" (a finished file's pointer) and
// "read to its end (rotateWaitMillis after its last growth), then closed".
func TestGlobWatchedOutFileNotForgottenWhileWatched(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	pattern := filepath.Join(dir, "*.log")
	a, w := filepath.Join(dir, "a.log"), filepath.Join(dir, "w.log")
	if err := os.WriteFile(a, []byte(numbered("a", 2)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w, []byte(numbered("w", 3)), 0o600); err != nil {
		t.Fatal(err)
	}
	ig, stop := runGlobWith(t, pattern, data, 2*time.Second, func(c *GlobConfig) {
		c.MaxOpenFiles = 1
		c.CloseInactive = 10 * time.Second
		c.ForgetAfter = 400 * time.Millisecond
		c.Stream.RotateWait = 4 * time.Second
	}, nil)
	defer stop()
	if got := ig.popAll(time.Second); got != 5 {
		t.Fatalf("delivered %d lines, want 5", got)
	}
	var s *gstream
	ig.waitFor(t, "w.log's stream open, committed", func() bool {
		s = ig.g.byPath[w]
		return s != nil && s.st == stOpen && s.src.CommitOK() && s.sp.Pending() == 0
	})
	fd, err := os.OpenFile(w, os.O_WRONLY|os.O_APPEND, 0) // the application's descriptor
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	moved := w + ".1"
	if err := os.Rename(w, moved); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the scan saw w.log gone", func() bool { return s.gone })
	appendTo(t, a, "a-late\n") // a.log wants the only slot
	got := map[string]int{}
	// Stopped at w.log, it is queued beside its path (readBeside) and
	// gets the slot back once a.log is caught up.
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); {
		for k, v := range ig.popLines(20 * time.Millisecond) {
			got[k] += v
		}
		ig.g.mu.Lock()
		ok := s.st == stOpen && s.path == moved && s.src.State() == CaughtUp
		ig.g.mu.Unlock()
		if ok {
			break
		}
	}
	appendTo(t, a, "a-later\n") // a.log wants the slot again: now it is watched
	ig.waitFor(t, "w.log.1's stream watched", func() bool { return s.watching })
	for k, v := range ig.popLines(1500 * time.Millisecond) { // past forgetAfter, within rotateWait
		got[k] += v
	}
	if _, err := fd.WriteString("w-more\n"); err != nil {
		t.Fatal(err)
	}
	for k, v := range ig.popLines(3 * time.Second) {
		got[k] += v
	}
	tails, _, detail := ig.lost()
	ig.g.mu.Lock()
	tracked := ig.g.byKey[s.key] == s
	ig.g.mu.Unlock()
	if got["w-more"] != 1 || got["a-late"] != 1 || got["a-later"] != 1 || got["w-0"] != 0 || tails != 0 || !tracked {
		t.Errorf("lines %v, lostTails %d (%q), w.log.1's stream still tracked %v; want a-late, a-later and w-more once, nothing of w read again, nothing lost, the stream tracked",
			got, tails, detail, tracked)
	}
}
