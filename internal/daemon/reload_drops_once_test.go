// A finding of the ninth session's review 9b, fixed in the tenth: a
// feed restarted by a reload counts no drop twice.

package daemon

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"tailfeed/status"
)

// TestRev9BFixedReloadCountsDropsOnce — DESIGN §2 drops "are counted"; §7
// `dropped` and losses.jsonl's amounts ("Every counted loss is also
// appended"); §12 "Counters are never reset by a reload" and a restarted
// feed re-reads from its pointer, each subscriber skipping what it
// finished. A best-effort tap (DROP_AFTER_SPIN, queueCapacity 16, blocked)
// and a pull subscriber hold that no client polls (it takes up to 1,000
// lines in flight, unacknowledged: the pointer stays at 0). Lines are read; the tap
// drops most of them. A reload that changes pollIntervalMillis restarts the
// feed, which re-reads from the pointer. Expected: each line is counted
// lost to the tap at most once (dropped ≤ lines read). Observed: the
// re-read lines, which the tap's skip (a best-effort queue skips all that
// was published) would finish unseen, are dropped for it again at the
// publish (its queue is still full of the blocked call's lines) and
// counted a second time: dropped 368 of 200 lines read (ledger 368).
// Every run, until the tenth session: a queue now knows its group's re-read
// skip (SetPublishSkip), and a drop or refusal at the publish of a line the
// group finishes unseen counts nothing.
func TestRev9BFixedReloadCountsDropsOnce(t *testing.T) {
	dir := t.TempDir()
	tap := newBlocker()
	defer close(tap.open)
	e := startIn(t, dir, rev9bHoldDropConfig, Options{Processors: map[string]Build{"tap": tap.build}})
	e.appendLines(numbered("d-", 0, 200)...)
	f := e.waitFor("paused with drops", 10*time.Second, func(f status.FeedReport) bool { return f.Dropped > 0 && f.Sequence > 0 })
	time.Sleep(300 * time.Millisecond)
	f = e.report().Feeds[0]
	read := f.Sequence
	e.rewrite(strings.Replace(rev9bHoldDropConfig, "pollIntervalMillis: 20", "pollIntervalMillis: 30", 1))
	if code, body := e.reload(); code != http.StatusOK {
		t.Fatalf("reload: %d %s", code, body)
	}
	time.Sleep(1000 * time.Millisecond)
	f = e.report().Feeds[0]
	if f.Dropped > read {
		t.Errorf("%d lines were read (the pointer held at 0 by the pull subscriber hold); after a reload the feed counts dropped %d (ledger %d) — lines counted lost to the tap a second time when re-read. DESIGN §2 drops \"are counted\", §7",
			read, f.Dropped, ledgerAmount(t, dir, "dropped"))
	}
}
