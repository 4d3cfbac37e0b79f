package e2e

// DESIGN §6/§7: webhook, dead letters, holds and release, lossless.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"
)

const ctWebhookConfig = `dataDir: ./state
status:
  listen: {{ADDR}}
  token: ` + ctToken + `
  stallAlertMillis: 300
shutdownTimeoutMillis: 500
feeds:
  - name: app
    path: ./in.log
  - name: held
    path: ./held.log
processors:
  - name: hook
    feed: app
    type: webhook
    url: %[1]s/ingest
    batchMaxLines: 3
    headers: {X-Source: tailfeed, X-Team: core}
    onFailure: deadLetter
    retry: {initialMillis: 10, maxMillis: 20, attempts: 2}
  - name: rawhook
    feed: app
    type: webhook
    url: %[1]s/raw
    raw: true
    batchMaxLines: 100
  - name: smallhook
    feed: app
    type: webhook
    url: %[1]s/small
    batchMaxBytes: 400
  - name: holder
    feed: held
    type: webhook
    url: %[1]s/hold
    onFailure: hold
    retry: {initialMillis: 10, maxMillis: 20, attempts: 2}
`

// TestContractWebhookAndDeadLetters: the webhook's requests field by field
// (NDJSON ids, Content-Type, Idempotency-Key, headers, batchMaxLines,
// lineBase64 only with raw: true); a poison line dead-lettered into
// dataDir/dlq/<processor>.jsonl, listed, replayed (lossless again) and
// purged (released, lossy); a hold that stalls a feed, turns /healthz 503
// after stallAlertMillis and makes `status` exit 3, then a release (lossy,
// `status` exit 1) after which the subscriber goes on. The dead-letter and
// hold subtests each start their own daemon (newWebhookRig), so each runs
// alone.
func TestContractWebhookAndDeadLetters(t *testing.T) {
	rig := newWebhookRig(t)
	h, in, d, s, epoch := rig.h, rig.in, rig.d, rig.s, rig.epoch

	t.Run("NDJSON requests", func(t *testing.T) {
		h.mu.Lock()
		defer h.mu.Unlock()
		n := 0
		for _, req := range h.reqs {
			if req.path != "/ingest" && req.path != "/raw" {
				continue
			}
			if req.method != "POST" || req.header.Get("Content-Type") != "application/x-ndjson" {
				t.Errorf("%s %s Content-Type %q, want POST application/x-ndjson", req.method, req.path, req.header.Get("Content-Type"))
			}
			if req.path == "/ingest" && (req.header.Get("X-Source") != "tailfeed" || req.header.Get("X-Team") != "core") {
				t.Errorf("configured headers missing: %v", req.header)
			}
			if req.path == "/ingest" && len(req.objects) > 3 {
				t.Errorf("a request of %d lines; batchMaxLines is 3", len(req.objects))
			}
			var first, last int64 = -1, -1
			for _, o := range req.objects {
				want := []string{"id", "feed", "epoch", "position", "path", "line"}
				if req.path == "/raw" {
					want = append(want, "lineBase64")
				}
				if len(o) != len(want) {
					t.Errorf("%s object %v: want exactly the fields %v", req.path, keysOf(o), want)
				}
				var id, feed, ep, path, line string
				var pos int64
				json.Unmarshal(o["id"], &id)
				json.Unmarshal(o["feed"], &feed)
				json.Unmarshal(o["epoch"], &ep)
				json.Unmarshal(o["path"], &path)
				json.Unmarshal(o["line"], &line)
				json.Unmarshal(o["position"], &pos)
				i := sort.Search(len(in.ends), func(i int) bool { return in.ends[i] >= pos })
				if i == len(in.ends) || in.ends[i] != pos {
					t.Errorf("object position %d is no line's end", pos)
					continue
				}
				if id != fmt.Sprintf("app:%s:%d", epoch, pos) || feed != "app" || ep != epoch || path != in.path ||
					line != jsonText(in.texts[i]) {
					t.Errorf("object %s, want id app:%s:%d, feed app, path %s, line %q", mustJSON(o), epoch, pos, in.path, in.texts[i])
				}
				if req.path == "/raw" {
					var b64 string
					json.Unmarshal(o["lineBase64"], &b64)
					if raw, _ := base64.StdEncoding.DecodeString(b64); string(raw) != in.texts[i] {
						t.Errorf("lineBase64 %q, want the raw bytes %q", b64, in.texts[i])
					}
				}
				if first < 0 {
					first = pos
				}
				last = pos
				n++
			}
			if key := req.header.Get("Idempotency-Key"); key != fmt.Sprintf("app:%s:%d-%d", epoch, first, last) {
				t.Errorf("Idempotency-Key %q, want app:%s:%d-%d", key, epoch, first, last)
			}
		}
		if n != 14 {
			t.Errorf("%d objects in the two webhooks' requests, want 7 each", n)
		}
		small := 0
		for _, req := range h.reqs {
			if req.path == "/small" {
				small += len(req.objects)
				if len(req.body) > 400 {
					t.Errorf("a request body of %d bytes; batchMaxBytes is 400", len(req.body))
				}
			}
		}
		if small != 7 {
			t.Errorf("%d lines in the batchMaxBytes webhook's requests, want 7", small)
		}
	})

	t.Run("status exit 0 while settled and lossless", func(t *testing.T) {
		if out, errOut, code := cli(t, "status", "--addr", d.addr); code != 0 {
			t.Errorf("exit %d, want 0\n%s%s", code, out, errOut)
		}
	})

	t.Run("dead letter, list, replay", func(t *testing.T) {
		rig := newWebhookRig(t)
		h, in, d, s, epoch, ledger := rig.h, rig.in, rig.d, rig.s, rig.epoch, rig.ledger
		appendTo(t, in.path, "POISON-1\n")
		r := waitReport(t, d, "a dead letter", 30*time.Second, func(r *report) bool { return r.Settled && r.feed(t, "app").DeadLettered == 1 })
		if f := r.feed(t, "app"); f.Lossless || r.Lossless || f.Pointer.Offset != in.size()+9 {
			t.Errorf("with a dead letter: lossless %v/%v pointer %d; want false, the pointer past it (%d)", f.Lossless, r.Lossless, f.Pointer.Offset, in.size()+9)
		}
		data, err := os.ReadFile(ledger)
		if err != nil {
			t.Fatalf("dataDir/dlq/hook.jsonl: %v", err)
		}
		var entry map[string]any
		if err := json.Unmarshal(bytes.TrimSpace(data), &entry); err != nil {
			t.Fatalf("ledger %q: %v", data, err)
		}
		for _, k := range []string{"feed", "epoch", "position", "attempts", "line"} {
			if _, ok := entry[k]; !ok {
				t.Errorf("ledger entry %s has no %q", data, k)
			}
		}
		if entry["feed"] != "app" || entry["line"] != "POISON-1" || entry["position"] != float64(in.size()+9) || !hasKeyLike(entry, "error") || !hasKeyLike(entry, "time") {
			t.Errorf("ledger entry %s: want feed app, line POISON-1, position %d, the last error and a time", data, in.size()+9)
		}
		if out, errOut, code := cli(t, "status", "--addr", d.addr); code != 1 {
			t.Errorf("status with a dead letter: exit %d, want 1 (settled but lossy)\n%s%s", code, out, errOut)
		}
		for _, q := range []string{"max=0", "max=10001", "max=x"} {
			expectCode(t, d, "GET", "/admin/dlq/hook?"+q, ctToken, nil, 400)
		}
		list := expectCode(t, d, "GET", "/admin/dlq/hook?max=10", ctToken, nil, 200)
		if !bytes.Contains(list, []byte("POISON-1")) {
			t.Errorf("DLQ list %s does not show the entry", list)
		}
		h.set(func(h *receiver) { h.poison = "" })
		expectCode(t, d, "POST", "/admin/dlq/hook/replay", ctToken, nil, 200)
		r = waitReport(t, d, "the ledger empty", 30*time.Second, func(r *report) bool { return r.feed(t, "app").DeadLettered == 0 })
		if f := r.feed(t, "app"); !f.Lossless || f.Released != 0 {
			t.Errorf("after a successful replay: lossless %v released %d, want true 0", f.Lossless, f.Released)
		}
		if got := h.linesAt("/ingest"); len(got) == 0 || got[len(got)-1] != "POISON-1" {
			t.Errorf("the replayed line did not reach the receiver: %q", got)
		}
		h.mu.Lock()
		last := h.reqs[len(h.reqs)-1]
		h.mu.Unlock()
		if len(last.objects) == 1 {
			var pos int64
			var ep string
			json.Unmarshal(last.objects[0]["position"], &pos)
			json.Unmarshal(last.objects[0]["epoch"], &ep)
			if pos != in.size()+9 || ep != epoch {
				t.Errorf("replayed line at (%s, %d), want its original (%s, %d)", ep, pos, epoch, in.size()+9)
			}
		}
		if list := expectCode(t, d, "GET", "/admin/dlq/hook", ctToken, nil, 200); bytes.Contains(list, []byte("POISON-1")) {
			t.Errorf("DLQ list after the replay still shows the entry: %s", list)
		}
		s.finish()
		d.stop()
	})
	t.Run("dead letter purged: released, lossy", func(t *testing.T) {
		rig := newWebhookRig(t)
		h, in, d, s, ledger := rig.h, rig.in, rig.d, rig.s, rig.ledger
		h.set(func(h *receiver) { h.poison = "POISON" })
		appendTo(t, in.path, "POISON-2\n")
		waitReport(t, d, "a dead letter", 30*time.Second, func(r *report) bool { return r.Settled && r.feed(t, "app").DeadLettered == 1 })
		expectCode(t, d, "DELETE", "/admin/dlq/hook", ctToken, nil, 200)
		r := waitReport(t, d, "the ledger empty", 30*time.Second, func(r *report) bool { return r.feed(t, "app").DeadLettered == 0 })
		if f := r.feed(t, "app"); f.Lossless || f.Released != 1 {
			t.Errorf("after a purge: lossless %v released %d, want false 1", f.Lossless, f.Released)
		}
		if data, _ := os.ReadFile(ledger); len(bytes.TrimSpace(data)) != 0 {
			t.Errorf("ledger after the purge: %q", data)
		}
		s.finish()
		d.stop()
	})

	t.Run("hold: stalled, healthz 503, status 3; release", func(t *testing.T) {
		rig := newWebhookRig(t)
		h, e, d, s := rig.h, rig.e, rig.d, rig.s
		// Only the request of "one" is held: a subscriber on hold keeps
		// retrying, so lifting the hold before the release would let it
		// recover by itself and leave nothing to release.
		h.set(func(h *receiver) { h.holdText = "one" })
		appendTo(t, e.path("held.log"), "one\n")
		r := waitReport(t, d, "feed held stalled", 30*time.Second, func(r *report) bool { return r.feed(t, "held").Stalled != nil })
		appendTo(t, e.path("held.log"), "two\n") // its own request, after the release
		f := r.feed(t, "held")
		if f.Settled || !f.Lossless || f.sub(t, "holder").State == "LIVE" || f.Consumers != 0 {
			t.Errorf("held: settled %v lossless %v holder %+v consumers %d; want not settled, lossless, the subscriber not LIVE, 0 consumers", f.Settled, f.Lossless, f.sub(t, "holder"), f.Consumers)
		}
		var body []byte
		waitUntil(t, "/healthz 503", 20*time.Second, func() bool {
			var code int
			code, _, body = request(t, d, "GET", "/healthz", "", nil)
			return code == 503
		})
		if !bytes.Contains(body, []byte("holder")) && !bytes.Contains(body, []byte("held")) {
			t.Errorf("/healthz 503 body %s does not give the reason", body)
		}
		out, errOut, code := cli(t, "status", "--addr", d.addr, "--wait-settled", "200ms")
		if code != 3 || !strings.Contains(out+errOut, *f.Stalled) {
			t.Errorf("status while stalled: exit %d, want 3 with the stalled reason %q\n%s%s", code, *f.Stalled, out, errOut)
		}
		expectCode(t, d, "POST", "/admin/release/held/holder", ctToken, nil, 200)
		r = waitReport(t, d, "held settled", 30*time.Second, func(r *report) bool { return r.feed(t, "held").Settled })
		if f := r.feed(t, "held"); f.Lossless || f.Released == 0 || f.Stalled != nil || f.sub(t, "holder").State != "LIVE" {
			t.Errorf("after the release: lossless %v released %d stalled %v holder %+v", f.Lossless, f.Released, f.Stalled, f.sub(t, "holder"))
		}
		if got := h.linesAt("/hold"); len(got) == 0 || got[len(got)-1] != "two" {
			t.Errorf("after the release the subscriber should go on with the next line; receiver got %q", got)
		}
		waitUntil(t, "/healthz 200", 20*time.Second, func() bool {
			code, _, _ := request(t, d, "GET", "/healthz", "", nil)
			return code == 200
		})
		s.finish()
		d.stop()
	})
	t.Run("dead letters count across a restart", func(t *testing.T) {
		rig := newWebhookRig(t)
		h, e, in, d, s := rig.h, rig.e, rig.in, rig.d, rig.s
		h.set(func(h *receiver) { h.poison = "POISON" })
		appendTo(t, in.path, "POISON-3\n")
		waitReport(t, d, "a dead letter", 30*time.Second, func(r *report) bool { return r.Settled && r.feed(t, "app").DeadLettered == 1 })
		s.finish()
		d.stop()
		d = e.start()
		s = sample(t, d)
		r := waitReport(t, d, "settled after the restart", 30*time.Second, func(r *report) bool { return r.Settled })
		if f := r.feed(t, "app"); f.DeadLettered != 1 || f.Lossless || f.Sequence != 0 {
			t.Errorf("after a restart: deadLettered %d lossless %v sequence %d; want 1 (read from disk), false, 0", f.DeadLettered, f.Lossless, f.Sequence)
		}
		s.finish()
		d.stop()
	})
	s.finish()
	d.stop()
}

