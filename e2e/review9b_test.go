package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rev9bPull pulls up to max lines from sub (no token) and returns the events.
func rev9bPull(t *testing.T, d *daemon, sub string, wait time.Duration) []event {
	t.Helper()
	var out []event
	for end := time.Now().Add(wait); time.Now().Before(end); {
		code, _, body := request(t, d, http.MethodGet, "/v1/pull/"+sub+"?max=100&wait=200ms", "", nil)
		if code != http.StatusOK {
			t.Fatalf("pull %s: %d %s", sub, code, body)
		}
		var r struct {
			Events []event `json:"events"`
		}
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatalf("pull %s: %v %s", sub, err, body)
		}
		out = append(out, r.Events...)
	}
	return out
}

// rev9bAck acknowledges evs (no token) and returns acked and unknown.
func rev9bAck(t *testing.T, d *daemon, evs []event) (int, []string) {
	t.Helper()
	ids := make([]string, len(evs))
	for i, ev := range evs {
		ids[i] = ev.DeliveryID
	}
	b, _ := json.Marshal(map[string]any{"deliveryIds": ids})
	code, _, body := request(t, d, http.MethodPost, "/v1/ack", "", b)
	var r struct {
		Acked   int      `json:"acked"`
		Unknown []string `json:"unknown"`
	}
	if err := json.Unmarshal(body, &r); code != http.StatusOK || err != nil {
		t.Fatalf("ack: %d %s", code, body)
	}
	return r.Acked, r.Unknown
}

func rev9bLines(evs []event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Line)
	}
	return out
}

func rev9bSorted(path string) string {
	b, _ := os.ReadFile(path)
	got := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	sort.Strings(got)
	return strings.Join(got, ",")
}

const rev9bGlobTmpl = `dataDir: ./state
status: {listen: "{{ADDR}}"}
shutdownTimeoutMillis: 300
feeds:
  - {name: app, path: "./logs/*.log", pollIntervalMillis: 20}
processors:
  - {name: arch, feed: app, type: file, path: ./out.log}
  - {name: p, feed: app, type: pull}
`

// TestRev9BOKGlobPullInFlightAcrossReload — DESIGN §12 Reload "A changed
// processor keeps its queue and position: the new instance receives first
// the lines the old one did not finish", §2 (no re-delivery but after a
// crash or a restored sink's catch-up). A COMMITTED glob feed over one.log
// ("a b") and two.log ("x y"); a pull subscriber p is handed all four lines
// and acknowledges b and y only (out of order: a and x stay in flight). A
// reload changing the feed's settings restarts the feed (per-stream
// re-read). Then p acknowledges a and x with the old delivery ids; c and z
// are appended. Expected: the old ids are known, p is given c and z only,
// out.log holds each line once, and the feed settles with nothing pending.
func TestRev9BOKGlobPullInFlightAcrossReload(t *testing.T) {
	e := newEnv(t, rev9bGlobTmpl)
	os.MkdirAll(e.path("logs"), 0o755)
	os.WriteFile(e.path("logs/one.log"), []byte("a\nb\n"), 0o644)
	os.WriteFile(e.path("logs/two.log"), []byte("x\ny\n"), 0o644)
	d := e.start()
	evs := rev9bPull(t, d, "p", 600*time.Millisecond)
	if len(evs) != 4 {
		t.Fatalf("pulled %q, want 4 lines", rev9bLines(evs))
	}
	var first, later []event
	for _, ev := range evs {
		if ev.Line == "b" || ev.Line == "y" {
			first = append(first, ev)
		} else {
			later = append(later, ev)
		}
	}
	if n, unk := rev9bAck(t, d, first); n != 2 {
		t.Fatalf("ack b, y: %d %v", n, unk)
	}
	reconfig(t, e, d, strings.Replace(rev9bGlobTmpl, "pollIntervalMillis: 20", "pollIntervalMillis: 30", 1))
	if code, _, body := request(t, d, http.MethodPost, "/admin/reload", "", nil); code != 200 {
		t.Fatalf("reload: %d %s", code, body)
	}
	n, unk := rev9bAck(t, d, later)
	appendTo(t, e.path("logs/one.log"), "c\n")
	appendTo(t, e.path("logs/two.log"), "z\n")
	got := rev9bPull(t, d, "p", 1500*time.Millisecond)
	rev9bAck(t, d, got)
	lines := rev9bLines(got)
	sort.Strings(lines)
	if n != 2 || strings.Join(lines, ",") != "c,z" {
		t.Errorf("after the reload: the ack of a, x (old ids) acked %d (unknown %v); p was then given %q, want c, z only. "+
			"DESIGN §12 \"the new instance receives first the lines the old one did not finish\"", n, unk, rev9bLines(got))
	}
	r := d.waitFor("settled", 10*time.Second, func(r *report) bool { return r.Settled })
	if out := rev9bSorted(e.path("out.log")); out != "a,b,c,x,y,z" {
		t.Errorf("out.log %q, want a,b,c,x,y,z once each", out)
	}
	if r.Feeds[0].PendingAcks != 0 {
		t.Errorf("pendingAcks %d", r.Feeds[0].PendingAcks)
	}
	d.stop()
}

