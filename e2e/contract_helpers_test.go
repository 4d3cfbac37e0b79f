package e2e

// Contract conformance: DESIGN §3, §4, §6, §7 and §9 read sentence by
// sentence and checked from outside, against the built binary only (its
// CLI, its files, its HTTP API), as a reader of DESIGN.md who has seen no
// code. Where DESIGN leaves a shape open (a DLQ listing, a replay answer)
// the tests look only for what DESIGN promises to be in it. The tests are
// split by DESIGN section (contract_*_test.go); these are their helpers.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// ctToken is the status token of the contract configs.
const ctToken = "ct-secret"

var hex16 = regexp.MustCompile(`^[0-9a-f]{16}$`)

// mustJSON marshals v (test input, never fails).
func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// isErrorBody reports whether body is {"error":"…"} with a non-empty message.
func isErrorBody(body []byte) bool {
	var e map[string]any
	if json.Unmarshal(body, &e) != nil {
		return false
	}
	s, ok := e["error"].(string)
	return ok && s != ""
}

// expectCode sends a request and requires the status code and, for a 4xx, an
// {"error":"…"} body.
func expectCode(t *testing.T, d *daemon, method, path, token string, body []byte, want int) []byte {
	t.Helper()
	code, _, out := request(t, d, method, path, token, body)
	if code != want {
		t.Errorf("%s %s (token %q, %d body bytes): %d %.200s, want %d", method, path, token, len(body), code, out, want)
	} else if code >= 400 && code < 500 && !isErrorBody(out) {
		t.Errorf("%s %s: %d body %.200q, want {\"error\":\"…\"}", method, path, code, out)
	}
	return out
}

// pullFrom does one GET /v1/pull/{sub}?query and checks the body's shape.
func pullFrom(t testing.TB, d *daemon, sub, query string) []event {
	t.Helper()
	code, _, body := request(t, d, http.MethodGet, "/v1/pull/"+sub+"?"+query, ctToken, nil)
	if code != http.StatusOK {
		t.Fatalf("pull %s?%s: %d %s", sub, query, code, body)
	}
	var r struct {
		Events []event `json:"events"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil || r.Events == nil {
		t.Fatalf("pull body %.300q: %v (want {\"events\":[…]}, an empty list when none)", body, err)
	}
	// Every field of §9 is present in every event.
	var rawEvs struct {
		Events []map[string]json.RawMessage `json:"events"`
	}
	json.Unmarshal(body, &rawEvs)
	for _, ev := range rawEvs.Events {
		for _, k := range []string{"deliveryId", "feed", "epoch", "position", "sequence", "attempt", "path", "line"} {
			if _, ok := ev[k]; !ok {
				t.Fatalf("pull event without %q: %s", k, body)
			}
		}
	}
	return r.Events
}

// pullFromN pulls until n events came (query without max).
func pullFromN(t testing.TB, d *daemon, sub string, n int, query string) []event {
	t.Helper()
	var evs []event
	deadline := time.Now().Add(30 * time.Second)
	for len(evs) < n {
		if time.Now().After(deadline) {
			t.Fatalf("pulled %d events, want %d", len(evs), n)
		}
		q := fmt.Sprintf("max=%d&wait=500ms", n-len(evs))
		if query != "" {
			q += "&" + query
		}
		evs = append(evs, pullFrom(t, d, sub, q)...)
	}
	return evs
}

// ackAll acknowledges evs with one batch ACK; every id must be known.
func ackAll(t testing.TB, d *daemon, evs []event) {
	t.Helper()
	if len(evs) == 0 {
		return
	}
	ids := make([]string, len(evs))
	for i, ev := range evs {
		ids[i] = ev.DeliveryID
	}
	code, _, body := request(t, d, http.MethodPost, "/v1/ack", ctToken, mustJSON(map[string]any{"deliveryIds": ids}))
	var r struct {
		Acked   int      `json:"acked"`
		Unknown []string `json:"unknown"`
	}
	if err := json.Unmarshal(body, &r); code != http.StatusOK || err != nil || r.Acked != len(ids) || r.Unknown == nil || len(r.Unknown) != 0 {
		t.Fatalf("batch ACK of %d ids: %d %s, want 200 {\"acked\":%d,\"unknown\":[]}", len(ids), code, body, len(ids))
	}
}

// jsonText is s as a JSON string carries it: one U+FFFD per invalid
// UTF-8 byte (what Go's encoding/json does).
func jsonText(s string) string {
	var out string
	json.Unmarshal(mustJSON(s), &out)
	return out
}

func keysOf(m map[string]json.RawMessage) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// hasKeyLike reports whether m has a non-empty key containing part.
func hasKeyLike(m map[string]any, part string) bool {
	for k, v := range m {
		if strings.Contains(strings.ToLower(k), part) && v != nil && v != "" {
			return true
		}
	}
	return false
}

// hasCounts looks for an object holding exactly the counts anywhere in v.
func hasCounts(v any, want map[string]float64) bool {
	switch v := v.(type) {
	case map[string]any:
		match := len(v) == len(want)
		for k, n := range want {
			if v[k] != n {
				match = false
			}
		}
		if match {
			return true
		}
		for _, x := range v {
			if hasCounts(x, want) {
				return true
			}
		}
	case []any:
		for _, x := range v {
			if hasCounts(x, want) {
				return true
			}
		}
	}
	return false
}

// pullAckByFirstByte pulls from sub and acknowledges until four pulls in a
// row (1 s long polls) bring nothing, or 90 s: how many lines began with
// each first byte (a file's tag).
func pullAckByFirstByte(t testing.TB, d *daemon, sub string) map[byte]int {
	got := map[byte]int{}
	deadline := time.Now().Add(90 * time.Second)
	idle := 0
	for time.Now().Before(deadline) && idle < 4 {
		evs := pullFrom(t, d, sub, "max=1000&wait=1s")
		if len(evs) == 0 {
			idle++
			continue
		}
		idle = 0
		for _, ev := range evs {
			if len(ev.Line) > 0 {
				got[ev.Line[0]]++
			}
		}
		ackAll(t, d, evs)
	}
	return got
}
