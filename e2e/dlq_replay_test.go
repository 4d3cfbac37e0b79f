package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// Dead-letter replay against the built daemon (DESIGN §12 "Dead-letter
// replay", README "Dead letters"): into a webhook, the first failure stops
// the replay (503 with replayed, remaining, error) and a request dead-
// lettered whole goes again as that request under its original key; into a
// pull subscriber the replay answers at once (202) and each entry leaves the
// ledger when a client acknowledges it.

// replayAnswer is the body of POST /admin/dlq/{processor}/replay.
type replayAnswer struct {
	Processor string `json:"processor"`
	Replayed  *int   `json:"replayed"`
	Queued    *int   `json:"queued"`
	Remaining *int   `json:"remaining"`
	Error     string `json:"error"`
}

func (d *daemon) replay(processor, query string) (int, replayAnswer, time.Duration) {
	d.t.Helper()
	start := time.Now()
	code, body := d.call(http.MethodPost, "/admin/dlq/"+processor+"/replay"+query, nil)
	took := time.Since(start)
	var a replayAnswer
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil || a.Remaining == nil {
		d.t.Fatalf("replay answer %d %s: %v", code, body, err)
	}
	return code, a, took
}

// deadLettered reads the feed's deadLettered and lossless from feed.status.
func (d *daemon) deadLettered() (uint64, bool) {
	d.t.Helper()
	code, body, err := d.get("/feed.status")
	if err != nil || code != http.StatusOK {
		d.t.Fatalf("feed.status: %d %v", code, err)
	}
	var r struct {
		Feeds []struct {
			DeadLettered uint64 `json:"deadLettered"`
			Lossless     bool   `json:"lossless"`
		} `json:"feeds"`
	}
	if err := json.Unmarshal(body, &r); err != nil || len(r.Feeds) != 1 {
		d.t.Fatalf("feed.status %s: %v", body, err)
	}
	return r.Feeds[0].DeadLettered, r.Feeds[0].Lossless
}

