// Review 15a, finding D (pre-existing route of finding C: a scan, not
// closed(), starts the stream beside its path; then a clean stop).

package file

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Scenario: a.log read, committed, its stream closed as inactive. logrotate
// renames it to a.log.1 (beside, out of the glob); the scan reads it there
// (readBeside: "the application writes on to its descriptor until it
// reopens its log"). tailfeed is stopped cleanly while that stream is open
// beside its path, caught up; the application writes one more line into
// a.log.1 while tailfeed is stopped. The restart must read it or count it.
// Close closes the open stream and closed() takes "gone, exists at s.path,
// not matched, CAUGHT_UP" → forgetOrHold + retired, with no g.closing
// check: the pointer is Reset at the stop (offset 0, new epoch) and the
// restart knows nothing of a.log.1; the line is never delivered, never
// counted. Same rule as finding C (caughtUpOut's comment: "A stream closed
// by a stop keeps its pointer: the next start reads on beside its path
// what the file got while tailfeed was stopped"; DESIGN §10, §4/§7, §2).
// NOT from this diff: it fails at a9dcbba too (1 of 1); reported because
// it is the branch that makes finding C, and the diff's g.closing flag is
// the natural guard for it.
// Observed at 57e01b4: 5 runs of 5 failed.
func TestRev15ADScanReadBesideThenCleanStopForgetsPointer(t *testing.T) {
	t.Parallel()
	dir, data, path := aLogIn(t, numbered("line", 5))
	pattern := filepath.Join(dir, "*.log")
	ig, stop := runGlobWith(t, pattern, data, 2*time.Second, func(c *GlobConfig) {
		c.CloseInactive = 50 * time.Millisecond
		c.Stream.RotateWait = 3 * time.Second
	}, nil)
	if got := ig.popAll(time.Second); got != 5 {
		t.Fatalf("delivered %d lines, want 5", got)
	}
	var s *gstream
	ig.waitFor(t, "a.log's stream closed, committed", func() bool {
		s = ig.g.byPath[path]
		return s != nil && s.st == stClosed && s.owe == nil
	})
	w, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the stream open beside its path", func() bool { return s.gone && s.st == stOpen && s.path == path+".1" })
	time.Sleep(100 * time.Millisecond)
	stop()
	ig.g.mu.Lock()
	t.Logf("after the stop: stream st %v path %s retired %v offset %d", s.st, filepath.Base(s.path), ig.g.retired[s.key], s.offset)
	ig.g.mu.Unlock()
	if _, err := w.WriteString("written-while-stopped\n"); err != nil {
		t.Fatal(err)
	}
	ig2, _, stop2 := runGlobOn(t, pattern, data)
	lines := ig2.popLines(3 * time.Second)
	tails, bytes, detail := ig2.lost()
	stop2()
	if lines["written-while-stopped"] != 1 && tails == 0 {
		t.Errorf("a line written into a.log.1 while tailfeed was stopped: delivered %d times at the restart (%v), lostTails %d lostBytes %d (%q)",
			lines["written-while-stopped"], lines, tails, bytes, detail)
	}
}
