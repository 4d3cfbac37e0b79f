package file

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tailfeed/internal/fileutil"
	"tailfeed/pointer"
)

// Review 20a (besideAtStart with nothing at the path, readGaps' upper
// bound "now").

// TestRev20ADNarrowedGlobReadsItsFormerFileBesideAnEmptyPath — DESIGN §10
// (exclude/path "removes matches"), §12 and the README ("a glob changed to
// another glob keeps its per-file pointers: ... one no longer matched is
// let go as an excluded one"); countGone's unmatchedBeside: a pointer's
// file beside a first path the config no longer matches is "forgotten",
// not read, not lost.
//
// Scenario: run 1, glob dir/*.log, w.log (3 lines) read and committed;
// clean stop. While down: w.log gets 2 lines and is renamed to w.log.1
// (nothing at w.log), and a file born after it, w.log-20261204 (a rotated
// name), gets 2 lines. Run 2 with the glob narrowed to dir/a*.log (w.log
// no longer matched).
//
// Expected (as before the change): nothing of w.log.1 or w.log-20261204
// delivered (the operator stopped reading w.log), nothing counted lost.
// Observed before the fix: see the review 20a note (3 of 3 failed) (besideAtStart takes the pointer for the
// no-file case without asking whether its first path is still matched,
// and readGaps then reads every generation born after it beside the path).
func TestRev20ADNarrowedGlobReadsItsFormerFileBesideAnEmptyPath(t *testing.T) {
	t.Parallel()
	pattern, data, w := besideNoFileRun(t)
	appendTo(t, w, numbered("tail", 2))
	mustRename(t, w, w+".1")
	time.Sleep(20 * time.Millisecond)
	if err := os.WriteFile(w+"-20261204", []byte(numbered("later", 2)), 0o600); err != nil {
		t.Fatal(err)
	}
	narrowed := filepath.Join(filepath.Dir(pattern), "a*.log")
	ig, _, stop := runGlobOn(t, narrowed, data)
	got := ig.popLines(2 * time.Second)
	tails, bytes, detail := ig.lost()
	stop()
	if len(got) != 0 || tails != 0 {
		t.Errorf("glob narrowed to a*.log (w.log no longer matched), w.log renamed to w.log.1 while down, nothing at w.log: delivered %v, lostTails %d lostBytes %d (%q); want nothing delivered (no longer matched: let go, as unmatchedBeside does), nothing lost",
			got, tails, bytes, detail)
	}
}

// TestRev20AEFileAtThePathDuringTheStartHidesTheGap — DESIGN §4 "every
// generation still on disk is read", "Nothing green over a loss".
//
// Scenario: run 1, glob dir/*.log over w.log (3 lines) and 40 other files
// e00.log..e39.log; clean stop. While down: w.log renamed to w.log.1, a new
// w.log written (3 gen- lines), w.log.1 renamed to w.log.2 and w.log to
// w.log.1: nothing at w.log (as TestGlobGenerationAfterThePointersFileWithAnEmptyPathIsRead).
// Run 2 with the glob dir/w*.log: the e*.log pointers are let go as no
// longer matched (a pointer reset each, after w.log's). The application
// creates w.log again as the start runs — after besideAtStart took w.log's
// pointer beside the path (no file there), before readGaps looks: readGaps
// finds a file at the path with no pointer, bounds nothing and reads no
// gap. w.log.1 (the gen- lines, born after the pointer's file, named by
// nothing) is read by nobody, and nothing is counted. Before the change
// the pointer was counted gone (lostTails 1, lossless false).
//
// Expected: gen-0..2 delivered, or a loss counted. Observed before the
// fix: neither, 3 of 3 (a round where w.log's pointer came last, with no
// window, is retried). Since: readGaps bounds the gaps by the instant
// besideAtStart found nothing at the path.
func TestRev20AEFileAtThePathDuringTheStartHidesTheGap(t *testing.T) {
	t.Parallel()
	for round := 0; round < 2; round++ {
		dir, data := t.TempDir(), t.TempDir()
		w := filepath.Join(dir, "w.log")
		if err := os.WriteFile(w, []byte(numbered("w", 3)), 0o600); err != nil {
			t.Fatal(err)
		}
		if birthTimeTarget(w).IsZero() {
			t.Skip("SKIP: no birth times on this file system")
		}
		for i := range 40 {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("e%02d.log", i)), []byte(numbered(fmt.Sprintf("e%02d", i), 1)), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		ig, _, stop := runGlobOn(t, filepath.Join(dir, "*.log"), data)
		if got := ig.popAll(2 * time.Second); got != 43 {
			t.Fatalf("first run delivered %d lines, want 43", got)
		}
		stop()
		mustRename(t, w, w+".1")
		time.Sleep(20 * time.Millisecond)
		if err := os.WriteFile(w, []byte(numbered("gen", 3)), 0o600); err != nil {
			t.Fatal(err)
		}
		mustRename(t, w+".1", w+".2")
		mustRename(t, w, w+".1")
		dev, ino, err := fileutil.DevInoPath(w + ".2")
		if err != nil {
			t.Fatal(err)
		}
		kx := pointer.FileKey(dev, ino)
		ig, _, stop = runGlobOn(t, filepath.Join(dir, "w*.log"), data)
		created := make(chan bool, 1)
		go func() {
			for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
				ig.g.mu.Lock()
				taken := ig.g.byKey[kx] != nil
				started := ig.g.started
				ig.g.mu.Unlock()
				if taken && started {
					// (the application's first write after its restart)
					created <- os.WriteFile(w, []byte(numbered("z", 1)), 0o600) == nil
					return
				}
				time.Sleep(50 * time.Microsecond)
			}
			created <- false
		}()
		got := ig.popLines(2 * time.Second)
		tails, bytes, detail := ig.lost()
		taken := <-created
		stop()
		if got["gen-0"] != 1 || got["gen-1"] != 1 || got["gen-2"] != 1 || tails != 0 {
			// (Before the fix the window — w.log made before readGaps
			// looked — was hit in 3 of 3 runs; since, the gap is read
			// whether or not it is.)
			t.Errorf("round %d: w.log created during the start (after its pointer was taken beside the path: %v): w.log.1 (gen-0..2, born after the pointer's file, named by nothing): delivered %v, lostTails %d lostBytes %d (%q); want gen-0..2 delivered once, nothing lost",
				round, taken, got, tails, bytes, detail)
		}
		if got["z-0"] != 1 && taken {
			t.Errorf("round %d: the w.log made during the start (z-0) delivered %d times, want once", round, got["z-0"])
		}
	}
}

