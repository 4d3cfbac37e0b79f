package daemon

// Review 20b (the fixes of review 20a: readAgainAt asks a glob for the
// epoch and first bytes of its stream of the new path's file).

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"tailfeed/config"
	"tailfeed/feed"
	"tailfeed/processor"
	"tailfeed/status"
	"testing"
	"time"
)

// TestRev20BAGlobPathChangeToAQueuedStreamsFileCountsReleased — DESIGN §7
// "lossless: … released … are 0" and §4 "Nothing green over a loss"'s
// converse (lossless false only over a loss); §12 / README "Reload": the
// lines a kept subscriber did not finish are given up (released) unless
// the new path reads them all again (readAgainAt).
//
// Scenario: glob feed app*.log (closeInactiveMillis 300) matching one
// file, app.log; slow (blocked) is given its 40 a- lines and finishes
// none. The stream, caught up, is closed as inactive with its lines
// unacknowledged (it owes a commit). 10 b- lines are appended: the glob
// queues the stream again, and it waits in the queue (a stream owing a
// commit is not started until its lines are acknowledged). A reload
// changes the path to app.log itself. The new feed reads app.log from its
// start: slow is given the 40 a- lines again (and the b- lines). But
// Glob.EpochOf now answers false for a stream that is not stClosed (this
// one is stQueued at Close): readAgainAt says "not read again" and the 40
// lines are counted released, lossless false — over lines slow was given
// again. Before the change (cb48322) EpochOf did not look at the state and
// nothing was counted.
//
// Expected: slow given the a- lines again, released 0, lossless true.
// Failed 3 of 3 before the fix (EpochOf takes a queued stream's epoch and
// first bytes from its last close, as a closed one's).
func TestRev20BAGlobPathChangeToAQueuedStreamsFileCountsReleased(t *testing.T) {
	dir := t.TempDir()
	rec := &recorder{}
	e := globSlowGiven40(t, dir, "closeInactiveMillis: 300", rec)
	time.Sleep(1500 * time.Millisecond) // closed as inactive (lines unacknowledged)
	e.appendLines(numbered("b-", 0, 10)...)
	time.Sleep(1500 * time.Millisecond) // the glob sees it grow and queues the stream
	e.reloadTo(rev10KeptBase+slowLine, "reload (glob to the file its stream read)")
	f := e.waitFor("the new path settled, slow given app.log again", 10*time.Second, func(f status.FeedReport) bool {
		return strings.HasSuffix(f.Path, "app.log") && f.Settled && len(rec.got()) >= 50
	})
	e.Stop()
	again := 0
	for _, l := range rec.got() {
		if strings.HasPrefix(l, "a-") {
			again++
		}
	}
	if again < 40 {
		t.Fatalf("slow given %d of the 40 a- lines again (%d lines in all); the scenario expects the new path to read app.log from its start", again, len(rec.got()))
	}
	if f.Released != 0 || !f.Lossless {
		t.Errorf("slow was given every one of its 40 unfinished a- lines again by the new path (app.log from its start): released %d, lossless %v, losses.jsonl released %d; want 0, true",
			f.Released, f.Lossless, ledgerAmount(t, dir, "released"))
	}
}

// prefixGate finishes every line except those beginning with prefix, on
// which it blocks until the test ends.
type prefixGate struct {
	prefix string
	open   chan struct{}
}

func newPrefixGate(t *testing.T, prefix string) *prefixGate {
	g := &prefixGate{prefix: prefix, open: make(chan struct{})}
	t.Cleanup(func() { close(g.open) })
	return g
}

