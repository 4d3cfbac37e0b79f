// Package e2e tests the built tailfeed binary from outside, as an operator
// or a launcher sees it: real processes, real files in temp dirs, real
// SIGKILL/SIGTERM, the status port, the CLI's exit codes. Set
// TAILFEED_E2E_RACE=1 to run the daemon itself under the race detector.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// bin is the tailfeed binary built once by TestMain.
var bin string

// TestMain builds bin/tailfeed into a temp dir once per test run. Set
// TAILFEED_E2E_RACE=1 to build it with -race.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tailfeed-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "tailfeed")
	args := []string{"build", "-o", bin}
	if os.Getenv("TAILFEED_E2E_RACE") != "" {
		args = append(args, "-race")
	}
	args = append(args, "tailfeed/cmd/tailfeed")
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: go %s: %v\n%s", strings.Join(args, " "), err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// addrPlaceholder stands for the status listen address in config templates;
// every start replaces it with a port that was free a moment ago.
const addrPlaceholder = "{{ADDR}}"

// env is one test's directory with a config template and the daemons run
// on it, one at a time.
type env struct {
	t    testing.TB
	dir  string
	cfg  string // the config file's path
	tmpl string
	runs []*daemon
}

// newEnv writes nothing yet: each start writes the config with a fresh port.
func newEnv(t testing.TB, tmpl string) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), tmpl: tmpl}
	e.cfg = filepath.Join(e.dir, "tailfeed.yaml")
	t.Cleanup(e.cleanup)
	return e
}

// path returns name inside the test directory.
func (e *env) path(name string) string { return filepath.Join(e.dir, name) }

// cleanup kills what still runs and, on failure, prints the daemons' logs.
func (e *env) cleanup() {
	for _, d := range e.runs {
		if !d.exited() {
			d.cmd.Process.Kill()
			<-d.done
		}
	}
	if !e.t.Failed() {
		return
	}
	for i, d := range e.runs {
		e.t.Logf("--- daemon run %d log (tail) ---\n%s", i, tail(d.log(), 6000))
	}
}

