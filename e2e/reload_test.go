package e2e

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Live reload against the built binary (DESIGN §12 "Reload", issue 15
// acceptance 1). The 20-reloads-under-load and goroutine-leak checks are
// in-process (internal/daemon TestReloadUnderLoad): the binary serves no
// goroutine count.

const reloadTmpl = `dataDir: ./state
status: {listen: "{{ADDR}}", token: sesame}
shutdownTimeoutMillis: 500
log: {level: info}
feeds:
  - {name: app, path: ./in.log, readStrategy: COMMITTED, pollIntervalMillis: 20}
processors:
  - {name: archive, feed: app, type: file, path: ./out.log}
`

// reconfig rewrites the running daemon's config (same listen address).
func reconfig(t *testing.T, e *env, d *daemon, text string) {
	t.Helper()
	if err := os.WriteFile(e.cfg, []byte(strings.ReplaceAll(text, addrPlaceholder, d.addr)), 0o644); err != nil {
		t.Fatal(err)
	}
}

type configReport struct {
	Path           string  `json:"path"`
	LoadedAt       string  `json:"loadedAt"`
	Reloads        uint64  `json:"reloads"`
	ReloadFailures uint64  `json:"reloadFailures"`
	LastError      *string `json:"lastError"`
}

func configOf(t *testing.T, d *daemon) configReport {
	t.Helper()
	_, raw := statusRaw(t, d)
	var doc struct {
		Config *configReport `json:"config"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil || doc.Config == nil {
		t.Fatalf("feed.status has no config: %v %s", err, raw)
	}
	return *doc.Config
}

func fileLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func TestReloadBinary(t *testing.T) {
	// A webhook that always fails: the subscriber keeps a backlog.
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer hook.Close()
	e := newEnv(t, reloadTmpl)
	os.WriteFile(e.path("in.log"), []byte("a1\na2\n"), 0o644)
	d := e.start()
	d.waitSettled(30 * time.Second)

	step(t, "SIGHUP adds a processor: it gets the lines published after the reload", func() {
		reconfig(t, e, d, reloadTmpl+"  - {name: added, feed: app, type: file, path: ./added.log}\n")
		d.signal(syscall.SIGHUP)
		waitUntil(t, "config reloaded", 20*time.Second, func() bool { return strings.Contains(d.log(), "config reloaded") })
		appendTo(t, e.path("in.log"), "b1\nb2\n")
		d.waitFor("added drained", 30*time.Second, func(r *report) bool {
			return r.Settled && len(r.Feeds[0].Subscribers) == 2
		})
		if got := fileLines(t, e.path("added.log")); strings.Join(got, ",") != "b1,b2" {
			t.Errorf("added.log %v, want [b1 b2]", got)
		}
		if c := configOf(t, d); c.Reloads != 1 || c.LastError != nil {
			t.Errorf("config %+v", c)
		}
	})

	step(t, "an invalid file: runs on unchanged, errors in the log and in config.lastError", func() {
		reconfig(t, e, d, reloadTmpl+"  - {name: added, feed: app, type: file, path: ./added.log}\n  - {name: bad, feed: nowhere, type: discard}\n")
		code, _, body := request(t, d, http.MethodPost, "/admin/reload", "sesame", nil)
		if code != http.StatusBadRequest || !strings.Contains(string(body), e.cfg+":10:") {
			t.Errorf("reload: %d %s", code, body)
		}
		if !strings.Contains(d.log(), "reload failed") || !strings.Contains(d.log(), e.cfg+":10:") {
			t.Errorf("the log lacks the error:\n%s", tail(d.log(), 2000))
		}
		c := configOf(t, d)
		if c.ReloadFailures != 1 || c.LastError == nil || !strings.Contains(*c.LastError, e.cfg+":10:") {
			t.Errorf("config %+v", c)
		}
		appendTo(t, e.path("in.log"), "c1\n")
		waitUntil(t, "c1 in added.log", 30*time.Second, func() bool {
			got := fileLines(t, e.path("added.log"))
			return got[len(got)-1] == "c1"
		})
	})

	withHook := reloadTmpl + "  - {name: hook, feed: app, type: webhook, url: \"" + hook.URL + "\", retry: {initialMillis: 5, maxMillis: 10, attempts: 2}}\n"
	step(t, "remove a processor with a backlog: stalled until released, then lossless false", func() {
		reconfig(t, e, d, withHook)
		if code, _, body := request(t, d, http.MethodPost, "/admin/reload", "sesame", nil); code != http.StatusOK {
			t.Fatalf("reload: %d %s", code, body)
		}
		appendTo(t, e.path("in.log"), "d1\nd2\nd3\n")
		d.waitFor("hook holds", 30*time.Second, func(r *report) bool { return r.Feeds[0].Stalled != nil })
		reconfig(t, e, d, reloadTmpl)
		if code, _, body := request(t, d, http.MethodPost, "/admin/reload", "sesame", nil); code != http.StatusOK {
			t.Fatalf("reload: %d %s", code, body)
		}
		r := d.waitFor("removed subscriber holds", 30*time.Second, func(r *report) bool {
			s := r.Feeds[0].Stalled
			return s != nil && strings.Contains(*s, "removed subscriber hook holds 3 lines")
		})
		if r.Settled {
			t.Errorf("settled while held")
		}
		if _, err := os.Stat(e.path("state/state/removed.json")); err != nil {
			t.Errorf("removed.json: %v", err)
		}
		code, _, body := request(t, d, http.MethodPost, "/admin/release/app/hook", "sesame", nil)
		if code != http.StatusOK {
			t.Fatalf("release: %d %s", code, body)
		}
		r = d.waitFor("settled after release", 30*time.Second, func(r *report) bool { return r.Settled })
		if r.Lossless || r.Feeds[0].Released != 3 {
			t.Errorf("lossless %v released %d", r.Lossless, r.Feeds[0].Released)
		}
	})

	step(t, "change the feed's path: final commit, pointer moved aside, the new file read", func() {
		os.WriteFile(e.path("new.log"), []byte("n1\nn2\n"), 0o644)
		size, _ := os.Stat(e.path("in.log"))
		reconfig(t, e, d, strings.Replace(reloadTmpl, "./in.log", "./new.log", 1))
		if code, _, body := request(t, d, http.MethodPost, "/admin/reload", "sesame", nil); code != http.StatusOK {
			t.Fatalf("reload: %d %s", code, body)
		}
		olds, _ := filepath.Glob(e.path("state/feeds/app.ptr.*.old"))
		if len(olds) != 1 {
			t.Fatalf("old pointer: %v", olds)
		}
		if rec, ok := showPointer(t, olds[0]); !ok || rec.Offset != size.Size() {
			t.Errorf("old pointer %+v, want offset %d (the final commit)", rec, size.Size())
		}
		d.waitFor("new.log read", 30*time.Second, func(r *report) bool {
			return r.Settled && strings.HasSuffix(r.Feeds[0].Path, "new.log") && r.Feeds[0].Pointer != nil && r.Feeds[0].Pointer.Offset == 6
		})
		got := fileLines(t, e.path("out.log"))
		if got[len(got)-1] != "n2" {
			t.Errorf("out.log ends %v", got[len(got)-2:])
		}
	})

	step(t, "status.listen moved", func() {
		addr := freeAddr(t)
		text := strings.Replace(reloadTmpl, "./in.log", "./new.log", 1)
		if err := os.WriteFile(e.cfg, []byte(strings.ReplaceAll(text, addrPlaceholder, addr)), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, _, body := request(t, d, http.MethodPost, "/admin/reload", "sesame", nil); code != http.StatusOK {
			t.Fatalf("reload: %d %s", code, body)
		}
		old := d.addr
		d.addr = addr
		if c := configOf(t, d); c.Reloads < 4 {
			t.Errorf("config %+v", c)
		}
		waitUntil(t, "the old address closed", 10*time.Second, func() bool {
			resp, err := http.Get("http://" + old + "/feed.status")
			if err == nil {
				resp.Body.Close()
			}
			return err != nil
		})
		code, body, _ := d.get("/metrics")
		if code != http.StatusOK || !strings.Contains(string(body), `tailfeed_reloads_total{result="ok"}`) ||
			!strings.Contains(string(body), `tailfeed_reloads_total{result="error"} 1`) {
			t.Errorf("metrics: %d", code)
		}
	})

	d.stop()
	if !strings.Contains(d.log(), "stopped cleanly") {
		t.Errorf("no clean stop:\n%s", tail(d.log(), 2000))
	}
}
