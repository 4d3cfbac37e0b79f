package file_test

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/source/file"
)

// A copytruncate in the instants of a start-up open (found in a soak of the
// kill -9 property test: a start reset a glob stream's pointer to 0, and
// within a millisecond logrotate copied and cut the file). The source takes
// the file's first bytes and size as one content (headStat: a cut between
// them is seen and both are taken again) and checks its first read after
// the open: a cut after them is read from its copy, from where the position
// stands in the content they describe, then the file from its start.

// aLines writes n lines "a-%016d" (20 bytes each) to path and returns them.
func aLines(t *testing.T, path string, n int) []string {
	t.Helper()
	var want []string
	var b strings.Builder
	for i := range n {
		l := fmt.Sprintf("a-%016d", i)
		want = append(want, l)
		b.WriteString(l + "\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return want
}

// cutOnce returns a StartHook that, at stage at and once, copies the file
// to path.1, truncates it and appends then (nil: nothing).
func cutOnce(t *testing.T, path, at string, then []string) (func(string), func() bool) {
	var cut atomic.Bool // set by the source's goroutine, read by the test's
	return func(stage string) {
		if stage == at && !cut.Load() {
			copyTruncate(t, path, path+".1")
			if len(then) > 0 {
				appendTo(t, path, then...)
			}
			cut.Store(true)
		}
	}, cut.Load
}

// checkOnce fails unless gs is want in order, each once, with no
// (epoch, position) naming two lines.
func checkOnce(t *testing.T, gs []got, want []string) {
	t.Helper()
	seen := map[[2]uint64]string{}
	for _, g := range gs {
		k := [2]uint64{g.Epoch, uint64(g.Pos)}
		if o, ok := seen[k]; ok && o != g.Line {
			t.Fatalf("(epoch %x, position %d) names %q and %q", g.Epoch, g.Pos, o, g.Line)
		}
		seen[k] = g.Line
	}
	if len(gs) != len(want) {
		t.Fatalf("%d lines, want %d (first %q, last %q)", len(gs), len(want), gs[0].Line, gs[len(gs)-1].Line)
	}
	for i, g := range gs {
		if g.Line != want[i] {
			t.Fatalf("line %d: %q, want %q", i, g.Line, want[i])
		}
	}
}

// Cut after the size was taken, nothing written since, and cut then
// written to again (fewer bytes than it held: read before any check by
// size, those bytes were published as the old content's and the copy read
// from there, a fragment first — review 42), with fsnotify and polling
// only. Before the fix the source had fingerprinted the emptied file: "cut
// short to 0 bytes … read to 0", lostTails 1, lostBytes the whole file.
func TestStartCopytruncateAfterTheOpen(t *testing.T) {
	t.Parallel()
	for _, strategy := range []file.Strategy{file.Committed, file.Earliest} {
		for _, more := range []bool{false, true} {
			for _, noNotify := range []bool{false, true} {
				t.Run(fmt.Sprintf("%v/more=%v/noNotify=%v", strategy, more, noNotify), func(t *testing.T) {
					t.Parallel()
					r := newRig(t, t.TempDir(), rigOpts{strategy: strategy, noNotify: noNotify, poll: 200 * time.Millisecond})
					want := aLines(t, r.path, 400) // 8,000 bytes: past the 4 KiB fingerprint
					var then []string
					if more {
						then = numbered("b", 0, 10)
					}
					hook, cut := cutOnce(t, r.path, "opened", then)
					r.opts.startHook = hook
					r.start()
					want = append(want, then...)
					r.waitLines(len(want))
					appendTo(t, r.path, "c-0")
					want = append(want, "c-0")
					r.waitLines(len(want))
					r.waitSettled()
					checkOnce(t, r.rec.all(), want)
					if !cut() {
						t.Fatal("the hook never ran")
					}
					if n, nb := r.src.LostTails(), r.src.LostBytes(); n != 0 || nb != 0 {
						t.Fatalf("lostTails %d, lostBytes %d over nothing lost (detail %q)", n, nb, r.src.Detail())
					}
				})
			}
		}
	}
}

// LATEST, the file cut and written to between its first bytes and its size
// (review 42: the position was taken in the new content, the copy read from
// it as if in the old — a fragment and 397 lines written before the
// start). Only what is written after the start is delivered.
func TestStartLatestCutBetweenFirstBytesAndSize(t *testing.T) {
	t.Parallel()
	r := newRig(t, t.TempDir(), rigOpts{strategy: file.Latest})
	aLines(t, r.path, 400)
	hook, cut := cutOnce(t, r.path, "stat", numbered("b", 0, 10))
	r.opts.startHook = hook
	r.start()
	r.waitFor("the source open", 10*time.Second, cut)
	time.Sleep(300 * time.Millisecond)
	appendTo(t, r.path, "c-0")
	r.waitLines(1)
	time.Sleep(300 * time.Millisecond)
	checkOnce(t, r.rec.all(), []string{"c-0"})
}

// COMMITTED restart after a clean stop, every line committed; the file cut
// and written to in the start's open. Nothing of the copy is delivered
// again (every line of it was committed; review 42: all 300 again, the
// reset's epoch naming the copy's lines), the new lines once. Cut after
// the first bytes and size were taken, nothing is lost either; cut between
// them, the start sees a file shorter than its pointer (its copies were
// looked for before the cut): one lost tail is counted, as for a file
// truncated while stopped.
func TestStartCommittedRestartCutInTheOpen(t *testing.T) {
	t.Parallel()
	for _, at := range []string{"stat", "opened"} {
		t.Run(at, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, "", rigOpts{strategy: file.Committed})
			appendTo(t, r.path, numbered("a", 0, 300)...)
			r.start()
			r.waitLines(300)
			r.waitSettled()
			r.stop()
			r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed})
			then := numbered("b", 0, 5)
			hook, cut := cutOnce(t, r.path, at, then)
			r2.opts.startHook = hook
			r2.start()
			r2.waitLines(5)
			r2.waitSettled()
			time.Sleep(300 * time.Millisecond)
			checkOnce(t, r2.rec.all(), then)
			if !cut() {
				t.Fatal("the hook never ran")
			}
			if want := map[string]uint64{"stat": 1, "opened": 0}[at]; r2.src.LostTails() != want || r2.src.LostBytes() != 0 {
				t.Fatalf("lostTails %d (want %d), lostBytes %d (detail %q)", r2.src.LostTails(), want, r2.src.LostBytes(), r2.src.Detail())
			}
		})
	}
}