// TestRev9BOKPullAckedDuringReloadsOnce — DESIGN §12 Reload "A changed
// processor keeps its queue and position: the new instance receives first
// the lines the old one did not finish"; §2 no re-delivery but after a
// crash. A pull client pulls and acknowledges continuously while lines are
// appended and the feed is restarted by six reloads (pollIntervalMillis
// toggled). Expected: no line whose acknowledgement was accepted (200,
// every id acked) is handed out again; every line reaches the client.
func TestRev9BOKPullAckedDuringReloadsOnce(t *testing.T) {
	procs := `  - {name: arch, feed: app, type: file, path: ./out.log}
  - {name: tap, feed: app, type: pull, maxInFlight: 50}
`
	cfg := func(ms int) string {
		return aud4FCfg("    pollIntervalMillis: "+strconv.Itoa(ms)+"\n", procs)
	}
	e := newEnv(t, cfg(20))
	in := newInput(t, e.path("in.log"))
	in.appendLines(0)
	d := e.start()
	p := startAud4Puller(t, d, "tap")
	for i := range 6 {
		in.appendLines(300)
		time.Sleep(time.Duration(30+i*20) * time.Millisecond)
		reconfig(t, e, d, cfg(20+(i%2)*10))
		if c, b := aud4Call(t, d, "POST", "/admin/reload", nil); c != 200 {
			t.Fatalf("reload %d: %d %s", i, c, b)
		}
	}
	in.appendLines(100)
	waitUntil(t, "every line pulled", 30*time.Second, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		seen := map[string]bool{}
		for _, ev := range p.acked {
			seen[ev.Line] = true
		}
		return len(seen) >= len(in.texts)
	})
	time.Sleep(500 * time.Millisecond)
	p.halt()
	p.mu.Lock()
	defer p.mu.Unlock()
	acked := map[string]int{} // line → index in evs of its acked delivery
	ackedIDs := map[string]bool{}
	for _, ev := range p.acked {
		ackedIDs[ev.DeliveryID] = true
	}
	var dups []string
	for i, ev := range p.evs {
		if j, ok := acked[ev.Line]; ok && j < i {
			dups = append(dups, ev.Line)
		}
		if ackedIDs[ev.DeliveryID] {
			if _, ok := acked[ev.Line]; !ok {
				acked[ev.Line] = i
			}
		}
	}
	if len(dups) > 0 {
		t.Errorf("%d lines were handed out again after their acknowledgement was accepted across reloads (e.g. %q); DESIGN §12 \"the new instance receives first the lines the old one did not finish\"",
			len(dups), dups[:min(5, len(dups))])
	}
}

