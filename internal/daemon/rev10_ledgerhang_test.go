package daemon

// Findings of the tenth session's review 10a (DESIGN and the diff only),
// each fixed the same session: the test failed before its fix; its comment
// gives what was observed then.

// Review 10a of the tenth session's bounded ledger waits (a hung
// losses-ledger fsync must hang neither a stop nor a report).

import (
	"context"
	"os"

	"tailfeed/config"
	"tailfeed/processor"
	"testing"
	"time"
)

const rev10TruncConfig = `
dataDir: %DIR%/state
status: {listen: "127.0.0.1:0", token: sesame}
shutdownTimeoutMillis: 300
feeds:
  - name: app
    path: %DIR%/app.log
    queueCapacity: 4
    maxPendingAcks: 8
    pollIntervalMillis: 20
    commitSyncMillis: 1
processors:
  - {name: tap, feed: app, type: discard}
`

// TestRev10FixedBStopHangsWhenASourceLossMeetsAHungLedger — DESIGN §12
// Signals: a stop ends "within shutdownTimeoutMillis plus 2 s"; the diff's
// claim (losses.go, daemon.go): "a hung fsync of the ledger does not hang
// a stop". A pointer-holding subscriber is blocked (the window full, the
// source paused but still looking at its file); the losses ledger's fsync
// stops returning (a dying disk); the file is then truncated with bytes the
// source saw but had not read: a live truncation, counted in lostBytes
// through Config.OnLoss, which appends AND fsyncs the entry under the
// ledger's mu on the source's goroutine. Expected: Stop returns within
// 300 ms + 2 s. Observed (2 of 2 runs): Stop is still running 5 s later and
// returns only when the fsync is let go — the source's goroutine is stuck
// in OnLoss (onLoss → appendLocked → Sync), so Stop waits without bound on
// the feed's run (<-f.runDone), before any of the diff's bounded waits. The
// diff bounds recordLosses/SyncLosses/close only; the source's synchronous
// loss path, the one that hangs here, has no bound. Predates the diff (it
// fails the same way on 2e136fb^), but the diff claims the bound.
// Observed: "truncated (size 0 < read 1114112) with no copy found;
// 1585888 bytes … lost", Stop returned 5.3 s after it began, when the
// test let the fsync go.
func TestRev10FixedBStopHangsWhenASourceLossMeetsAHungLedger(t *testing.T) {
	h := rev10TruncHung(t)
	e := h.e
	checkStopBound(t, e, h.release, nil, "the losses ledger's fsync hangs and the source is stuck counting a live truncation")
}

// TestRev10OKReportAnswersWhenASourceLossMeetsAHungLedger — the same state
// as TestRev10FixedB (the source's goroutine stuck in OnLoss on a hung ledger
// fsync): the feed.status report still answers within ledgerWait + slack
// (DESIGN §7; the diff's bounded report). Passed 2 of 2 runs.
func TestRev10OKReportAnswersWhenASourceLossMeetsAHungLedger(t *testing.T) {
	e := rev10TruncHung(t).e
	got := make(chan string, 1)
	start := time.Now()
	go func() {
		r := e.d.Report()
		got <- "answered"
		_ = r
	}()
	select {
	case <-got:
		t.Logf("report answered after %v", time.Since(start))
	case <-time.After(3 * time.Second):
		t.Errorf("feed.status did not answer within 3 s while the source is stuck counting a loss on a hung ledger fsync (the diff: a report waits ledgerWait, 1 s)")
	}
}

