package file

// Regression tests from review 21b: cases the reviewer probed and ruled
// out at af423e6 (each passes), kept so that they stay so.

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Regression (review 21b, ruled out). 21a E's inode reuse with an owed
// commit: w.log's genOwn stream reads
// part of w.log.1's long tail and is stopped for a waiting file
// (maxOpenFiles 1) with its lines unacknowledged (closed owing its
// commit). While it waits, w.log is deleted and a new file made at w.log
// on its freed inode (reuseWalk: born after the glob first saw w.log, no
// scan sees the path empty). The scan's inode-reuse branch counts w.log
// (ownGone) and, owing, leaves the stream to settleOwed; the lines are
// then acknowledged: w.log.1's tail is read on to its end, every line
// once, w.log's 12 bytes counted once.
func TestRev21BPassOwedGenOwnInodeReusedAtPathReadsOn(t *testing.T) {
	t.Parallel()
	const n = 6000
	dir, data, a, w := genOwnStopped(t, n)
	pattern := filepath.Join(dir, "*.log")
	rw := &reuseWalk{}
	ig, stop := runGlobWith(t, pattern, data, 5*time.Second, func(c *GlobConfig) {
		c.MaxOpenFiles = 1
		c.CloseInactive = 50 * time.Millisecond
	}, func(g *Glob) {
		g.afterWalk = rw.hook
		g.drainBound = 300 * time.Millisecond
	})
	defer stop()
	var gen *gstream
	ig.waitFor(t, "w.log's stream reading w.log.1", func() bool {
		for _, s := range ig.g.byKey {
			if s.genOwn && s.st == stOpen {
				gen = s
			}
		}
		return gen != nil
	})
	appendTo(t, a, "a-new\n") // a waiting file: w.log's stream is stopped after its turn
	ig.waitFor(t, "w.log's stream stopped for the waiting file", func() bool {
		if gen.st == stStopping {
			ig.g.maxSlots = 0 // nothing starts until the test says so
			return true
		}
		return false
	})
	lines, _ := ig.popEpochs(100*time.Millisecond, false) // not acknowledged
	ig.waitFor(t, "w.log's stream closed owing its commit", func() bool { return gen.st != stStopping && gen.owe != nil })
	more, _ := ig.popEpochs(100*time.Millisecond, false)
	lines = append(lines, more...)
	if len(lines) == 0 {
		t.Fatal("nothing delivered before the close")
	}
	if !rw.replace(t, w, func() bool { return reuseInodeAt(t, w, numbered("r", 4)) }) {
		t.Skip("the file system did not give the freed inode to a new file")
	}
	ig.waitFor(t, "the scan booking w.log's old stream gone", func() bool { return gen.gone })
	time.Sleep(300 * time.Millisecond)
	ig.g.mu.Lock()
	t.Logf("before ack: st %v owe %v ownLost %v keyReused %v path %s", gen.st, gen.owe != nil, gen.ownLost, gen.keyReused, gen.path)
	ig.g.mu.Unlock()
	ig.q.AddDispatched(uint64(len(lines)))
	ig.pub.Poke()
	ig.waitFor(t, "the owed commit made", func() bool { return gen.owe == nil })
	ig.g.mu.Lock()
	t.Logf("after ack: st %v owe %v ownLost %v keyReused %v path %s", gen.st, gen.owe != nil, gen.ownLost, gen.keyReused, gen.path)
	ig.g.maxSlots = 1
	ig.g.mu.Unlock()
	got := map[string]int{}
	for _, l := range lines {
		got[l]++
	}
	for k, v := range ig.popLines(5 * time.Second) {
		got[k] += v
	}
	tails, bytes, detail := ig.lost()
	missing := 0
	for i := range n {
		if got[fmt.Sprintf("tail-%d", i)] == 0 {
			missing++
		}
	}
	if missing > 0 && tails < 2 {
		t.Errorf("%d of w.log.1's %d tail lines neither delivered nor counted: lostTails %d lostBytes %d (%q)", missing, n, tails, bytes, detail)
	}
	for i := range 4 {
		if l := fmt.Sprintf("r-%d", i); got[l] != 1 {
			t.Errorf("the new w.log's %s delivered %d times, want once", l, got[l])
		}
	}
	if tails < 1 || bytes < 12 {
		t.Errorf("lostTails %d lostBytes %d (%q): want the old w.log's 12 bytes counted", tails, bytes, detail)
	}
}

