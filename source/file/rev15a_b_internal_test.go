// Review 15a, finding B (fix 1, b455982: caughtUpOut; with fix 3's
// housekeep): found and fixed in the fifteenth session (preempt leaves a gone
// stream open until quiet for rotateWait; caughtUpOut wants it quiet).

package file

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Scenario: maxOpenFiles 1, rotateWaitMillis 3 s. w.log is read and
// committed; logrotate (olddir) moves it out of the glob to another
// directory while the application still holds its descriptor. The scan sees
// w.log gone; its stream, caught up, stays open to read the file where it
// went until rotateWaitMillis after its last growth. a.log (closed as
// inactive) gets a line and queues for the only slot: preempt stops the
// gone stream at once (caught up counts as done), long before its
// rotateWait. closed(): not beside its path, so caughtUpOut forgets the
// pointer (Reset, nothing pending). The application then writes one more
// line through its descriptor (within rotateWait of the rename): read by
// nobody, counted by nobody — while running, and after a restart too
// (before b455982 the pointer was kept and the restart counted the file
// gone with its tail).
// DESIGN §10 "A file renamed out of the glob is read to its end
// (rotateWaitMillis after its last growth), then closed"; §4/§7 "Nothing
// green over a loss"; §2 never lose a line silently.
// Observed: 7 runs of 7 failed at 57e01b4 (the line neither delivered nor
// counted, running or after the restart); at a9dcbba (before the diff) the
// same test passes (1 of 1: the restart counts the file gone).
func TestRev15ABPreemptedGoneStreamForgetsFileStillWrittenWithinRotateWait(t *testing.T) {
	t.Parallel()
	dir, other, data := t.TempDir(), t.TempDir(), t.TempDir()
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
		c.CloseInactive = 5 * time.Second
		c.Stream.RotateWait = 3 * time.Second
	}, nil)
	if got := ig.popAll(time.Second); got != 5 {
		t.Fatalf("delivered %d lines, want 5", got)
	}
	// w.log (sorted last) took the slot once a.log was caught up.
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
	moved := filepath.Join(other, "w.log")
	if err := os.Rename(w, moved); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the scan saw w.log gone", func() bool { return s.gone })
	appendTo(t, a, "a-late\n") // a.log wants the slot
	// Fixed, preempt leaves the gone stream open until it has been quiet
	// for rotateWait: the line is written 300 ms after a.log asked for the
	// slot (at 57e01b4 the stream had closed by then).
	time.Sleep(300 * time.Millisecond) // well within rotateWait of the rename
	if _, err := fd.WriteString("w-after-rename\n"); err != nil {
		t.Fatal(err)
	}
	lines := ig.popLines(5 * time.Second)
	tails, bytes, detail := ig.lost()
	t.Logf("running: lines %v; lostTails %d lostBytes %d (%q)", lines, tails, bytes, detail)
	stop()
	ig2, _, stop2 := runGlobOn(t, pattern, data)
	lines2 := ig2.popLines(2 * time.Second)
	tails2, bytes2, detail2 := ig2.lost()
	stop2()
	if lines["w-after-rename"]+lines2["w-after-rename"] == 0 && tails+tails2 == 0 {
		t.Errorf("a line written into w.log (moved out of the glob) %v after its rename, within rotateWaitMillis (3 s): never delivered (running: %v; restart: %v) and never counted (lostTails %d+%d, lostBytes %d+%d, %q %q)",
			300*time.Millisecond, lines, lines2, tails, tails2, bytes, bytes2, detail, detail2)
	}
}
