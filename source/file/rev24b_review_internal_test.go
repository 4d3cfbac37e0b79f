package file

// Review 24b (independent review of 4b698af and d60524a: readGaps where
// the path's pointer's own file was compressed too — gzCopyOf,
// plainCopyOf, gzOnly, readGzTwin). A and B: a compressed gap whose plain
// twin is beside it at the start (gzip running) is neither read nor
// counted where readGaps reads no plain file (gzOnly) — readGzTwin is
// reached only from a whole .gz whose twin can still be opened; no later
// start counts it either. Both fail before the change too (the path was
// skipped there). Fixed: such a .gz is looked at through its twin
// (gapTwin: the twin's own last write, birth and bytes), the .gz itself
// only when the twin is gone.

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/overload"
	"tailfeed/pointer"
)

// A: the scenario of review 24a C (P's file compressed too, the gap
// compressed while its plain twin is still beside it), gzip unlinking the
// twin while readGaps looks: the review's test made it happen after
// countGzGap saw the twin and before readGzTwin opened it — neither read
// nor counted. readGaps now looks at such a .gz through its twin (gapTwin),
// which cannot be opened when gzip has unlinked it since the directory was
// listed: the .gz is looked at then. That window (between the listing and
// the open) is too short to hit from outside, so gapTwin is called here on
// a listing whose twin is gone, as readGaps would.
func TestRev24BRTwinUnlinkedWhileReadGapsLooksGapNeitherReadNorCounted(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	first := filepath.Join(dir, "w.log")
	gap := numbered("gap", 3)
	for _, twin := range []bool{true, false} {
		t.Run(fmt.Sprintf("twin=%v", twin), func(t *testing.T) {
			os.RemoveAll(filepath.Join(data, "feeds"))
			if err := os.MkdirAll(filepath.Join(data, "feeds", "f"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(first+".1", []byte(gap), 0o600); err != nil {
				t.Fatal(err)
			}
			gzipLikeGzip(t, first+".1", first+".1.gz", twin)
			st, err := os.Stat(first + ".1.gz")
			if err != nil {
				t.Fatal(err)
			}
			pub := feed.NewPublisher("f", []*feed.Queue{feed.NewQueue("rec", 64, 1<<20, overload.Policy{Kind: overload.Pause})}, 64, 16)
			g, err := NewGlob(GlobConfig{
				Stream:     Config{Feed: "f", Path: filepath.Join(dir, "*.log"), Strategy: Committed, Outputs: []string{data}},
				PointerDir: filepath.Join(data, "feeds", "f"),
				EpochsPath: filepath.Join(data, "feeds", "f.epochs"),
			}, pub)
			if err != nil {
				t.Fatal(err)
			}
			defer g.mux.close()
			low, upMod := st.ModTime().Add(-time.Minute), st.ModTime().Add(time.Minute)
			named := map[uint64][]namedAs{}
			g.gapTwin(first+".1", first, low, upMod, time.Time{}, time.Time{}, nil, named)
			g.mu.Lock()
			tails, bytes, detail, queued := g.acc.lostTails, g.acc.lostBytes, g.detail, len(g.byKey)
			g.mu.Unlock()
			if twin {
				if tails != 0 || queued != 1 {
					t.Errorf("the twin beside the .gz: %d streams queued, lostTails %d %q; want it queued to be read, nothing counted", queued, tails, detail)
				}
				return
			}
			if tails != 1 || bytes != uint64(len(gap)) || queued != 0 {
				t.Errorf("the twin gone when looked at: lostTails %d lostBytes %d %q, %d streams queued; want the .gz counted (1, %d), nothing queued",
					tails, bytes, detail, queued, len(gap))
			}
			lines, _ := pointer.ReadEpochs(filepath.Join(data, "feeds", "f.epochs"))
			if len(lines) != 1 || lines[0].Reason != "lost" {
				t.Errorf("epochs lines %+v, want one \"lost\" line naming the counted .gz", lines)
			}
		})
	}
}

// B: the scenario of review 24a C, the gap's compression still running at
// the third start — gzip has written part of w.log.1.gz, its plain twin
// w.log.1 still beside it — and finishing 700 ms in (the .gz whole, its
// mtime the twin's, the twin unlinked). countGzGap finds the .gz torn
// (inspectGz not ok) and returns before it looks at the twin: with P's
// file compressed (gzOnly) readGaps reads no plain file, so the twin is
// not read either; once gzip unlinks it, the whole .gz is looked at by
// nobody in this run. The gap is neither read nor counted (lostTails 0).
func TestRev24BRGapStillBeingCompressedTwinNeitherReadNorCounted(t *testing.T) {
	t.Parallel()
	r := rev24aRig(t)
	r.rename(r.x, r.w+".2")
	gzipLikeGzip(t, r.w+".1", r.w+".1.full", true)
	full, err := os.ReadFile(r.w + ".1.full")
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(r.w + ".1")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(r.w + ".1.full"); err != nil {
		t.Fatal(err)
	}
	r.write(r.w+".1.gz", string(full[:len(full)-12])) // gzip still writing it; the twin still there
	r.rotate(r.w+".3", numbered("gc", 3))
	gzipLikeGzip(t, r.w+".3", r.w+".3.gz", false)
	got, tails, bytes, detail := r.run(3*time.Second, func(*internalGlob) {
		go func() {
			time.Sleep(700 * time.Millisecond) // gzip finishes
			r.write(r.w+".1.gz", string(full))
			os.Chtimes(r.w+".1.gz", st.ModTime(), st.ModTime())
			os.Remove(r.w + ".1")
		}()
	})
	t.Logf("third start: lostTails %d lostBytes %d %q (delivered %v)", tails, bytes, detail, got)
	if n := rev23bGapLines(got, "gap", 3); n == 0 && tails == 0 {
		t.Errorf("the gap w.log.1 (being compressed at the start: its .gz torn, its plain twin beside it) is neither read nor counted: lostTails %d, delivered %v",
			tails, got)
	}
	got4, tails4, bytes4, detail4 := r.run(2*time.Second, nil)
	t.Logf("fourth start (nothing changed): lostTails %d lostBytes %d %q (delivered %v)", tails4, bytes4, detail4, got4)
}
