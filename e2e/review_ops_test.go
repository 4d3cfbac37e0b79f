package e2e

// Independent review of the merged fixreload / fixpull / fixhttp /
// settlewindow changes: each test below fails on the code it was written
// against, for a defect the doc comment names (scenario, DESIGN quote,
// observed vs expected).

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"tailfeed/internal/tlsconfig/tlstest"
)

// TestReviewOpsReloadEarliestRotatedTailLostUncounted: an EARLIEST feed
// whose only subscriber (a pull, no client polling yet) paused the source
// after 4 of 20 lines of in.log; in.log is then rotated (renamed in.log.1,
// a new in.log with b1, b2) and a reload adds a discard processor, which
// restarts the feed. The restarted instance is meant to resume "where its
// previous instance stopped" (file.Config.Resume), but the resume point is
// in the rotated file, whose key no longer matches the path: the new
// instance reads the new in.log from 0 and never comes back to in.log.1.
//
// DESIGN §4 "Nothing green over a loss. `lossless` is true only while
// tailfeed can show that no line was skipped. Every case where it cannot is
// counted, in `lostTails` (files) and `lostBytes`"; §2 "never a gap".
//
// Observed: the client gets b1, b2 (and the lines of in.log.1 it had not
// been handed are never delivered), lostTails 0, lossless true.
// Expected: every line of in.log.1 delivered, or the loss counted
// (lostTails/lostBytes > 0, lossless false).
func TestReviewOpsReloadEarliestRotatedTailLostUncounted(t *testing.T) {
	tmpl := `dataDir: ./state
status: {listen: "` + addrPlaceholder + `", token: ` + ctToken + `}
shutdownTimeoutMillis: 300
feeds:
  - {name: app, path: ./in.log, pollIntervalMillis: 20, readStrategy: EARLIEST, maxPendingAcks: 4, queueCapacity: 2, rotateWaitMillis: 60000}
processors:
  - {name: c, feed: app, type: pull, ackTimeoutMillis: 60000, maxInFlight: 2}
`
	e := newEnv(t, tmpl)
	var a strings.Builder
	const n = 20
	for i := 0; i < n; i++ {
		fmt.Fprintf(&a, "a%02d\n", i)
	}
	os.WriteFile(e.path("in.log"), []byte(a.String()), 0o644)
	d := e.start()
	d.waitFor("the window full (4 lines published, paused)", 30*time.Second, func(r *report) bool {
		return r.Feeds[0].Sequence == 4 && r.Feeds[0].Paused
	})
	if err := os.Rename(e.path("in.log"), e.path("in.log.1")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(e.path("in.log"), []byte("b1\nb2\n"), 0o644)
	time.Sleep(300 * time.Millisecond) // the rotation seen (polls run while paused)
	auditOpsReload(t, e, d, ctToken, tmpl+"  - {name: added, feed: app, type: discard}\n")
	got := map[string]int{}
	missingLines := func() []string {
		var missing []string
		for i := 0; i < n; i++ {
			if l := fmt.Sprintf("a%02d", i); got[l] == 0 {
				missing = append(missing, l)
			}
		}
		return missing
	}
	// Pull (maxInFlight 2: two lines a pull) until every line of in.log.1
	// came or the loss is counted, up to 20 s: a loaded CI may take
	// seconds for the 22 lines.
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) && len(missingLines()) > 0 {
		evs := pullFrom(t, d, "c", "max=50&wait=200ms")
		for _, ev := range evs {
			got[ev.Line]++
		}
		ackAllQuiet(t, d, evs)
		if len(evs) == 0 {
			if r, err := d.status(); err == nil && (!r.Feeds[0].Lossless || r.Feeds[0].LostTails > 0 || r.Feeds[0].LostBytes > 0) {
				break
			}
		}
	}
	missing := missingLines()
	r, _ := statusRaw(t, d)
	f := r.Feeds[0]
	if len(missing) > 0 && f.Lossless && f.LostTails == 0 && f.LostBytes == 0 {
		t.Errorf("after the reload, %d lines of the rotated in.log.1 were never delivered (%v); got %v; yet lostTails %d, lostBytes %d, lossless %v: a gap reported green",
			len(missing), missing, got, f.LostTails, f.LostBytes, f.Lossless)
	}
}

