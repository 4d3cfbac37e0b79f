package e2e

// Findings of the eighth session's fourth audit pass, area F (DESIGN §5
// drops and refusals, §6 purge, §7 losses ledger), fixed: a loss is in
// dataDir/losses.jsonl (written and fsynced) before the pointer commits
// past its lines and before a release or purge is answered, also after
// DELETE /admin/losses. Moved out of open_aud4_flow_test.go (tag
// openfindings), which keeps the probes that held (TestAud4FOK…) and shares
// the helpers below.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// aud4Tok is the status token of the configs below.
const aud4Tok = "a4-secret"

func aud4Call(t testing.TB, d *daemon, method, path string, body any) (int, []byte) {
	t.Helper()
	var b []byte
	if body != nil {
		b, _ = json.Marshal(body)
	}
	code, _, out := request(t, d, method, path, aud4Tok, b)
	return code, out
}

func aud4FCfg(feedExtra, procs string) string {
	return `dataDir: ./state
status:
  listen: {{ADDR}}
  token: ` + aud4Tok + `
shutdownTimeoutMillis: 500
feeds:
  - name: app
    path: ./in.log
` + feedExtra + `processors:
` + procs
}

func mustPtr(t *testing.T, path string) pointerRecord {
	rec, ok := showPointer(t, path)
	if !ok {
		t.Fatalf("no pointer file %s", path)
	}
	return rec
}

// aud4LossUndercount runs a lossy tap (policy) next to a discard sink, kills
// the daemon a few ms into a burst and compares the losses ledger with the
// lines the pointer passed; it returns a description of the first
// undercount seen, or "".
func aud4LossUndercount(t *testing.T, policy, counter string) string {
	for i := range 12 {
		e := newEnv(t, aud4FCfg(`    queueCapacity: 1
    commitSyncMillis: 1
    overload:
      subscribers: {tap: {policy: `+policy+`, spinBoundMillis: 1, blockDeadlineMillis: 1}}
`, `  - name: tap
    feed: app
    type: pull
    maxInFlight: 1
  - name: f
    feed: app
    type: discard
`))
		in := newInput(t, e.path("in.log"))
		in.appendLines(0)
		d := e.start()
		in.appendLines(100000)
		time.Sleep(time.Duration(5+i*9) * time.Millisecond)
		d.kill()
		rec := mustPtr(t, e.path("state/feeds/app.ptr"))
		passed := 0
		for j, end := range in.ends {
			if end <= rec.Offset {
				passed = j + 1
			}
		}
		d = e.start()
		c, body := aud4Call(t, d, "GET", "/admin/losses/app", nil)
		var ls struct {
			Entries []struct {
				Counter string `json:"counter"`
				Amount  int    `json:"amount"`
			} `json:"entries"`
		}
		if err := json.Unmarshal(body, &ls); c != 200 || err != nil {
			t.Fatalf("GET /admin/losses/app: %d %s", c, body)
		}
		amount := 0
		for _, en := range ls.Entries {
			if en.Counter == counter {
				amount += en.Amount
			}
		}
		d.kill()
		// The tap (queueCapacity 1, maxInFlight 1) takes a handful of lines;
		// every other line the pointer passed was lost to it.
		if passed > 1000 && amount < passed-100 {
			return fmt.Sprintf("try %d: the pointer passed %d lines (the tap can hold at most a few), killed -9; the next run's ledger counts %d %s lines", i, passed, amount, counter)
		}
	}
	return ""
}

