package daemon

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"tailfeed/config"
	"tailfeed/processor"
	"tailfeed/sink/count"
	"tailfeed/sink/file"
	"tailfeed/status"
)

// eoStart runs a daemon in dir; see startIn.
func eoStart(t *testing.T, dir, cfgYAML string, opts Options) *env {
	t.Helper()
	return startIn(t, dir, cfgYAML, opts)
}

// poisonSink builds a real file sink at the processor's path that fails
// with EIO on every write holding "poison" while armed (a sink that cannot
// take one specific line); record, when set, makes it exactlyOnce.
func poisonSink(armed *atomic.Bool, record string) Build {
	return func(pc *config.Processor, g *processor.Group) (any, error) {
		return file.Open(file.Config{
			Path:       pc.Path,
			Checkpoint: g,
			Record:     record,
			Open: func(path string) (file.SinkFile, int64, error) {
				f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
				if err != nil {
					return nil, 0, err
				}
				st, err := f.Stat()
				if err != nil {
					f.Close()
					return nil, 0, err
				}
				return poisonFile{f, armed}, st.Size(), nil
			},
		})
	}
}

type poisonFile struct {
	*os.File
	armed *atomic.Bool
}

func (f poisonFile) Write(p []byte) (int, error) {
	if f.armed.Load() && bytes.Contains(p, []byte("poison")) {
		return 0, &fs.PathError{Op: "write", Path: f.Name(), Err: syscall.EIO}
	}
	return f.File.Write(p)
}

const dlqConfig = `
dataDir: %DIR%/state
status: {listen: "127.0.0.1:0", token: sesame}
shutdownTimeoutMillis: 2000
feeds:
  - {name: app, path: %DIR%/app.log, pollIntervalMillis: 20}
processors:
  - name: sink
    feed: app
    type: file
    path: %DIR%/out.log
    onFailure: deadLetter
    retry: {initialMillis: 1, maxMillis: 4, attempts: 2}
  - {name: other, feed: app, type: discard}
`

func (e *env) dlqJSON(method, path string, wantCode int, v any) {
	e.t.Helper()
	code, body := e.do(method, path, "sesame")
	if code != wantCode {
		e.t.Fatalf("%s %s: %d %s, want %d", method, path, code, body, wantCode)
	}
	if err := json.Unmarshal(body, v); err != nil {
		e.t.Fatalf("%s %s: %v: %q", method, path, err, body)
	}
}

// TestDeadLetterAcrossRestartAndReplay (DESIGN §6): a sink failing for one
// line → after the retry budget the line is in the ledger with its error,
// the later lines flow, deadLettered 1 and lossless false — also after a
// restart (the ledger is read from disk). A replay once the fault is gone
// delivers it: deadLettered 0, lossless true. A purge counts in released.
func TestDeadLetterAcrossRestartAndReplay(t *testing.T) {
	dir := t.TempDir()
	var armed atomic.Bool
	armed.Store(true)
	opts := Options{Processors: map[string]Build{"sink": poisonSink(&armed, "")}}
	e := eoStart(t, dir, dlqConfig, opts)
	e.appendLines("a", "poison line", "b")
	f := e.waitFor("settled with a dead letter", 10*time.Second, func(f status.FeedReport) bool {
		return f.Settled && f.DeadLettered == 1
	})
	if f.Lossless || f.Stalled != nil || f.Pointer.Offset != e.inputSize() {
		t.Fatalf("after the dead letter: lossless %v stalled %v pointer %+v", f.Lossless, f.Stalled, f.Pointer)
	}
	if got := readLines(t, filepath.Join(dir, "out.log")); strings.Join(got, ",") != "a,b" {
		t.Fatalf("output %q, want a, b", got)
	}
	var list status.DLQList
	e.dlqJSON(http.MethodGet, "/admin/dlq/sink", http.StatusOK, &list)
	if list.Total != 1 || len(list.Entries) != 1 {
		t.Fatalf("list %+v", list)
	}
	en := list.Entries[0]
	if en.Line != "poison line" || en.LineBase64 != "cG9pc29uIGxpbmU=" || en.Feed != "app" || en.Position != 14 ||
		en.Attempts != 2 || !strings.Contains(en.Error, "input/output error") || en.Epoch != f.Epoch {
		t.Fatalf("entry %+v", *en.DeadLetterEntry)
	}
	e.Stop()

	e = eoStart(t, dir, dlqConfig, opts)
	f = e.waitFor("settled after the restart", 10*time.Second, settled)
	if f.DeadLettered != 1 || f.Lossless || e.report().Lossless {
		t.Fatalf("after the restart: deadLettered %d lossless %v", f.DeadLettered, f.Lossless)
	}

	armed.Store(false)
	var res status.DLQResult
	e.dlqJSON(http.MethodPost, "/admin/dlq/sink/replay", http.StatusOK, &res)
	if res.Replayed != 1 || res.Remaining != 0 || res.Error != "" {
		t.Fatalf("replay %+v", res)
	}
	f = e.waitFor("lossless after the replay", 10*time.Second, func(f status.FeedReport) bool { return f.Lossless })
	if f.DeadLettered != 0 || !f.Settled {
		t.Fatalf("after the replay: %+v", f)
	}
	if got := readLines(t, filepath.Join(dir, "out.log")); strings.Join(got, ",") != "a,b,poison line" {
		t.Fatalf("output %q", got)
	}

	armed.Store(true)
	e.appendLines("poison again", "c")
	e.waitFor("second dead letter", 10*time.Second, func(f status.FeedReport) bool { return f.Settled && f.DeadLettered == 1 })
	e.dlqJSON(http.MethodDelete, "/admin/dlq/sink?max=5", http.StatusOK, &res)
	if res.Purged != 1 || res.Remaining != 0 {
		t.Fatalf("purge %+v", res)
	}
	f = e.waitFor("purged", 10*time.Second, func(f status.FeedReport) bool { return f.DeadLettered == 0 })
	if f.Released != 1 || f.Lossless {
		t.Fatalf("after the purge: released %d lossless %v, want 1, false", f.Released, f.Lossless)
	}
}

