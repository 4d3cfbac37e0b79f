package status

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A body over 1 MiB is refused with 413 on every route after the token and
// method checks (DESIGN §7 "Bodies over 1 MiB → 413 … Checked in this
// order: token, route/method, body"), also on a route whose handler reads
// no body (a replay, a purge, a release: before, they ran), announced or
// chunked; a smaller chunked body still reaches a handler that reads it.
func TestOversizedBodyRefusedOnEveryRoute(t *testing.T) {
	var ran atomic.Int64
	var got atomic.Int64
	base := serve(t, ServerConfig{Token: "tok", Report: func() Report { return Report{Feeds: []FeedReport{}} },
		Routes: map[string]Route{
			"/admin/purge": {Methods: []string{http.MethodDelete}, Protected: true, Handler: func(w http.ResponseWriter, r *http.Request) {
				ran.Add(1)
				WriteJSON(w, http.StatusOK, map[string]int{"purged": 1})
			}},
			"/v1/echo": {Methods: []string{http.MethodPost}, Protected: true, Handler: func(w http.ResponseWriter, r *http.Request) {
				b, ok := ReadBody(w, r, nil)
				if ok {
					got.Store(int64(len(b)))
					WriteJSON(w, http.StatusOK, map[string]int{"n": len(b)})
				}
			}},
		}})
	big := bytes.Repeat([]byte("x"), 2<<20)
	do := func(method, path string, body io.Reader, token string) int {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, body)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 400 && !strings.Contains(string(b), `"error"`) {
			t.Errorf("%s %s: %d without {\"error\"}: %s", method, path, resp.StatusCode, b)
		}
		return resp.StatusCode
	}
	chunked := func(b []byte) io.Reader { return io.MultiReader(bytes.NewReader(b)) } // no length: sent chunked
	for _, tc := range []struct {
		name, method, path, token string
		body                      io.Reader
		want                      int
	}{
		{"no token first", http.MethodDelete, "/admin/purge", "", bytes.NewReader(big), http.StatusUnauthorized},
		{"method before body", http.MethodPost, "/admin/purge", "tok", bytes.NewReader(big), http.StatusMethodNotAllowed},
		{"announced", http.MethodDelete, "/admin/purge", "tok", bytes.NewReader(big), http.StatusRequestEntityTooLarge},
		{"chunked", http.MethodDelete, "/admin/purge", "tok", chunked(big), http.StatusRequestEntityTooLarge},
		{"chunked to a reading route", http.MethodPost, "/v1/echo", "tok", chunked(big), http.StatusRequestEntityTooLarge},
	} {
		if got := do(tc.method, tc.path, tc.body, tc.token); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	if n := ran.Load(); n != 0 {
		t.Errorf("the purge handler ran %d times with an oversized body", n)
	}
	if code := do(http.MethodPost, "/v1/echo", chunked([]byte(`{"a":1}`)), "tok"); code != http.StatusOK || got.Load() != 7 {
		t.Errorf("a small chunked body: %d, handler read %d bytes, want 200 and 7", code, got.Load())
	}
	if code := do(http.MethodDelete, "/admin/purge", nil, "tok"); code != http.StatusOK || ran.Load() != 1 {
		t.Errorf("purge without a body: %d (ran %d)", code, ran.Load())
	}
	// net/http lingers 500 ms on a connection whose body it left unread
	// before closing it (closeWriteAndWait): let it end before goleak looks.
	http.DefaultClient.CloseIdleConnections()
	time.Sleep(700 * time.Millisecond)
}
