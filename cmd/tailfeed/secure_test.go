package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// `tailfeed status` never sends TAILFEED_TOKEN across a redirect (DESIGN
// §12, to the letter; review D10): one to another port (Go's client would
// follow it with the token: it compares host names without the port) and
// one on the same host and port (the first version followed it with the
// token) are both refused, exit 2 naming the Location, and neither target
// sees the Authorization header.
func TestStatusTokenNeverCrossesARedirect(t *testing.T) {
	var mu sync.Mutex
	var leaked []string
	report := `{"settled":true,"lossless":true,"version":1,"feeds":[]}`
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if a := r.Header.Get("Authorization"); a != "" {
			leaked = append(leaked, a)
		}
		mu.Unlock()
		w.Write([]byte(report))
	}))
	defer other.Close()
	var sameAuth string
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/feed.status":
			http.Redirect(w, r, other.URL+"/feed.status", http.StatusTemporaryRedirect)
		case "/moved":
			http.Redirect(w, r, "/here", http.StatusTemporaryRedirect)
		case "/here":
			sameAuth = r.Header.Get("Authorization")
			w.Write([]byte(report))
		}
	}))
	defer front.Close()
	t.Setenv("TAILFEED_TOKEN", "t0ken")
	run := func(addr string) (int, string) {
		var stderr bytes.Buffer
		code := mainWith([]string{"status", "--addr", addr}, io.Discard, &stderr)
		return code, stderr.String()
	}
	code, stderr := run(front.URL)
	mu.Lock()
	defer mu.Unlock()
	if len(leaked) > 0 {
		t.Errorf("the other port received Authorization %q", leaked)
	}
	if code != 2 || !strings.Contains(stderr, "not following the redirect to "+other.URL) {
		t.Errorf("exit %d, stderr %q; want 2 naming the refused redirect", code, stderr)
	}
	if code, stderr := run(front.URL + "/moved"); code != 2 || sameAuth != "" || !strings.Contains(stderr, "not following the redirect to "+front.URL+"/here") {
		t.Errorf("same-origin redirect: exit %d (%s), Authorization %q; want 2 naming it, no token sent", code, stderr, sameAuth)
	}
}
