package config

import (
	"strings"
	"testing"
)

// A config error quoting a bad webhook URL masks its password (DESIGN §11:
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
		if strings.Contains(msg, "hunter22") || !strings.Contains(msg, "t.yaml:8:") || !strings.Contains(msg, "user:***@") {
			t.Errorf("url %s: error %q, want line 8 naming user:***@ without the password", url, msg)
		}
	}
}
