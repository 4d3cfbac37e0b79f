package file

import (
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Review of 61aa493..af423e6 (review 13a C and 21a A–F: a genOwn stream's
// own file leaving the glob before its source reached it). Each finding
// below fails at af423e6.

// genOwnOld is genOwnHeld (rev21a) with the new w.log — the file at the
// path given the old pointer (adoptByPath) — older by mtime than the
// pointer's file w.log.1 by more than 2 s: the application wrote on to
// its old descriptor (w.log.1) after logrotate created w.log (logrotate
// without copytruncate, a reopen after a delay; delaycompress), so w.log.1
// was last written after w.log was made. nothing starts (maxSlots 0) until
// the test says so.
func genOwnOld(t *testing.T) (ig *internalGlob, dir, data string, kill, stop func()) {
	t.Helper()
	dir, data = t.TempDir(), t.TempDir()
	pattern := filepath.Join(dir, "*.log")
	a, w := filepath.Join(dir, "a.log"), filepath.Join(dir, "w.log")
	for p, c := range map[string]string{a: numbered("a", 5), w: numbered("w", 5)} {
		if err := os.WriteFile(p, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ig1, _, stop1 := runGlobOn(t, pattern, data)
	if got := ig1.popAll(2 * time.Second); got != 10 {
		t.Fatalf("first run delivered %d lines, want 10", got)
	}
	stop1()
	if err := os.Rename(w, w+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w, []byte(numbered("n", 3)), 0o600); err != nil { // 12 bytes
		t.Fatal(err)
	}
	appendTo(t, w+".1", numbered("tail", 2)) // 14 bytes the first run never read, written after the rotation
	old := time.Now().Add(-10 * time.Second)
	if err := os.Chtimes(w, old, old); err != nil { // w.log made (and written) 10 s before w.log.1's last line
		t.Fatal(err)
	}
	var opens atomic.Int32
	ch := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(ch) }) }
	ig, kill, stop = runGlobKill(t, pattern, data, 5*time.Second, func(c *GlobConfig) {
		c.MaxOpenFiles = 1
		c.CloseInactive = 50 * time.Millisecond
		c.Stream.OpenHook = func() {
			if opens.Add(1) == 1 {
				<-ch // the first stream's open holds the one slot
			}
		}
	}, nil)
	t.Cleanup(release)
	ig.waitFor(t, "w.log's stream, given the old pointer, waiting for the slot", func() bool {
		for _, s := range ig.g.byKey {
			if s.genOwn && s.st == stQueued {
				return true
			}
		}
		return false
	})
	ig.g.mu.Lock()
	ig.g.maxSlots = 0 // nothing starts until the test says so
	ig.g.mu.Unlock()
	release()
	return ig, dir, data, kill, stop
}

// rotateOwnOut rotates w once more while its genOwn stream waits
// (logrotate: w.log.1 to w.log.2, w.log to w.log.1, a new w.log with
// f-lines) and waits for the scan to find the stream's file out of the
// glob.
func (ig *internalGlob) rotateOwnOut(t *testing.T, w string) {
	t.Helper()
	rotateNumbered(t, w, numbered("f", 2))
	ig.waitFor(t, "the scan finding w.log out of the glob", func() bool {
		for _, s := range ig.g.byKey {
			if s.genOwn && s.gone {
				return true
			}
		}
		return false
	})
	time.Sleep(300 * time.Millisecond)
}

// sumLost adds up lost() over runs.
func sumLost(igs ...*internalGlob) (tails, bytes uint64, detail string) {
	for _, ig := range igs {
		t, b, d := ig.lost()
		tails, bytes = tails+t, bytes+b
		if d != "" {
			detail += d + "; "
		}
	}
	return tails, bytes, detail
}

// H. w.log's genOwn stream waits for a slot (maxOpenFiles 1); w.log is
// renamed out of the glob beside its path (mv w.log w.log.old) and the
// writer makes a new w.log (f-lines). The scan finds the own file beside
// the path and keeps the stream's path (leftUnread: "its source finds its
// own file among the later generations" — w.log.old is none). The new
// w.log's stream waits behind it (the epoch barrier of its path). The
// genOwn stream's source reads w.log.1's tail, finds nothing more of its
// own (the file at the path is another one) and stays caught up on
// w.log.1 for rotateWaitMillis; the waiting stream makes preempt stop it
// (gone, caught up, refindable), so it never reaches WaitingForFile, and
// the close handler's ownAfterGone branch, not "ended", keeps s.path at
// w.log and queues it again: started, stopped, queued, round and round.
// w.log.old's 3 lines are never read nor counted and the new w.log's
// lines are never delivered (its barrier never lifts): the feed never
// catches up. The same loop holds for a further logrotate rotation
// (w.log to w.log.1) when the own file's mtime is more than 2 s older
// than the pointer's file's (the later-generation scan skips it). DESIGN
// §10: a file renamed out of the glob is read to its end; a new file at a
// path is published after the previous file there; §2: never lose a line.
// (Passes at b15953d, where the stream followed its file to w.log.old.)
func TestRev21BHOwnFileRenamedOutAndNewFileAtPathStreamLoops(t *testing.T) {
	t.Parallel()
	ig, dir, _, release, _, stop := genOwnHeld(t, nil)
	defer stop()
	ig.g.mu.Lock()
	ig.g.maxSlots = 0 // nothing starts until the test says so
	ig.g.mu.Unlock()
	release()
	w := filepath.Join(dir, "w.log")
	if err := os.Rename(w, w+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w, []byte(numbered("f", 2)), 0o600); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the scan finding w.log out of the glob", func() bool {
		for _, s := range ig.g.byKey {
			if s.genOwn && s.gone {
				return true
			}
		}
		return false
	})
	time.Sleep(300 * time.Millisecond)
	ig.g.mu.Lock()
	ig.g.maxSlots = 1
	ig.g.mu.Unlock()
	got := ig.popLines(6 * time.Second)
	tails, bytes, detail := ig.lost()
	wantLines(t, got, "tail-0", "tail-1", "n-0", "n-1", "n-2", "f-0", "f-1")
	if tails != 0 {
		t.Errorf("lostTails %d lostBytes %d (%q): want nothing lost (w.log.old is beside the path)", tails, bytes, detail)
	}
}

