package e2e

import (
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// Fourth-pass audit of DESIGN §12 "Operations", §9 and the CLI/config parts
// of §7 against the built binary. Findings kept here were fixed; each test
// failed before its fix.

// aud4RemovedTmpl: feed app read by a file sink and a pull subscriber; the
// pull subscriber is the one a reload removes while it holds lines.
const aud4RemovedTmpl = `dataDir: ./state
status: {listen: "{{ADDR}}", stallAlertMillis: 300}
shutdownTimeoutMillis: 300
feeds:
  - {name: app, path: ./in.log, pollIntervalMillis: 20}
processors:
  - {name: arch, feed: app, type: file, path: ./out.log}
  - {name: p, feed: app, type: pull}
`

// aud4StartRemovedHold starts aud4RemovedTmpl with two lines, lets the pull
// subscriber hold them unacknowledged, and removes it by a reload: the feed
// is stalled ("removed subscriber p holds 2 lines").
func aud4StartRemovedHold(t *testing.T) (*env, *daemon) {
	t.Helper()
	e := newEnv(t, aud4RemovedTmpl)
	os.WriteFile(e.path("in.log"), []byte("a\nb\n"), 0o644)
	d := e.start()
	d.waitFor("2 lines pending", 20*time.Second, func(r *report) bool { return r.Feeds[0].PendingAcks == 2 })
	e.tmpl = strings.Replace(aud4RemovedTmpl, "  - {name: p, feed: app, type: pull}\n", "", 1)
	reconfig(t, e, d, e.tmpl)
	if code, _, body := request(t, d, http.MethodPost, "/admin/reload", "", nil); code != 200 {
		t.Fatalf("reload: %d %s", code, body)
	}
	d.waitFor("stalled by the removed subscriber", 20*time.Second, func(r *report) bool {
		return r.Feeds[0].Stalled != nil && strings.Contains(*r.Feeds[0].Stalled, "removed subscriber p")
	})
	return e, d
}

// aud4HealthzStaysOK fails t unless /healthz is 503 naming feed app at
// some point within the next 3 s (10× stallAlertMillis).
func aud4WantHealthz503(t *testing.T, d *daemon, when string) {
	t.Helper()
	var code int
	var body []byte
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		code, _, body = request(t, d, http.MethodGet, "/healthz", "", nil)
		if code == http.StatusServiceUnavailable {
			return
		}
	}
	r, _ := statusRaw(t, d)
	t.Errorf("%s: feed app has been stalled (%q) for 3 s with stallAlertMillis 300, yet /healthz = %d %s; "+
		"DESIGN §7: \"/healthz answers 503 with the reason while any feed has been stalled or paused for longer than "+
		"status.stallAlertMillis\" (§12 Health: \"and after stallAlertMillis of a stall or pause\")",
		when, *r.Feeds[0].Stalled, code, body)
}

// TestAud4OXHealthzIgnoresRemovedSubscriberStall: DESIGN §12 Reload: a
// removed processor's unfinished lines keep holding the pointer — "the feed
// reports `stalled` (`removed subscriber <name> holds N lines`)", and §7:
// "/healthz answers 503 with the reason while any feed has been stalled …
// for longer than status.stallAlertMillis". Observed: feed.status shows
// stalled "removed subscriber p holds 2 lines" (settled false, `tailfeed
// status` exits 3 with that reason) but /healthz stays 200 {"status":"ok"},
// before and after a restart (the hold is kept in removed.json). Every run.
func TestAud4OXHealthzIgnoresRemovedSubscriberStall(t *testing.T) {
	e, d := aud4StartRemovedHold(t)
	aud4WantHealthz503(t, d, "after the reload")
	d.stop()
	d = e.start()
	d.waitFor("stalled after the restart", 20*time.Second, func(r *report) bool { return r.Feeds[0].Stalled != nil })
	aud4WantHealthz503(t, d, "after a restart")
	d.stop()
}
