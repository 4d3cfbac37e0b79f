package status

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestHex(t *testing.T) {
	for v, want := range map[uint64]string{0: "0000000000000000", 0xc3a1d2e4f50617: "00c3a1d2e4f50617", ^uint64(0): "ffffffffffffffff"} {
		if got := Hex(v); got != want {
			t.Errorf("Hex(%#x) = %s, want %s", v, got, want)
		}
	}
}

// The version starts where it is told (1 here), stays while nothing
// changes, and increases with any change of any other field.
func TestVersionerIncreasesOnEveryChange(t *testing.T) {
	v := newVersioner(1)
	r := Report{Settled: true, Lossless: true, Feeds: []FeedReport{{Feed: "app", Sequence: 1}}}
	if got := v.Stamp(r).Version; got != 1 {
		t.Fatalf("first version %d", got)
	}
	if got := v.Stamp(r).Version; got != 1 {
		t.Fatalf("unchanged report got version %d", got)
	}
	last := uint64(1)
	for i, change := range []func(*Report){
		func(r *Report) { r.Feeds[0].Sequence = 2 },
		func(r *Report) { r.Settled = false },
		func(r *Report) { s := "subscriber a failing: x"; r.Feeds[0].Stalled = &s },
		func(r *Report) { r.Feeds[0].Subscribers = []SubscriberReport{{Queue: "a"}} },
		func(r *Report) { r.Feeds[0].Sequence = 1 }, // back to an earlier value: still a change
	} {
		change(&r)
		got := v.Stamp(r).Version
		if got <= last {
			t.Fatalf("change %d: version %d after %d", i, got, last)
		}
		last = got
	}
}

// JSON of an empty feed: detail, stalled and pointer are null, never absent.
func TestFeedReportNulls(t *testing.T) {
	b, err := json.Marshal(FeedReport{Subscribers: []SubscriberReport{}})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	for _, k := range []string{"detail", "stalled", "pointer"} {
		if v, ok := m[k]; !ok || v != nil {
			t.Errorf("%s = %#v (present %v), want null", k, v, ok)
		}
	}
}

func serve(t *testing.T, cfg ServerConfig) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(cfg)
	go Serve(srv, ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// The checks run in DESIGN §7's order: token (401), route and method (404,
// 405); /healthz is always open; every error is {"error"}.
func TestServerOrder(t *testing.T) {
	var healthy atomic.Bool
	healthy.Store(true)
	ok := func(w http.ResponseWriter, r *http.Request) { WriteJSON(w, 200, map[string]string{"ok": "yes"}) }
	for _, protect := range []bool{false, true} {
		base := serve(t, ServerConfig{
			Token:       "sesame",
			ProtectRead: protect,
			Report:      func() Report { return Report{Feeds: []FeedReport{}} },
			Health:      func() (bool, string) { return healthy.Load(), "feed app stalled: x" },
			Routes: map[string]Route{
				"/admin/thing/{name}": {Methods: []string{"POST"}, Protected: true, Handler: ok},
				"/v1/read":            {Methods: []string{"GET"}, ReadOnly: true, Handler: ok},
			},
		})
		read, unknown := 200, 404
		if protect {
			read, unknown = 401, 401
		}
		cases := []struct {
			method, path, token string
			code                int
		}{
			{"GET", "/feed.status", "", read},
			{"GET", "/feed.status", "sesame", 200},
			{"POST", "/feed.status", "sesame", 405},
			{"GET", "/v1/read", "", read},
			{"POST", "/admin/thing/x", "", 401},
			{"GET", "/admin/thing/x", "", 401},
			{"GET", "/admin/thing/x", "sesame", 405},
			{"POST", "/admin/thing/x", "sesame", 200},
			{"POST", "/admin/unknown", "", 401},
			{"POST", "/admin/unknown", "sesame", 404},
			{"GET", "/nothing", "", unknown},
			{"GET", "/healthz", "", 200},
		}
		for _, c := range cases {
			req, _ := http.NewRequest(c.method, base+c.path, nil)
			if c.token != "" {
				req.Header.Set("Authorization", "Bearer "+c.token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.code {
				t.Errorf("protectRead %v: %s %s token %q: %d %s, want %d", protect, c.method, c.path, c.token, resp.StatusCode, body, c.code)
			}
			if resp.StatusCode >= 400 && resp.StatusCode < 500 && !strings.Contains(string(body), `"error":`) {
				t.Errorf("%s %s: 4xx body %s", c.method, c.path, body)
			}
		}
		healthy.Store(false)
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 503 || !strings.Contains(string(body), "feed app stalled: x") {
			t.Errorf("unhealthy /healthz: %d %s", resp.StatusCode, body)
		}
		healthy.Store(true)
	}
}

// A new run's first version is above what the previous run can have
// reached: the versions a launcher sees never go back across a restart.
func TestVersionerNeverGoesBackAcrossRestart(t *testing.T) {
	r := Report{Feeds: []FeedReport{{Feed: "app"}}}
	before := NewVersioner()
	var last uint64
	for i := range 1000 {
		r.Feeds[0].Sequence = uint64(i)
		last = before.Stamp(r).Version
	}
	time.Sleep(2 * time.Millisecond)
	if first := NewVersioner().Stamp(r).Version; first <= last {
		t.Fatalf("restart: first version %d, previous run reached %d", first, last)
	}
}
