package file

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Audit 7 C, a silent loss found again in the eighteenth session (kept
// data directory of a failing run, fast renames + kills + reloads): a
// stream given an older pointer at a start (its own file at the path, the
// pointer's file beside it) was preempted before it read its own file;
// that file was rotated out of the glob and the new file at the path got a
// pointer of its own; at the next start the older pointer's file, found
// beside the path, was read from its pointer to its end and the newer
// pointer's source from its own file on: the generation between them, on
// disk and named by no pointer, was read by nobody, lossless true. Here
// the same state is made without the race: between two starts the older
// pointer's file is renamed within the glob (it keeps its pointer), a
// generation of the path is written beside it, then the new file at the
// path (a pointer of its own); at the next start the older file is out of
// the glob beside the path. readGaps reads the generation from its start.
func TestGlobGenerationBetweenTwoPointersFilesIsReadAtStart(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	pattern := filepath.Join(dir, "*.log")
	w, x := filepath.Join(dir, "w.log"), filepath.Join(dir, "x.log")
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rename := func(from, to string) {
		t.Helper()
		if err := os.Rename(from, to); err != nil {
			t.Fatal(err)
		}
	}
	write(w, numbered("ga", 3))
	if birthTimeTarget(w).IsZero() {
		t.Skip("SKIP: no birth times on this file system: a generation between two pointers' files is not looked for")
	}
	closedAt := func(ig *internalGlob, p string) func() bool {
		return func() bool {
			s := ig.g.byPath[p]
			return s != nil && s.st == stClosed && s.owe == nil
		}
	}
	ig, _, stop := runGlobOn(t, pattern, data)
	if got := ig.popAll(time.Second); got != 3 {
		t.Fatalf("first run delivered %d lines, want 3", got)
	}
	ig.waitFor(t, "w.log read, committed, closed", closedAt(ig, w))
	stop()

	rename(w, x) // within the glob: it keeps its pointer
	time.Sleep(20 * time.Millisecond)
	write(w+".1", numbered("gap", 3)) // a generation of w.log no run sees
	time.Sleep(20 * time.Millisecond)
	write(w, numbered("gb", 3)) // a new w.log: a pointer of its own
	ig2, _, stop2 := runGlobOn(t, pattern, data)
	if got := ig2.popAll(time.Second); got != 3 {
		t.Fatalf("second run delivered %d lines, want w.log's 3", got)
	}
	ig2.waitFor(t, "w.log read, committed, closed", closedAt(ig2, w))
	stop2()

	rename(x, w+".2") // the older pointer's file, out of the glob beside w.log
	ig3, _, stop3 := runGlobOn(t, pattern, data)
	stopConsume := ig3.consumeAll()
	time.Sleep(2 * time.Second)
	got := stopConsume()
	tails, bytes, detail := ig3.lost()
	stop3()
	for i := range 3 {
		if l := fmt.Sprintf("gap-%d", i); got[l] != 1 {
			t.Errorf("%s delivered %d times at the third start, want 1 (all delivered: %v; lostTails %d lostBytes %d %q)", l, got[l], got, tails, bytes, detail)
		}
	}
	if len(got) != 3 || tails != 0 || bytes != 0 {
		t.Errorf("third start: delivered %v, lostTails %d lostBytes %d (%q); want only w.log.1's 3 lines, nothing counted", got, tails, bytes, detail)
	}
	// A fourth start: the generation was read to its end; its pointer
	// (or the epochs line that forgot it) names it: read nothing again.
	ig4, _, _ := runGlobOn(t, pattern, data)
	stop4 := ig4.consumeAll()
	time.Sleep(1500 * time.Millisecond)
	got = stop4()
	tails, bytes, detail = ig4.lost()
	if len(got) != 0 || tails != 0 || bytes != 0 {
		t.Errorf("fourth start: delivered %v, lostTails %d lostBytes %d (%q); want nothing", got, tails, bytes, detail)
	}
}
