package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Remote subscribers over HTTP against the built binary (DESIGN §6 pull,
// §9 Pull API): every line once, redelivery after the ack timeout with the
// pointer held before the first unacknowledged line, and kill -9 with
// deliveries out.

const pullToken = "e2e-secret"

// pullConfigTmpl is one COMMITTED feed and one pull subscriber; %s takes
// the pull processor's extra keys.
const pullConfigTmpl = `dataDir: ./state
status:
  listen: {{ADDR}}
  token: ` + pullToken + `
shutdownTimeoutMillis: 500
feeds:
  - name: app
    path: ./in.log
    readStrategy: COMMITTED
processors:
  - name: consumer
    feed: app
    type: pull
%s`

// event is one pull event with every field of DESIGN §9, decoded from the
// contract's field names (lineBase64 only with raw=1).
type event struct {
	DeliveryID string  `json:"deliveryId"`
	Feed       string  `json:"feed"`
	Epoch      string  `json:"epoch"`
	Position   int64   `json:"position"`
	Sequence   uint64  `json:"sequence"`
	Attempt    int     `json:"attempt"`
	Path       string  `json:"path"`
	Line       string  `json:"line"`
	LineBase64 *string `json:"lineBase64"`
}

// call sends a request with the pull token and returns the code and body.
func (d *daemon) call(method, path string, body any) (int, []byte) {
	d.t.Helper()
	var b []byte
	if body != nil {
		b, _ = json.Marshal(body)
	}
	code, _, out := request(d.t, d, method, path, pullToken, b)
	return code, out
}

// pull is one GET /v1/pull/consumer.
func (d *daemon) pull(max int, wait time.Duration) []event {
	d.t.Helper()
	code, body := d.call(http.MethodGet, fmt.Sprintf("/v1/pull/consumer?max=%d&wait=%s", max, wait), nil)
	if code != http.StatusOK {
		d.t.Fatalf("pull: %d %s", code, body)
	}
	var r struct {
		Events []event `json:"events"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil || r.Events == nil {
		d.t.Fatalf("pull body %.300q: %v", body, err)
	}
	return r.Events
}

// pullN pulls until n events came.
func (d *daemon) pullN(n int, within time.Duration) []event {
	d.t.Helper()
	var evs []event
	deadline := time.Now().Add(within)
	for len(evs) < n {
		if time.Now().After(deadline) {
			d.t.Fatalf("pulled %d events, want %d", len(evs), n)
		}
		evs = append(evs, d.pull(min(500, n-len(evs)), time.Second)...)
	}
	return evs
}

// pullTimed pulls until n events came, and gives for each the times its
// request was sent and answered: the server handed it out between the two.
func (d *daemon) pullTimed(n int, within time.Duration) (evs []event, sent, answered []time.Time) {
	d.t.Helper()
	deadline := time.Now().Add(within)
	for len(evs) < n {
		if time.Now().After(deadline) {
			d.t.Fatalf("pulled %d events, want %d", len(evs), n)
		}
		t0 := time.Now()
		got := d.pull(min(500, n-len(evs)), time.Second)
		t1 := time.Now()
		for range got {
			sent = append(sent, t0)
			answered = append(answered, t1)
		}
		evs = append(evs, got...)
	}
	return evs, sent, answered
}

// ack acknowledges evs with one batch ACK and returns the ids it did not know.
func (d *daemon) ack(evs []event) []string {
	d.t.Helper()
	ids := make([]string, len(evs))
	for i, ev := range evs {
		ids[i] = ev.DeliveryID
	}
	code, body := d.call(http.MethodPost, "/v1/ack", map[string]any{"deliveryIds": ids})
	var r struct {
		Acked   int      `json:"acked"`
		Unknown []string `json:"unknown"`
	}
	if err := json.Unmarshal(body, &r); code != http.StatusOK || err != nil || r.Unknown == nil || r.Acked+len(r.Unknown) != len(ids) {
		d.t.Fatalf("batch ACK: %d %s", code, body)
	}
	return r.Unknown
}

// checkEvent checks that ev carries input line i.
func checkEvent(t *testing.T, in *input, ev event, i, attempt int) {
	t.Helper()
	if ev.Line != in.texts[i] || ev.Position != in.ends[i] || ev.Attempt != attempt || ev.Feed != "app" ||
		!strings.HasSuffix(ev.Path, "in.log") || len(ev.Epoch) != 16 {
		t.Fatalf("event %+v, want line %d (%q, position %d) attempt %d", ev, i, in.texts[i], in.ends[i], attempt)
	}
}

// 10,000 lines consumed by a client that acknowledges everything: every
// line exactly once, in order; the feed settles with the pointer at the end.
func TestPullEveryLineExactlyOnce(t *testing.T) {
	e := newEnv(t, fmt.Sprintf(pullConfigTmpl, "    maxInFlight: 2000\n"))
	in := newInput(t, e.path("in.log"))
	in.appendLines(0)
	d := e.start()
	for range 10 {
		in.appendLines(1000)
	}
	var got []event
	for len(got) < 10000 {
		evs := d.pull(500, time.Second)
		if unknown := d.ack(evs); len(unknown) > 0 {
			t.Fatalf("ACK: unknown %v", unknown)
		}
		got = append(got, evs...)
		if len(evs) == 0 && d.exited() {
			t.Fatal("daemon exited")
		}
	}
	seen := map[string]bool{}
	for i, ev := range got {
		checkEvent(t, in, ev, i, 1)
		if ev.Sequence != uint64(i+1) || seen[ev.DeliveryID] {
			t.Fatalf("event %d: sequence %d, id %q (seen %v)", i, ev.Sequence, ev.DeliveryID, seen[ev.DeliveryID])
		}
		seen[ev.DeliveryID] = true
	}
	r := d.waitSettled(20 * time.Second)
	if f := r.Feeds[0]; f.Pointer == nil || f.Pointer.Offset != in.size() || !f.Lossless || f.Acknowledged != 10000 {
		t.Fatalf("settled: %+v pointer %+v, want the pointer at %d", f, f.Pointer, in.size())
	}
	if more := d.pull(100, 200*time.Millisecond); len(more) != 0 {
		t.Fatalf("%d events after every line was acknowledged", len(more))
	}
	d.stop()
	if rec, _ := showPointer(t, e.path("state/feeds/app.ptr")); rec.Offset != in.size() {
		t.Fatalf("pointer file at %d after stop, want %d", rec.Offset, in.size())
	}
}

// A client that acknowledges every other line: the others come back with
// attempt 2 after the ack timeout; while they are out the pointer never
// passes the first unacknowledged line (sampled from feed.status).
func TestPullUnackedLinesComeBack(t *testing.T) {
	const timeout = 2 * time.Second // above the time to pull 1,000 lines on a loaded CI
	e := newEnv(t, fmt.Sprintf(pullConfigTmpl, fmt.Sprintf(
		"    ackTimeoutMillis: %d\n    maxInFlight: 2000\n    retry: {initialMillis: 100, maxMillis: 200, attempts: 5}\n",
		timeout.Milliseconds())))
	in := newInput(t, e.path("in.log"))
	in.appendLines(0)
	d := e.start()
	in.appendLines(1000)
	var maxPtr atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the sampler
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			if r, err := d.status(); err == nil && r.Feeds[0].Pointer != nil {
				if off := r.Feeds[0].Pointer.Offset; off > maxPtr.Load() {
					maxPtr.Store(off)
				}
			}
		}
	}()
	// Each line's first delivery is handed out after the request that
	// returned it was sent, and its redelivery before the request that
	// returns it answers: that span bounds the server's wait from above,
	// so a span under the timeout is an early redelivery whatever the load.
	first, sent, _ := d.pullTimed(1000, 20*time.Second)
	var even, odd []event
	for i, ev := range first {
		checkEvent(t, in, ev, i, 1)
		if i%2 == 0 {
			even = append(even, ev)
		} else {
			odd = append(odd, ev)
		}
	}
	d.ack(even)
	// The odd lines come back, after the timeout, with attempt 2.
	again, _, answered := d.pullTimed(500, 20*time.Second)
	// Redeliveries come in no set order (each waits its own jittered step).
	back := map[int]bool{}
	for k, ev := range again {
		i, ok := in.lookup(ev.Line)
		if !ok || i%2 == 0 || back[i] {
			t.Fatalf("redelivery %+v: not an unacknowledged line, or twice", ev)
		}
		if waited := answered[k].Sub(sent[i]); waited < timeout {
			t.Fatalf("line %d redelivered at most %v after its first delivery, before the %v ack timeout", i, waited, timeout)
		}
		back[i] = true
		checkEvent(t, in, ev, i, 2)
		if ev.DeliveryID == odd[i/2].DeliveryID {
			t.Fatalf("redelivery of line %d reuses its first deliveryId", i)
		}
	}
	time.Sleep(50 * time.Millisecond)
	close(stop)
	wg.Wait()
	if got, limit := maxPtr.Load(), in.start(1); got > limit {
		t.Fatalf("the pointer reached %d while line 1 (from %d) was unacknowledged", got, limit)
	}
	if r, _ := d.status(); r.Feeds[0].Settled {
		t.Fatal("settled with lines unacknowledged")
	}
	// The first deliveries of the odd lines are dead; the new ones count.
	if unknown := d.ack(odd[:1]); len(unknown) != 1 {
		t.Fatalf("ACK of a superseded delivery was accepted")
	}
	d.ack(again)
	r := d.waitSettled(20 * time.Second)
	if f := r.Feeds[0]; f.Pointer.Offset != in.size() || !f.Lossless {
		t.Fatalf("after the ACKs: %+v pointer %+v", f, f.Pointer)
	}
}

// kill -9 while a client holds unacknowledged deliveries: after the
// restart those lines come again (attempt 1: attempts are per run), the
// acknowledged lines before the pointer do not, and an id of the old run
// is a 404.
func TestPullKill9WithDeliveriesOut(t *testing.T) {
	e := newEnv(t, fmt.Sprintf(pullConfigTmpl, "    maxInFlight: 2000\n"))
	in := newInput(t, e.path("in.log"))
	in.appendLines(0)
	d := e.start()
	in.appendLines(1000)
	evs := d.pullN(1000, 20*time.Second)
	d.ack(evs[:400])
	ptr := e.path("state/feeds/app.ptr")
	waitUntil(t, "the pointer at line 400", 20*time.Second, func() bool {
		rec, ok := showPointer(t, ptr)
		return ok && rec.Offset == in.ends[399]
	})
	d.kill()

	d = e.start()
	again := d.pullN(600, 20*time.Second)
	for k, ev := range again {
		checkEvent(t, in, ev, 400+k, 1)
	}
	if more := d.pull(100, 300*time.Millisecond); len(more) != 0 {
		t.Fatalf("%d more events: lines before the pointer came again", len(more))
	}
	for _, old := range []event{evs[0], evs[500]} {
		code, body := d.call(http.MethodPost, "/v1/ack", map[string]string{"deliveryId": old.DeliveryID})
		if code != http.StatusNotFound || !strings.Contains(string(body), `"error"`) {
			t.Fatalf("ACK of an id from the killed run: %d %s, want 404", code, body)
		}
	}
	if unknown := d.ack(again); len(unknown) != 0 {
		t.Fatalf("unknown %v", unknown)
	}
	r := d.waitSettled(20 * time.Second)
	if f := r.Feeds[0]; f.Pointer.Offset != in.size() {
		t.Fatalf("pointer %+v, want %d", f.Pointer, in.size())
	}
}
