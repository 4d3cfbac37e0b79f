package daemon

// Review 26b of the change "a stop during a reload's build is bounded (the
// build is given up), a processor added by a reload counts only its own
// lines, status.tls can be turned on or off at a reload". Each
// TestRev26BR… test failed on the reviewed commit for the reason its
// comment gives; TestRev26BOK… are probes that held. (Its finding C — a
// processor added by a reload counts in position the lines re-read for a
// slower subscriber, which it skips — stays as it is: they are given to its
// queue; README, feed.status "subscribers".)

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/config"
	"tailfeed/internal/tlsconfig/tlstest"
	"tailfeed/processor"
	"tailfeed/status"
)

// TestRev26BRBAbandonedBuildRacesStop — (b) data race.
//
// Scenario: a reload adds a processor whose build takes 2 s (an engine
// that answers late: a sleep, no synchronisation with anything); while it
// builds, the daemon stops (run context cancelled, then Stop, as `run`
// does on SIGTERM). The reload gives the build up and ends "overtaken";
// the test then waits for the abandoned build to return.
//
// DESIGN §12 Signals: "SIGTERM/SIGINT stop as in §5, within
// shutdownTimeoutMillis plus 2 s" — the stop must be bounded, and the
// change's own claim is that the abandoned build only closes what it made.
//
// Expected: no data race (go test -race clean). Observed (3 of 3 runs):
// "WARNING: DATA RACE": overtaken's `d.cfg = old` (reload.go:378, under
// d.mu, on the reload's goroutine) against Stop's unlocked read of
// d.cfg.Built.ShutdownTimeout (daemon.go:583), which Stop makes before it
// takes reloadMu — overtaken is a new writer of d.cfg that runs exactly
// while a stop is beginning. The same write is also unsynchronised with the
// abandoned build goroutine's reads of d.cfg once the late sink build
// returns (buildFeed: d.ownOutputs, stdoutFiles(d.cfg), d.cfg.DataDir,
// daemon.go:336-356; not reported here, the detector's history having
// moved on): the abandoned build keeps using daemon fields (d.cfg,
// d.skips, d.prev, d.resume(s)) after the reload returned and while Stop
// runs, and builds the rest of the new config's feed from d.cfg = old.
func TestRev26BRBAbandonedBuildRacesStop(t *testing.T) {
	started := make(chan struct{}, 1)
	slow := func(*config.Processor, *processor.Group) (any, error) {
		select {
		case started <- struct{}{}:
		default:
		}
		time.Sleep(2 * time.Second) // an engine answering late
		return &recorder{}, nil
	}
	e := start(t, reloadBase, Options{Processors: map[string]Build{"slow": slow}})
	e.appendLines(numbered("a", 0, 5)...)
	e.waitFor("settled", 10*time.Second, settled)
	e.rewrite(reloadBase + "  - {name: slow, feed: app, type: discard}\n")
	reloaded := make(chan error, 1)
	go func() { reloaded <- e.d.Reload(context.Background()) }()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the reload never built the slow processor")
	}
	time.Sleep(100 * time.Millisecond)
	e.cancel()
	t0 := time.Now()
	e.Stop()
	if took := time.Since(t0); took > 300*time.Millisecond+2*time.Second {
		t.Errorf("Stop during the reload's build took %v, want within shutdownTimeoutMillis + 2 s", took)
	}
	if err := <-reloaded; err == nil || !strings.Contains(err.Error(), "stopped during the reload") {
		t.Errorf("reload overtaken by the stop returned %v", err)
	}
	// The abandoned build returns and goes on building (and closes it).
	time.Sleep(2500 * time.Millisecond)
}