// I. A further logrotate rotation while w.log's genOwn stream waits
// (genOwnOld, rotateOwnOut: the own file to w.log.1, its mtime more
// than 2 s older than the pointer's file's), then a clean stop before the
// stream's turn, and a restart. Close leaves the own file uncounted ("a
// restart finds it only as a generation of its path, under a rotated name
// beside it"), but the restart's later-generation scan (DESIGN §4: mtime
// at or after the pointer's generation's − 2 s) does not take it: the
// n-lines are neither delivered nor counted in either run. DESIGN §2/§4
// "Nothing green over a loss". (Also fails at b15953d: 21a C's fix does
// not cover this name.)
func TestRev21BIOwnFileOlderRenamedOutRotatedThenStopIsLostSilently(t *testing.T) {
	t.Parallel()
	ig, dir, data, _, stop := genOwnOld(t)
	w := filepath.Join(dir, "w.log")
	ig.rotateOwnOut(t, w)
	stop()
	ig3, stop3 := runGlobWith(t, filepath.Join(dir, "*.log"), data, time.Second, nil, nil)
	defer stop3()
	got := ig3.popLines(3 * time.Second)
	tails, bytes, detail := sumLost(ig, ig3)
	readOwn := got["n-0"] == 1 && got["n-1"] == 1 && got["n-2"] == 1
	if !readOwn && bytes < 12 {
		t.Errorf("the n-lines file (12 bytes, renamed out to w.log.1) neither delivered nor counted: delivered at the next start %v, lostTails %d lostBytes %d over both runs (%q)", got, tails, bytes, detail)
	}
	if got["tail-0"] != 1 || got["tail-1"] != 1 || got["f-0"] != 1 || got["f-1"] != 1 {
		t.Errorf("delivered at the next start %v: want tail-0, tail-1, f-0, f-1 once", got)
	}
}

