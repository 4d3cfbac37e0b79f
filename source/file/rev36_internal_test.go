package file

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/internal/fileutil"
)

// CI of 2778d8f (e2e TestRev32AOKDeletedAfterFirstScan): z.log, listed
// unread by the previous run, deleted at once after the restart — after
// the first scan found it in the glob and before the start's unread list
// looked at its first bytes — was counted twice: by countUnreadGone (its
// key in the glob, its first bytes no longer there: "tracked and never
// read when tailfeed stopped, is gone") and by its stream when the glob
// saw it go (neverRead). DESIGN §7: one loss, one ledger entry.

// rev36ListedThenRestart: a.log holds the one slot, b.log waits for its
// first turn, never read; a clean stop lists it (unread.list). The restart
// runs step at each of the first scan's steps (firstScanStep).
func rev36ListedThenRestart(t *testing.T, step func(b string, at int)) (ig *internalGlob, bLines string, stop func()) {
	t.Helper()
	l := rev36Listed(t)
	pre := func(g *Glob) { g.firstScanStep = func(at int) { step(l.b, at) } }
	ig, stop = runGlobWith(t, l.pattern, l.data, 200*time.Millisecond, l.one, pre)
	return ig, l.bLines, stop
}

// rev36ListedRun is what rev36Listed leaves: b.log listed unread.
type rev36ListedRun struct {
	dir, data, a, b, bLines, pattern string
	one                              func(*GlobConfig) // maxOpenFiles 2
}

// rev36Listed: a.log (10,000 lines) holds a slot of two, b.log waits for
// its first turn, never read; a clean stop lists it (unread.list).
func rev36Listed(t *testing.T) rev36ListedRun {
	t.Helper()
	var l rev36ListedRun
	l.dir, l.data, l.a = aLogIn(t, numbered("a", 10000))
	l.b, l.bLines = filepath.Join(l.dir, "b.log"), numbered("b", 3)
	if err := os.WriteFile(l.b, []byte(l.bLines), 0o600); err != nil {
		t.Fatal(err)
	}
	l.pattern = filepath.Join(l.dir, "*.log")
	l.one = func(c *GlobConfig) { c.MaxOpenFiles = 2 }
	ig1, stop1 := runGlobCfg(t, l.pattern, l.data, 200*time.Millisecond, l.one)
	ig1.waitFor(t, "a.log open, b.log waiting for its first turn", func() bool {
		sa, sb := ig1.g.byPath[l.a], ig1.g.byPath[l.b]
		return sa != nil && sa.st == stOpen && sb != nil && sb.st == stQueued && sb.ptrPath == ""
	})
	stop1()
	if tails, _, detail := ig1.lost(); tails != 0 {
		t.Fatalf("first run counted %d lost (%q)", tails, detail)
	}
	if _, err := os.Stat(filepath.Join(ig1.ptrDir, unreadListName)); err != nil {
		t.Fatalf("no unread list after the stop: %v", err)
	}
	return l
}

func TestRev36ListedDeletedInTheFirstScanCountedOnce(t *testing.T) {
	t.Parallel()
	for _, at := range []int{0, 1} {
		t.Run(fmt.Sprintf("step%d", at), func(t *testing.T) {
			t.Parallel()
			ig, bLines, stop := rev36ListedThenRestart(t, func(b string, step int) {
				if step == at {
					os.Remove(b)
				}
			})
			got := ig.popLines(2 * time.Second)
			tails, bytes, detail := ig.lost()
			stop()
			if got["b-0"] != 0 {
				t.Fatalf("b.log deleted before its first open, yet delivered: %v", got["b-0"])
			}
			if tails != 1 || bytes != uint64(len(bLines)) {
				t.Fatalf("b.log (listed, never read) deleted in the first scan: lostTails %d lostBytes %d (%q); want 1 and %d",
					tails, bytes, detail, len(bLines))
			}
		})
	}
}

