// Review 15b, finding B: found and fixed in the fifteenth session
// (preempt leaves a gone stream open until it has been quiet for
// rotateWaitMillis; housekeeping then closes it and lets its pointer go).

// Review 15b, finding B (c879b1a's rotateWait condition is in caughtUpOut
// only; the "out of the glob, at its beside path, CAUGHT_UP" branch of
// closed() still lets go at once).

package file

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Scenario: rev15a_b's, with the file renamed BESIDE its path (w.log →
// w.log.1, out of *.log) instead of to another directory. maxOpenFiles 1,
// rotateWaitMillis 3 s. w.log is read and committed; the application holds
// its descriptor; logrotate renames it to w.log.1. The scan sees w.log
// gone; a.log gets a line and takes the only slot (preempt): closed()
// finds w.log.1 beside the path (readBeside, 57e01b4) and queues the
// stream there. It gets the slot back once a.log is caught up, opens
// w.log.1, is caught up. a.log gets another line: preempt stops the gone
// stream again — within rotateWait of the rename — and closed() takes the
// branch "gone, exists at s.path, not matched, CAUGHT_UP && !closing":
// forgetOrHold + retired, with no rotateWait condition (c879b1a added it
// to caughtUpOut only). The application then writes one more line into
// w.log.1 through its descriptor, 300 ms later: nobody reads it, nobody
// counts it — running, and after the restart (the pointer is Reset,
// nothing pending).
// DESIGN §10 "A file renamed out of the glob is read to its end
// (rotateWaitMillis after its last growth), then closed"; §4/§7 "Nothing
// green over a loss"; §2 no silent loss. The same rule c879b1a states in
// caughtUpOut: "a stream preempted for a slot sooner keeps its pointer,
// since its writer may still append".
// Observed: 5 runs of 5 failed at 3a17f1e (line written ~325 ms after
// the rename: not delivered, lostTails 0, running and after the restart);
// also fails 1 of 1 at 161680f (before c879b1a: same branch). At a9dcbba
// 1 of 1 passes: closed() had no readBeside route, the stream stayed closed
// at w.log with its pointer and the restart read or counted the line
// (the route in is 57e01b4's readBeside, the exit is the unconditioned
// beside branch).
func TestRev15BBPreemptedBesideStreamForgetsFileStillWrittenWithinRotateWait(t *testing.T) {
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
		c.CloseInactive = 5 * time.Second
		c.Stream.RotateWait = 3 * time.Second
	}, nil)
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
	renamed := time.Now()
	if err := os.Rename(w, moved); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the scan saw w.log gone", func() bool { return s.gone })
	appendTo(t, a, "a-late\n") // a.log wants the slot
	got := map[string]int{}
	beside := false
	for end := time.Now().Add(2 * time.Second); !beside && time.Now().Before(end); {
		for k, v := range ig.popLines(20 * time.Millisecond) {
			got[k] += v
		}
		ig.g.mu.Lock()
		beside = s.st == stOpen && s.path == moved && s.src.State() == CaughtUp
		ig.g.mu.Unlock()
	}
	t.Logf("the gone stream open again beside its path: %v", beside)
	if beside {
		ig.g.mu.Lock()
		opened := s.openedAt
		ig.g.mu.Unlock()
		appendTo(t, a, "a-later\n") // a.log wants the slot again
		// Stopped for a.log's turn: closed, or (since review 16a A)
		// queued again beside its path, or open there again.
		ig.waitFor(t, "the beside stream stopped", func() bool { return s.st != stOpen || !s.openedAt.Equal(opened) })
	}
	time.Sleep(300 * time.Millisecond)
	since := time.Since(renamed)
	if _, err := fd.WriteString("w-after-rename\n"); err != nil {
		t.Fatal(err)
	}
	for k, v := range ig.popLines(6 * time.Second) {
		got[k] += v
	}
	tails, bytes, detail := ig.lost()
	t.Logf("running: lines %v; lostTails %d lostBytes %d (%q)", got, tails, bytes, detail)
	stop()
	ig2, _, stop2 := runGlobOn(t, pattern, data)
	lines2 := ig2.popLines(2 * time.Second)
	tails2, bytes2, detail2 := ig2.lost()
	stop2()
	if since >= 3*time.Second {
		t.Skipf("the line was written %v after the rename, not within rotateWait", since)
	}
	if got["w-after-rename"]+lines2["w-after-rename"] == 0 && tails+tails2 == 0 {
		t.Errorf("a line written into w.log.1 (renamed beside, out of the glob) %v after its rename, within rotateWaitMillis (3 s): never delivered (running: %v; restart: %v) and never counted (lostTails %d+%d, lostBytes %d+%d, %q %q)",
			since, got, lines2, tails, tails2, bytes, bytes2, detail, detail2)
	}
}
