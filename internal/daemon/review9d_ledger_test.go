package daemon

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/status"
)

// TestRev9DFixedARefusedPurgeLeavesFeedLossy — DESIGN §6 "Purged entries count
// in released"; §7 lossless is false only over a loss ("Nothing green over a
// loss", and never red over none: a status field that lies); the change
// under review: "release/purge of … dead letters refuse (500) when the
// ledger cannot be written, counting and syncing before removing anything"
// and Queue.AddReleased: "a purge refused is not counted". A file sink
// dead-letters "poison" (the feed is lossless: the line is in the
// dead-letter ledger). The losses ledger fails every write; DELETE
// /admin/dlq/sink is refused (the dead letter stays, released 0). The ledger
// works again and the dead letter is replayed (it reaches the sink: deadLettered
// 0). Expected: the feed is lossless true (nothing was given up; losses.jsonl
// holds nothing), as it is after the same replay without the refused purge
// (dlq_test.go). Observed: lossCount's failed
// recordFeedLocked → writeLocked had already counted the entry in the
// ledger's per-feed counts (l.counts[feed]++ before the write), and
// lossCount's undo takes back only the queue's released counter (no
// withdrawLocked, unlike heldRelease, purgeOrphan and appendAsideLoss): the
// report's Ledgered stays true and the feed reports lossless false with an
// empty losses.jsonl, for the rest of the run (a restart turns it green).
func TestRev9DFixedARefusedPurgeLeavesFeedLossy(t *testing.T) {
	dir := t.TempDir()
	var armed, ledgerFailing atomic.Bool
	armed.Store(true)
	e := startIn(t, dir, dlqConfig, Options{
		Processors:   map[string]Build{"sink": poisonSink(&armed, "")},
		WrapLossFile: wrapFaultyLoss(&ledgerFailing),
	})
	e.appendLines("a", "poison line", "b")
	f := e.waitFor("settled with a dead letter", 10*time.Second, func(f status.FeedReport) bool {
		return f.Settled && f.DeadLettered == 1
	})
	ledgerFailing.Store(true)
	code, body := e.do(http.MethodDelete, "/admin/dlq/sink", "sesame")
	ledgerFailing.Store(false)
	if code == http.StatusOK {
		t.Fatalf("purge while the losses ledger fails answered 200 %s", body)
	}
	time.Sleep(200 * time.Millisecond)
	f = e.report().Feeds[0]
	if f.Released != 0 || f.DeadLettered != 1 {
		t.Fatalf("after the refused purge: released %d deadLettered %d, want 0 and 1", f.Released, f.DeadLettered)
	}
	if n := ledgerAmount(t, dir, "released"); n != 0 {
		t.Fatalf("losses.jsonl holds released %d after a refused purge", n)
	}
	// The dead letter is replayed (the sink works again): it reaches its
	// processor and leaves the dead-letter ledger; nothing was lost.
	armed.Store(false)
	var res status.DLQResult
	e.dlqJSON(http.MethodPost, "/admin/dlq/sink/replay", http.StatusOK, &res)
	if res.Replayed != 1 {
		t.Fatalf("replay %+v", res)
	}
	time.Sleep(300 * time.Millisecond)
	f = e.report().Feeds[0]
	if f.DeadLettered != 0 || f.Released != 0 {
		t.Fatalf("after the replay: deadLettered %d released %d", f.DeadLettered, f.Released)
	}
	if !f.Lossless {
		t.Errorf("a purge refused (%d %s) gave nothing up and losses.jsonl holds no entry, yet the feed reports lossless false (released %d, deadLettered %d): the refused count stays in the ledger's per-feed entry count (writeLocked counts before writing; lossCount's undo does not withdraw). DESIGN §7: lossless false only over a loss",
			code, body, f.Released, f.DeadLettered)
	}
}

// hangingLossFile blocks every fsync of the losses ledger while hang is set
// (a disk that stops answering), until release is closed.
type hangingLossFile struct {
	LossFile
	hang    *atomic.Bool
	release chan struct{}
	entered *atomic.Int32
}

func (f hangingLossFile) Sync() error {
	if f.hang.Load() {
		f.entered.Add(1)
		<-f.release
	}
	return f.LossFile.Sync()
}

// syncFailingLossFile fails every fsync of the losses ledger (its writes
// succeed) while failing is set.
type syncFailingLossFile struct {
	LossFile
	failing *atomic.Bool
}

func (f syncFailingLossFile) Sync() error {
	if f.failing.Load() {
		return errLossInjected
	}
	return f.LossFile.Sync()
}