// The same file renamed out of the glob in those windows: its stream
// follows it and reads it to its end (DESIGN §10), nothing counted.
func TestRev36ListedRenamedOutInTheFirstScanReadNotCounted(t *testing.T) {
	t.Parallel()
	for _, at := range []int{0, 1} {
		t.Run(fmt.Sprintf("step%d", at), func(t *testing.T) {
			t.Parallel()
			ig, _, stop := rev36ListedThenRestart(t, func(b string, step int) {
				if step == at {
					os.Rename(b, b+".1")
				}
			})
			got := ig.popLines(3 * time.Second)
			tails, bytes, detail := ig.lost()
			stop()
			for _, l := range []string{"b-0", "b-1", "b-2"} {
				if got[l] != 1 {
					t.Errorf("%s delivered %d times, want once (%v lost: %d %d %q)", l, got[l], l, tails, bytes, detail)
				}
			}
			if tails != 0 {
				t.Errorf("lostTails %d lostBytes %d (%q): want none", tails, bytes, detail)
			}
		})
	}
}

// CI4 of the thirty-fifth session (e2e TestAud3GOKKill9ExactlyOnceRotationsBounded,
// reproduced in the thirty-sixth): p2.log's generation 4 got a last burst
// of 40 lines, was renamed to p2.log.5 (in the glob) and a new p2.log made;
// the exactlyOnce output held generation 5's first lines before those 40
// (DESIGN §10 "Order": a new file at a path is published after every line
// of the file before it). The barrier (barrierDone) took the old stream's
// CAUGHT_UP for "read to its end", a state its source set before the
// append, which it had not read yet.
//
// Here a.log is read and acknowledged, its stream CAUGHT_UP; its source
// polls once an hour and nothing wakes it (no fsnotify, no rescan), so the
// lines appended to it stay unread: the barrier of its path must not lift.
// Then the rotation (a.log → a.log.1 in the glob, a new a.log) and a
// rescan: every a line before any b line.
func TestRev36BarrierHoldsForAnAppendNotReadYet(t *testing.T) {
	t.Parallel()
	dir, data, a := aLogIn(t, numbered("a", 10))
	quiet := func(c *GlobConfig) {
		c.Stream.Poll, c.Stream.NoNotify = time.Hour, true
		c.ScanInterval = time.Hour
	}
	ig, stop := runGlobCfg(t, filepath.Join(dir, "*.log*"), data, 200*time.Millisecond, quiet)
	defer stop()
	lines, _ := ig.popEpochs(2*time.Second, true)
	if len(lines) != 10 {
		t.Fatalf("first read: %d lines, want 10", len(lines))
	}
	var s *gstream
	ig.waitFor(t, "a.log's stream open, caught up, every line acknowledged", func() bool {
		s = ig.g.byPath[a]
		return s != nil && s.st == stOpen && s.src.State() == CaughtUp && s.sp.Pending() == 0
	})
	if err := rev36Append(a, numbered("late", 5)); err != nil {
		t.Fatal(err)
	}
	ig.g.mu.Lock()
	st, done := s.src.State(), ig.g.barrierDone(s)
	ig.g.mu.Unlock()
	if st != CaughtUp {
		t.Fatalf("a.log's source woke up (%v): the case needs it asleep", st)
	}
	if done {
		t.Errorf("a.log's stream CAUGHT_UP with 5 appended lines unread: barrierDone true, want false (a new file at its path would be published first)")
	}
	if err := os.Rename(a, a+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a, []byte(numbered("b", 5)), 0o600); err != nil {
		t.Fatal(err)
	}
	ig.g.scanDue.Store(true)
	got, _ := ig.popEpochs(3*time.Second, true)
	want := append(rev36Lines(numbered("late", 5)), rev36Lines(numbered("b", 5))...)
	if !slices.Equal(got, want) {
		t.Errorf("after the rotation: delivered %q, want %q (a.log's appended lines, then the new a.log's)", got, want)
	}
}

