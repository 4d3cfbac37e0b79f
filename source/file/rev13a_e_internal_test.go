// Review 13a finding (thirteenth session), fixed in the same session.

package file

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Review of 78ea949, settleOwed's new loseTailLocked. As
// TestRev13AQueuedOwingRenamedOutTailIsNotCountedLost, but the stream's
// pointer already names its file (a first turn committed), so the scan
// that sees the queued stream gone counts nothing (its source will find
// the file beside its path by key). The stream had closed owing its
// commit, with a noted tail (a line appended as it closed), and was queued
// again because the file grew. When the acknowledgements come, settleOwed
// commits and — the stream queued, not closed, so no readBeside — the
// line the diff adds (`g.loseTailLocked(s)`) counts the noted tail lost;
// the stream then starts, finds a.log.1 and delivers that very line:
// lostTails 1 for a line delivered.
//
// DESIGN §10: "A file renamed out of the glob is read to its end"; lostTails
// counts only a tail nobody reads; the promise: never report a loss that
// did not happen.
func TestRev13ASettleOwedCountsAQueuedStreamsTailItReads(t *testing.T) {
	t.Parallel()
	dir, data, path := aLogIn(t, numbered("line", 5))
	pattern := filepath.Join(dir, "*.log")
	ig, stop := runGlobWith(t, pattern, data, 5*time.Second, func(c *GlobConfig) {
		c.CloseInactive = 50 * time.Millisecond
	}, func(g *Glob) { g.drainBound = 100 * time.Millisecond })
	defer stop()
	s := ig.firstTurnCommitted(t) // the pointer names a.log
	appendTo(t, path, numbered("more", 5))
	n := ig.take(t) // not acknowledged: the drain gives up, the stream owes its commit
	ig.waitFor(t, "a.log's stream stopping again", func() bool { return s.st == stStopping })
	appendTo(t, path, "written-as-it-closed\n")
	ig.waitFor(t, "the stream closed owing its commit, queued again (its file grew)", func() bool {
		return s.st == stQueued && s.owe != nil
	})
	ig.g.mu.Lock()
	tail, names := s.tailSize > s.tailEnd, ig.g.pointerNames(s)
	ig.g.mu.Unlock()
	if !tail || !names {
		t.Skipf("SKIP: tail noted %v, pointer names the file %v: not the case under test", tail, names)
	}
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the scan saw a.log gone from the glob", func() bool { return s.gone })
	if tails, _, detail := ig.lost(); tails != 0 {
		t.Fatalf("counted at the scan already (%q): not the case under test", detail)
	}
	ig.q.AddDispatched(n)
	ig.pub.Poke()
	got := ig.popAll(3 * time.Second)
	tails, bytes, detail := ig.lost()
	if got != 1 || tails != 0 || bytes != 0 {
		t.Errorf("%d lines delivered (want 1: the appended line, read beside in a.log.1), lostTails %d lostBytes %d (%q): want nothing lost",
			got, tails, bytes, detail)
	}
}
