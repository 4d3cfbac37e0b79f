package daemon

import (
	"context"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/config"
	"tailfeed/feed"
	"tailfeed/internal/datadir"
	"tailfeed/pointer"
	"tailfeed/processor"
	"tailfeed/sink/file"
	"tailfeed/status"
)

const rev9bHeldConfig = `
dataDir: %DIR%/state
status: {listen: "127.0.0.1:0", token: sesame}
shutdownTimeoutMillis: 300
feeds:
  - {name: app, path: %DIR%/app.log, pollIntervalMillis: 20, commitSyncMillis: 1}
processors:
  - {name: other, feed: app, type: file, path: %DIR%/other.log}
  - name: archive
    feed: app
    type: file
    path: %DIR%/out.log
    retry: {initialMillis: 5, maxMillis: 20, attempts: 3}
`

// rev9bCopy copies dir (the data directory, input and outputs as they are
// on disk now: what a kill -9 at this moment leaves) into a new directory.
func rev9bCopy(t *testing.T, dir string) string {
	t.Helper()
	to := t.TempDir()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o700)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	return to
}

// TestRev9BFixedHeldReleaseLedgerFailsPointerPasses — DESIGN §7 "Every counted
// loss is also appended (fsynced) to dataDir/losses.jsonl … A restart never
// turns a lossy feed green by itself"; §12 a removed processor's hold is
// given up by POST /admin/release (counted in released). The ledger change
// under review: "a loss is written and fsynced to losses.jsonl before the
// feed's pointer commits past the line; releases sync before the HTTP
// answer". A file processor archive failing (ENOSPC) holds line "a"; a
// reload removes it (stalled "removed subscriber archive holds 1 lines").
// The losses ledger then fails every write and fsync; the hold is released.
// Expected: the release is refused, or at least the pointer does not commit
// past "a" until the release is in losses.jsonl. Observed: heldRelease
// ignores appendLocked's failure: the release answers 200, removed.json
// drops the hold, SetHeld(false) lets PollAcks run — no queue noted a loss
// (lossGen unchanged), so nothing waits for a sync — and the pointer
// commits past "a" with no "released" entry; a daemon started on a copy of
// the data directory at that moment (a kill -9) reports lossless true.
// Every run.
// Fixed: heldRelease refuses the release (503, the hold stays, its entry
// withdrawn) when the ledger's append or fsync fails.
func TestRev9BFixedHeldReleaseLedgerFailsPointerPasses(t *testing.T) {
	dir := t.TempDir()
	var sinkFailing, ledgerFailing atomic.Bool
	sinkFailing.Store(true)
	e := startIn(t, dir, rev9bHeldConfig, Options{
		Processors:   map[string]Build{"archive": faultySink(&sinkFailing, file.FsyncNever)},
		WrapLossFile: wrapFaultyLoss(&ledgerFailing),
	})
	e.appendLines("a")
	e.waitFor("archive holds a", 10*time.Second, stalled)
	without := rev9bHeldConfig[:strings.Index(rev9bHeldConfig, "  - name: archive\n")]
	e.rewrite(without)
	if code, body := e.reload(); code != http.StatusOK {
		t.Fatalf("reload: %d %s", code, body)
	}
	e.waitFor("held by the removed archive", 10*time.Second, func(f status.FeedReport) bool {
		return f.Stalled != nil && strings.Contains(*f.Stalled, "removed subscriber archive")
	})
	ptr := datadir.Pointer(filepath.Join(dir, "state"), "app")
	rec0, _ := pointer.Inspect(ptr)
	ledgerFailing.Store(true)
	code, body := e.release("app", "archive")
	time.Sleep(400 * time.Millisecond)
	rec, err := pointer.Inspect(ptr)
	if err != nil {
		t.Fatal(err)
	}
	if code == http.StatusOK && rec.Offset > rec0.Offset {
		cp := rev9bCopy(t, dir)
		e2 := startIn(t, cp, without, Options{})
		r := e2.report()
		t.Errorf("the losses ledger fails every write and fsync; POST /admin/release/app/archive answered %d %v and the pointer committed past the released line (offset %d → %d) with no ledger entry; a daemon started on a copy of the data directory now (a kill -9) reports lossless %v (feed %v). DESIGN §7 \"Every counted loss is also appended (fsynced) to dataDir/losses.jsonl … A restart never turns a lossy feed green by itself\"",
			code, body, rec0.Offset, rec.Offset, r.Lossless, r.Feeds[0].Lossless)
	}
	if code != http.StatusServiceUnavailable {
		t.Errorf("release while the losses ledger fails: %d %v, want 503", code, body)
	}
	if f := e.report().Feeds[0]; f.Stalled == nil || !strings.Contains(*f.Stalled, "removed subscriber archive") {
		t.Errorf("the refused release let the hold go: stalled %v", f.Stalled)
	}
	ledgerFailing.Store(false)
	if code, body := e.release("app", "archive"); code != http.StatusOK {
		t.Fatalf("release with the ledger back: %d %v", code, body)
	}
	if n := ledgerAmount(t, dir, "released"); n != 1 {
		t.Errorf("losses.jsonl holds released %d after the release, want 1", n)
	}
}

