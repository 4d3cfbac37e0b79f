package e2e

// Helpers of the config tests: literal secrets, two file sinks on one
// file, one-feed configs started for their log.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tailfeed/config"
	"tailfeed/internal/testutil"
	"tailfeed/sink/postgres"
)

// wantPasswordLiteral fails t for each postgres dsn (as written in a config file) whose password the parsed settings do not take as literal.
func wantPasswordLiteral(t *testing.T, dsns ...string) {
	t.Helper()
	head := testutil.Lines("feeds:", "  - {name: app, path: /a}", "processors:")
	for _, dsn := range dsns {
		cfg, err := config.Parse([]byte(head+testutil.Lines("  - {name: pg, feed: app, type: postgres, table: t, dsn: "+dsn+"}")), "c.yaml")
		if err != nil {
			t.Fatalf("dsn %s: %v", dsn, err)
		}
		if !cfg.Processors[0].Settings.(*postgres.Settings).PasswordLiteral {
			t.Errorf("dsn %s: the file writes the password hunter22 itself; PasswordLiteral false (no literal-secret WARN at start)", dsn)
		}
	}
}

// twoFileSinksEnv is an env on twoFileSinksConfig(a, b).
func twoFileSinksEnv(t *testing.T, a, b string) *env { return newEnv(t, twoFileSinksConfig(a, b)) }

// twoFileSinksConfig is a config whose feed app goes to two file sinks, a writing path a and b path b.
func twoFileSinksConfig(a, b string) string {
	return strings.NewReplacer("{{A}}", a, "{{B}}", b).Replace(`dataDir: ./state
status: {listen: "{{ADDR}}"}
feeds:
  - name: app
    path: ./in.log
processors:
  - name: a
    feed: app
    type: file
    path: {{A}}
  - name: b
    feed: app
    type: file
    path: {{B}}
`)
}

// exitsWithin waits up to timeout for d to exit and reports whether it did.
func exitsWithin(d *daemon, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for !d.exited() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	return d.exited()
}

// wantExit2NamingSecondPath fails t unless the exited daemon d exited 2 naming processors[1].path.
func wantExit2NamingSecondPath(t *testing.T, d *daemon) {
	t.Helper()
	if d.code != 2 || !strings.Contains(d.log(), "processors[1].path") {
		t.Fatalf("run exited %d, want 2 naming processors[1].path:\n%s", d.code, tail(d.log(), 2000))
	}
}

// writtenTwice waits up to 30 s for the file at path to hold "one" twice (two sinks writing it) and returns its content.
func writtenTwice(path string) []byte {
	var out []byte
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if out, _ = os.ReadFile(path); strings.Count(string(out), "one") >= 2 {
			break
		}
	}
	return out
}

// oneFeedConfig is a config whose dataDir and feed app's input are in dir, with a fresh status address, the top-level lines top and the processors given (YAML list items).
func oneFeedConfig(t testing.TB, dir, top, processors string) string {
	return "dataDir: " + filepath.Join(dir, "state") + "\n" + top + "status:\n  listen: " + freeAddr(t) +
		"\nfeeds:\n  - {name: app, path: " + filepath.Join(dir, "in.log") + "}\nprocessors:\n" + processors
}

// wantSecretsNotInLog fails t for each of secrets that log holds.
func wantSecretsNotInLog(t *testing.T, log string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(log, s) {
			t.Errorf("the secret %q is in the log", s)
		}
	}
}
