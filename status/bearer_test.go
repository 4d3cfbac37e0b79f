package status

import (
	"net/http"
	"testing"
)

// TestBearerScheme: the token is accepted under the scheme "Bearer" in any
// case (RFC 7235 §2.1: the scheme is a case-insensitive token), and only
// with the exact token after one space.
func TestBearerScheme(t *testing.T) {
	ok := func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }
	base := serve(t, ServerConfig{
		Token:  "sesame",
		Report: func() Report { return Report{Feeds: []FeedReport{}} },
		Routes: map[string]Route{"/admin/thing": {Methods: []string{"POST"}, Protected: true, Handler: ok}},
	})
	for header, want := range map[string]int{
		"Bearer sesame":  200,
		"bearer sesame":  200,
		"BEARER sesame":  200,
		"Bearer sesame2": 401,
		"Bearer  sesame": 401,
		"Bearer":         401,
		"Basic sesame":   401,
		"sesame":         401,
		"":               401,
	} {
		req, _ := http.NewRequest("POST", base+"/admin/thing", nil)
		if header != "" {
			req.Header.Set("Authorization", header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Authorization %q: %d, want %d", header, resp.StatusCode, want)
		}
	}
}

// A path with dot segments or doubled slashes is checked for the token as
// sent, before the mux would redirect it to its cleaned form: without the
// token the answer is 401, never a 307 that reveals the route (DESIGN §12).
func TestTokenBeforeRedirect(t *testing.T) {
	ok := func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }
	for _, protect := range []bool{false, true} {
		base := serve(t, ServerConfig{
			Token:       "sesame",
			ProtectRead: protect,
			Report:      func() Report { return Report{Feeds: []FeedReport{}} },
			Routes: map[string]Route{
				"/admin/dlq/{name}": {Methods: []string{"GET"}, Protected: true, Handler: ok},
				"/v1/pull/{name}":   {Methods: []string{"GET"}, Protected: true, Handler: ok},
				"/metrics":          {Methods: []string{"GET"}, ReadOnly: true, Handler: ok},
			},
		})
		noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		get := func(path, token string) int {
			req, _ := http.NewRequest("GET", base+path, nil)
			req.URL.Opaque = path // sent as written, dot segments and all
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err := noFollow.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		for _, p := range []string{"/admin/../admin/dlq/x", "/admin/./dlq/x", "/admin//dlq/x", "/x/../admin/dlq/x",
			"/v1/../v1/pull/x", "/%61dmin/../admin/dlq/x", "/admin/dlq/../dlq/x"} {
			if code := get(p, ""); code != http.StatusUnauthorized {
				t.Errorf("protectRead %v: GET %s without the token: %d, want 401", protect, p, code)
			}
			if code := get(p, "sesame"); code != http.StatusTemporaryRedirect && code != http.StatusMovedPermanently {
				t.Errorf("protectRead %v: GET %s with the token: %d, want the mux's redirect", protect, p, code)
			}
		}
		if code := get("/healthz?verbose=1", ""); code != http.StatusOK {
			t.Errorf("protectRead %v: /healthz: %d, want 200 without a token", protect, code)
		}
		want := http.StatusTemporaryRedirect // the open route's redirect stays open
		if protect {
			want = http.StatusUnauthorized
		}
		if code := get("/x/../metrics", ""); code != want {
			t.Errorf("protectRead %v: GET /x/../metrics without the token: %d, want %d", protect, code, want)
		}
	}
}
