package status

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// GET /v1/state/{processor} answers the state of a processor that keeps
// one, 404 naming the processor otherwise, and needs the token.
func TestStateRoute(t *testing.T) {
	of := func(name string) (any, bool, bool) {
		switch name {
		case "counter":
			return map[string]uint64{"lines": 3}, true, true
		case "sink":
			return nil, true, false
		}
		return nil, false, false
	}
	base := serve(t, ServerConfig{Token: "sesame", Report: func() Report { return Report{} },
		Health: func() (bool, string) { return true, "" }, Routes: StateRoutes(of)})
	for _, c := range []struct {
		method, path, token string
		code                int
		body                string
	}{
		{"GET", "/v1/state/counter", "", 401, `{"error":"missing or wrong bearer token"}`},
		{"GET", "/v1/state/counter", "sesame", 200, `{"lines":3}`},
		{"GET", "/v1/state/sink", "sesame", 404, `{"error":"processor sink keeps no state"}`},
		{"GET", "/v1/state/ghost", "sesame", 404, `{"error":"no such processor: ghost"}`},
		{"POST", "/v1/state/counter", "sesame", 405, ""},
	} {
		req, _ := http.NewRequest(c.method, base+c.path, nil)
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if got := strings.TrimSpace(string(b)); resp.StatusCode != c.code || c.body != "" && got != c.body {
			t.Errorf("%s %s token %q: %d %s, want %d %s", c.method, c.path, c.token, resp.StatusCode, got, c.code, c.body)
		}
	}
}
