package nats

import (
	"os"
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

// A secret the file holds literally (a token, a url's userinfo) is named
// in Settings.Literal for the WARN at start; one from a ${VAR} reference is
// not (DESIGN §11 Secrets).
func TestNatsLiteralSecrets(t *testing.T) {
	t.Setenv("TF_NATS_TOK", "tok")
	t.Setenv("TF_NATS_URL", "nats://u:pw@h:1")
	base := lines("feeds:", "  - {name: app, path: /a}", "processors:")
	for _, c := range []struct{ keys, want string }{
		{"url: 'nats://h:1', token: s3cret", "processors[0].token"},
		{"url: 'nats://h:1', token: '${TF_NATS_TOK}'", ""},
		{"url: 'nats://u:pw@h:1'", "processors[0].url"},
		{"url: 'nats://h0:1,nats://T0KEN@h:1'", "processors[0].url"},
		{"url: 'nats://u:${TF_NATS_TOK}@h:1'", ""},
		{"url: '${TF_NATS_URL}'", ""},
	} {
		cfg := mustParse(t, base+lines("  - {name: n, feed: app, type: nats, stream: S, subject: s, "+c.keys+"}"), "c.yaml")
		if got := strings.Join(cfg.Processors[0].Settings.(*Settings).Literal, ","); got != c.want {
			t.Errorf("%s: literal %q, want %q", c.keys, got, c.want)
		}
	}
}

// credsFile is checked at start (sink.Type.Files): a missing one is named
// with its line, for a config error like a missing tls file.
func TestNatsCredsFileChecked(t *testing.T) {
	dir := t.TempDir()
	src := lines("feeds:", "  - {name: app, path: /a}", "processors:", "  - name: n", "    feed: app", "    type: nats",
		"    url: nats://h:1", "    stream: S", "    subject: s", "    credsFile: "+dir+"/u.creds")
	cfg := mustParse(t, src, "c.yaml")
	if key, line, err := files(cfg.Processors[0]); key != "credsFile" || line != 10 || err == nil {
		t.Errorf("missing credsFile: %q %d %v", key, line, err)
	}
	if err := os.WriteFile(dir+"/u.creds", []byte("creds"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := files(cfg.Processors[0]); err != nil {
		t.Errorf("credsFile present: %v", err)
	}
}

// A created stream's subject takes the sink's subjects: variable tokens
// are wildcards, except a middle {instance} or {feed} holding a '.', which
// is written in (a '*' is one token).
func TestStreamSubject(t *testing.T) {
	for _, c := range []struct{ subject, instance, want string }{
		{"logs.{instance}.{feed}", "host1", "logs.*.>"},
		{"logs.{instance}.{feed}.lines", "host1", "logs.*.*.lines"},
		{"logs.{instance}.{feed}.lines", "web.example", "logs.web.example.*.lines"},
		{"logs.{instance}-{epoch}.{path}.x", "web.example", "logs.web.*.*.x"},
		{"logs.{feed}.{instance}", "web.example", "logs.*.>"},
		{"logs.fixed", "web.example", "logs.fixed"},
	} {
		s := &Sink{cfg: Config{Subject: c.subject, Instance: c.instance, Feed: "app"}}
		if got := s.streamSubject(); got != c.want {
			t.Errorf("%s with instance %s: %q, want %q", c.subject, c.instance, got, c.want)
		}
		subj := Subject(c.subject, c.instance, "app", "/var/log/a.log", 7)
		if !subjectMatch(s.streamSubject(), subj) {
			t.Errorf("%q does not take %q", s.streamSubject(), subj)
		}
	}
}

// subjectMatch reports whether NATS subject filter f takes subject s.
func subjectMatch(f, s string) bool {
	ft, st := strings.Split(f, "."), strings.Split(s, ".")
	for i, t := range ft {
		if t == ">" {
			return len(st) > i
		}
		if i >= len(st) || t != "*" && t != st[i] {
			return false
		}
	}
	return len(ft) == len(st)
}