// TestReviewOpsPullSecondReloadForgetsDeliveries: a pull subscriber with
// maxInFlight 2 has both deliveries (a1, a2) out to a client
// (ackTimeoutMillis 60000). A reload (a discard processor added) restarts
// the feed: the new instance adopts the two deliveries (fixpull), but as
// they fill maxInFlight, the re-read batch waits in ProcessBatch and the
// adopted entries never enter its order. A second reload (another
// processor added) builds a third instance that adopts from the second's
// order only: the two deliveries are forgotten.
//
// DESIGN §12 Reload "If valid, the difference is applied without a
// restart"; §6 pull "unacked after `ackTimeoutMillis` → redelivered
// (attempt + 1)" (the behaviour the fix promises: "a rebuilt pull subscriber
// adopts its predecessor's deliveries in flight").
//
// Observed: after the second reload the ACKs of a1, a2 answer 404 and a1,
// a2 are handed out again at attempt 1 within a second.
// Expected: the ACKs are accepted (200) and a1, a2 are not handed out
// again before ackTimeoutMillis; only a3 comes.
func TestReviewOpsPullSecondReloadForgetsDeliveries(t *testing.T) {
	tmpl := `dataDir: ./state
status: {listen: "` + addrPlaceholder + `", token: ` + ctToken + `}
shutdownTimeoutMillis: 300
feeds:
  - {name: app, path: ./in.log, pollIntervalMillis: 20}
processors:
  - {name: c, feed: app, type: pull, ackTimeoutMillis: 60000, maxInFlight: 2}
`
	e := newEnv(t, tmpl)
	os.WriteFile(e.path("in.log"), []byte("a1\na2\na3\n"), 0o644)
	d := e.start()
	evs := pullFromN(t, d, "c", 2, "")
	auditOpsReload(t, e, d, ctToken, tmpl+"  - {name: added1, feed: app, type: discard}\n")
	time.Sleep(300 * time.Millisecond)
	auditOpsReload(t, e, d, ctToken, tmpl+"  - {name: added1, feed: app, type: discard}\n  - {name: added2, feed: app, type: discard}\n")
	for _, ev := range evs {
		code, _, body := request(t, d, http.MethodPost, "/v1/ack", ctToken, mustJSON(map[string]string{"deliveryId": ev.DeliveryID}))
		if code != http.StatusOK {
			t.Errorf("after two reloads, the ACK of %s (handed out before them, ackTimeoutMillis 60000): %d %s, want 200", ev.Line, code, body)
		}
	}
	var again []string
	deadline := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(deadline) {
		got := pullFrom(t, d, "c", "max=10&wait=200ms")
		for _, ev := range got {
			if ev.Line != "a3" {
				again = append(again, fmt.Sprintf("%s (attempt %d)", ev.Line, ev.Attempt))
			}
		}
		ackAllQuiet(t, d, got)
	}
	if len(again) > 0 {
		t.Errorf("after two reloads, handed out again before ackTimeoutMillis: %v (their deliveries were in flight)", again)
	}
}

