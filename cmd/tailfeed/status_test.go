package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"tailfeed/config"
	"tailfeed/feed"
	"tailfeed/internal/daemon"
	"tailfeed/processor"
)

// runStatus runs `tailfeed status args…` in-process (mainWith, as main
// does) with TAILFEED_TOKEN unset and returns its exit code and output.
func runStatus(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	t.Setenv("TAILFEED_TOKEN", "")
	var stdout, stderr bytes.Buffer
	code := mainWith(append([]string{"status"}, args...), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// startDaemon runs an in-process daemon on a COMMITTED feed of lines
// already written, with an archive (discard) and a tap subscriber; procs
// swaps in test processors by name.
func startDaemon(t *testing.T, overload string, lines int, procs map[string]daemon.Build) string {
	t.Helper()
	dir := t.TempDir()
	var in bytes.Buffer
	for i := range lines {
		fmt.Fprintf(&in, "line %d\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "app.log"), in.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(`
dataDir: %DIR%/state
status: {listen: "127.0.0.1:0"}
shutdownTimeoutMillis: 300
feeds:
  - name: app
    path: %DIR%/app.log
    queueCapacity: 16
    maxPendingAcks: 64
    overload: {spinBoundMillis: 5`+overload+`}
processors:
  - {name: archive, feed: app, type: file, path: %DIR%/out.log}
  - {name: tap, feed: app, type: discard}
`, "%DIR%", dir)
	path := filepath.Join(dir, "tailfeed.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := daemon.NewWithOptions(cfg, hclog.NewNullLogger(), daemon.Options{Processors: procs})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d.Start(ctx)
	t.Cleanup(func() {
		cancel()
		d.Stop()
	})
	return d.Addr()
}

// stuck never finishes a batch until its context ends.
type stuck struct{}

func (stuck) ProcessBatch(ctx context.Context, _ *feed.Batch) (int, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}

func buildStuck(*config.Processor, *processor.Group) (any, error) { return stuck{}, nil }

// crash panics on its first line.
type crash struct{}

func (crash) Process(context.Context, *feed.Delivery) error { panic("disk on fire") }

func buildCrash(*config.Processor, *processor.Group) (any, error) { return crash{}, nil }

func TestStatusSettledAndLosslessExits0(t *testing.T) {
	addr := startDaemon(t, "", 100, nil)
	code, stdout, stderr := runStatus(t, "--addr", addr, "--wait-settled", "20s")
	if code != 0 || !strings.HasPrefix(stdout, "settled, lossless") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	// A URL works as --addr, and --json prints the report itself.
	code, stdout, _ = runStatus(t, "--addr", "http://"+addr, "--json")
	var rep map[string]any
	if code != 0 || json.Unmarshal([]byte(stdout), &rep) != nil || rep["settled"] != true {
		t.Fatalf("--json: exit %d, stdout %s", code, stdout)
	}
}

// A subscriber that never drains, under PAUSE: not settled in time (3),
// and the output says why; lossless all along.
func TestStatusPausedExits3(t *testing.T) {
	addr := startDaemon(t, "", 500, map[string]daemon.Build{"tap": buildStuck})
	start := time.Now()
	code, stdout, stderr := runStatus(t, "--addr", addr, "--wait-settled", "2s")
	if code != 3 {
		t.Fatalf("exit %d, want 3\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if waited := time.Since(start); waited < 2*time.Second {
		t.Fatalf("gave up after %v, before --wait-settled 2s", waited)
	}
	for _, want := range []string{"not settled", "paused", "subscriber tap LIVE at 0 of"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q: %s", want, stderr)
		}
	}
	if !strings.Contains(stdout, "not settled, lossless") {
		t.Errorf("stdout: %s", stdout)
	}
}

// The same subscriber as a DROP_AFTER_SPIN tap: the feed settles but lossy
// (1), and the output names the feed and its counters.
func TestStatusLossyExits1(t *testing.T) {
	addr := startDaemon(t, ", subscribers: {tap: {policy: DROP_AFTER_SPIN}}", 500, map[string]daemon.Build{"tap": buildStuck})
	code, stdout, stderr := runStatus(t, "--addr", addr, "--wait-settled", "20s")
	if code != 1 || !strings.Contains(stderr, "settled but lossy: feed app (dropped=") {
		t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if !strings.HasPrefix(stdout, "settled, LOSSY") {
		t.Errorf("stdout: %s", stdout)
	}
}

// A dead subscriber stalls the feed: 3 with the stalled reason.
func TestStatusStalledExits3WithReason(t *testing.T) {
	addr := startDaemon(t, "", 10, map[string]daemon.Build{"archive": buildCrash})
	code, stdout, stderr := runStatus(t, "--addr", addr, "--wait-settled", "1s")
	want := "stalled: subscriber archive dead: panic: disk on fire"
	if code != 3 || !strings.Contains(stderr, want) || !strings.Contains(stdout, want) {
		t.Fatalf("exit %d, want 3 and %q\nstdout: %s\nstderr: %s", code, want, stdout, stderr)
	}
}

func TestStatusUnreachableExits2(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	for _, args := range [][]string{{"--addr", addr}, {"--addr", addr, "--wait-settled", "300ms"}} {
		if code, _, stderr := runStatus(t, args...); code != 2 || !strings.Contains(stderr, "unreachable") {
			t.Errorf("%v: exit %d, want 2; stderr %s", args, code, stderr)
		}
	}
	if code, _, _ := runStatus(t, "--addr", "http://[bad"); code != 2 {
		t.Errorf("bad --addr: exit %d, want 2", code)
	}
}

// Answers that are not a feed.status report exit 2 at once.
func TestStatusNotAReportExits2(t *testing.T) {
	bodies := map[string]struct {
		code int
		body string
	}{
		"/other":     {200, `{"hello":"world"}`},
		"/nofeeds":   {200, `{"settled":true,"lossless":true,"version":1}`},
		"/badtype":   {200, `{"settled":"yes","lossless":true,"version":1,"feeds":[]}`},
		"/badfeed":   {200, `{"settled":true,"lossless":true,"version":1,"feeds":[{"state":"CAUGHT_UP"}]}`},
		"/text":      {200, `settled`},
		"/notfound":  {404, `{"error":"no such endpoint"}`},
		"/forbidden": {401, `{"error":"missing or wrong bearer token"}`},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := bodies[r.URL.Path]
		w.WriteHeader(b.code)
		w.Write([]byte(b.body))
	}))
	defer srv.Close()
	for path := range bodies {
		start := time.Now()
		code, _, stderr := runStatus(t, "--addr", srv.URL+path, "--wait-settled", "30s")
		if code != 2 || time.Since(start) > 15*time.Second {
			t.Errorf("%s: exit %d after %v, want 2 at once; stderr %s", path, code, time.Since(start), stderr)
		}
	}
}

// A FAILED feed exits 4 at once, --wait-settled or not, before the 0/1/3
// rule: also when the report is settled and lossy otherwise (DESIGN §12
// precedence). A feed lossy only through the losses ledger is named with
// where to look.
func TestStatusFailedExits4(t *testing.T) {
	bodies := map[string]string{
		"/failed":       `{"settled":false,"lossless":true,"version":3,"feeds":[{"feed":"a","state":"CAUGHT_UP","settled":true,"lossless":true},{"feed":"b","state":"FAILED","detail":"open /x: is a directory","settled":false,"lossless":true}]}`,
		"/failed-lossy": `{"settled":true,"lossless":false,"version":3,"feeds":[{"feed":"b","state":"FAILED","settled":true,"lossless":false,"dropped":3}]}`,
		"/ledger":       `{"settled":true,"lossless":false,"version":3,"feeds":[{"feed":"c","state":"CAUGHT_UP","settled":true,"lossless":false}]}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(bodies[r.URL.Path]))
	}))
	defer srv.Close()
	for _, path := range []string{"/failed", "/failed-lossy"} {
		for _, wait := range []string{"0s", "30s"} {
			start := time.Now()
			code, out, stderr := runStatus(t, "--addr", srv.URL+path, "--wait-settled", wait)
			if code != 4 || time.Since(start) > 15*time.Second || !strings.Contains(stderr, "feed b") || !strings.Contains(out, "FAILED") {
				t.Errorf("%s --wait-settled %s: exit %d after %v, want 4 at once naming feed b\n%s%s", path, wait, code, time.Since(start), out, stderr)
			}
		}
	}
	code, _, stderr := runStatus(t, "--addr", srv.URL+"/ledger")
	if code != 1 || !strings.Contains(stderr, "/admin/losses/c") {
		t.Errorf("ledger-only loss: exit %d, stderr %q; want 1 pointing at /admin/losses/c", code, stderr)
	}
}