// ledgerEntries reads the ledger file's entries: line and request key.
func ledgerEntries(t *testing.T, path string) (lines, requests []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var e struct {
			Line         string `json:"line"`
			Request      string `json:"request"`
			RequestLines int    `json:"requestLines"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("ledger entry %q: %v", sc.Text(), err)
		}
		lines = append(lines, e.Line)
		requests = append(requests, fmt.Sprintf("%s/%d", e.Request, e.RequestLines))
	}
	return lines, requests
}

// checkLedger checks the ledger file and feed.status's deadLettered.
func checkLedger(t *testing.T, d *daemon, path string, want ...string) {
	t.Helper()
	lines, _ := ledgerEntries(t, path)
	if fmt.Sprint(lines) != fmt.Sprint(want) {
		t.Fatalf("ledger %q, want %q", lines, want)
	}
	if n, lossless := d.deadLettered(); n != uint64(len(want)) || lossless != (len(want) == 0) {
		t.Fatalf("deadLettered %d lossless %v, want %d (the ledger's entries)", n, lossless, len(want))
	}
}

// Four one-line requests dead-lettered (the receiver refused them); on
// replay the receiver takes the first and refuses the second: 503 with
// replayed 1, remaining 3 and the error; the ledger holds exactly the other
// three, once each; the third and fourth were not sent. A replay once the
// receiver takes everything empties the ledger and the feed is lossless.
func TestDLQReplayWebhookStopsAtTheFirstFailure(t *testing.T) {
	rc := newReceiver(t, 1)
	rc.set(func(r *receiver) { r.poison = "P" })
	e := newEnv(t, fmt.Sprintf(webhookConfigTmpl, rc.srv.URL, 1, 2, "deadLetter"))
	in := newInput(t, e.path("in.log"))
	in.appendLines(0)
	d := e.start()
	appendRaw(t, in.path, "P1\nP2\nP3\nP4\n")
	ledger := e.path("state/dlq/hook.jsonl")
	waitUntil(t, "four dead letters", 20*time.Second, func() bool { l, _ := ledgerEntries(t, ledger); return len(l) == 4 })
	d.waitSettled(20 * time.Second)
	checkLedger(t, d, ledger, "P1", "P2", "P3", "P4")

	rc.set(func(r *receiver) { r.poison = "P2" })
	rc.mu.Lock()
	before := len(rc.seen)
	rc.mu.Unlock()
	code, a, _ := d.replay("hook", "")
	if code != http.StatusServiceUnavailable || a.Replayed == nil || *a.Replayed != 1 || *a.Remaining != 3 ||
		!strings.Contains(a.Error, "400") {
		t.Fatalf("replay: %d %+v, want 503 replayed 1 remaining 3 with the error", code, a)
	}
	checkLedger(t, d, ledger, "P2", "P3", "P4")
	rc.mu.Lock()
	sent := append([]string(nil), rc.seen[before:]...)
	rc.mu.Unlock()
	if len(sent) != 2 {
		t.Fatalf("the replay sent %d requests %v, want 2 (P1, then P2 once)", len(sent), sent)
	}

	rc.set(func(r *receiver) { r.poison = "" })
	code, a, _ = d.replay("hook", "")
	if code != http.StatusOK || *a.Replayed != 3 || *a.Remaining != 0 || a.Error != "" {
		t.Fatalf("second replay: %d %+v", code, a)
	}
	checkLedger(t, d, ledger)
	if got := rc.deduped(); fmt.Sprint(got) != "[P1 P2 P3 P4]" {
		t.Fatalf("receiver applied %v", got)
	}
	rc.mu.Lock()
	bad := rc.bad
	rc.mu.Unlock()
	if bad != nil {
		t.Fatalf("malformed requests %v", bad)
	}
}

// A 3-line request refused (400) goes to the ledger whole, each entry
// naming the request; a replay with max=1 sends it whole as one POST, with
// the original Idempotency-Key and the same lines; replayed 3.
func TestDLQReplayWebhookRequestWhole(t *testing.T) {
	rc := newReceiver(t, 1)
	rc.set(func(r *receiver) { r.poison = "R" })
	e := newEnv(t, fmt.Sprintf(webhookConfigTmpl, rc.srv.URL, 3, 2, "deadLetter"))
	in := newInput(t, e.path("in.log"))
	in.appendLines(0)
	d := e.start()
	appendRaw(t, in.path, "R1\nR2\nR3\n")
	ledger := e.path("state/dlq/hook.jsonl")
	waitUntil(t, "three dead letters", 20*time.Second, func() bool { l, _ := ledgerEntries(t, ledger); return len(l) == 3 })
	d.waitSettled(20 * time.Second)
	rc.mu.Lock()
	orig := append([]string(nil), rc.seen...)
	rc.mu.Unlock()
	if len(orig) != 1 {
		t.Fatalf("requests %v, want one request of 3 lines", orig)
	}
	_, reqs := ledgerEntries(t, ledger)
	for _, r := range reqs {
		if r != orig[0]+"/3" {
			t.Fatalf("ledger entries name requests %v, want %s of 3 lines", reqs, orig[0])
		}
	}

	rc.set(func(r *receiver) { r.poison = "" })
	code, a, _ := d.replay("hook", "?max=1")
	if code != http.StatusOK || *a.Replayed != 3 || *a.Remaining != 0 {
		t.Fatalf("replay max=1: %d %+v, want 200 replayed 3 remaining 0 (the whole request)", code, a)
	}
	rc.mu.Lock()
	seen := append([]string(nil), rc.seen...)
	applied := rc.applied[orig[0]]
	bad := rc.bad
	rc.mu.Unlock()
	if len(seen) != 2 || seen[1] != orig[0] {
		t.Fatalf("requests %v, want the replay as one request under %s", seen, orig[0])
	}
	if fmt.Sprint(applied) != "[R1 R2 R3]" || bad != nil {
		t.Fatalf("replayed request applied %v (bad %v), want [R1 R2 R3]", applied, bad)
	}
	checkLedger(t, d, ledger)
}

// Into a pull subscriber, from one shell: the replay answers 202 with the
// count at once (no client is pulling); the entries stay in the ledger
// (deadLettered unchanged) until acknowledged; an ACK removes its entry, a
// NACK hands it out again, and a kill -9 before the ACK keeps it.
func TestDLQReplayPullAnswersAtOnce(t *testing.T) {
	e := newEnv(t, fmt.Sprintf(pullConfigTmpl,
		"    ackTimeoutMillis: 60000\n    onFailure: deadLetter\n    retry: {initialMillis: 10, maxMillis: 20, attempts: 2}\n"))
	in := newInput(t, e.path("in.log"))
	in.appendLines(0)
	d := e.start()
	appendRaw(t, in.path, "Q1\nQ2\nQ3\n")
	for range 2 { // two failed deliveries each: dead-lettered
		evs := d.pullN(3, 10*time.Second)
		ids := make([]string, len(evs))
		for i, ev := range evs {
			ids[i] = ev.DeliveryID
		}
		if code, body := d.call(http.MethodPost, "/v1/nack", map[string]any{"deliveryIds": ids}); code != http.StatusOK {
			t.Fatalf("nack: %d %s", code, body)
		}
	}
	ledger := e.path("state/dlq/consumer.jsonl")
	waitUntil(t, "three dead letters", 20*time.Second, func() bool { l, _ := ledgerEntries(t, ledger); return len(l) == 3 })
	d.waitSettled(20 * time.Second)
	checkLedger(t, d, ledger, "Q1", "Q2", "Q3")

	code, a, took := d.replay("consumer", "")
	if code != http.StatusAccepted || a.Queued == nil || *a.Queued != 3 || *a.Remaining != 3 || a.Replayed != nil {
		t.Fatalf("replay: %d %+v, want 202 queued 3 remaining 3", code, a)
	}
	if took > 5*time.Second {
		t.Fatalf("the replay took %v with no client pulling", took)
	}
	t.Logf("replay into the pull subscriber answered %d in %v", code, took)
	checkLedger(t, d, ledger, "Q1", "Q2", "Q3")
	evs := d.pullN(3, 10*time.Second)
	for i, ev := range evs {
		if ev.Line != fmt.Sprintf("Q%d", i+1) || ev.Sequence != 0 || ev.Attempt != 1 {
			t.Fatalf("replayed event %+v", ev)
		}
	}
	if unknown := d.ack(evs[1:2]); len(unknown) != 0 {
		t.Fatalf("unknown %v", unknown)
	}
	checkLedger(t, d, ledger, "Q1", "Q3")
	if code, body := d.call(http.MethodPost, "/v1/nack", map[string]string{"deliveryId": evs[0].DeliveryID}); code != http.StatusOK {
		t.Fatalf("nack: %d %s", code, body)
	}
	again := d.pullN(1, 10*time.Second)[0]
	if again.Line != "Q1" || again.Attempt != 2 {
		t.Fatalf("after the NACK %+v, want Q1 attempt 2", again)
	}
	d.ack([]event{again})
	checkLedger(t, d, ledger, "Q3")

	// Q3 is out, unacknowledged: a restart (kill -9) keeps it in the ledger.
	d.kill()
	d = e.start()
	checkLedger(t, d, ledger, "Q3")
	if more := d.pull(10, 300*time.Millisecond); len(more) != 0 {
		t.Fatalf("handed out %+v after the restart without a replay", more)
	}
	code, a, _ = d.replay("consumer", "")
	if code != http.StatusAccepted || *a.Queued != 1 || *a.Remaining != 1 {
		t.Fatalf("replay after the restart: %d %+v", code, a)
	}
	d.ack(d.pullN(1, 10*time.Second))
	checkLedger(t, d, ledger)
	if r := d.waitSettled(20 * time.Second); !r.Lossless {
		t.Fatal("not lossless with an empty ledger")
	}
}
