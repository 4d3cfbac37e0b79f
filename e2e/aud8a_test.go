package e2e

// Audit 8a: DESIGN §2, §5, §6, §7 and §9 for single-file feeds, probed
// from outside against the built binary: probes that held, kept as
// regressions. Its one finding (a webhook request that fails is held or
// dead-lettered whole, not line by line as §6 says of the group) stays as
// it is: §12's replay rule takes a webhook dead letter to be a request,
// and splitting one could change its key after the receiver applied it
// (README, "webhook").

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// TestAud8AOKQueueBytesLongLineWaitsForEmptyQueue checks DESIGN §5: "A batch
// holds at most `queueCapacity` lines and `queueBytes` bytes (one longer
// line excepted, which waits for an empty queue), so it always fits
// eventually", under each policy: with queueBytes 16, lines of 51 bytes
// appended one at a time (each after the feed settled) reach a PAUSE, a
// DROP_AFTER_SPIN and a BLOCK_WITH_DEADLINE file sink whole, with nothing
// dropped or refused (their queues were empty), and the feed stays lossless.
func TestAud8AOKQueueBytesLongLineWaitsForEmptyQueue(t *testing.T) {
	e := newEnv(t, `dataDir: ./state
status: {listen: "{{ADDR}}"}
shutdownTimeoutMillis: 500
feeds:
  - name: app
    path: ./in.log
    queueBytes: 16
    overload:
      subscribers: {tap: {policy: DROP_AFTER_SPIN}, blk: {policy: BLOCK_WITH_DEADLINE}}
processors:
  - {name: f, feed: app, type: file, path: ./f.out}
  - {name: tap, feed: app, type: file, path: ./tap.out}
  - {name: blk, feed: app, type: file, path: ./blk.out}
`)
	audWrite(t, e.path("in.log"), "")
	d := e.start()
	var want strings.Builder
	for i := 1; i <= 5; i++ {
		line := fmt.Sprintf("%050d\n", i)
		want.WriteString(line)
		appendTo(t, e.path("in.log"), line)
		d.waitFor(fmt.Sprintf("line %d settled", i), 20*time.Second, func(r *report) bool {
			return r.Settled && r.Feeds[0].Sequence == uint64(i)
		})
	}
	r := d.waitSettled(20 * time.Second)
	f := r.feed(t, "app")
	if f.Dropped != 0 || f.Refused != 0 || !f.Lossless {
		t.Errorf("lines longer than queueBytes into empty queues: dropped %d refused %d lossless %v; want 0 0 true", f.Dropped, f.Refused, f.Lossless)
	}
	for _, out := range []string{"f.out", "tap.out", "blk.out"} {
		if b, _ := os.ReadFile(e.path(out)); string(b) != want.String() {
			t.Errorf("%s holds %q, want the 5 lines whole", out, b)
		}
	}
}

// TestAud8AOKCountWholeLineWithoutKeyGroup checks DESIGN §6 "`count` …
// counts lines per value of the named group `key` of `match` (the whole line
// without one)" and "Every type takes optional `match` / `exclude` RE2
// filters; a filtered line counts as processed": a match without a `key`
// group counts per whole line, lines it does not match and lines `exclude`
// drops are not counted, and the feed settles (they count as processed).
func TestAud8AOKCountWholeLineWithoutKeyGroup(t *testing.T) {
	e := newEnv(t, `dataDir: ./state
status: {listen: "{{ADDR}}", token: `+ctToken+`}
shutdownTimeoutMillis: 500
feeds:
  - name: app
    path: ./in.log
processors:
  - {name: bykey, feed: app, type: count, match: '^(?P<key>[A-Z]+) '}
  - {name: whole, feed: app, type: count, match: '^[A-Z]+ ', exclude: 'skip'}
`)
	audWrite(t, e.path("in.log"), "GET /a\nPOST /b\nnoise\nGET /a\nGET /skip\n")
	d := e.start()
	d.waitSettled(20 * time.Second)
	for name, want := range map[string]map[string]float64{
		"bykey": {"GET": 3, "POST": 1},
		"whole": {"GET /a": 2, "POST /b": 1},
	} {
		code, _, body := request(t, d, http.MethodGet, "/v1/state/"+name, ctToken, nil)
		var v any
		if code != http.StatusOK || json.Unmarshal(body, &v) != nil || !hasCounts(v, want) {
			t.Errorf("GET /v1/state/%s: %d %s; want counts %v", name, code, body, want)
		}
	}
}

// TestAud8AOKWebhookTimeoutMillis checks DESIGN §7 `timeoutMillis: 5000`
// (webhook) with §6 "408, 429, 5xx, network errors → retry": a receiver
// that sits on the first request for 3 s is given up after timeoutMillis
// (300 ms) and the same request (same Idempotency-Key) comes again well
// before the first one would have been answered; the line is then applied.
func TestAud8AOKWebhookTimeoutMillis(t *testing.T) {
	h := newAudHook(t)
	h.setAnswer(func(n int, r audReq, w http.ResponseWriter) int {
		if n == 0 {
			time.Sleep(3 * time.Second)
		}
		return http.StatusOK
	})
	e := newEnv(t, audHookConfig(h.srv.URL, `    timeoutMillis: 300
    retry: {initialMillis: 50, maxMillis: 100, attempts: 5}
`))
	audWrite(t, e.path("in.log"), "l1\n")
	d := e.start()
	d.waitSettled(20 * time.Second)
	rs := h.requests()
	if len(rs) < 2 || rs[1].key != rs[0].key || rs[1].at.Sub(rs[0].at) > 2*time.Second {
		var got []string
		for _, r := range rs {
			got = append(got, fmt.Sprintf("%s@+%v", r.key, r.at.Sub(rs[0].at).Round(time.Millisecond)))
		}
		t.Errorf("requests %v; want the first given up after 300 ms and the same key again within 2 s", got)
	}
}
