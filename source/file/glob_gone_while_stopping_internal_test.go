package file

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A glob file read to its end, its stream closing as inactive (its drain
// waiting for the acknowledgements), is deleted; the scan sees it gone while
// the stream is still stopping, and the lines are acknowledged before the
// drain gives up, so Close commits every line. Nothing of the file is
// pending: the stream's pointer must record that (the empty record: the
// source's Close forgets a deleted file, forgetStep), or the next start
// counts the file "gone while stopped" in lostTails — lossless false over a
// file read whole. The window beside the one
// TestGlobInodeReusedBetweenWalkAndLookIsForgotten covers (both suspected
// for the CI failure of TestAud7EDeletedClosedFileCountedLost; this one
// held).
func TestGlobFileDeletedWhileItsStreamStopsIsForgotten(t *testing.T) {
	t.Parallel()
	dir, data, path := aLogIn(t, numbered("line", 5))
	pattern := filepath.Join(dir, "*.log")
	ig, stop := runGlobWith(t, pattern, data, 5*time.Second, func(c *GlobConfig) {
		c.CloseInactive = 50 * time.Millisecond
	}, func(g *Glob) { g.drainBound = 10 * time.Second })
	n := ig.take(t) // not acknowledged: the stopping stream's drain waits
	s := ig.stoppingStream(t)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the scan saw a.log gone while its stream stopped", func() bool { return s.gone })
	ig.g.mu.Lock()
	st := s.st
	ig.g.mu.Unlock()
	if st != stStopping {
		t.Fatalf("stream state %v when the scan saw a.log gone: want stopping (the window under test)", st)
	}
	ig.q.AddDispatched(n)
	ig.pub.Poke()
	ig.waitFor(t, "the stream closed", func() bool { return s.st == stClosed && s.owe == nil })
	stop()
	rec, _, err := ig.pointer()
	t.Logf("pointer after the stop: %+v (%v)", rec, err)
	ig2, _, _ := runGlobOn(t, pattern, data)
	ig2.popAll(time.Second)
	tails, bytes, detail := ig2.lost()
	if tails != 0 || bytes != 0 {
		t.Errorf("restart: lostTails %d lostBytes %d (%q); want none: a.log was read to its end and every line committed before it was deleted", tails, bytes, detail)
	}
}

// A glob file's stream closing as inactive (its drain waiting for the
// acknowledgements); a line is appended and the file renamed out of the
// glob beside its path (logrotate `create`: a.log → a.log.1) before the
// stream's Close, and the scan sees it gone while the stream stops. Close
// notes the line as a tail its stream never read; the file is beside its
// path, so its stream must read it there (DESIGN §10: a file renamed out
// of the glob is read to its end), not count it lost (audit 7 B: "renamed
// out of the glob or deleted while its stream was closing: its last 45
// bytes … were never read", every line delivered, lossless false).
func TestGlobFileRenamedOutWhileItsStreamStopsIsReadBeside(t *testing.T) {
	t.Parallel()
	// owing: the drain gives up first, the stream closes owing its commit
	// and the acknowledgements come after (settleOwed reads beside);
	// deleted: then a.log.1 is deleted before they come — the tail is read
	// by nobody and counted once (settleOwed).
	for _, c := range []struct{ owing, deleted bool }{{false, false}, {true, false}, {true, true}} {
		owing := c.owing
		t.Run(fmt.Sprintf("owing=%v,deleted=%v", c.owing, c.deleted), func(t *testing.T) {
			dir, data, path := aLogIn(t, numbered("line", 5))
			pattern := filepath.Join(dir, "*.log")
			drain := 10 * time.Second
			if owing {
				drain = 100 * time.Millisecond
			}
			ig, _ := runGlobWith(t, pattern, data, 5*time.Second, func(c *GlobConfig) {
				c.CloseInactive = 50 * time.Millisecond
			}, func(g *Glob) { g.drainBound = drain })
			n := ig.take(t) // not acknowledged: the stopping stream's drain waits
			s := ig.stoppingStream(t)
			appendTo(t, path, "written-as-it-closed\n")
			if err := os.Rename(path, path+".1"); err != nil {
				t.Fatal(err)
			}
			ig.waitFor(t, "the scan saw a.log gone while its stream stopped", func() bool { return s.gone })
			if owing {
				ig.waitFor(t, "the stream closed owing its commit", func() bool { return s.st != stStopping && s.owe != nil })
			}
			if c.deleted {
				if err := os.Remove(path + ".1"); err != nil {
					t.Fatal(err)
				}
			}
			ig.q.AddDispatched(n)
			ig.pub.Poke()
			got := ig.popAll(2 * time.Second)
			tails, bytes, detail := ig.lost()
			if c.deleted {
				if got != 0 || tails != 1 || bytes != 21 {
					t.Errorf("a.log.1 deleted before the owed commit: %d lines delivered, lostTails %d lostBytes %d (%q); want its unread line counted once (1, 21 bytes)", got, tails, bytes, detail)
				}
				return
			}
			if got != 1 || tails != 0 || bytes != 0 {
				t.Errorf("after the close: %d lines delivered, lostTails %d lostBytes %d (%q); want the appended line read beside its path (a.log.1), nothing lost", got, tails, bytes, detail)
			}
		})
	}
}