func (g *prefixGate) Process(ctx context.Context, d *feed.Delivery) error {
	if !strings.HasPrefix(string(d.Line), g.prefix) {
		return nil
	}
	select {
	case <-g.open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *prefixGate) build(*config.Processor, *processor.Group) (any, error) { return g, nil }

// rotateWithLateLines: 40 a- lines finished by archive and subs; app.log
// renamed to app.log.1 (a descriptor on it kept), a new app.log with 10 n-
// lines finished by them (the barrier crossed); then 5 late- lines written
// to app.log.1 through the old descriptor, within rotateWaitMillis: the
// source delivers them downgraded (an epoch of their own, positionless).
// It returns once they are given to every one of subs.
func (e *env) rotateWithLateLines(t *testing.T, subs ...string) {
	t.Helper()
	in := filepath.Join(e.dir, "app.log")
	finished := func(n uint64) func(status.FeedReport) bool {
		return func(f status.FeedReport) bool {
			ok := sub(t, f, "archive").Dispatched == n
			for _, s := range subs {
				ok = ok && sub(t, f, s).Dispatched == n
			}
			return ok
		}
	}
	e.appendLines(numbered("a-", 0, 40)...)
	e.waitFor("the a- lines finished", 20*time.Second, finished(40))
	old, err := os.OpenFile(in, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if err := os.Rename(in, in+".1"); err != nil {
		t.Fatal(err)
	}
	writeNumbered(t, in, "n-", 10) // the new app.log
	e.waitFor("the new app.log read and finished", 20*time.Second, finished(50))
	for _, l := range numbered("late-", 0, 5) {
		if _, err := old.WriteString(l + "\n"); err != nil {
			t.Fatal(err)
		}
	}
	e.waitFor("the late lines delivered (downgraded) and given", 10*time.Second, func(f status.FeedReport) bool {
		ok := f.Downgraded == 5 && sub(t, f, "archive").Dispatched == 55
		for _, s := range subs {
			ok = ok && sub(t, f, s).Position == 55
		}
		return ok
	})
}

// TestRev20BBPathChangeGivesUpDowngradedLinesUncounted — DESIGN §4
// "Nothing green over a loss", §7 released; §12 / README "Reload": what a
// kept subscriber was given and did not finish is counted released unless
// the new path reads it all again; readAgainAt's own contract: "no
// subscriber left a line unfinished in another file (a rotated-away one)".
//
// Scenario: single-file COMMITTED feed on app.log; slow finishes every
// line except late ones. 40 a- lines (finished). logrotate: app.log
// renamed to app.log.1, a new app.log with 10 n- lines (finished; the
// barrier crossed). The application writes 5 late- lines through its old
// descriptor into app.log.1, within rotateWaitMillis: the source delivers
// them downgraded (an epoch of their own, positionless); slow does not
// finish them. A reload changes the path to link.log, a symlink to
// app.log. readAgainAt: the open file is app.log, its epoch's first bytes
// and length are there, and no subscriber has an unfinished line in
// another epoch — as the publisher's marks tell it: Publisher.Marks skips
// positionless (downgraded) entries, so the late lines' epoch is not among
// them. "Read again": nothing counted. The new feed reads app.log (the n-
// lines); the late- lines are in app.log.1, which no one reads again.
//
// Expected: slow given the 5 late- lines again, or released 5, lossless
// false, losses.jsonl released 5. Failed 3 of 3 before the fix (the stop
// notes a holding subscriber's unfinished positionless lines,
// Publisher.UnpositionedAfter, and readAgainAt then answers false).
func TestRev20BBPathChangeGivesUpDowngradedLinesUncounted(t *testing.T) {
	dir := t.TempDir()
	rec := &recorder{}
	e := startIn(t, dir, rev10KeptBase+slowLine, Options{Processors: map[string]Build{"slow": builds(newPrefixGate(t, "late-").build, rec.build)}})
	in := filepath.Join(dir, "app.log")
	e.rotateWithLateLines(t, "slow")
	time.Sleep(300 * time.Millisecond)
	if f := e.report().Feeds[0]; sub(t, f, "slow").Dispatched != 50 || f.Acknowledged != 50 {
		t.Fatalf("slow finished %d lines before the reload (feed acknowledged %d), want 50 (the late lines unfinished)", sub(t, f, "slow").Dispatched, f.Acknowledged)
	}
	if err := os.Symlink(in, filepath.Join(dir, "link.log")); err != nil {
		t.Fatal(err)
	}
	e.reloadTo(strings.Replace(rev10KeptBase, "%DIR%/app.log", "%DIR%/link.log", 1)+slowLine, "reload (path change to a symlink to the open file)")
	f := e.waitFor("the new path settled", 10*time.Second, func(f status.FeedReport) bool {
		return strings.HasSuffix(f.Path, "link.log") && f.Settled && len(rec.got()) >= 10
	})
	e.Stop()
	wantGivenAgainOrReleased(t, dir, f, rec.got(), "late-", 5, "the late lines in the rotated app.log.1")
}

// reloadToLink makes link.log, a symlink to app.log, and reloads to
// cfgYAML (whose path is link.log); it returns the report half a second
// after the new path is caught up with at least n lines in rec, the daemon
// stopped.
func (e *env) reloadToLink(t *testing.T, cfgYAML, what string, rec *recorder, n int) status.FeedReport {
	t.Helper()
	if err := os.Symlink(filepath.Join(e.dir, "app.log"), filepath.Join(e.dir, "link.log")); err != nil {
		t.Fatal(err)
	}
	e.reloadTo(cfgYAML, what)
	e.waitFor("the new path caught up", 10*time.Second, func(f status.FeedReport) bool {
		return strings.HasSuffix(f.Path, "link.log") && f.State == "CAUGHT_UP" && len(rec.got()) >= n
	})
	time.Sleep(500 * time.Millisecond)
	f := e.report().Feeds[0]
	e.Stop()
	return f
}
