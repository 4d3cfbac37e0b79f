package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// The webhook sink against an unreliable receiver (DESIGN §6 webhook).

// receiver is a webhook endpoint on 127.0.0.1 that applies requests and
// dedups them on Idempotency-Key, and records every request it got.
type receiver struct {
	t   *testing.T
	srv *httptest.Server

	mu         sync.Mutex
	rng        *rand.Rand
	fail       float64 // share of requests answered 503 unprocessed
	drop       float64 // share of requests processed, then dropped unanswered
	down       bool    // drop every request (processed first)
	downAt     int     // go down once this many lines were applied (0: never)
	poison     string  // a request holding this text is answered 400
	poisonPath string  // poison applies to requests to this path only ("": any)
	holdPath   string  // requests to this path are answered 503 ("": none)…
	holdText   string  // …when they hold this text ("": any)
	reqs       []hookReq
	applied    map[string][]string // key → its lines, the first time the key was processed
	keys       []string            // keys in the order first processed
	raw        []string            // every line of every processed request (no dedupe)
	seen       []string            // the key of every request received, in order
	bad        []string            // problems with a request's shape
}

func newReceiver(t *testing.T, seed uint64) *receiver {
	r := &receiver{t: t, rng: rand.New(rand.NewPCG(seed, 1)), applied: map[string][]string{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

// hookReq is one request a receiver got, with the code it answered (0 when
// the connection was dropped unanswered).
type hookReq struct {
	path    string
	method  string
	header  http.Header
	objects []map[string]json.RawMessage // one per NDJSON line; nil when not JSON
	body    []byte
	code    int
}

// newHook is a receiver that never fails at random: a body to /ingest
// holding "POISON" is a 400 while poison is set, and /hold answers 503
// while holdPath is set.
func newHook(t *testing.T) *receiver {
	r := newReceiver(t, 1)
	r.poison, r.poisonPath, r.holdPath = "POISON", "/ingest", "/hold"
	return r
}

// record appends req with its answer code.
func (r *receiver) record(req *http.Request, body []byte, code int) {
	rec := hookReq{path: req.URL.Path, method: req.Method, header: req.Header.Clone(), body: body, code: code}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var o map[string]json.RawMessage
		if json.Unmarshal(sc.Bytes(), &o) != nil {
			o = nil
		}
		rec.objects = append(rec.objects, o)
	}
	r.mu.Lock()
	r.reqs = append(r.reqs, rec)
	r.mu.Unlock()
}

// linesAt returns the lines of the requests to path answered 200, in order.
func (r *receiver) linesAt(path string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, q := range r.reqs {
		if q.path != path || q.code != http.StatusOK {
			continue
		}
		for _, o := range q.objects {
			var s string
			json.Unmarshal(o["line"], &s)
			out = append(out, s)
		}
	}
	return out
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	key := req.Header.Get("Idempotency-Key")
	r.mu.Lock()
	r.seen = append(r.seen, key)
	if err != nil || req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/x-ndjson" ||
		req.Header.Get("X-Source") != "tailfeed" || key == "" {
		r.bad = append(r.bad, fmt.Sprintf("%s %q %v", req.Method, req.Header, err))
	}
	dice := r.rng.Float64()
	if r.downAt > 0 && len(r.keys) > 0 && len(r.raw) >= r.downAt {
		r.down, r.downAt = true, 0
	}
	down, fail, drop := r.down, r.fail, r.drop // set() may change them meanwhile
	poison := r.poison != "" && (r.poisonPath == "" || r.poisonPath == req.URL.Path) && bytes.Contains(body, []byte(r.poison))
	hold := r.holdPath != "" && r.holdPath == req.URL.Path && bytes.Contains(body, []byte(r.holdText))
	r.mu.Unlock()
	switch {
	case poison:
		r.record(req, body, http.StatusBadRequest)
		http.Error(w, "bad line", http.StatusBadRequest)
		return
	case hold:
		r.record(req, body, http.StatusServiceUnavailable)
		http.Error(w, "held", http.StatusServiceUnavailable)
		return
	case !down && dice < fail:
		r.record(req, body, http.StatusServiceUnavailable)
		http.Error(w, "try later", http.StatusServiceUnavailable)
		return
	}
	lines := r.parse(key, body)
	r.mu.Lock()
	r.raw = append(r.raw, lines...)
	if _, dup := r.applied[key]; !dup {
		r.applied[key] = lines
		r.keys = append(r.keys, key)
	}
	r.mu.Unlock()
	if down || dice < fail+drop {
		r.record(req, body, 0)
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close() // processed, but the response is lost
		}
		return
	}
	r.record(req, body, http.StatusOK)
	w.WriteHeader(http.StatusOK)
}

// parse checks the NDJSON objects against the key and returns their lines.
func (r *receiver) parse(key string, body []byte) []string {
	var lines []string
	var first, last string
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		var o struct {
			ID       string `json:"id"`
			Feed     string `json:"feed"`
			Epoch    string `json:"epoch"`
			Position int64  `json:"position"`
			Path     string `json:"path"`
			Line     string `json:"line"`
		}
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&o); err != nil || o.ID != fmt.Sprintf("%s:%s:%d", o.Feed, o.Epoch, o.Position) {
			r.mu.Lock()
			r.bad = append(r.bad, fmt.Sprintf("object %q: %v", sc.Text(), err))
			r.mu.Unlock()
			continue
		}
		if first == "" {
			first = o.ID
		}
		last = fmt.Sprint(o.Position)
		lines = append(lines, o.Line)
	}
	if want := first + "-" + last; key != want {
		r.mu.Lock()
		r.bad = append(r.bad, fmt.Sprintf("key %q for a request of %s", key, want))
		r.mu.Unlock()
	}
	return lines
}