// TestReviewOpsReloadLatestWaitingFileAppearedLost: a LATEST feed waits for
// its file (WAITING_FOR_FILE: its directory does not exist yet, so only the
// poll, every 60 s, looks). The directory and the file appear with x1, x2,
// and a reload (a discard processor added) restarts the feed before the
// poll saw them. A file that appears while the feed waits is read from its
// start ("input file appeared; reading it from its start"); the restarted
// instance instead treats it as present at start and begins at its end:
// x1 and x2 are never delivered, uncounted. (fixreload resumes a LATEST
// feed only from a resume point, which a waiting feed does not have.)
//
// DESIGN §12 Reload "If valid, the difference is applied without a
// restart"; §4 "Nothing green over a loss"; §2 "never a gap".
//
// Observed: out.log holds only x3 (appended after the reload); lossless true.
// Expected: x1, x2, x3 (or the loss counted, lossless false).
func TestReviewOpsReloadLatestWaitingFileAppearedLost(t *testing.T) {
	tmpl := `dataDir: ./state
status: {listen: "` + addrPlaceholder + `", token: ` + ctToken + `}
shutdownTimeoutMillis: 300
feeds:
  - {name: app, path: ./logs/in.log, pollIntervalMillis: 60000, readStrategy: LATEST}
processors:
  - {name: out, feed: app, type: file, path: ./out.log}
`
	e := newEnv(t, tmpl)
	d := e.start()
	d.waitFor("waiting for the file", 30*time.Second, func(r *report) bool { return r.Feeds[0].State == "WAITING_FOR_FILE" })
	if err := os.MkdirAll(e.path("logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(e.path("logs/in.log"), []byte("x1\nx2\n"), 0o644)
	time.Sleep(200 * time.Millisecond)
	auditOpsReload(t, e, d, ctToken, tmpl+"  - {name: added, feed: app, type: discard}\n")
	time.Sleep(300 * time.Millisecond)
	appendTo(t, e.path("logs/in.log"), "x3\n")
	time.Sleep(500 * time.Millisecond)
	r := d.waitSettled(30 * time.Second)
	b, _ := os.ReadFile(e.path("out.log"))
	if string(b) != "x1\nx2\nx3\n" && r.Feeds[0].Lossless {
		t.Errorf("out.log after a reload of a LATEST feed whose file appeared while it waited = %q, want \"x1\\nx2\\nx3\\n\" (or a counted loss); lossless %v",
			b, r.Feeds[0].Lossless)
	}
}

// TestReviewOpsReloadOnceEarliestEmptyFileRereads: an ONCE_EARLIEST feed
// opens an empty file: END_OF_STREAM at once, nothing to deliver (its size
// at open is 0). x1 is appended afterwards; a reload adds a discard
// processor. fixreload promises "a finished ONCE_EARLIEST stays finished"
// (the resume point keeps the once-read's end), but a resume point with no
// first bytes is never taken for ONCE_EARLIEST (Source.resumes), so the
// restarted instance reads the file again to its current size and delivers
// x1, a line appended after the once-read's end.
//
// DESIGN §4 "`ONCE_EARLIEST` reads from 0 to the file's size at open and
// stops (END_OF_STREAM)"; §12 Reload "applied without a restart".
//
// Observed: out.log holds "x1\n" after the reload.
// Expected: out.log empty (the once-read ended at 0 bytes), as it is for a
// non-empty file (TestReloadGlobOnceEarliestNoRereads' one-file twin).
func TestReviewOpsReloadOnceEarliestEmptyFileRereads(t *testing.T) {
	tmpl := `dataDir: ./state
status: {listen: "` + addrPlaceholder + `", token: ` + ctToken + `}
shutdownTimeoutMillis: 300
feeds:
  - {name: app, path: ./in.log, pollIntervalMillis: 20, readStrategy: ONCE_EARLIEST}
processors:
  - {name: out, feed: app, type: file, path: ./out.log}
`
	e := newEnv(t, tmpl)
	os.WriteFile(e.path("in.log"), nil, 0o644)
	d := e.start()
	d.waitFor("END_OF_STREAM", 30*time.Second, func(r *report) bool { return r.Feeds[0].State == "END_OF_STREAM" && r.Settled })
	appendTo(t, e.path("in.log"), "x1\n")
	time.Sleep(200 * time.Millisecond)
	auditOpsReload(t, e, d, ctToken, tmpl+"  - {name: added, feed: app, type: discard}\n")
	time.Sleep(500 * time.Millisecond)
	d.waitSettled(30 * time.Second)
	b, _ := os.ReadFile(e.path("out.log"))
	if len(b) != 0 {
		t.Errorf("out.log after a reload of a finished ONCE_EARLIEST feed (file empty at open, x1 appended later) = %q, want empty", b)
	}
}

// TestReviewOpsReloadClientCAKeepAliveStillAccepted: status.tls with
// clientCAFile ./ca-a.crt (mutual TLS is the API's authentication; no
// token). A client with a certificate signed by CA a opens a keep-alive
// connection and reads /admin/losses/app. A reload (SIGHUP) names
// ./ca-b.crt instead (fixhttp stages and uses the new files): a new
// connection with the a-signed certificate is refused from then on. But the
// connection the client opened before the reload keeps full access: the
// per-request check only asks whether the handshake verified a chain
// (status.verifiedClient), not whether the CA now configured signed it,
// and the server keeps the connection for as long as the client sends a
// request within idleTimeout (120 s). The revoked CA's client stays in.
//
// DESIGN §12 TLS: "with `clientCAFile`, clients must present a certificate
// it signed"; Reload: "If valid, the difference is applied without a
// restart"; "Certificate files are re-read on reload".
//
// Observed: after the reload, GET /admin/losses/app on the kept-alive
// connection answers 200 (and keeps doing so).
// Expected: 401 (or the connection closed): the a-signed certificate is no
// longer one the configured clientCAFile signed.
func TestReviewOpsReloadClientCAKeepAliveStillAccepted(t *testing.T) {
	const tmpl = `dataDir: ./state
status:
  listen: "` + addrPlaceholder + `"
  tls: {certFile: ./server.crt, keyFile: ./server.key, clientCAFile: ./ca-a.crt}
feeds:
  - {name: app, path: ./in.log, pollIntervalMillis: 20}
processors:
  - {name: out, feed: app, type: file, path: ./out.log}
`
	e := newEnv(t, tmpl)
	os.WriteFile(e.path("in.log"), []byte("a1\n"), 0o644)
	srvCA := tlstest.NewCA(t, "servers")
	caA, caB := tlstest.NewCA(t, "a"), tlstest.NewCA(t, "b")
	sc, sk := srvCA.Issue(t, "server")
	tlstest.Write(t, e.dir, "server.crt", sc)
	tlstest.Write(t, e.dir, "server.key", sk)
	tlstest.Write(t, e.dir, "ca-a.crt", caA.PEM)
	tlstest.Write(t, e.dir, "ca-b.crt", caB.PEM)
	cc, ck := caA.Issue(t, "client-a")
	clientA, err := tls.X509KeyPair(cc, ck)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(srvCA.PEM)

	d := e.spawn()
	base := "https://" + d.addr
	waitUntil(t, "HTTPS /livez", 60*time.Second, func() bool {
		code, _, err := httpsGet(base+"/livez", "", roots, nil)
		return err == nil && code == 200
	})
	// One client, one kept-alive connection.
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{clientA}}, MaxIdleConnsPerHost: 1}
	defer tr.CloseIdleConnections()
	kept := &http.Client{Timeout: 10 * time.Second, Transport: tr}
	get := func() (int, bool, error) {
		reused := false
		req, _ := http.NewRequest(http.MethodGet, base+"/admin/losses/app", nil)
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused },
		}))
		resp, err := kept.Do(req)
		if err != nil {
			return 0, false, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, reused, nil
	}
	if code, _, err := get(); err != nil || code != 200 {
		t.Fatalf("before the reload, the a-signed client on GET /admin/losses/app: %d %v, want 200", code, err)
	}
	text := strings.NewReplacer("ca-a.crt", "ca-b.crt", addrPlaceholder, d.addr).Replace(tmpl)
	if err := os.WriteFile(e.cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	d.signal(syscall.SIGHUP)
	// The reload applied: a new connection with the a-signed certificate
	// is refused. (Keep the kept connection busy meanwhile, well within
	// idleTimeout.)
	waitUntil(t, "a new a-signed connection refused after the reload", 20*time.Second, func() bool {
		get()
		code, _, err := httpsGet(base+"/admin/losses/app", "", roots, &clientA)
		if err != nil || code == http.StatusUnauthorized {
			t.Logf("a new a-signed connection after the reload: %d %v", code, err)
			return true
		}
		return false
	})
	// The kept connection, or (refused with "Connection: close" by one of
	// the gets above) a new one: either way 401 now.
	code, reused, err := get()
	if err != nil {
		return // the kept connection was closed: fine
	}
	if code != http.StatusUnauthorized {
		t.Logf("connection reused: %v", reused)
		t.Errorf("after a reload replaced clientCAFile ca-a.crt with ca-b.crt, the a-signed client's kept-alive connection still gets %d on GET /admin/losses/app, want 401", code)
	}
}
