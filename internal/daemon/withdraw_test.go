package daemon

import (
	"sync/atomic"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// TestWithdrawAfterAFailedWriteKeepsEarlierEntries: a refused release or
// purge withdraws its entry after the append failed. Since writeLocked
// counts only what it wrote, a withdraw must take back only what it found
// in the file: taking back the refused entry's count too dropped an
// earlier, real entry's, and the feed said lossless: true over a loss
// still in losses.jsonl (DESIGN §7 "A restart never turns a lossy feed
// green", nor does a refused request).
func TestWithdrawAfterAFailedWriteKeepsEarlierEntries(t *testing.T) {
	dir := t.TempDir()
	var failing atomic.Bool
	l, err := openLossLedger(dir, hclog.NewNullLogger(), wrapFaultyLoss(&failing))
	if err != nil {
		t.Fatal(err)
	}
	earlier := LossEntry{V: lossFormat, Feed: "app", Counter: "dropped", Amount: 3, Time: "t1", Detail: "earlier drops"}
	refused := LossEntry{V: lossFormat, Feed: "app", Counter: "released", Amount: 1, Time: "t2", Detail: "a release refused"}
	l.mu.Lock()
	if err := l.appendLocked([]LossEntry{earlier}); err != nil {
		t.Fatal(err)
	}
	failing.Store(true)
	if err := l.appendLocked([]LossEntry{refused}); err == nil {
		t.Fatal("the injected fault did not fail the append")
	}
	failing.Store(false)
	if err := l.withdrawLocked([]LossEntry{refused}); err != nil {
		t.Fatal(err)
	}
	l.mu.Unlock()
	if !l.has("app") {
		t.Error("the earlier entry is still in losses.jsonl, yet the ledger counts none for the feed (lossless would be true)")
	}
	entries, _, err := l.read()
	if err != nil || len(entries) != 1 || entries[0] != earlier {
		t.Errorf("losses.jsonl holds %v (%v), want only the earlier entry", entries, err)
	}
}
