package file

import (
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// Review of 78ea949, race 2 (genOwn); parked from the thirteenth session to
// the twenty-first. While tailfeed was stopped, w.log was renamed to w.log.1
// (out of the glob) with two lines its stream had not read, and a new w.log
// written. At the start the new w.log takes the old pointer (adoptByPath,
// genOwn: its source is to read w.log.1's tail first, then its own file).
// While that stream waits for a slot (maxOpenFiles 1), the new w.log goes.
// The scan found the waiting stream gone and, the pointer not naming
// w.log's key, took it for "unread" (neverRead): it counted from the
// pointer's offset — an offset in w.log.1, not in w.log — to w.log's size,
// which is less, so nothing was counted, and the stream was taken off the
// queue. w.log.1's two lines (beside the path, still there) were not read
// and w.log's three lines, deleted unread, never counted: lostTails 0.
//
// DESIGN §4/§10: the generation a pointer names is read before the file at
// the path ("at a start ... a pointer's generation, then the later
// generations, before the file at the path"); "A file that disappears with
// an unread tail counts in lostTails"; §2: never lose a line silently.

// genOwnWaiting runs the scenario up to the restart with w.log's stream
// (given the old pointer) queued behind a held slot, calls gone (the
// change made to the files while it waits) and lets the slot go. It
// returns the restarted glob, the directory and its data directory.
func genOwnWaiting(t *testing.T, gone func(dir, w string)) (ig *internalGlob, dir, data string, stop func()) {
	t.Helper()
	return genOwnWaitingAfter(t, nil, gone)
}

// genOwnStopped writes a.log and w.log (5 lines each), reads them in a
// first run and stops it; then w.log gets tail lines ("tail-0" …) that run
// never read and is rotated to w.log.1 while stopped, and a new w.log holds
// three n-lines (12 bytes): at the next start the new w.log takes the old
// pointer (adoptByPath, genOwn).
func genOwnStopped(t *testing.T, tail int) (dir, data, a, w string) {
	t.Helper()
	dir, data = t.TempDir(), t.TempDir()
	a, w = filepath.Join(dir, "a.log"), filepath.Join(dir, "w.log")
	for p, c := range map[string]string{a: numbered("a", 5), w: numbered("w", 5)} {
		if err := os.WriteFile(p, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ig1, _, stop1 := runGlobOn(t, filepath.Join(dir, "*.log"), data)
	if got := ig1.popAll(2 * time.Second); got != 10 {
		t.Fatalf("first run delivered %d lines, want 10", got)
	}
	stop1()
	appendTo(t, w, numbered("tail", tail))
	if err := os.Rename(w, w+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w, []byte(numbered("n", 3)), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, data, a, w
}

// genOwnWaitingAfter is genOwnWaiting with stopped run on w.log's path
// after the rotation made while tailfeed was stopped.
func genOwnWaitingAfter(t *testing.T, stopped func(w string), gone func(dir, w string)) (ig *internalGlob, dir, data string, stop func()) {
	t.Helper()
	dir, data, _, w := genOwnStopped(t, 2)
	pattern := filepath.Join(dir, "*.log")
	if stopped != nil {
		stopped(w)
	}
	var opens atomic.Int32
	release := make(chan struct{})
	ig, stop = runGlobWith(t, pattern, data, 5*time.Second, func(c *GlobConfig) {
		c.MaxOpenFiles = 1
		c.CloseInactive = 50 * time.Millisecond
		c.Stream.OpenHook = func() {
			if opens.Add(1) == 1 {
				<-release // the first stream's open holds the one slot
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
	gone(dir, w)
	time.Sleep(400 * time.Millisecond) // scans (every 100 ms) see w.log gone
	close(release)
	return ig, dir, data, stop
}

// wantLines fails unless got holds exactly the lines of want, once each.
func wantLines(t *testing.T, got map[string]int, want ...string) {
	t.Helper()
	n := 0
	for _, l := range want {
		if got[l] != 1 {
			t.Errorf("line %q delivered %d times, want once (all: %v)", l, got[l], got)
		}
		n += got[l]
	}
	total := 0
	for _, c := range got {
		total += c
	}
	if total != n {
		t.Errorf("delivered %v, want only %q", got, want)
	}
}

// The waiting file deleted: w.log.1's tail is read (it is beside the
// path), w.log's 12 bytes counted once; a restart afterwards reads and
// counts nothing more.
func TestRev13AGenOwnWaitingFileDeletedLosesOldTailSilently(t *testing.T) {
	t.Parallel()
	ig, dir, data, stop := genOwnWaiting(t, func(_, w string) {
		if err := os.Remove(w); err != nil {
			t.Fatal(err)
		}
	})
	wantLines(t, ig.popLines(3*time.Second), "tail-0", "tail-1")
	tails, bytes, detail := ig.lost()
	if tails != 1 || bytes != 12 {
		t.Errorf("lostTails %d lostBytes %d (%q): want 1 and 12 (w.log's three lines, deleted unread)", tails, bytes, detail)
	}
	stop()
	ig3, stop3 := runGlobWith(t, filepath.Join(dir, "*.log"), data, time.Second, nil, nil)
	defer stop3()
	wantLines(t, ig3.popLines(time.Second))
	if tails, bytes, detail := ig3.lost(); tails != 0 {
		t.Errorf("the next start: lostTails %d lostBytes %d (%q): want nothing (w.log.1 was read to its end, w.log counted)", tails, bytes, detail)
	}
}

// Both files deleted: the pointer's tail and w.log are each counted once
// (lostTails 2); the bytes are w.log's 12 — w.log.1, never matched by the
// glob, was gone before anything looked at its size.
func TestRev13AGenOwnWaitingBothDeletedCountsBoth(t *testing.T) {
	t.Parallel()
	ig, _, _, stop := genOwnWaiting(t, func(_, w string) {
		for _, p := range []string{w, w + ".1"} {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}
	})
	defer stop()
	wantLines(t, ig.popLines(3*time.Second))
	tails, bytes, detail := ig.lost()
	if tails != 2 || bytes != 12 {
		t.Errorf("lostTails %d lostBytes %d (%q): want 2 and 12 (w.log.1's unread tail, its size unknown, and w.log)", tails, bytes, detail)
	}
}

// The waiting file renamed out of the glob beside its path: nothing lost,
// the pointer's tail first, then the file where it went.
func TestRev13AGenOwnWaitingFileRenamedOutIsRead(t *testing.T) {
	t.Parallel()
	ig, _, _, stop := genOwnWaiting(t, func(_, w string) {
		if err := os.Rename(w, w+".0"); err != nil {
			t.Fatal(err)
		}
	})
	defer stop()
	wantLines(t, ig.popLines(3*time.Second), "tail-0", "tail-1", "n-0", "n-1", "n-2")
	if tails, bytes, detail := ig.lost(); tails != 0 {
		t.Errorf("lostTails %d lostBytes %d (%q): want nothing lost", tails, bytes, detail)
	}
}

// The same restart with w.log's stream free to start at once, and w.log
// deleted as its source opens (before a scan sees it gone): the source
// reads w.log.1's tail (the pointer's file, beside the path) and finds no
// file of its own to read next. w.log's 12 bytes are counted once when the
// stream closes — not let go as read (the pointer names w.log.1, so the
// stream is no longer "unread") — and a restart counts nothing more.
func TestRev13AGenOwnFileGoneAsItsSourceOpensIsCounted(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	pattern := filepath.Join(dir, "*.log")
	w := filepath.Join(dir, "w.log")
	if err := os.WriteFile(w, []byte(numbered("w", 5)), 0o600); err != nil {
		t.Fatal(err)
	}
	ig1, _, stop1 := runGlobOn(t, pattern, data)
	if got := ig1.popAll(2 * time.Second); got != 5 {
		t.Fatalf("first run delivered %d lines, want 5", got)
	}
	stop1()
	appendTo(t, w, numbered("tail", 2))
	if err := os.Rename(w, w+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w, []byte(numbered("n", 3)), 0o600); err != nil {
		t.Fatal(err)
	}
	var once atomic.Bool
	ig, stop := runGlobWith(t, pattern, data, 5*time.Second, func(c *GlobConfig) {
		c.Stream.OpenHook = func() {
			if once.CompareAndSwap(false, true) {
				if err := os.Remove(w); err != nil {
					t.Error(err)
				}
			}
		}
	}, nil)
	wantLines(t, ig.popLines(3*time.Second), "tail-0", "tail-1")
	tails, bytes, detail := ig.lost()
	if !once.Load() {
		t.Fatal("no source opened")
	}
	if tails != 1 || bytes != 12 {
		t.Errorf("lostTails %d lostBytes %d (%q): want 1 and 12 (w.log's three lines, deleted unread)", tails, bytes, detail)
	}
	stop()
	ig3, stop3 := runGlobWith(t, pattern, data, time.Second, nil, nil)
	defer stop3()
	wantLines(t, ig3.popLines(time.Second))
	if tails, bytes, detail := ig3.lost(); tails != 0 {
		t.Errorf("the next start: lostTails %d lostBytes %d (%q): want nothing", tails, bytes, detail)
	}
}

// rotateNumbered shifts w's numbered generations up by one (w.log.1 to
// w.log.2, …) and renames w to w.log.1, as logrotate does, then makes a new
// w holding body.
func rotateNumbered(t *testing.T, w, body string) {
	t.Helper()
	for i := 8; i >= 1; i-- {
		if _, err := os.Stat(fmt.Sprintf("%s.%d", w, i)); err == nil {
			if err := os.Rename(fmt.Sprintf("%s.%d", w, i), fmt.Sprintf("%s.%d", w, i+1)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.Rename(w, w+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Rotated twice while stopped (the pointer's file w.log.2, a later
// generation w.log.1 with m-lines, the new w.log), and once more while
// w.log's stream waits: its own file is w.log.1 then, beside the path,
// with the pointer's file at w.log.3 and the later generation at w.log.2.
// Every line once, nothing lost: the stream reads the pointer's tail, the
// generation after it and its own file (followed to its new name, its
// source looked for generations beside w.log.1 and never read the m-lines).
func TestRev13AGenOwnWaitingFileRotatedAgainReadsEveryGeneration(t *testing.T) {
	t.Parallel()
	ig, _, _, stop := genOwnWaitingAfter(t, func(w string) {
		// A second rotation while stopped: the pointer's file to
		// w.log.2, a generation with m-lines at w.log.1, the n-lines
		// file (made again, last) at w.log.
		if err := os.Remove(w); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(w+".1", w+".2"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
		if err := os.WriteFile(w+".1", []byte(numbered("m", 3)), 0o600); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
		if err := os.WriteFile(w, []byte(numbered("n", 3)), 0o600); err != nil {
			t.Fatal(err)
		}
	}, func(_, w string) {
		time.Sleep(20 * time.Millisecond)
		rotateNumbered(t, w, numbered("f4", 2))
	})
	defer stop()
	wantLines(t, ig.popLines(4*time.Second), "tail-0", "tail-1", "m-0", "m-1", "m-2", "n-0", "n-1", "n-2", "f4-0", "f4-1")
	if tails, bytes, detail := ig.lost(); tails != 0 {
		t.Errorf("lostTails %d lostBytes %d (%q): want nothing lost", tails, bytes, detail)
	}
}
