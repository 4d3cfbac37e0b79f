package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"tailfeed/internal/tlsconfig/tlstest"
)

// `tailfeed status --ca FILE --addr http://HOST:PORT` asks for a
// verified HTTPS connection, yet the explicit http:// scheme is kept and
// TAILFEED_TOKEN goes out in clear text. It must refuse (exit 2) without
// sending anything.
func TestStatusTLSFlagsNeverFallBackToClearText(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Write([]byte(`{"settled":true,"lossless":true,"version":1,"feeds":[]}`))
	}))
	defer srv.Close()
	dir := t.TempDir()
	ca := tlstest.Write(t, dir, "ca.crt", tlstest.NewCA(t, "ca").PEM)
	t.Setenv("TAILFEED_TOKEN", "s3cret-token")
	var stderr bytes.Buffer
	code := mainWith([]string{"status", "--ca", ca, "--addr", srv.URL}, io.Discard, &stderr)
	mu.Lock()
	defer mu.Unlock()
	for _, a := range got {
		if strings.Contains(a, "s3cret-token") {
			t.Errorf("token sent in clear text over http:// although --ca was given (exit %d, stderr %q)", code, stderr.String())
		}
	}
	if code != 2 {
		t.Errorf("exit %d; want 2 (--ca with an http:// --addr is a usage error)", code)
	}
}