// TestDLQAndStateHTTPErrors: token, unknown processor, bad max, method.
func TestDLQAndStateHTTPErrors(t *testing.T) {
	e := eoStart(t, t.TempDir(), dlqConfig, Options{})
	for _, tc := range []struct {
		method, path, token string
		code                int
	}{
		{http.MethodGet, "/admin/dlq/sink", "", http.StatusUnauthorized},
		{http.MethodGet, "/admin/dlq/sink", "wrong", http.StatusUnauthorized},
		{http.MethodPost, "/admin/dlq/sink/replay", "", http.StatusUnauthorized},
		{http.MethodDelete, "/admin/dlq/sink", "", http.StatusUnauthorized},
		{http.MethodGet, "/v1/state/sink", "", http.StatusUnauthorized},
		{http.MethodGet, "/admin/dlq/nope", "sesame", http.StatusNotFound},
		{http.MethodPost, "/admin/dlq/nope/replay", "sesame", http.StatusNotFound},
		{http.MethodDelete, "/admin/dlq/nope", "sesame", http.StatusNotFound},
		{http.MethodGet, "/v1/state/nope", "sesame", http.StatusNotFound},
		{http.MethodGet, "/v1/state/sink", "sesame", http.StatusNotFound}, // keeps no state
		{http.MethodGet, "/admin/dlq/sink?max=0", "sesame", http.StatusBadRequest},
		{http.MethodGet, "/admin/dlq/sink?max=abc", "sesame", http.StatusBadRequest},
		{http.MethodGet, "/admin/dlq/sink?max=", "sesame", http.StatusBadRequest},
		{http.MethodGet, "/admin/dlq/sink?max=-1", "sesame", http.StatusBadRequest},
		{http.MethodGet, "/admin/dlq/sink?max=10001", "sesame", http.StatusBadRequest},
		{http.MethodPost, "/admin/dlq/sink/replay?max=x", "sesame", http.StatusBadRequest},
		{http.MethodDelete, "/admin/dlq/sink?max=0", "sesame", http.StatusBadRequest},
		{http.MethodPut, "/admin/dlq/sink", "sesame", http.StatusMethodNotAllowed},
		{http.MethodGet, "/admin/dlq/sink/replay", "sesame", http.StatusMethodNotAllowed},
		{http.MethodPost, "/v1/state/sink", "sesame", http.StatusMethodNotAllowed},
		{http.MethodGet, "/admin/dlq/sink?max=10000", "sesame", http.StatusOK},
		{http.MethodPost, "/admin/dlq/sink/replay", "sesame", http.StatusOK},
		{http.MethodDelete, "/admin/dlq/sink", "sesame", http.StatusOK},
	} {
		code, body := e.do(tc.method, tc.path, tc.token)
		if code != tc.code {
			t.Errorf("%s %s (token %q): %d %s, want %d", tc.method, tc.path, tc.token, code, body, tc.code)
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Errorf("%s %s: body is not JSON: %q", tc.method, tc.path, body)
			continue
		}
		if _, ok := m["error"]; code >= 400 && !ok {
			t.Errorf("%s %s: %d without an error field: %s", tc.method, tc.path, code, body)
		}
	}
}

