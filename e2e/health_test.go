package e2e

import (
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// failedTmpl has a healthy feed and one that fails at run time: a bounded
// feed (ONCE_EARLIEST) whose file is missing goes FAILED while the daemon
// keeps serving.
const failedTmpl = `dataDir: ./state
status: {listen: "` + addrPlaceholder + `", stallAlertMillis: 600000}
feeds:
  - name: good
    path: ./good.log
    readStrategy: EARLIEST
  - name: gone
    path: ./gone.log
    readStrategy: ONCE_EARLIEST
processors:
  - {name: g1, feed: good, type: discard}
  - {name: g2, feed: gone, type: discard}
`

// TestFailedFeedIsUnhealthy: a FAILED feed makes /healthz 503 at once (not
// after stallAlertMillis), `tailfeed status` exit 4 at once even with
// --wait-settled, and shows in /metrics as tailfeed_feed_state{state="FAILED"}
// 1; /livez stays 200 and /readyz stays 503 (the feed never opened a file)
// (DESIGN §12 "Health").
func TestFailedFeedIsUnhealthy(t *testing.T) {
	e := newEnv(t, failedTmpl)
	os.WriteFile(e.path("good.log"), []byte("a\nb\n"), 0o644)
	d := e.start()
	d.waitFor("feed gone FAILED", 30*time.Second, func(r *report) bool {
		for _, f := range r.Feeds {
			if f.Feed == "gone" && f.State == "FAILED" {
				return true
			}
		}
		return false
	})
	code, body, err := d.get("/healthz")
	if err != nil || code != http.StatusServiceUnavailable || !strings.Contains(string(body), "gone") {
		t.Errorf("/healthz = %d %s (%v), want 503 naming feed gone", code, body, err)
	}
	if code, body, _ := d.get("/livez"); code != http.StatusOK {
		t.Errorf("/livez = %d %s, want 200", code, body)
	}
	if code, body, _ := d.get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(string(body), "gone") {
		t.Errorf("/readyz = %d %s, want 503 naming feed gone", code, body)
	}
	began := time.Now()
	out, stderr, exit := cli(t, "status", "--addr", d.addr, "--wait-settled", "30s")
	if exit != 4 || !strings.Contains(stderr, "gone") {
		t.Errorf("status --wait-settled 30s: exit %d, want 4 naming feed gone\n%s%s", exit, out, stderr)
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Errorf("status took %v with a FAILED feed; want an answer at once", took)
	}
	if _, _, exit := cli(t, "status", "--addr", d.addr); exit != 4 {
		t.Errorf("status: exit %d, want 4", exit)
	}
	_, metrics, err := d.get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`tailfeed_feed_state{feed="gone",state="FAILED"} 1`,
		`tailfeed_feed_state{feed="gone",state="STARTING"} 0`,
		`tailfeed_feed_state{feed="good",state="FAILED"} 0`,
		`tailfeed_feed_lossless{feed="gone"} 1`,
		`tailfeed_feed_lossless{feed="good"} 1`,
	} {
		if !strings.Contains(string(metrics), want+"\n") {
			t.Errorf("/metrics has no line %q", want)
		}
	}
	if !hasLine(string(metrics), func(l string) bool {
		return strings.HasPrefix(l, `tailfeed_feed_state{feed="good",state="`) && strings.HasSuffix(l, "} 1")
	}) {
		t.Errorf("/metrics has no current state for feed good")
	}
	d.stop()
}

// TestReadyAndLive: /readyz answers 200 once every feed has opened its file
// or waits for one (a missing COMMITTED input), /livez 200 while serving;
// both open without the token, like /healthz.
func TestReadyAndLive(t *testing.T) {
	e := newEnv(t, `dataDir: ./state
status: {listen: "`+addrPlaceholder+`", token: secret, protectRead: true}
feeds:
  - {name: here, path: ./here.log}
  - {name: later, path: ./later.log}
processors:
  - {name: p1, feed: here, type: discard}
  - {name: p2, feed: later, type: discard}
`)
	os.WriteFile(e.path("here.log"), []byte("x\n"), 0o644)
	d := e.spawn()
	waitUntil(t, "/livez 200", 30*time.Second, func() bool {
		code, _, err := d.get("/livez")
		return err == nil && code == http.StatusOK
	})
	waitUntil(t, "/readyz 200", 30*time.Second, func() bool {
		code, _, _ := d.get("/readyz")
		return code == http.StatusOK
	})
	if code, body, _ := d.get("/feed.status"); code != http.StatusUnauthorized {
		t.Errorf("/feed.status without the token = %d %s, want 401 (protectRead)", code, body)
	}
	d.stop()
}