// readLinesIf is readLines without failing on a missing file.
func readLinesIf(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// TestRev26BOKTLSOnWithClientCAThenStop — (d) probe: status.tls with
// clientCAFile turned on at a reload (same listen) is enforced (a client
// without a certificate: 401 on /feed.status, /livez answers), plain HTTP
// is no more served, and after Stop the port is free (no listener leaked
// by the dup).
func TestRev26BOKTLSOnWithClientCAThenStop(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "srv")
	crt, key := ca.Issue(t, "127.0.0.1")
	tlstest.Write(t, dir, "s.crt", crt)
	tlstest.Write(t, dir, "s.key", key)
	cca := tlstest.NewCA(t, "clients")
	tlstest.Write(t, dir, "cca.pem", cca.PEM)
	e := startIn(t, dir, reloadBase, Options{})
	addr := e.d.Addr()
	e.rewrite(strings.Replace(reloadBase, "token: sesame}",
		"token: sesame, tls: {certFile: %DIR%/s.crt, keyFile: %DIR%/s.key, clientCAFile: %DIR%/cca.pem}}", 1))
	if code, body := e.reload(); code != http.StatusOK {
		t.Fatalf("reload turning status.tls on: %d %s", code, body)
	}
	if e.d.Addr() != addr {
		t.Fatalf("address changed: %s -> %s", addr, e.d.Addr())
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots}, DisableKeepAlives: true}}
	var resp *http.Response
	var err error
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if resp, err = c.Get("https://" + addr + "/livez"); err == nil || time.Now().After(end) {
			break
		}
	}
	if err != nil {
		t.Fatalf("HTTPS /livez after turning tls on: %v", err)
	}
	resp.Body.Close()
	req, _ := http.NewRequest(http.MethodGet, "https://"+addr+"/feed.status", nil)
	req.Header.Set("Authorization", "Bearer sesame")
	if resp, err = c.Do(req); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("clientCAFile turned on at a reload: /feed.status without a client certificate answered 200")
		}
	}
	plain := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	if resp, err = plain.Get("http://" + addr + "/livez"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("plain HTTP still served after turning tls on")
		}
	}
	e.Stop()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("after Stop, %s is still bound: %v", addr, err)
	}
	ln.Close()
}

// TestRev26BOKNextStartAfterOvertakenReload — (a) probe: archive finished
// a0..a4, lag (pointer-holding) finished nothing; a reload adding a slow
// processor is overtaken by the stop during its build (overtaken(false)),
// or (rollback) the new config's build fails and the rollback's build of
// lag is slow (overtaken(true)). The next start (after the abandoned build
// returned) must give archive nothing twice (DESIGN §2: re-delivery only
// after a crash) and lag everything it did not finish. Held (without
// -race; under -race the stop also hits TestRev26BRBAbandonedBuildRacesStop's
// race).
func TestRev26BOKNextStartAfterOvertakenReload(t *testing.T) {
	for _, rollback := range []bool{false, true} {
		t.Run(map[bool]string{false: "overtaken", true: "rollback"}[rollback], func(t *testing.T) {
			dir := t.TempDir()
			base := reloadBase + "  - {name: lag, feed: app, type: discard}\n"
			var calls atomic.Int64
			started := make(chan struct{}, 1)
			lagB := newBlocker()
			lag := func(pc *config.Processor, g *processor.Group) (any, error) {
				if calls.Add(1) == 3 && rollback { // the rollback's build (1: start, 2: the new config's)
					started <- struct{}{}
					time.Sleep(1500 * time.Millisecond)
				}
				return lagB, nil
			}
			slow := func(*config.Processor, *processor.Group) (any, error) {
				if rollback {
					return nil, errors.New("slow cannot build")
				}
				started <- struct{}{}
				time.Sleep(1500 * time.Millisecond)
				return &recorder{}, nil
			}
			e := startIn(t, dir, base, Options{Processors: map[string]Build{"lag": lag, "slow": slow}})
			e.appendLines(numbered("a", 0, 5)...)
			e.waitFor("archive finished a0..a4", 10*time.Second, func(f status.FeedReport) bool {
				return f.Sequence == 5 && sub(t, f, "archive").Dispatched == 5
			})
			e.rewrite(base + "  - {name: slow, feed: app, type: discard}\n")
			reloaded := make(chan error, 1)
			go func() { reloaded <- e.d.Reload(context.Background()) }()
			select {
			case <-started:
			case <-time.After(10 * time.Second):
				t.Fatal("the slow build never began")
			}
			e.cancel()
			t0 := time.Now()
			e.Stop()
			// DESIGN §12: shutdownTimeoutMillis (300 ms) + 2 s, and 3 s of
			// slack for a loaded machine. What this test guards is the next
			// start below; here, a stop held by the overtaken reload (or its
			// abandoned build) beyond any bound still shows.
			if took := time.Since(t0); took > 300*time.Millisecond+2*time.Second+3*time.Second {
				t.Errorf("stop took %v, want within shutdownTimeoutMillis (300 ms) + 2 s (3 s of slack for a loaded machine)", took)
			}
			t.Logf("reload: %v", <-reloaded)
			close(lagB.open)
			time.Sleep(2 * time.Second) // the abandoned build returned and closed what it built
			rec := &recorder{}
			cfg := base + "  - {name: slow, feed: app, type: discard}\n"
			if rollback {
				cfg = base
			}
			e2 := startIn(t, dir, cfg, Options{Processors: map[string]Build{"lag": rec.build, "slow": (&recorder{}).build}})
			e2.appendLines("b0")
			e2.waitFor("settled", 10*time.Second, func(f status.FeedReport) bool { return f.Settled && sub(t, f, "archive").Position >= 1 })
			if got := strings.Join(readLines(t, filepath.Join(dir, "out.log")), ","); got != strings.Join(append(numbered("a", 0, 5), "b0"), ",") {
				t.Errorf("archive out.log after the next start: %s", got)
			}
			if got := strings.Join(rec.got(), ","); got != strings.Join(append(numbered("a", 0, 5), "b0"), ",") {
				t.Errorf("lag after the next start got %s; want a0..a4, b0", got)
			}
		})
	}
}

