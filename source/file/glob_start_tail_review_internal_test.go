package file

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Review of d61bde6 (Glob.start counts a queued stream's noted tail when its
// file left its path and its pointer names no file).

// A stream queued owing its commit on its first turn (the pointer names no
// file yet), a line written to a.log while it closed (its noted tail), its
// lines acknowledged, then a.log renamed WITHIN the glob (a.log -> b.log,
// both matched by *.log) and — before any scan looks — the manager's
// housekeeping makes the owed commit and starts the stream again (done here
// under the glob's mutex, as the manager does, to fix that order). s.path is
// stale: start finds nothing at a.log, a pointer naming no file, and counts
// the tail lost (lostTails 1). Yet the file is still in the glob: the scan
// then follows it to b.log (renamed within the glob: the stream follows its
// file) and the line is read from it. A line delivered and counted lost:
// the feed lossy, exit 1, with nothing lost (DESIGN §4 "Nothing green over
// a loss" counts losses; §10 a file renamed within the glob is followed).
func TestGlobQueuedStreamRenamedWithinGlobBeforeScanIsNotALoss(t *testing.T) {
	ig := startInternalGlob(t, 50*time.Millisecond, 300*time.Millisecond)
	dir := filepath.Dir(ig.g.cfg.Stream.Path)
	path := filepath.Join(dir, "a.log")
	n := ig.take(t) // not acknowledged: the drain is cut short, it owes
	s := ig.stoppingStream(t)
	const line = "written-while-closing\n"
	w, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString(line); err != nil {
		t.Fatal(err)
	}
	w.Close()
	ig.waitFor(t, "the stream closed owing its commit, queued again", func() bool {
		return s.st == stQueued && s.owe != nil && s.tailSize > s.tailEnd
	})
	ig.g.mu.Lock()
	o := s.owe
	ig.q.AddDispatched(n)
	ig.pub.Poke()
	for end := time.Now().Add(10 * time.Second); o.sp.Pending() > 0; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(end) {
			ig.g.mu.Unlock()
			t.Fatal("acknowledgements not handed to the closed stream after 10 s")
		}
	}
	if err := os.Rename(path, filepath.Join(dir, "b.log")); err != nil {
		ig.g.mu.Unlock()
		t.Fatal(err)
	}
	// housekeep's steps, before the scan sees a.log renamed to b.log.
	ig.g.settleOwed(s)
	ig.g.schedule(ig.g.ctx)
	st := s.st
	ig.g.mu.Unlock()
	if st != stOpen {
		t.Fatalf("stream state %d after the owed commit: want started (stOpen)", st)
	}
	ig.waitFor(t, "the scan following a.log to b.log", func() bool {
		return s.path == filepath.Join(dir, "b.log")
	})
	got := ig.popAll(3 * time.Second)
	tails, bytes, detail := ig.lost()
	t.Logf("delivered %d lines after the rename; lostTails %d lostBytes %d", got, tails, bytes)
	if got >= 1 && tails != 0 {
		t.Errorf("a.log renamed to b.log (within the glob) while its stream waited (queued) with %q unread, started again before a scan followed it: %d lines delivered from b.log, yet lostTails %d, lostBytes %d, detail %q; want 0 (nothing lost)",
			line, got, tails, bytes, detail)
	}
	if got == 0 && tails != 1 {
		t.Errorf("b.log's line neither delivered nor counted once: lostTails %d", tails)
	}
}
