package e2e

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// exampleListen is the status address config.example.yaml documents.
const exampleListen = "127.0.0.1:8470"

// TestMakeRunPath runs the binary on a copy of config.example.yaml, as `make
// run` does (relative paths resolve against the copy): a line appended to
// var/demo/app.log reaches var/demo/out.log, /healthz answers 200, and
// `tailfeed status --addr` exits 0.
func TestMakeRunPath(t *testing.T) {
	example, err := os.ReadFile(filepath.Join("..", "config.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(example, []byte(exampleListen)) {
		t.Fatalf("config.example.yaml does not listen on %s", exampleListen)
	}
	e := newEnv(t, strings.Replace(string(example), exampleListen, addrPlaceholder, 1))
	if _, stderr, code := cli(t, "validate", "--config", e.cfgWith(freeAddr(t))); code != 0 {
		t.Fatalf("validate config.example.yaml: exit %d: %s", code, stderr)
	}
	// What `make run` does first.
	demo := e.path("var/demo")
	if err := os.MkdirAll(demo, 0o755); err != nil {
		t.Fatal(err)
	}
	appLog := filepath.Join(demo, "app.log")
	os.WriteFile(appLog, nil, 0o644)

	d := e.start()
	f, err := os.OpenFile(appLog, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("hello\n")
	f.Close()
	outLog := filepath.Join(demo, "out.log")
	waitUntil(t, "hello in var/demo/out.log", 30*time.Second, func() bool {
		b, _ := os.ReadFile(outLog)
		return string(b) == "hello\n"
	})

	if code, body, err := d.get("/healthz"); err != nil || code != http.StatusOK {
		t.Errorf("/healthz: %d %s %v, want 200", code, body, err)
	}
	for _, addr := range []string{d.addr, "http://" + d.addr} {
		out, stderr, code := cli(t, "status", "--addr", addr, "--wait-settled", "30s")
		if code != 0 {
			t.Errorf("status --addr %s: exit %d, want 0 (settled, lossless)\n%s%s", addr, code, out, stderr)
		}
	}
	if _, err := os.Stat(e.path("var/state/feeds/app.ptr")); err != nil {
		t.Errorf("the pointer is not under the config's dataDir ./var/state: %v", err)
	}
	d.stop()
}
