package processor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/feed"
)

// Dead-letter replay (DESIGN §12 "Dead-letter replay"): counted in lines,
// a webhook request replayed whole under its original key, the first
// failure stopping the replay with the rest left in the ledger once, and a
// replay into a pull subscriber queued at once, each entry leaving the
// ledger when acknowledged.

// ledgerTexts is the ledger's entries' lines, as the file holds them.
func ledgerTexts(t *testing.T, l *Ledger) []string {
	t.Helper()
	items, n := l.List(1000)
	out := make([]string, 0, n)
	for _, it := range items {
		out = append(out, it.Line)
	}
	// The file agrees with memory: a reopen reads the same entries.
	again, err := OpenLedger(l.Path(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.Len() != n {
		t.Fatalf("ledger file holds %d entries, memory %d", again.Len(), n)
	}
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
	r := newHookRig(t, t.TempDir(), GroupConfig{Retry: fastRetry(2), OnFailure: DeadLetter},
		WebhookConfig{URL: h.srv.URL, BatchMaxLines: 1})
	r.publish("a", "b", "c", "d")
	r.waitAck(4, 10*time.Second)
	if got := ledgerTexts(t, r.ledger); fmt.Sprint(got) != "[a b c d]" {
		t.Fatalf("ledger %v before the replay", got)
	}
	before := len(h.requests())
	accept.Store(1)
	res, err := r.g.Replay(context.Background(), 100)
	if !errors.Is(err, ErrReplayIncomplete) || !strings.Contains(err.Error(), "503") {
		t.Fatalf("replay error %v, want incomplete with the 503", err)
	}
	if res.Replayed != 1 || res.Remaining != 3 {
		t.Fatalf("replay %+v, want replayed 1, remaining 3", res)
	}
	if got := ledgerTexts(t, r.ledger); fmt.Sprint(got) != "[b c d]" {
		t.Fatalf("ledger %v after the replay, want [b c d] (each once)", got)
	}
	if r.g.Ledgered() != 3 {
		t.Fatalf("Ledgered %d, want 3", r.g.Ledgered())
	}
	if sent := len(h.requests()) - before; sent != 2 {
		t.Fatalf("the replay sent %d requests, want 2 (a, then b once: one try)", sent)
	}
	// With the receiver healthy, the rest goes.
	accept.Store(100)
	res, err = r.g.Replay(context.Background(), 100)
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
	r := newHookRig(t, dir, GroupConfig{Retry: fastRetry(3), OnFailure: DeadLetter},
		WebhookConfig{URL: h.srv.URL, BatchMaxLines: 3})
	r.publish("x1", "x2", "x3")
	r.waitAck(3, 10*time.Second)
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
	res, err := r.g.Replay(context.Background(), 1)
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
	r := newHookRig(t, dir, GroupConfig{Retry: fastRetry(3), OnFailure: DeadLetter}, WebhookConfig{URL: h.srv.URL})
	res, err := r.g.Replay(context.Background(), 1)
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

// TestPullReplayQueuesAtOnce: a replay into a pull subscriber returns at
// once with the count queued; the entries are handed out first (sequence
// 0) and leave the ledger one by one as they are acknowledged; a NACK hands
// the entry out again; a second replay does not queue what is out.
func TestPullReplayQueuesAtOnce(t *testing.T) {
	r := newPullRig(t, GroupConfig{Retry: slowRetry(2), OnFailure: DeadLetter}, time.Hour, 100)
	r.publish("p1", "p2")
	var evs []PullEvent
	for range 2 {
		evs = r.pull(2, false)
		r.p.NackAll([]string{evs[0].DeliveryID, evs[1].DeliveryID})
	}
	r.waitAck(2, 5*time.Second)
	if r.ledger.Len() != 2 {
		t.Fatalf("ledger %d entries, want 2", r.ledger.Len())
	}
	res := make(chan ReplayResult, 1)
	go func() {
		n, _ := r.g.Replay(context.Background(), 10)
		res <- n
	}()
	var got ReplayResult
	select {
	case got = <-res:
	case <-time.After(5 * time.Second):
		t.Fatal("replay into a pull subscriber did not answer at once")
	}
	if !got.Queuing || got.Queued != 2 || got.Remaining != 2 {
		t.Fatalf("replay %+v, want queued 2, remaining 2", got)
	}
	if again, err := r.g.Replay(context.Background(), 10); err != nil || again.Queued != 0 {
		t.Fatalf("second replay %+v, %v: queued what is out already", again, err)
	}
	rep := r.pull(2, false)
	for i, ev := range rep {
		if ev.Line != evs[i].Line || ev.Sequence != 0 || ev.Position != evs[i].Position || ev.Attempt != 1 {
			t.Fatalf("replayed event %+v", ev)
		}
	}
	if !r.p.Nack(rep[0].DeliveryID) {
		t.Fatal("nack refused")
	}
	r.ack(rep[1])
	if got := ledgerTexts(t, r.ledger); fmt.Sprint(got) != "[p1]" {
		t.Fatalf("ledger %v after the ACK of p2, want [p1]", got)
	}
	again := r.pull(1, false)[0]
	if again.Line != "p1" || again.Attempt != 2 || again.Sequence != 0 {
		t.Fatalf("redelivery after the NACK %+v", again)
	}
	r.ack(again)
	if r.ledger.Len() != 0 || r.g.Ledgered() != 0 {
		t.Fatalf("ledger %d entries after every ACK", r.ledger.Len())
	}
	if q := r.q.AckPoint(); q != 2 {
		t.Fatalf("ack point %d, want 2 (replays hold no queue position)", q)
	}
}

// TestPullReplayOutOfAttemptsStaysOnce: a replayed entry whose deliveries
// fail retry.attempts times is dropped by the subscriber and stays in the
// ledger once (not dead-lettered again); a replay queues it again.
func TestPullReplayOutOfAttemptsStaysOnce(t *testing.T) {
	r := newPullRig(t, GroupConfig{Retry: slowRetry(2), OnFailure: DeadLetter}, 100*time.Millisecond, 100)
	r.publish("p")
	for i := range 2 {
		ev := r.pull(1, false)[0]
		if ev.Attempt != i+1 {
			t.Fatalf("attempt %d, want %d", ev.Attempt, i+1)
		}
		r.p.Nack(ev.DeliveryID)
	}
	r.waitAck(1, 5*time.Second)
	if got, err := r.g.Replay(context.Background(), 10); err != nil || got.Queued != 1 {
		t.Fatalf("replay %+v, %v", got, err)
	}
	ev := r.pull(1, false)[0]
	r.p.Nack(ev.DeliveryID)
	ev = r.pull(1, false)[0] // attempt 2: let it time out
	if ev.Attempt != 2 {
		t.Fatalf("attempt %d, want 2", ev.Attempt)
	}
	time.Sleep(300 * time.Millisecond)
	if evs := r.p.Pull(context.Background(), 10, 300*time.Millisecond, false); len(evs) != 0 {
		t.Fatalf("handed out %+v after the attempts ran out", evs)
	}
	if got := ledgerTexts(t, r.ledger); fmt.Sprint(got) != "[p]" {
		t.Fatalf("ledger %v, want [p] (once)", got)
	}
	if got, err := r.g.Replay(context.Background(), 10); err != nil || got.Queued != 1 {
		t.Fatalf("replay after the attempts ran out %+v, %v", got, err)
	}
	r.ack(r.pull(1, false)[0])
	if r.ledger.Len() != 0 {
		t.Fatalf("ledger %d entries after the ACK", r.ledger.Len())
	}
}

// TestLedgerUnitsWholeRequests: with whole requests, the entries of one
// request form one unit wherever they stand, max is rounded up to whole
// units; without, every entry is a unit.
func TestLedgerUnitsWholeRequests(t *testing.T) {
	l, err := OpenLedger(t.TempDir()+"/x.jsonl", nil)
	if err != nil {
		t.Fatal(err)
	}
	add := func(line string, pos int64, req string, n int) {
		var d feed.Delivery
		d.Reset(&feed.Batch{Feed: "app", Epoch: 1, Positioned: true, Lines: [][]byte{[]byte(line)}, Ends: []int64{pos}}, 0)
		if err := l.DeadLetterRequest(&d, 1, errors.New("x"), req, n); err != nil {
			t.Fatal(err)
		}
	}
	add("a1", 3, "app:0000000000000001:3-9", 2)
	add("b", 5, "", 0)
	add("a2", 9, "app:0000000000000001:3-9", 2)
	add("c", 12, "app:0000000000000001:12-12", 1)
	show := func(us [][]replayItem) string {
		var out []string
		for _, u := range us {
			var ls []string
			for _, it := range u {
				ls = append(ls, string(it.line))
			}
			out = append(out, strings.Join(ls, "+"))
		}
		return fmt.Sprint(out)
	}
	for _, c := range []struct {
		max   int
		whole bool
		want  string
	}{
		{1, true, "[a1+a2]"},
		{2, true, "[a1+a2]"},
		{3, true, "[a1+a2 b]"},
		{10, true, "[a1+a2 b c]"},
		{3, false, "[a1 b a2]"},
	} {
		us := l.take(c.max, c.whole, "")
		if got := show(us); got != c.want {
			t.Errorf("take(%d, %v) = %s, want %s", c.max, c.whole, got, c.want)
		}
		l.untake(us)
	}
}