// TestRev9BFixedPurgeLedgerFailsLossForgotten — DESIGN §6 "Purged entries count
// in released"; §7 "Every counted loss is also appended (fsynced) to
// dataDir/losses.jsonl … A restart never turns a lossy feed green by
// itself"; the change under review: "releases/purges sync before the HTTP
// answer". A file sink with onFailure deadLetter dead-letters "poison"
// (the pointer passes it: it is in the dead-letter ledger). The losses
// ledger then fails every write and fsync, and the dead letter is purged
// (DELETE /admin/dlq/sink). Expected: the purge is refused (the entry stays
// in the dead-letter ledger) while its loss cannot be recorded. Observed:
// PurgeDeadLetters removes the entry first, then counts it
// (Queue.AddReleased ignores the sync's error); the purge answers 200; the
// line is now in neither ledger, and a daemon started on a copy of the data
// directory (a kill -9 at that moment) reports lossless true. Every run.
// Fixed: a purge counts its loss and makes it durable before the entries
// leave the dead-letter ledger (Ledger.RemoveCounted through
// Queue.AddReleased's refusable LossCount); when the ledger does not take
// it the purge is refused (500, entries kept) and the count taken back.
func TestRev9BFixedPurgeLedgerFailsLossForgotten(t *testing.T) {
	dir := t.TempDir()
	var armed, ledgerFailing atomic.Bool
	armed.Store(true)
	e := startIn(t, dir, dlqConfig, Options{
		Processors:   map[string]Build{"sink": poisonSink(&armed, "")},
		WrapLossFile: wrapFaultyLoss(&ledgerFailing),
	})
	e.appendLines("a", "poison line", "b")
	e.waitFor("settled with a dead letter", 10*time.Second, func(f status.FeedReport) bool {
		return f.Settled && f.DeadLettered == 1
	})
	ledgerFailing.Store(true)
	code, body := e.do(http.MethodDelete, "/admin/dlq/sink", "sesame")
	if code != http.StatusOK {
		t.Logf("purge refused while the losses ledger fails: %d %s", code, body)
		ledgerFailing.Store(false)
		// A refused purge counts nothing and keeps the dead letter; once
		// the ledger works again the purge goes through and is recorded.
		if f := e.report().Feeds[0]; f.Released != 0 || f.DeadLettered != 1 {
			t.Errorf("after the refused purge: released %d (want 0), deadLettered %d (want 1)", f.Released, f.DeadLettered)
		}
		if code, body := e.do(http.MethodDelete, "/admin/dlq/sink", "sesame"); code != http.StatusOK {
			t.Fatalf("purge with the ledger back: %d %s", code, body)
		}
		if n := ledgerAmount(t, dir, "released"); n != 1 {
			t.Errorf("losses.jsonl holds released %d after the purge, want 1", n)
		}
		return
	}
	cp := rev9bCopy(t, dir)
	ledgerFailing.Store(false)
	e2 := startIn(t, cp, dlqConfig, Options{})
	r := e2.report()
	if r.Lossless || r.Feeds[0].Lossless {
		cb, _ := os.ReadFile(filepath.Join(cp, "state", lossFile))
		t.Errorf("the losses ledger fails; DELETE /admin/dlq/sink answered 200 %s; a daemon started on a copy of the data directory now (a kill -9) reports lossless true (deadLettered %d, losses.jsonl %q): the purged line is recorded nowhere. DESIGN §6 \"Purged entries count in released\", §7 \"A restart never turns a lossy feed green by itself\"",
			body, r.Feeds[0].DeadLettered, cb)
	}
}

