package daemon

import (
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"tailfeed/internal/datadir"
	"tailfeed/status"
	"testing"
	"time"
)

// Findings of the ninth session's review 9d, fixed in the tenth: a purge
// that fails after its count (the dead-letter rewrite, the ledger's fsync)
// takes the count back, so the purge retried counts its lines once.

// TestRev9DFixedEPurgeRewriteFailsCountedOnce — DESIGN §6 "Purged entries count
// in released"; §7 `released` counts lines given up (and losses.jsonl's
// amounts: "Every counted loss is also appended"); the change under review:
// a purge counts its loss and makes it durable before the entries leave the
// dead-letter ledger (Ledger.RemoveCounted: count, then rewriteLocked). Two
// lines are dead-lettered. The dead-letter ledger's rewrite then fails (its
// temporary file cannot be created: a directory stands at
// dlq/sink.jsonl.tmp — any write error of the rewrite does the same).
// DELETE /admin/dlq/sink?max=1 answers an error and removes nothing, yet its
// count stays (released 1, losses.jsonl released 1, deadLettered 2). Once the
// rewrite works, the same purge is retried and succeeds. Expected: one line
// given up, released 1 (a failed purge is not counted, as a refused one is
// not: "a purge refused is not counted"). Observed: released 2 and
// losses.jsonl released 2 for one purged line (deadLettered 1): the count of
// the failed rewrite is never taken back. Every run, until the tenth
// session: a rewrite that fails now takes the count back (PurgeCount's
// takeBack: the entry withdrawn from losses.jsonl, the counter lowered).
func TestRev9DFixedEPurgeRewriteFailsCountedOnce(t *testing.T) {
	dir := t.TempDir()
	var armed atomic.Bool
	armed.Store(true)
	e := startIn(t, dir, dlqConfig, Options{
		Processors: map[string]Build{"sink": poisonSink(&armed, "")},
	})
	e.appendLines("a", "poison 1", "poison 2", "b")
	e.waitFor("settled with two dead letters", 10*time.Second, func(f status.FeedReport) bool {
		return f.Settled && f.DeadLettered == 2
	})
	tmp := datadir.DeadLetters(filepath.Join(dir, "state"), "sink") + ".tmp"
	if err := os.MkdirAll(filepath.Join(tmp, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	code, body := e.do(http.MethodDelete, "/admin/dlq/sink?max=1", "sesame")
	f := e.report().Feeds[0]
	t.Logf("purge while the rewrite fails: %d %s; released %d deadLettered %d, losses.jsonl released %d",
		code, body, f.Released, f.DeadLettered, ledgerAmount(t, dir, "released"))
	if code == http.StatusOK {
		t.Fatalf("purge answered 200 while the dead-letter ledger cannot be rewritten")
	}
	if err := os.RemoveAll(tmp); err != nil {
		t.Fatal(err)
	}
	if code, body := e.do(http.MethodDelete, "/admin/dlq/sink?max=1", "sesame"); code != http.StatusOK {
		t.Fatalf("purge with the rewrite working: %d %s", code, body)
	}
	f = e.report().Feeds[0]
	if f.DeadLettered != 1 {
		t.Fatalf("after one successful purge of 1: deadLettered %d, want 1", f.DeadLettered)
	}
	if n := ledgerAmount(t, dir, "released"); f.Released != 1 || n != 1 {
		t.Errorf("one dead letter purged (deadLettered 2 → 1), but released %d and losses.jsonl released %d (want 1 and 1): the purge whose rewrite failed (%d %s) removed nothing and stayed counted. DESIGN §6 \"Purged entries count in released\"",
			f.Released, n, code, body)
	}
}

// TestRev9DFixedGPurgeRefusedOnFsyncCountedOnce — DESIGN §6 "Purged entries
// count in released"; §7 released counts lines given up, losses.jsonl's
// amounts likewise; the change under review: "purge of … dead letters
// refuse (500) when the ledger cannot be written, counting and syncing
// before removing anything" and lossCount: "A failed fsync keeps the
// count". One line is dead-lettered. The losses ledger's fsync fails (its
// write succeeds). DELETE /admin/dlq/sink is refused (500, the dead letter
// stays) — but its count stays: released 1 while deadLettered 1 (the same
// line counted as given up and as kept). The operator retries once the
// ledger works: the purge goes through. Expected: one line given up,
// released 1 and losses.jsonl released 1. Observed: released 2 and
// losses.jsonl released 2 for the one purged line. Every run, until the
// tenth session: a failed fsync now takes the count back when its entry can
// be withdrawn (lossCount).
func TestRev9DFixedGPurgeRefusedOnFsyncCountedOnce(t *testing.T) {
	dir := t.TempDir()
	var armed, failing atomic.Bool
	armed.Store(true)
	e := startIn(t, dir, dlqConfig, Options{
		Processors: map[string]Build{"sink": poisonSink(&armed, "")},
		WrapLossFile: func(f LossFile) LossFile {
			return syncFailingLossFile{f, &failing}
		},
	})
	e.appendLines("a", "poison line", "b")
	e.waitFor("settled with a dead letter", 10*time.Second, func(f status.FeedReport) bool {
		return f.Settled && f.DeadLettered == 1
	})
	failing.Store(true)
	code, body := e.do(http.MethodDelete, "/admin/dlq/sink", "sesame")
	f := e.report().Feeds[0]
	failing.Store(false)
	t.Logf("purge while the ledger's fsync fails: %d %s; released %d deadLettered %d", code, body, f.Released, f.DeadLettered)
	if code == http.StatusOK {
		t.Fatalf("purge answered 200 while the losses ledger's fsync fails")
	}
	if code, body := e.do(http.MethodDelete, "/admin/dlq/sink", "sesame"); code != http.StatusOK {
		t.Fatalf("purge with the ledger back: %d %s", code, body)
	}
	f = e.report().Feeds[0]
	if f.DeadLettered != 0 {
		t.Fatalf("after the purge: deadLettered %d", f.DeadLettered)
	}
	if n := ledgerAmount(t, dir, "released"); f.Released != 1 || n != 1 {
		t.Errorf("one dead letter purged, but released %d and losses.jsonl released %d (want 1 and 1): the purge refused for a failed fsync (%d %s) kept its count, and the retried purge counted the same line again. DESIGN §6 \"Purged entries count in released\"",
			f.Released, n, code, body)
	}
}