// TestRev20AGLaterGenerationOfAnEmptyBoundFileIsReadTwice — DESIGN §2
// (re-delivery only after a crash), §4 (the source of the file at the path
// reads the pointer's generation, then every later generation).
//
// Scenario (review 18c B's rig, one rotation more while stopped): run 1
// reads w.log (X, 3 ga- lines); X renamed to x.log (still matched), a gap
// generation w.log.1 (3 gap- lines) written, an empty w.log (Z) made; run
// 2 binds Z's pointer while it is empty (no key) and keeps X's. While
// down (2.5 s later): Z gets 3 gb- lines and is rotated, a new w.log (Y2)
// gets 3 y2- lines and is rotated, a new w.log (Z') gets 3 gc- lines;
// X leaves the glob (w.log.4). Files: w.log Z', w.log.1 Y2, w.log.2 Z,
// w.log.3 gap, w.log.4 X. Run 3: Z' takes Z's pointer (adoptByPath), its
// source reads Z from its start and the later generation Y2; X's pointer
// is taken beside (besideAtStart). readGaps bounds the gaps by the file at
// the path (Z', rec.FileKey 0: review 18c B's fix) instead of the
// pointer's file (Z): Y2, born between Z and Z' and named by nothing, is
// queued as a gap too — read twice.
//
// Expected: every gc-, y2-, gb-, gap- line once. Observed before the fix: see the review 20a note (3 of 3 failed).
func TestRev20AGLaterGenerationOfAnEmptyBoundFileIsReadTwice(t *testing.T) {
	t.Parallel()
	r := emptyBoundRig(t, 0)
	time.Sleep(2500 * time.Millisecond) // past the generation scan's 2 s slack
	r.write(r.w, numbered("gb", 3))     // the application writes (in place)
	r.rename(r.w+".1", r.w+".3")
	r.rename(r.w, r.w+".2")
	time.Sleep(20 * time.Millisecond)
	r.write(r.w, numbered("y2", 3))
	r.rename(r.w, r.w+".1")
	time.Sleep(20 * time.Millisecond)
	r.write(r.w, numbered("gc", 3))
	r.rename(r.x, r.w+".4")
	got, tails, bytes, detail := r.run(3*time.Second, nil)
	for _, p := range []string{"gc", "y2", "gb", "gap"} {
		for i := range 3 {
			if l := fmt.Sprintf("%s-%d", p, i); got[l] != 1 {
				t.Errorf("%s delivered %d times at the third start, want once (delivered %v; lostTails %d lostBytes %d %q)", l, got[l], got, tails, bytes, detail)
			}
		}
	}
}
