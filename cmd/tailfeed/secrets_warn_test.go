package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"tailfeed/config"
)

// A literal secret in the config file gets a WARN at start naming its key
// (DESIGN §11: "a literal secret is accepted with a WARN at start naming
// the key"), never its value: a webhook URL's userinfo and a sensitive
// header, a plain header not; in a file every local user may read the WARN
// says so (chmod o-r it); status.token likewise.
func TestRunWarnsLiteralSecrets(t *testing.T) {
	for _, mode := range []os.FileMode{0o644, 0o640, 0o600} {
		dir := t.TempDir()
		path := filepath.Join(dir, "tailfeed.yaml")
		os.WriteFile(path, []byte(`status: {token: s3cr3ttok}
feeds:
  - {name: app, path: /var/log/app.log}
processors:
  - name: hook
    feed: app
    type: webhook
    url: "https://svc:pa55word@hooks.example.com/in"
    headers: {X-Api-Key: k3yvalue, X-Source: tailfeed}
`), mode)
		os.Chmod(path, mode)
		cfg, err := config.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		securityWarnings(cfg, path, literalToken(cfg), hclog.New(&hclog.LoggerOptions{Output: &buf}))
		log := buf.String()
		if strings.Contains(log, "pa55word") || strings.Contains(log, "k3yvalue") || strings.Contains(log, "s3cr3ttok") {
			t.Fatalf("the WARN shows a secret:\n%s", log)
		}
		named := strings.Count(log, "[WARN]") == 3 && strings.Contains(log, "key=\"processors[0].url (its userinfo)\"") &&
			strings.Contains(log, "key=processors[0].headers.X-Api-Key") && strings.Contains(log, "key=status.token")
		if !named || strings.Contains(log, "X-Source") {
			t.Errorf("mode %04o: log\n%s\nwants one WARN each naming status.token, processors[0].url and headers.X-Api-Key, nothing else", mode, log)
		}
		if readable := strings.Count(log, "readable by every local user") == 3; readable != (mode == 0o644) {
			t.Errorf("mode %04o: log\n%s\nwants the WARNs to say the file is readable by every local user: %v", mode, log, mode == 0o644)
		}
	}
}

// A secret that comes from a ${VAR} reference is not a literal secret of
// the file: no WARN for it, whatever the file's mode; nor does a
// status.token written as ${TF_TOKEN} count as a token in the file.
func TestRunNoWarnForEnvSecrets(t *testing.T) {
	t.Setenv("TF_TEST_PASS", "pa55word")
	t.Setenv("TF_TEST_KEY", "k3yvalue")
	t.Setenv("TF_TEST_TOKEN", "t0ken")
	dir := t.TempDir()
	path := filepath.Join(dir, "tailfeed.yaml")
	os.WriteFile(path, []byte(`status: {token: "${TF_TEST_TOKEN}"}
feeds:
  - {name: app, path: /var/log/app.log}
processors:
  - name: hook
    feed: app
    type: webhook
    url: "https://svc:${TF_TEST_PASS}@hooks.example.com/in"
    headers: {X-Api-Key: "${TF_TEST_KEY}", Authorization: "Bearer abc"}
`), 0o644)
	os.Chmod(path, 0o644)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Status.Token != "t0ken" || literalToken(cfg) {
		t.Fatalf("token %q literal %v: a ${VAR} token is not in the file", cfg.Status.Token, literalToken(cfg))
	}
	var buf bytes.Buffer
	securityWarnings(cfg, path, literalToken(cfg), hclog.New(&hclog.LoggerOptions{Output: &buf}))
	log := buf.String()
	if strings.Contains(log, "processors[0].url") || strings.Contains(log, "X-Api-Key") || strings.Contains(log, "status.token") {
		t.Errorf("WARN for a secret from the environment:\n%s", log)
	}
	if !strings.Contains(log, "key=processors[0].headers.Authorization") {
		t.Errorf("no WARN for the literal Authorization header:\n%s", log)
	}
}

// run's literal-secret WARNs are the webhook's: a nats url's userinfo is
// the nats sink's to warn of, as it is built (review 44b F2: it was
// warned twice).
func TestRunLiteralSecretsAreTheWebhooks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tailfeed.yaml")
	os.WriteFile(path, []byte(`feeds:
  - {name: app, path: /var/log/app.log}
processors:
  - {name: nt, feed: app, type: nats, url: "nats://user:pa55@127.0.0.1:4222", stream: S, subject: "s.{instance}"}
`), 0o600)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if keys := literalSecrets(cfg); len(keys) != 0 {
		t.Errorf("run warns of %v too; the nats sink warns of its url", keys)
	}
}
