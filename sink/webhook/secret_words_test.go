package webhook

import (
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"tailfeed/feed"
	"tailfeed/internal/grouptest"
	"tailfeed/processor"
)

// DESIGN §12 "URLs are shown with their userinfo redacted" (review D5): a
// URL whose credential is the user name alone (https://APIKEY@host/, as
// several SaaS ingest endpoints take it) never shows it in the fenced
// reason (= feed.status stalled, /healthz reason, WARN log, dead letter
// error); the first version masked the password only.
func TestWebhookUserOnlyCredentialHidden(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	defer srv.Close()
	u := strings.Replace(srv.URL, "http://", "http://sk_live_Zq9SECRETKEY@", 1)
	r := newHookRig(t, t.TempDir(), processor.GroupConfig{Retry: grouptest.FastRetry(2)}, WebhookConfig{URL: u})
	r.Publish("a")
	var why string
	waitFor(t, "fenced", func() bool { st, w := r.Q.State(); why = w; return st == feed.Fenced })
	if strings.Contains(why, "SECRETKEY") {
		t.Fatalf("fenced reason shows the URL's userinfo: %s", why)
	}
}

// A credential in the URL's query (?token=…, as some ingest endpoints
// take it) never shows in the fenced reason either: a black-box probe of
// the forty-fourth session saw "http://***@127.0.0.1:…/ingest?token=QSECRET"
// in logs, stalled, /healthz reasons and dead letters; the other
// parameters stay.
func TestWebhookQueryCredentialHidden(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	defer srv.Close()
	r := newHookRig(t, t.TempDir(), processor.GroupConfig{Retry: grouptest.FastRetry(2)}, WebhookConfig{URL: srv.URL + "/ingest?token=QSECRETqq&src=app"})
	r.Publish("a")
	var why string
	waitFor(t, "fenced", func() bool { st, w := r.Q.State(); why = w; return st == feed.Fenced })
	if strings.Contains(why, "QSECRETqq") || !strings.Contains(why, "src=app") {
		t.Fatalf("fenced reason %q: want the token masked, the other parameter shown", why)
	}
}

// A receiver that echoes the token of a configured "Authorization: Bearer
// <token>" header (not the whole header value) in its 401 body: the token
// never shows in the fenced reason (review D6; the first version masked
// whole header values only).
func TestWebhookEchoedBearerTokenHidden(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		http.Error(w, "invalid token "+tok, http.StatusUnauthorized)
	}))
	defer srv.Close()
	r := newHookRig(t, t.TempDir(), processor.GroupConfig{Retry: grouptest.FastRetry(2)}, WebhookConfig{URL: srv.URL,
		Headers: map[string]string{"Authorization": "Bearer hdrSECRETtoken"}})
	r.Publish("a")
	var why string
	waitFor(t, "fenced", func() bool { st, w := r.Q.State(); why = w; return st == feed.Fenced })
	if strings.Contains(why, "hdrSECRETtoken") {
		t.Fatalf("fenced reason shows the header's token: %s", why)
	}
}

// What the sink hides: each word of a sensitive header but the
// Authorization scheme, the Basic credential of the URL's userinfo; a
// plain header's value whole only.
func TestWebhookSecretsWords(t *testing.T) {
	got := webhookSecrets(WebhookConfig{URL: "https://svc:pa55word@h/in", Headers: map[string]string{
		"Authorization": "Bearer abcdef123456",
		"Cookie":        "sid=cookieval99; theme=dark",
		"X-Source":      "tailfeed host-a",
	}})
	has := map[string]bool{}
	for _, s := range got {
		has[s] = true
	}
	for _, want := range []string{"pa55word", base64.StdEncoding.EncodeToString([]byte("svc:pa55word")),
		"Bearer abcdef123456", "abcdef123456", "cookieval99", "tailfeed host-a"} {
		if !has[want] {
			t.Errorf("webhookSecrets misses %q: %q", want, got)
		}
	}
	for _, not := range []string{"Bearer", "tailfeed", "theme", "svc"} {
		if has[not] {
			t.Errorf("webhookSecrets masks the common word %q: %q", not, got)
		}
	}
}
