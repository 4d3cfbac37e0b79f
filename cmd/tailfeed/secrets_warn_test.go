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

// A literal secret in a config file every local user may read gets a WARN
// at start naming its key (DESIGN §11), never its value: a webhook URL's
// userinfo and a sensitive header; a plain header does not, nor does a
// private file.
func TestRunWarnsReadableLiteralSecrets(t *testing.T) {
	for _, mode := range []os.FileMode{0o644, 0o640} {
		dir := t.TempDir()
		path := filepath.Join(dir, "tailfeed.yaml")
		os.WriteFile(path, []byte(`feeds:
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
		securityWarnings(cfg, path, false, hclog.New(&hclog.LoggerOptions{Output: &buf}))
		log := buf.String()
		if strings.Contains(log, "pa55word") || strings.Contains(log, "k3yvalue") {
			t.Fatalf("the WARN shows a secret:\n%s", log)
		}
		named := strings.Contains(log, "key=\"processors[0].url (its userinfo)\"") && strings.Contains(log, "key=processors[0].headers.X-Api-Key")
		if mode == 0o644 && (!named || strings.Contains(log, "X-Source")) {
			t.Errorf("mode 0644: log\n%s\nwants a WARN naming processors[0].url and headers.X-Api-Key only", log)
		}
		if mode == 0o640 && strings.Contains(log, "holds a secret") {
			t.Errorf("mode 0640: log\n%s\nwants no WARN", log)
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
