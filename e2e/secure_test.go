package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

// Secure by default (DESIGN §12): no secret in status, health, logs or
// dead letters; private files; a guarded lock; a bounded HTTP server.

const secretsConfigTmpl = `dataDir: ./state
status:
  listen: {{ADDR}}
  token: tok3n
  protectRead: true
  stallAlertMillis: 300
shutdownTimeoutMillis: 500
feeds:
  - name: app
    path: ./in.log
    readStrategy: COMMITTED
processors:
  - name: down
    feed: app
    type: webhook
    url: http://user:s3cr3tpw@%s/ingest
    timeoutMillis: 500
    retry: {initialMillis: 5, maxMillis: 20, attempts: 2}
  - name: refusing
    feed: app
    type: webhook
    url: %s/ingest
    timeoutMillis: 2000
    retry: {initialMillis: 5, maxMillis: 20, attempts: 2}
    onFailure: deadLetter
`

// A webhook URL with user:password@ never shows its password: not in the
// /healthz reason, not in feed.status's stalled, not in the log, not in the
// dead-letter ledger's error. Go's own URL error hides it; the sink's error
// used to put it back.
func TestSecretsNeverShown(t *testing.T) {
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		http.Error(w, "no thanks", http.StatusInternalServerError)
	}))
	defer refusing.Close()
	withPw := strings.Replace(refusing.URL, "http://", "http://user:s3cr3tpw@", 1)
	dead := freeAddr(t) // nothing listens: connection refused
	e := newEnv(t, fmt.Sprintf(secretsConfigTmpl, dead, withPw))
	in := newInput(t, e.path("in.log"))
	in.appendLines(3)
	d := ctStart(e, e.dir)

	var health, report []byte
	waitUntil(t, "/healthz 503 naming the stall", 30*time.Second, func() bool {
		code, _, body := ctDo(t, d, "GET", "/healthz", "", nil)
		health = body
		return code == http.StatusServiceUnavailable && strings.Contains(string(body), "down")
	})
	waitUntil(t, "a dead letter", 30*time.Second, func() bool {
		b, _ := os.ReadFile(e.path("state/dlq/refusing.jsonl"))
		return strings.Count(string(b), "\n") >= 3
	})
	code, _, report := ctDo(t, d, "GET", "/feed.status", "tok3n", nil)
	if code != 200 || !strings.Contains(string(report), `"stalled":"`) {
		t.Fatalf("/feed.status %d, want 200 with a stalled reason: %s", code, report)
	}
	d.stop()
	ledger, _ := os.ReadFile(e.path("state/dlq/refusing.jsonl"))
	for what, text := range map[string]string{
		"/healthz": string(health), "/feed.status": string(report), "log": d.log(), "ledger": string(ledger),
	} {
		if strings.Contains(text, "s3cr3tpw") {
			t.Errorf("%s shows the password:\n%s", what, tail(text, 3000))
		}
	}
	// Not vacuous: the URLs are named, with their userinfo redacted.
	if !strings.Contains(string(ledger), "user:***@") || !strings.Contains(d.log(), "user:***@") {
		t.Errorf("ledger/log do not name the redacted URL:\n%s\n%s", ledger, tail(d.log(), 2000))
	}
}

var _ = net.Dial
