package config

import (
	"os"
	"strings"
	"testing"
)

// TestInstance: `instance` names this sidecar in engine-side identities
// (DESIGN §11): the host name by default, [A-Za-z0-9._-]+ when given.
func TestInstance(t *testing.T) {
	base := lines("feeds:", "  - {name: app, path: /a}", "processors:", "  - {name: d, feed: app, type: discard}")
	cfg := mustParse(t, base, "c.yaml")
	host, _ := os.Hostname()
	if cfg.Instance == "" || (validName.MatchString(host) && cfg.Instance != host) {
		t.Errorf("default instance %q, host %q", cfg.Instance, host)
	}
	if !validName.MatchString(cfg.Instance) {
		t.Errorf("default instance %q is not a valid name", cfg.Instance)
	}
	if cfg := mustParse(t, "instance: web-01.eu\n"+base, "c.yaml"); cfg.Instance != "web-01.eu" {
		t.Errorf("instance %q, want web-01.eu", cfg.Instance)
	}
	for _, bad := range []string{`"web 01"`, `"a/b"`, `""`} {
		_, err := Parse([]byte("instance: "+bad+"\n"+base), "c.yaml")
		if err == nil || !strings.Contains(err.Error(), "c.yaml:1: instance:") {
			t.Errorf("instance %s: err %v, want c.yaml:1: instance: …", bad, err)
		}
	}
}