// rev9bSlow finishes every batch after delay, whatever its context says
// (a write that takes its time once started).
type rev9bSlow struct {
	delay time.Duration
	n     atomic.Int64
}

func (s *rev9bSlow) ProcessBatch(_ context.Context, b *feed.Batch) (int, error) {
	time.Sleep(s.delay)
	s.n.Add(int64(b.Len()))
	return b.Len(), nil
}

func (s *rev9bSlow) build(*config.Processor, *processor.Group) (any, error) { return s, nil }

const rev9bStopConfig = `
dataDir: %DIR%/state
status: {listen: "127.0.0.1:0", token: sesame}
shutdownTimeoutMillis: 200
feeds:
  - name: app
    path: %DIR%/app.log
    pollIntervalMillis: 20
    commitSyncMillis: 1
    overload:
      subscribers: {tap: {policy: DROP_AFTER_SPIN, spinBoundMillis: 1}}
processors:
  - {name: tap, feed: app, type: discard}
  - {name: slow, feed: app, type: discard}
`

// TestRev9BFixedStopFinalCommitSkippedByLeftAtStop — DESIGN §12 Signals/Reload
// "stop as at shutdown (queues drained within shutdownTimeoutMillis, final
// commit …)"; Source.Close "makes the final commit of exactly what the
// holding queues finished"; §2 re-deliveries only after a crash (or a
// restored sink's catch-up). A pointer-holding processor slow finishes line
// "a" 600 ms after it got it (past shutdownTimeoutMillis 200, within the
// 1 s abandon bound); a best-effort tap (DROP_AFTER_SPIN) still holds "a"
// at the stop, so stopGroups counts it left at stop (a loss noted after
// Drain). Expected: the final commit covers "a" (slow finished it; the
// stop's recordLosses already made the tap's loss durable), the pointer is
// at 2, and the next start does not give "a" to slow again. Observed: the
// final commitStep's PollAcks finds a loss noted that its own publisher has
// not synced (Daemon.recordLosses does not advance lossSynced), starts a
// sync and acknowledges nothing: the pointer stays at 0, and a clean
// restart delivers "a" to slow a second time. Before the ledger change
// the final commit covered it.
// Fixed: before the final commit (Stop, and a reload's stopFeed) the
// daemon runs the feed's loss sync inline (Publisher.SyncLosses), which
// marks the losses durable for that commit's PollAcks.
func TestRev9BFixedStopFinalCommitSkippedByLeftAtStop(t *testing.T) {
	dir := t.TempDir()
	tap := newBlocker()
	defer close(tap.open)
	slow := &rev9bSlow{delay: 600 * time.Millisecond}
	e := startIn(t, dir, rev9bStopConfig, Options{Processors: map[string]Build{"tap": tap.build, "slow": slow.build}})
	e.appendLines("a")
	waitFor(t, "both took a", 10*time.Second, func() bool { return tap.entered.Load() == 1 })
	time.Sleep(50 * time.Millisecond)
	e.Stop()
	if slow.n.Load() != 1 {
		t.Fatalf("slow finished %d lines at the stop, want 1", slow.n.Load())
	}
	rec, err := pointer.Inspect(datadir.Pointer(filepath.Join(dir, "state"), "app"))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Offset != 2 {
		slow2 := &rev9bSlow{}
		tap2 := newBlocker()
		close(tap2.open)
		e2 := startIn(t, dir, rev9bStopConfig, Options{Processors: map[string]Build{"tap": tap2.build, "slow": slow2.build}})
		time.Sleep(500 * time.Millisecond)
		e2.Stop()
		t.Errorf("slow finished \"a\" during the stop, yet the final commit left the pointer at %d (want 2); the next clean start gave slow %d line(s) again. "+
			"DESIGN §2: re-deliveries only after a crash; Source.Close: the final commit is exactly what the holding queues finished", rec.Offset, slow2.n.Load())
	}
}