// TestRev10FixedJStopBoundHungLedgerPlusStuckSink — DESIGN §12 Signals: a stop
// ends "within shutdownTimeoutMillis plus 2 s". abandonAfter (1 s) is
// "part of the 2 s"; the diff adds, for a hung losses ledger, ledgerStopWait
// (500 ms) for the recorder, recordLosses and the final syncs, and another
// ledgerStopWait in lossLedger.close: 2 s in all before anything else the
// stop does (drain bookkeeping, the final commits, the listener's
// shutdown). A best-effort tap (blocked) drops lines, the ledger's fsync
// then hangs, and the pointer-holding subscriber f is stuck in a call that
// ignores its context. Expected: Stop within 300 ms + 2 s = 2.3 s.
// Observed (3 of 3 runs): Stop took 2.304 s, 2.312 s, 2.315 s — over by a
// few ms: the waits sum to exactly the 2 s, so any other work of the stop
// overflows it (a pull long-poll open at the stop adds up to 1 s more in
// srv.Shutdown, pre-existing). Before the diff the stop hung on the ledger.
func TestRev10FixedJStopBoundHungLedgerPlusStuckSink(t *testing.T) {
	s := &lineStuck{stopAt: "d-000050", entered: make(chan struct{}), letGo: make(chan struct{})}
	defer close(s.letGo)
	h := newHungLedger(t, dropConfig, map[string]Build{
		"f": func(*config.Processor, *processor.Group) (any, error) { return s, nil }})
	e := h.e
	h.hang.Store(true)
	e.appendLines(numbered("d-", 0, 2000)...)
	select {
	case <-s.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("f never got stuck")
	}
	h.waitEntered(t, "after drops")
	checkStopBound(t, e, h.release, nil, "a hung losses ledger and a sink stuck in a call")
}

// TestRev10FixedKStopDuringAReloadOnHungLedger — DESIGN §12 Signals: a stop
// ends within shutdownTimeoutMillis + 2 s, and reload.go: "the stop's bound
// holds during a reload too"; the diff bounds a reload's stopped feeds'
// final syncs (ledgerStopWait) and claims a hung ledger fsync hangs no stop.
// A best-effort tap drops lines, the losses ledger's fsync hangs; a reload
// that restarts the feed (a processor added) runs; SIGTERM (cancel + Stop)
// comes 300 ms later. Expected: Stop returns within 2.3 s. Observed (2 of
// 2 runs): Stop still running 5 s after it began, the reload still
// running; it returned 5.0 s after, once the test let the fsync go. A
// goroutine dump shows the reload in recordLosses (losses.go:418) called
// from reload.go:315. The reload never returns — after its stopped feeds' bounded syncs
// it calls d.recordLosses() ("the stopped feeds' last deltas", unbounded)
// which waits for the ledger's mu held across the hung fsync — and Stop
// waits for the reload (reloadMu) until the fsync is let go. On the parent
// the stop hung on the ledger anyway; the diff's bound misses this path.
func TestRev10FixedKStopDuringAReloadOnHungLedger(t *testing.T) {
	e, release := startHungLedger(t)
	e.rewrite(dropConfig + "  - {name: extra, feed: app, type: discard}\n")
	reloaded := make(chan error, 1)
	go func() { reloaded <- e.d.Reload(context.Background()) }()
	time.Sleep(300 * time.Millisecond)
	checkStopBound(t, e, release, reloaded, "SIGTERM during a reload, the losses ledger's fsync hung")
}

// rev10TruncHung starts rev10TruncConfig's daemon, its pointer-holding tap
// blocked, appends ~3 MB (more than the source reads ahead of a full
// window) and, once the source paused, makes the losses ledger's fsync
// hang and truncates the input: the source counts the live truncation
// through OnLoss, which hangs.
func rev10TruncHung(t *testing.T) *hungLedger {
	t.Helper()
	return rev10TruncHungOn(t, rev10TruncConfig)
}

// rev10TruncHungOn is rev10TruncHung on cfgYAML (rev10TruncConfig's feed
// and tap).
func rev10TruncHungOn(t *testing.T, cfgYAML string) *hungLedger {
	t.Helper()
	h := newHungLedger(t, cfgYAML, nil)
	h.e.appendLines(numbered("t-", 0, 300000)...)
	for by := time.Now().Add(5 * time.Second); h.tap.entered.Load() == 0 && time.Now().Before(by); {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // the source paused, its look saw the size
	h.hang.Store(true)
	if err := os.Truncate(h.e.input, 0); err != nil {
		t.Fatal(err)
	}
	h.waitEntered(t, "after the truncation (lostBytes not counted through OnLoss?)")
	return h
}
