package nats

import (
	"strings"
	"testing"

	"tailfeed/config"
	"tailfeed/internal/testutil"
)

var lines = testutil.Lines

// mustParse parses src, failing the test on an error.
func mustParse(t *testing.T, src, file string) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(src), file)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return cfg
}

// The nats keys (DESIGN §11): decoded into the processor's Settings, with FILE:LINE
// errors for what cannot work.
func TestNatsKeys(t *testing.T) {
	base := lines("feeds:", "  - {name: app, path: /a}", "processors:")
	cfg := mustParse(t, base+lines(
		"  - name: n",
		"    feed: app",
		"    type: nats",
		"    url: tls://nats.example:4222",
		"    stream: LOGS",
		"    subject: logs.{instance}.{feed}",
		"    createStream: true",
		"    exactlyOnce: true",
		"    token: tok",
		"    tls: {caFile: /etc/ca.pem, certFile: c.pem, keyFile: /k.pem, insecureSkipVerify: false}"), "/etc/t/c.yaml")
	n := cfg.Processors[0].Settings.(*Settings)
	if n.Stream != "LOGS" || n.Subject != "logs.{instance}.{feed}" || !n.CreateStream || n.Token != "tok" ||
		n.TLS == nil || n.TLS.CAFile != "/etc/ca.pem" || n.TLS.CertFile != "/etc/t/c.pem" {
		t.Fatalf("decoded %+v tls %+v", n, n.TLS)
	}
	proc := func(ls ...string) string {
		return base + lines(append([]string{"  - name: n", "    feed: app", "    type: nats"}, ls...)...)
	}
	ok := []string{"    url: nats://127.0.0.1:4222", "    stream: LOGS", "    subject: logs.{instance}"}
	for _, c := range []struct {
		src, want string
	}{
		{proc(), "c.yaml:4: processors[0]: a nats processor needs url"},
		{proc(ok[0], ok[1]), "c.yaml:4: processors[0]: a nats processor needs subject"},
		{proc(ok[0], ok[2]), "c.yaml:4: processors[0]: a nats processor needs stream"},
		{proc("    url: http://x:1", ok[1], ok[2]), "c.yaml:7: processors[0].url: \"http://x:1\" must be a nats://"},
		{proc(ok[0], "    stream: a.b", ok[2]), "c.yaml:8: processors[0].stream: \"a.b\" is not a JetStream stream name"},
		{proc(ok[0], ok[1], "    subject: logs.*"), "c.yaml:9: processors[0].subject: \"logs.*\" is not a publish subject"},
		{proc(ok[0], ok[1], "    subject: logs..x"), "has an empty token"},
		{proc(ok[0], ok[1], "    subject: logs.{host}"), "holds unknown variable {host}"},
		{proc(ok[0], ok[1], "    subject: logs.{feed}", "    exactlyOnce: true"), "c.yaml:9: processors[0].subject: exactlyOnce needs a subject holding {instance}"},
		{proc(ok[0], ok[1], ok[2], "    token: t", "    credsFile: /c"), "credsFile and token exclude each other"},
		{proc(ok[0], ok[1], ok[2], "    tls: {certFile: /c}"), "a client certificate needs both certFile and keyFile"},
		{proc(ok[0], ok[1], ok[2], "    tls: {ca: /c}"), `c.yaml:10: unknown key "ca" in processors[0].tls`},
		{proc(ok...) + lines("  - {name: m, feed: app, type: nats, url: 'nats://h:1', stream: LOGS, subject: x}"),
			"c.yaml:10: processors[1].stream: nats processor \"n\" also publishes feed \"app\" into stream \"LOGS\" (line 8)"},
	} {
		_, err := config.Parse([]byte(c.src), "c.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s\nerr %v\nwant %s", c.src, err, c.want)
		}
	}
	// Two nats processors on different streams, or exactlyOnce with {instance}: fine.
	mustParse(t, proc(append(ok, "    exactlyOnce: true")...)+lines("  - {name: m, feed: app, type: nats, url: 'nats://h:1', stream: OTHER, subject: x}"), "c.yaml")
}
