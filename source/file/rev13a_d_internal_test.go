// Review 13a finding (thirteenth session), fixed in the same session.

package file

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Review of 78ea949 (race 3's neighbour: a queued, owing stream). A glob
// file's stream closes as inactive before its first commit (its 5 lines
// popped, not acknowledged: the drain gives up, it owes its commit) while a
// line is appended (its source notes the line as a tail it did not read);
// the file grew, so closed() queues it again (owing: it waits). Then
// logrotate renames the file out of the glob beside its path (a.log →
// a.log.1). The scan sees the queued stream gone and, its pointer naming no
// file yet (stQueued, tail, !pointerNames), counts the tail lost at once
// (loseTailLocked). When the acknowledgements come, commitOwed binds the
// pointer to the file where it went (findBeside), the stream starts, finds
// a.log.1 by key and delivers that very line: lostTails 1, lossless false,
// every line delivered. The diff makes closed() and settleOwed leave such a
// tail to be read beside (commitOwed "binds a pointer that names no file
// yet where the file went"), but not this scan branch. (Also fails on
// 78ea949^.)
//
// DESIGN §10: "A file renamed out of the glob is read to its end"; §4/§10
// lostTails counts a tail nobody reads; the promise: never report a loss
// that did not happen.
func TestRev13AQueuedOwingRenamedOutTailIsNotCountedLost(t *testing.T) {
	t.Parallel()
	dir, data, path := aLogIn(t, numbered("line", 5))
	pattern := filepath.Join(dir, "*.log")
	ig, stop := runGlobWith(t, pattern, data, 5*time.Second, func(c *GlobConfig) {
		c.CloseInactive = 50 * time.Millisecond
	}, func(g *Glob) { g.drainBound = 100 * time.Millisecond })
	defer stop()
	n := ig.take(t) // not acknowledged: the stopping stream's drain waits, then gives up
	s := ig.stoppingStream(t)
	appendTo(t, path, "written-as-it-closed\n")
	ig.waitFor(t, "the stream closed owing its commit, queued again (its file grew)", func() bool {
		return s.st == stQueued && s.owe != nil
	})
	ig.g.mu.Lock()
	tail := s.tailSize > s.tailEnd
	ig.g.mu.Unlock()
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the scan saw a.log gone from the glob", func() bool { return s.gone })
	ig.q.AddDispatched(n)
	ig.pub.Poke()
	got := ig.popAll(3 * time.Second)
	tails, bytes, detail := ig.lost()
	if got != 1 || tails != 0 || bytes != 0 {
		t.Errorf("tail noted at close: %v; %d lines delivered (want 1: the appended line, read beside in a.log.1), lostTails %d lostBytes %d (%q): want nothing lost",
			tail, got, tails, bytes, detail)
	}
}