// TestAud4FXKill9UndercountsDrops — DESIGN §7 "Losses outlive the run.
// Every counted loss is also appended (fsynced) to dataDir/losses.jsonl
// (feed, counter, amount, …)"; §5 DROP_AFTER_SPIN: drops are "counted"; the
// only uncounted kill -9 loss is "what its queue held". A best-effort tap
// with queueCapacity 1 and maxInFlight 1 drops nearly every line of a
// 100,000-line burst while a discard sink lets the pointer run past them;
// kill -9 a few ms into the burst. Expected: the ledger holds (nearly) every
// dropped line the pointer passed. Observed: the drops reach the ledger only
// in ~100 ms batches, so after the kill it counts e.g. 1,597 of 2,989 or 1 of
// 100,000
// (the lines are gone — the pointer passed them — but the recorded amount,
// which an operator acknowledges with DELETE /admin/losses, understates the
// loss by orders of magnitude). Fails in nearly every run.
func TestAud4FXKill9UndercountsDrops(t *testing.T) {
	if msg := aud4LossUndercount(t, "DROP_AFTER_SPIN", "dropped"); msg != "" {
		t.Fatalf("DESIGN §7 \"Every counted loss is also appended (fsynced) to dataDir/losses.jsonl\": %s", msg)
	}
}

// TestAud4FXKill9AfterLossesClearedForgetsDrops — DESIGN §7 "Losses outlive
// the run. Every counted loss is also appended (fsynced) to
// dataDir/losses.jsonl … A restart never turns a lossy feed green by
// itself"; §2 "Drops … are counted, and make the feed lossless: false". A
// best-effort DROP_AFTER_SPIN tap (queueCapacity 1, maxInFlight 1, never
// polled) next to a discard sink drops lines; the operator acknowledges them
// with DELETE /admin/losses/app; then a 100,000-line burst is dropped for the
// tap while the pointer runs past it, and the daemon is killed -9 a few ms
// later. The next run (tap now PAUSE, so it drops nothing more) must report
// the feed lossless false. Observed: after the DELETE no drop reaches the
// ledger at once (only in later batches), so the ledger is empty at the
// kill although the pointer passed thousands of dropped lines, and the next
// run reports lossless true. Most tries fail; the test makes up to 16 and
// fails on the first.
func TestAud4FXKill9AfterLossesClearedForgetsDrops(t *testing.T) {
	cfg := func(policy string) string {
		return aud4FCfg(`    queueCapacity: 1
    commitSyncMillis: 1
    overload:
      subscribers: {tap: {policy: `+policy+`, spinBoundMillis: 1}}
`, `  - name: tap
    feed: app
    type: pull
    maxInFlight: 1
  - name: f
    feed: app
    type: discard
`)
	}
	for i := range 16 {
		e := newEnv(t, cfg("DROP_AFTER_SPIN"))
		in := newInput(t, e.path("in.log"))
		in.appendLines(100)
		d := e.start()
		d.waitFor("drops", 10*time.Second, func(r *report) bool { return r.Settled && r.feed(t, "app").Dropped > 0 })
		if c, b := aud4Call(t, d, "DELETE", "/admin/losses/app", nil); c != 200 {
			t.Fatalf("DELETE /admin/losses/app: %d %s", c, b)
		}
		before := mustPtr(t, e.path("state/feeds/app.ptr"))
		in.appendLines(100000)
		time.Sleep(time.Duration(3+(i%8)*4) * time.Millisecond)
		d.kill()
		rec := mustPtr(t, e.path("state/feeds/app.ptr"))
		passed := 0
		for _, end := range in.ends[100:] {
			if end <= rec.Offset {
				passed++
			}
		}
		if rec.Offset <= before.Offset || passed < 100 {
			continue // killed before the burst was read: try again
		}
		e.tmpl = cfg("PAUSE")
		d = e.start()
		r, _ := statusRaw(t, d)
		f := r.feed(t, "app")
		c, body := aud4Call(t, d, "GET", "/admin/losses/app", nil)
		d.kill()
		if f.Lossless || r.Lossless {
			t.Fatalf("try %d: after DELETE /admin/losses the pointer passed %d lines the best-effort tap (it holds at most a few) never got — dropped and counted — then kill -9; the next run reports lossless %v/%v, dropped %d, GET /admin/losses/app %d %s; DESIGN §7: \"Every counted loss is also appended (fsynced) to dataDir/losses.jsonl … A restart never turns a lossy feed green by itself\"",
				i, passed, r.Lossless, f.Lossless, f.Dropped, c, body)
		}
	}
}

