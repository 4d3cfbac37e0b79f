package config_test

import (
	"os"
	"strings"
	"testing"

	"tailfeed/config"
)

// TestInstance: `instance` names this sidecar in engine-side identities
// (DESIGN §11): the host name by default, [A-Za-z0-9._-]+ when given.
func TestInstance(t *testing.T) {
	base := lines("feeds:", "  - {name: app, path: /a}", "processors:", "  - {name: d, feed: app, type: discard}")
	cfg := mustParse(t, base, "c.yaml")
	host, _ := os.Hostname()
	if cfg.Instance == "" || (config.ValidName.MatchString(host) && cfg.Instance != host) {
		t.Errorf("default instance %q, host %q", cfg.Instance, host)
	}
	if !config.ValidName.MatchString(cfg.Instance) {
		t.Errorf("default instance %q is not a valid name", cfg.Instance)
	}
	if cfg := mustParse(t, "instance: web-01.eu\n"+base, "c.yaml"); cfg.Instance != "web-01.eu" {
		t.Errorf("instance %q, want web-01.eu", cfg.Instance)
	}
	for _, bad := range []string{`"web 01"`, `"a/b"`, `""`} {
		_, err := config.Parse([]byte("instance: "+bad+"\n"+base), "c.yaml")
		if err == nil || !strings.Contains(err.Error(), "c.yaml:1: instance:") {
			t.Errorf("instance %s: err %v, want c.yaml:1: instance: …", bad, err)
		}
	}
}
