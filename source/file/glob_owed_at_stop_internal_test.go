package file

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// A stream closes before its first commit, its lines unacknowledged (the
// drain cut short: its pointer names no file yet), with a line written
// while it closed; a.log is renamed within the glob (to b.log) and the
// daemon stopped before any scan followed it. The lines are acknowledged
// during the shutdown's drain: the commit Close makes must still name the
// file (found where it went), so that the restart reads only the unread
// line — not b.log again from its start (duplicates after a clean stop;
// DESIGN §2 at-least-once allows duplicates only after a crash).
func TestGlobOwedCommitAtStopFollowsARenamedFile(t *testing.T) {
	t.Parallel()
	dir, data, path := aLogIn(t, numbered("line", 5))
	pattern := filepath.Join(dir, "*.log")
	ig, stopRun, stop := runGlobOn(t, pattern, data)
	n := ig.take(t) // not acknowledged: the drain is cut short, it owes
	s := ig.stoppingStream(t)
	const line = "written-while-closing\n"
	appendTo(t, path, line)
	ig.waitFor(t, "the stream closed owing its commit, queued again", func() bool {
		return s.st == stQueued && s.owe != nil
	})
	if rec, _, err := ig.pointer(); err != nil || rec.FileKey != 0 {
		t.Fatalf("pointer %+v (%v): want one naming no file yet", rec, err)
	}
	if err := os.Rename(path, filepath.Join(dir, "b.log")); err != nil {
		t.Fatal(err)
	}
	stopRun() // no scan after the rename
	ig.g.mu.Lock()
	o := s.owe
	ig.g.mu.Unlock()
	ig.q.AddDispatched(n)
	ig.pub.Poke()
	for end := time.Now().Add(10 * time.Second); o.sp.Pending() > 0; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("acknowledgements not handed to the closed stream after 10 s")
		}
	}
	stop()
	rec, _, err := ig.pointer()
	t.Logf("pointer after the stop: %+v (%v)", rec, err)
	ig2, _, _ := runGlobOn(t, pattern, data)
	got := ig2.popAll(3 * time.Second)
	if got != 1 {
		t.Errorf("restart after a clean stop: %d lines delivered, want the 1 unread line (b.log is a.log renamed; its 5 lines were acknowledged before the stop)", got)
	}
}

// A stream waits (queued, its pointer naming a.log) with a line written
// while it closed; as it starts again, a.log is moved out of the glob to a
// directory it does not match (between the source's stat and its open),
// and the scan sees it gone while the stream is still open. Its source
// found nothing and, the glob not having seen the file gone when it
// started, counted nothing (NotFound); the stream must then be started
// again to look for it beside its path with the glob's verdict, or count
// it: the line is read by nobody, so it is counted (DESIGN §10: a file that
// disappears with an unread tail counts in lostTails).
func TestGlobFileMovedOutAsItsStreamOpensIsCounted(t *testing.T) {
	t.Parallel()
	dir, data, path := aLogIn(t, numbered("line", 5))
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o700); err != nil {
		t.Fatal(err)
	}
	var armed atomic.Bool
	var ig *internalGlob
	ig, _ = runGlobWith(t, filepath.Join(dir, "*.log"), data, 5*time.Second, func(c *GlobConfig) {
		c.CloseInactive = 50 * time.Millisecond
		c.Stream.OpenHook = func() {
			if !armed.CompareAndSwap(true, false) {
				return
			}
			os.Rename(path, filepath.Join(out, "a.log"))
			// Until the scan has seen it gone (the stream open).
			for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
				ig.g.mu.Lock()
				gone := false
				for _, s := range ig.g.byKey {
					gone = gone || s.gone
				}
				ig.g.mu.Unlock()
				if gone {
					return
				}
			}
		}
	}, func(g *Glob) { g.drainBound = 300 * time.Millisecond })
	ig.firstTurnCommitted(t)
	appendTo(t, path, numbered("more", 5))
	const line = "written-while-closing\n"
	ig.ackedWhileQueued(t, path, line) // returns holding ig.g.mu
	armed.Store(true)
	ig.g.mu.Unlock()
	got := ig.popAll(3 * time.Second)
	tails, bytes, detail := ig.lost()
	t.Logf("delivered %d; lostTails %d lostBytes %d detail %q", got, tails, bytes, detail)
	if got == 0 && tails != 1 {
		t.Errorf("a.log moved out of the glob (to out/) with %q unread as its stream started: delivered %d, lostTails %d; want it counted once", line, got, tails)
	}
}
