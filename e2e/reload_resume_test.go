package e2e

// A reload that restarts a feed without a pointer (EARLIEST, ONCE_EARLIEST,
// LATEST) resumes it where its previous instance stopped, for a glob feed
// too: each file's stream goes on from where its previous stream stopped
// (DESIGN §12 Reload, "applied without a restart"; the audit's one-file
// cases are in audit_ops_test.go).

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

func reloadGlobTmpl(rs string) string {
	return `dataDir: ./state
status: {listen: "` + addrPlaceholder + `", token: ` + ctToken + `}
shutdownTimeoutMillis: 500
feeds:
  - {name: app, path: ./in/*.log, pollIntervalMillis: 20, scanIntervalMillis: 200, readStrategy: ` + rs + `}
processors:
  - {name: out, feed: app, type: file, path: ./out.log}
`
}

// sortedLines is s's lines, sorted (a glob's files interleave).
func sortedLines(s string) []string {
	l := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	sort.Strings(l)
	return l
}

// reloadGlobAddProcessor runs a glob feed of readStrategy rs over in/a.log
// ("a1\na2\n") and in/b.log ("b1\n"), appends "a3\n" once they are read,
// reloads with a discard processor added, appends "a4\n" and "b2\n", and
// returns out.log's lines, sorted.
func reloadGlobAddProcessor(t *testing.T, rs string) []string {
	tmpl := reloadGlobTmpl(rs)
	e := newEnv(t, tmpl)
	os.MkdirAll(e.path("in"), 0o755)
	os.WriteFile(e.path("in/a.log"), []byte("a1\na2\n"), 0o644)
	os.WriteFile(e.path("in/b.log"), []byte("b1\n"), 0o644)
	d := e.start()
	d.waitFor("a1, a2, b1 read", 30*time.Second, func(r *report) bool { return r.Settled && r.Feeds[0].Sequence == 3 })
	appendTo(t, e.path("in/a.log"), "a3\n")
	if rs == "EARLIEST" {
		d.waitFor("a3 read", 30*time.Second, func(r *report) bool { return r.Settled && r.Feeds[0].Sequence == 4 })
	}
	auditOpsReload(t, e, d, ctToken, tmpl+"  - {name: added, feed: app, type: discard}\n")
	time.Sleep(300 * time.Millisecond)
	appendTo(t, e.path("in/a.log"), "a4\n")
	appendTo(t, e.path("in/b.log"), "b2\n")
	time.Sleep(time.Second)
	d.waitSettled(30 * time.Second)
	b, err := os.ReadFile(e.path("out.log"))
	if err != nil {
		t.Fatal(err)
	}
	return sortedLines(string(b))
}

func TestReloadGlobEarliestNoRereads(t *testing.T) {
	got, want := reloadGlobAddProcessor(t, "EARLIEST"), []string{"a1", "a2", "a3", "a4", "b1", "b2"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("out.log after a reload that added a processor = %v, want %v (each line once)", got, want)
	}
}

func TestReloadGlobOnceEarliestNoRereads(t *testing.T) {
	got, want := reloadGlobAddProcessor(t, "ONCE_EARLIEST"), []string{"a1", "a2", "b1"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("out.log after a reload that added a processor = %v, want %v (the finished once-read left alone)", got, want)
	}
}