// TestRev26BOKNoPlainAfterTLSOn — (d) probe, held: a client POSTs
// /admin/reload turning status.tls on (same address) over a plain
// connection and, the 200 read, sends GET /feed.status on the same
// connection at once; 100 rounds (off again over HTTPS between them). The
// old server answered the reload with Connection: close (its Shutdown
// begins before the handler answers) or closed the idle connection: no
// follow-up was answered over plain HTTP. (Once, in an earlier form with
// Go's pooled transport, 1 of 20 follow-ups under -race was answered 200
// over plain HTTP; not reproduced in 400 further rounds — a narrow window
// between the old server's keep-alive check and its Shutdown's
// closeIdleConns, reload.go:513-517.)
func TestRev26BOKNoPlainAfterTLSOn(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "srv")
	crt, key := ca.Issue(t, "127.0.0.1")
	tlstest.Write(t, dir, "s.crt", crt)
	tlstest.Write(t, dir, "s.key", key)
	on := strings.Replace(reloadBase, "token: sesame}",
		"token: sesame, tls: {certFile: %DIR%/s.crt, keyFile: %DIR%/s.key}}", 1)
	e := startIn(t, dir, reloadBase, Options{})
	addr := e.d.Addr()
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	secure := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots}, DisableKeepAlives: true}}
	wrong := 0
	const rounds = 100
	for i := 0; i < rounds; i++ {
		e.rewrite(on)
		if rev26bKeepAliveRound(t, addr) {
			wrong++
			if wrong == 1 {
				t.Logf("round %d: the follow-up request was answered 200 over plain HTTP", i)
			}
		}
		// Off again, over HTTPS.
		e.rewrite(reloadBase)
		req, _ := http.NewRequest(http.MethodPost, "https://"+addr+"/admin/reload", nil)
		req.Header.Set("Authorization", "Bearer sesame")
		var r2 *http.Response
		var err error
		for end := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if r2, err = secure.Do(req); err == nil || time.Now().After(end) {
				break
			}
		}
		if err != nil {
			t.Fatalf("round %d: reload turning tls off: %v", i, err)
		}
		r2.Body.Close()
		if r2.StatusCode != http.StatusOK {
			t.Fatalf("round %d: reload turning tls off: %d", i, r2.StatusCode)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if wrong > 0 {
		t.Errorf("after a reload turning status.tls on answered 200, %d of %d immediate follow-up requests on the same (kept-alive) client were answered 200 over plain HTTP; want none (HTTPS only)", wrong, rounds)
	}
}

