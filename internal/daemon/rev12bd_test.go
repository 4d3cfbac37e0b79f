package daemon

// Finding D of the twelfth session's review 12b (kept marks at every clean
// stop), parked until the twentieth session: a rewrite in place while
// stopped that kept the pointer's first bytes and was at least its offset
// long was not seen (the fingerprint covered only the bytes the file had
// at the pointer's last commit), and a subscriber that had finished more
// than the slowest skipped the new lines up to its kept place. The final
// commit at a stop now grows the fingerprint as any commit does
// (Source.growAtClose): the rewrite is a replaced file, read from its
// start. A rewrite past the first 4 KiB stays DESIGN §4's blind spot
// (README).

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"tailfeed/pointer"
	"tailfeed/status"
	"testing"
	"time"
)

// TestRev12BDKeptMarksSkipNewContentAfterATruncationWhileStopped — DESIGN
// §2 "never a gap"; §4 "Nothing green over a loss"; the change: "every
// start's groups skip their kept marks".
//
// Scenario: a COMMITTED feed whose file starts with a header line "H"
// (a CSV header, a banner). Run 1: archive and lag finish the header: the
// pointer commits offset 2, its fingerprint covering the 2 bytes the file
// then had. Run 2: 40 lines are appended; archive (file sink) finishes
// them, lag (blocked) none: the pointer stays at 2 (no commit grows the
// fingerprint). Clean stop: kept archive = (E, 362). While stopped the
// file is truncated and rewritten: the same header, then 40 other lines
// ("b-…"). Run 3: the pointer still matches (same file key, the 2
// fingerprinted bytes equal, not shorter than the offset): epoch E is
// kept and the new lines are read under E from offset 2 — lag is given all
// 40, and archive skips every one of them up to its kept mark 362.
// Without the kept marks (before the change) both would get the 40 new
// lines: the overwrite past the fingerprint is a blind spot DESIGN §4
// admits ("not seen"), but it cost no line; the kept marks turn it into a
// silent gap for the subscriber that was ahead.
//
// Expected: archive given the 40 b- lines (as lag is), or a counted loss.
// Observed before the fix: archive given none of them; lossless true. (A round in which
// finding A kept the stop from writing kept marks is repeated.) 3 of 3 runs.
func TestRev12BDKeptMarksSkipNewContentAfterATruncationWhileStopped(t *testing.T) {
	const n = 40
	const lagLine = "  - {name: lag, feed: app, type: discard}\n"
	for try := 0; try < 20; try++ {
		dir := filepath.Join(t.TempDir(), fmt.Sprint(try))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		l1 := &recorder{}
		e := startIn(t, dir, rev10KeptBase+lagLine, Options{Processors: map[string]Build{"lag": l1.build}})
		e.appendLines("H")
		e.waitFor("the header committed", 10*time.Second, func(f status.FeedReport) bool { return f.Settled && len(l1.got()) == 1 })
		e.Stop()

		e = startIn(t, dir, rev10KeptBase+lagLine, Options{Processors: map[string]Build{"lag": blocked(t)}})
		e.appendLines(numbered("a-", 0, n)...)
		e.waitFor("archive finished 40, lag given 40", 10*time.Second, func(f status.FeedReport) bool {
			return sub(t, f, "archive").Dispatched == n && sub(t, f, "lag").Position == n
		})
		e.Stop()
		if kept, _ := os.ReadFile(filepath.Join(dir, "state", "state", "removed.json")); !strings.Contains(string(kept), "archive") {
			continue // finding A: no kept marks this round
		}
		rec, _ := pointer.Inspect(filepath.Join(dir, "state", "feeds", "app.ptr"))
		t.Logf("pointer at the stop: offset %d, fingerprint over %d bytes", rec.Offset, rec.FPLen)
		var b strings.Builder
		b.WriteString("H\n")
		for _, l := range numbered("b-", 0, n) {
			b.WriteString(l + "\n")
		}
		if err := os.WriteFile(filepath.Join(dir, "app.log"), []byte(b.String()), 0o644); err != nil { // O_TRUNC: in place
			t.Fatal(err)
		}
		lag := &recorder{}
		e = startIn(t, dir, rev10KeptBase+lagLine, Options{Processors: map[string]Build{"lag": lag.build}})
		f := e.waitFor("lag finished the 40 new lines", 10*time.Second, func(f status.FeedReport) bool { return f.Settled && len(lag.got()) >= n })
		e.Stop()
		got := readLines(t, filepath.Join(dir, "out.log"))
		newOnes := 0
		for _, l := range got {
			if strings.HasPrefix(l, "b-") {
				newOnes++
			}
		}
		if newOnes != n && f.Lossless {
			t.Errorf("after a truncation and rewrite while stopped, lag was given the %d new lines, archive %d of them (out.log %d lines); lossless %v, lostTails %d; want every new line for archive too (or a counted loss)",
				len(lag.got()), newOnes, len(got), f.Lossless, f.LostTails)
		}
		return
	}
	t.Fatal("no round of 20 wrote kept marks")
}
