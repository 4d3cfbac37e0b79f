package file

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Review of a8babb1 (a queued stream's noted tail counted at the scan that
// finds its file gone from the glob).

// queuedOwing brings a.log's stream to stQueued (closed owing its commit,
// its drain cut short at 300 ms) with line written to a.log while it
// closed, unread: its noted tail. A first turn committed before it names
// a.log in the pointer (key, fingerprint): the stream started again looks
// for that file (resumeRotated). It returns the stream and the lines
// popped but not acknowledged.
func (ig *internalGlob) queuedOwing(t *testing.T, line string) (*gstream, uint64) {
	t.Helper()
	path := filepath.Join(filepath.Dir(ig.g.cfg.Stream.Path), "a.log")
	// A first turn read, acknowledged and committed: the pointer names
	// a.log by its key and fingerprint.
	s := ig.firstTurnCommitted(t)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		fmt.Fprintf(f, "more-%d\n", i)
	}
	f.Close()
	// Its second turn: popped, not acknowledged, so that it closes owing.
	n := ig.take(t)
	s = ig.stoppingStream(t)
	appendTo(t, path, line)
	ig.waitFor(t, "the stream closed owing its commit, queued again", func() bool {
		return s.st == stQueued && s.owe != nil
	})
	return s, n
}

// A stream queued owing its commit, with a noted tail, whose file is
// deleted: the scan counts it (lostTails 1, lostBytes 22) but leaves it in
// the queue. Once the owed commit is made, schedule starts it anyway; its
// Source opens the pointer, finds neither the path's file nor one with the
// pointer's key beside it (resumeRotated) and counts the same tail lost
// once more (loseTail: lostTails + 1). One file, one tail: DESIGN §4
// counts a lost tail once ("`lostTails` 1, once").
func TestGlobQueuedStreamDeletedTailCountedOnce(t *testing.T) {
	t.Parallel()
	ig := startInternalGlob(t, 50*time.Millisecond, 300*time.Millisecond)
	const line = "written-while-closing\n"
	s, n := ig.queuedOwing(t, line)
	path := filepath.Join(filepath.Dir(ig.g.cfg.Stream.Path), "a.log")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the scan seeing a.log gone", func() bool { return s.gone })
	tails0, bytes0, _ := ig.lost()
	ig.q.AddDispatched(n)
	ig.pub.Poke()
	got := ig.popAll(3 * time.Second)
	ig.g.mu.Lock()
	st, started := s.st, s.src != nil || s.st != stQueued
	ig.g.mu.Unlock()
	tails, bytes, detail := ig.lost()
	if tails != 1 {
		t.Errorf("a.log deleted while its stream waited (queued) with %q unread: at the scan lostTails %d lostBytes %d; after the owed commit (stream state %d, started %v, %d lines delivered) lostTails %d, lostBytes %d, detail %q; want lostTails 1 (one tail, counted once)",
			line, tails0, bytes0, st, started, got, tails, bytes, detail)
	}
}

// The same queued stream whose file is renamed out of the glob beside its
// path (logrotate create: a.log -> a.log.1, which *.log does not match):
// the scan counts its tail lost, yet the stream, still queued, is started
// once its owed commit is made and its Source finds the pointer's file by
// key beside the path (resumeRotated, findByKey) and delivers the line.
// A line delivered and counted lost: the feed reports lossy (exit 1) with
// nothing lost (DESIGN §4 "Nothing green over a loss" counts losses, not
// lines that were read).
func TestGlobQueuedStreamRenamedOutThenReadIsNotALoss(t *testing.T) {
	t.Parallel()
	ig := startInternalGlob(t, 50*time.Millisecond, 300*time.Millisecond)
	const line = "written-while-closing\n"
	s, n := ig.queuedOwing(t, line)
	path := filepath.Join(filepath.Dir(ig.g.cfg.Stream.Path), "a.log")
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the scan seeing a.log gone", func() bool { return s.gone })
	ig.q.AddDispatched(n)
	ig.pub.Poke()
	got := ig.popAll(3 * time.Second)
	tails, bytes, detail := ig.lost()
	if got >= 1 && tails != 0 {
		t.Errorf("a.log renamed out to a.log.1 while its stream waited (queued) with %q unread, then read from a.log.1 (%d lines delivered): lostTails %d, lostBytes %d, detail %q; want 0 (nothing lost)",
			line, got, tails, bytes, detail)
	}
	if got == 0 && tails != 1 {
		t.Errorf("a.log.1's line neither delivered nor counted once: lostTails %d", tails)
	}
}

