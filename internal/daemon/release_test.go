package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/config"
	"tailfeed/feed"
	"tailfeed/processor"
	"tailfeed/sink/file"
	"tailfeed/status"
)

const holdConfig = `
dataDir: %DIR%/state
status: {listen: "127.0.0.1:0", token: sesame, stallAlertMillis: 100}
shutdownTimeoutMillis: 300
feeds:
  - {name: app, path: %DIR%/app.log, pollIntervalMillis: 20, queueCapacity: 64}
processors:
  - name: archive
    feed: app
    type: file
    path: %DIR%/out.log
    retry: {initialMillis: 5, maxMillis: 20, attempts: 3}
  - {name: other, feed: app, type: discard}
`

func stalled(f status.FeedReport) bool { return f.Stalled != nil }

func (e *env) release(feed, sub string) (int, map[string]any) {
	e.t.Helper()
	code, body := e.do(http.MethodPost, "/admin/release/"+feed+"/"+sub, "sesame")
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		e.t.Fatalf("release answered %d with a body that is not JSON: %q", code, body)
	}
	return code, m
}

// A sink failing with ENOSPC holds the pointer before its first unwritten
// line: stalled with the error, paused, not settled, lossless, /healthz 503.
// Once the disk has room again everything is delivered and the feed
// settles, still lossless. A release while it fails gives up exactly the
// line it is stuck on: released 1, lossless false, the pointer moves on and
// the subscriber goes on with the next line.
func TestFailingSinkHoldsThenReleases(t *testing.T) {
	var failing atomic.Bool
	e := start(t, holdConfig, Options{Processors: map[string]Build{"archive": faultySink(&failing, file.FsyncNever)}})
	first := numbered("a", 0, 100)
	e.appendLines(first...)
	f := e.waitFor("settled", 10*time.Second, settled)
	held := e.inputSize()

	failing.Store(true)
	second := numbered("b", 0, 50)
	e.appendLines(second...)
	f = e.waitFor("stalled", 10*time.Second, stalled)
	// The reason is the sink's error as the disk gave it, the path once.
	want := "subscriber archive failing: write " + e.dir + "/out.log: no space left on device"
	if *f.Stalled != want {
		t.Fatalf("stalled = %q, want %q", *f.Stalled, want)
	}
	e.appendLines("more") // the next publish finds the hold and pauses
	f = e.waitFor("paused", 10*time.Second, func(f status.FeedReport) bool { return f.Paused && f.Stalled != nil })
	if f.Settled || !f.Lossless || f.Pointer.Offset != held || f.Released != 0 {
		t.Fatalf("held feed: %+v pointer %+v (want offset %d)", f, f.Pointer, held)
	}
	if s := sub(t, f, "archive"); s.State != "FENCED" || s.Dispatched != 100 {
		t.Fatalf("archive: %+v", s)
	}
	if s := sub(t, f, "other"); s.State != "LIVE" {
		t.Fatalf("other: %+v", s)
	}
	waitHealth(t, e, "feed app stalled: subscriber archive failing")

	failing.Store(false)
	f = e.waitFor("settled after recovery", 10*time.Second, settled)
	all := append(append(slices.Clone(first), second...), "more")
	if !f.Lossless || f.Stalled != nil || f.Pointer.Offset != e.inputSize() {
		t.Fatalf("recovered: %+v pointer %+v", f, f.Pointer)
	}
	sameLines(t, readLines(t, e.dir+"/out.log"), all)

	// Release while it fails.
	failing.Store(true)
	third := numbered("c", 0, 10)
	e.appendLines(third...)
	e.waitFor("stalled again", 10*time.Second, stalled)
	code, body := e.release("app", "archive")
	if code != http.StatusOK || body["released"] != float64(1) {
		t.Fatalf("release: %d %v", code, body)
	}
	failing.Store(false)
	f = e.waitFor("settled after release", 10*time.Second, settled)
	if f.Lossless || f.Released != 1 || f.Pointer.Offset != e.inputSize() || f.Stalled != nil {
		t.Fatalf("released: %+v pointer %+v", f, f.Pointer)
	}
	if s := sub(t, f, "archive"); s.State != "LIVE" || s.Dispatched != s.Position {
		t.Fatalf("archive after release: %+v", s)
	}
	sameLines(t, readLines(t, e.dir+"/out.log"), append(all, third[1:]...))
	if r := e.report(); r.Lossless {
		t.Fatal("top level lossless after a release")
	}
}