// TestRev9BFixedReloadWhileLedgerFailsPointerPassesDrops — DESIGN §7 "Every
// counted loss is also appended (fsynced) to dataDir/losses.jsonl … A
// restart never turns a lossy feed green by itself"; the change under
// review: "a loss (drop …) is written and fsynced to losses.jsonl before
// the feed's pointer commits past the line". A best-effort tap
// (DROP_AFTER_SPIN, queueCapacity 1, blocked) next to a discard subscriber
// f; the losses ledger fails every write and fsync; 2,000 lines are read
// and nearly all dropped for the tap. While the ledger fails the pointer
// rightly stays (at most the tap's two lines). The tap is unblocked and a
// reload that changes the feed's queueCapacity to 4096 restarts it (the new
// instance drops nothing). Expected: the restarted instance does not
// commit past the dropped lines either while their loss is not in the
// ledger. Observed: the new instance's publisher starts with new queues
// (lossGen 0 = lossSynced 0): it re-reads from the pointer, the tap skips
// the re-read (finalAck: a best-effort queue skips everything published),
// f finishes it, and the pointer commits to the end of the input while
// losses.jsonl holds no "dropped" entry; a daemon started on a copy of the
// data directory at that moment (a kill -9) reports lossless true. Every
// run (3 of 3). Introduced with the gate: the new instance's publisher does
// not know of the stopped one's unsynced losses.
// Fixed: the restarted instance inherits the stopped one as prev (its
// lossSync appends prev's unrecorded deltas first) and its publisher starts
// owing a sync (Publisher.OweLossSync): nothing is acknowledged until one
// succeeds.
func TestRev9BFixedReloadWhileLedgerFailsPointerPassesDrops(t *testing.T) {
	dir := t.TempDir()
	var failing atomic.Bool
	failing.Store(true)
	tap := newBlocker()
	e := startIn(t, dir, dropConfig, Options{
		Processors:   map[string]Build{"tap": tap.build},
		WrapLossFile: wrapFaultyLoss(&failing),
	})
	const n = 2000
	const lineLen = int64(len("d-000000\n"))
	e.appendLines(numbered("d-", 0, n)...)
	e.waitFor("every line read, drops counted", 10*time.Second, func(f status.FeedReport) bool {
		return f.Sequence == n && f.Dropped > 0
	})
	ptr := datadir.Pointer(filepath.Join(dir, "state"), "app")
	time.Sleep(200 * time.Millisecond)
	if rec, err := pointer.Inspect(ptr); err == nil && rec.Offset > 2*lineLen {
		t.Fatalf("before the reload the pointer already passed %d lines", rec.Offset/lineLen)
	}
	// The reload gives the feed room (queueCapacity 4096) and the tap is
	// unblocked: the new instance drops nothing.
	close(tap.open)
	e.rewrite(strings.Replace(dropConfig, "queueCapacity: 1", "queueCapacity: 4096", 1))
	if code, body := e.reload(); code != http.StatusOK {
		t.Fatalf("reload: %d %s", code, body)
	}
	time.Sleep(700 * time.Millisecond)
	{
		r := e.report()
		t.Logf("after the reload: sequence %d pending %d dropped %d subs %+v", r.Feeds[0].Sequence, r.Feeds[0].PendingAcks, r.Feeds[0].Dropped, r.Feeds[0].Subscribers)
	}
	rec, err := pointer.Inspect(ptr)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Offset > 2*lineLen {
		cp := rev9bCopy(t, dir)
		ledger, _ := os.ReadFile(filepath.Join(cp, "state", lossFile))
		e2 := startIn(t, cp, strings.Replace(dropConfig, "DROP_AFTER_SPIN", "PAUSE", 1), Options{})
		r := e2.report()
		t.Errorf("the losses ledger fails; after a reload restarted the feed, the pointer committed past %d lines the tap never got (dropped) with losses.jsonl %q; a daemon started on a copy of the data directory now (a kill -9) reports lossless %v. DESIGN §7 \"Every counted loss is also appended (fsynced) to dataDir/losses.jsonl … A restart never turns a lossy feed green by itself\"",
			rec.Offset/lineLen, ledger, r.Lossless)
	}
	failing.Store(false)
}

const rev9bHoldDropConfig = `
dataDir: %DIR%/state
status: {listen: "127.0.0.1:0", token: sesame}
shutdownTimeoutMillis: 200
feeds:
  - name: app
    path: %DIR%/app.log
    queueCapacity: 16
    pollIntervalMillis: 20
    overload:
      subscribers: {tap: {policy: DROP_AFTER_SPIN, spinBoundMillis: 1}}
processors:
  - {name: tap, feed: app, type: discard}
  - {name: hold, feed: app, type: pull}
`