// TestRev9BOKGlobReloadsUnderLoadOnce — DESIGN §12 Reload (the new instance
// receives first what the old one did not finish; a glob's streams each
// re-read from their own pointer, the skip per epoch), §2 (no re-delivery
// but after a crash), §10 per-file order. Three files of a glob get lines
// while a pull client pulls and acknowledges continuously and six reloads
// restart the feed. Expected: the file sink arch writes every line exactly
// once, in order per file; no line acknowledged by the client is handed out
// again.
func TestRev9BOKGlobReloadsUnderLoadOnce(t *testing.T) {
	tmpl := func(ms int) string {
		return `dataDir: ./state
status:
  listen: {{ADDR}}
  token: ` + aud4Tok + `
shutdownTimeoutMillis: 300
feeds:
  - {name: app, path: "./logs/*.log", pollIntervalMillis: ` + strconv.Itoa(ms) + `}
processors:
  - {name: arch, feed: app, type: file, path: ./out.log}
  - {name: tap, feed: app, type: pull, maxInFlight: 40}
`
	}
	e := newEnv(t, tmpl(20))
	tags := []string{"A", "B", "C"}
	for _, tg := range tags {
		writeFileLines(t, e.path("logs/"+strings.ToLower(tg)+".log"), tg, 0, 50)
	}
	d := e.start()
	p := startAud4Puller(t, d, "tap")
	n := 50
	for i := range 6 {
		for _, tg := range tags {
			writeFileLines(t, e.path("logs/"+strings.ToLower(tg)+".log"), tg, n, 100)
		}
		n += 100
		time.Sleep(time.Duration(40+i*25) * time.Millisecond)
		reconfig(t, e, d, tmpl(20+(i%2)*10))
		if c, b := aud4Call(t, d, "POST", "/admin/reload", nil); c != 200 {
			t.Fatalf("reload %d: %d %s", i, c, b)
		}
	}
	waitUntil(t, "arch wrote everything", 30*time.Second, func() bool {
		got := perTag(t, e.path("out.log"))
		return len(got["A"]) >= n && len(got["B"]) >= n && len(got["C"]) >= n
	})
	waitUntil(t, "the client acked everything", 30*time.Second, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		seen := map[string]bool{}
		for _, ev := range p.acked {
			seen[ev.Line] = true
		}
		return len(seen) >= 3*n
	})
	time.Sleep(500 * time.Millisecond)
	p.halt()
	got := perTag(t, e.path("out.log"))
	for _, tg := range tags {
		ok := len(got[tg]) == n
		for i := 0; ok && i < n; i++ {
			ok = got[tg][i] == i
		}
		if !ok {
			t.Errorf("arch wrote file %s as %d lines (want 0..%d once, in order): %v", tg, len(got[tg]), n-1, got[tg][:min(len(got[tg]), 40)])
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	ackedIDs := map[string]bool{}
	for _, ev := range p.acked {
		ackedIDs[ev.DeliveryID] = true
	}
	first := map[string]int{}
	var dups []string
	for i, ev := range p.evs {
		if j, ok := first[ev.Line]; ok && j < i {
			dups = append(dups, ev.Line)
		}
		if _, ok := first[ev.Line]; !ok && ackedIDs[ev.DeliveryID] {
			first[ev.Line] = i
		}
	}
	if len(dups) > 0 {
		t.Errorf("%d lines handed out to the pull client again after their acknowledgement was accepted (e.g. %q)", len(dups), dups[:min(5, len(dups))])
	}
}

// TestRev9BOKGlobReloadsWhileHeldOnce — as TestRev9BOKGlobReloadsUnderLoadOnce,
// but the pull client is away during the reloads (the streams' pointers stay
// at 0 and each reload re-reads every file; arch must skip per epoch what
// it wrote), and comes back after the last one. Expected: arch writes every
// line once, in order per file; the client is given every line once.
func TestRev9BOKGlobReloadsWhileHeldOnce(t *testing.T) {
	tmpl := func(ms int) string {
		return `dataDir: ./state
status:
  listen: {{ADDR}}
  token: ` + aud4Tok + `
shutdownTimeoutMillis: 300
feeds:
  - {name: app, path: "./logs/*.log", pollIntervalMillis: ` + strconv.Itoa(ms) + `}
processors:
  - {name: arch, feed: app, type: file, path: ./out.log}
  - {name: tap, feed: app, type: pull}
`
	}
	e := newEnv(t, tmpl(20))
	tags := []string{"A", "B", "C"}
	for _, tg := range tags {
		writeFileLines(t, e.path("logs/"+strings.ToLower(tg)+".log"), tg, 0, 20)
	}
	d := e.start()
	n := 20
	for i := range 5 {
		for j, tg := range tags {
			if (i+j)%2 == 0 {
				writeFileLines(t, e.path("logs/"+strings.ToLower(tg)+".log"), tg, n, 30)
			}
		}
		for j, tg := range tags {
			if (i+j)%2 == 1 {
				writeFileLines(t, e.path("logs/"+strings.ToLower(tg)+".log"), tg, n, 30)
			}
		}
		n += 30
		time.Sleep(time.Duration(40+i*25) * time.Millisecond)
		reconfig(t, e, d, tmpl(20+(i%2)*10))
		if c, b := aud4Call(t, d, "POST", "/admin/reload", nil); c != 200 {
			t.Fatalf("reload %d: %d %s", i, c, b)
		}
	}
	waitUntil(t, "arch wrote everything", 30*time.Second, func() bool {
		got := perTag(t, e.path("out.log"))
		return len(got["A"]) >= n && len(got["B"]) >= n && len(got["C"]) >= n
	})
	p := startAud4Puller(t, d, "tap")
	waitUntil(t, "the client acked everything", 30*time.Second, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.acked) >= 3*n
	})
	time.Sleep(500 * time.Millisecond)
	evs := p.halt()
	got := perTag(t, e.path("out.log"))
	for _, tg := range tags {
		ok := len(got[tg]) == n
		for i := 0; ok && i < n; i++ {
			ok = got[tg][i] == i
		}
		if !ok {
			t.Errorf("arch wrote file %s as %d lines (want 0..%d once, in order): %v", tg, len(got[tg]), n-1, got[tg][:min(len(got[tg]), 60)])
		}
	}
	seen := map[string]int{}
	for _, ev := range evs {
		seen[ev.Line]++
	}
	var dups []string
	for l, c := range seen {
		if c > 1 {
			dups = append(dups, l)
		}
	}
	if len(evs) != 3*n || len(dups) > 0 {
		t.Errorf("the client was given %d lines (%d distinct), want %d once each; repeated e.g. %q", len(evs), len(seen), 3*n, dups[:min(5, len(dups))])
	}
}