func waitHealth(t *testing.T, e *env, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := e.do(http.MethodGet, "/healthz", "")
		if code == http.StatusServiceUnavailable && strings.Contains(string(body), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz %d %s; want 503 with %q", code, body, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A processor that panics leaves its subscriber dead (quarantined): it
// holds the pointer before the line it died on, the feed is stalled and
// lossless. A release gives up what it had left, restarts it, and the next
// lines reach it.
func TestDeadSubscriberHoldsThenReleases(t *testing.T) {
	rec := &recorder{panicOn: "boom"}
	rec.armed.Store(true)
	e := start(t, holdConfig, Options{Processors: map[string]Build{"archive": rec.build}})
	before := numbered("a", 0, 5)
	e.appendLines(before...)
	f := e.waitFor("settled", 10*time.Second, settled)
	held := e.inputSize()
	after := numbered("b", 0, 5)
	e.appendLines(append([]string{"boom"}, after...)...)
	f = e.waitFor("stalled", 10*time.Second, stalled)
	if !strings.HasPrefix(*f.Stalled, "subscriber archive dead: panic: cannot handle boom") {
		t.Fatalf("stalled = %q", *f.Stalled)
	}
	if s := sub(t, f, "archive"); s.State != "DEAD" || s.Dispatched != 5 {
		t.Fatalf("archive: %+v", s)
	}
	if f.Settled || !f.Lossless || f.Pointer.Offset != held {
		t.Fatalf("dead subscriber: %+v pointer %+v (want offset %d)", f, f.Pointer, held)
	}
	if code, _ := e.release("app", "nobody"); code != http.StatusNotFound {
		t.Fatalf("release of an unknown subscriber: %d", code)
	}
	rec.armed.Store(false)
	code, body := e.release("app", "archive")
	n, _ := body["released"].(float64)
	if code != http.StatusOK || n < 1 || body["state"] != "LIVE" {
		t.Fatalf("release: %d %v", code, body)
	}
	later := numbered("c", 0, 3)
	e.appendLines(later...)
	f = e.waitFor("settled after release", 10*time.Second, func(f status.FeedReport) bool {
		return f.Settled && f.Sequence == 14
	})
	if f.Lossless || f.Released != uint64(n) || f.Pointer.Offset != e.inputSize() {
		t.Fatalf("released: %+v pointer %+v", f, f.Pointer)
	}
	got := rec.got()
	if slices.Contains(got, "boom") || !slices.Equal(got[:5], before) || !slices.Equal(got[len(got)-3:], later) {
		t.Fatalf("processed %v", got)
	}
	if len(got)+int(n) != 14 {
		t.Fatalf("processed %d lines and released %d; want 14 in all", len(got), int(n))
	}
	if code, _ := e.release("app", "archive"); code != http.StatusConflict {
		t.Fatalf("second release of a live subscriber: %d", code)
	}
}

// The admin endpoint follows DESIGN §7's order: token (401), route and
// method (404, 405); every error is a JSON {"error"}.
func TestReleaseHTTPErrors(t *testing.T) {
	e := start(t, holdConfig, Options{})
	cases := []struct {
		method, path, token string
		code                int
	}{
		{"POST", "/admin/release/app/archive", "", 401},
		{"POST", "/admin/release/app/archive", "wrong", 401},
		{"GET", "/admin/release/app/archive", "", 401},
		{"POST", "/admin/release/nope", "", 401},
		{"GET", "/admin/release/app/archive", "sesame", 405},
		{"POST", "/admin/release/nope/archive", "sesame", 404},
		{"POST", "/admin/release/app/nope", "sesame", 404},
		{"POST", "/admin/release/nope", "sesame", 404},
		{"POST", "/admin/release/app/archive", "sesame", 409},
	}
	for _, c := range cases {
		code, body := e.do(c.method, c.path, c.token)
		var m map[string]string
		if code != c.code || json.Unmarshal(body, &m) != nil || m["error"] == "" {
			t.Errorf("%s %s (token %q): %d %s; want %d with {\"error\"}", c.method, c.path, c.token, code, body, c.code)
		}
	}
	if f := e.report().Feeds[0]; f.Released != 0 || !f.Lossless {
		t.Fatalf("failed releases changed the report: %+v", f)
	}
}

// An fsync that keeps failing (fsync: interval) fences the sink with its
// written lines held (the ack point waits for the sync). A release gives
// those unsynced lines up: released counts them, the pointer moves to the
// end, and once syncs work again the subscriber is live and the feed
// settles, lossy.
func TestFailingFsyncHoldsThenReleases(t *testing.T) {
	var failing, failSync atomic.Bool
	e := start(t, holdConfig, Options{Processors: map[string]Build{
		"archive": faultySyncSink(&failing, &failSync, file.FsyncInterval)}})
	e.appendLines(numbered("a", 0, 20)...)
	f := e.waitFor("settled", 10*time.Second, settled)
	held := f.Pointer.Offset
	failSync.Store(true)
	e.appendLines(numbered("b", 0, 30)...)
	f = e.waitFor("stalled", 10*time.Second, stalled)
	want := "subscriber archive failing: fsync " + e.dir + "/out.log: sync " + e.dir + "/out.log: input/output error"
	if *f.Stalled != want {
		t.Fatalf("stalled = %q, want %q", *f.Stalled, want)
	}
	if f.Settled || !f.Lossless || f.Pointer.Offset != held {
		t.Fatalf("held by fsync: %+v pointer %+v (want offset %d)", f, f.Pointer, held)
	}
	if s := sub(t, f, "archive"); s.State != "FENCED" || s.Dispatched != 20 || s.Position != 50 {
		t.Fatalf("archive: %+v", s)
	}
	// Normally all 30 new lines were written in one batch before the sync
	// failed; had the read split them, the rest follow after the release.
	code, body := e.release("app", "archive")
	n, _ := body["released"].(float64)
	if code != http.StatusOK || n < 1 || n > 30 {
		t.Fatalf("release: %d %v", code, body)
	}
	failSync.Store(false)
	f = e.waitFor("settled after release", 10*time.Second, settled)
	if f.Lossless || f.Released != uint64(n) || f.Pointer.Offset != e.inputSize() {
		t.Fatalf("released: %+v pointer %+v", f, f.Pointer)
	}
	if s := sub(t, f, "archive"); s.State != "LIVE" {
		t.Fatalf("archive: %+v", s)
	}
	if got := readLines(t, e.dir+"/out.log"); len(got) != 50 {
		t.Fatalf("sink has %d lines, want the 50 written", len(got))
	}
}

// selfHolder is a processor that fences its subscriber by itself (as pull
// does): it takes a durable hold, and from a line "hold" on it stops making
// lines durable and holds its subscriber FENCED (Host.HoldFence: the group
// does not lift that fence after the batch) until released. It never
// writes the queue's state.
type selfHolder struct {
	g    *processor.Group
	mu   sync.Mutex
	held bool
}

func (s *selfHolder) ProcessBatch(_ context.Context, b *feed.Batch) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.held && slices.ContainsFunc(b.Lines, func(l []byte) bool { return string(l) == "hold" }) {
		s.held = true
		s.g.HoldFence(errors.New("held by its sink"))
	}
	if !s.held {
		s.g.DurableThrough(s.g.Mark())
	}
	return len(b.Lines), nil
}

func (s *selfHolder) ReleaseHold() (uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.held {
		return 0, false
	}
	s.held = false
	q := s.g.Queue()
	before := q.AckPoint()
	n := q.Dispatched() - before
	s.g.ReleaseHeld(n)                 // the group counts them and lifts the hold
	s.g.DurableThrough(q.Dispatched()) // wakes the source
	return n, true
}

// A processor that holds the feed by itself (processor.HoldReleaser) is
// asked to give its held lines up; the release does not wait for a retry
// the group is not in.
func TestReleaseOfASelfHeldSubscriber(t *testing.T) {
	var sh selfHolder
	e := start(t, holdConfig, Options{Processors: map[string]Build{"archive": func(_ *config.Processor, g *processor.Group) (any, error) {
		sh.g = g
		g.Hold()
		return &sh, nil
	}}})
	e.appendLines(numbered("a", 0, 5)...)
	f := e.waitFor("settled", 10*time.Second, settled)
	held := f.Pointer.Offset
	e.appendLines(append([]string{"hold"}, numbered("b", 0, 4)...)...)
	f = e.waitFor("stalled", 10*time.Second, stalled)
	if f.Pointer.Offset != held || !f.Lossless {
		t.Fatalf("self-held: %+v pointer %+v", f, f.Pointer)
	}
	start := time.Now()
	code, body := e.release("app", "archive")
	n, _ := body["released"].(float64)
	if code != http.StatusOK || n != 5 || time.Since(start) > 5*time.Second {
		t.Fatalf("release: %d %v after %v", code, body, time.Since(start))
	}
	f = e.waitFor("settled after release", 10*time.Second, settled)
	if f.Lossless || f.Released != 5 || f.Pointer.Offset != e.inputSize() {
		t.Fatalf("released: %+v pointer %+v", f, f.Pointer)
	}
}
