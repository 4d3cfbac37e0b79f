package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rev28Cfg is one feed app (./in.log) read by a webhook p to url (onFailure
// deadLetter, short retries) and a file sink out.
func rev28Cfg(url string) string {
	return `dataDir: ./state
status: {listen: "` + addrPlaceholder + `", token: ` + ctToken + `}
shutdownTimeoutMillis: 1000
feeds:
  - name: app
    path: ./in.log
    pollIntervalMillis: 50
processors:
  - {name: out, feed: app, type: file, path: ./out.log}
  - {name: p, feed: app, type: webhook, url: "` + url + `", timeoutMillis: 200, onFailure: deadLetter, retry: {initialMillis: 10, maxMillis: 20, attempts: 2}}
`
}

// A webhook's url changed while tailfeed was stopped: its state (record and
// dead letters) is moved aside at the start, as a reload moves it (DESIGN
// §12), and the dead letters given up count in released, lossless false,
// across a further restart (losses.jsonl) — not kept under the new target
// (audit 10A: a target changed between runs kept, or applied, the old
// target's state). The same url at the next start keeps what it finds.
func TestRev28TargetChangedWhileStoppedMovesStateAside(t *testing.T) {
	t.Parallel()
	e := newEnv(t, rev28Cfg("http://127.0.0.1:1/in"))
	appendTo(t, e.path("in.log"), "a\nb\n")
	d := e.start()
	d.waitFor("2 dead letters", 30*time.Second, func(r *report) bool { return r.feed(t, "app").DeadLettered == 2 })
	d.waitSettled(30 * time.Second)
	d.stop()

	e.tmpl = rev28Cfg("http://127.0.0.1:2/other")
	d = e.start()
	r := d.waitSettled(30 * time.Second)
	f := r.feed(t, "app")
	if f.DeadLettered != 0 || f.Released != 2 || r.Lossless {
		t.Errorf("after a start with p's url changed: deadLettered %d released %d lossless %v, want 0, 2, false (its 2 dead letters moved aside and given up)",
			f.DeadLettered, f.Released, r.Lossless)
	}
	olds, _ := filepath.Glob(e.path("state/state/p.*.old/p.jsonl"))
	if len(olds) != 1 {
		t.Errorf("moved-aside dead letters: %v, want one state/p.<time>.old/p.jsonl", olds)
	}
	if _, err := os.Stat(e.path("state/dlq/p.jsonl")); err == nil {
		t.Errorf("state/dlq/p.jsonl still there after the move aside")
	}
	d.stop()

	// Same config again: nothing more moves, the loss stays on record.
	d = e.start()
	r = d.waitSettled(30 * time.Second)
	if n, _ := filepath.Glob(e.path("state/state/p.*.old")); len(n) != 1 || r.Lossless {
		t.Errorf("restart on the same url: aside dirs %v, lossless %v; want still one, false (losses.jsonl)", n, r.Lossless)
	}
	d.stop()
	if b, _ := os.ReadFile(e.path("state/losses.jsonl")); !strings.Contains(string(b), "while tailfeed was stopped") {
		t.Errorf("losses.jsonl has no entry for the dead letters given up: %q", b)
	}
}

// rev28Reload writes text as the config and POSTs /admin/reload (200).
func rev28Reload(t *testing.T, e *env, d *daemon, text string) {
	t.Helper()
	e.tmpl = text
	reconfig(t, e, d, text)
	if code, _, body := request(t, d, "POST", "/admin/reload", ctToken, nil); code != 200 {
		t.Fatalf("reload: %d %s", code, body)
	}
}

// A processor a reload removed and a later reload added back with another
// target takes none of the old target's state: its dead letters (counted
// as a removed processor's meanwhile) are moved aside and given up, as for
// a target changed in place (DESIGN §12) — the stamp tells the two targets
// apart where the old config no longer names the processor.
func TestRev28ReaddedWithOtherTargetAtReloadMovesStateAside(t *testing.T) {
	t.Parallel()
	e := newEnv(t, rev28Cfg("http://127.0.0.1:1/in"))
	appendTo(t, e.path("in.log"), "a\nb\n")
	d := e.start()
	defer d.stop()
	d.waitFor("2 dead letters", 30*time.Second, func(r *report) bool { return r.feed(t, "app").DeadLettered == 2 })
	d.waitSettled(30 * time.Second)
	without := strings.Replace(rev28Cfg("x"), "  - {name: p,", "  # - {name: p,", 1)
	rev28Reload(t, e, d, without)
	r := d.waitSettled(30 * time.Second)
	if f := r.feed(t, "app"); f.DeadLettered != 2 {
		t.Fatalf("p removed: deadLettered %d, want 2 (its ledger still counts)", f.DeadLettered)
	}
	rev28Reload(t, e, d, rev28Cfg("http://127.0.0.1:2/other"))
	r = d.waitSettled(30 * time.Second)
	f := r.feed(t, "app")
	if f.DeadLettered != 0 || f.Released != 2 || r.Lossless {
		t.Errorf("p added back with another url: deadLettered %d released %d lossless %v, want 0, 2, false", f.DeadLettered, f.Released, r.Lossless)
	}
	if olds, _ := filepath.Glob(e.path("state/state/p.*.old/p.jsonl")); len(olds) != 1 {
		t.Errorf("moved-aside dead letters: %v, want one", olds)
	}
}