// TestRev9BOKStopWhileLedgerFails — DESIGN §12 Signals: a stop ends within
// shutdownTimeoutMillis plus 2 s. A best-effort tap drops lines while the
// losses ledger fails every write and fsync (the feed acknowledges nothing:
// its loss sync never succeeds). Expected: Stop returns within 300 ms + 2 s,
// and the pointer did not pass the dropped lines.
func TestRev9BOKStopWhileLedgerFails(t *testing.T) {
	dir := t.TempDir()
	var failing atomic.Bool
	failing.Store(true)
	tap := newBlocker()
	defer close(tap.open)
	e := startIn(t, dir, dropConfig, Options{
		Processors:   map[string]Build{"tap": tap.build},
		WrapLossFile: wrapFaultyLoss(&failing),
	})
	const lineLen = int64(len("d-000000\n"))
	e.appendLines(numbered("d-", 0, 2000)...)
	e.waitFor("drops counted", 10*time.Second, func(f status.FeedReport) bool { return f.Dropped > 0 })
	start := time.Now()
	done := make(chan struct{})
	go func() { e.Stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatalf("Stop still running after 15 s while the losses ledger fails")
	}
	// 300 ms + 2 s, and 3 s of slack for a loaded machine: a stop waiting
	// for the loss sync (which never succeeds here) does not return.
	if d := time.Since(start); d > 300*time.Millisecond+2*time.Second+3*time.Second {
		t.Errorf("Stop took %v with shutdownTimeoutMillis 300 (bound: + 2 s, and 3 s of slack for a loaded machine)", d)
	}
	rec, err := pointer.Inspect(datadir.Pointer(filepath.Join(dir, "state"), "app"))
	if err == nil && rec.Offset > 2*lineLen {
		t.Errorf("the pointer passed %d lines while the losses ledger failed", rec.Offset/lineLen)
	}
}

// TestRev9BFixedAsideLedgerFailsReloadRefused — DESIGN §6 "Purged entries
// count in released", §7 "Every counted loss is also appended (fsynced)";
// §12 a processor whose target changes starts as new, its state (dead
// letters included) moved aside and given up. The same pattern as the
// purge: the loss is recorded before the dead letters leave their ledger.
// While the losses ledger fails every write and fsync, a reload that
// changes the dead-lettering sink's target is refused (rolled back: the
// dead letter stays where it was, nothing is moved aside); once the ledger
// works again the same reload goes through and is recorded.
// Fixed: appendAsideLoss returns the ledger's error and moveStateAside
// moves nothing when it fails; the reload then rolls back.
func TestRev9BFixedAsideLedgerFailsReloadRefused(t *testing.T) {
	dir := t.TempDir()
	var armed, ledgerFailing atomic.Bool
	armed.Store(true)
	e := startIn(t, dir, dlqConfig, Options{
		Processors:   map[string]Build{"sink": poisonSink(&armed, "")},
		WrapLossFile: wrapFaultyLoss(&ledgerFailing),
	})
	e.appendLines("a", "poison line", "b")
	e.waitFor("settled with a dead letter", 10*time.Second, func(f status.FeedReport) bool {
		return f.Settled && f.DeadLettered == 1
	})
	ledgerFailing.Store(true)
	e.rewrite(strings.Replace(dlqConfig, "%DIR%/out.log", "%DIR%/out2.log", 1))
	code, body := e.reload()
	if code == http.StatusOK {
		t.Errorf("reload moving the dead letters aside answered 200 %s while the losses ledger fails", body)
	}
	if f := e.report().Feeds[0]; f.DeadLettered != 1 || f.Released != 0 {
		t.Errorf("after the refused reload: deadLettered %d (want 1), released %d (want 0)", f.DeadLettered, f.Released)
	}
	if _, err := os.Stat(datadir.DeadLetters(filepath.Join(dir, "state"), "sink")); err != nil {
		t.Errorf("the dead-letter ledger left its place: %v", err)
	}
	ledgerFailing.Store(false)
	if code, body := e.reload(); code != http.StatusOK {
		t.Fatalf("reload with the ledger back: %d %s", code, body)
	}
	if n := ledgerAmount(t, dir, "released"); n != 1 {
		t.Errorf("losses.jsonl holds released %d after the move aside, want 1", n)
	}
}