// The kill -9 rotation soak under load (thirty-sixth session: 6 of 160
// runs beside three more and two spinning processes): a whole generation
// twice in the exactlyOnce output. The restart's first scan walked the
// directory as the application rotated (p1.log → p1.log.5, in the glob,
// and a new p1.log): the directory read before the rename, p1.log's stat
// after it — the pointer's file was in no list. adoptByPath gave its
// pointer to the new p1.log, whose source read p1.log.5 beside the path
// from the pointer's offset; the next look found p1.log.5 in the glob, new
// to it, and read it again from its start under a new epoch.
//
// Here the start's first walk's hook does that rotation and gives the list
// what such a walk gives (a.log with the new file's identity and birth, no
// a.log.1). a.log's 10 lines were read and committed by the first run, 5
// more appended while stopped: the restart delivers those 5, then the new
// a.log's, each once — the start walks again, the new a.log born after its
// first walk began (where the file system tells births: not told, the
// case is skipped).
func TestRev36WalkRacingARotationReadsThePointersFileOnce(t *testing.T) {
	t.Parallel()
	_, data, a, pattern := rev36ReadThenAppend(t)
	hook := rev36RotateInWalk(t, a, numbered("b", 5))
	if birthTimePath(a).IsZero() {
		t.Skip("this file system tells no birth times: a walk racing a rotation is not seen (README)")
	}
	rev36RestartReadsTailThenNew(t, "first walk raced a rotation", pattern, data, func(g *Glob) { g.startWalk = hook })
}

// rev36RestartReadsTailThenNew restarts the glob of rev36ReadThenAppend
// with pre and wants a.log.1's 5 lines past the pointer, then the new
// a.log's 5 b lines, each once, nothing counted lost.
func rev36RestartReadsTailThenNew(t *testing.T, what, pattern, data string, pre func(*Glob)) {
	t.Helper()
	ig, stop := runGlobWith(t, pattern, data, time.Second, nil, pre)
	defer stop()
	got, _ := ig.popEpochs(3*time.Second, true)
	tails, bytes, detail := ig.lost()
	want := append(rev36Lines(numbered("a", 15))[10:], rev36Lines(numbered("b", 5))...)
	if !slices.Equal(got, want) || tails != 0 {
		t.Errorf("restart whose %s: delivered %q, lostTails %d lostBytes %d (%q); want %q (a.log.1's lines past the pointer, then the new a.log's, once each), nothing lost",
			what, got, tails, bytes, detail, want)
	}
}

// The soak again, after the two fixes above (4 of 160 runs): a
// generation's last burst after the next generation's first lines, its
// stream closed (for a slot or inactivity) when the burst and the rotation
// came. One look found both: the new p2.log first (it sorts before
// p2.log.6), its path's stream closed with nothing owed — taken for done,
// so the new file waited for nothing — then p2.log.6, grown: its stream
// queued again, beside the new one.
//
// Here a.log is read, acknowledged and its stream closed (closeInactive);
// the glob has no watcher and looks every 200 ms, and its walk's hook
// appends to a.log, renames it a.log.1 and makes a new a.log between two
// looks: the next one finds a.log (new) before a.log.1 (grown). One file
// open at a time (maxOpenFiles 1), so the queue's order shows.
func TestRev36ClosedStreamGrownAndRotatedInOneLookKeepsOrder(t *testing.T) {
	t.Parallel()
	dir, data, a := aLogIn(t, numbered("a", 10))
	var armed, fired atomic.Bool
	hook := rev36Once(t, &armed, &fired,
		func() error { return rev36Append(a, numbered("late", 5)) },
		func() error { return os.Rename(a, a+".1") },
		func() error { return os.WriteFile(a, []byte(numbered("b", 5)), 0o600) },
	)
	set := func(c *GlobConfig) {
		c.Stream.NoNotify = true
		c.ScanInterval = 200 * time.Millisecond
		c.CloseInactive = 50 * time.Millisecond
		c.MaxOpenFiles = 1 // one at a time: the queue's order decides, not a race
	}
	ig, stop := runGlobWith(t, filepath.Join(dir, "*.log*"), data, time.Second, set, func(g *Glob) { g.afterWalk = hook })
	defer stop()
	if lines, _ := ig.popEpochs(time.Second, true); len(lines) != 10 {
		t.Fatalf("first read: %d lines, want 10", len(lines))
	}
	ig.waitFor(t, "a.log's stream closed, nothing owed", func() bool {
		s := ig.g.byPath[a]
		return s != nil && s.st == stClosed && s.owe == nil
	})
	armed.Store(true)
	got, _ := ig.popEpochs(3*time.Second, true)
	if !fired.Load() {
		t.Fatal("no look after the stream closed")
	}
	want := append(rev36Lines(numbered("late", 5)), rev36Lines(numbered("b", 5))...)
	if !slices.Equal(got, want) {
		t.Errorf("delivered %q, want %q (a.log's last lines, then the new a.log's)", got, want)
	}
}