// TestReloadGlobLatestLosesNothing: lines appended to a LATEST glob's files
// while a reload adds a processor all reach the file sink (or the feed is
// lossy).
func TestReloadGlobLatestLosesNothing(t *testing.T) {
	tmpl := reloadGlobTmpl("LATEST")
	e := newEnv(t, tmpl)
	os.MkdirAll(e.path("in"), 0o755)
	os.WriteFile(e.path("in/a.log"), []byte("before the start\n"), 0o644)
	os.WriteFile(e.path("in/b.log"), []byte("before the start\n"), 0o644)
	d := e.start()
	d.waitSettled(30 * time.Second)
	const n = 300
	done := make(chan struct{})
	go func() {
		defer close(done)
		fa, _ := os.OpenFile(e.path("in/a.log"), os.O_WRONLY|os.O_APPEND, 0)
		fb, _ := os.OpenFile(e.path("in/b.log"), os.O_WRONLY|os.O_APPEND, 0)
		defer fa.Close()
		defer fb.Close()
		for i := 0; i < n; i++ {
			fa.WriteString("a" + lineN(i))
			fb.WriteString("b" + lineN(i))
			time.Sleep(4 * time.Millisecond)
		}
	}()
	time.Sleep(300 * time.Millisecond)
	auditOpsReload(t, e, d, ctToken, tmpl+"  - {name: added, feed: app, type: discard}\n")
	<-done
	time.Sleep(500 * time.Millisecond)
	r := d.waitSettled(30 * time.Second)
	b, err := os.ReadFile(e.path("out.log"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, l := range strings.Split(string(b), "\n") {
		got[l]++
	}
	var missing, twice []string
	for i := 0; i < n; i++ {
		for _, p := range []string{"a", "b"} {
			l := p + strings.TrimSuffix(lineN(i), "\n")
			switch got[l] {
			case 0:
				missing = append(missing, l)
			case 1:
			default:
				twice = append(twice, l)
			}
		}
	}
	if len(missing) > 0 && r.Lossless {
		t.Errorf("%d of the %d lines appended around the reload never reached out.log (%v), and the feed is lossless", len(missing), 2*n, missing)
	}
	if len(twice) > 0 {
		t.Errorf("%d lines reached out.log more than once: %v", len(twice), twice)
	}
	if got["before the start"] > 0 {
		t.Errorf("a line written before the start was delivered %d times (LATEST)", got["before the start"])
	}
}

// TestReloadUnfinishedLinesNotLost: a feed without a pointer whose webhook
// subscriber has not finished its lines when a reload stops the feed (the
// drain cut short by shutdownTimeoutMillis) gets them again from the
// restarted feed (as a COMMITTED feed re-reads them from its pointer); the
// file sink, which finished them, does not get them twice. For one file
// and for a glob.
func TestReloadUnfinishedLinesNotLost(t *testing.T) {
	for _, path := range []string{"./in/a.log", "./in/*.log"} {
		t.Run(path, func(t *testing.T) {
			var mu sync.Mutex
			blocked := true
			var lines []string
			hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				b := blocked
				mu.Unlock()
				if b {
					select { // never answers while blocked: the drain is cut short
					case <-r.Context().Done():
					case <-time.After(3 * time.Second):
					}
					http.Error(w, "busy", http.StatusServiceUnavailable)
					return
				}
				body, _ := io.ReadAll(r.Body)
				mu.Lock()
				for _, l := range strings.Split(strings.TrimSpace(string(body)), "\n") {
					var o struct {
						Line string `json:"line"`
					}
					json.Unmarshal([]byte(l), &o)
					lines = append(lines, o.Line)
				}
				mu.Unlock()
			}))
			defer hook.Close()
			tmpl := `dataDir: ./state
status: {listen: "` + addrPlaceholder + `", token: ` + ctToken + `}
shutdownTimeoutMillis: 500
feeds:
  - {name: app, path: ` + path + `, pollIntervalMillis: 20, readStrategy: EARLIEST}
processors:
  - {name: out, feed: app, type: file, path: ./out.log}
  - {name: hook, feed: app, type: webhook, url: "` + hook.URL + `", retry: {initialMillis: 20, maxMillis: 50}}
`
			e := newEnv(t, tmpl)
			os.MkdirAll(e.path("in"), 0o755)
			os.WriteFile(e.path("in/a.log"), []byte("a1\na2\n"), 0o644)
			d := e.start()
			waitUntil(t, "out.log holds a1, a2", 30*time.Second, func() bool {
				b, _ := os.ReadFile(e.path("out.log"))
				return string(b) == "a1\na2\n"
			})
			auditOpsReload(t, e, d, ctToken, tmpl+"  - {name: added, feed: app, type: discard}\n")
			mu.Lock()
			blocked = false
			mu.Unlock()
			appendTo(t, e.path("in/a.log"), "a3\n")
			waitUntil(t, "the hook got a3", 30*time.Second, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return slices.Contains(lines, "a3")
			})
			d.waitSettled(30 * time.Second)
			mu.Lock()
			got := append([]string(nil), lines...)
			mu.Unlock()
			sort.Strings(got)
			if strings.Join(got, ",") != "a1,a2,a3" {
				t.Errorf("the webhook got %v after the reload, want a1, a2 (unfinished at the stop) and a3, once each", got)
			}
			if b, _ := os.ReadFile(e.path("out.log")); string(b) != "a1\na2\na3\n" {
				t.Errorf("out.log = %q, want each line once", b)
			}
		})
	}
}

// TestReloadGlobUnterminatedIsNow: a glob feed's unterminated after a
// reload is the bytes after the last terminator now, not the earlier
// instance's added again (DESIGN §4).
func TestReloadGlobUnterminatedIsNow(t *testing.T) {
	for _, rs := range []string{"EARLIEST", "ONCE_EARLIEST"} {
		t.Run(rs, func(t *testing.T) {
			tmpl := reloadGlobTmpl(rs)
			e := newEnv(t, tmpl)
			os.MkdirAll(e.path("in"), 0o755)
			os.WriteFile(e.path("in/a.log"), []byte("a1\npart"), 0o644)
			d := e.start()
			d.waitFor("unterminated 4", 30*time.Second, func(r *report) bool {
				return r.Settled && r.Feeds[0].Sequence == 1 && r.Feeds[0].Unterminated == 4
			})
			auditOpsReload(t, e, d, ctToken, tmpl+"  - {name: added, feed: app, type: discard}\n")
			time.Sleep(time.Second)
			r := d.waitSettled(30 * time.Second)
			if u := r.Feeds[0].Unterminated; u != 4 {
				t.Errorf("after a reload, with the file still ending in the 4 bytes \"part\": unterminated = %d, want 4", u)
			}
			if b, _ := os.ReadFile(e.path("out.log")); string(b) != "a1\n" {
				t.Errorf("out.log = %q, want \"a1\\n\"", b)
			}
		})
	}
}
