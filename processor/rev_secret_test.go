package processor

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"tailfeed/feed"
)

// REVIEW: DESIGN §12 "URLs are shown with their userinfo redacted": a URL
// whose credential is the user name alone (https://APIKEY@host/, as several
// SaaS ingest endpoints take it) shows it whole in the fenced reason (=
// feed.status stalled, /healthz reason, WARN log, dead letter error).
func TestRevWebhookUserOnlyCredentialHidden(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	defer srv.Close()
	u := strings.Replace(srv.URL, "http://", "http://sk_live_Zq9SECRETKEY@", 1)
	r := newHookRig(t, t.TempDir(), GroupConfig{Retry: fastRetry(2)}, WebhookConfig{URL: u})
	r.publish("a")
	var why string
	waitFor(t, "fenced", func() bool { st, w := r.q.State(); why = w; return st == feed.Fenced })
	if strings.Contains(why, "SECRETKEY") {
		t.Fatalf("fenced reason shows the URL's userinfo: %s", why)
	}
}

// REVIEW: a receiver that echoes the token of a configured
// "Authorization: Bearer <token>" header (not the whole header value) in
// its 401 body: the token shows in the fenced reason, since only whole
// header values are masked.
func TestRevWebhookEchoedBearerTokenHidden(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		http.Error(w, "invalid token "+tok, http.StatusUnauthorized)
	}))
	defer srv.Close()
	r := newHookRig(t, t.TempDir(), GroupConfig{Retry: fastRetry(2)}, WebhookConfig{URL: srv.URL,
		Headers: map[string]string{"Authorization": "Bearer hdrSECRETtoken"}})
	r.publish("a")
	var why string
	waitFor(t, "fenced", func() bool { st, w := r.q.State(); why = w; return st == feed.Fenced })
	if strings.Contains(why, "hdrSECRETtoken") {
		t.Fatalf("fenced reason shows the header's token: %s", why)
	}
}
