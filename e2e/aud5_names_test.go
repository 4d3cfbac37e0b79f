package e2e

// Aud5 (names): names DESIGN §7 declares valid — a feed's name
// "[A-Za-z0-9._-]+, unique", a processor's "unique" — that collide with a
// file tailfeed keeps under dataDir, so that one feed or processor breaks
// another although `validate` accepted the config. Found by the eleventh
// session's audit 5 (DESIGN only), fixed the same session: each test failed
// before its fix.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// aud5Reload rewrites the config of the running daemon (same address) and
// sends SIGHUP, then waits until feed.status counts the reload.
func aud5Reload(t *testing.T, e *env, d *daemon, tmpl string, wantReloads int) {
	t.Helper()
	if err := os.WriteFile(e.cfg, []byte(strings.ReplaceAll(tmpl, addrPlaceholder, d.addr)), 0o600); err != nil {
		t.Fatal(err)
	}
	d.signal(syscall.SIGHUP)
	waitUntil(t, "the reload counted in config.reloads", 20*time.Second, func() bool {
		_, body, err := d.get("/feed.status")
		if err != nil {
			return false
		}
		var r struct {
			Config struct {
				Reloads        int     `json:"reloads"`
				ReloadFailures int     `json:"reloadFailures"`
				LastError      *string `json:"lastError"`
			} `json:"config"`
		}
		if json.Unmarshal(body, &r) != nil {
			return false
		}
		if r.Config.ReloadFailures > 0 {
			t.Fatalf("reload failed: %v", r.Config.LastError)
		}
		return r.Config.Reloads >= wantReloads
	})
}

// aud5Counts reads GET /v1/state/{proc}'s counts.
func aud5Counts(t *testing.T, d *daemon, proc, token string) map[string]float64 {
	t.Helper()
	code, _, body := request(t, d, http.MethodGet, "/v1/state/"+proc, token, nil)
	if code != http.StatusOK {
		t.Fatalf("GET /v1/state/%s: %d %s", proc, code, body)
	}
	var st struct {
		Counts map[string]float64 `json:"counts"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatalf("GET /v1/state/%s: %v: %s", proc, err, body)
	}
	return st.Counts
}

const aud5RemovedCountTmpl = `dataDir: ./state
status: {listen: "{{ADDR}}"}
shutdownTimeoutMillis: 500
feeds:
  - {name: app, path: ./in.log}
processors:
  - {name: removed, feed: app, type: count}
  - {name: p, feed: app, type: pull}
`

// TestAud5AFixedCountNamedRemovedKeepsCounts checks DESIGN §7 (processors:
// "name: archive # unique; also the subscriber queue's name" — no other
// rule) with §6 count ("the counts and the applied (epoch, position) per
// feed are saved atomically … GET /v1/state/{processor} returns the
// counts") and §12 Reload ("A removed processor … keeps holding the pointer
// … The hold is kept in `dataDir/state/removed.json`"; an unchanged
// processor's "durable state (… count state …) is kept").
//
// A count processor named "removed" keeps its counts in
// dataDir/state/removed.json — the very file of the removed subscribers'
// holds. `validate` accepts the name. The count processor counts a, b, a
// ({"a":2,"b":1}); a reload removes the pull processor p (which holds the
// three lines). Expected: the unchanged count processor still answers
// {"a":2,"b":1}, also after a restart. Observed: the holds ledger is written
// over its state file and the counts read {} from then on (lost).
func TestAud5AFixedCountNamedRemovedKeepsCounts(t *testing.T) {
	e := newEnv(t, aud5RemovedCountTmpl)
	if err := os.WriteFile(e.path("in.log"), []byte("a\nb\na\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := cli(t, "validate", "--config", e.cfgWith("127.0.0.1:1")); code != 0 {
		t.Fatalf("validate: exit %d, want 0 (the names are valid): %s%s", code, out, errOut)
	}
	want := map[string]float64{"a": 2, "b": 1}
	same := func(got map[string]float64) bool {
		if len(got) != len(want) {
			return false
		}
		for k, v := range want {
			if got[k] != v {
				return false
			}
		}
		return true
	}
	d := e.start()
	waitUntil(t, "counts a:2 b:1", 20*time.Second, func() bool { return same(aud5Counts(t, d, "removed", "")) })

	aud5Reload(t, e, d, strings.Replace(aud5RemovedCountTmpl, "  - {name: p, feed: app, type: pull}\n", "", 1), 1)
	time.Sleep(500 * time.Millisecond)
	if got := aud5Counts(t, d, "removed", ""); !same(got) {
		t.Errorf("after a reload that removed processor p, GET /v1/state/removed counts %v, want %v (the count processor did not change; its counts are lost: its state file is dataDir/state/removed.json, the holds ledger)", got, want)
	}
	d.stop()
	d = e.start()
	time.Sleep(500 * time.Millisecond)
	if got := aud5Counts(t, d, "removed", ""); !same(got) {
		t.Errorf("after a restart, GET /v1/state/removed counts %v, want %v", got, want)
	}
	d.stop()
}

const aud5PtrNameTmpl = `dataDir: ./state
status: {listen: "{{ADDR}}"}
shutdownTimeoutMillis: 500
feeds:
  - {name: x, path: ./in.log}
  - {name: x.ptr, path: ./logs/*.log}
processors:
  - {name: c1, feed: x, type: count}
  - {name: c2, feed: x.ptr, type: count}
`

// TestAud5BFixedFeedNamedPtrBesideItsStem checks DESIGN §7 ("feeds: -
// name: app # [A-Za-z0-9._-]+, unique"), §3 (single-file pointer
// `dataDir/feeds/<feed>.ptr`), §10 (a glob feed's pointers
// `dataDir/feeds/<feed>/<epoch, 16 hex>.ptr`) and §12 "Validation" (a
// config error names FILE:LINE, exit 2).
//
// Two feeds with valid, unique names: "x" (a single file) and "x.ptr" (a
// glob): feed x's pointer file and feed x.ptr's pointer directory are the
// same path, dataDir/feeds/x.ptr. Observed before the fix: validate
// accepted them (exit 0); on a fresh dataDir the glob feed x.ptr stayed
// STARTING for ever with detail null — nothing read, nothing logged,
// /healthz 200 — and once its directory existed (a run of x.ptr alone),
// `run` exited 1 "open …/feeds/x.ptr: is a directory". Now validate and run
// refuse the names at the glob feed's name line, exit 2.
func TestAud5BFixedFeedNamedPtrBesideItsStem(t *testing.T) {
	e := newEnv(t, aud5PtrNameTmpl)
	cfg := e.cfgWith("127.0.0.1:1")
	line := 0
	raw, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(raw), "\n") {
		if strings.Contains(l, "x.ptr") {
			line = i + 1
			break
		}
	}
	for _, cmd := range []string{"validate", "run"} {
		out, errOut, code := cli(t, cmd, "--config", cfg)
		want := fmt.Sprintf("%s:%d: feeds[1].name:", cfg, line)
		if code != 2 || !strings.Contains(out+errOut, want) || !strings.Contains(out+errOut, "feed \"x\"'s pointer file") {
			t.Errorf("%s: exit %d, output %q; want exit 2 and an error at %s naming feed x's pointer file", cmd, code, out+errOut, want)
		}
	}
}
