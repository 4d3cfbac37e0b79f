package e2e

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// DESIGN §12 "Signals"/"Deployment" (SIGHUP reloads, never kills; the
// systemd unit's ExecReload sends SIGHUP): the daemon tells a service
// manager through $NOTIFY_SOCKET that it is ready (READY=1, once SIGHUP is
// caught and the status listener serves), that a reload runs (RELOADING=1
// with MONOTONIC_USEC, then READY=1) and that it stops (STOPPING=1). A
// SIGHUP sent the moment READY=1 arrives reloads; SIGTERM then exits 0.
func TestNotifySocketReadyReloadStop(t *testing.T) {
	e := newEnv(t, `
dataDir: ./state
status: {listen: "{{ADDR}}"}
feeds:
  - {name: app, path: ./app.log}
processors:
  - {name: out, feed: app, type: file, path: ./out.log}
`)
	if err := os.WriteFile(e.path("app.log"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sock, read := notifySocket(t)
	next := func(what string) string {
		t.Helper()
		got, ok := read(30 * time.Second)
		if !ok {
			t.Fatalf("waiting for %s on $NOTIFY_SOCKET: nothing", what)
		}
		return got
	}
	d := e.spawnIn(e.dir, "NOTIFY_SOCKET="+sock)
	if got := next("READY=1"); got != "READY=1" {
		t.Fatalf("first notification %q, want READY=1", got)
	}
	// The moment it said ready: a SIGHUP reloads, the status answers.
	d.signal(syscall.SIGHUP)
	if got := next("RELOADING=1"); !strings.HasPrefix(got, "RELOADING=1\nMONOTONIC_USEC=") {
		t.Fatalf("after SIGHUP: %q, want RELOADING=1 and MONOTONIC_USEC", got)
	}
	if got := next("READY=1 after the reload"); got != "READY=1" {
		t.Fatalf("after the reload: %q, want READY=1", got)
	}
	if d.exited() {
		t.Fatalf("the daemon exited after a SIGHUP sent at READY=1:\n%s", d.log())
	}
	d.waitSettled(30 * time.Second)
	if c := configOf(t, d); c.Reloads != 1 || c.LastError != nil {
		t.Errorf("config after one SIGHUP: %+v, want reloads 1 and no error", c)
	}
	d.signal(syscall.SIGTERM)
	if got := next("STOPPING=1"); got != "STOPPING=1" {
		t.Fatalf("after SIGTERM: %q, want STOPPING=1", got)
	}
	if code := d.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM, want 0:\n%s", code, d.log())
	}
}

// notifySocket listens on a unix datagram socket for sd_notify messages
// (its path goes in $NOTIFY_SOCKET); read returns the next one within a
// bound (false: none came).
func notifySocket(t *testing.T) (string, func(within time.Duration) (string, bool)) {
	sock := filepath.Join(t.TempDir(), "notify.sock")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return sock, func(within time.Duration) (string, bool) {
		c.SetReadDeadline(time.Now().Add(within))
		buf := make([]byte, 4096)
		n, err := c.Read(buf)
		if err != nil {
			return "", false
		}
		return string(buf[:n]), true
	}
}