// TestAud4FXKill9AfterLossesClearedForgetsRefusals is the BLOCK_WITH_DEADLINE
// twin of TestAud4FXKill9AfterLossesClearedForgetsDrops — DESIGN §5 "refuses:
// the batch is not given to that queue (counted refused, per line) and does
// not hold the pointer for it"; §7 "Every counted loss is also appended
// (fsynced) to dataDir/losses.jsonl … A restart never turns a lossy feed
// green by itself". A pull tap (queueCapacity 1, maxInFlight 1,
// blockDeadlineMillis 1) with a client that acknowledges everything it gets
// refuses some lines; the operator clears the losses (DELETE
// /admin/losses/app); a burst follows and the daemon is killed -9. When the
// pointer passed lines the client never received (refused: a line handed out
// and not acknowledged holds the pointer), the next run (tap now PAUSE) must
// report lossless false. Observed: the ledger is empty and the next run
// reports lossless true. Each try hits the window only sometimes; the test
// makes up to 30 tries and fails on the first hit.
func TestAud4FXKill9AfterLossesClearedForgetsRefusals(t *testing.T) {
	cfg := func(policy string) string {
		return aud4FCfg(`    queueCapacity: 1
    commitSyncMillis: 1
    overload:
      subscribers: {tap: {policy: `+policy+`, blockDeadlineMillis: 1}}
`, `  - name: tap
    feed: app
    type: pull
    maxInFlight: 1
  - name: f
    feed: app
    type: discard
`)
	}
	hits := 0
	for i := range 30 {
		e := newEnv(t, cfg("BLOCK_WITH_DEADLINE"))
		in := newInput(t, e.path("in.log"))
		in.appendLines(100)
		d := e.start()
		p := startAud4Puller(t, d, "tap")
		// Should the client keep up with every line (none refused, the
		// feed settled), more lines follow until some are refused.
		warm := 100
		waitUntil(t, "refusals", 20*time.Second, func() bool {
			r, _ := statusRaw(t, d)
			if r.Settled && r.feed(t, "app").Refused == 0 {
				in.appendLines(100)
				warm += 100
				return false
			}
			return r.Settled
		})
		if c, b := aud4Call(t, d, "DELETE", "/admin/losses/app", nil); c != 200 {
			t.Fatalf("DELETE /admin/losses/app: %d %s", c, b)
		}
		in.appendLines(20000)
		time.Sleep(time.Duration(20+(i%10)*15) * time.Millisecond)
		d.kill()
		got := p.halt()
		rec := mustPtr(t, e.path("state/feeds/app.ptr"))
		recv := map[string]bool{}
		for _, ev := range got {
			recv[ev.Line] = true
		}
		missed := 0
		for j := warm; j < len(in.ends); j++ {
			if in.ends[j] <= rec.Offset && !recv[in.texts[j]] {
				missed++
			}
		}
		if missed == 0 {
			continue
		}
		hits++
		e.tmpl = cfg("PAUSE")
		d = e.start()
		r, _ := statusRaw(t, d)
		c, body := aud4Call(t, d, "GET", "/admin/losses/app", nil)
		d.kill()
		if r.Lossless {
			t.Fatalf("try %d: after DELETE /admin/losses the pointer passed %d lines the tap never received (refused), then kill -9; the next run reports lossless true, GET /admin/losses/app %d %s; DESIGN §7: \"Every counted loss is also appended (fsynced) to dataDir/losses.jsonl … A restart never turns a lossy feed green by itself\"", i, missed, c, body)
		}
	}
	t.Logf("%d tries passed refused lines; each was recorded", hits)
}

