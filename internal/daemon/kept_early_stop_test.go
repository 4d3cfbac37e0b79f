package daemon

// The kept marks and a reload's skips when the restarted instance had not
// yet re-read what its subscribers finished before (the eleventh session:
// a CI run of TestRev10FixedEKeptMarksOverwrittenByAShorterStopRedeliver
// recorded no kept marks at a stop that came before the re-read).

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"tailfeed/config"
	"tailfeed/processor"
	"tailfeed/status"
)

// keptEarlyRun1 runs the feed of rev10KeptBase with a slow subscriber
// that is removed (a hold at the pointer's start) once archive wrote n
// lines; it returns the daemon right after the reload answered.
func keptEarlyRun1(t *testing.T, dir string, n int) *env {
	t.Helper()
	slow := newBlocker()
	t.Cleanup(func() { close(slow.open) })
	e := startIn(t, dir, rev10KeptBase+"  - {name: slow, feed: app, type: discard}\n", Options{Processors: map[string]Build{"slow": slow.build}})
	e.appendLines(numbered("a-", 0, n)...)
	e.waitFor("archive done", 20*time.Second, func(f status.FeedReport) bool { return sub(t, f, "archive").Dispatched == uint64(n) })
	e.reloadTo(rev10KeptBase, "reload")
	return e
}

// checkOnce fails unless out.log holds the n lines once each.
func checkOnce(t *testing.T, dir string, n int) {
	t.Helper()
	got := readLines(t, filepath.Join(dir, "out.log"))
	seen := map[string]int{}
	twice := 0
	for _, l := range got {
		if seen[l]++; seen[l] == 2 {
			twice++
		}
	}
	if len(got) != n || twice > 0 {
		t.Errorf("out.log has %d lines, %d of them written twice (want %d once each; only clean stops and reloads: DESIGN §2, re-delivery only after a crash)", len(got), twice, n)
	}
}

// A clean stop right after the reload that made the hold, before the
// restarted instance re-read what archive had finished: the next start
// (the hold still pinning the pointer) must skip those lines for archive.
// Before the fix the stop recorded what archive's queue acknowledged in
// this instance only (nothing yet) and the next start wrote every line
// again.
func TestKeptMarksStopBeforeTheReReadPassedTheSkip(t *testing.T) {
	dir := t.TempDir()
	const n = 40
	e := keptEarlyRun1(t, dir, n)
	e.Stop()

	e = startIn(t, dir, rev10KeptBase, Options{})
	time.Sleep(1500 * time.Millisecond)
	e.waitFor("stalled by the hold", 10*time.Second, func(f status.FeedReport) bool { return f.Stalled != nil })
	e.Stop()
	checkOnce(t, dir, n)
}

// A second reload while the instance the first one restarted had re-read
// only part of what archive had finished (a new subscriber, blocked, and
// a window of 8 lines stop the re-read early): the instance the second
// reload starts must still skip every line archive finished. Before the
// fix the second reload's skip was what archive acknowledged in the
// instance in between (8 lines) and the other 32 were written again.
func TestReloadSkipSurvivesASecondReloadBeforeTheReRead(t *testing.T) {
	dir := t.TempDir()
	e := twoReloads(t, dir, "")
	e.Stop()
	checkOnce(t, dir, 40)
}

// The same two reloads, the second adding a file sink: it subscribes from
// the next line (DESIGN §12 "Reload"), not from where the instance in
// between had re-read to. Before the fix it was given the 32 lines that
// instance had not re-read yet.
func TestReloadAddedSinkAfterAPartReReadStartsAtTheNextLine(t *testing.T) {
	dir := t.TempDir()
	e := twoReloads(t, dir, "  - {name: fresh, feed: app, type: file, path: %DIR%/fresh.log}\n")
	e.appendLines(numbered("b-", 0, 5)...)
	// Its output, not its dispatched: the re-read lines it skips count as
	// finished too, so dispatched could pass 5 before b- lines were read
	// (CI once stopped there: fresh.log empty).
	e.waitFor("fresh wrote the new lines", 10*time.Second, func(status.FeedReport) bool {
		b, _ := os.ReadFile(filepath.Join(dir, "fresh.log"))
		return bytes.Count(b, []byte("\n")) >= 5
	})
	e.Stop()
	got := readLines(t, filepath.Join(dir, "fresh.log"))
	if !slices.Equal(got, numbered("b-", 0, 5)) {
		t.Errorf("fresh.log = %d lines %q…, want only the 5 lines appended after it was added", len(got), got[:min(len(got), 3)])
	}
	checkOnce(t, dir, 45)
}