// TestRev9BOKKill9AfterHeldRelease — DESIGN §12 a removed processor's hold
// is given up by POST /admin/release (counted in released); §7 "Every
// counted loss is also appended (fsynced) … A restart never turns a lossy
// feed green by itself". A pull subscriber p holding a and b is removed by
// a reload; the hold is released (200) and the daemon is killed -9 at once.
// Expected: the next run reports lossless false, not stalled, and
// GET /admin/losses/app lists the release.
func TestRev9BOKKill9AfterHeldRelease(t *testing.T) {
	e, d := aud4StartRemovedHold(t)
	if code, _, body := request(t, d, http.MethodPost, "/admin/release/app/p", "", nil); code != 200 {
		t.Fatalf("release: %d %s", code, body)
	}
	d.kill()
	d = e.start()
	r, _ := statusRaw(t, d)
	code, _, body := request(t, d, http.MethodGet, "/admin/losses/app", "", nil)
	if r.Lossless || r.Feeds[0].Stalled != nil || !strings.Contains(string(body), "released") {
		t.Errorf("after a held release answered 200 and kill -9: lossless %v stalled %v, losses %d %s; want lossless false, not stalled, the release listed",
			r.Lossless, r.Feeds[0].Stalled, code, body)
	}
	d.stop()
}