// A stream queued owing its commit on its first turn (no commit made yet:
// the pointer does not name a.log), a line written to a.log while it
// closed (its noted tail), its lines acknowledged, then a.log deleted and
// — before any scan looks — the manager's housekeeping makes the owed
// commit and would start the stream again (the order the manager's loop
// takes when its housekeeping tick comes before the rescan; done here under
// the glob's mutex, as the manager does, to fix that order). Started then,
// its Source found the path missing and a pointer naming no file
// (commitOwed binds no file that is gone) and counted nothing, nor did the
// scan (the stream open) or its close: a line read by nobody and never
// counted (DESIGN §10, a file that disappears with an unread tail counts in
// lostTails; §4 "Nothing green over a loss"). The stream waits for the
// scan instead, which finds the file gone and counts its tail.
func TestGlobQueuedStreamDeletedBeforeAnyScanThenStartedIsCounted(t *testing.T) {
	t.Parallel()
	ig := startInternalGlob(t, 50*time.Millisecond, 300*time.Millisecond)
	path := filepath.Join(filepath.Dir(ig.g.cfg.Stream.Path), "a.log")
	const line = "written-while-closing\n"
	s := ig.ackedWhileQueued(t, path, line) // returns holding ig.g.mu
	if err := os.Remove(path); err != nil {
		ig.g.mu.Unlock()
		t.Fatal(err)
	}
	// housekeep's steps, before the scan sees a.log gone.
	ig.g.settleOwed(s)
	ig.g.schedule(ig.g.ctx)
	st, gone := s.st, s.gone
	ig.g.mu.Unlock()
	if st != stQueued || gone {
		t.Fatalf("stream state %d gone %v after the owed commit: want queued until a scan sees where its file went", st, gone)
	}
	ig.waitFor(t, "the scan seeing a.log gone", func() bool { return s.gone })
	got := ig.popAll(2 * time.Second)
	if tails, bytes, detail := ig.lost(); got == 0 && tails == 0 {
		t.Errorf("a.log deleted with %q unread while its stream waited (queued), started again before a scan saw it gone: delivered %d lines, lostTails %d, lostBytes %d, detail %q; want it counted lost",
			line, got, tails, bytes, detail)
	}
}

// The same queued stream whose file is renamed out of the glob (a scan
// sees it out: counted lost) and back in under another matched name
// (c.log) while it waits: the new stream reads c.log from its start, the
// line with it (DESIGN §10: a file that comes back is read from its start),
// and the old stream, still queued, is started anyway and reads the line
// from its pointer (findByKey finds c.log beside a.log). loseTailLocked
// drops the count only when the key is already back at the scan that
// finds it out; here it comes back after that scan: the line is delivered
// (twice) and counted lost — lossy, exit 1, with nothing lost.
//
// Since the thirteenth session a stream owing its commit whose file is
// beside its path is not retired at the scan that sees it out (it is
// neither closed nor read to its end: DESIGN §10 retires a key "renamed out
// and closed"); back in as c.log, it follows its file and reads on from its
// pointer — the line once, nothing twice.
func TestGlobQueuedStreamRenamedOutAndBackInIsNotALoss(t *testing.T) {
	t.Parallel()
	ig := startInternalGlob(t, 50*time.Millisecond, 300*time.Millisecond)
	const line = "written-while-closing\n"
	s, n := ig.queuedOwing(t, line)
	dir := filepath.Dir(ig.g.cfg.Stream.Path)
	out := filepath.Join(dir, "a.log.moving")
	if err := os.Rename(filepath.Join(dir, "a.log"), out); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the scan seeing a.log gone", func() bool { return s.gone })
	if err := os.Rename(out, filepath.Join(dir, "c.log")); err != nil {
		t.Fatal(err)
	}
	c := filepath.Join(dir, "c.log")
	ig.waitFor(t, "c.log tracked", func() bool { return ig.g.byPath[c] != nil })
	ig.q.AddDispatched(n)
	ig.pub.Poke()
	got := ig.popAll(3 * time.Second)
	// The old stream following c.log: the line; a new stream: c.log from
	// its start, 5 + 5 + the line.
	if got != 1 && got < 11 {
		t.Fatalf("c.log: %d lines delivered, want the line (followed) or at least 11 (read from its start)", got)
	}
	if tails, bytes, detail := ig.lost(); tails != 0 {
		t.Errorf("a.log renamed out and back in as c.log while its stream waited (queued) with %q unread, %d lines delivered (c.log from its start): lostTails %d, lostBytes %d, detail %q; want 0 (nothing lost)",
			line, got, tails, bytes, detail)
	}
}

// ackedWhileQueued: a.log's stream (its lines popped, not acknowledged)
// closes owing its commit after line is written to path, and is queued
// again with the line as its noted tail; its lines are then acknowledged
// and handed to it. It returns the stream holding ig.g.mu, so that the
// caller's next step comes before housekeeping's.
func (ig *internalGlob) ackedWhileQueued(t *testing.T, path, line string) *gstream {
	t.Helper()
	n := ig.take(t) // not acknowledged: the drain is cut short, it owes
	s := ig.stoppingStream(t)
	appendTo(t, path, line)
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
	return s
}
