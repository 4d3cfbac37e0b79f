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
		out = append(out, rev9bPullOnce(t, d, sub)...)
	}
	return out
}

// rev9bPullOnce is one pull of up to 100 lines from sub (no token), waiting
// up to 200 ms.
func rev9bPullOnce(t *testing.T, d *daemon, sub string) []event {
	t.Helper()
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
	return r.Events
}

// rev9bPullN pulls from sub (no token) until at least n events came or
// within passed (it does not fail: the caller judges what came), then pulls
// for extra more, to show that nothing beyond them comes; it returns every
// event pulled.
func rev9bPullN(t *testing.T, d *daemon, sub string, n int, within, extra time.Duration) []event {
	t.Helper()
	var out []event
	for end := time.Now().Add(within); len(out) < n && time.Now().Before(end); {
		out = append(out, rev9bPullOnce(t, d, sub)...)
	}
	return append(out, rev9bPull(t, d, sub, extra)...)
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
	evs := rev9bPullN(t, d, "p", 4, 20*time.Second, 400*time.Millisecond)
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
	got := rev9bPullN(t, d, "p", 2, 20*time.Second, 400*time.Millisecond)
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

// TestRev9BFixedGlobAddedBackSwallowsRewrittenLines — DESIGN §12 Reload
// "adding the processor back re-reads nothing (its backlog stays held until
// released)", "A new processor subscribes from the next line its feed
// publishes"; §4 a rewritten file is re-read under a new epoch ("re-read,
// never skip"); §2 never a gap. A COMMITTED glob feed over one.log ("a b")
// and two.log ("x y"); a pull subscriber p holds all four (never pulled)
// and is removed by a reload (hold; removed.json keeps throughs per epoch,
// one.log's (E1, 4)). While it is removed, one.log is truncated and
// rewritten in place ("n1") and z is appended to two.log. The daemon is
// restarted with p added back, the hold released, then d and w are
// appended. Expected: p is given d and w, and n1 too unless n1 was
// published (written by arch) before the restart. Observed (most runs):
// n1 is first published after the restart — the stream's pointer is still
// at offset 0 of E1, so the rewritten file is read under E1 — and p's skip
// mark (E1, 4) finishes n1 (E1, 3) unseen: p is given d, w only, n1 is
// lost to it with the feed lossless true. Same root as
// TestRev9BFixedReloadSkipSwallowsRewrittenLines (which is single-file and
// pre-existing: it fails the same way at a0d5f40, before both diffs). Fails in about half the runs (when the
// first run published n1 before its stop, p rightly skips it).
func TestRev9BFixedGlobAddedBackSwallowsRewrittenLines(t *testing.T) {
	e := newEnv(t, rev9bGlobTmpl)
	os.MkdirAll(e.path("logs"), 0o755)
	os.WriteFile(e.path("logs/one.log"), []byte("a\nb\n"), 0o644)
	os.WriteFile(e.path("logs/two.log"), []byte("x\ny\n"), 0o644)
	d := e.start()
	d.waitFor("4 pending", 20*time.Second, func(r *report) bool { return r.Feeds[0].PendingAcks == 4 })
	without := strings.Replace(rev9bGlobTmpl, "  - {name: p, feed: app, type: pull}\n", "", 1)
	e.tmpl = without
	reconfig(t, e, d, without)
	if code, _, body := request(t, d, http.MethodPost, "/admin/reload", "", nil); code != 200 {
		t.Fatalf("reload: %d %s", code, body)
	}
	d.waitFor("held by removed p", 20*time.Second, func(r *report) bool {
		return r.Feeds[0].Stalled != nil && strings.Contains(*r.Feeds[0].Stalled, "removed subscriber p")
	})
	os.WriteFile(e.path("logs/one.log"), []byte("n1\n"), 0o644) // truncate + rewrite in place
	appendTo(t, e.path("logs/two.log"), "z\n")
	time.Sleep(800 * time.Millisecond)
	d.stop()
	before, _ := os.ReadFile(e.path("out.log"))
	want := "d,n1,w" // n1 first published after p is back
	if strings.Contains(string(before), "n1\n") {
		want = "d,w" // n1 was published while p was removed
	}
	e.tmpl = rev9bGlobTmpl
	d = e.start()
	time.Sleep(500 * time.Millisecond)
	code, _, relBody := request(t, d, http.MethodPost, "/admin/release/app/p", "", nil)
	if code != 200 {
		t.Fatalf("release: %d %s", code, relBody)
	}
	appendTo(t, e.path("logs/one.log"), "d\n")
	appendTo(t, e.path("logs/two.log"), "w\n")
	got := rev9bPullN(t, d, "p", strings.Count(want, ",")+1, 20*time.Second, 400*time.Millisecond)
	rev9bAck(t, d, got)
	lines := rev9bLines(got)
	sort.Strings(lines)
	if strings.Join(lines, ",") != want {
		b, _ := os.ReadFile(e.path("out.log"))
		t.Errorf("p added back (restart) after a copytruncate of one.log while removed was given %q, want %s; out.log %q. "+
			"DESIGN §12 \"adding the processor back re-reads nothing\"", rev9bLines(got), want, b)
	}
	d.stop()
}

// TestRev9BFixedReloadSkipSwallowsRewrittenLines — DESIGN §12 Reload "A feed
// whose settings changed is stopped …, then started again from its pointer
// … A changed processor keeps its queue and position: the new instance
// receives first the lines the old one did not finish"; §4 a file
// truncated/rewritten gets a new epoch ("re-read, never skip"); §2 never a
// gap. The reload diff's skip is by (epoch, position): "a re-read of an
// epoch without a mark, e.g. after a copytruncate, skips nothing".
// in.log holds "a b"; the file sink arch writes both; a pull subscriber p
// holds them (never pulled), so the pointer stays at offset 0 of epoch E.
// in.log is then truncated and rewritten in place with "n1" (the running
// instance sees the truncation; its epoch barrier waits for p). A reload
// that changes pollIntervalMillis restarts the feed from the pointer
// (E, offset 0): the new content is read under the same epoch E (offset 0:
// nothing to tell the files apart), and arch's skip mark (E, 4 — "b"'s end)
// covers n1 (E, 3). Then d is appended and p's client pulls and acks
// everything. Expected: out.log a, b, n1, d. Observed: out.log "a b d": n1
// was finished unseen by arch — lost, with the feed lossless true. Every
// run (3 of 3). Pre-existing: fails the same way at a0d5f40 (before both
// diffs: the single skip mark had the same blind spot).
func TestRev9BFixedReloadSkipSwallowsRewrittenLines(t *testing.T) {
	tmpl := `dataDir: ./state
status: {listen: "{{ADDR}}"}
shutdownTimeoutMillis: 300
feeds:
  - {name: app, path: ./in.log, pollIntervalMillis: 20}
processors:
  - {name: arch, feed: app, type: file, path: ./out.log}
  - {name: p, feed: app, type: pull}
`
	e := newEnv(t, tmpl)
	os.WriteFile(e.path("in.log"), []byte("a\nb\n"), 0o644)
	d := e.start()
	d.waitFor("arch wrote a, b; p holds them", 20*time.Second, func(r *report) bool {
		return r.Feeds[0].PendingAcks == 2 && r.Feeds[0].sub(t, "arch").Dispatched == 2
	})
	os.WriteFile(e.path("in.log"), []byte("n1\n"), 0o644) // truncated and rewritten in place
	time.Sleep(400 * time.Millisecond)
	reconfig(t, e, d, strings.Replace(tmpl, "pollIntervalMillis: 20", "pollIntervalMillis: 30", 1))
	if code, _, body := request(t, d, http.MethodPost, "/admin/reload", "", nil); code != 200 {
		t.Fatalf("reload: %d %s", code, body)
	}
	time.Sleep(300 * time.Millisecond)
	appendTo(t, e.path("in.log"), "d\n")
	got := rev9bPull(t, d, "p", 1500*time.Millisecond)
	rev9bAck(t, d, got)
	waitUntil(t, "d in out.log", 20*time.Second, func() bool {
		b, _ := os.ReadFile(e.path("out.log"))
		return strings.Contains(string(b), "d\n")
	})
	time.Sleep(500 * time.Millisecond)
	b, _ := os.ReadFile(e.path("out.log"))
	r, _ := statusRaw(t, d)
	if !strings.Contains(string(b), "n1\n") {
		t.Errorf("in.log rewritten in place (\"n1\") while p held the pointer at 0, then a reload: out.log %q (n1 missing); p was given %q; lossless %v, lostTails %d. "+
			"DESIGN §4 a rewritten file is re-read (\"re-read, never skip\"), §2 never a gap", b, rev9bLines(got), r.Lossless, r.Feeds[0].LostTails)
	}
	d.stop()
}

// TestRev9BFixedRestartWithHoldKeptSinkSkipsFinished — DESIGN §2: re-deliveries only
// "after any crash … exactly the lines acknowledged since the last commit"
// or a restored sink's catch-up; §12 the hold of a removed processor keeps
// holding the pointer across a restart. A pull subscriber p holds a and b
// and is removed by a reload; c is appended (the file sink arch writes it);
// the daemon is stopped cleanly (SIGTERM) and started again on the same
// config. The pointer is held at 0, so the restart re-reads a, b, c.
// Expected: arch writes nothing again (out.log a, b, c once), d then
// follows once. Observed: out.log "a b c a b c d": the restart re-reads
// from the held pointer and arch (not exactlyOnce) writes a, b, c again.
// Every run before the tenth session: a clean stop while a hold pins the
// pointer now records what each configured subscriber finished
// (removed.json "kept"), and the next start skips it.
func TestRev9BFixedRestartWithHoldKeptSinkSkipsFinished(t *testing.T) {
	e, d := aud4StartRemovedHold(t)
	appendTo(t, e.path("in.log"), "c\n")
	// Written: arch's dispatched count is made 4 by the reload's skipped
	// re-read of a and b before c is read.
	waitUntil(t, "c in out.log", 20*time.Second, func() bool {
		b, _ := os.ReadFile(e.path("out.log"))
		return strings.Contains(string(b), "c\n")
	})
	d.stop()
	d = e.start()
	appendTo(t, e.path("in.log"), "d\n")
	waitUntil(t, "d in out.log", 20*time.Second, func() bool {
		b, _ := os.ReadFile(e.path("out.log"))
		return strings.Contains(string(b), "d\n")
	})
	time.Sleep(300 * time.Millisecond)
	b, _ := os.ReadFile(e.path("out.log"))
	if string(b) != "a\nb\nc\nd\n" {
		t.Errorf("after a clean restart with a removed subscriber's hold, out.log is %q, want a b c d once each: DESIGN §2 re-deliveries only after a crash", b)
	}
	// A kill -9 then: what the last clean stop recorded (a, b, c) is still
	// skipped at the next start; d, finished after it, may come again.
	appendTo(t, e.path("in.log"), "e\n")
	waitUntil(t, "e in out.log", 20*time.Second, func() bool {
		b, _ := os.ReadFile(e.path("out.log"))
		return strings.HasSuffix(string(b), "e\n")
	})
	d.kill()
	d = e.start()
	appendTo(t, e.path("in.log"), "f\n")
	waitUntil(t, "f in out.log", 20*time.Second, func() bool {
		b, _ := os.ReadFile(e.path("out.log"))
		return strings.HasSuffix(string(b), "f\n")
	})
	time.Sleep(300 * time.Millisecond)
	b, _ = os.ReadFile(e.path("out.log"))
	n := map[string]int{}
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		n[l]++
	}
	if n["a"] != 1 || n["b"] != 1 || n["c"] != 1 || n["d"] < 1 || n["e"] < 1 || n["f"] != 1 {
		t.Errorf("after a kill -9 with the hold still pinning the pointer, out.log is %q: want a, b, c once (finished before the last clean stop), d and e at least once (finished after it: re-delivered after a crash), f once", b)
	}
	d.stop()
}
