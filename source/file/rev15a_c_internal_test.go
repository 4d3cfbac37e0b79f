// Review 15a, finding C (fix 3, 57e01b4: closed() reads beside its path a
// file renamed out of the glob as its stream closed — then a clean stop
// forgets its pointer).

package file

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Scenario: review 13a B's (a.log's stream closing as inactive, its drain
// waiting for acknowledgements; logrotate renames a.log → a.log.1 beside
// it, the scan sees it gone), then the acknowledgements come and tailfeed
// is stopped at once (clean stop, or kill -9); the application writes one
// more line into a.log.1 while tailfeed is down. The restart must read it
// (its pointer names a.log.1's key, beside the path) or count it.
// With fix 3 the closed stream is started again at once beside its path
// (s.path = a.log.1) and is OPEN there, caught up, when the stop comes.
// Close closes it (g.closing set) and closed() takes the branch "gone,
// exists at s.path, not matched, CAUGHT_UP": forgetOrHold + retired — no
// g.closing check there (caughtUpOut has one), so at a STOP the pointer is
// Reset to an empty record (new epoch, offset 0; seen in the log line
// "after the stop"). The restart knows nothing of a.log.1: the line the
// application wrote into it while tailfeed was stopped is never delivered
// and never counted. caughtUpOut's own comment states the rule broken: "A
// stream closed by a stop keeps its pointer: the next start reads on
// beside its path what the file got while tailfeed was stopped"; DESIGN
// §10 "A file renamed out of the glob is read to its end", §4/§7 "Nothing
// green over a loss", §2.
// Observed: 9 runs of 9 failed at 57e01b4 (lostTails 0, line not
// delivered); at a9dcbba (before the diff) 2 runs of 2 pass (the stream
// stays closed, its pointer kept; the restart reads the line). With kill -9
// instead of the clean stop the test passes at both (no Close, the pointer
// is not reset): the clean stop is now worse than kill -9. (The same branch
// is reached without the diff when a scan, not closed(), started the
// stream beside its path; the diff makes the 13a B route reach it.)
func rev15aStopAfterRenameWhileStopping(t *testing.T, kill bool) {
	dir, data, path := aLogIn(t, numbered("line", 5))
	pattern := filepath.Join(dir, "*.log")
	ig, killF, stop := runGlobKill(t, pattern, data, 5*time.Second, func(c *GlobConfig) {
		c.CloseInactive = 50 * time.Millisecond
		c.Stream.RotateWait = 2 * time.Second
	}, func(g *Glob) { g.drainBound = 10 * time.Second })
	n := ig.take(t)
	s := ig.stoppingStream(t)
	w, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the scan saw a.log gone while its stream stopped", func() bool { return s.gone })
	ig.q.AddDispatched(n)
	ig.pub.Poke()
	ig.waitFor(t, "the stream closed", func() bool { return s.st != stStopping })
	time.Sleep(20 * time.Millisecond)
	ig.g.mu.Lock()
	t.Logf("before the stop: stream st %v path %s gone %v", s.st, filepath.Base(s.path), s.gone)
	ig.g.mu.Unlock()
	if kill {
		killF()
	} else {
		stop()
	}
	if _, err := w.WriteString("written-while-stopped\n"); err != nil {
		t.Fatal(err)
	}
	ig.g.mu.Lock()
	t.Logf("after the stop: stream st %v path %s gone %v retired %v epoch %x offset %d", s.st, filepath.Base(s.path), s.gone, ig.g.retired[s.key], s.epoch, s.offset)
	ig.g.mu.Unlock()
	ig2, _, stop2 := runGlobOn(t, pattern, data)
	lines := ig2.popLines(3 * time.Second)
	tails, bytes, detail := ig2.lost()
	stop2()
	if lines["written-while-stopped"] != 1 && tails == 0 {
		t.Errorf("kill %v: a line written into a.log.1 while tailfeed was stopped: delivered %d times at the restart (%v), lostTails %d lostBytes %d (%q)",
			kill, lines["written-while-stopped"], lines, tails, bytes, detail)
	}
	for l, c := range lines {
		if l != "written-while-stopped" {
			t.Errorf("kill %v: restart re-delivered %q ×%d (every line was acknowledged and committed before the stop)", kill, l, c)
		}
	}
}

func TestRev15ACStopAfterRenameWhileStopping(t *testing.T) {
	t.Parallel()
	rev15aStopAfterRenameWhileStopping(t, false)
}
