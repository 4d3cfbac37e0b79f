package file

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"tailfeed/pointer"
)

// Review 13b, finding B (parked from the thirteenth session to the
// nineteenth): a live rotation (A, read and committed, → w.log.1; an empty
// B at w.log) keeps A's pointer for the empty B (forgetOrHold). tailfeed
// stops; while it is stopped logrotate runs once more with "rotate 1"
// (w.log.1 — A, read to its end — deleted, B → w.log.1, a new empty w.log
// C). Not a line was written since A was read: the restart must deliver
// nothing and count nothing (DESIGN §4: "A file that was read to its end,
// committed and then deleted is not a lost tail"). It counted lostTails 1:
// the kept pointer, adopted by C (or matching C by key when C got A's
// freed inode), did not find A as it was. markHeld's "held" epochs line
// now says that nothing of A was pending.
//
// Modes: "rotate1" as logrotate does it (on ext4 C usually gets A's freed
// inode: the pointer's key at the path, shorter than its offset);
// "rotate1-newinode" with A's inode taken by another file first (C has a
// new key: the pointer adopted by the path); "nocreate" without a new
// w.log (no file at the path: the start's countGone; B found beside it);
// "kill" as rotate1 after a stop without drain or final commit (kill -9:
// the held line was written when A's pointer was kept). And "next-gone":
// A and B both deleted (no file at the path): B, empty when last seen,
// may have been written to before it was deleted — one lost tail, for B
// (review 14a G's class), none for A.
func TestRev13BBCleanStopWhileKeptThenRotatedWhileStopped(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"rotate1", "rotate1-newinode", "nocreate", "kill", "next-gone"} {
		t.Run(mode, func(t *testing.T) { cleanStopKeptRotated(t, mode) })
	}
}

// heldRun runs a glob over dir/*.log until w.log's file A (2 lines) is
// read, committed, rotated to w.log.1 with an empty w.log after it, and
// A's pointer kept for it (held); then it stops the run (kill: without
// drain or final commit). It returns w.log's path, the pointer's record
// then and its epoch's held mark.
func heldRun(t *testing.T, dir, data string, kill bool) (string, pointer.Record) {
	t.Helper()
	w := filepath.Join(dir, "w.log")
	if err := os.WriteFile(w, []byte(numbered("first", 2)), 0o600); err != nil {
		t.Fatal(err)
	}
	ig, stopRun, stop := runGlobOn(t, filepath.Join(dir, "*.log"), data)
	if got := ig.popAll(time.Second); got != 2 {
		t.Fatalf("first run delivered %d lines, want 2", got)
	}
	a := ig.rotateToEmpty(t, w, "w.log's stream read, committed, closed", func(s *gstream) bool { return s.st == stClosed && s.owe == nil })
	ptr := a.ptrPath
	if kill {
		stopRun()
	} else {
		time.Sleep(300 * time.Millisecond)
		stop()
	}
	rec, err := pointer.Inspect(ptr)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Offset != int64(len(numbered("first", 2))) {
		t.Fatalf("A's pointer at offset %d after the first run, want A's end", rec.Offset)
	}
	return w, rec
}