// twoReloads: 40 lines written by archive while slow holds the window;
// a reload removes slow (a hold at the pointer's start) and adds newbie,
// blocked, with a window of 8 lines, so the restarted instance re-reads
// only 8 lines; a second reload opens the window again (newbie unblocked)
// and adds extra.
func twoReloads(t *testing.T, dir, extra string) *env {
	t.Helper()
	const n = 40
	slow := newBlocker()
	t.Cleanup(func() { close(slow.open) })
	e := slowGiven40(t, dir, slow.build, map[string]Build{"newbie": blockedThenOpen(t)}, "")
	e.reloadTo(rev10KeptSmall+newbieLine, "reload")
	time.Sleep(time.Second) // the re-read stops at the window, 8 lines in
	e.reloadTo(rev10KeptBase+newbieLine+extra, "second reload")
	time.Sleep(1500 * time.Millisecond)
	return e
}

// reloadTo rewrites the config to cfgYAML and reloads, failing the test
// unless the reload answers 200 (what: which reload).
func (e *env) reloadTo(cfgYAML, what string) {
	e.t.Helper()
	e.rewrite(cfgYAML)
	if code, body := e.reload(); code != http.StatusOK {
		e.t.Fatalf("%s: %d %s", what, code, body)
	}
}

// The config lines of the custom processors slow and newbie (Options).
const (
	slowLine   = "  - {name: slow, feed: app, type: discard}\n"
	newbieLine = "  - {name: newbie, feed: app, type: discard}\n"
)

// builds is a custom processor's Build whose k-th call (a reload builds
// the processor again) builds with bs[k-1]; every call past them with the
// last.
func builds(bs ...Build) Build {
	k := 0
	return func(pc *config.Processor, g *processor.Group) (any, error) {
		b := bs[min(k, len(bs)-1)]
		k++
		return b(pc, g)
	}
}

// blockedThenOpen builds a processor that finishes nothing (blocked until
// the test ends) at its first build and everything at the later ones.
func blockedThenOpen(t *testing.T) Build {
	open := newBlocker()
	close(open.open)
	return builds(blocked(t), open.build)
}

// blocked builds a processor that finishes nothing until the test ends.
func blocked(t *testing.T) Build {
	b := newBlocker()
	t.Cleanup(func() { close(b.open) })
	return b.build
}

// stalledOf is f's stalled reason ("": not stalled).
func stalledOf(f status.FeedReport) string {
	if f.Stalled == nil {
		return ""
	}
	return *f.Stalled
}

// slowGiven40 starts rev10KeptBase with the custom processor slow (built
// by slow) and more (their config lines in extra, slow's added), writes
// 40 lines and waits until archive wrote them and slow was given them.
func slowGiven40(t *testing.T, dir string, slow Build, more map[string]Build, extra string) *env {
	t.Helper()
	const n = 40
	procs := map[string]Build{"slow": slow}
	for name, b := range more {
		procs[name] = b
	}
	e := startIn(t, dir, rev10KeptBase+slowLine+extra, Options{Processors: procs})
	e.appendLines(numbered("a-", 0, n)...)
	e.waitFor("archive done, slow given 40", 20*time.Second, func(f status.FeedReport) bool {
		return sub(t, f, "archive").Dispatched == n && sub(t, f, "slow").Position == n
	})
	return e
}
