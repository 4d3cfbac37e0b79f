package file

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// Review of af423e6..5545006 (review 21b H–L: Config.ownAt, otherKeys,
// laterGeneration). Each finding (TestRev21C[A-E]) fails at 5545006;
// TestRev21CPass* are cases ruled out (they pass). A and B are fixed (a
// stale ownAt); C, D and E are parked in open_rev21c_internal_test.go.

// rev21cOwnOut holds w.log's genOwn stream queued (genOwnHeld, no slot),
// renames its own file w.log (n-lines) out of the glob to w.log.old and
// waits for the scan to find it there (s.ownAt set); with fresh, a new
// w.log (f-lines) is made at the path.
func rev21cOwnOut(t *testing.T, fresh bool) (ig *internalGlob, dir string, gen *gstream, stop func()) {
	t.Helper()
	ig, dir, _, gen, _, stop = rev21cOwnOutKill(t, fresh)
	return ig, dir, gen, stop
}

func rev21cOwnOutKill(t *testing.T, fresh bool) (ig *internalGlob, dir, data string, gen *gstream, kill, stop func()) {
	t.Helper()
	ig, dir, data, release, kill, stop := genOwnHeld(t, nil)
	ig.g.mu.Lock()
	ig.g.maxSlots = 0 // nothing starts until the test says so
	ig.g.mu.Unlock()
	release()
	w := filepath.Join(dir, "w.log")
	ig.waitFor(t, "w.log's genOwn stream", func() bool {
		for _, s := range ig.g.byKey {
			if s.genOwn {
				gen = s
			}
		}
		return gen != nil
	})
	if err := os.Rename(w, w+".old"); err != nil {
		t.Fatal(err)
	}
	if fresh {
		if err := os.WriteFile(w, []byte(numbered("f", 2)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ig.waitFor(t, "the scan finding w.log beside the path (ownAt)", func() bool { return gen.ownAt != "" })
	time.Sleep(200 * time.Millisecond)
	return ig, dir, data, gen, kill, stop
}

func (ig *internalGlob) slots(n int) {
	ig.g.mu.Lock()
	ig.g.maxSlots = n
	ig.g.mu.Unlock()
}

// Ruled out (passes): the own file, found at w.log.old (ownAt), is renamed
// on to w.log.bak before the stream's turn — the scan finds it again there.
func TestRev21CPassOwnAtRenamedAgainBeforeTurn(t *testing.T) {
	t.Parallel()
	ig, dir, _, stop := rev21cOwnOut(t, true)
	defer stop()
	w := filepath.Join(dir, "w.log")
	if err := os.Rename(w+".old", w+".bak"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)
	ig.slots(1)
	got := ig.popLines(6 * time.Second)
	wantLines(t, got, "tail-0", "tail-1", "n-0", "n-1", "n-2", "f-0", "f-1")
	if tails, bytes, detail := ig.lost(); tails != 0 {
		t.Errorf("lostTails %d lostBytes %d (%q): want nothing lost", tails, bytes, detail)
	}
}

// A. w.log's genOwn stream waits for a slot (genOwnHeld, maxOpenFiles 1);
// its own file w.log (n-lines) is renamed out to w.log.old (no new w.log):
// the scan finds it beside the path, s.ownAt = w.log.old (leftUnread).
// Before the stream's turn the file is renamed back to w.log: the scan
// finds the stream back in the glob (gone false), but s.ownAt is never
// cleared, so its source opens w.log.old — no such file — and the stream
// sits in stStopping for good (the one slot held): w.log.1's tail is
// delivered, the n-lines are neither delivered nor counted, and the feed
// never catches up. DESIGN §2: never lose a line silently; §10: a rename
// within the glob keeps the stream, every file read to its end.
func TestRev21CAOwnAtStaleOwnFileRenamedBackToPathNeverRead(t *testing.T) {
	t.Parallel()
	ig, dir, _, stop := rev21cOwnOut(t, false)
	defer stop()
	w := filepath.Join(dir, "w.log")
	if err := os.Rename(w+".old", w); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)
	ig.slots(1)
	got := ig.popLines(6 * time.Second)
	wantLines(t, got, "tail-0", "tail-1", "n-0", "n-1", "n-2")
	if tails, bytes, detail := ig.lost(); tails != 0 {
		t.Errorf("lostTails %d lostBytes %d (%q): want nothing lost", tails, bytes, detail)
	}
}

// B. A's stale ownAt with the own file renamed from w.log.old into the
// glob under another matched name, x.log (the stream follows it: path
// x.log), a new w.log (f-lines) made at the path meanwhile. The source
// opens the stale ownAt w.log.old: the stream sits in stStopping for good,
// holding the slot — the n-lines (x.log) and the new w.log's f-lines are
// never delivered nor counted; the feed never settles. DESIGN §2, §10.
func TestRev21CBOwnAtStaleOwnFileRenamedIntoGlobNeverRead(t *testing.T) {
	t.Parallel()
	ig, dir, _, stop := rev21cOwnOut(t, true)
	defer stop()
	w := filepath.Join(dir, "w.log")
	if err := os.Rename(w+".old", filepath.Join(dir, "x.log")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)
	ig.slots(1)
	got := ig.popLines(6 * time.Second)
	wantLines(t, got, "tail-0", "tail-1", "n-0", "n-1", "n-2", "f-0", "f-1")
	if tails, bytes, detail := ig.lost(); tails != 0 {
		t.Errorf("lostTails %d lostBytes %d (%q): want nothing lost", tails, bytes, detail)
	}
}

// Ruled out (passes): the own file at ownAt is deleted before the turn:
// counted once (12 bytes), the tail and the new w.log read.
func TestRev21CPassOwnAtDeletedBeforeTurn(t *testing.T) {
	t.Parallel()
	ig, dir, _, stop := rev21cOwnOut(t, true)
	defer stop()
	w := filepath.Join(dir, "w.log")
	if err := os.Remove(w + ".old"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)
	ig.slots(1)
	got := ig.popLines(6 * time.Second)
	wantLines(t, got, "tail-0", "tail-1", "f-0", "f-1")
	if tails, bytes, detail := ig.lost(); tails != 1 || bytes != 12 {
		t.Errorf("lostTails %d lostBytes %d (%q): want 1 and 12 (the deleted own file)", tails, bytes, detail)
	}
}

// rev21cOpenHeld is genOwnHeld (the pointer's file w.log.1 with a 14-byte
// unread tail, the own file w.log with n-lines, maxOpenFiles 1) with the
// genOwn stream's source held in its first open (between the stat and the
// open of w.log) until mid returns.
func rev21cOpenHeld(t *testing.T, mid func(dir, w string)) (ig *internalGlob, dir, data string, stop func()) {
	t.Helper()
	var w string
	dir, data, _, w = genOwnStopped(t, 2)
	pattern := filepath.Join(dir, "*.log")
	var opens atomic.Int32
	ch1, in2, ch2 := make(chan struct{}), make(chan struct{}), make(chan struct{})
	ig, stop = runGlobWith(t, pattern, data, 5*time.Second, func(c *GlobConfig) {
		c.MaxOpenFiles = 1
		c.CloseInactive = 50 * time.Millisecond
		c.Stream.OpenHook = func() {
			switch opens.Add(1) {
			case 1:
				<-ch1
			case 2:
				close(in2)
				<-ch2
			}
		}
	}, nil)
	ig.waitFor(t, "w.log's stream, given the old pointer, waiting for the slot", func() bool {
		for _, s := range ig.g.byKey {
			if s.genOwn && s.st == stQueued {
				return true
			}
		}
		return false
	})
	close(ch1)
	select {
	case <-in2:
	case <-time.After(5 * time.Second):
		t.Fatal("the genOwn source's open never came")
	}
	mid(dir, w)
	close(ch2)
	return ig, dir, data, stop
}

// Ruled out (passes): the genOwn source stats w.log (its own file), and
// w.log is renamed out to w.log.old before the open.
func TestRev21CPassOwnFileRenamedOutDuringOpen(t *testing.T) {
	t.Parallel()
	ig, _, _, stop := rev21cOpenHeld(t, func(dir, w string) {
		if err := os.Rename(w, w+".old"); err != nil {
			t.Fatal(err)
		}
	})
	defer stop()
	got := ig.popLines(6 * time.Second)
	wantLines(t, got, "tail-0", "tail-1", "n-0", "n-1", "n-2")
	if tails, bytes, detail := ig.lost(); tails != 0 {
		t.Errorf("lostTails %d lostBytes %d (%q): want nothing lost", tails, bytes, detail)
	}
}

// Ruled out (passes): the same with a new w.log (f-lines) made at once.
func TestRev21CPassOwnFileRenamedOutAndNewFileDuringOpen(t *testing.T) {
	t.Parallel()
	ig, _, _, stop := rev21cOpenHeld(t, func(dir, w string) {
		if err := os.Rename(w, w+".old"); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(w, []byte(numbered("f", 2)), 0o600); err != nil {
			t.Fatal(err)
		}
	})
	defer stop()
	got := ig.popLines(6 * time.Second)
	wantLines(t, got, "tail-0", "tail-1", "n-0", "n-1", "n-2", "f-0", "f-1")
	if tails, bytes, detail := ig.lost(); tails != 0 {
		t.Errorf("lostTails %d lostBytes %d (%q): want nothing lost", tails, bytes, detail)
	}
}

// Ruled out (passes): the same with a logrotate rotation (the own file to
// w.log.1, a later generation; the pointer's file to w.log.2; a new w.log).
func TestRev21CPassOwnFileRotatedDuringOpen(t *testing.T) {
	t.Parallel()
	ig, _, _, stop := rev21cOpenHeld(t, func(dir, w string) {
		rotateNumbered(t, w, numbered("f", 2))
	})
	defer stop()
	got := ig.popLines(6 * time.Second)
	wantLines(t, got, "tail-0", "tail-1", "n-0", "n-1", "n-2", "f-0", "f-1")
	if tails, bytes, detail := ig.lost(); tails != 0 {
		t.Errorf("lostTails %d lostBytes %d (%q): want nothing lost", tails, bytes, detail)
	}
}

// Ruled out (passes): the own file at ownAt (w.log.old) renamed on to
// w.log.bak, and the new w.log (its own stream F) renamed to w.log.old —
// the stale name now another stream's file; a new w.log (g-lines).
func TestRev21CPassOwnAtNameTakenByAnotherStreamsFile(t *testing.T) {
	t.Parallel()
	ig, dir, _, stop := rev21cOwnOut(t, true)
	defer stop()
	w := filepath.Join(dir, "w.log")
	if err := os.Rename(w+".old", w+".bak"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(w, w+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w, []byte(numbered("g", 2)), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)
	ig.slots(1)
	got := ig.popLines(6 * time.Second)
	wantLines(t, got, "tail-0", "tail-1", "n-0", "n-1", "n-2", "f-0", "f-1", "g-0", "g-1")
	if tails, bytes, detail := ig.lost(); tails != 0 {
		t.Errorf("lostTails %d lostBytes %d (%q): want nothing lost", tails, bytes, detail)
	}
}

// Ruled out (passes): review 21b J with the ownLost stream's source already
// running (its rotateWait long) when the new w.log (F) appears and is
// rotated to w.log.1 — F's key is not in the source's otherKeys snapshot,
// but the source has ended by then and F's lines are read once.
func TestRev21CPassRunningOwnLostSourceLaterStreamsFile(t *testing.T) {
	t.Parallel()
	ig, dir, _, release, _, stop := genOwnHeld(t, func(g *Glob) { g.cfg.Stream.RotateWait = 3 * time.Second })
	defer stop()
	ig.slots(0)
	release()
	w := filepath.Join(dir, "w.log")
	var gen *gstream
	ig.waitFor(t, "w.log's genOwn stream", func() bool {
		for _, s := range ig.g.byKey {
			if s.genOwn {
				gen = s
			}
		}
		return gen != nil
	})
	tmp := filepath.Join(dir, "w.tmp")
	if err := os.WriteFile(tmp, []byte(numbered("f", 2)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(w); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the scan counting w.log (ownLost)", func() bool { return gen.ownLost })
	ig.slots(1)
	ig.waitFor(t, "the ownLost source running", func() bool { return gen.st == stOpen })
	time.Sleep(200 * time.Millisecond)
	now := time.Now()
	if err := os.Chtimes(tmp, now, now); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, w); err != nil {
		t.Fatal(err)
	}
	var fs *gstream
	ig.waitFor(t, "the new w.log's stream", func() bool {
		for _, s := range ig.g.byKey {
			if s != gen && s.first == w && s.key != gen.key {
				fs = s
			}
		}
		return fs != nil
	})
	time.Sleep(50 * time.Millisecond)
	rotateNumbered(t, w, numbered("g", 2))
	got := ig.popLines(10 * time.Second)
	wantLines(t, got, "tail-0", "tail-1", "f-0", "f-1", "g-0", "g-1")
	if tails, bytes, detail := ig.lost(); tails != 1 || bytes != 12 {
		t.Errorf("lostTails %d lostBytes %d (%q): want 1 and 12 (the deleted w.log)", tails, bytes, detail)
	}
}

// Ruled out (passes): the genOwn source stats w.log, and w.log is renamed
// within the glob to x.log before the open; a new w.log (f-lines).
func TestRev21CPassOwnFileRenamedWithinGlobDuringOpen(t *testing.T) {
	t.Parallel()
	ig, _, _, stop := rev21cOpenHeld(t, func(dir, w string) {
		if err := os.Rename(w, filepath.Join(dir, "x.log")); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(w, []byte(numbered("f", 2)), 0o600); err != nil {
			t.Fatal(err)
		}
	})
	defer stop()
	got := ig.popLines(6 * time.Second)
	wantLines(t, got, "tail-0", "tail-1", "n-0", "n-1", "n-2", "f-0", "f-1")
	if tails, bytes, detail := ig.lost(); tails != 0 {
		t.Errorf("lostTails %d lostBytes %d (%q): want nothing lost", tails, bytes, detail)
	}
}

// C. Review 21b K's two logrotate rotations while the genOwn stream waits
// for a slot (w.log.3 the pointer's file, w.log.2 the own file n-lines,
// w.log.1 the f-lines file of the stream F that was made at the path by
// the first rotation and never started — behind the old one at the path —
// and a new w.log with g-lines), then a clean stop. Close leaves the own
// file uncounted (laterGeneration: the restart reads it), but counts F's
// file ("out of the glob, was not read before the stop", 8 bytes) although
// it is a later generation too: the restart's genOwn source reads w.log.3's
// tail, w.log.2 and w.log.1 — f-0, f-1 delivered — so 8 bytes are counted
// lost that were delivered (3 of 3). DESIGN §2/§4: a loss is counted only
// when it happened. Fixed in the twenty-second session: Close leaves such a
// file to the restart when a stream of the same first path, given a gone
// file's pointer, will read it as a later generation (readAsGeneration).
func TestRev21CCTwoRotationsThenStopCountsFileTheRestartReads(t *testing.T) {
	t.Parallel()
	ig, dir, data, release, _, stop := genOwnHeld(t, nil)
	ig.slots(0)
	release()
	w := filepath.Join(dir, "w.log")
	var gen *gstream
	ig.waitFor(t, "w.log's genOwn stream", func() bool {
		for _, s := range ig.g.byKey {
			if s.genOwn {
				gen = s
			}
		}
		return gen != nil
	})
	time.Sleep(50 * time.Millisecond)
	rotateNumbered(t, w, numbered("f", 2))
	var fs *gstream
	ig.waitFor(t, "the new w.log's stream F, and the old one gone", func() bool {
		for _, s := range ig.g.byKey {
			if s != gen && s.first == w {
				fs = s
			}
		}
		return fs != nil && gen.gone
	})
	time.Sleep(50 * time.Millisecond)
	rotateNumbered(t, w, numbered("g", 2))
	ig.waitFor(t, "F's file found out of the glob", func() bool { return fs.gone })
	time.Sleep(300 * time.Millisecond)
	stop()
	ig3, stop3 := runGlobWith(t, filepath.Join(dir, "*.log"), data, time.Second, nil, nil)
	defer stop3()
	got := ig3.popLines(3 * time.Second)
	wantLines(t, got, "tail-0", "tail-1", "n-0", "n-1", "n-2", "f-0", "f-1", "g-0", "g-1")
	if tails, bytes, detail := sumLost(ig, ig3); tails != 0 {
		t.Errorf("lostTails %d lostBytes %d over both runs (%q): want nothing lost", tails, bytes, detail)
	}
}

// D. rev21cOwnOut (the own file w.log renamed out to w.log.old, ownAt, a
// new w.log with f-lines) and a kill -9 before the stream's turn (the
// crash twin of review 21a C, whose count is made by Close only). The
// restart gives the pointer (naming w.log.1) to the new w.log; w.log.old
// is no generation and no pointer names it: the n-lines are neither
// delivered nor counted in either run. DESIGN §2: after a crash, duplicates
// — never a gap. Fixed in the twenty-second session: the running unread list
// names such an own file at once (Out), and the restart counts it.
func TestRev21CDOwnFileRenamedOutThenKillIsLostSilently(t *testing.T) {
	t.Parallel()
	ig, dir, data, _, kill, _ := rev21cOwnOutKill(t, true)
	kill()
	ig3, stop3 := runGlobWith(t, filepath.Join(dir, "*.log"), data, time.Second, nil, nil)
	defer stop3()
	got := ig3.popLines(3 * time.Second)
	tails, bytes, detail := sumLost(ig, ig3)
	readOwn := got["n-0"] == 1 && got["n-1"] == 1 && got["n-2"] == 1
	if !readOwn && bytes < 12 {
		t.Errorf("the n-lines file (12 bytes, renamed out to w.log.old) neither delivered nor counted: delivered at the next start %v, lostTails %d lostBytes %d over both runs (%q)", got, tails, bytes, detail)
	}
	if got["tail-0"] != 1 || got["tail-1"] != 1 || got["f-0"] != 1 || got["f-1"] != 1 {
		t.Errorf("delivered at the next start %v: want tail-0, tail-1, f-0, f-1 once", got)
	}
}

// E. Review 21b I's case (the own file, 10 s older by mtime than the
// pointer's file, rotated out to w.log.1 before its turn: no later
// generation for a restart) with a kill -9 in place of the clean stop:
// Close's laterGeneration count never runs, and the restart skips w.log.1
// (older than the pointer's file − 2 s): the n-lines are neither delivered
// nor counted. DESIGN §2: after a crash, never a gap. Fixed with D.
func TestRev21CEOlderOwnFileRotatedOutThenKillIsLostSilently(t *testing.T) {
	t.Parallel()
	ig, dir, data, kill, _ := genOwnOld(t)
	ig.rotateOwnOut(t, filepath.Join(dir, "w.log"))
	kill()
	ig3, stop3 := runGlobWith(t, filepath.Join(dir, "*.log"), data, time.Second, nil, nil)
	defer stop3()
	got := ig3.popLines(3 * time.Second)
	tails, bytes, detail := sumLost(ig, ig3)
	readOwn := got["n-0"] == 1 && got["n-1"] == 1 && got["n-2"] == 1
	if !readOwn && bytes < 12 {
		t.Errorf("the n-lines file (12 bytes, rotated out to w.log.1) neither delivered nor counted: delivered at the next start %v, lostTails %d lostBytes %d over both runs (%q)", got, tails, bytes, detail)
	}
}

// Ruled out (guards the fix of D): the own file renamed out (listed while
// running, Out), then a clean stop: Close counts it and the stop's list
// drops it — counted once over both runs (12 bytes), not again at the
// restart.
func TestRev21CPassOwnOutListedThenStopCountsOnce(t *testing.T) {
	t.Parallel()
	ig, dir, data, _, _, stop := rev21cOwnOutKill(t, true)
	time.Sleep(300 * time.Millisecond) // a housekeeping pass wrote the list
	stop()
	ig3, stop3 := runGlobWith(t, filepath.Join(dir, "*.log"), data, time.Second, nil, nil)
	defer stop3()
	got := ig3.popLines(3 * time.Second)
	wantLines(t, got, "tail-0", "tail-1", "f-0", "f-1")
	if tails, bytes, detail := sumLost(ig, ig3); tails != 1 || bytes != 12 {
		t.Errorf("lostTails %d lostBytes %d over both runs (%q): want 1 and 12 (w.log.old counted once)", tails, bytes, detail)
	}
}

// Ruled out (guards the fix of D): the own file renamed out and listed,
// then the stream gets its slot and reads it there (ownAt), then a kill -9:
// the restart counts nothing (the list dropped it once the pointer named
// it, or skips it as a pointer's file), and every line came once.
func TestRev21CPassOwnOutListedThenReadThenKillCountsNothing(t *testing.T) {
	t.Parallel()
	ig, dir, data, _, kill, _ := rev21cOwnOutKill(t, true)
	time.Sleep(300 * time.Millisecond)
	ig.slots(1)
	got := ig.popLines(4 * time.Second)
	kill()
	ig3, stop3 := runGlobWith(t, filepath.Join(dir, "*.log"), data, time.Second, nil, nil)
	defer stop3()
	for l, n := range ig3.popLines(3 * time.Second) {
		got[l] += n
	}
	for _, l := range []string{"tail-0", "tail-1", "n-0", "n-1", "n-2", "f-0", "f-1"} {
		if got[l] < 1 {
			t.Errorf("line %s never delivered (%v)", l, got)
		}
	}
	if tails, bytes, detail := sumLost(ig, ig3); tails != 0 {
		t.Errorf("lostTails %d lostBytes %d over both runs (%q): want nothing (w.log.old was read)", tails, bytes, detail)
	}
}
