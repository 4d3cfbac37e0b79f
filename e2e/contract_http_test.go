package e2e

// DESIGN §7 HTTP and §9 pull API: token, order of checks, pull, ack, nack,
// state, metrics.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

const ctHTTPConfig = `dataDir: ./state
status:
  listen: {{ADDR}}
  token: ` + ctToken + `
shutdownTimeoutMillis: 500
feeds:
  - name: app
    path: ./in.log
processors:
  - name: puller
    feed: app
    type: pull
    maxInFlight: 20000
    ackTimeoutMillis: 60000
  - name: counter
    feed: app
    type: count
    match: '^(?P<key>[a-z]+)-'
`

// TestContractHTTP checks §7's HTTP rules one by one: the token on pull,
// ack, nack, state and admin (never on /healthz, not on /feed.status and
// /metrics without protectRead), 401 before 404/405 before 413/400, every
// 4xx an {"error":…} body, the pull API's max/wait/raw, single and batch
// ACKs, a NACK redelivered within 100 ms with attempt + 1, /v1/state, and
// /metrics in the Prometheus text format.
//
// The subtests on the parent's daemon change no state; those that pull,
// ACK or NACK start their own (newHTTPRig), so each runs alone.
func TestContractHTTP(t *testing.T) {
	parent := newHTTPRig(t)
	d := parent.d

	huge := bytes.Repeat([]byte(" "), 2<<20)
	t.Run("open endpoints", func(t *testing.T) {
		expectCode(t, d, http.MethodGet, "/healthz", "", nil, 200)
		expectCode(t, d, http.MethodGet, "/feed.status", "", nil, 200)
		expectCode(t, d, http.MethodGet, "/metrics", "", nil, 200)
		expectCode(t, d, http.MethodGet, "/healthz", "wrong", nil, 200)
	})
	protected := []struct{ method, path string }{
		{"GET", "/v1/pull/puller"},
		{"POST", "/v1/ack"},
		{"POST", "/v1/nack"},
		{"GET", "/v1/state/counter"},
		{"GET", "/admin/dlq/puller"},
		{"POST", "/admin/dlq/puller/replay"},
		{"DELETE", "/admin/dlq/puller"},
		{"POST", "/admin/release/app/puller"},
	}
	t.Run("token: missing or wrong is 401", func(t *testing.T) {
		for _, p := range protected {
			expectCode(t, d, p.method, p.path, "", nil, 401)
			expectCode(t, d, p.method, p.path, ctToken+"x", nil, 401)
			req, _ := http.NewRequest(p.method, "http://"+d.addr+p.path, nil)
			req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("x:"+ctToken)))
			if resp, err := httpClient.Do(req); err == nil {
				resp.Body.Close()
				if resp.StatusCode != 401 {
					t.Errorf("%s %s with Basic auth: %d, want 401", p.method, p.path, resp.StatusCode)
				}
			}
		}
	})
	t.Run("token: the scheme is case-insensitive", func(t *testing.T) {
		req, _ := http.NewRequest("GET", "http://"+d.addr+"/v1/state/counter", nil)
		req.Header.Set("Authorization", "bearer "+ctToken)
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("Authorization: bearer <token>: %d, want 200 (RFC 7235: the scheme is case-insensitive)", resp.StatusCode)
		}
	})
	t.Run("order: token, route and method, body", func(t *testing.T) {
		expectCode(t, d, "GET", "/v1/pull/ghost", "", nil, 401)
		expectCode(t, d, "GET", "/v1/pull/ghost", ctToken, nil, 404)
		expectCode(t, d, "POST", "/v1/pull/puller", "", nil, 401)
		expectCode(t, d, "POST", "/v1/pull/puller", ctToken, nil, 405)
		expectCode(t, d, "POST", "/v1/ack", "", huge, 401)
		expectCode(t, d, "PUT", "/v1/ack", ctToken, huge, 405)
		expectCode(t, d, "GET", "/v1/ack", ctToken, nil, 405)
		expectCode(t, d, "POST", "/v1/ack", ctToken, huge, 413)
		expectCode(t, d, "POST", "/v1/nack", ctToken, huge, 413)
		expectCode(t, d, "GET", "/v1/state/ghost", ctToken, nil, 404)
		expectCode(t, d, "GET", "/admin/dlq/ghost", ctToken, nil, 404)
		expectCode(t, d, "POST", "/admin/dlq/ghost/replay", ctToken, nil, 404)
		expectCode(t, d, "DELETE", "/admin/dlq/ghost", ctToken, nil, 404)
		expectCode(t, d, "POST", "/admin/release/app/ghost", ctToken, nil, 404)
		expectCode(t, d, "POST", "/admin/release/ghost/puller", ctToken, nil, 404)
		expectCode(t, d, "GET", "/admin/release/app/puller", ctToken, nil, 405)
		expectCode(t, d, "PUT", "/admin/dlq/puller", ctToken, nil, 405)
		expectCode(t, d, "POST", "/feed.status", "", nil, 405)
		expectCode(t, d, "POST", "/healthz", "", nil, 405)
		expectCode(t, d, "POST", "/metrics", "", nil, 405)
		expectCode(t, d, "GET", "/nope", ctToken, nil, 404)
		for _, path := range []string{"/v1/ack", "/v1/nack"} {
			for name, body := range map[string]string{
				"malformed":      `{"deliveryId":`,
				"unknown field":  `{"deliveryId":"x","extra":1}`,
				"wrong type":     `{"deliveryId":5}`,
				"wrong type ids": `{"deliveryIds":"x"}`,
				"trailing data":  `{"deliveryId":"x"} {}`,
				"empty":          ``,
			} {
				t.Run(path+" "+name, func(t *testing.T) {
					expectCode(t, d, "POST", path, ctToken, []byte(body), 400)
				})
			}
			expectCode(t, d, "POST", path, ctToken, []byte(`{"deliveryId":"puller:nope"}`), 404)
		}
	})

	t.Run("pull parameters", func(t *testing.T) {
		for _, q := range []string{"max=0", "max=10001", "max=-1", "max=x", "wait=31s", "wait=abc", "wait=1h"} {
			expectCode(t, d, "GET", "/v1/pull/puller?"+q, ctToken, nil, 400)
		}
	})

	t.Run("pull: default max 100, fields, raw only on request", func(t *testing.T) {
		rig := newHTTPRig(t)
		d, lines, inPath := rig.d, rig.lines, rig.inPath
		waitUntil(t, "150 lines published", 20*time.Second, func() bool {
			r, _ := statusRaw(t, d)
			return r.Feeds[0].Sequence == 150
		})
		first := pullFrom(t, d, "puller", "wait=1s")
		if len(first) != 100 {
			t.Fatalf("pull without max: %d events, want the default 100", len(first))
		}
		rest := pullFrom(t, d, "puller", "max=10000&raw=1")
		all := append(first, rest...)
		r, _ := statusRaw(t, d)
		for _, ev := range all {
			i := int(ev.Sequence) - 1
			if i < 0 || i >= len(lines) || ev.Line != lines[i] || ev.Epoch != r.Feeds[0].Epoch || ev.Path != inPath ||
				ev.Attempt != 1 || ev.Feed != "app" || ev.DeliveryID == "" {
				t.Fatalf("event %+v does not carry line %d of feed app, epoch %s, path %s", ev, i+1, r.Feeds[0].Epoch, inPath)
			}
			var end int64
			for _, l := range lines[:i+1] {
				end += int64(len(l)) + 1
			}
			if ev.Position != end {
				t.Fatalf("event %d position %d, want %d", i, ev.Position, end)
			}
		}
		for _, ev := range first {
			if ev.LineBase64 != nil {
				t.Fatalf("lineBase64 without raw=1: %+v", ev)
			}
		}
		for _, ev := range rest {
			if ev.LineBase64 == nil {
				t.Fatalf("no lineBase64 with raw=1: %+v", ev)
			}
		}
		ids := map[string]bool{}
		for _, ev := range all {
			if ids[ev.DeliveryID] || len(ev.DeliveryID) < 16 {
				t.Fatalf("deliveryId %q repeated or too short to be unguessable", ev.DeliveryID)
			}
			ids[ev.DeliveryID] = true
		}
		if empty := pullFrom(t, d, "puller", "max=5"); len(empty) != 0 {
			t.Fatalf("%d events when every line is out", len(empty))
		}
		ackAll(t, d, all)
		rig.done()
	})

	t.Run("ack: single, repeated, unknown; batch", func(t *testing.T) {
		rig := newHTTPRig(t)
		d := rig.d
		all := rig.pullAll(t)
		body := expectCode(t, d, "POST", "/v1/ack", ctToken, mustJSON(map[string]string{"deliveryId": all[0].DeliveryID}), 200)
		var st map[string]any
		if json.Unmarshal(body, &st); st["status"] != "acked" || len(st) != 1 {
			t.Errorf("single ACK body %s, want {\"status\":\"acked\"}", body)
		}
		expectCode(t, d, "POST", "/v1/ack", ctToken, mustJSON(map[string]string{"deliveryId": all[0].DeliveryID}), 404)
		body = expectCode(t, d, "POST", "/v1/ack", ctToken, mustJSON(map[string][]string{"deliveryIds": {all[1].DeliveryID, "puller:bogus", all[0].DeliveryID}}), 200)
		var b struct {
			Acked   *int      `json:"acked"`
			Unknown *[]string `json:"unknown"`
		}
		if json.Unmarshal(body, &b); b.Acked == nil || *b.Acked != 1 || b.Unknown == nil || strings.Join(*b.Unknown, ",") != "puller:bogus,"+all[0].DeliveryID {
			t.Errorf("batch ACK body %s, want {\"acked\":1,\"unknown\":[\"puller:bogus\",%q]}", body, all[0].DeliveryID)
		}
		ackAll(t, d, all[2:])
		rig.done()
	})

	t.Run("nack: redelivered within 100 ms with attempt + 1", func(t *testing.T) {
		rig := newHTTPRig(t)
		d := rig.d
		all := rig.pullAll(t)
		ev := all[2]
		expectCode(t, d, "POST", "/v1/nack", ctToken, mustJSON(map[string]string{"deliveryId": ev.DeliveryID}), 200)
		// The daemon's own wait bounds it: within 100 ms or not at all.
		again := pullFrom(t, d, "puller", "max=10&wait=100ms")
		if len(again) != 1 || again[0].Sequence != ev.Sequence || again[0].Attempt != 2 || again[0].Position != ev.Position || again[0].DeliveryID == ev.DeliveryID {
			t.Fatalf("after a NACK: %+v, want line %d again with attempt 2 and a new id within 100 ms", again, ev.Sequence)
		}
		expectCode(t, d, "POST", "/v1/ack", ctToken, mustJSON(map[string]string{"deliveryId": ev.DeliveryID}), 404)
		expectCode(t, d, "POST", "/v1/nack", ctToken, mustJSON(map[string]string{"deliveryId": ev.DeliveryID}), 404)
		all[2] = again[0]
		ackAll(t, d, all)
		waitReport(t, d, "settled", 30*time.Second, func(r *report) bool { return r.Settled })
		rig.done()
	})

	t.Run("wait returns when a line comes", func(t *testing.T) {
		rig := newHTTPRig(t)
		d, inPath := rig.d, rig.inPath
		all := rig.pullAll(t) // every line out: nothing for the pull below but the late line
		go func() {
			time.Sleep(200 * time.Millisecond)
			if f, err := os.OpenFile(inPath, os.O_WRONLY|os.O_APPEND, 0); err == nil {
				f.WriteString("red-late\n")
				f.Close()
			}
		}()
		start := time.Now()
		evs := pullFrom(t, d, "puller", "max=1&wait=30s")
		if len(evs) != 1 || evs[0].Line != "red-late" {
			t.Fatalf("pull with wait=30s: %+v", evs)
		}
		if took := time.Since(start); took > 20*time.Second {
			t.Errorf("pull with wait=30s returned after %v although a line came after 200 ms", took)
		}
		ackAll(t, d, append(all, evs...))
		waitReport(t, d, "settled", 30*time.Second, func(r *report) bool { return r.Settled })
		rig.done()
	})

	t.Run("state of a count processor", func(t *testing.T) {
		rig := newHTTPRig(t)
		d := rig.d
		appendTo(t, rig.inPath, "red-late\n")
		ackAll(t, d, pullFromN(t, d, "puller", 151, ""))
		waitReport(t, d, "settled", 30*time.Second, func(r *report) bool { return r.Settled })
		var body []byte
		waitUntil(t, "the counts", 20*time.Second, func() bool {
			body = expectCode(t, d, "GET", "/v1/state/counter", ctToken, nil, 200)
			return bytes.Contains(body, []byte(`"red":51`))
		})
		var st map[string]any
		if err := json.Unmarshal(body, &st); err != nil {
			t.Fatalf("state body %s: %v", body, err)
		}
		want := map[string]float64{"red": 51, "green": 50, "blue": 50}
		if !hasCounts(st, want) {
			t.Errorf("state %s does not hold the counts %v", body, want)
		}
		rig.done()
	})

	t.Run("metrics: Prometheus text", func(t *testing.T) {
		code, hdr, body := request(t, d, "GET", "/metrics", "", nil)
		if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain") {
			t.Fatalf("/metrics: %d Content-Type %q", code, hdr.Get("Content-Type"))
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
		if err != nil || len(fams) == 0 {
			t.Fatalf("/metrics is not Prometheus text (%v, %d families):\n%.500s", err, len(fams), body)
		}
	})
	parent.done()
}

