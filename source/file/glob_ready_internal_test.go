package file

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestGlobNotSettledUntilGoneWhileStoppedTracked — found by the project's CI
// on 3a17f1e (e2e TestAud3GXGoneWhileStoppedRowHasNoPath, 1 run in many):
// a file read to its end, the feed stopped, the file deleted while
// stopped. At the restart countGone counts it in lostTails, and only then
// (logStart) is its pointer tracked as a GONE file. The feed left STARTING
// at the first scan, before both: a report in between was settled with
// lostTails 1 and neither the file's row in ?files=1 nor the file in
// filesTracked (DESIGN §10 "`GONE` … waiting to be forgotten", §4 "Nothing
// green over a loss": a count is shown with what it counts). The feed is
// BEHIND (open, so ready, but never settled) until the start is over
// (STARTING so long kept /readyz at 503: review 16a C).
func TestGlobNotSettledUntilGoneWhileStoppedTracked(t *testing.T) {
	t.Parallel()
	dir, data, _ := aLogIn(t, numbered("a", 5))
	b := filepath.Join(dir, "b.log")
	if err := os.WriteFile(b, []byte(numbered("b", 5)), 0o600); err != nil {
		t.Fatal(err)
	}
	pattern := filepath.Join(dir, "*.log")
	ig, stop := runGlobQuiet(t, pattern, data, 5*time.Second)
	var got []string
	waitFor5(t, "both files delivered", 10*time.Second, func() bool {
		l, _ := ig.popEpochs(50*time.Millisecond, true)
		got = append(got, l...)
		return len(got) >= 10
	})
	stop()
	if err := os.Remove(b); err != nil {
		t.Fatal(err)
	}

	type look struct {
		st      State
		rows    int
		tracked int
	}
	var (
		mu    sync.Mutex
		g2    *Glob
		looks []look
	)
	ig2, stop2 := runGlobWith(t, pattern, data, time.Second, func(c *GlobConfig) {
		c.Stream.OnLoss = func(Loss) {
			// Called by countGone, the count made: what a report
			// built now would show.
			st, n := g2.StateCounts()
			rows := len(g2.Files())
			mu.Lock()
			looks = append(looks, look{st, rows, n.Tracked})
			mu.Unlock()
		}
	}, func(g *Glob) { g2 = g })
	defer stop2()
	waitFor5(t, "b.log counted and the feed caught up", 10*time.Second, func() bool {
		return ig2.g.LostTails() == 1 && ig2.g.State() == CaughtUp
	})
	mu.Lock()
	defer mu.Unlock()
	if len(looks) != 1 {
		t.Fatalf("OnLoss called %d times; want 1 (b.log gone while stopped)", len(looks))
	}
	if l := looks[0]; l.st != Behind {
		t.Errorf("as b.log was counted gone: state %v with %d files rows, filesTracked %d; want BEHIND (not settled) until it is tracked (a settled report counted a loss it did not list)",
			l.st, l.rows, l.tracked)
	}
	var row *FileStatus
	files := ig2.g.Files()
	for i := range files {
		if filepath.Base(files[i].Path) == "b.log" {
			row = &files[i]
		}
	}
	if row == nil || row.State != "GONE" {
		t.Errorf("caught up after the start: b.log row %+v (rows %+v); want it listed GONE", row, files)
	}
}
