package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/internal/grouptest"
	"tailfeed/processor"
)

// dedupReceiver applies each Idempotency-Key once (what the design tells a
// receiver to do) and remembers the lines it applied.
type dedupReceiver struct {
	mu      sync.Mutex
	keys    map[string]bool
	applied map[string]int
}

// A webhook request is replayed whole or not at all (DESIGN §12), also
// when its dead letter was cut short. Found by a review: a request dead-lettered in part before a restart (the ledger
// write failed after 2 of its 4 lines) sits in the ledger with only 2 of its
// 4 lines (requestLines 4). A replay served between batches after the
// restart, before the group re-reads the request, sends those 2 lines under
// the request's ORIGINAL Idempotency-Key and removes them from the ledger.
// Then the rest of the request is no longer "partly lettered" (its first
// line left the ledger), so the sink rebuilds the recorded request p0..p3
// and POSTs it under the same key: a receiver that dedupes on the key (as
// DESIGN §6 asks) drops it, and p2, p3 are never applied although the
// pointer passes them.
func TestReplayKeepsAPartlyLetteredRequestUntilWhole(t *testing.T) {
	dir := t.TempDir()
	rcv := &dedupReceiver{keys: map[string]bool{}, applied: map[string]int{}}
	var run2 bool
	var mu sync.Mutex
	h := newHookServer(t, func(n int, q hookReq) (int, map[string]string) {
		mu.Lock()
		defer mu.Unlock()
		if !run2 {
			return 500, nil // run 1: the receiver is down, applies nothing
		}
		rcv.mu.Lock()
		defer rcv.mu.Unlock()
		if rcv.keys[q.key] {
			return 200, nil // duplicate key: deduped
		}
		rcv.keys[q.key] = true
		for _, o := range decodeNDJSON(t, q.body) {
			rcv.applied[o.Line]++
		}
		return 200, nil
	})
	l, err := processor.OpenLedger(filepath.Join(dir, "hook.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	flaky := &ledgerFailsOnce{Ledger: l, after: true}
	flaky.failAt.Store(3) // the 3rd line's write fails (ENOSPC), and every later one
	r1 := newHookRig(t, dir, processor.GroupConfig{Retry: grouptest.FastRetry(1), OnFailure: processor.DeadLetter, Ledger: flaky},
		WebhookConfig{URL: h.srv.URL, BatchMaxLines: 4})
	r1.Publish("p0", "p1", "p2", "p3")
	waitFor(t, "the stuck dead letter", func() bool { return flaky.calls.Load() >= 4 })
	r1.stop()

	mu.Lock()
	run2 = true
	mu.Unlock()
	r2 := newHookRig(t, dir, processor.GroupConfig{Retry: grouptest.FastRetry(3), OnFailure: processor.DeadLetter},
		WebhookConfig{URL: h.srv.URL, BatchMaxLines: 4})
	items, n := r2.ledger.List(10)
	if n != 2 || items[0].RequestLines != 4 {
		t.Fatalf("setup: ledger %d entries (%+v)", n, items)
	}
	// The operator replays right after the restart (the group is between
	// batches: the source has not re-read p0..p3 yet).
	res, err := r2.G.Replay(context.Background(), 10)
	t.Logf("replay after restart: %+v, %v; POSTs %v", res, err, keysAfter(h, 0))
	if err != nil || res.Replayed != 0 || res.Remaining != 2 {
		t.Fatalf("replay of a part request still pending = %+v, %v; want replayed 0, remaining 2 (it waits for its rest)", res, err)
	}
	// Then the source re-reads the request.
	r2.Publish("p0", "p1", "p2", "p3")
	r2.WaitAck(4, 10*time.Second)
	// Whatever is still in the ledger is replayed once more.
	if res, err := r2.G.Replay(context.Background(), 10); err != nil {
		t.Fatalf("second replay %+v, %v", res, err)
	}
	if got := rcv.lines(); fmt.Sprint(got) != "[p0 p1 p2 p3]" {
		t.Fatalf("receiver applied %v, want [p0 p1 p2 p3]; ledger now %d entries; POSTs %v (the pointer passed all 4 lines)",
			got, r2.ledger.Len(), keysAfter(h, 0))
	}
}

// A purge never takes the lines a replay in progress holds: `replayed`
// counts the lines that reached the receiver, and they are not counted
// released. Found by a review: a purge (DELETE /admin/dlq) during a webhook replay. The
// replay took the request's entries, POSTs them (the receiver applies
// them), the purge removes them meanwhile, and the replay's remove finds
// nothing: the answer says replayed 0 although the 3 lines reached their
// processor this call (DESIGN §12: `replayed` is the lines that reached
// their processor this call), and the purge counted them as released (a
// loss, lossless false) although they were delivered.
func TestPurgeDuringWebhookReplayLeavesTheReplayedLines(t *testing.T) {
	var poison sync.Mutex
	bad := true
	inReplay := make(chan struct{})
	release := make(chan struct{})
	h := newHookServer(t, func(int, hookReq) (int, map[string]string) {
		poison.Lock()
		b := bad
		poison.Unlock()
		if b {
			return 400, nil
		}
		close(inReplay)
		<-release
		return 200, nil
	})
	r := newHookRig(t, t.TempDir(), processor.GroupConfig{Retry: grouptest.FastRetry(1), OnFailure: processor.DeadLetter},
		WebhookConfig{URL: h.srv.URL, BatchMaxLines: 3})
	r.Publish("x1", "x2", "x3")
	r.WaitAck(3, 10*time.Second)
	poison.Lock()
	bad = false
	poison.Unlock()
	type out struct {
		res processor.ReplayResult
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := r.G.Replay(context.Background(), 10)
		done <- out{res, err}
	}()
	<-inReplay
	purged, err := r.ledger.Purge(10) // what DELETE /admin/dlq/hook does (and counts in released)
	if err != nil {
		t.Fatal(err)
	}
	close(release)
	o := <-done
	t.Logf("purged %d while the replay POSTed them; replay = %+v, %v", purged, o.res, o.err)
	if o.err != nil || o.res.Replayed != 3 {
		t.Fatalf("replay answered replayed %d (%v), but 3 lines reached the receiver this call (and the purge counted them released: %d)",
			o.res.Replayed, o.err, purged)
	}
	if purged != 0 || r.ledger.Len() != 0 {
		t.Fatalf("purge removed %d entries held by the replay; ledger now %d", purged, r.ledger.Len())
	}
}

// A part of a request whose rest can no longer come (the webhook's record
// names no pending request: it moved on) is replayed as it is, under its
// key: it is not kept in the ledger for ever.
func TestReplaySendsAPartRequestThatIsNoLongerPending(t *testing.T) {
	h := newHookServer(t, func(int, hookReq) (int, map[string]string) { return 200, nil })
	dir := t.TempDir()
	l, err := processor.OpenLedger(filepath.Join(dir, "hook.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	letterRequest(t, l, "p0", 3, "app:00000000000000e1:3-12", 4)
	letterRequest(t, l, "p1", 6, "app:00000000000000e1:3-12", 4)
	r := newHookRig(t, dir, processor.GroupConfig{Retry: grouptest.FastRetry(1), OnFailure: processor.DeadLetter},
		WebhookConfig{URL: h.srv.URL, BatchMaxLines: 4})
	res, err := r.G.Replay(context.Background(), 10)
	if err != nil || res.Replayed != 2 || res.Remaining != 0 {
		t.Fatalf("replay %+v, %v; want replayed 2, remaining 0", res, err)
	}
	if got := keysAfter(h, 0); fmt.Sprint(got) != "[app:00000000000000e1:3-12]" {
		t.Fatalf("POSTs %v, want one under the request's key", got)
	}
}

func (d *dedupReceiver) lines() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for l := range d.applied {
		out = append(out, l)
	}
	sort.Strings(out)
	return out
}

// TestWebhookReplayStopsAtTheFirstFailure: four dead-lettered one-line
// requests; on replay the receiver takes the first and fails the others.
// The replay stops at the first failure (one POST for it, no retry), says
// replayed 1, remaining 3, and the ledger holds exactly the three lines not
// replayed, once each — the failed line is not dead-lettered a second time.
func TestWebhookReplayStopsAtTheFirstFailure(t *testing.T) {
	var accept atomic.Int32 // requests still answered 200
	h := newHookServer(t, func(n int, _ hookReq) (int, map[string]string) {
		if accept.Add(-1) >= 0 {
			return 200, nil
		}
		return 503, nil
	})
	r := newHookRig(t, t.TempDir(), processor.GroupConfig{Retry: grouptest.FastRetry(2), OnFailure: processor.DeadLetter},
		WebhookConfig{URL: h.srv.URL, BatchMaxLines: 1})
	r.Publish("a", "b", "c", "d")
	r.WaitAck(4, 10*time.Second)
	if got := ledgerTexts(t, r.ledger); fmt.Sprint(got) != "[a b c d]" {
		t.Fatalf("ledger %v before the replay", got)
	}
	before := len(h.requests())
	accept.Store(1)
	res, err := r.G.Replay(context.Background(), 100)
	if !errors.Is(err, processor.ErrReplayIncomplete) || !strings.Contains(err.Error(), "503") {
		t.Fatalf("replay error %v, want incomplete with the 503", err)
	}
	if res.Replayed != 1 || res.Remaining != 3 {
		t.Fatalf("replay %+v, want replayed 1, remaining 3", res)
	}
	if got := ledgerTexts(t, r.ledger); fmt.Sprint(got) != "[b c d]" {
		t.Fatalf("ledger %v after the replay, want [b c d] (each once)", got)
	}
	if r.G.Ledgered() != 3 {
		t.Fatalf("Ledgered %d, want 3", r.G.Ledgered())
	}
	if sent := len(h.requests()) - before; sent != 2 {
		t.Fatalf("the replay sent %d requests, want 2 (a, then b once: one try)", sent)
	}
	// With the receiver healthy, the rest goes.
	accept.Store(100)
	res, err = r.G.Replay(context.Background(), 100)
	if err != nil || res.Replayed != 3 || res.Remaining != 0 {
		t.Fatalf("second replay %+v, %v", res, err)
	}
	if r.ledger.Len() != 0 {
		t.Fatalf("ledger %d entries after the replay", r.ledger.Len())
	}
}

// TestWebhookReplaySendsTheRequestWhole: a 3-line request dead-lettered
// whole is replayed as one POST, with its original Idempotency-Key and the
// same body; max=1 replays the whole request (3 lines). The webhook's
// stored position does not move.
func TestWebhookReplaySendsTheRequestWhole(t *testing.T) {
	var poison atomic.Bool
	poison.Store(true)
	h := newHookServer(t, func(int, hookReq) (int, map[string]string) {
		if poison.Load() {
			return 400, nil
		}
		return 200, nil
	})
	dir := t.TempDir()
	r := newHookRig(t, dir, processor.GroupConfig{Retry: grouptest.FastRetry(3), OnFailure: processor.DeadLetter},
		WebhookConfig{URL: h.srv.URL, BatchMaxLines: 3})
	r.Publish("x1", "x2", "x3")
	r.WaitAck(3, 10*time.Second)
	orig := h.requests()
	if len(orig) != 1 || orig[0].key != "app:00000000000000e1:3-9" {
		t.Fatalf("requests %d, key %q", len(orig), orig[0].key)
	}
	items, _ := r.ledger.List(10)
	if len(items) != 3 {
		t.Fatalf("ledger %+v", items)
	}
	for _, it := range items {
		if it.Request != orig[0].key || it.RequestLines != 3 {
			t.Fatalf("entry names request %q of %d lines, want %q of 3", it.Request, it.RequestLines, orig[0].key)
		}
	}
	recBefore, err := os.ReadFile(r.w.cfg.Record)
	if err != nil {
		t.Fatal(err)
	}
	poison.Store(false)
	res, err := r.G.Replay(context.Background(), 1)
	if err != nil || res.Replayed != 3 || res.Remaining != 0 {
		t.Fatalf("replay max=1 = %+v, %v; want the whole request: replayed 3, remaining 0", res, err)
	}
	reqs := h.requests()[1:]
	if len(reqs) != 1 {
		t.Fatalf("replay sent %d requests, want 1", len(reqs))
	}
	if reqs[0].key != orig[0].key || !bytes.Equal(reqs[0].body, orig[0].body) {
		t.Fatalf("replayed request %q %q, want %q %q", reqs[0].key, reqs[0].body, orig[0].key, orig[0].body)
	}
	if recAfter, _ := os.ReadFile(r.w.cfg.Record); !bytes.Equal(recBefore, recAfter) {
		t.Fatal("the replay changed the webhook's record")
	}
}

// TestWebhookReplayOldEntriesLineByLine: entries without the request
// fields (a ledger written before they existed) are replayed one line per
// request under the line's own key, as before.
func TestWebhookReplayOldEntriesLineByLine(t *testing.T) {
	h := newHookServer(t, nil)
	dir := t.TempDir()
	old := `{"feed":"app","path":"/in.log","epoch":"00000000000000e1","position":3,"positioned":true,"attempts":6,"error":"x","time":"2026-01-02T15:04:05Z","line":"p","lineBase64":"cA=="}
{"feed":"app","path":"/in.log","epoch":"00000000000000e1","position":5,"positioned":true,"attempts":6,"error":"x","time":"2026-01-02T15:04:05Z","line":"q","lineBase64":"cQ=="}
`
	if err := os.WriteFile(dir+"/hook.jsonl", []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	r := newHookRig(t, dir, processor.GroupConfig{Retry: grouptest.FastRetry(3), OnFailure: processor.DeadLetter}, WebhookConfig{URL: h.srv.URL})
	res, err := r.G.Replay(context.Background(), 1)
	if err != nil || res.Replayed != 1 || res.Remaining != 1 {
		t.Fatalf("replay max=1 = %+v, %v", res, err)
	}
	reqs := h.requests()
	if len(reqs) != 1 || reqs[0].key != "app:00000000000000e1:3-3" {
		t.Fatalf("requests %+v", reqs)
	}
	if objs := decodeNDJSON(t, reqs[0].body); len(objs) != 1 || objs[0].Line != "p" || objs[0].Position != 3 {
		t.Fatalf("body %q", reqs[0].body)
	}
}

// ledgerTexts is the ledger's entries' lines, as the file holds them.
func ledgerTexts(t *testing.T, l *processor.Ledger) []string {
	t.Helper()
	items, n := l.List(1000)
	out := make([]string, 0, n)
	for _, it := range items {
		out = append(out, it.Line)
	}
	// The file agrees with memory: a reopen reads the same entries.
	again, err := processor.OpenLedger(l.Path(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.Len() != n {
		t.Fatalf("ledger file holds %d entries, memory %d", again.Len(), n)
	}
	return out
}
func letterRequest(t *testing.T, l *processor.Ledger, line string, pos int64, key string, lines int) {
	t.Helper()
	var d feed.Delivery
	d.Reset(&feed.Batch{Feed: "app", Path: "/in.log", Epoch: 0xe1, Positioned: true,
		Lines: [][]byte{[]byte(line)}, Ends: []int64{pos}}, 0)
	if err := l.DeadLetterRequest(&d, 6, fmt.Errorf("x"), key, lines); err != nil {
		t.Fatal(err)
	}
}