// TestRev26BOKTLSToggleRollbackAndMove — (d) probe: a reload turning
// status.tls on whose build fails (rolled back: 400) leaves plain HTTP on
// the same address and HTTPS not served; a reload turning it on and moving
// status.listen in one go serves HTTPS at the new address only; after Stop
// both addresses are free.
func TestRev26BOKTLSToggleRollbackAndMove(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "srv")
	crt, key := ca.Issue(t, "127.0.0.1")
	tlstest.Write(t, dir, "s.crt", crt)
	tlstest.Write(t, dir, "s.key", key)
	fail := func(*config.Processor, *processor.Group) (any, error) { return nil, errors.New("cannot build") }
	e := startIn(t, dir, reloadBase, Options{Processors: map[string]Build{"bad": fail}})
	addr := e.d.Addr()
	on := strings.Replace(reloadBase, "token: sesame}",
		"token: sesame, tls: {certFile: %DIR%/s.crt, keyFile: %DIR%/s.key}}", 1)
	e.rewrite(on + "  - {name: bad, feed: app, type: discard}\n")
	if code, body := e.reload(); code == http.StatusOK {
		t.Fatalf("reload whose build fails: %d %s", code, body)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	secure := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots}, DisableKeepAlives: true}}
	plain := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	get := func(c *http.Client, url string) int {
		resp, err := c.Get(url)
		if err != nil {
			return -1
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for i := 0; i < 10; i++ {
		if c := get(plain, "http://"+addr+"/livez"); c != http.StatusOK {
			t.Fatalf("after the rolled-back tls reload, plain /livez: %d", c)
		}
		if c := get(secure, "https://"+addr+"/livez"); c == http.StatusOK {
			t.Fatalf("after the rolled-back tls reload, HTTPS is served")
		}
	}
	p := freePort(t)
	e.rewrite(strings.Replace(on, "127.0.0.1:0", p, 1))
	if code, body := e.reload(); code != http.StatusOK {
		t.Fatalf("reload turning tls on and moving listen: %d %s", code, body)
	}
	if e.d.Addr() != p {
		t.Fatalf("Addr %s, want %s", e.d.Addr(), p)
	}
	if c := get(secure, "https://"+p+"/livez"); c != http.StatusOK {
		t.Fatalf("HTTPS at the new address: %d", c)
	}
	if c := get(plain, "http://"+p+"/livez"); c == http.StatusOK {
		t.Fatalf("plain HTTP at the new address")
	}
	time.Sleep(200 * time.Millisecond)
	if c := get(plain, "http://"+addr+"/livez"); c == http.StatusOK {
		t.Fatalf("the old address still serves")
	}
	e.Stop()
	for _, a := range []string{addr, p} {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			t.Errorf("after Stop, %s is still bound: %v", a, err)
			continue
		}
		ln.Close()
	}
}