// TestAud4FXKill9AfterLossesClearedForgetsRelease — DESIGN §5 "POST
// /admin/release/{feed}/{subscriber} gives that backlog up on purpose:
// counted in released, lossless false"; §7 "Every counted loss is also
// appended (fsynced) to dataDir/losses.jsonl … A restart never turns a lossy
// feed green by itself". A webhook to a closed port holds line "a"; it is
// released; the operator acknowledges the loss with DELETE
// /admin/losses/app; line "b" is held and released the same way, the
// pointer moves past it, and the daemon is killed -9 20 ms after the release
// answered 200. Expected: the next run reports the feed lossless false (the
// webhook never got "b" and the pointer will not re-read it). Observed:
// after the DELETE the release reaches losses.jsonl only in a later batch
// (it is there when the kill comes 1 s later), so after this kill the ledger
// is empty and the next run reports lossless true. Fails every run.
func TestAud4FXKill9AfterLossesClearedForgetsRelease(t *testing.T) {
	dead := freeAddr(t)
	e := newEnv(t, aud4FCfg("", `  - name: f
    feed: app
    type: discard
  - name: hook
    feed: app
    type: webhook
    url: http://`+dead+`/x
    retry: {initialMillis: 50, maxMillis: 100, attempts: 2}
`))
	appendTo(t, e.path("in.log"), "a\n")
	d := e.start()
	d.waitFor("hook holds a", 20*time.Second, func(r *report) bool { return r.feed(t, "app").Stalled != nil })
	if c, b := aud4Call(t, d, "POST", "/admin/release/app/hook", nil); c != 200 {
		t.Fatalf("release: %d %s", c, b)
	}
	d.waitFor("lossy", 10*time.Second, func(r *report) bool { return !r.Lossless })
	if c, b := aud4Call(t, d, "DELETE", "/admin/losses/app", nil); c != 200 {
		t.Fatalf("DELETE /admin/losses/app: %d %s", c, b)
	}
	appendTo(t, e.path("in.log"), "b\n")
	d.waitFor("hook holds b, feed lossless", 20*time.Second, func(r *report) bool {
		return r.feed(t, "app").Stalled != nil && r.Lossless && r.feed(t, "app").Sequence == 2
	})
	if c, b := aud4Call(t, d, "POST", "/admin/release/app/hook", nil); c != 200 {
		t.Fatalf("release: %d %s", c, b)
	}
	waitUntil(t, "the pointer past b", 10*time.Second, func() bool { return mustPtr(t, e.path("state/feeds/app.ptr")).Offset == 4 })
	time.Sleep(20 * time.Millisecond)
	d.kill()
	ledger, _ := os.ReadFile(e.path("state/losses.jsonl"))
	d = e.start()
	r, _ := statusRaw(t, d)
	if r.Lossless || r.feed(t, "app").Lossless {
		t.Fatalf("line b was released (POST /admin/release answered 200) and the pointer passed it, then kill -9: the next run reports lossless true; losses.jsonl %q. DESIGN §5 \"counted in released, lossless false\", §7 \"Every counted loss is also appended (fsynced) … A restart never turns a lossy feed green by itself\"", ledger)
	}
}

