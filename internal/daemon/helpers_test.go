package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"tailfeed/config"
	"tailfeed/feed"
	"tailfeed/internal/testutil"
	"tailfeed/processor"
	"tailfeed/sink/file"
	"tailfeed/status"
)

// env is one in-process daemon on a real file, serving on 127.0.0.1:0.
type env struct {
	t      *testing.T
	dir    string
	input  string
	d      *Daemon
	base   string // http://127.0.0.1:port
	cancel context.CancelFunc
	stop   sync.Once
}

// start writes cfgYAML (with %DIR% standing for a new temp directory) and
// runs a daemon on it; the input file is created empty when missing.
func start(t *testing.T, cfgYAML string, opts Options) *env {
	t.Helper()
	return startIn(t, t.TempDir(), cfgYAML, opts)
}

// startIn runs a daemon on cfgYAML in dir (%DIR% stands for dir), so that a
// test can stop it and start another on the same data directory.
func startIn(t *testing.T, dir, cfgYAML string, opts Options) *env {
	t.Helper()
	text := strings.ReplaceAll(cfgYAML, "%DIR%", dir)
	path := filepath.Join(dir, "tailfeed.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("config: %v\n%s", err, text)
	}
	e := &env{t: t, dir: dir, input: cfg.Feeds[0].Path}
	if _, err := os.Stat(e.input); os.IsNotExist(err) && !config.IsGlob(e.input) {
		if err := os.WriteFile(e.input, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	log := hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: testWriter{t}})
	d, err := NewWithOptions(cfg, log, opts)
	if err != nil {
		t.Fatalf("daemon: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d.Start(ctx)
	e.d, e.cancel, e.base = d, cancel, "http://"+d.Addr()
	t.Cleanup(e.Stop)
	return e
}

// Stop stops the daemon (once).
func (e *env) Stop() {
	e.stop.Do(func() {
		e.cancel()
		if err := e.d.Stop(); err != nil {
			e.t.Logf("stop: %v", err)
		}
	})
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// appendLines appends lines (each plus \n) to the input in one write.
func (e *env) appendLines(lines ...string) {
	e.t.Helper()
	f, err := os.OpenFile(e.input, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	defer f.Close()
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if _, err := f.Write(b.Bytes()); err != nil {
		e.t.Fatal(err)
	}
}

// numbered returns n lines "<prefix><i, 6 digits>" for i in [from, from+n).
func numbered(prefix string, from, n int) []string {
	return testutil.Numbered(prefix+"%06d", from, n)
}

func (e *env) inputSize() int64 {
	st, err := os.Stat(e.input)
	if err != nil {
		e.t.Fatal(err)
	}
	return st.Size()
}

var httpc = &http.Client{Timeout: 10 * time.Second}

// do sends a request and returns the status code and body.
func (e *env) do(method, path, token string) (int, []byte) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.base+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := httpc.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, body
}

// report fetches /feed.status over HTTP, checks its schema and decodes it.
func (e *env) report() status.Report {
	e.t.Helper()
	code, body := e.do(http.MethodGet, "/feed.status", "")
	if code != http.StatusOK {
		e.t.Fatalf("/feed.status: %d %s", code, body)
	}
	checkSchema(e.t, body)
	var r status.Report
	if err := json.Unmarshal(body, &r); err != nil {
		e.t.Fatal(err)
	}
	return r
}

// waitFor polls the report until ok holds or the deadline passes.
func (e *env) waitFor(what string, within time.Duration, ok func(status.FeedReport) bool) status.FeedReport {
	e.t.Helper()
	deadline := time.Now().Add(within)
	for {
		r := e.report()
		if ok(r.Feeds[0]) {
			return r.Feeds[0]
		}
		if time.Now().After(deadline) {
			b, _ := json.MarshalIndent(r, "", " ")
			e.t.Fatalf("timed out waiting for %s; last report:\n%s", what, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func settled(f status.FeedReport) bool { return f.Settled }

// sub returns subscriber name's report.
func sub(t *testing.T, f status.FeedReport, name string) status.SubscriberReport {
	t.Helper()
	for _, s := range f.Subscribers {
		if s.Queue == name {
			return s
		}
	}
	t.Fatalf("no subscriber %s in %+v", name, f.Subscribers)
	return status.SubscriberReport{}
}

// readLines returns the lines of a sink's output file.
func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// blocker is a processor that finishes nothing until opened (or its
// context ends): a subscriber that never drains.
type blocker struct {
	open    chan struct{}
	entered atomic.Int64
}

func newBlocker() *blocker { return &blocker{open: make(chan struct{})} }

func (b *blocker) ProcessBatch(ctx context.Context, bt *feed.Batch) (int, error) {
	b.entered.Add(1)
	select {
	case <-b.open:
		return len(bt.Lines), nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (b *blocker) build(*config.Processor, *processor.Group) (any, error) { return b, nil }

// collector records every line it processes; it panics on a line equal to
// panicOn (while armed).
type recorder struct {
	mu      sync.Mutex
	lines   []string
	panicOn string
	armed   atomic.Bool
}

func (r *recorder) Process(_ context.Context, d *feed.Delivery) error {
	if r.armed.Load() && string(d.Line) == r.panicOn {
		panic("cannot handle " + r.panicOn)
	}
	r.mu.Lock()
	r.lines = append(r.lines, string(d.Line))
	r.mu.Unlock()
	return nil
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lines...)
}

func (r *recorder) build(*config.Processor, *processor.Group) (any, error) { return r, nil }

// faultyFile is a sink file whose writes fail with ENOSPC while failing is
// set (the shape of the error *os.File returns on a full disk).
type faultyFile struct {
	*os.File
	failing *atomic.Bool
}

// syncFaultyFile is a faultyFile whose fsyncs fail with EIO while failSync
// is set.
type syncFaultyFile struct {
	faultyFile
	failSync *atomic.Bool
}

func (f syncFaultyFile) Sync() error {
	if f.failSync.Load() {
		return &fs.PathError{Op: "sync", Path: f.Name(), Err: syscall.EIO}
	}
	return f.File.Sync()
}

func (f faultyFile) Write(p []byte) (int, error) {
	if f.failing.Load() {
		return 0, &fs.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return f.File.Write(p)
}

// faultySink builds a real file sink at the processor's configured path
// whose file fails on demand.
func faultySink(failing *atomic.Bool, fsync file.FsyncMode) Build {
	return faultySyncSink(failing, nil, fsync)
}

// faultySyncSink is faultySink whose fsyncs also fail while failSync is set.
func faultySyncSink(failing, failSync *atomic.Bool, fsync file.FsyncMode) Build {
	return func(pc *config.Processor, g *processor.Group) (any, error) {
		return file.Open(file.Config{
			Path:       pc.Path,
			Fsync:      fsync,
			Interval:   20 * time.Millisecond,
			Checkpoint: g,
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
				if failSync != nil {
					return syncFaultyFile{faultyFile{f, failing}, failSync}, st.Size(), nil
				}
				return faultyFile{f, failing}, st.Size(), nil
			},
		})
	}
}