func (r *receiver) set(f func(*receiver)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(r)
}

// deduped is every line the receiver applied, once per key, in key order.
func (r *receiver) deduped() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, k := range r.keys {
		out = append(out, r.applied[k]...)
	}
	return out
}

const webhookConfigTmpl = `dataDir: ./state
status:
  listen: {{ADDR}}
shutdownTimeoutMillis: 500
feeds:
  - name: app
    path: ./in.log
    readStrategy: COMMITTED
processors:
  - name: hook
    feed: app
    type: webhook
    url: %s/ingest
    timeoutMillis: 2000
    batchMaxLines: %d
    headers: {X-Source: tailfeed}
    retry: {initialMillis: 5, maxMillis: 50, attempts: %d}
    onFailure: %s
`

// ledgerLines reads the lines of a dead-letter ledger.
func ledgerLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if l == "" {
			continue
		}
		var e struct {
			Line string `json:"line"`
		}
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("ledger entry %q: %v", l, err)
		}
		out = append(out, e.Line)
	}
	return out
}

// Against a receiver that answers 503 to 30 % of the requests and loses
// 10 % of the responses after processing, a receiver that dedups on
// Idempotency-Key applies every line exactly once; without the dedupe it
// would have applied duplicates. The request holding a poison line gets a
// 400 and is dead-lettered whole; the feed settles, not lossless.
func TestWebhookFlakyReceiver(t *testing.T) {
	rc := newReceiver(t, 42)
	rc.set(func(r *receiver) { r.fail, r.drop, r.poison = 0.3, 0.1, "POISON" })
	e := newEnv(t, fmt.Sprintf(webhookConfigTmpl, rc.srv.URL, 50, 60, "deadLetter"))
	in := newInput(t, e.path("in.log"))
	in.appendLines(0)
	d := e.start()
	for range 5 {
		in.appendLines(1000)
	}
	poisonAt := len(in.texts)
	in.texts = append(in.texts, "POISON")
	appendRaw(t, in.path, "POISON\n")
	in.ends = append(in.ends, in.ends[len(in.ends)-1]+7)
	in.appendLines(999)

	r := d.waitSettled(60 * time.Second)
	f := r.Feeds[0]
	if f.Lossless || f.Pointer.Offset != in.size() {
		t.Fatalf("settled: lossless %v (want false: a dead letter), pointer %+v (want %d)", f.Lossless, f.Pointer, in.size())
	}
	rc.mu.Lock()
	bad := rc.bad
	raw := len(rc.raw)
	rc.mu.Unlock()
	if len(bad) > 0 {
		t.Fatalf("malformed requests: %v", bad[:min(5, len(bad))])
	}
	dead := ledgerLines(t, e.path("state/dlq/hook.jsonl"))
	if len(dead) == 0 || len(dead) > 50 || !containsStr(dead, "POISON") {
		t.Fatalf("dead letters %d lines, want the poison request's (≤ 50) holding POISON", len(dead))
	}
	got := rc.deduped()
	count := map[string]int{}
	for _, l := range append(got, dead...) {
		count[l]++
	}
	for i, text := range in.texts {
		if count[text] != 1 {
			t.Fatalf("line %d (%q) applied or dead-lettered %d times, want once (poison at %d)", i, text, count[text], poisonAt)
		}
	}
	if len(got)+len(dead) != len(in.texts) {
		t.Fatalf("%d applied + %d dead-lettered, want %d lines", len(got), len(dead), len(in.texts))
	}
	if raw <= len(got) {
		t.Fatalf("without dedupe the receiver applied %d lines for %d: the lost responses should have caused duplicates", raw, len(got))
	}
	t.Logf("%d lines: %d applied without dedupe (%d duplicates), %d dead-lettered", len(in.texts), raw, raw-len(got), len(dead))
}

func containsStr(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// kill -9 while a request is stuck (applied by the receiver, response lost
// each time): after the restart the same request — same key, same lines —
// is sent again, and the deduping receiver ends with every line once.
func TestWebhookKill9KeepsTheKey(t *testing.T) {
	rc := newReceiver(t, 7)
	e := newEnv(t, fmt.Sprintf(webhookConfigTmpl, rc.srv.URL, 100, 100000, "hold"))
	in := newInput(t, e.path("in.log"))
	in.appendLines(0)
	rc.set(func(r *receiver) { r.downAt = 200 })
	d := e.start()
	in.appendLines(500)
	var stuck string
	waitUntil(t, "a request retried while down", 20*time.Second, func() bool {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		n := len(rc.seen)
		if n >= 3 && rc.seen[n-1] == rc.seen[n-2] && rc.seen[n-2] == rc.seen[n-3] {
			stuck = rc.seen[n-1]
		}
		return stuck != ""
	})
	d.kill()
	rc.mu.Lock()
	before := len(rc.seen)
	stuckLines := rc.applied[stuck]
	rc.down = false
	rc.mu.Unlock()

	d = e.start()
	d.waitSettled(30 * time.Second)
	rc.mu.Lock()
	after := rc.seen[before:]
	rc.mu.Unlock()
	if len(after) == 0 || after[0] != stuck {
		t.Fatalf("first request after the restart has key %q, want the stuck request's %q", after, stuck)
	}
	if len(stuckLines) == 0 {
		t.Fatal("the stuck request was never applied")
	}
	got := rc.deduped()
	if len(got) != len(in.texts) {
		t.Fatalf("receiver applied %d lines (deduped), want %d", len(got), len(in.texts))
	}
	for i, l := range got {
		if l != in.texts[i] {
			t.Fatalf("applied line %d = %q, want %q", i, l, in.texts[i])
		}
	}
}