// The soak once more (a variant of the walk race above): the restart's
// first walk found neither file — a.log's name read before the rename, its
// stat in the moment between the rename and the new file's creation. The
// pointer's file was counted gone while stopped (a false lostTails) and
// read again from its start when the next look found it in the glob.
//
// Here the first walk runs with a.log moved away (to another directory:
// found nowhere), and the rotation completes before the next walk (a.log.1,
// a new a.log). The
// start walks again while a pointer's file is missing: a.log.1's 5 lines
// past the pointer, then the new a.log's, once each, nothing counted.
func TestRev36WalkMissingThePointersFileWalksAgain(t *testing.T) {
	t.Parallel()
	_, data, a, pattern := rev36ReadThenAppend(t)
	walks, away := 0, filepath.Join(t.TempDir(), "a.tmp") // (not beside the path: not found there either)
	hook := func() {
		walks++
		switch walks {
		case 1:
			if err := os.Rename(a, away); err != nil {
				t.Error(err)
			}
		case 2:
			if err := os.Rename(away, a+".1"); err != nil {
				t.Error(err)
			}
			if err := os.WriteFile(a, []byte(numbered("b", 5)), 0o600); err != nil {
				t.Error(err)
			}
		}
	}
	rev36RestartReadsTailThenNew(t, "first walk missed the pointer's file", pattern, data, func(g *Glob) { g.beforeWalk = hook })
}

// And once more (4 of 160 runs, after the fixes above): a generation
// published whole before the one before it. Two rotations between two
// looks (the daemon slow under load): p1.log renamed p1.log.7 and a new
// p1.log made, while p1.log's stream read what is p1.log.6 now. The look
// found p1.log new (waiting for p1.log's previous stream) and p1.log.7 new
// under a name no stream had: it waited for nothing.
//
// Here a.log's stream is open (one slot: maxOpenFiles 1); between two
// looks a.log becomes a.log.1, a new a.log gets g1 lines and becomes
// a.log.2, and another new a.log gets g2 lines: g1's lines before g2's.
func TestRev36TwoRotationsBetweenLooksKeepOrder(t *testing.T) {
	t.Parallel()
	dir, data, a := aLogIn(t, numbered("a", 10))
	var armed, fired atomic.Bool
	hook := rev36Once(t, &armed, &fired,
		func() error { return os.Rename(a, a+".1") },
		func() error { return os.WriteFile(a, []byte(numbered("g1", 5)), 0o600) },
		func() error { time.Sleep(20 * time.Millisecond); return os.Rename(a, a+".2") },
		func() error { return os.WriteFile(a, []byte(numbered("g2", 5)), 0o600) },
	)
	set := func(c *GlobConfig) {
		c.Stream.NoNotify = true
		c.ScanInterval = 200 * time.Millisecond
		c.MaxOpenFiles = 1
	}
	ig, stop := runGlobWith(t, filepath.Join(dir, "*.log*"), data, time.Second, set, func(g *Glob) { g.afterWalk = hook })
	defer stop()
	if lines, _ := ig.popEpochs(time.Second, true); len(lines) != 10 {
		t.Fatalf("first read: %d lines, want 10", len(lines))
	}
	armed.Store(true)
	got, _ := ig.popEpochs(3*time.Second, true)
	if !fired.Load() {
		t.Fatal("no look after the first read")
	}
	want := append(rev36Lines(numbered("g1", 5)), rev36Lines(numbered("g2", 5))...)
	if !slices.Equal(got, want) {
		t.Errorf("delivered %q, want %q (a.log.2's lines, then the new a.log's)", got, want)
	}
}

