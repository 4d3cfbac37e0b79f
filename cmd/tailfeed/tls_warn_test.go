package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"tailfeed/config"
)

// `run` warns when status.listen is not loopback and status.tls is not
// set (DESIGN §12 "Secure by default": the API must not leave the host in
// clear text), even with a token; not on loopback, not with TLS.
func TestRunWarnsClearTextListen(t *testing.T) {
	for _, c := range []struct {
		listen string
		tls    bool
		warn   bool
	}{
		{"0.0.0.0:8470", false, true},
		{"10.1.2.3:8470", false, true},
		{"0.0.0.0:8470", true, false},
		{"127.0.0.1:8470", false, false},
		{"localhost:8470", false, false},
	} {
		cfg := config.DefaultConfig()
		cfg.Status.Listen, cfg.Status.Token = c.listen, "t0ken"
		if c.tls {
			cfg.Status.TLS = config.ServerTLS{CertFile: "/x.crt", KeyFile: "/x.key"}
		}
		var buf bytes.Buffer
		securityWarnings(cfg, "/nonexistent.yaml", false, hclog.New(&hclog.LoggerOptions{Output: &buf}))
		got := strings.Contains(buf.String(), "[WARN]") && strings.Contains(buf.String(), "status.tls is not set")
		if got != c.warn {
			t.Errorf("listen %s, tls %v: warned %v, want %v; log:\n%s", c.listen, c.tls, got, c.warn, buf.String())
		}
	}
}
