package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// lossTmpl: a COMMITTED feed with a file sink (holds the pointer) and a pull
// subscriber nobody polls, best effort (DROP_AFTER_SPIN) with a tiny queue:
// lines beyond what it holds are dropped, a counted loss.
const lossTmpl = `dataDir: ./state
status: {listen: "` + addrPlaceholder + `", token: sesame}
feeds:
  - name: app
    path: ./in.log
    queueCapacity: 4
    overload:
      spinBoundMillis: 1
      subscribers: {puller: {policy: DROP_AFTER_SPIN}}
processors:
  - {name: archive, feed: app, type: file, path: ./out.log}
  - {name: puller, feed: app, type: pull, maxInFlight: 2}
`

type lossEntry struct {
	V       int    `json:"v"`
	Feed    string `json:"feed"`
	Counter string `json:"counter"`
	Amount  uint64 `json:"amount"`
	Epoch   string `json:"epoch"`
	Time    string `json:"time"`
	Detail  string `json:"detail"`
}

// lossReq sends method to /admin/losses/FEED with token ("" = none).
func lossReq(t *testing.T, d *daemon, method, feed, token string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, "http://"+d.addr+"/admin/losses/"+feed, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, []byte(b.String())
}

func listLosses(t *testing.T, d *daemon) []lossEntry {
	t.Helper()
	code, body := lossReq(t, d, http.MethodGet, "app", "sesame")
	var out struct {
		Feed    string      `json:"feed"`
		Entries []lossEntry `json:"entries"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &out) != nil || out.Feed != "app" || out.Entries == nil {
		t.Fatalf("GET /admin/losses/app = %d %s", code, body)
	}
	return out.Entries
}

func appendN(t *testing.T, path string, from, n int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b strings.Builder
	for i := from; i < from+n; i++ {
		fmt.Fprintf(&b, "line %06d\n", i)
	}
	f.WriteString(b.String())
}

func appFeed(t *testing.T, r *report) feedReport {
	t.Helper()
	for _, f := range r.Feeds {
		if f.Feed == "app" {
			return f
		}
	}
	t.Fatalf("no feed app in %+v", r)
	return feedReport{}
}

// dropped reads the app feed's dropped counter (not in the harness's report).
func dropped(t *testing.T, d *daemon) uint64 {
	t.Helper()
	_, body, err := d.get("/feed.status")
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Feeds []struct {
			Dropped uint64 `json:"dropped"`
		} `json:"feeds"`
	}
	json.Unmarshal(body, &r)
	if len(r.Feeds) != 1 {
		t.Fatalf("feed.status: %s", body)
	}
	return r.Feeds[0].Dropped
}

// TestLossesOutliveTheRun (DESIGN §7 "Losses outlive the run"): lines a
// DROP_AFTER_SPIN subscriber drops reach dataDir/losses.jsonl (0600, one
// versioned JSON object per line); after a restart the feed is still
// lossless false; GET /admin/losses/app lists the entries, DELETE clears
// them and this run's counters (lossless true, dropped 0); an entry written
// survives kill -9. The endpoint needs the token (401), knows only
// configured feeds (404) and GET/DELETE (405).
func TestLossesOutliveTheRun(t *testing.T) {
	e := newEnv(t, lossTmpl)
	in := e.path("in.log")
	appendN(t, in, 0, 200)
	d := e.start()
	d.waitFor("drops, all archived", 30*time.Second, func(r *report) bool {
		return appFeed(t, r).Acknowledged == 200 && !r.Lossless
	})
	if dropped(t, d) == 0 {
		t.Fatalf("nothing dropped: the test does not exercise a loss")
	}
	waitUntil(t, "a dropped entry in the ledger", 10*time.Second, func() bool {
		for _, le := range listLosses(t, d) {
			if le.Counter == "dropped" && le.Amount > 0 && le.V == 1 && le.Feed == "app" && len(le.Epoch) == 16 && le.Time != "" && strings.Contains(le.Detail, "puller") {
				return true
			}
		}
		return false
	})
	if st, err := os.Stat(e.path("state/losses.jsonl")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("losses.jsonl: %v, mode %v; want 0600", err, st.Mode().Perm())
	}
	for _, c := range []struct {
		method, feed, token string
		want                int
	}{
		{http.MethodGet, "app", "", 401},
		{http.MethodDelete, "app", "wrong", 401},
		{http.MethodGet, "ghost", "sesame", 404},
		{http.MethodPost, "app", "sesame", 405},
	} {
		code, body := lossReq(t, d, c.method, c.feed, c.token)
		var eb struct {
			Error string `json:"error"`
		}
		if code != c.want || json.Unmarshal(body, &eb) != nil || eb.Error == "" {
			t.Errorf("%s /admin/losses/%s token %q = %d %s, want %d {\"error\"}", c.method, c.feed, c.token, code, body, c.want)
		}
	}
	d.stop()
	var total uint64
	raw, _ := os.ReadFile(e.path("state/losses.jsonl"))
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var le lossEntry
		if err := json.Unmarshal([]byte(l), &le); err != nil {
			t.Fatalf("ledger line %q: %v", l, err)
		}
		total += le.Amount
	}
	t.Logf("run 1: %d lines dropped in the ledger", total)

	// Run 2: a restart does not turn the feed green.
	d = e.start()
	r := d.waitSettled(30 * time.Second)
	if r.Lossless || appFeed(t, r).Lossless {
		t.Errorf("after a restart: lossless %v/%v, want false (the ledger holds the drops)", r.Lossless, appFeed(t, r).Lossless)
	}
	if n := dropped(t, d); n != 0 {
		t.Errorf("dropped %d in a run that dropped nothing", n)
	}
	if _, _, code := cli(t, "status", "--addr", d.addr); code != 1 {
		t.Errorf("status after restart: exit %d, want 1 (settled, lossy)", code)
	}
	if got := listLosses(t, d); len(got) == 0 {
		t.Errorf("GET lists nothing after a restart")
	}
	code, body := lossReq(t, d, http.MethodDelete, "app", "sesame")
	if code != http.StatusOK || !strings.Contains(string(body), `"cleared"`) {
		t.Fatalf("DELETE = %d %s", code, body)
	}
	d.waitFor("lossless after DELETE", 10*time.Second, func(r *report) bool { return r.Lossless && appFeed(t, r).Lossless })
	if got := listLosses(t, d); len(got) != 0 {
		t.Errorf("GET after DELETE lists %d entries", len(got))
	}

	// A drop in this run, then DELETE: this run's counter reads 0 again.
	appendN(t, in, 200, 100)
	d.waitFor("new drops", 30*time.Second, func(r *report) bool { return appFeed(t, r).Acknowledged == 100 && !r.Lossless })
	if dropped(t, d) == 0 {
		t.Fatalf("nothing dropped in run 2")
	}
	waitUntil(t, "the run-2 entry", 10*time.Second, func() bool { return len(listLosses(t, d)) > 0 })
	lossReq(t, d, http.MethodDelete, "app", "sesame")
	d.waitFor("lossless after the second DELETE", 10*time.Second, func(r *report) bool { return r.Lossless })
	if n := dropped(t, d); n != 0 {
		t.Errorf("dropped %d after DELETE, want 0", n)
	}

	// A drop whose entry is written survives kill -9.
	appendN(t, in, 300, 100)
	d.waitFor("drops in run 2 again", 30*time.Second, func(r *report) bool { return appFeed(t, r).Acknowledged == 200 && !r.Lossless })
	waitUntil(t, "the entry before the kill", 10*time.Second, func() bool { return len(listLosses(t, d)) > 0 })
	d.kill()
	d = e.start()
	r = d.waitSettled(30 * time.Second)
	if r.Lossless {
		t.Errorf("after kill -9 and restart: lossless true, want false")
	}
	if len(listLosses(t, d)) == 0 {
		t.Errorf("after kill -9: the ledger lost its entry")
	}
	d.stop()
}