// httpRig is a daemon on ctHTTPConfig with 150 lines red-000, green-001,
// blue-002, … in its input, and a sampler checking every report.
type httpRig struct {
	d      *daemon
	s      *sampler
	inPath string
	lines  []string
}

func newHTTPRig(t *testing.T) *httpRig {
	t.Helper()
	e := newEnv(t, ctHTTPConfig)
	r := &httpRig{inPath: e.path("in.log")}
	for i := range 150 {
		r.lines = append(r.lines, []string{"red", "green", "blue"}[i%3]+fmt.Sprintf("-%03d", i))
	}
	os.WriteFile(r.inPath, []byte(strings.Join(r.lines, "\n")+"\n"), 0o644)
	r.d = e.start()
	r.s = sample(t, r.d)
	return r
}

// pullAll pulls the 150 lines, acknowledging none.
func (r *httpRig) pullAll(t *testing.T) []event {
	t.Helper()
	return pullFromN(t, r.d, "puller", 150, "")
}

// done reports what the sampler found and stops the daemon (exit 0).
func (r *httpRig) done() {
	r.s.finish()
	r.d.stop()
}

// TestContractProtectReadAndEnvToken: with protectRead the status and the
// metrics need the token too (/healthz never), and TAILFEED_TOKEN read by
// `run` replaces status.token.
func TestContractProtectReadAndEnvToken(t *testing.T) {
	e := newEnv(t, `dataDir: ./state
status:
  listen: {{ADDR}}
  token: config-token
  protectRead: true
log: {level: info, format: json}
shutdownTimeoutMillis: 300
feeds:
  - name: app
    path: ./in.log
processors:
  - name: puller
    feed: app
    type: pull
`)
	os.WriteFile(e.path("in.log"), []byte("a\n"), 0o644)
	d := e.startIn(e.dir, "TAILFEED_TOKEN=env-token")
	expectCode(t, d, "GET", "/healthz", "", nil, 200)
	for _, p := range []string{"/feed.status", "/metrics", "/v1/pull/puller"} {
		expectCode(t, d, "GET", p, "", nil, 401)
		expectCode(t, d, "GET", p, "config-token", nil, 401)
		expectCode(t, d, "GET", p, "env-token", nil, 200)
	}
	if _, errOut, code := cli(t, "status", "--addr", d.addr); code != 2 {
		t.Errorf("status against a protected report without the token: exit %d, want 2 (not a report): %s", code, errOut)
	}
	d.stop()
	// log.format json: every log line is a JSON object.
	n := 0
	for _, l := range strings.Split(strings.TrimSpace(d.log()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Errorf("log line %q is not JSON under log.format json", l)
		}
		n++
	}
	if n == 0 {
		t.Errorf("no log lines at level info")
	}
}