// webhookRig is a daemon on ctWebhookConfig against a newHook receiver,
// settled after 7 lines on the app feed (the last one with invalid UTF-8),
// with a sampler checking every report.
type webhookRig struct {
	h      *receiver
	e      *env
	in     *input
	d      *daemon
	s      *sampler
	epoch  string // the app feed's
	ledger string // the hook's dead-letter ledger
}

func newWebhookRig(t *testing.T) *webhookRig {
	t.Helper()
	h := newHook(t)
	e := newEnv(t, fmt.Sprintf(ctWebhookConfig, h.srv.URL))
	in := newInput(t, e.path("in.log"))
	in.appendLines(0)
	os.WriteFile(e.path("held.log"), nil, 0o644)
	d := e.start()
	s := sample(t, d)

	in.appendLines(6)
	const bad = "bad\xff\xfe\xe2\x82\xed\xa0\x80byte" // invalid bytes, a cut rune, a surrogate
	appendTo(t, in.path, bad+"\n")
	in.texts = append(in.texts, bad)
	in.ends = append(in.ends, in.size()+int64(len(bad))+1)
	r := waitReport(t, d, "settled", 30*time.Second, func(r *report) bool { return r.Settled && r.feed(t, "app").Sequence == 7 })
	return &webhookRig{h: h, e: e, in: in, d: d, s: s, epoch: r.feed(t, "app").Epoch, ledger: e.path("state/dlq/hook.jsonl")}
}