// rev26bKeepAliveRound POSTs /admin/reload over a plain connection, reads
// the 200, then at once sends GET /feed.status on the same connection: it
// reports whether that was answered 200 (over plain HTTP).
func rev26bKeepAliveRound(t *testing.T, addr string) bool {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(c)
	if _, err := io.WriteString(c, "POST /admin/reload HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sesame\r\nContent-Length: 0\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reload turning tls on: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("reload turning tls on: %d", resp.StatusCode)
	}
	if resp.Close {
		return false // Connection: close: the old server ends it
	}
	if _, err := io.WriteString(c, "GET /feed.status HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sesame\r\n\r\n"); err != nil {
		return false
	}
	resp, err = http.ReadResponse(br, nil)
	if err != nil {
		return false
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// TestRev26BOKUntouchedFeedCommittedWhenOvertaken — (a) probe, held: a
// reload adding a slow-building processor to feed app is overtaken by the
// stop; feed other, untouched by the reload, got o0..o4 meanwhile. Its
// final commit covers them: the next start re-delivers none of them
// (DESIGN §5 Shutdown: final commit of exactly what the pointer-holding
// groups finished; §2 re-delivery only after a crash).
func TestRev26BOKUntouchedFeedCommittedWhenOvertaken(t *testing.T) {
	dir := t.TempDir()
	const two = `
dataDir: %DIR%/state
status: {listen: "127.0.0.1:0", token: sesame}
shutdownTimeoutMillis: 300
feeds:
  - {name: other, path: %DIR%/other.log, pollIntervalMillis: 20}
  - {name: app, path: %DIR%/app.log, pollIntervalMillis: 20}
processors:
  - {name: o, feed: other, type: file, path: %DIR%/o.log}
  - {name: archive, feed: app, type: file, path: %DIR%/out.log}
`
	if err := os.WriteFile(filepath.Join(dir, "app.log"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{}, 1)
	slow := func(*config.Processor, *processor.Group) (any, error) {
		started <- struct{}{}
		time.Sleep(1500 * time.Millisecond)
		return &recorder{}, nil
	}
	e := startIn(t, dir, two, Options{Processors: map[string]Build{"slow": slow}})
	e.rewrite(two + "  - {name: slow, feed: app, type: discard}\n")
	reloaded := make(chan error, 1)
	go func() { reloaded <- e.d.Reload(context.Background()) }()
	<-started
	e.appendLines(numbered("o", 0, 5)...) // other.log: e.input is the first feed's
	deadline := time.Now().Add(10 * time.Second)
	for len(readLinesIf(filepath.Join(dir, "o.log"))) < 5 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	e.cancel()
	e.Stop()
	<-reloaded
	time.Sleep(1500 * time.Millisecond)
	e2 := startIn(t, dir, two+"  - {name: slow, feed: app, type: discard}\n", Options{Processors: map[string]Build{"slow": (&recorder{}).build}})
	e2.appendLines("o5")
	time.Sleep(time.Second)
	if got := strings.Join(readLinesIf(filepath.Join(dir, "o.log")), ","); got != strings.Join(append(numbered("o", 0, 5), "o5"), ",") {
		t.Errorf("o.log after the next start: %s; want o0..o4, o5 once each", got)
	}
}

// TestRev26BOKAddedThenChangedCounts — (c) probe, held: k2 added by reload
// 1 (every subscriber finished: nothing re-read) gets b0, b1; reload 2
// changes k2's type and target (file → another file path: its state moved
// aside, same queue) and restarts the feed; c0 appended. k2 reports
// position 3, dispatched 3 in feed.status and in /metrics.
func TestRev26BOKAddedThenChangedCounts(t *testing.T) {
	e := start(t, reloadBase, Options{})
	e.appendLines(numbered("a", 0, 5)...)
	e.waitFor("settled", 10*time.Second, func(f status.FeedReport) bool { return f.Settled && f.Sequence == 5 })
	e.rewrite(reloadBase + "  - {name: k2, feed: app, type: file, path: %DIR%/k2.log}\n")
	if code, body := e.reload(); code != http.StatusOK {
		t.Fatalf("reload 1: %d %s", code, body)
	}
	e.appendLines(numbered("b", 0, 2)...)
	e.waitFor("settled", 10*time.Second, func(f status.FeedReport) bool { return f.Settled && f.Sequence == 7 })
	e.rewrite(reloadBase + "  - {name: k2, feed: app, type: file, path: %DIR%/k2b.log, format: json}\n")
	if code, body := e.reload(); code != http.StatusOK {
		t.Fatalf("reload 2: %d %s", code, body)
	}
	e.appendLines("c0")
	f := e.waitFor("settled", 10*time.Second, func(f status.FeedReport) bool { return f.Settled && f.Sequence >= 8 })
	k := sub(t, f, "k2")
	if k.Position != 3 || k.Dispatched != 3 {
		t.Errorf("k2 after two reloads: position %d, dispatched %d; want 3, 3 (sequence %d)", k.Position, k.Dispatched, f.Sequence)
	}
	_, m := e.do(http.MethodGet, "/metrics", "")
	for _, want := range []string{`tailfeed_subscriber_lines_queued_total{feed="app",subscriber="k2"} 3`, `tailfeed_subscriber_lines_dispatched_total{feed="app",subscriber="k2"} 3`} {
		if !strings.Contains(string(m), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
