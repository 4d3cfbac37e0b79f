package daemon

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

const pullConfig = `
dataDir: %DIR%/state
status: {listen: "127.0.0.1:0", token: s3cret}
shutdownTimeoutMillis: 300
feeds:
  - {name: app, path: %DIR%/app.log, pollIntervalMillis: 20}
processors:
  - {name: consumer, feed: app, type: pull, ackTimeoutMillis: 30000, maxInFlight: 1000}
  - {name: archive, feed: app, type: file, path: %DIR%/out.log}
`

// request sends method path with an optional Authorization header value
// and body, and returns the code, the Allow header and the body.
func (e *env) request(method, path, auth string, body []byte) (int, string, []byte) {
	e.t.Helper()
	return httpDo(e.t, e.base, method, path, auth, body)
}

func httpDo(tb testing.TB, base, method, path, auth string, body []byte) (int, string, []byte) {
	tb.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		tb.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := httpc.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Allow"), b
}

// Every bad request gets its status code and a JSON body {"error": "…"},
// checked in the contract's order: token (401), route and method (404,
// 405), body (413, 400). Afterwards the daemon still delivers.
func TestBadRequests(t *testing.T) {
	e := start(t, pullConfig, Options{})
	const tok = "Bearer s3cret"
	huge := []byte(`{"deliveryId":"` + strings.Repeat("x", 2<<20) + `"}`)
	rows := []struct {
		name         string
		method, path string
		auth         string
		body         string
		raw          []byte
		want         int
	}{
		{"no token", "GET", "/v1/pull/consumer", "", "", nil, 401},
		{"wrong token", "GET", "/v1/pull/consumer", "Bearer s3crex", "", nil, 401},
		{"token prefix only", "GET", "/v1/pull/consumer", "Bearer s3cre", "", nil, 401},
		{"basic auth", "GET", "/v1/pull/consumer", "Basic czNjcmV0", "", nil, 401},
		{"no token on ack", "POST", "/v1/ack", "", `{"deliveryId":"x"}`, nil, 401},
		{"no token before method", "DELETE", "/v1/ack", "", "", nil, 401},
		{"no token before body size", "POST", "/v1/nack", "", "", huge, 401},
		{"no token on unknown /v1 path", "GET", "/v1/nothing", "", "", nil, 401},
		{"no token on admin", "POST", "/admin/release/app/consumer", "", "", nil, 401},
		{"unknown path", "GET", "/v1/nothing", tok, "", nil, 404},
		{"pull without subscriber", "GET", "/v1/pull/", tok, "", nil, 404},
		{"unknown subscriber", "GET", "/v1/pull/nobody", tok, "", nil, 404},
		{"not a pull subscriber", "GET", "/v1/pull/archive", tok, "", nil, 404},
		{"wrong method on pull", "POST", "/v1/pull/consumer", tok, "", nil, 405},
		{"wrong method on ack", "GET", "/v1/ack", tok, "", nil, 405},
		{"wrong method on nack", "PUT", "/v1/nack", tok, `{"deliveryId":"x"}`, nil, 405},
		{"wrong method on feed.status", "POST", "/feed.status", "", "", nil, 405},
		{"negative max", "GET", "/v1/pull/consumer?max=-1", tok, "", nil, 400},
		{"zero max", "GET", "/v1/pull/consumer?max=0", tok, "", nil, 400},
		{"max too big", "GET", "/v1/pull/consumer?max=10001", tok, "", nil, 400},
		{"max not a number", "GET", "/v1/pull/consumer?max=ten", tok, "", nil, 400},
		{"empty max", "GET", "/v1/pull/consumer?max=", tok, "", nil, 400},
		{"wait too long", "GET", "/v1/pull/consumer?wait=31s", tok, "", nil, 400},
		{"negative wait", "GET", "/v1/pull/consumer?wait=-1s", tok, "", nil, 400},
		{"wait without unit", "GET", "/v1/pull/consumer?wait=10", tok, "", nil, 400},
		{"raw not a boolean", "GET", "/v1/pull/consumer?raw=maybe", tok, "", nil, 400},
		{"huge body", "POST", "/v1/ack", tok, "", huge, 413},
		{"huge body on nack", "POST", "/v1/nack", tok, "", huge, 413},
		{"malformed JSON", "POST", "/v1/ack", tok, `{"deliveryId":`, nil, 400},
		{"not JSON", "POST", "/v1/ack", tok, `deliveryId=x`, nil, 400},
		{"unknown field", "POST", "/v1/ack", tok, `{"deliveryId":"x","extra":1}`, nil, 400},
		{"wrong type", "POST", "/v1/ack", tok, `{"deliveryId":42}`, nil, 400},
		{"wrong type of list", "POST", "/v1/ack", tok, `{"deliveryIds":"x"}`, nil, 400},
		{"wrong type of body", "POST", "/v1/ack", tok, `["x"]`, nil, 400},
		{"trailing data", "POST", "/v1/ack", tok, `{"deliveryId":"x"} {"deliveryId":"y"}`, nil, 400},
		{"trailing garbage", "POST", "/v1/nack", tok, `{"deliveryId":"x"}garbage`, nil, 400},
		{"empty body", "POST", "/v1/ack", tok, "", nil, 400},
		{"blank body", "POST", "/v1/nack", tok, " \n ", nil, 400},
		{"null body", "POST", "/v1/ack", tok, "null", nil, 400},
		{"no id", "POST", "/v1/ack", tok, `{}`, nil, 400},
		{"both id forms", "POST", "/v1/ack", tok, `{"deliveryId":"x","deliveryIds":["y"]}`, nil, 400},
		{"empty id", "POST", "/v1/ack", tok, `{"deliveryId":""}`, nil, 400},
		{"unknown id", "POST", "/v1/ack", tok, `{"deliveryId":"consumer:0123456789abcdef0123456789abcdef"}`, nil, 404},
		{"id of unknown subscriber", "POST", "/v1/ack", tok, `{"deliveryId":"nobody:0123456789abcdef0123456789abcdef"}`, nil, 404},
		{"id without subscriber", "POST", "/v1/nack", tok, `{"deliveryId":"0123456789abcdef"}`, nil, 404},
		{"nack of unknown id", "POST", "/v1/nack", tok, `{"deliveryId":"consumer:ffffffffffffffffffffffffffffffff"}`, nil, 404},
	}
	for _, r := range rows {
		body := r.raw
		if body == nil && r.body != "" {
			body = []byte(r.body)
		}
		code, allow, got := e.request(r.method, r.path, r.auth, body)
		if code != r.want {
			t.Errorf("%s: %s %s answered %d %s, want %d", r.name, r.method, r.path, code, got, r.want)
			continue
		}
		var m map[string]any
		dec := json.NewDecoder(bytes.NewReader(got))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil || len(m) != 1 {
			t.Errorf("%s: body %q is not {\"error\": …}", r.name, got)
			continue
		}
		if s, ok := m["error"].(string); !ok || s == "" {
			t.Errorf("%s: body %q has no error message", r.name, got)
		}
		if code == http.StatusMethodNotAllowed && allow == "" {
			t.Errorf("%s: 405 without an Allow header", r.name)
		}
	}

	// A batch ACK with unknown ids is a 200 that lists them.
	code, _, got := e.request("POST", "/v1/ack", tok, []byte(`{"deliveryIds":["consumer:00","nobody:11",""]}`))
	if code != 200 || strings.TrimSpace(string(got)) != `{"acked":0,"unknown":["consumer:00","nobody:11",""]}` {
		t.Fatalf("batch ACK of unknown ids: %d %s", code, got)
	}

	// The daemon still delivers, and the status stays open without a token.
	e.appendLines(numbered("line", 0, 20)...)
	c := &pullClient{tb: t, base: e.base, sub: "consumer", auth: tok}
	evs := c.pull(20, 100, 5*time.Second)
	c.ackAll(evs)
	f := e.waitFor("settled", 10*time.Second, settled)
	if f.Pointer.Offset != e.inputSize() || !f.Lossless {
		t.Fatalf("after the bad requests: %+v pointer %+v", f, f.Pointer)
	}
	if code, _, _ := e.request("GET", "/healthz", "", nil); code != 200 {
		t.Fatalf("/healthz answered %d", code)
	}
}

// With protectRead, /feed.status and /metrics need the token too;
// /healthz never does.
func TestProtectRead(t *testing.T) {
	e := start(t, strings.Replace(pullConfig, "token: s3cret}", "token: s3cret, protectRead: true}", 1), Options{})
	for _, p := range []string{"/feed.status", "/metrics"} {
		if code, _, body := e.request("GET", p, "", nil); code != 401 || !strings.Contains(string(body), `"error"`) {
			t.Fatalf("%s without a token: %d %s", p, code, body)
		}
		if code, _, _ := e.request("GET", p, "Bearer s3cret", nil); code != 200 {
			t.Fatalf("%s with the token: %d", p, code)
		}
	}
	if code, _, _ := e.request("GET", "/healthz", "", nil); code != 200 {
		t.Fatalf("/healthz without a token: %d", code)
	}
}
