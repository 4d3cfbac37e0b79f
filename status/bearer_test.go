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
