package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"tailfeed/config"
)

// pullEvent is one event as a client decodes it (DESIGN §9 field names).
type pullEvent struct {
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

// pullClient is a remote subscriber over real HTTP.
type pullClient struct {
	tb   testing.TB
	base string // http://127.0.0.1:port
	sub  string
	auth string // Authorization header value
}

func newPullClient(e *env) *pullClient {
	return &pullClient{tb: e.t, base: e.base, sub: "consumer", auth: "Bearer s3cret"}
}

func (c *pullClient) do(method, path string, body any) (int, []byte) {
	c.tb.Helper()
	var b []byte
	if body != nil {
		b, _ = json.Marshal(body)
	}
	code, _, got := httpDo(c.tb, c.base, method, path, c.auth, b)
	return code, got
}

// pullOnce is one GET /v1/pull.
func (c *pullClient) pullOnce(max int, wait time.Duration) []pullEvent {
	c.tb.Helper()
	code, body := c.do(http.MethodGet, fmt.Sprintf("/v1/pull/%s?max=%d&wait=%s", c.sub, max, wait), nil)
	if code != http.StatusOK {
		c.tb.Fatalf("pull: %d %s", code, body)
	}
	var r struct {
		Events []pullEvent `json:"events"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil || r.Events == nil {
		c.tb.Fatalf("pull body %q: %v", body, err)
	}
	return r.Events
}

// pull long-polls (max per request) until n events came.
func (c *pullClient) pull(n, max int, within time.Duration) []pullEvent {
	c.tb.Helper()
	var evs []pullEvent
	deadline := time.Now().Add(within)
	for len(evs) < n {
		if time.Now().After(deadline) {
			c.tb.Fatalf("pulled %d events, want %d", len(evs), n)
		}
		evs = append(evs, c.pullOnce(min(max, n-len(evs)), time.Second)...)
	}
	return evs
}

// ackAll acknowledges evs in one batch ACK; every id must be known.
func (c *pullClient) ackAll(evs []pullEvent) {
	c.tb.Helper()
	ids := make([]string, len(evs))
	for i, ev := range evs {
		ids[i] = ev.DeliveryID
	}
	code, body := c.do(http.MethodPost, "/v1/ack", map[string]any{"deliveryIds": ids})
	want := fmt.Sprintf(`{"acked":%d,"unknown":[]}`, len(ids))
	if code != http.StatusOK || strings.TrimSpace(string(body)) != want {
		c.tb.Fatalf("batch ACK: %d %s, want %s", code, body, want)
	}
}

// settleOne ACKs or NACKs one delivery ("ack"/"nack") and returns the code.
func (c *pullClient) settleOne(verb, id string) (int, string) {
	code, body := c.do(http.MethodPost, "/v1/"+verb, map[string]string{"deliveryId": id})
	return code, strings.TrimSpace(string(body))
}

// Lines pulled and acknowledged over HTTP arrive once each, in order, with
// their positions; the feed settles with the pointer at the end.
func TestPullEveryLineOnceOverHTTP(t *testing.T) {
	e := start(t, pullConfig, Options{})
	c := newPullClient(e)
	lines := numbered("line", 0, 3000)
	e.appendLines(lines...)
	evs := make([]pullEvent, 0, len(lines))
	for len(evs) < len(lines) {
		got := c.pull(min(500, len(lines)-len(evs)), 500, 10*time.Second)
		c.ackAll(got)
		evs = append(evs, got...)
	}
	var pos int64
	for i, ev := range evs {
		pos += int64(len(lines[i])) + 1
		if ev.Line != lines[i] || ev.Position != pos || ev.Sequence != uint64(i+1) || ev.Attempt != 1 ||
			ev.Feed != "app" || ev.Path != e.input || len(ev.Epoch) != 16 || ev.LineBase64 != nil {
			t.Fatalf("event %d = %+v", i, ev)
		}
	}
	f := e.waitFor("settled", 10*time.Second, settled)
	if f.Pointer.Offset != e.inputSize() || f.Epoch != evs[0].Epoch {
		t.Fatalf("settled at pointer %+v, epoch %s; want offset %d, epoch %s", f.Pointer, f.Epoch, e.inputSize(), evs[0].Epoch)
	}
	if more := c.pullOnce(100, 0); len(more) != 0 {
		t.Fatalf("%d more events after everything was acknowledged", len(more))
	}
	code, body := c.settleOne("ack", evs[0].DeliveryID)
	if code != http.StatusNotFound || !strings.Contains(body, `"error"`) {
		t.Fatalf("second ACK: %d %s, want 404 with an error", code, body)
	}
}

// A single ACK answers {"status":"acked"}; a NACK makes the line ready at
// once with the next attempt (the contract's 100 ms); raw=1 adds lineBase64.
func TestPullAckNackOverHTTP(t *testing.T) {
	e := start(t, pullConfig, Options{})
	c := newPullClient(e)
	e.appendLines("first", "second\xff")
	evs := c.pull(2, 10, 10*time.Second)
	if code, body := c.settleOne("ack", evs[0].DeliveryID); code != 200 || body != `{"status":"acked"}` {
		t.Fatalf("ACK: %d %s", code, body)
	}
	if code, body := c.settleOne("nack", evs[1].DeliveryID); code != 200 || body != `{"status":"nacked"}` {
		t.Fatalf("NACK: %d %s", code, body)
	}
	code, body := c.do(http.MethodGet, "/v1/pull/consumer?max=10&raw=1", nil)
	var r struct{ Events []pullEvent }
	json.Unmarshal(body, &r)
	if code != 200 || len(r.Events) != 1 {
		t.Fatalf("pull right after the NACK: %d %s", code, body)
	}
	ev := r.Events[0]
	if ev.Attempt != 2 || ev.Line != "second\ufffd" || ev.LineBase64 == nil || *ev.LineBase64 != "c2Vjb25k/w==" {
		t.Fatalf("redelivery %+v", ev)
	}
	if code, _ := c.settleOne("ack", evs[1].DeliveryID); code != http.StatusNotFound {
		t.Fatalf("ACK of the NACKed delivery answered %d, want 404", code)
	}
	c.ackAll(r.Events)
	e.waitFor("settled", 10*time.Second, settled)
}

// A long poll returns as soon as a line comes.
func TestPullLongPollWakesOnNewLines(t *testing.T) {
	e := start(t, pullConfig, Options{})
	c := newPullClient(e)
	got := make(chan []pullEvent, 1)
	began := time.Now()
	go func() { got <- c.pullOnce(10, 20*time.Second) }()
	time.Sleep(50 * time.Millisecond)
	e.appendLines("late")
	evs := <-got
	if len(evs) != 1 || evs[0].Line != "late" {
		t.Fatalf("long poll returned %+v", evs)
	}
	if time.Since(began) > 15*time.Second {
		t.Fatal("the long poll waited out its wait instead of returning with the line")
	}
	c.ackAll(evs)
}

// BenchmarkPullThroughput pulls batches of 500 over HTTP and acknowledges
// each with one batch ACK (maxInFlight 5000); it reports lines/s.
func BenchmarkPullThroughput(b *testing.B) {
	const n = 50000
	dir := b.TempDir()
	text := strings.ReplaceAll(strings.Replace(pullConfig, "maxInFlight: 1000", "maxInFlight: 5000", 1), "%DIR%", dir)
	cfg, err := config.Parse([]byte(text), filepath.Join(dir, "tailfeed.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	in := cfg.Feeds[0].Path
	if err := os.WriteFile(in, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	d, err := New(cfg, hclog.NewNullLogger())
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d.Start(ctx)
	defer func() {
		cancel()
		d.Stop()
	}()
	c := &pullClient{tb: b, base: "http://" + d.Addr(), sub: "consumer", auth: "Bearer s3cret"}
	var data bytes.Buffer
	for i := range n {
		fmt.Fprintf(&data, "line-with-some-payload-%08d\n", i)
	}
	b.ResetTimer()
	began := time.Now()
	for range b.N {
		f, err := os.OpenFile(in, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			b.Fatal(err)
		}
		f.Write(data.Bytes())
		f.Close()
		for got := 0; got < n; {
			evs := c.pullOnce(500, time.Second)
			c.ackAll(evs)
			got += len(evs)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(n*b.N)/time.Since(began).Seconds(), "lines/s")
}
