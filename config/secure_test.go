package config_test

import (
	"strings"
	"testing"

	"tailfeed/config"
)

// A config error quoting a bad webhook URL masks its userinfo (DESIGN §11:
// no secret in a log; run prints config errors to stderr).
func TestBadURLErrorHidesPassword(t *testing.T) {
	for _, url := range []string{
		"ftp://user:hunter22@host/x",      // parses, wrong scheme
		"http://user:hunter22@host:xx/in", // does not parse
	} {
		errs := mustFail(t, lines(
			"feeds:",
			"  - name: app",
			"    path: /var/log/app.log",
			"processors:",
			"  - name: p",
			"    feed: app",
			"    type: webhook",
			"    url: "+url,
		))
		msg := errs.Error()
		if strings.Contains(msg, "hunter22") || !strings.Contains(msg, "t.yaml:8:") || !strings.Contains(msg, "://***@host") {
			t.Errorf("url %s: error %q, want line 8 naming ://***@host without the password", url, msg)
		}
	}
}

// A file sink's mode is read as chmod reads it, quoted or not; anything
// else is a FILE:LINE error.
func TestFileSinkMode(t *testing.T) {
	doc := func(mode string) string {
		return lines(
			"feeds:",
			"  - name: app",
			"    path: /var/log/app.log",
			"processors:",
			"  - name: p",
			"    feed: app",
			"    type: file",
			"    path: /out/p.log",
			"    mode: "+mode,
		)
	}
	for text, want := range map[string]uint32{`"0640"`: 0o640, "0640": 0o640, "600": 0o600, "0o644": 0o644, `'0660'`: 0o660, "0777": 0o777} {
		cfg, err := config.Parse([]byte(doc(text)), "/etc/tailfeed/t.yaml")
		if err != nil {
			t.Errorf("mode: %s: %v", text, err)
			continue
		}
		if got := cfg.Processors[0].Mode; got != want {
			t.Errorf("mode: %s = %04o, want %04o", text, got, want)
		}
	}
	for text, msg := range map[string]string{
		`"rw-r-----"`: `processors[0].mode: must be an octal file mode like "0640", got string "rw-r-----"`,
		"0648":        `processors[0].mode: must be an octal file mode like "0640", got number 0648`,
		"4755":        `processors[0].mode: 4755 has bits beyond 0777`,
		"0440":        `processors[0].mode: 0440 does not let the owner read and write`,
		"true":        `processors[0].mode: must be an octal file mode like "0640", got boolean true`,
		"[1]":         `processors[0].mode: must be an octal file mode like "0640", got a list`,
		`"-640"`:      `processors[0].mode: must be an octal file mode`,
		`""`:          `processors[0].mode: must be an octal file mode`,
	} {
		errs := mustFail(t, doc(text))
		if got := errs.Error(); !strings.Contains(got, "t.yaml:9: "+msg) {
			t.Errorf("mode: %s: error %q, want line 9: %s", text, got, msg)
		}
	}
}

func TestMaxConnections(t *testing.T) {
	base := lines("feeds:", "  - {name: a, path: /a}", "processors:", "  - {name: p, feed: a, type: discard}")
	cfg, err := config.Parse([]byte("status: {maxConnections: 8}\n"+base), "t.yaml")
	if err != nil || cfg.Status.MaxConnections != 8 {
		t.Fatalf("maxConnections: 8 → %+v, %v", cfg, err)
	}
	errs := mustFail(t, "status: {maxConnections: 0}\n"+base)
	if got := errs.Error(); !strings.Contains(got, "t.yaml:1: status.maxConnections: must be positive") {
		t.Errorf("maxConnections: 0 → %q", got)
	}
}
