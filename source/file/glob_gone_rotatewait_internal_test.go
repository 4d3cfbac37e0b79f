package file

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestGlobRenamedOutReadForRotateWaitNotClosedAsInactive: DESIGN §10 "A
// file renamed out of the glob is read to its end (rotateWaitMillis after
// its last growth), then closed". With closeInactiveMillis (50 ms) shorter
// than rotateWaitMillis (3 s), a file renamed out of the glob beside its
// path is read there (its stream, closed as inactive before the rename,
// follows it); its writer, not yet told to reopen its log, appends a line
// 500 ms after the rename. That stream must still be reading: it was
// closed as inactive 50 ms after it started again and the line was neither
// read nor counted; and with the rescan an hour away, that stream polled
// its file, out of the glob, only at the rescan interval: fsnotify events
// name it by a path the glob does not track (found in the fifteenth
// session).
func TestGlobRenamedOutReadForRotateWaitNotClosedAsInactive(t *testing.T) {
	t.Parallel()
	dir, data, path := aLogIn(t, numbered("line", 5))
	pattern := filepath.Join(dir, "*.log")
	ig, stop := runGlobWith(t, pattern, data, 5*time.Second, func(c *GlobConfig) {
		c.CloseInactive = 50 * time.Millisecond
		c.Stream.RotateWait = 3 * time.Second
		c.ScanInterval = time.Hour // fsnotify alone (the first scan is at the start)
	}, nil)
	defer stop()
	if got := ig.popAll(time.Second); got != 5 {
		t.Fatalf("first lines: %d delivered, want 5", got)
	}
	var s *gstream
	ig.waitFor(t, "a.log's stream closed as inactive", func() bool {
		s = ig.g.byPath[path]
		return s != nil && s.st == stClosed && s.owe == nil
	})
	w, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0) // the application's descriptor
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the scan saw a.log leave the glob and its stream read it beside", func() bool {
		return s.gone && s.st == stOpen && s.path == path+".1"
	})
	time.Sleep(500 * time.Millisecond)
	if _, err := w.WriteString("written-after-the-rename\n"); err != nil {
		t.Fatal(err)
	}
	got := ig.popAll(2 * time.Second)
	tails, bytes, detail := ig.lost()
	if got != 1 {
		t.Errorf("a line written into a.log.1 500 ms after the rename (rotateWait 3 s): %d lines delivered, want 1; lostTails %d lostBytes %d (%q)",
			got, tails, bytes, detail)
	}
}
