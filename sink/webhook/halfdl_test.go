package webhook

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/internal/grouptest"
	"tailfeed/processor"
)

// A request runs out of attempts (the receiver applied it, its response was
// lost), its dead letter fails after 2 of its 4 lines, the daemon stops.
// After the restart the group leaves the 2 lettered lines out of the view,
// so the recorded request cannot be rebuilt from its first line: the rest
// must go to the ledger, never to the receiver under a new key (which
// would apply p2 and p3 twice) — whether the rest comes in one batch or in
// several.
func TestWebhookHalfDeadLetterIsNotSentAfterRestart(t *testing.T) {
	for _, split := range [][]int{{4}, {3, 1}, {1, 1, 1, 1}} {
		t.Run(fmt.Sprint(split), func(t *testing.T) {
			dir := t.TempDir()
			h := newHookServer(t, func(n int, q hookReq) (int, map[string]string) {
				if n == 0 {
					return 0, nil // applied, response lost
				}
				return 200, nil
			})
			l, err := processor.OpenLedger(filepath.Join(dir, "hook.jsonl"), nil)
			if err != nil {
				t.Fatal(err)
			}
			flaky := &ledgerFailsOnce{Ledger: l, after: true}
			flaky.failAt.Store(3)
			r1 := newHookRig(t, dir, processor.GroupConfig{Retry: grouptest.FastRetry(1), OnFailure: processor.DeadLetter, Ledger: flaky},
				WebhookConfig{URL: h.srv.URL, BatchMaxLines: 4})
			r1.Publish("p0", "p1", "p2", "p3")
			waitFor(t, "the stuck dead letter", func() bool { return flaky.calls.Load() >= 4 })
			if st, why := r1.Q.State(); st != feed.Fenced {
				t.Fatalf("state %v %q, want FENCED", st, why)
			}
			r1.stop()
			sent := len(h.requests())

			// Run 2: the source re-reads p0..p3 (the pointer is before them).
			r2 := newHookRig(t, dir, processor.GroupConfig{Retry: grouptest.FastRetry(3), OnFailure: processor.DeadLetter},
				WebhookConfig{URL: h.srv.URL, BatchMaxLines: 4})
			lines := []string{"p0", "p1", "p2", "p3"}
			for _, k := range split {
				r2.Publish(lines[:k]...)
				lines = lines[k:]
			}
			r2.WaitAck(4, 10*time.Second)
			if got := keysAfter(h, sent); len(got) != 0 {
				t.Fatalf("run 2 POSTed %v although the request was partly dead-lettered", got)
			}
			items, n := r2.ledger.List(10)
			var got []string
			for _, it := range items {
				got = append(got, it.Line)
			}
			if n != 4 || fmt.Sprint(got) != "[p0 p1 p2 p3]" {
				t.Fatalf("ledger holds %d entries %v, want p0..p3 once each", n, got)
			}
			for _, it := range items {
				if it.Attempts < 1 {
					t.Fatalf("entry %s records %d attempts; the request ran out of its attempts", it.Line, it.Attempts)
				}
			}
			if r2.G.DeadLettered() != 2 {
				t.Fatalf("run 2 deadLettered %d, want 2", r2.G.DeadLettered())
			}
			if len(r2.w.book.pendingAny()) > 0 {
				t.Fatalf("record still pending: %v", r2.w.book.pendingAny())
			}
			// Every entry, written before and after the restart, names the
			// original request; a replay sends it whole under its key.
			const key = "app:00000000000000e1:3-12"
			for _, it := range items {
				if it.Request != key || it.RequestLines != 4 {
					t.Fatalf("entry %s names request %q of %d lines, want %q of 4", it.Line, it.Request, it.RequestLines, key)
				}
			}
			res, err := r2.G.Replay(context.Background(), 1)
			if err != nil || res.Replayed != 4 || res.Remaining != 0 {
				t.Fatalf("replay = %+v, %v", res, err)
			}
			got = keysAfter(h, sent)
			if len(got) != 1 || got[0] != key {
				t.Fatalf("replay POSTed %v, want one request under %s", got, key)
			}
		})
	}
}
