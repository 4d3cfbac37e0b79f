package config_test

import (
	"strings"
	"testing"

	"tailfeed/config"
)

// status.tls and a processor's tls: paths relative to the config file,
// FILE:LINE errors for an unknown key, a certFile without its keyFile,
// and a clientCAFile without a certificate (DESIGN §12, §11).
func TestTLSKeys(t *testing.T) {
	doc := func(statusTLS, procTLS string) string {
		return lines(
			"status:",
			"  tls: "+statusTLS,
			"feeds:",
			"  - name: app",
			"    path: /var/log/app.log",
			"processors:",
			"  - name: p",
			"    feed: app",
			"    type: webhook",
			"    url: https://example.com/in",
			"    tls: "+procTLS,
		)
	}
	cfg, err := config.Parse([]byte(doc("{certFile: s.crt, keyFile: s.key, clientCAFile: ca.crt}",
		"{caFile: ca.crt, certFile: c.crt, keyFile: c.key, insecureSkipVerify: true}")), "/etc/tailfeed/t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Status.TLS; got != (config.ServerTLS{CertFile: "/etc/tailfeed/s.crt", KeyFile: "/etc/tailfeed/s.key", ClientCAFile: "/etc/tailfeed/ca.crt", Line: 2}) {
		t.Errorf("status.tls = %+v", got)
	}
	if got := cfg.Processors[0].TLS; got != (config.ClientTLS{CAFile: "/etc/tailfeed/ca.crt", CertFile: "/etc/tailfeed/c.crt", KeyFile: "/etc/tailfeed/c.key", InsecureSkipVerify: true, Line: 11}) {
		t.Errorf("processors[0].tls = %+v", got)
	}
	for _, c := range []struct{ status, proc, want string }{
		{"{certFile: s.crt}", "{}", "t.yaml:2: status.tls: HTTPS needs both certFile and keyFile"},
		{"{clientCAFile: ca.crt}", "{}", "t.yaml:2: status.tls: HTTPS needs both certFile and keyFile"},
		{"{certFile: s.crt, keyFile: s.key, caFile: x}", "{}", `t.yaml:2: unknown key "caFile" in status.tls`},
		{"{certFile: s.crt, keyFile: s.key}", "{certFile: c.crt}", "t.yaml:11: processors[0].tls: a client certificate needs both certFile and keyFile"},
		{"{certFile: s.crt, keyFile: s.key}", "{insecureSkipVerify: maybe}", "t.yaml:11: processors[0].tls.insecureSkipVerify"},
		{"{certFile: s.crt, keyFile: s.key}", "{clientCAFile: x}", `t.yaml:11: unknown key "clientCAFile" in processors[0].tls`},
		{`{certFile: "", keyFile: s.key}`, "{}", "t.yaml:2: status.tls.certFile: must not be empty"},
	} {
		_, err := config.Parse([]byte(doc(c.status, c.proc)), "/etc/tailfeed/t.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("status.tls %s, tls %s: %v; want %q", c.status, c.proc, err, c.want)
		}
	}
}
