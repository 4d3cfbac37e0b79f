package webhook

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/internal/grouptest"
	"tailfeed/processor"
)

// hookReq is one request a hookServer received.
type hookReq struct {
	key    string
	header http.Header
	body   []byte
	at     time.Time
}

// hookServer is a webhook receiver on 127.0.0.1. reply decides each
// request's status (0: read it, then drop the connection unanswered).
type hookServer struct {
	mu    sync.Mutex
	reqs  []hookReq
	reply func(n int, r hookReq) (code int, header map[string]string)
	srv   *httptest.Server
}

func newHookServer(t *testing.T, reply func(n int, r hookReq) (int, map[string]string)) *hookServer {
	h := &hookServer{reply: reply}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := hookReq{key: r.Header.Get("Idempotency-Key"), header: r.Header.Clone(), body: body, at: time.Now()}
		h.mu.Lock()
		n := len(h.reqs)
		h.reqs = append(h.reqs, req)
		h.mu.Unlock()
		code, hdr := 200, map[string]string(nil)
		if h.reply != nil {
			code, hdr = h.reply(n, req)
		}
		if code == 0 {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		for k, v := range hdr {
			w.Header().Set(k, v)
		}
		w.WriteHeader(code)
		fmt.Fprintf(w, "status %d\n", code)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hookServer) requests() []hookReq {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookReq(nil), h.reqs...)
}

// hookObj is one NDJSON object as a receiver decodes it.
type hookObj struct {
	ID         string  `json:"id"`
	Feed       string  `json:"feed"`
	Epoch      string  `json:"epoch"`
	Position   int64   `json:"position"`
	Path       string  `json:"path"`
	Line       string  `json:"line"`
	LineBase64 *string `json:"lineBase64"`
}

func decodeNDJSON(t *testing.T, body []byte) []hookObj {
	t.Helper()
	var out []hookObj
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 8<<20)
	for sc.Scan() {
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		var o hookObj
		if err := dec.Decode(&o); err != nil {
			t.Fatalf("NDJSON line %q: %v", sc.Text(), err)
		}
		out = append(out, o)
	}
	if len(body) > 0 && body[len(body)-1] != '\n' {
		t.Fatalf("body does not end in a newline: %q", body)
	}
	return out
}

// hookRig is a webhook sink on a real group; dir keeps its record.
type hookRig struct {
	*grouptest.Rig
	w      *Webhook
	ledger *processor.Ledger
	dir    string
}

func newHookRig(t *testing.T, dir string, gc processor.GroupConfig, cfg WebhookConfig) *hookRig {
	t.Helper()
	return newHookRigWith(t, dir, gc, cfg, nil)
}