// J. w.log's genOwn stream waits for a slot; w.log is deleted (counted
// whole: ownLost; the stream kept queued to read the pointer's file
// w.log.1 beside the path) and the writer makes a new w.log (f-lines): a
// stream of its own, waiting behind the old one (the path's barrier).
// Before either runs, logrotate rotates again: w.log.1 (the pointer's
// file) to w.log.2, the f-lines file to w.log.1 (its stream follows it
// beside the path: leftUnread), a new w.log (g-lines). The ownLost
// stream's source reads the pointer's file, then "the later generations"
// beside the path — the f-lines file among them (written after the
// pointer's file), which its own stream reads as well: f-0 and f-1 are
// delivered twice (3 of 3). The ownLost source has no own file to stop
// at (Config.ownGone: "the later generations only"), so every generation
// newer than the pointer's file is read, files the glob tracks as streams
// of their own with them. DESIGN §10: each matched file is its own stream
// (a rename keeps the stream); §2: a line is delivered twice only after a
// crash.
func TestRev21BJOwnLostStreamReadsLaterFileOfAnotherStream(t *testing.T) {
	t.Parallel()
	ig, dir, _, release, _, stop := genOwnHeld(t, nil)
	defer stop()
	ig.g.mu.Lock()
	ig.g.maxSlots = 0 // nothing starts until the test says so
	ig.g.mu.Unlock()
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
	tmp := filepath.Join(dir, "w.tmp") // made first: not on w.log's freed inode
	if err := os.WriteFile(tmp, []byte(numbered("f", 2)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(w); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the scan counting w.log (ownLost)", func() bool { return gen.ownLost })
	time.Sleep(50 * time.Millisecond)
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
	ig.waitFor(t, "the f-lines stream found out of the glob", func() bool { return fs.gone })
	time.Sleep(300 * time.Millisecond)
	ig.g.mu.Lock()
	ig.g.maxSlots = 1
	ig.g.mu.Unlock()
	got := ig.popLines(6 * time.Second)
	wantLines(t, got, "tail-0", "tail-1", "f-0", "f-1", "g-0", "g-1")
	if tails, bytes, detail := ig.lost(); tails != 1 || bytes != 12 {
		t.Errorf("lostTails %d lostBytes %d (%q): want 1 and 12 (the deleted w.log)", tails, bytes, detail)
	}
}

// K. Two logrotate rotations while w.log's genOwn stream waits for a slot
// (maxOpenFiles 1), no mtime games: the first moves the pointer's file to
// w.log.2 and the own file (n-lines) to w.log.1 (beside the path under a
// rotated name: the stream keeps its path, its source is to find its own
// file among the later generations) and makes a new w.log (f-lines: a
// stream F of its own, behind the old one at the path); the second moves
// them on to w.log.3 and w.log.2, F's file to w.log.1 (F follows it
// beside the path) and makes a new w.log (g-lines: G, behind them). The
// genOwn stream's source reads w.log.3's tail, w.log.2 (its own file, as
// a later generation) and then w.log.1 — F's file, written later — as a
// later generation too (f-lines delivered by the wrong stream; F, still
// queued, will read them again). Caught up on F's file, it finds nothing
// of its own at its path; its own file is beside it (refindable), so
// preempt stops it for the waiting streams, and the close handler (not
// ended) queues it again at the same path: started, stopped, queued,
// round and round, F and G waiting behind it — the new w.log's g-lines
// are never delivered and the feed never catches up. DESIGN §10: each
// file is one stream, read once (§2: a line twice only after a crash); a
// new file at a path is published after the previous ones there, not
// never; a file renamed out of the glob is read to its end, then closed.
// (At b15953d: no loop, but f-0, f-1 delivered twice — the reading of a
// later stream's file as a generation predates the change.)
func TestRev21BKOwnFileRotatedTwiceWhileWaitingStreamLoops(t *testing.T) {
	t.Parallel()
	ig, dir, _, release, _, stop := genOwnHeld(t, nil)
	defer stop()
	ig.g.mu.Lock()
	ig.g.maxSlots = 0 // nothing starts until the test says so
	ig.g.mu.Unlock()
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
	ig.g.mu.Lock()
	ig.g.maxSlots = 1
	ig.g.mu.Unlock()
	got := ig.popLines(8 * time.Second)
	wantLines(t, got, "tail-0", "tail-1", "n-0", "n-1", "n-2", "f-0", "f-1", "g-0", "g-1")
	if tails, bytes, detail := ig.lost(); tails != 0 {
		t.Errorf("lostTails %d lostBytes %d (%q): want nothing lost (every file is beside the path)", tails, bytes, detail)
	}
}

// L. K's two rotations with two slots (maxOpenFiles 2, no loop): the
// genOwn stream's source reads w.log.3's tail, its own file w.log.2 and
// F's file w.log.1 as later generations; then, ended, the close handler
// follows the own file to its name (w.log.2) and a new source reads it
// again from its start, while F reads its own file too: n-0..n-2 and f-0,
// f-1 are each delivered twice (3 of 3). DESIGN §2: a line is delivered
// twice only after a crash; §10: each file is one stream. (At b15953d the
// n-lines are read once; f-0, f-1 twice already.)
func TestRev21BLOwnFileRotatedTwiceTwoSlotsDeliversTwice(t *testing.T) {
	t.Parallel()
	ig, dir, _, release, _, stop := genOwnHeld(t, nil)
	defer stop()
	ig.g.mu.Lock()
	ig.g.maxSlots = 0 // nothing starts until the test says so
	ig.g.mu.Unlock()
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
	ig.g.mu.Lock()
	ig.g.maxSlots = 2
	ig.g.mu.Unlock()
	got := ig.popLines(8 * time.Second)
	wantLines(t, got, "tail-0", "tail-1", "n-0", "n-1", "n-2", "f-0", "f-1", "g-0", "g-1")
	if tails, bytes, detail := ig.lost(); tails != 0 {
		t.Errorf("lostTails %d lostBytes %d (%q): want nothing lost (every file is beside the path)", tails, bytes, detail)
	}
}
