package daemon

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/sink/file"
	"tailfeed/status"
)

// readLedger parses dataDir/losses.jsonl line by line.
func readLedger(t *testing.T, dir string) []LossEntry {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "state", lossFile))
	if err != nil {
		t.Fatal(err)
	}
	var out []LossEntry
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l == "" {
			continue
		}
		var e LossEntry
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("ledger line %q: %v", l, err)
		}
		out = append(out, e)
	}
	return out
}

// A release is a counted loss: it reaches losses.jsonl (v 1, counter
// released, the subscriber in detail), and the next run on the same
// dataDir is lossless false with released 0 until DELETE
// /admin/losses/app acknowledges it; a torn last line does not break the
// ledger.
func TestReleaseIsLedgeredAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	var failing atomic.Bool
	opts := Options{Processors: map[string]Build{"archive": faultySink(&failing, file.FsyncNever)}}
	e := startIn(t, dir, holdConfig, opts)
	failing.Store(true)
	e.appendLines(numbered("a", 0, 5)...)
	e.waitFor("stalled", 10*time.Second, stalled)
	if code, body := e.release("app", "archive"); code != http.StatusOK {
		t.Fatalf("release: %d %v", code, body)
	}
	failing.Store(false)
	e.waitFor("settled after release", 10*time.Second, settled)
	e.Stop()

	got := readLedger(t, dir)
	if len(got) != 1 || got[0].V != 1 || got[0].Feed != "app" || got[0].Counter != "released" || got[0].Amount != 1 ||
		len(got[0].Epoch) != 16 || !strings.Contains(got[0].Detail, "subscriber archive") {
		t.Fatalf("ledger after a release of 1 line: %+v", got)
	}
	// A write torn by a power loss: the next entry still lands on a line of its own.
	lf, _ := os.OpenFile(filepath.Join(dir, "state", lossFile), os.O_WRONLY|os.O_APPEND, 0)
	lf.WriteString(`{"v":1,"feed":"ap`)
	lf.Close()

	e = startIn(t, dir, holdConfig, opts)
	f := e.waitFor("settled", 10*time.Second, settled)
	if f.Lossless || f.Released != 0 || e.report().Lossless {
		t.Fatalf("after a restart: lossless %v released %d; want false 0 (the ledger holds the release)", f.Lossless, f.Released)
	}
	if code, body := e.do(http.MethodDelete, "/admin/losses/app", "sesame"); code != http.StatusOK || !strings.Contains(string(body), `"cleared":1`) {
		t.Fatalf("DELETE: %d %s", code, body)
	}
	f = e.waitFor("lossless after DELETE", 10*time.Second, func(f status.FeedReport) bool { return f.Lossless })
	if code, body := e.do(http.MethodGet, "/admin/losses/app", "sesame"); code != http.StatusOK || string(body) != "{\"feed\":\"app\",\"entries\":[]}\n" {
		t.Fatalf("GET after DELETE: %d %s", code, body)
	}
	// A new loss after the torn line is recorded and parsed.
	failing.Store(true)
	e.appendLines(numbered("b", 0, 3)...)
	e.waitFor("stalled", 10*time.Second, stalled)
	e.release("app", "archive")
	failing.Store(false)
	e.waitFor("released again", 10*time.Second, func(f status.FeedReport) bool { return f.Released == 1 && !f.Lossless })
	e.Stop()
	if got := readLedger2(t, dir); len(got) != 1 || got[0].Counter != "released" {
		t.Fatalf("ledger after the second release: %+v", got)
	}
}

// readLedger2 is readLedger that skips lines that do not parse (the torn one).
func readLedger2(t *testing.T, dir string) []LossEntry {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(dir, "state", lossFile))
	var out []LossEntry
	for _, l := range strings.Split(string(b), "\n") {
		var e LossEntry
		if json.Unmarshal([]byte(l), &e) == nil && e.Feed != "" {
			out = append(out, e)
		}
	}
	return out
}

// A lost tail (the rotated file gone at a restart) reaches the ledger
// through the source's OnLoss, with the source's detail and the pointer's
// epoch; the run after it, which counts nothing itself, is still lossless
// false.
func TestLostTailIsLedgered(t *testing.T) {
	dir := t.TempDir()
	cfg := `
dataDir: %DIR%/state
status: {listen: "127.0.0.1:0"}
feeds:
  - {name: app, path: %DIR%/app.log, pollIntervalMillis: 20}
processors:
  - {name: archive, feed: app, type: file, path: %DIR%/out.log}
`
	e := startIn(t, dir, cfg, Options{})
	e.appendLines(numbered("a", 0, 10)...)
	f := e.waitFor("settled", 10*time.Second, settled)
	epoch := f.Epoch
	e.Stop()
	// Rotated while stopped, and the rotated file is gone.
	in := filepath.Join(dir, "app.log")
	if err := os.WriteFile(in+".new", []byte("fresh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(in)
	os.Rename(in+".new", in)

	e = startIn(t, dir, cfg, Options{})
	f = e.waitFor("settled", 10*time.Second, settled)
	if f.LostTails != 1 || f.Lossless {
		t.Fatalf("after the rotated file vanished: lostTails %d lossless %v", f.LostTails, f.Lossless)
	}
	e.Stop()
	got := readLedger(t, dir)
	if len(got) != 1 || got[0].Counter != "lostTails" || got[0].Amount != 1 || got[0].Epoch != epoch || got[0].Detail != "rotated file gone; its unread tail is lost" {
		t.Fatalf("ledger: %+v (want one lostTails entry under epoch %s)", got, epoch)
	}
	e = startIn(t, dir, cfg, Options{})
	f = e.waitFor("settled", 10*time.Second, settled)
	if f.LostTails != 0 || f.Lossless {
		t.Fatalf("the run after: lostTails %d lossless %v, want 0 false", f.LostTails, f.Lossless)
	}
}