// newHookRigWith is newHookRig; setup (when set) may replace the rig's
// publisher before the sink opens.
func newHookRigWith(t *testing.T, dir string, gc processor.GroupConfig, cfg WebhookConfig, setup func(*grouptest.Rig)) *hookRig {
	t.Helper()
	l, err := processor.OpenLedger(filepath.Join(dir, "hook.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if gc.Ledger == nil {
		gc.Ledger = l
	}
	gc.Name = "hook"
	r := &hookRig{Rig: grouptest.New(t, gc), ledger: l, dir: dir}
	if setup != nil {
		setup(r.Rig)
	}
	cfg.Group = r.G
	cfg.Record = filepath.Join(dir, "hook.rec")
	if cfg.Publisher == nil {
		cfg.Publisher = r.Pub
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.BatchMaxLines == 0 {
		cfg.BatchMaxLines = 500
	}
	if cfg.BatchMaxBytes == 0 {
		cfg.BatchMaxBytes = 1 << 20
	}
	w, err := OpenWebhook(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.w = w
	r.G.SetBatchProcessor(w)
	r.Run()
	t.Cleanup(func() { r.stop() })
	return r
}

// stop ends the group (as a daemon stop or a kill would) and closes the sink.
func (r *hookRig) stop() {
	r.Cancel()
	<-r.G.Done()
	r.w.Close()
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestWebhookBodyAndHeaders(t *testing.T) {
	h := newHookServer(t, nil)
	r := newHookRig(t, t.TempDir(), processor.GroupConfig{Retry: grouptest.FastRetry(3)}, WebhookConfig{
		URL: h.srv.URL + "/ingest", Raw: true,
		Headers: map[string]string{"X-Source": "tailfeed", "Idempotency-Key": "mine", "Content-Type": "text/plain"},
	})
	lines := []string{"plain", "a\xffb\xc3\x28", "", "tab\tquote\"<&>"}
	r.Publish(lines...)
	r.WaitAck(4, 10*time.Second)
	reqs := h.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	q := reqs[0]
	if got := q.header.Get("Content-Type"); got != "application/x-ndjson" {
		t.Fatalf("Content-Type %q", got)
	}
	if got := q.header.Get("X-Source"); got != "tailfeed" {
		t.Fatalf("X-Source %q", got)
	}
	if want := "app:00000000000000e1:6-27"; q.key != want {
		t.Fatalf("Idempotency-Key %q, want %q", q.key, want)
	}
	objs := decodeNDJSON(t, q.body)
	if len(objs) != 4 {
		t.Fatalf("%d objects, want 4", len(objs))
	}
	ends := []int64{6, 12, 13, 27}
	texts := []string{"plain", "a\ufffdb\ufffd(", "", "tab\tquote\"<&>"}
	for i, o := range objs {
		want := hookObj{ID: fmt.Sprintf("app:00000000000000e1:%d", ends[i]), Feed: "app", Epoch: "00000000000000e1",
			Position: ends[i], Path: "/in.log", Line: texts[i]}
		raw, _ := base64.StdEncoding.DecodeString(*o.LineBase64)
		o.LineBase64 = nil
		if o != want || string(raw) != lines[i] {
			t.Fatalf("object %d = %+v (raw %q), want %+v (raw %q)", i, o, raw, want, lines[i])
		}
	}
}

func TestWebhookCutsRequestsByLinesAndBytes(t *testing.T) {
	h := newHookServer(t, nil)
	r := newHookRig(t, t.TempDir(), processor.GroupConfig{Retry: grouptest.FastRetry(3)}, WebhookConfig{URL: h.srv.URL, BatchMaxLines: 2, BatchMaxBytes: 250})
	long := strings.Repeat("x", 400)
	r.Publish("a", "b", "c", long, "d", "e")
	r.WaitAck(6, 10*time.Second)
	var keys []string
	var count []int
	for _, q := range h.requests() {
		keys = append(keys, q.key)
		count = append(count, len(decodeNDJSON(t, q.body)))
		if len(q.body) > 250 && len(decodeNDJSON(t, q.body)) > 1 {
			t.Fatalf("request of %d bytes holds several lines", len(q.body))
		}
	}
	want := []string{"app:00000000000000e1:2-4", "app:00000000000000e1:6-6", "app:00000000000000e1:407-407",
		"app:00000000000000e1:409-411"}
	if fmt.Sprint(keys) != fmt.Sprint(want) {
		t.Fatalf("keys %v (lines %v), want %v", keys, count, want)
	}
}

func TestWebhookRetriesSameRequestHonouringRetryAfter(t *testing.T) {
	h := newHookServer(t, func(n int, _ hookReq) (int, map[string]string) {
		switch n {
		case 0:
			return 503, map[string]string{"Retry-After": "1"}
		case 1:
			return 0, nil // processed, response lost
		}
		return 200, nil
	})
	r := newHookRig(t, t.TempDir(), processor.GroupConfig{Retry: grouptest.FastRetry(10)}, WebhookConfig{URL: h.srv.URL})
	r.Publish("a", "b")
	waitFor(t, "the fence", func() bool { st, _ := r.Q.State(); return st == feed.Fenced })
	_, why := r.Q.State()
	if !strings.Contains(why, "503") {
		t.Fatalf("fence reason %q does not name the 503", why)
	}
	r.WaitAck(2, 10*time.Second)
	reqs := h.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	for _, q := range reqs[1:] {
		if q.key != reqs[0].key || !bytes.Equal(q.body, reqs[0].body) {
			t.Fatalf("retry changed the request: %q %q vs %q %q", q.key, q.body, reqs[0].key, reqs[0].body)
		}
	}
	if gap := reqs[1].at.Sub(reqs[0].at); gap < 900*time.Millisecond {
		t.Fatalf("retried %v after a 503 with Retry-After: 1", gap)
	}
	if st, _ := r.Q.State(); st != feed.Live {
		t.Fatalf("state %v after success, want LIVE", st)
	}
}

func TestWebhookRequestNeverSpansTwoEpochs(t *testing.T) {
	h := newHookServer(t, nil)
	r := newHookRig(t, t.TempDir(), processor.GroupConfig{Retry: grouptest.FastRetry(3)}, WebhookConfig{URL: h.srv.URL})
	r.Publish("a", "b")
	r.Epoch, r.Pos = 0xe2, 0 // a new file
	r.Publish("c")
	r.WaitAck(3, 10*time.Second)
	var keys []string
	for _, q := range h.requests() {
		keys = append(keys, q.key)
		for _, o := range decodeNDJSON(t, q.body) {
			if !strings.HasPrefix(q.key, "app:"+o.Epoch+":") {
				t.Fatalf("request %q holds a line of epoch %s", q.key, o.Epoch)
			}
		}
	}
	if fmt.Sprint(keys) != "[app:00000000000000e1:2-4 app:00000000000000e2:2-2]" {
		t.Fatalf("keys %v", keys)
	}
}

func TestWebhookPoisonRequestIsDeadLetteredWhole(t *testing.T) {
	h := newHookServer(t, func(_ int, q hookReq) (int, map[string]string) {
		if bytes.Contains(q.body, []byte("poison")) {
			return 400, nil
		}
		return 200, nil
	})
	r := newHookRig(t, t.TempDir(), processor.GroupConfig{Retry: grouptest.FastRetry(5), OnFailure: processor.DeadLetter},
		WebhookConfig{URL: h.srv.URL, BatchMaxLines: 2})
	r.Publish("a", "b", "poison", "c", "d", "e")
	r.WaitAck(6, 10*time.Second)
	poisoned := 0
	for _, q := range h.requests() {
		if bytes.Contains(q.body, []byte("poison")) {
			poisoned++
		}
	}
	if poisoned != 1 {
		t.Fatalf("the poison request was sent %d times, want once (a 400 is not retried)", poisoned)
	}
	items, n := r.ledger.List(10)
	if n != 2 || items[0].Line != "poison" || items[1].Line != "c" || !strings.Contains(items[0].Error, "400") {
		t.Fatalf("ledger %d entries: %+v", n, items)
	}
	if r.G.DeadLettered() != 2 {
		t.Fatalf("deadLettered %d, want 2", r.G.DeadLettered())
	}
}

func TestWebhookHoldUntilRelease(t *testing.T) {
	h := newHookServer(t, func(int, hookReq) (int, map[string]string) { return 422, nil })
	r := newHookRig(t, t.TempDir(), processor.GroupConfig{Retry: grouptest.FastRetry(2)}, WebhookConfig{URL: h.srv.URL})
	r.Publish("a", "b", "c")
	waitFor(t, "several tries", func() bool { return len(h.requests()) >= 4 })
	if st, why := r.Q.State(); st != feed.Fenced || !strings.Contains(why, "422") {
		t.Fatalf("state %v %q, want FENCED by the 422", st, why)
	}
	if r.Q.AckPoint() != 0 {
		t.Fatal("the ack point passed a held request")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := r.G.Release(ctx)
	if err != nil || n != 3 {
		t.Fatalf("release: %d, %v; want the request's 3 lines", n, err)
	}
	r.WaitAck(3, 10*time.Second)
	if r.Q.ReleasedLines() != 3 || r.ledger.Len() != 0 {
		t.Fatalf("released %d, ledger %d", r.Q.ReleasedLines(), r.ledger.Len())
	}
}

// collapse drops each request identical (key and body) to the one before.
func collapse(reqs []hookReq) []hookReq {
	var out []hookReq
	for _, q := range reqs {
		if n := len(out); n > 0 && out[n-1].key == q.key && bytes.Equal(out[n-1].body, q.body) {
			continue
		}
		out = append(out, q)
	}
	return out
}

// restartLines publishes lines 0..9 of a run split as the batches say.
func restartLines(r *hookRig, batches ...[2]int) {
	all := grouptest.Lines("line", 0, 10)
	for _, b := range batches {
		r.Publish(all[b[0]:b[1]]...)
	}
}

func TestWebhookRestartRebuildsTheRecordedRequest(t *testing.T) {
	dir := t.TempDir()
	down := true
	var mu sync.Mutex
	h := newHookServer(t, func(n int, q hookReq) (int, map[string]string) {
		mu.Lock()
		defer mu.Unlock()
		if down && strings.Contains(string(q.body), "line-00004") {
			return 0, nil // applied by the receiver, response lost; then the daemon dies
		}
		return 200, nil
	})
	cfg := WebhookConfig{URL: h.srv.URL, BatchMaxLines: 4}
	r1 := newHookRig(t, dir, processor.GroupConfig{Retry: grouptest.FastRetry(1000)}, cfg)
	restartLines(r1, [2]int{0, 10})
	waitFor(t, "the lost response", func() bool { return len(h.requests()) >= 2 })
	r1.stop()
	before := h.requests()
	stuck := before[len(before)-1]
	if stuck.key != "app:00000000000000e1:55-88" {
		t.Fatalf("recorded request key %q", stuck.key)
	}
	mu.Lock()
	down = false
	mu.Unlock()

	// The restart re-reads from line 0 in other batches: lines 0–3 are
	// skipped, 4–7 are rebuilt across two batches under the same key.
	r2 := newHookRig(t, dir, processor.GroupConfig{Retry: grouptest.FastRetry(1000)}, cfg)
	restartLines(r2, [2]int{0, 3}, [2]int{3, 6}, [2]int{6, 10})
	r2.WaitAck(10, 10*time.Second)
	// Go's transport may resend the stuck request by itself, after the
	// snapshot above: the same bytes under the same key, which is harmless.
	after := collapse(h.requests()[len(before):])
	if len(after) != 2 {
		t.Fatalf("after the restart %d requests (%v), want 2 (the rebuilt one, then lines 8-9)", len(after), keysAfter(h, len(before)))
	}
	if after[0].key != stuck.key || !bytes.Equal(after[0].body, stuck.body) {
		t.Fatalf("rebuilt request %q %q, want %q %q", after[0].key, after[0].body, stuck.key, stuck.body)
	}
	if after[1].key != "app:00000000000000e1:99-110" {
		t.Fatalf("next request key %q", after[1].key)
	}
}

func TestWebhookRecordSlots(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hook.rec")
	r, ok, err := loadWH(path, nil)
	if err != nil || ok {
		t.Fatalf("new record: ok %v, err %v", ok, err)
	}
	states := []whState{
		{BatchEpoch: 7, BatchFirst: 10, BatchLast: 20},
		{AppliedEpoch: 7, AppliedPos: 20, BatchEpoch: 7, BatchFirst: 10, BatchLast: 20},
		{AppliedEpoch: 7, AppliedPos: 20, BatchEpoch: 7, BatchFirst: 30, BatchLast: 40},
	}
	for _, s := range states {
		if err := r.store(s); err != nil {
			t.Fatal(err)
		}
	}
	r.f.Close()
	load := func() (whState, bool, bool) {
		r, ok, err := loadWH(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer r.f.Close()
		s := r.disk
		s.Counter = 0
		return s, ok, r.damaged
	}
	if s, ok, _ := load(); !ok || s != states[2] || !s.pending() {
		t.Fatalf("loaded %+v (ok %v), want %+v pending", s, ok, states[2])
	}
	// Tear the newest slot (A: the third store went to A): B, the one before, is used.
	f, _ := os.OpenFile(path, os.O_RDWR, 0)
	f.WriteAt([]byte("garbage"), 20)
	if s, ok, _ := load(); !ok || s != states[1] || s.pending() {
		t.Fatalf("after a torn slot A: %+v (ok %v), want %+v, not pending", s, ok, states[1])
	}
	f.WriteAt([]byte("garbage"), 512+20)
	f.Close()
	if _, ok, damaged := load(); ok || !damaged {
		t.Fatalf("both slots bad: ok %v damaged %v, want no record, damaged", ok, damaged)
	}
}

// ledgerFailsOnce fails the dead-letter write number failAt (from 1), once
// (from then on with after).
type ledgerFailsOnce struct {
	*processor.Ledger
	calls, failAt atomic.Int32
	after         bool
}

func (l *ledgerFailsOnce) DeadLetter(d *feed.Delivery, attempts int, lastErr error) error {
	return l.DeadLetterRequest(d, attempts, lastErr, "", 0)
}

func (l *ledgerFailsOnce) DeadLetterRequest(d *feed.Delivery, attempts int, lastErr error, req string, lines int) error {
	if n := l.calls.Add(1); n == l.failAt.Load() || l.after && n > l.failAt.Load() {
		return errors.New("ledger: no space left on device")
	}
	return l.Ledger.DeadLetterRequest(d, attempts, lastErr, req, lines)
}

// A poison request whose dead letter fails after two of its four lines:
// the next try writes the other two, and only them (no entry twice, with or
// without a position; deadLettered 4), and the request is not sent again
// meanwhile.
func TestWebhookDeadLetterResumesAfterAFailedWrite(t *testing.T) {
	for _, positioned := range []bool{true, false} {
		t.Run(fmt.Sprintf("positioned=%v", positioned), func(t *testing.T) {
			h := newHookServer(t, func(int, hookReq) (int, map[string]string) { return 400, nil })
			dir := t.TempDir()
			l, err := processor.OpenLedger(filepath.Join(dir, "hook.jsonl"), nil)
			if err != nil {
				t.Fatal(err)
			}
			flaky := &ledgerFailsOnce{Ledger: l}
			flaky.failAt.Store(3)
			r := newHookRig(t, dir, processor.GroupConfig{Retry: grouptest.FastRetry(5), OnFailure: processor.DeadLetter, Ledger: flaky},
				WebhookConfig{URL: h.srv.URL, BatchMaxLines: 4})
			b := batchOf(r.Rig, "p0", "p1", "p2", "p3")
			b.Positioned = positioned
			if !r.Pub.TryPublish(b) {
				t.Fatal("publish refused")
			}
			r.WaitAck(4, 10*time.Second)
			items, n := l.List(10)
			var got []string
			for _, it := range items {
				got = append(got, it.Line)
			}
			if n != 4 || fmt.Sprint(got) != "[p0 p1 p2 p3]" {
				t.Fatalf("ledger holds %d entries %v, want p0..p3 once each", n, got)
			}
			if r.G.DeadLettered() != 4 {
				t.Fatalf("deadLettered %d, want 4", r.G.DeadLettered())
			}
			if len(h.requests()) != 1 {
				t.Fatalf("the poison request was sent %d times, want once", len(h.requests()))
			}
			if flaky.calls.Load() != 5 {
				t.Fatalf("%d ledger writes, want 5 (2, a failed one, 2)", flaky.calls.Load())
			}
		})
	}
}

// A release while a dead letter is stuck halfway gives up only the lines
// not in the ledger: each line is either released or dead-lettered.
func TestWebhookReleaseAfterAHalfWrittenDeadLetter(t *testing.T) {
	h := newHookServer(t, func(int, hookReq) (int, map[string]string) { return 400, nil })
	dir := t.TempDir()
	l, err := processor.OpenLedger(filepath.Join(dir, "hook.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	flaky := &ledgerFailsOnce{Ledger: l, after: true}
	flaky.failAt.Store(3)
	r := newHookRig(t, dir, processor.GroupConfig{Retry: grouptest.FastRetry(5), OnFailure: processor.DeadLetter, Ledger: flaky},
		WebhookConfig{URL: h.srv.URL, BatchMaxLines: 4})
	r.Publish("p0", "p1", "p2", "p3")
	waitFor(t, "the stuck dead letter", func() bool { return flaky.calls.Load() >= 4 })
	if st, why := r.Q.State(); st != feed.Fenced || !strings.Contains(why, "after 2 of 4 lines") {
		t.Fatalf("state %v %q, want FENCED by the ledger after 2 of 4 lines", st, why)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := r.G.Release(ctx)
	if err != nil || n != 2 {
		t.Fatalf("release: %d, %v; want the 2 lines not in the ledger", n, err)
	}
	r.WaitAck(4, 10*time.Second)
	if r.Q.ReleasedLines() != 2 || l.Len() != 2 || r.G.DeadLettered() != 2 || len(h.requests()) != 1 {
		t.Fatalf("released %d, ledger %d, deadLettered %d, requests %d; want 2, 2, 2, 1",
			r.Q.ReleasedLines(), l.Len(), r.G.DeadLettered(), len(h.requests()))
	}
}