// The soak's restarts (3 of the 6 failures of its fourth round): a
// generation with a pointer of its own made where it is now (p1.log.9,
// found there new by a run killed before it read it) read after the newer
// generations beside it at the next start — restartOrder ordered only the
// new ones (no pointer) and only for a path some stream was away from.
//
// Here a.log.1 is read by a first run (its own pointer, first matched as
// a.log.1); while stopped it gets 5 more lines, then a.log.2 and a.log
// are made, in that order. The restart (one file open at a time) reads
// a.log.1's 5 lines, then a.log.2's, then a.log's.
func TestRev36RestartOrdersAGenerationWithItsOwnPointer(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	a := filepath.Join(dir, "a.log")
	if err := os.WriteFile(a+".1", []byte(numbered("g1", 10)), 0o600); err != nil {
		t.Fatal(err)
	}
	pattern := filepath.Join(dir, "*.log*")
	one := func(c *GlobConfig) { c.MaxOpenFiles = 1 }
	ig1, stop1 := runGlobCfg(t, pattern, data, time.Second, one)
	if lines, _ := ig1.popEpochs(2*time.Second, true); len(lines) != 10 {
		t.Fatalf("first run: %d lines, want 10", len(lines))
	}
	stop1()
	f, err := os.OpenFile(a+".1", os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(strings.Join(strings.Split(numbered("g1", 15), "\n")[10:], "\n"))
	f.Close()
	time.Sleep(30 * time.Millisecond)
	if err := os.WriteFile(a+".2", []byte(numbered("g2", 5)), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond)
	if err := os.WriteFile(a, []byte(numbered("g3", 5)), 0o600); err != nil {
		t.Fatal(err)
	}
	ig, stop := runGlobCfg(t, pattern, data, time.Second, one)
	defer stop()
	got, _ := ig.popEpochs(3*time.Second, true)
	var want []string
	want = append(want, rev36Lines(numbered("g1", 15))[10:]...)
	want = append(want, rev36Lines(numbered("g2", 5))...)
	want = append(want, rev36Lines(numbered("g3", 5))...)
	if !slices.Equal(got, want) {
		t.Errorf("restart: delivered %q, want %q (oldest generation first, the file at the path last)", got, want)
	}
}

// The same walk race for a file of the previous run's unread list (the
// soak: "p1.log, tracked and never read when tailfeed stopped, is gone",
// its bytes read all the same): the start walks again while a listed file
// is missing too.
func TestRev36WalkMissingAListedFileWalksAgain(t *testing.T) {
	t.Parallel()
	l := rev36Listed(t)
	b, data, pattern, one := l.b, l.data, l.pattern, l.one
	walks, away := 0, filepath.Join(t.TempDir(), "b.tmp")
	hook := func() {
		walks++
		var err error
		switch walks {
		case 1:
			err = os.Rename(b, away)
		case 2:
			err = os.Rename(away, b)
		}
		if err != nil {
			t.Error(err)
		}
	}
	ig, stop := runGlobWith(t, pattern, data, 200*time.Millisecond, one, func(g *Glob) { g.beforeWalk = hook })
	got := ig.popLines(3 * time.Second)
	tails, bytes, detail := ig.lost()
	stop()
	if got["b-0"] != 1 || got["b-2"] != 1 || tails != 0 {
		t.Errorf("b.log (listed) missed by the first walk, back at its path by the next: b-0 ×%d b-2 ×%d, lostTails %d lostBytes %d (%q); want once each, nothing lost",
			got["b-0"], got["b-2"], tails, bytes, detail)
	}
}

// The walk race with no pointer to miss (a first start, or a file never
// read): a.log is rotated as the start's first walk runs, which lists the
// new a.log (born after the walk began) and not a.log.1. Only the birth
// time tells: the start walks again and orders a.log.1 before a.log.
func TestRev36WalkRacingARotationSeenByABirth(t *testing.T) {
	t.Parallel()
	dir, data, a := aLogIn(t, numbered("a", 5))
	if birthTimePath(a).IsZero() {
		t.Skip("this file system tells no birth times: a walk racing a rotation is not seen (README)")
	}
	time.Sleep(20 * time.Millisecond) // a.log born before the walk (the margin is 10 ms)
	hook := rev36RotateInWalk(t, a, numbered("b", 5))
	one := func(c *GlobConfig) { c.MaxOpenFiles = 1 }
	ig, stop := runGlobWith(t, filepath.Join(dir, "*.log*"), data, time.Second, one, func(g *Glob) { g.startWalk = hook })
	defer stop()
	got, _ := ig.popEpochs(3*time.Second, true)
	want := append(rev36Lines(numbered("a", 5)), rev36Lines(numbered("b", 5))...)
	if !slices.Equal(got, want) {
		t.Errorf("first start whose walk raced a rotation: delivered %q, want %q (a.log.1's, then the new a.log's)", got, want)
	}
}

// Review 36 E: the one-look case above spread over two looks. a.log's
// stream is closed with nothing owed; look 1 sees only the rename (a.log
// to a.log.1, in the glob); then its writer appends through its
// descriptor and makes the new a.log; look 2 finds both. The path's
// vacated entry was dropped at look 1 (closed, nothing owed), so the new
// a.log waited for nothing.
func TestRev36ClosedStreamRotatedThenGrownTwoLooksKeepsOrder(t *testing.T) {
	t.Parallel()
	dir, data, a := aLogIn(t, numbered("a", 10))
	var armed atomic.Bool
	var n atomic.Int32
	hook := func([]found) {
		if !armed.Load() {
			return
		}
		switch n.Add(1) {
		case 1:
			if err := os.Rename(a, a+".1"); err != nil {
				t.Error(err)
			}
		case 2:
			f, err := os.OpenFile(a+".1", os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Error(err)
				return
			}
			f.WriteString(numbered("late", 5))
			f.Close()
			if err := os.WriteFile(a, []byte(numbered("b", 5)), 0o600); err != nil {
				t.Error(err)
			}
		}
	}
	set := func(c *GlobConfig) {
		c.Stream.NoNotify = true
		c.ScanInterval = 200 * time.Millisecond
		c.CloseInactive = 50 * time.Millisecond
		c.MaxOpenFiles = 1
	}
	ig, stop := runGlobWith(t, filepath.Join(dir, "*.log*"), data, time.Second, set, func(g *Glob) { g.afterWalk = hook })
	defer stop()
	if lines, _ := ig.popEpochs(time.Second, true); len(lines) != 10 {
		t.Fatalf("first read: %d lines, want 10", len(lines))
	}
	ig.waitFor(t, "a.log's stream closed, nothing owed", func() bool {
		s := ig.g.byPath[a]
		return s != nil && s.st == stClosed && s.owe == nil
	})
	armed.Store(true)
	got, _ := ig.popEpochs(3*time.Second, true)
	want := append(rev36Lines(numbered("late", 5)), rev36Lines(numbered("b", 5))...)
	if !slices.Equal(got, want) {
		t.Errorf("delivered %q, want %q", got, want)
	}
}

// Review 36b 1: logrotate's numbered shift, twice between two looks.
// a.log.1 (y, read, closed) and a.log (a, read, closed); a.log gets 5 late
// lines, then a.log.1 → a.log.2, a.log → a.log.1, a new a.log (m), and
// again: a.log.2 → a.log.3, a.log.1 → a.log.2, a.log → a.log.1, a new
// a.log (n). The look finds m's file new at a.log.1, where y's closed,
// finished stream was: its barrier was y's (lifted at once), so m went
// before a's late lines. Order: late, m, n.
func TestRev36NumberedShiftTwiceKeepsOrder(t *testing.T) {
	t.Parallel()
	dir, data, a := aLogIn(t, numbered("a", 10))
	if err := os.WriteFile(a+".1", []byte(numbered("y", 5)), 0o600); err != nil {
		t.Fatal(err)
	}
	var armed, fired atomic.Bool
	mv := func(from, to string) func() error { return func() error { return os.Rename(from, to) } }
	hook := rev36Once(t, &armed, &fired,
		func() error { return rev36Append(a, numbered("late", 5)) },
		mv(a+".1", a+".2"), mv(a, a+".1"),
		func() error { return os.WriteFile(a, []byte(numbered("m", 5)), 0o600) },
		func() error { time.Sleep(20 * time.Millisecond); return nil },
		mv(a+".2", a+".3"), mv(a+".1", a+".2"), mv(a, a+".1"),
		func() error { return os.WriteFile(a, []byte(numbered("n", 5)), 0o600) },
	)
	set := func(c *GlobConfig) {
		c.Stream.NoNotify = true
		c.ScanInterval = 200 * time.Millisecond
		c.CloseInactive = 50 * time.Millisecond
		c.MaxOpenFiles = 1
	}
	ig, stop := runGlobWith(t, filepath.Join(dir, "*.log*"), data, time.Second, set, func(g *Glob) { g.afterWalk = hook })
	defer stop()
	if lines, _ := ig.popEpochs(2*time.Second, true); len(lines) != 15 {
		t.Fatalf("first read: %d lines, want 15", len(lines))
	}
	ig.waitFor(t, "both streams closed, nothing owed", func() bool {
		s, y := ig.g.byPath[a], ig.g.byPath[a+".1"]
		return s != nil && y != nil && s.st == stClosed && s.owe == nil && y.st == stClosed && y.owe == nil
	})
	armed.Store(true)
	got, _ := ig.popEpochs(3*time.Second, true)
	var want []string
	for _, p := range []string{"late", "m", "n"} {
		want = append(want, strings.Split(strings.TrimSuffix(numbered(p, 5), "\n"), "\n")...)
	}
	if !slices.Equal(got, want) {
		t.Errorf("delivered %q, want %q", got, want)
	}
}

// Review 36b 2: the new file at the path empty at the look (logrotate's
// create): runningOrder skipped it, so the generation found under a.log's
// rotated name waited for nothing. It waits for a.log's previous stream,
// and the new a.log, written later, for it.
func TestRev36EmptyNewFileStillOrdersTheGenerations(t *testing.T) {
	t.Parallel()
	dir, data, a := aLogIn(t, numbered("a", 10))
	var armed, fired atomic.Bool
	hook := rev36Once(t, &armed, &fired,
		func() error { return os.Rename(a, a+".1") },
		func() error { return os.WriteFile(a, []byte(numbered("g1", 5)), 0o600) },
		func() error { time.Sleep(20 * time.Millisecond); return os.Rename(a, a+".2") },
		func() error { return os.WriteFile(a, nil, 0o600) },
	)
	set := func(c *GlobConfig) {
		c.Stream.NoNotify = true
		c.ScanInterval = 200 * time.Millisecond
	}
	var old, g1, n, g1After, nAfter *gstream
	var seen atomic.Bool
	order := func(made []*gstream) { // (under mu, before the look schedules)
		if !fired.Load() || seen.Load() || !slices.ContainsFunc(made, func(s *gstream) bool { return s.path == a+".2" }) {
			return // (the look after the hook's)
		}
		for _, s := range made {
			switch s.path {
			case a + ".2":
				g1, g1After = s, s.after
			case a:
				n, nAfter = s, s.after
			}
		}
		seen.Store(true)
	}
	ig, stop := runGlobWith(t, filepath.Join(dir, "*.log*"), data, time.Second, set, func(g *Glob) { g.afterWalk, g.afterOrder = hook, order })
	defer stop()
	if lines, _ := ig.popEpochs(time.Second, true); len(lines) != 10 {
		t.Fatalf("first read: %d lines, want 10", len(lines))
	}
	ig.waitFor(t, "a.log's stream", func() bool { old = ig.g.byPath[a]; return old != nil })
	armed.Store(true)
	ig.waitFor(t, "the look that finds the rotations", func() bool { return seen.Load() })
	if g1 == nil || n == nil {
		t.Fatalf("the look made no stream for a.log.2 (%v) or the new a.log (%v)", g1 != nil, n != nil)
	}
	if g1After != old || nAfter != g1 {
		t.Errorf("a.log.2 (g1) waits for %p, want a.log's previous stream %p; the new empty a.log waits for %p, want a.log.2's %p", g1After, old, nAfter, g1)
	}
}

// Review 36b 3: generations named with a '-' (messages-20261201 for
// messages, a default rotated name) were looked for only among names
// cut at their first '.': not ordered. A first start (one file open at a
// time) reads messages-20261201 before messages.
func TestRev36DashNamedGenerationOrderedAtStart(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	m := filepath.Join(dir, "messages")
	if err := os.WriteFile(m+"-20261201", []byte(numbered("old", 5)), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond)
	if err := os.WriteFile(m, []byte(numbered("new", 5)), 0o600); err != nil {
		t.Fatal(err)
	}
	one := func(c *GlobConfig) { c.MaxOpenFiles = 1 }
	ig, stop := runGlobCfg(t, filepath.Join(dir, "messages*"), data, time.Second, one)
	defer stop()
	got, _ := ig.popEpochs(2*time.Second, true)
	want := append(rev36Lines(numbered("old", 5)), rev36Lines(numbered("new", 5))...)
	if !slices.Equal(got, want) {
		t.Errorf("delivered %q, want %q (the generation first)", got, want)
	}
}

// rev36Lines is text's lines, without their terminators.
func rev36Lines(text string) []string { return strings.Split(strings.TrimSuffix(text, "\n"), "\n") }

// rev36ReadThenAppend: a.log's 10 lines read and committed by a first run
// (glob *.log*), then 5 more appended while it is stopped.
func rev36ReadThenAppend(t *testing.T) (dir, data, a, pattern string) {
	t.Helper()
	dir, data, a = aLogIn(t, numbered("a", 10))
	pattern = filepath.Join(dir, "*.log*")
	ig1, stop1 := runGlobCfg(t, pattern, data, time.Second, nil)
	if lines, _ := ig1.popEpochs(2*time.Second, true); len(lines) != 10 {
		t.Fatalf("first run: %d lines, want 10", len(lines))
	}
	stop1()
	if err := rev36Append(a, strings.Join(rev36Lines(numbered("a", 15))[10:], "\n")+"\n"); err != nil {
		t.Fatal(err)
	}
	return dir, data, a, pattern
}

// rev36RotateInWalk is a walk hook (startWalk) that, once, rotates a to
// a.1 and writes content in a new a, and gives the list what a walk
// racing that rotation gives: a with the new file's identity and birth,
// no a.1.
func rev36RotateInWalk(t *testing.T, a, content string) func([]found) {
	var once bool
	return func(list []found) {
		if once {
			return
		}
		once = true
		if err := os.Rename(a, a+".1"); err != nil {
			t.Error(err)
			return
		}
		if err := os.WriteFile(a, []byte(content), 0o600); err != nil {
			t.Error(err)
			return
		}
		fh, err := os.Open(a)
		if err != nil {
			t.Error(err)
			return
		}
		defer fh.Close()
		st, _ := fh.Stat()
		dev, ino, _ := fileutil.DevIno(fh)
		for i := range list {
			if list[i].path == a {
				list[i].dev, list[i].ino, list[i].size, list[i].mod = dev, ino, st.Size(), st.ModTime().UnixNano()
				list[i].born = max(birthTimePath(a).UnixNano(), 0)
			}
		}
	}
}

// rev36Once is a walk hook (afterWalk) that runs steps, in order, at the
// first walk after armed (fired then; a failed step ends it).
func rev36Once(t *testing.T, armed, fired *atomic.Bool, steps ...func() error) func([]found) {
	return func([]found) {
		if !armed.Load() || fired.Swap(true) {
			return
		}
		for _, step := range steps {
			if err := step(); err != nil {
				t.Error(err)
				return
			}
		}
	}
}

// rev36Append appends text to path through a descriptor of its own.
func rev36Append(path, text string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteString(text)
	return err
}
