package daemon

// Findings of the ninth session's review 9d, fixed in the tenth: a losses
// ledger whose fsync hangs must hang neither a stop nor a report.

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/status"
)

// TestRev9DFixedBStopBoundedOnHungLedgerFsync — DESIGN §12 Signals: "SIGTERM/SIGINT
// stop as in §5, within shutdownTimeoutMillis plus 2 s"; the brief: "SyncLosses
// at stop with a ledger that hangs". A best-effort tap (DROP_AFTER_SPIN,
// blocked) drops lines; the losses ledger's fsync then stops returning (a
// dying disk): the publisher's loss sync goroutine is stuck in Sync holding
// the ledger's mu. Expected: Stop returns within 300 ms + 2 s (the final
// commit does not pass the unsynced drops, the run ends). Observed: Stop
// blocks — recordLosses waits for the ledger's mu, and syncFinalLosses
// (Publisher.SyncLosses) waits without bound for the sync in flight
// (<-p.lossDone) and then calls lossSync inline — until the fsync returns.
// Every run, before the tenth session bounded the ledger waits (Stop gives
// the ledger ledgerStopWait in all). The recordLosses wait predates the diff; SyncLosses adds a
// second unbounded wait per feed.
func TestRev9DFixedBStopBoundedOnHungLedgerFsync(t *testing.T) {
	// No status request: a report waits for the ledger too (TestRev9DFixedC).
	e, release := startHungLedger(t)
	checkStopBound(t, e, release, nil, "the losses ledger's fsync hangs after drops")
}

// TestRev9DFixedCStatusAnswersOnHungLedgerFsync — DESIGN §7/§12: GET /feed.status is
// how a launcher asks whether the run is complete and whole, and /healthz
// "answers 503 at once while any feed is FAILED, and after stallAlertMillis
// of a stall" (alerting); the brief: "a ledger lock held across an fsync while
// the hot path needs it". A best-effort tap drops lines; the losses ledger's
// fsync stops returning (the publisher's loss sync goroutine holds the
// ledger's mu inside Sync). Expected: the report answers (the feed stalled,
// its pointer held, the losses counted), as it does while the ledger fails
// with an error. Observed: Daemon.Report calls recordLosses after building
// the report, which waits for the ledger's mu: GET /feed.status never
// answers (the client times out after 10 s) until the fsync returns. Every
// run, before the tenth session: a report waits ledgerWait (1 s) for the
// ledger now. Predates the diff under review (Report's recordLosses), but the diff
// adds holders of the same mu across an fsync on the request path (purge,
// release: lossCount, heldRelease) and at stop (SyncLosses).
func TestRev9DFixedCStatusAnswersOnHungLedgerFsync(t *testing.T) {
	e, _ := startHungLedger(t)
	got := make(chan status.Report, 1)
	go func() { got <- e.d.Report() }()
	select {
	case r := <-got:
		t.Logf("report answered: dropped %d lossless %v", r.Feeds[0].Dropped, r.Feeds[0].Lossless)
	case <-time.After(3 * time.Second):
		t.Errorf("the feed.status report did not answer within 3 s while the losses ledger's fsync hangs (Report → recordLosses waits for the ledger's mu, held across Sync by the publisher's loss sync)")
	}
}

// startHungLedger starts a daemon on dropConfig whose best-effort tap is
// blocked, appends 2,000 lines (drops) and returns once the losses
// ledger's fsync hangs (until release, or the test's end).
func startHungLedger(t *testing.T) (e *env, release func()) {
	t.Helper()
	h := newHungLedger(t, dropConfig, nil)
	h.hang.Store(true)
	h.e.appendLines(numbered("d-", 0, 2000)...)
	h.waitEntered(t, "after drops")
	return h.e, h.release
}

// hungLedger is a daemon whose processor tap is blocked and whose losses
// ledger's fsync hangs once hang is set, until release (or the test's
// end); procs are more processors.
type hungLedger struct {
	e       *env
	tap     *blocker
	hang    *atomic.Bool
	entered *atomic.Int32
	release func()
	tapOnce sync.Once
}

func newHungLedger(t *testing.T, cfgYAML string, procs map[string]Build) *hungLedger {
	t.Helper()
	h := &hungLedger{tap: newBlocker(), hang: &atomic.Bool{}, entered: &atomic.Int32{}}
	ch := make(chan struct{})
	var once sync.Once
	h.release = func() { once.Do(func() { close(ch) }) }
	all := map[string]Build{"tap": h.tap.build}
	for k, v := range procs {
		all[k] = v
	}
	h.e = startIn(t, t.TempDir(), cfgYAML, Options{
		Processors: all,
		WrapLossFile: func(f LossFile) LossFile {
			return hangingLossFile{f, h.hang, ch, h.entered}
		},
	})
	t.Cleanup(h.openTap)
	t.Cleanup(h.release) // before the daemon's stop (cleanups run last first)
	return h
}

// openTap lets the blocked tap go on (once; also at the test's end).
func (h *hungLedger) openTap() { h.tapOnce.Do(func() { close(h.tap.open) }) }

// waitEntered waits up to 5 s for an fsync of the ledger to hang.
func (h *hungLedger) waitEntered(t *testing.T, what string) {
	t.Helper()
	for by := time.Now().Add(5 * time.Second); h.entered.Load() == 0 && time.Now().Before(by); {
		time.Sleep(10 * time.Millisecond)
	}
	if h.entered.Load() == 0 {
		t.Fatalf("no fsync of the losses ledger started %s", what)
	}
}

// stopBound is DESIGN §12's bound on a stop with shutdownTimeoutMillis 300.
const stopBound = 2300 * time.Millisecond

// checkStopBound runs e.Stop and fails t unless it returns within
// stopBound (why: the state it stops in). Still running 5 s later, it
// calls release (nil: none) so that the stop can end and says how a
// reload (reloaded; nil: none) stands.
func checkStopBound(t *testing.T, e *env, release func(), reloaded <-chan error, why string) {
	t.Helper()
	start := time.Now()
	done := make(chan struct{})
	go func() { e.Stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		rs := ""
		if reloaded != nil {
			select {
			case err := <-reloaded:
				rs = fmt.Sprintf(" (the reload returned %v)", err)
			default:
				rs = " (the reload still running)"
			}
		}
		if release != nil {
			release()
		}
		<-done
		t.Errorf("%s: Stop still running 5 s after it began%s; it returned %v after it began, once let go. DESIGN §12: a stop ends within shutdownTimeoutMillis + 2 s (%v)",
			why, rs, time.Since(start), stopBound)
		return
	}
	took := time.Since(start)
	t.Logf("Stop took %v", took)
	if took > stopBound {
		t.Errorf("%s: Stop took %v; DESIGN §12 bound shutdownTimeoutMillis + 2 s = %v", why, took, stopBound)
	}
}