// Regression (review 21b, ruled out): w.log's genOwn stream waits for a
// slot; w.log is deleted and counted whole (ownLost, 12 bytes); the stream
// reads w.log.1's long tail for a slow subscriber and tailfeed is stopped
// cleanly with the drain cut short, then started again: every tail line
// delivered, and nothing counted but w.log's 12 bytes (w.log.1's unread
// bytes at the stop are not a loss: the pointer names them).
func TestRev21BPassOwnLostStreamStoppedMidTailCountsOnlyOwnFile(t *testing.T) {
	t.Parallel()
	const n = 100000
	dir, data, _, w := genOwnStopped(t, n)
	pattern := filepath.Join(dir, "*.log")
	var opens atomic.Int32
	ch := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(ch) }) }
	ig, stop := runGlobWith(t, pattern, data, 300*time.Millisecond, func(c *GlobConfig) {
		c.MaxOpenFiles = 1
		c.CloseInactive = 50 * time.Millisecond
		c.Stream.OpenHook = func() {
			if opens.Add(1) == 1 {
				<-ch // the first stream's open holds the one slot
			}
		}
	}, func(g *Glob) { g.drainBound = 300 * time.Millisecond })
	t.Cleanup(release)
	var gen *gstream
	ig.waitFor(t, "w.log's stream, given the old pointer, waiting for the slot", func() bool {
		for _, s := range ig.g.byKey {
			if s.genOwn && s.st == stQueued {
				gen = s
			}
		}
		return gen != nil
	})
	if err := os.Remove(w); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the scan counting w.log (ownLost)", func() bool { return gen.ownLost })
	release()
	got := map[string]int{}
	ig.waitFor(t, "w.log's stream reading w.log.1", func() bool { return gen.st == stOpen })
	// Slow subscriber: a few batches taken and acknowledged, then none.
	for taken, end := 0, time.Now().Add(3*time.Second); taken < 3 && time.Now().Before(end); {
		b := ig.q.TryPop()
		if b == nil {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		taken++
		for i := range b.Len() {
			got[string(b.Lines[i])]++
		}
		ig.q.AddDispatched(uint64(b.Len()))
		b.Release()
		ig.pub.Poke()
	}
	if got["tail-0"] != 1 || got[fmt.Sprintf("tail-%d", n-1)] != 0 {
		t.Fatalf("not the case under test: tail-0 %d, last tail line %d", got["tail-0"], got[fmt.Sprintf("tail-%d", n-1)])
	}
	time.Sleep(500 * time.Millisecond) // the feed full, the source paused mid-file
	stop()
	tails1, bytes1, detail1 := ig.lost()
	ig3, stop3 := runGlobWith(t, pattern, data, time.Second, nil, nil)
	defer stop3()
	// The first run's lines still queued, never acknowledged, are
	// delivered again by the restart (from the pointer): counted once here.
	for k, v := range ig3.popLines(6 * time.Second) {
		if got[k] == 0 {
			got[k] = v
		}
	}
	missing := 0
	for i := range n {
		if got[fmt.Sprintf("tail-%d", i)] == 0 {
			missing++
		}
	}
	tails3, bytes3, detail3 := ig3.lost()
	if missing > 0 {
		t.Errorf("%d tail lines never delivered", missing)
	}
	if missing == 0 && (tails1+tails3 != 1 || bytes1+bytes3 != 12) {
		t.Errorf("every tail line delivered, yet lostTails %d lostBytes %d (%q) in the stopped run and %d %d (%q) at the restart: want 1 tail and 12 bytes in all (the deleted w.log)",
			tails1, bytes1, detail1, tails3, bytes3, detail3)
	}
}

// Regression (review 21b): w.log's genOwn stream waits (no slot); logrotate renames w.log.1 to
// w.log.2 and w.log to w.log.1 (no new w.log); clean stop before its turn
// (Close leaves the own file uncounted: a rotated name); the restart reads
// w.log.2's tail and w.log.1 (the own file), nothing lost. Passes.
func TestRev21BOwnFileRotatedNoNewFileThenStopIsReadAtRestart(t *testing.T) {
	t.Parallel()
	ig, dir, data, release, _, stop := genOwnHeld(t, nil)
	ig.g.mu.Lock()
	ig.g.maxSlots = 0
	ig.g.mu.Unlock()
	release()
	w := filepath.Join(dir, "w.log")
	if err := os.Rename(w+".1", w+".2"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(w, w+".1"); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "gone", func() bool {
		for _, s := range ig.g.byKey {
			if s.genOwn && s.gone {
				return true
			}
		}
		return false
	})
	time.Sleep(300 * time.Millisecond)
	stop()
	ig3, stop3 := runGlobWith(t, filepath.Join(dir, "*.log"), data, time.Second, nil, nil)
	defer stop3()
	wantLines(t, ig3.popLines(3*time.Second), "tail-0", "tail-1", "n-0", "n-1", "n-2")
	if tails, bytes, detail := sumLost(ig, ig3); tails != 0 {
		t.Errorf("lostTails %d lostBytes %d (%q): want nothing", tails, bytes, detail)
	}
}

// The brief's first idea: the same with a new w.log (f-lines) made by the
// rotation (rotateNumbered), then a clean stop — or a kill (runGlobKill) —
// before the stream's turn: the restart gives the pointer to the new
// w.log, whose source reads w.log.2's tail, w.log.1 (the n-lines, a later
// generation by mtime) and the new file: every line once, nothing lost,
// both ways. Passes.
func rev21bRotatedThenDown(t *testing.T, useKill bool) {
	ig, dir, data, release, kill, stop := genOwnHeld(t, nil)
	ig.g.mu.Lock()
	ig.g.maxSlots = 0
	ig.g.mu.Unlock()
	release()
	w := filepath.Join(dir, "w.log")
	time.Sleep(20 * time.Millisecond)
	rotateNumbered(t, w, numbered("f", 2))
	ig.waitFor(t, "gone", func() bool {
		for _, s := range ig.g.byKey {
			if s.genOwn && s.gone {
				return true
			}
		}
		return false
	})
	time.Sleep(300 * time.Millisecond)
	if useKill {
		kill()
	} else {
		stop()
	}
	t0, _, _ := ig.lost()
	ig3, stop3 := runGlobWith(t, filepath.Join(dir, "*.log"), data, time.Second, nil, nil)
	defer stop3()
	wantLines(t, ig3.popLines(3*time.Second), "tail-0", "tail-1", "n-0", "n-1", "n-2", "f-0", "f-1")
	if t3, b3, d := ig3.lost(); t0+t3 != 0 {
		t.Errorf("lostTails %d+%d lostBytes %d (%q): want nothing", t0, t3, b3, d)
	}
}
func TestRev21BOwnFileRotatedThenStopIsReadAtRestart(t *testing.T) {
	t.Parallel()
	rev21bRotatedThenDown(t, false)
}
func TestRev21BOwnFileRotatedThenKillIsReadAtRestart(t *testing.T) {
	t.Parallel()
	rev21bRotatedThenDown(t, true)
}
