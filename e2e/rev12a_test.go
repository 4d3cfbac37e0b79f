package e2e

// Finding of the twelfth session's review 12a against the built binary
// (sd_notify), fixed that session (run.go notifier).

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRev12ADReadyAfterStopping — sd_notify(3) / the change (README): "`run`
// tells the service manager READY=1 once it serves …, RELOADING=1 … then
// READY=1 around a SIGHUP reload, and STOPPING=1 at a stop"; DESIGN §12
// "Signals": SIGHUP reloads the config file, it never kills.
//
// Scenario: a daemon under $NOTIFY_SOCKET whose stop takes a while (a pull
// subscriber holds lines no client takes: the drain waits
// shutdownTimeoutMillis, 3 s). SIGTERM: STOPPING=1. A SIGHUP 200 ms later
// (`systemctl reload` racing a stop, or logrotate's postrotate `kill -HUP`).
//
// Expected: nothing after STOPPING=1 says the service is ready or reloading
// (no reload runs: Reload refuses once the stop began). Observed: the SIGHUP
// goroutine still sends RELOADING=1 and then READY=1 after STOPPING=1 — the
// daemon tells the service manager it is ready while it is shutting down
// (systemd leaves the deactivating state only by the process's exit, but a
// notify-reload service in RELOADING after STOPPING, and READY=1 after
// STOPPING=1, are states the protocol does not expect). 3 of 3 runs.
func TestRev12ADReadyAfterStopping(t *testing.T) {
	e := newEnv(t, `
dataDir: ./state
shutdownTimeoutMillis: 3000
status: {listen: "{{ADDR}}"}
feeds:
  - {name: app, path: ./app.log, pollIntervalMillis: 20}
processors:
  - {name: out, feed: app, type: file, path: ./out.log}
  - {name: consumer, feed: app, type: pull}
`)
	if err := os.WriteFile(e.path("app.log"), []byte("a\nb\nc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sock, next := notifySocket(t)
	d := e.spawnIn(e.dir, "NOTIFY_SOCKET="+sock)
	if got, _ := next(30 * time.Second); got != "READY=1" {
		t.Fatalf("first notification %q, want READY=1", got)
	}
	d.waitFor("consumer given the 3 lines", 30*time.Second, func(r *report) bool {
		return r.feed(t, "app").sub(t, "consumer").Position == 3
	})
	d.signal(syscall.SIGTERM)
	if got, _ := next(30 * time.Second); got != "STOPPING=1" {
		t.Fatalf("after SIGTERM: %q, want STOPPING=1", got)
	}
	time.Sleep(200 * time.Millisecond)
	if d.exited() {
		t.Fatalf("the daemon exited before the SIGHUP; the stop must take shutdownTimeoutMillis:\n%s", d.log())
	}
	d.signal(syscall.SIGHUP)
	var after []string
	for {
		got, ok := next(10 * time.Second)
		if !ok {
			break
		}
		after = append(after, got)
	}
	code := d.wait(30 * time.Second)
	t.Logf("exit %d; notifications after STOPPING=1: %q", code, after)
	for _, m := range after {
		if strings.Contains(m, "READY=1") || strings.Contains(m, "RELOADING=1") {
			t.Errorf("after STOPPING=1 the daemon sent %q (all after it: %q); want no READY=1 nor RELOADING=1 once it stops", m, after)
		}
	}
}