// TestAud4FXKill9AfterLossesClearedForgetsPurge — DESIGN §6 "Purged entries
// count in released"; §7 "Every counted loss is also appended (fsynced) to
// dataDir/losses.jsonl … A restart never turns a lossy feed green by
// itself". A webhook answers 400 to a poison line (onFailure: deadLetter);
// its dead letter is purged (DELETE /admin/dlq/hook) and the loss
// acknowledged (DELETE /admin/losses/app); a second poison line is
// dead-lettered and purged, and the daemon is killed -9 20 ms after the purge
// answered 200. Expected: the next run reports lossless false (the line is
// neither delivered nor in a ledger). Observed: losses.jsonl is empty, the
// dead-letter ledger too, and the next run reports lossless true. Fails every
// run (same batching as the release case).
func TestAud4FXKill9AfterLossesClearedForgetsPurge(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if strings.Contains(string(b), "poison") {
			w.WriteHeader(http.StatusBadRequest)
		}
	}))
	defer srv.Close()
	e := newEnv(t, aud4FCfg("", `  - name: hook
    feed: app
    type: webhook
    url: `+srv.URL+`
    onFailure: deadLetter
    batchMaxLines: 1
    retry: {initialMillis: 50, maxMillis: 100, attempts: 2}
`))
	appendTo(t, e.path("in.log"), "poison 1\n")
	d := e.start()
	d.waitFor("first dead letter", 20*time.Second, func(r *report) bool { return r.feed(t, "app").DeadLettered == 1 })
	if c, b := aud4Call(t, d, "DELETE", "/admin/dlq/hook", nil); c != 200 {
		t.Fatalf("purge: %d %s", c, b)
	}
	d.waitFor("released 1", 10*time.Second, func(r *report) bool { return !r.Lossless && r.feed(t, "app").Released == 1 })
	if c, b := aud4Call(t, d, "DELETE", "/admin/losses/app", nil); c != 200 {
		t.Fatalf("DELETE /admin/losses/app: %d %s", c, b)
	}
	d.waitFor("lossless again", 10*time.Second, func(r *report) bool { return r.Lossless })
	appendTo(t, e.path("in.log"), "poison 2\n")
	d.waitFor("second dead letter", 20*time.Second, func(r *report) bool { return r.feed(t, "app").DeadLettered == 1 })
	if c, b := aud4Call(t, d, "DELETE", "/admin/dlq/hook", nil); c != 200 {
		t.Fatalf("purge: %d %s", c, b)
	}
	time.Sleep(20 * time.Millisecond)
	d.kill()
	ledger, _ := os.ReadFile(e.path("state/losses.jsonl"))
	d = e.start()
	r, _ := statusRaw(t, d)
	if r.Lossless || r.feed(t, "app").Lossless {
		t.Fatalf("the dead letter of \"poison 2\" was purged (counted in released), then kill -9: the next run reports lossless true (deadLettered %d); losses.jsonl %q. DESIGN §6 \"Purged entries count in released\", §7 \"Every counted loss is also appended (fsynced) … A restart never turns a lossy feed green by itself\"", r.feed(t, "app").DeadLettered, ledger)
	}
}

// aud4Puller pulls and acknowledges everything from d until stopped.
type aud4Puller struct {
	mu    sync.Mutex
	evs   []event
	acked []event
	stop  chan struct{}
	done  chan struct{}
}

func startAud4Puller(t *testing.T, d *daemon, sub string) *aud4Puller {
	p := &aud4Puller{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		cl := &http.Client{Timeout: 3 * time.Second}
		for {
			select {
			case <-p.stop:
				return
			default:
			}
			req, _ := http.NewRequest("GET", "http://"+d.addr+"/v1/pull/"+sub+"?max=500&wait=200ms", nil)
			req.Header.Set("Authorization", "Bearer "+aud4Tok)
			resp, err := cl.Do(req)
			if err != nil {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			var r struct {
				Events []event `json:"events"`
			}
			json.NewDecoder(resp.Body).Decode(&r)
			resp.Body.Close()
			if len(r.Events) == 0 {
				continue
			}
			p.mu.Lock()
			p.evs = append(p.evs, r.Events...)
			p.mu.Unlock()
			ids := make([]string, len(r.Events))
			for i, ev := range r.Events {
				ids[i] = ev.DeliveryID
			}
			b, _ := json.Marshal(map[string]any{"deliveryIds": ids})
			req, _ = http.NewRequest("POST", "http://"+d.addr+"/v1/ack", bytes.NewReader(b))
			req.Header.Set("Authorization", "Bearer "+aud4Tok)
			if resp, err := cl.Do(req); err == nil {
				var ar struct {
					Acked int `json:"acked"`
				}
				json.NewDecoder(resp.Body).Decode(&ar)
				resp.Body.Close()
				if resp.StatusCode == 200 && ar.Acked == len(ids) {
					p.mu.Lock()
					p.acked = append(p.acked, r.Events...)
					p.mu.Unlock()
				}
			}
		}
	}()
	return p
}
func (p *aud4Puller) halt() []event {
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.evs
}
