package daemon

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tailfeed/status"
)

// DESIGN §2: re-delivery only after a crash (or a restored sink's
// catch-up); §5: the final commit is exactly what the pointer-holding
// groups finished. A clean stop while one subscriber (lag) finished none of
// 40 lines and another (archive, fast) all of them leaves the pointer at 0;
// the next start re-reads the 40 lines for lag — and gave them to the
// others again (40 duplicates after a clean stop; a hold's kept marks only
// covered a feed a removed subscriber pinned). The stop now records what
// each subscriber finished whenever they differ, and the next start skips
// it.
func TestCleanStopBehindASlowSubscriberRedeliversNothing(t *testing.T) {
	dir := t.TempDir()
	const lagLine = "  - {name: lag, feed: app, type: discard}\n"
	fast := &recorder{}
	e := startIn(t, dir, rev10KeptBase+slowLine+lagLine, Options{Processors: map[string]Build{"slow": fast.build, "lag": blocked(t)}})
	e.appendLines(numbered("a-", 0, 40)...)
	e.waitFor("archive and slow finished 40, lag given 40", 10*time.Second, func(f status.FeedReport) bool {
		return sub(t, f, "archive").Dispatched == 40 && sub(t, f, "slow").Dispatched == 40 && sub(t, f, "lag").Position == 40
	})
	e.Stop()

	again := &recorder{}
	lag := &recorder{}
	e = startIn(t, dir, rev10KeptBase+slowLine+lagLine, Options{Processors: map[string]Build{"slow": again.build, "lag": lag.build}})
	e.waitFor("lag finished the 40 lines", 10*time.Second, func(f status.FeedReport) bool { return f.Settled && len(lag.got()) == 40 })
	e.appendLines("b-1")
	e.waitFor("b-1 delivered", 10*time.Second, func(f status.FeedReport) bool { return f.Settled && len(lag.got()) == 41 })
	e.Stop()
	if got := again.got(); len(got) != 1 || got[0] != "b-1" {
		t.Errorf("after a clean stop, slow (which had finished all 40 lines) was given %d lines: %q…; want only b-1", len(got), got[:min(len(got), 3)])
	}
	want := strings.Join(append(numbered("a-", 0, 40), "b-1"), "\n") + "\n"
	if b, _ := readFileString(filepath.Join(dir, "out.log")); b != want {
		t.Errorf("archive's output after a clean stop and restart: %d bytes, want the 40 lines and b-1 once each (%d bytes)", len(b), len(want))
	}
}