const countConfig = `
dataDir: %DIR%/state
status: {listen: "127.0.0.1:0", token: sesame}
feeds:
  - {name: app, path: %DIR%/app.log, pollIntervalMillis: 20}
processors:
  - name: counter
    feed: app
    type: count
    match: 'level=(?P<key>\w+)'
    exclude: 'skip'
    fsyncIntervalMillis: 10
`

// TestCountStateEndpoint: GET /v1/state/{processor} returns the counts; for
// count, match picks the key and is not a filter (unmatched lines are
// finished uncounted), exclude is; the counts survive a restart.
func TestCountStateEndpoint(t *testing.T) {
	dir := t.TempDir()
	e := eoStart(t, dir, countConfig, Options{})
	e.appendLines("level=info a", "level=warn b", "no level", "level=info c", "level=info skip")
	e.waitFor("settled", 10*time.Second, settled)
	var st count.CountState
	e.dlqJSON(http.MethodGet, "/v1/state/counter", http.StatusOK, &st)
	if len(st.Counts) != 2 || st.Counts["info"] != 2 || st.Counts["warn"] != 1 {
		t.Fatalf("counts %v", st.Counts)
	}
	// The applied position covers the excluded last line too (DESIGN §11:
	// a stored record advances over filtered lines, or a restart's
	// catch-up would take the state for behind the pointer).
	if a := st.Feeds["app"]; a.Position != e.inputSize() {
		t.Fatalf("applied %+v, want through %d", st.Feeds, e.inputSize())
	}
	e.Stop()
	e = eoStart(t, dir, countConfig, Options{})
	e.appendLines("level=warn d")
	e.waitFor("settled", 10*time.Second, settled)
	e.dlqJSON(http.MethodGet, "/v1/state/counter", http.StatusOK, &st)
	if st.Counts["info"] != 2 || st.Counts["warn"] != 2 {
		t.Fatalf("counts after the restart %v", st.Counts)
	}
}

const eoHoldConfig = `
dataDir: %DIR%/state
status: {listen: "127.0.0.1:0"}
shutdownTimeoutMillis: 300
feeds:
  - {name: app, path: %DIR%/app.log, pollIntervalMillis: 20, queueCapacity: 64}
processors:
  - name: archive
    feed: app
    type: file
    path: %DIR%/out.log
    exactlyOnce: true
    retry: {initialMillis: 5, maxMillis: 20, attempts: 3}
`

// TestExactlyOnceSinkENOSPCHolds: an exactlyOnce sink on a full disk holds
// (stalled with the reason, lossless, nothing lost); once there is room the
// feed settles and the output is the input, byte for byte.
func TestExactlyOnceSinkENOSPCHolds(t *testing.T) {
	dir := t.TempDir()
	var failing atomic.Bool
	build := faultySink(&failing, file.FsyncNever)
	opts := Options{Processors: map[string]Build{"archive": func(pc *config.Processor, g *processor.Group) (any, error) {
		s, err := build(pc, g)
		if err != nil {
			return nil, err
		}
		s.(*file.Sink).Close()
		// The same sink with its side record.
		return file.Open(file.Config{Path: pc.Path, Checkpoint: g,
			Record: filepath.Join(dir, "state", "state", pc.Name+".rec"),
			Open: func(path string) (file.SinkFile, int64, error) {
				f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
				if err != nil {
					return nil, 0, err
				}
				st, _ := f.Stat()
				return faultyFile{f, &failing}, st.Size(), nil
			}})
	}}}
	e := eoStart(t, dir, eoHoldConfig, opts)
	e.appendLines(numbered("a", 0, 100)...)
	e.waitFor("settled", 10*time.Second, settled)
	failing.Store(true)
	e.appendLines(numbered("b", 0, 100)...)
	f := e.waitFor("stalled", 10*time.Second, stalled)
	if !strings.Contains(*f.Stalled, "no space left on device") || !f.Lossless || f.Settled {
		t.Fatalf("held: stalled %q lossless %v settled %v", *f.Stalled, f.Lossless, f.Settled)
	}
	failing.Store(false)
	f = e.waitFor("settled after the disk has room", 10*time.Second, settled)
	if !f.Lossless || f.Pointer.Offset != e.inputSize() {
		t.Fatalf("after recovery: lossless %v pointer %+v", f.Lossless, f.Pointer)
	}
	in, _ := os.ReadFile(e.input)
	out, _ := os.ReadFile(filepath.Join(dir, "out.log"))
	if !bytes.Equal(in, out) {
		t.Fatalf("output (%d bytes) differs from the input (%d bytes)", len(out), len(in))
	}
}