func cleanStopKeptRotated(t *testing.T, mode string) {
	dir, data := t.TempDir(), t.TempDir()
	w, rec := heldRun(t, dir, data, mode == "kill")
	if m := pointer.HeldMarks(readEpochLines(t, data))[rec.Epoch]; m.FileKey != rec.FileKey || m.End != rec.Offset {
		t.Fatalf("no held line for A's record (epoch %016x) after the first run: %+v", rec.Epoch, m)
	}
	if err := os.Remove(w + ".1"); err != nil { // rotate 1: the oldest generation, A, removed
		t.Fatal(err)
	}
	if mode == "rotate1-newinode" {
		if err := os.WriteFile(filepath.Join(dir, "inode-taker"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if mode == "next-gone" {
		if err := os.Remove(w); err != nil {
			t.Fatal(err)
		}
	} else {
		if err := os.Rename(w, w+".1"); err != nil {
			t.Fatal(err)
		}
	}
	if mode != "next-gone" && mode != "nocreate" {
		if err := os.WriteFile(w, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if st, err := os.Stat(w); err == nil {
			t.Logf("%s: the new w.log has A's key: %v", mode, pointer.FileKey(uint64(st.Sys().(*syscall.Stat_t).Dev), st.Sys().(*syscall.Stat_t).Ino) == rec.FileKey)
		}
	}
	ig2, _, _ := runGlobOn(t, filepath.Join(dir, "*.log"), data)
	got := ig2.popAll(2 * time.Second)
	tails, bytes, detail := ig2.lost()
	want := uint64(0)
	if mode == "next-gone" {
		want = 1
	}
	if got != 0 || tails != want || bytes != 0 {
		t.Errorf("%s while stopped, no line written since A was read: %d lines delivered, lostTails %d lostBytes %d (%q); want none delivered, lostTails %d", mode, got, tails, bytes, detail, want)
	}
	if _, ok := pointer.HeldMarks(readEpochLines(t, data))[rec.Epoch]; ok {
		t.Errorf("%s: the held line of A's record is still its epoch's last after a start; a start must void it", mode)
	}
}

// readEpochLines is the feed's epochs file (runGlobOn's layout).
func readEpochLines(t *testing.T, data string) []pointer.EpochLine {
	t.Helper()
	lines, err := pointer.ReadEpochs(filepath.Join(data, "feeds", "f.epochs"))
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// The held mark is good for the start that finds it only: a start voids
// it on disk before any source reads on, so a file read on under the
// record in that run and lost later counts (here: A found beside the path,
// as held, a line appended to it while stopped; the restart reads it).
func TestGlobHeldMarkVoidedAtTheStartThatFindsIt(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	w, rec := heldRun(t, dir, data, false)
	f, err := os.OpenFile(w+".1", os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("late\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ig2, _, _ := runGlobOn(t, filepath.Join(dir, "*.log"), data)
	if got := ig2.popAll(2 * time.Second); got != 1 {
		t.Errorf("A's line written while stopped (A held beside the path): %d lines delivered, want 1", got)
	}
	if tails, bytes, detail := ig2.lost(); tails != 0 || bytes != 0 {
		t.Errorf("lostTails %d lostBytes %d (%q), want none", tails, bytes, detail)
	}
	lines := readEpochLines(t, data)
	if _, ok := pointer.HeldMarks(lines)[rec.Epoch]; ok {
		t.Errorf("the held line of A's record is still its epoch's last after the start that found it")
	}
	voided := false
	for _, l := range lines {
		voided = voided || (l.Epoch == rec.Epoch && l.Reason == pointer.ReasonUnheld)
	}
	if !voided {
		t.Errorf("no unheld line for A's epoch %016x", rec.Epoch)
	}
}

// A held stream started again in the same run voids its held line before
// its source reads on (g.start). Appended to beside its path, a held
// file is not read on in a run (closed rotateWaitMillis after its last
// growth, as a file renamed out of the glob is); the test queues it as
// any path that starts it again would.
func TestGlobHeldMarkVoidedWhenTheStreamStartsAgain(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	w := filepath.Join(dir, "w.log")
	if err := os.WriteFile(w, []byte(numbered("first", 2)), 0o600); err != nil {
		t.Fatal(err)
	}
	ig, _, _ := runGlobOn(t, filepath.Join(dir, "*.log"), data)
	if got := ig.popAll(time.Second); got != 2 {
		t.Fatalf("delivered %d lines, want 2", got)
	}
	a := ig.rotateToEmpty(t, w, "w.log's stream read, committed, closed", func(s *gstream) bool { return s.st == stClosed && s.owe == nil })
	ig.g.mu.Lock()
	epoch := a.heldMark.Epoch
	ig.g.mu.Unlock()
	if _, ok := pointer.HeldMarks(readEpochLines(t, data))[epoch]; !ok || epoch == 0 {
		t.Fatalf("no held line written for A (epoch %016x)", epoch)
	}
	ig.g.mu.Lock()
	ig.g.enqueue(a)
	ig.g.mu.Unlock()
	poke(ig.g.rest)
	ig.waitFor(t, "A's stream started again", func() bool { return a.st != stQueued })
	if _, ok := pointer.HeldMarks(readEpochLines(t, data))[epoch]; ok {
		t.Errorf("A's held line is still its epoch's last after its stream started again")
	}
	if got := ig.popAll(500 * time.Millisecond); got != 0 {
		t.Errorf("A started again with nothing new: %d lines delivered", got)
	}
}

// The empty file B a held pointer was kept for gets a line and a pointer
// of its own while tailfeed runs (the line not acknowledged yet: the held
// pointer stays); tailfeed stops; while it is down B gets more lines and is
// deleted, a new w.log made. B is lost, and counted once. "old": A (the
// held pointer's file, w.log.1) last written a minute before, and B's
// pointer's record naming B (its identity stored, as a stop's commit at 0
// does when it comes first) — its source counts B gone (loseTail), so the
// held line's nextFileKey must not count it a second time. "fresh": A
// written at the restart, B's record as the stop left it; when it names
// no file yet (nothing committed), its source takes the file at the path
// for a new one, or A for a later generation of B (read again:
// duplicates, allowed, DESIGN §4 "never a gap"), and counts nothing —
// silent before the held line named B.
func TestGlobHeldNextWithItsOwnPointerCountedOnce(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"old", "fresh"} {
		t.Run(mode, func(t *testing.T) { heldNextOwnPointer(t, mode) })
	}
}

func heldNextOwnPointer(t *testing.T, mode string) {
	dir, data := t.TempDir(), t.TempDir()
	pattern := filepath.Join(dir, "*.log")
	w := filepath.Join(dir, "w.log")
	if err := os.WriteFile(w, []byte(numbered("first", 2)), 0o600); err != nil {
		t.Fatal(err)
	}
	ig, _, stop := runGlobKill(t, pattern, data, 5*time.Second, func(c *GlobConfig) { c.CloseInactive = 50 * time.Millisecond },
		func(g *Glob) { g.drainBound = 300 * time.Millisecond })
	if got := ig.popAll(time.Second); got != 2 {
		t.Fatalf("first run delivered %d lines, want 2", got)
	}
	var a *gstream
	ig.waitFor(t, "w.log's stream read, committed, closed", func() bool {
		a = ig.g.byPath[w]
		return a != nil && a.st == stClosed && a.owe == nil
	})
	if err := os.Rename(w, w+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "A held for the empty B", func() bool {
		return a.gone && a.held && a.heldMark.Next != 0
	})
	appendTo(t, w, "b-0\n")
	var bPtr string
	ig.waitFor(t, "B given a pointer of its own, A still held", func() bool {
		b := ig.g.byPath[w]
		if b != nil && b != a && b.ptrPath != "" && a.held {
			bPtr = b.ptrPath
			return true
		}
		return false
	})
	time.Sleep(100 * time.Millisecond)
	stop() // b-0 never acknowledged: B's pointer stays at 0, A's held (as after a kill)
	if rec, err := pointer.Inspect(bPtr); err != nil || rec.Offset != 0 {
		t.Fatalf("B's pointer after the stop: %+v, %v; want offset 0", rec, err)
	} else if mode == "old" && rec.FileKey == 0 {
		// Its identity stored, as a stop's commit at 0 does when it
		// comes (timing): the record names B by key and first bytes.
		p, err := pointer.Open(bPtr, pointer.Options{EpochsPath: filepath.Join(data, "feeds", "f.epochs")})
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(w)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		p.Bind(f, pointer.FileKey(uint64(st.Sys().(*syscall.Stat_t).Dev), st.Sys().(*syscall.Stat_t).Ino))
		if err := p.Commit(0); err != nil {
			t.Fatal(err)
		}
		p.Close()
		f.Close()
	}
	appendTo(t, w, numbered("b", 2))
	if err := os.Remove(w); err != nil {
		t.Fatal(err)
	}
	// B's inode taken by another file first (given to the new w.log, B's
	// pointer's source would take it for B rewritten: at offset 0, no loss).
	if err := os.WriteFile(filepath.Join(dir, "inode-taker"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w, []byte(numbered("second", 2)), 0o600); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-time.Minute)
	if mode == "fresh" {
		at = time.Now()
	}
	if err := os.Chtimes(w+".1", at, at); err != nil {
		t.Fatal(err)
	}
	ig2, _, _ := runGlobOn(t, pattern, data)
	got, _ := ig2.popEpochs(2*time.Second, true)
	tails, _, detail := ig2.lost()
	want := []string{"second-0", "second-1"}
	if mode == "fresh" && len(got) == 4 {
		// (B's pointer bound while B was still empty: A read again. Bound
		// after b-0 arrived, it names B's first bytes and its source counts
		// B gone itself, as in "old".)
		want = []string{"first-0", "first-1", "second-0", "second-1"}
	}
	if tails != 1 || !slices.Equal(got, want) {
		t.Errorf("%s: restart delivered %q, lostTails %d (%q); want %q and lostTails 1 (B, once)", mode, got, tails, detail, want)
	}
}

// rotateToEmpty waits until w's stream is ready (what: the wait's name),
// then rotates w live the way logrotate's create does — renamed to w.1, an
// empty w made — and waits until the stream's pointer is kept for that
// empty file (held). It returns the stream.
func (ig *internalGlob) rotateToEmpty(t *testing.T, w, what string, ready func(*gstream) bool) *gstream {
	t.Helper()
	var a *gstream
	ig.waitFor(t, what, func() bool {
		a = ig.g.byPath[w]
		return a != nil && ready(a)
	})
	if err := os.Rename(w, w+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "w's stream's pointer kept for the empty file", func() bool { return a.gone && a.held })
	return a
}
