package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
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

// BenchmarkPullThroughput measures the pull API over real HTTP on
// 127.0.0.1 (issue 14): a client pulls batches of max lines and
// acknowledges each with one batch ACK, one request after the other, while
// the daemon tails the file; it reports lines/s and allocations per line
// (the whole process: daemon and client).
//
//   - max=10000: the setting (target ≥ 1 M lines/s), maxInFlight
//     20000, so the subscriber takes the next batch in while the client
//     handles one.
//   - max=500: the setting before issue 14 (maxInFlight 5000).
//   - pipelined-max=10000: the client acknowledges each batch on a second
//     connection while it pulls the next (maxInFlight 30000).
//   - json-client-max=10000: max=10000 with a client that decodes every event with
//     encoding/json (as the tests do): what such a client costs.
//
// The lean client reads the ids out of the body without decoding it
// (checking every sequence number on the way) and sends its ACK body from
// a reused buffer: the daemon's ceiling, not a JSON library's.
func BenchmarkPullThroughput(b *testing.B) {
	b.Run("max=500", func(b *testing.B) { benchPull(b, 500, 5000, leanSequential) })
	b.Run("max=10000", func(b *testing.B) { benchPull(b, 10000, 20000, leanSequential) })
	b.Run("pipelined-max=10000", func(b *testing.B) { benchPull(b, 10000, 30000, leanPipelined) })
	b.Run("json-client-max=10000", func(b *testing.B) { benchPull(b, 10000, 20000, jsonSequential) })
}

type benchClient int

const (
	leanSequential benchClient = iota
	leanPipelined
	jsonSequential
)

func benchPull(b *testing.B, max, maxInFlight int, client benchClient) {
	const n = 100000
	dir := b.TempDir()
	text := strings.ReplaceAll(strings.Replace(pullConfig, "maxInFlight: 1000", fmt.Sprintf("maxInFlight: %d", maxInFlight), 1), "%DIR%", dir)
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
	lc := newLeanClient(b, c, max)
	var data bytes.Buffer
	for i := range n {
		fmt.Fprintf(&data, "line-with-some-payload-%08d\n", i)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu0 := processCPU(b)
	b.ResetTimer()
	began := time.Now()
	for range b.N {
		f, err := os.OpenFile(in, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			b.Fatal(err)
		}
		f.Write(data.Bytes())
		f.Close()
		switch client {
		case leanPipelined:
			lc.pipelined(n)
		case leanSequential:
			for got := 0; got < n; {
				got += lc.pullAndAck()
			}
		case jsonSequential:
			for got := 0; got < n; {
				evs := c.pullOnce(max, time.Second)
				c.ackAll(evs)
				got += len(evs)
			}
		}
	}
	b.StopTimer()
	elapsed := time.Since(began)
	cpu := processCPU(b) - cpu0
	runtime.ReadMemStats(&after)
	lines := float64(n * b.N)
	b.ReportMetric(lines/elapsed.Seconds(), "lines/s")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/lines, "allocs/line")
	// CPU time of the process (daemon and client) per line: on a shared
	// machine steadier than lines/s.
	b.ReportMetric(float64(cpu.Nanoseconds())/lines, "cpu-ns/line")
}

// processCPU is the user and system CPU time the process used so far.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// leanClient pulls and batch-ACKs over HTTP like a client built for
// throughput: reused buffers, the ids sliced out of the body.
type leanClient struct {
	tb      testing.TB
	hc      *http.Client
	pullURL string
	ackURL  string
	auth    string
	body    []byte    // the last pull's response
	acks    [2]ackBuf // the ACK being built and the one in flight
	nextSeq uint64    // the sequence the next event must have
}

// ackBuf is one batch ACK: its body, its count, its answer.
type ackBuf struct {
	body, resp, want []byte
	n                int
}

var (
	leanIDKey  = []byte(`{"deliveryId":"`)
	leanSeqKey = []byte(`,"sequence":`)
)

func newLeanClient(tb testing.TB, c *pullClient, max int) *leanClient {
	return &leanClient{
		tb: tb, hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}},
		pullURL: fmt.Sprintf("%s/v1/pull/%s?max=%d&wait=1s", c.base, c.sub, max), ackURL: c.base + "/v1/ack",
		auth: c.auth, nextSeq: 1,
	}
}

// do sends req and reads the answer into *buf (200 or an error).
func (c *leanClient) do(req *http.Request, buf *[]byte) error {
	req.Header.Set("Authorization", c.auth)
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b := (*buf)[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		k, err := resp.Body.Read(b[len(b):cap(b)])
		b = b[:len(b)+k]
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	*buf = b
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %d %s", req.Method, req.URL, resp.StatusCode, b)
	}
	return nil
}

// pull pulls once, checks the sequence numbers and builds the batch ACK of
// every event into a; it returns how many came.
func (c *leanClient) pull(a *ackBuf) int {
	req, _ := http.NewRequest(http.MethodGet, c.pullURL, nil)
	if err := c.do(req, &c.body); err != nil {
		c.tb.Fatal(err)
	}
	body := c.body
	a.body = append(a.body[:0], `{"deliveryIds":[`...)
	k := 0
	for i := 0; ; k++ {
		j := bytes.Index(body[i:], leanIDKey)
		if j < 0 {
			break
		}
		i += j + len(leanIDKey)
		end := i + bytes.IndexByte(body[i:], '"')
		if k > 0 {
			a.body = append(a.body, ',')
		}
		a.body = append(a.body, '"')
		a.body = append(a.body, body[i:end]...)
		a.body = append(a.body, '"')
		s := end + bytes.Index(body[end:], leanSeqKey) + len(leanSeqKey)
		var seq uint64
		for ; body[s] >= '0' && body[s] <= '9'; s++ {
			seq = seq*10 + uint64(body[s]-'0')
		}
		if seq != c.nextSeq {
			c.tb.Fatalf("event %d has sequence %d, want %d", k, seq, c.nextSeq)
		}
		c.nextSeq++
		i = s
	}
	a.body = append(a.body, "]}"...)
	a.n = k
	return k
}

// ack sends a's batch ACK and checks that every id was acknowledged.
func (c *leanClient) ack(a *ackBuf) error {
	req, _ := http.NewRequest(http.MethodPost, c.ackURL, bytes.NewReader(a.body))
	if err := c.do(req, &a.resp); err != nil {
		return err
	}
	a.want = fmt.Appendf(a.want[:0], "{\"acked\":%d,\"unknown\":[]}\n", a.n)
	if !bytes.Equal(a.resp, a.want) {
		return fmt.Errorf("batch ACK answered %s, want %s", a.resp, a.want)
	}
	return nil
}

// pullAndAck pulls once and acknowledges what came; it returns how many.
func (c *leanClient) pullAndAck() int {
	a := &c.acks[0]
	k := c.pull(a)
	if k > 0 {
		if err := c.ack(a); err != nil {
			c.tb.Fatal(err)
		}
	}
	return k
}

// pipelined drains n lines acknowledging each batch on another
// connection while it pulls the next one (at most one ACK in flight).
func (c *leanClient) pipelined(n int) {
	done := make(chan error, 1)
	inFlight := false
	for got, cur := 0, 0; got < n; {
		a := &c.acks[cur]
		k := c.pull(a)
		if inFlight {
			if err := <-done; err != nil {
				c.tb.Fatal(err)
			}
			inFlight = false
		}
		if k == 0 {
			continue
		}
		got += k
		go func() { done <- c.ack(a) }()
		inFlight = true
		cur ^= 1
	}
	if inFlight {
		if err := <-done; err != nil {
			c.tb.Fatal(err)
		}
	}
}
