// Review 16a, finding B: found and fixed in the sixteenth session (preempt
// stops a caught-up stream out of the glob only once every line it
// published is acknowledged).

// Review 16a, finding B (1a4144e: a gone stream is preempted once quiet for
// rotateWaitMillis, with lines unacknowledged; closed()'s "beside its path,
// CAUGHT_UP and quiet" branch retires the key while forgetClosed refuses a
// stream that owes its commit, and nobody forgets the pointer after the
// owed commit is made).

package file

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"tailfeed/pointer"
)

// Scenario: maxOpenFiles 1, rotateWaitMillis 1 s, closeInactive 300 ms.
// w.log is read, committed and closed as inactive. logrotate renames it to
// w.log.1 (out of *.log) and creates a new w.log: the scan finds w.log.1
// beside its path (readBeside) and its stream reads it there. The
// application writes one more line into w.log.1 before it reopens its
// log; the line is delivered, and the subscriber acknowledges it only a
// little later. Meanwhile a.log gets a line and wants the only slot: once
// the gone stream has been quiet for rotateWait, preempt stops it with
// that line unacknowledged (housekeep waits for Pending 0; preempt does
// not) and its drain gives up (drainBound, 200 ms here) before the
// acknowledgement comes. closed() takes the branch "out of the glob beside its path,
// CAUGHT_UP, quiet": forgetOrHold → forgetClosed refuses (it owes its
// commit) and the key is retired. The owed commit is made once the line is
// acknowledged (settleOwed), which forgets the pointer only for a file no
// longer at s.path — w.log.1 is there. So the pointer of a file read to
// its end, every line acknowledged and committed, closed, keeps naming it
// (until forgetAfterMillis). logrotate's next run deletes w.log.1 while
// tailfeed is stopped: the restart counts it as a lost tail.
// DESIGN §4 "A file that was read to its end, committed and then deleted
// is not a lost tail: once such a file is closed with every line
// acknowledged, the pointer records that nothing of it is pending ... a
// restart that cannot find it loses nothing"; §10 "A file renamed out of
// the glob is read to its end (rotateWaitMillis after its last growth),
// then closed"; §4/§7 lostTails only where tailfeed cannot show no line
// was skipped.
// Expected: the restart counts nothing. Observed: lostTails 1 (pointer
// still naming w.log.1 after the owed commit): 5 of 5 at 13fc8d0. Not new
// with 1a4144e: at 3a17f1e (preempt stopped it at once; the same branch
// with "!closing") it fails the same way — the diff's quiet rule moves the
// moment, not the hole (forgetClosed refuses an owing stream, settleOwed
// forgets only a file no longer at s.path).
func TestRev16ABPreemptedQuietBesideStreamOwingKeepsPointerCountedLost(t *testing.T) {
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
		c.CloseInactive = 300 * time.Millisecond
		c.Stream.RotateWait = time.Second
	}, func(g *Glob) { g.drainBound = 200 * time.Millisecond })
	defer stop()
	if got := ig.popAll(time.Second); got != 5 {
		t.Fatalf("delivered %d lines, want 5", got)
	}
	var s *gstream
	ig.waitFor(t, "w.log's stream closed as inactive, committed", func() bool {
		s = ig.g.byPath[w]
		return s != nil && s.st == stClosed && s.owe == nil && s.offset > 0
	})
	moved := w + ".1"
	if err := os.Rename(w, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w, []byte("n-1\n"), 0o600); err != nil { // logrotate's create
		t.Fatal(err)
	}
	got := map[string]int{}
	// Read there (open), or waiting to (queued), or, preempted for the new
	// w.log, watched (since review 16a A's fix; the CI once missed the
	// open moment when only "open" was accepted).
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
		for k, v := range ig.popLines(20 * time.Millisecond) {
			got[k] += v
		}
		ig.g.mu.Lock()
		ok := s.gone && s.path == moved && (s.st == stOpen || s.st == stQueued || s.watching)
		ig.g.mu.Unlock()
		if ok {
			break
		}
	}
	ig.g.mu.Lock()
	beside := s.gone && s.path == moved && (s.st == stOpen || s.st == stQueued || s.watching)
	sst, spath := s.st, s.path
	ig.g.mu.Unlock()
	if !beside {
		t.Fatalf("w.log.1's stream not open, queued or watched beside its path (state %v, path %s; lines %v)", sst, spath, got)
	}
	appendTo(t, moved, "w-more\n") // the application's last line before it reopens
	var held uint64
	// (Until w-more is popped: the new w.log's n-1 may come first — CI
	// under load.)
	for end := time.Now().Add(5 * time.Second); got["w-more"] == 0 && time.Now().Before(end); {
		if b := ig.q.TryPop(); b != nil {
			for i := range b.Len() {
				got[string(b.Lines[i])]++
			}
			held += uint64(b.Len()) // not acknowledged yet
			b.Release()
		} else {
			time.Sleep(2 * time.Millisecond)
		}
	}
	if got["w-more"] == 0 {
		t.Fatalf("w-more not delivered (lines %v)", got)
	}
	appendTo(t, a, "a-late\n") // a.log wants the only slot
	// Past rotateWait: before the fix preempt stopped it here, owing its
	// commit; since, it keeps its slot until its lines are acknowledged.
	stoppedOwing := false
	for end := time.Now().Add(1500 * time.Millisecond); !stoppedOwing && time.Now().Before(end); time.Sleep(2 * time.Millisecond) {
		ig.g.mu.Lock()
		stoppedOwing = s.st == stClosed && s.owe != nil
		ig.g.mu.Unlock()
	}
	t.Logf("the gone stream stopped owing its commit: %v", stoppedOwing)
	ig.q.AddDispatched(held) // acknowledged now
	ig.pub.Poke()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); {
		for k, v := range ig.popLines(20 * time.Millisecond) {
			got[k] += v
		}
		ig.g.mu.Lock()
		ok := s.owe == nil && got["a-late"] > 0
		ig.g.mu.Unlock()
		if ok {
			break
		}
	}
	// Quiet for rotateWait (1 s) after its last line, committed: its
	// pointer is let go (since the fix, lookWatched; a stop sooner keeps
	// it for the next start to read on beside the path).
	ig.g.mu.Lock()
	ptr, key := s.ptrPath, s.key
	ig.g.mu.Unlock()
	names := true
	for end := time.Now().Add(3 * time.Second); names && time.Now().Before(end); {
		for k, v := range ig.popLines(50 * time.Millisecond) {
			got[k] += v
		}
		if rec, err := pointer.Inspect(ptr); err != nil || rec.FileKey != key {
			names = false
		}
	}
	ig.g.mu.Lock()
	owe := s.owe != nil
	ig.g.mu.Unlock()
	tails, _, _ := ig.lost()
	t.Logf("running: lines %v; still owing %v; pointer names w.log.1: %v; lostTails %d", got, owe, names, tails)
	stop()
	if err := os.Remove(moved); err != nil { // logrotate's next run deletes it
		t.Fatal(err)
	}
	ig2, _, stop2 := runGlobOn(t, pattern, data)
	lines2 := ig2.popLines(2 * time.Second)
	tails2, bytes2, detail2 := ig2.lost()
	for _, f := range ig2.g.Files() {
		t.Logf("restart row %s %s offset %d", filepath.Base(f.Path), f.State, f.Offset)
	}
	stop2()
	if tails+tails2 != 0 {
		t.Errorf("w.log.1 (renamed beside, out of the glob) read to its end, every line acknowledged and committed, its stream closed, deleted while stopped: lostTails %d+%d lostBytes %d (%q), restart lines %v; want nothing lost (its pointer still named it after the owed commit: %v)",
			tails, tails2, bytes2, detail2, lines2, names)
	}
}