// freeAddr returns 127.0.0.1:PORT for a port that was free when asked.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// cfgWith writes the env's config with addr and returns its path.
func (e *env) cfgWith(addr string) string {
	e.t.Helper()
	if err := os.WriteFile(e.cfg, []byte(strings.ReplaceAll(e.tmpl, addrPlaceholder, addr)), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return e.cfg
}

// daemon is one run of `tailfeed run`.
type daemon struct {
	t       testing.TB
	cmd     *exec.Cmd
	addr    string
	logPath string
	done    chan struct{} // closed when the process has been waited for
	code    int           // exit code; -1 when ended by a signal
	started time.Time
	ended   time.Time
}

// spawn writes the config with a fresh address and starts the daemon without
// waiting for it to be ready.
func (e *env) spawn() *daemon {
	e.t.Helper()
	return e.spawnIn(e.dir)
}

// spawnIn is spawn with the process's working directory at dir and extra
// environment variables.
func (e *env) spawnIn(dir string, extraEnv ...string) *daemon {
	e.t.Helper()
	addr := freeAddr(e.t)
	e.cfgWith(addr)
	d := &daemon{t: e.t, addr: addr, done: make(chan struct{})}
	d.logPath = e.path(fmt.Sprintf("daemon-%d.log", len(e.runs)))
	logf, err := os.Create(d.logPath)
	if err != nil {
		e.t.Fatal(err)
	}
	d.cmd = exec.Command(bin, "run", "--config", e.cfg)
	d.cmd.Dir = dir
	if len(extraEnv) > 0 {
		d.cmd.Env = append(os.Environ(), extraEnv...)
	}
	d.cmd.Stdout = logf
	d.cmd.Stderr = logf
	if err := d.cmd.Start(); err != nil {
		logf.Close()
		e.t.Fatal(err)
	}
	d.started = time.Now()
	e.runs = append(e.runs, d)
	go func() {
		err := d.cmd.Wait()
		d.ended = time.Now()
		logf.Close()
		d.code = exitCode(err)
		close(d.done)
	}()
	return d
}

// start spawns a daemon and waits until /feed.status answers; it retries
// with another port when the chosen one was taken meanwhile.
func (e *env) start() *daemon {
	e.t.Helper()
	return e.startWith(func() *daemon { return e.spawn() }, (*daemon).waitReady)
}

// startIn starts a daemon with the process's working directory at dir (not
// the config's) and extra environment variables, and waits until /healthz
// answers (always open, unlike /feed.status under protectRead).
func (e *env) startIn(dir string, extraEnv ...string) *daemon {
	e.t.Helper()
	return e.startWith(func() *daemon { return e.spawnIn(dir, extraEnv...) }, (*daemon).waitListening)
}

func (e *env) startWith(spawn func() *daemon, ready func(*daemon, time.Duration) error) *daemon {
	e.t.Helper()
	for attempt := 0; ; attempt++ {
		d := spawn()
		err := ready(d, 60*time.Second)
		if err == nil {
			return d
		}
		if d.exited() && strings.Contains(d.log(), "address already in use") && attempt < 5 {
			continue
		}
		e.t.Fatalf("daemon did not become ready: %v\n%s", err, tail(d.log(), 4000))
	}
}

func (d *daemon) exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

func (d *daemon) pid() int { return d.cmd.Process.Pid }

func (d *daemon) log() string {
	b, _ := os.ReadFile(d.logPath)
	return string(b)
}

// waitReady polls /feed.status until it answers 200 or the process ends.
func (d *daemon) waitReady(timeout time.Duration) error {
	return d.waitAnswer(timeout, func() bool {
		_, err := d.status()
		return err == nil
	})
}

// waitListening polls /healthz until it answers (any code) or the process ends.
func (d *daemon) waitListening(timeout time.Duration) error {
	return d.waitAnswer(timeout, func() bool {
		code, _, err := d.get("/healthz")
		return err == nil && code != 0
	})
}

// waitAnswer polls answers until it is true of this daemon, or the process
// ends. An answer alone may come from another process: the port freeAddr
// chose can be taken by a daemon of another test binary (CI runs three)
// before this one binds it, and this one then exits "address already in
// use" (startWith starts it again) while the other answers. So an answer
// counts once this daemon's log says it runs (it logs that after it bound
// its listener), or — a config that logs above info — once it is still
// alive a second after the first answer.
func (d *daemon) waitAnswer(timeout time.Duration, answers func() bool) error {
	deadline := time.Now().Add(timeout)
	var first time.Time
	for time.Now().Before(deadline) {
		if d.exited() {
			return fmt.Errorf("exited with code %d before it was ready", d.code)
		}
		if answers() {
			if strings.Contains(d.log(), "tailfeed running") {
				return nil
			}
			if first.IsZero() {
				first = time.Now()
			} else if time.Since(first) > time.Second {
				return nil
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return errors.New("not ready in time")
}

// kill sends SIGKILL and waits for the process to be gone (its locks too).
func (d *daemon) kill() {
	d.t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil && !d.exited() {
		d.t.Fatalf("kill: %v", err)
	}
	<-d.done
}

// signal sends sig (the process must still run).
func (d *daemon) signal(sig os.Signal) {
	d.t.Helper()
	if err := d.cmd.Process.Signal(sig); err != nil {
		d.t.Fatalf("signal %v: %v", sig, err)
	}
}

// wait waits up to timeout for the exit and returns the exit code.
func (d *daemon) wait(timeout time.Duration) int {
	d.t.Helper()
	select {
	case <-d.done:
		return d.code
	case <-time.After(timeout):
		d.t.Fatalf("daemon pid %d still runs after %v", d.pid(), timeout)
		return 0
	}
}

// stop sends SIGTERM and requires a clean exit (code 0).
func (d *daemon) stop() {
	d.t.Helper()
	d.signal(syscall.SIGTERM)
	if code := d.wait(60 * time.Second); code != 0 {
		d.t.Fatalf("exit code after SIGTERM = %d, want 0\n%s", code, tail(d.log(), 4000))
	}
}

// report is feed.status with every field of DESIGN §7, decoded from its
// JSON field names, not from the daemon's own types.
type report struct {
	Settled  bool         `json:"settled"`
	Lossless bool         `json:"lossless"`
	Version  uint64       `json:"version"`
	Feeds    []feedReport `json:"feeds"`
}

type feedReport struct {
	Feed               string         `json:"feed"`
	Path               string         `json:"path"`
	State              string         `json:"state"`
	Bounded            bool           `json:"bounded"`
	Sequence           uint64         `json:"sequence"`
	Detail             *string        `json:"detail"`
	Drained            bool           `json:"drained"`
	Settled            bool           `json:"settled"`
	Lossless           bool           `json:"lossless"`
	Policy             string         `json:"policy"`
	Dropped            uint64         `json:"dropped"`
	Refused            uint64         `json:"refused"`
	Downgraded         uint64         `json:"downgraded"`
	CompletionFailures uint64         `json:"completionFailures"`
	Released           uint64         `json:"released"`
	DeadLettered       uint64         `json:"deadLettered"`
	Oversized          uint64         `json:"oversized"`
	Unterminated       int64          `json:"unterminated"`
	LostTails          uint64         `json:"lostTails"`
	LostBytes          uint64         `json:"lostBytes"`
	Paused             bool           `json:"paused"`
	Pauses             uint64         `json:"pauses"`
	Acknowledged       uint64         `json:"acknowledged"`
	PendingAcks        int64          `json:"pendingAcks"`
	Consumers          int            `json:"consumers"`
	Stalled            *string        `json:"stalled"`
	Epoch              string         `json:"epoch"`
	Pointer            *pointerReport `json:"pointer"`
	Subscribers        []subReport    `json:"subscribers"`
}

type pointerReport struct {
	Offset         int64  `json:"offset"`
	Epoch          string `json:"epoch"`
	Commits        uint64 `json:"commits"`
	CommitFailures uint64 `json:"commitFailures"`
}

type subReport struct {
	Queue      string `json:"queue"`
	Position   uint64 `json:"position"`
	Dispatched uint64 `json:"dispatched"`
	Drained    bool   `json:"drained"`
	State      string `json:"state"`
}

// feed returns the feed called name, failing the test when there is none.
func (r *report) feed(t testing.TB, name string) feedReport {
	t.Helper()
	for _, f := range r.Feeds {
		if f.Feed == name {
			return f
		}
	}
	t.Fatalf("feed.status has no feed %q", name)
	return feedReport{}
}

// sub returns the subscriber called name, failing the test when there is none.
func (f feedReport) sub(t testing.TB, name string) subReport {
	t.Helper()
	for _, s := range f.Subscribers {
		if s.Queue == name {
			return s
		}
	}
	t.Fatalf("feed %s has no subscriber %q", f.Feed, name)
	return subReport{}
}

var httpClient = &http.Client{Timeout: 5 * time.Second}

// get fetches http://ADDR/path and returns the status code and body.
func (d *daemon) get(path string) (int, []byte, error) {
	resp, err := httpClient.Get("http://" + d.addr + path)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

func (d *daemon) status() (*report, error) {
	code, body, err := d.get("/feed.status")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("/feed.status: %d %s", code, body)
	}
	var r report
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("/feed.status: %v: %s", err, body)
	}
	return &r, nil
}

// statusRaw reads /feed.status raw and decoded; anything but a 200 with a
// JSON report fails t.
func statusRaw(t testing.TB, d *daemon) (*report, []byte) {
	t.Helper()
	code, body, err := d.get("/feed.status")
	if err != nil || code != http.StatusOK {
		t.Fatalf("/feed.status: %d %s %v", code, body, err)
	}
	var r report
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("/feed.status: %v: %s", err, body)
	}
	return &r, body
}

// waitFor polls /feed.status until ok holds, failing the test after timeout.
func (d *daemon) waitFor(what string, timeout time.Duration, ok func(*report) bool) *report {
	d.t.Helper()
	return waitReport(d.t, d, what, timeout, ok)
}

// waitReport is waitFor failing t, for a subtest (t.Fatal must be called
// from the goroutine of the test it fails). A connection error is retried;
// an answer that is not a report fails at once.
func waitReport(t testing.TB, d *daemon, what string, timeout time.Duration, ok func(*report) bool) *report {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last []byte
	var lastErr error
	for time.Now().Before(deadline) {
		if d.exited() {
			t.Fatalf("waiting for %s: daemon exited with code %d\n%s", what, d.code, tail(d.log(), 3000))
		}
		code, body, err := d.get("/feed.status")
		if err == nil {
			var r report
			if code != http.StatusOK {
				t.Fatalf("waiting for %s: /feed.status: %d %s", what, code, body)
			}
			if err := json.Unmarshal(body, &r); err != nil {
				t.Fatalf("waiting for %s: /feed.status: %v: %s", what, err, body)
			}
			if ok(&r) {
				return &r
			}
			last = body
		}
		lastErr = err
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no %s within %v; last report %s (error %v)", what, timeout, last, lastErr)
	return nil
}

// waitSettled waits for the top-level settled.
func (d *daemon) waitSettled(timeout time.Duration) *report {
	d.t.Helper()
	return d.waitFor("settled", timeout, func(r *report) bool { return r.Settled })
}

// cli runs the binary with args and returns stdout, stderr and the exit code.
func cli(t testing.TB, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("tailfeed %s: timed out", strings.Join(args, " "))
	}
	return stdout.String(), stderr.String(), exitCode(err)
}

// exitCode maps a Wait error to the exit code: -1 for death by signal.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -2
}

// pointerRecord is `tailfeed pointer show --json`.
type pointerRecord struct {
	Offset            int64  `json:"offset"`
	Epoch             string `json:"epoch"`
	FileKey           string `json:"fileKey"`
	FingerprintLength int64  `json:"fingerprintLength"`
	Fingerprint       string `json:"fingerprint"`
	Commits           uint64 `json:"commits"`
	Slot              string `json:"slot"`
	Layout            int    `json:"layout"`
}

// showPointer reads a pointer file with the CLI; ok is false when the file
// does not exist yet.
func showPointer(t testing.TB, path string) (pointerRecord, bool) {
	t.Helper()
	var rec pointerRecord
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return rec, false
	}
	out, errOut, code := cli(t, "pointer", "show", "--json", path)
	if code != 0 {
		t.Fatalf("pointer show --json %s: exit %d: %s", path, code, errOut)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		t.Fatalf("pointer show --json: %v: %s", err, out)
	}
	return rec, true
}

// showPointerText runs `pointer show` (text) and returns its key: value pairs.
func showPointerText(t testing.TB, path string) map[string]string {
	t.Helper()
	out, errOut, code := cli(t, "pointer", "show", path)
	if code != 0 {
		t.Fatalf("pointer show: exit %d: %s", code, errOut)
	}
	kv := map[string]string{}
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		k, v, ok := strings.Cut(l, ": ")
		if !ok {
			t.Fatalf("pointer show line %q is not key: value", l)
		}
		kv[k] = v
	}
	return kv
}

// appendTo appends s to path with one write.
func appendTo(t testing.TB, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// request sends one request to d; token "" sends no Authorization header.
func request(t testing.TB, d *daemon, method, path, token string, body []byte) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, "http://"+d.addr+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Timeout: 40 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, out
}

// step runs one step of a test whose steps build on each other (not
// subtests: they could not run alone). It logs the step's name, so that a
// failure is placed, and ends the test when the step failed, so that one
// failure does not cascade into the later steps.
func step(t *testing.T, name string, f func()) {
	t.Helper()
	t.Logf("step: %s", name)
	f()
	if t.Failed() {
		t.FailNow()
	}
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// waitUntil polls cond every few milliseconds, failing after timeout.
func waitUntil(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
