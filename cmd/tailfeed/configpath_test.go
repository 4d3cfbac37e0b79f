package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const minimalConfig = "feeds: [{name: app, path: ./app.log}]\nprocessors: [{name: d, feed: app, type: discard}]\n"

// TestConfigLookupOrder: without --config, validate reads $TAILFEED_CONFIG,
// else ./tailfeed.yaml, else /etc/tailfeed/tailfeed.yaml, and says where it
// looked when none exists; --config wins over all.
func TestConfigLookupOrder(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("TAILFEED_CONFIG", "")
	validate := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := mainWith(append([]string{"validate"}, args...), &out, &errb)
		return code, out.String(), errb.String()
	}
	if _, err := os.Stat("/etc/tailfeed/tailfeed.yaml"); err != nil {
		code, _, stderr := validate()
		if code != 2 || !strings.Contains(stderr, "TAILFEED_CONFIG not set") || !strings.Contains(stderr, "./tailfeed.yaml") ||
			!strings.Contains(stderr, "/etc/tailfeed/tailfeed.yaml") {
			t.Fatalf("no config anywhere: exit %d, stderr %q", code, stderr)
		}
	}
	os.WriteFile(filepath.Join(dir, "tailfeed.yaml"), []byte(minimalConfig), 0o600)
	if code, out, stderr := validate(); code != 0 || !strings.Contains(out, filepath.Join(dir, "tailfeed.yaml")+": ok") {
		t.Fatalf("./tailfeed.yaml: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	other := filepath.Join(dir, "other.yaml")
	os.WriteFile(other, []byte(strings.Replace(minimalConfig, "name: d", "name: e", 1)), 0o600)
	t.Setenv("TAILFEED_CONFIG", other)
	if code, out, _ := validate(); code != 0 || !strings.Contains(out, other+": ok") {
		t.Fatalf("$TAILFEED_CONFIG: exit %d, stdout %q", code, out)
	}
	t.Setenv("TAILFEED_CONFIG", filepath.Join(dir, "missing.yaml"))
	if code, _, stderr := validate(); code != 2 || !strings.Contains(stderr, "TAILFEED_CONFIG names "+filepath.Join(dir, "missing.yaml")) {
		t.Fatalf("$TAILFEED_CONFIG missing: exit %d, stderr %q (it is never passed over)", code, stderr)
	}
	if code, out, _ := validate("--config", other); code != 0 || !strings.Contains(out, other+": ok") {
		t.Fatalf("--config: exit %d, stdout %q", code, out)
	}
}
