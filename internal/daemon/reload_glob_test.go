package daemon

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/status"
)

// A reload that restarts a COMMITTED glob feed re-reads each stream from
// its own pointer; each subscriber must skip, per stream (epoch), what it
// finished, and a processor the reload adds every line published before
// it. Before, the stop kept one place for the whole feed (the last line's,
// of one stream): the file sink wrote the lines of both files again and
// the new processor received them (out.log "a b x y a b c x y", n.log
// "x y a b c").
func TestReloadGlobFeedSkipsPerStream(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "logs", "one.log"), []byte("a\nb\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "logs", "two.log"), []byte("x\ny\n"), 0o644)
	// [ot]*: the empty file the helper makes at the literal path is not matched.
	const base = `
dataDir: %DIR%/state
status: {listen: "127.0.0.1:0", token: sesame}
shutdownTimeoutMillis: 300
feeds:
  - {name: app, path: "%DIR%/logs/[ot]*.log", pollIntervalMillis: 20}
processors:
  - {name: arch, feed: app, type: file, path: %DIR%/out.log}
  - {name: p, feed: app, type: pull}
`
	e := startIn(t, dir, base, Options{})
	globWait(e, "arch finished 4 lines, p holds them", 10*time.Second, func(f status.FeedReport) bool {
		return f.PendingAcks == 4 && sub(t, f, "arch").Dispatched == 4
	})
	e.rewrite(strings.Replace(base, "pollIntervalMillis: 20", "pollIntervalMillis: 30", 1) +
		"  - {name: n, feed: app, type: file, path: %DIR%/n.log}\n")
	if code, body := e.reload(); code != 200 {
		t.Fatalf("reload: %d %s", code, body)
	}
	f, err := os.OpenFile(filepath.Join(dir, "logs", "one.log"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("c\n")
	f.Close()
	globWait(e, "c written", 10*time.Second, func(f status.FeedReport) bool { return sub(t, f, "n").Dispatched >= 1 })
	time.Sleep(200 * time.Millisecond)
	got := readLines(t, filepath.Join(dir, "out.log"))
	slices.Sort(got)
	if strings.Join(got, ",") != "a,b,c,x,y" {
		t.Errorf("out.log holds %q, want a, b, c, x, y once each", got)
	}
	if n := readLines(t, filepath.Join(dir, "n.log")); strings.Join(n, ",") != "c" {
		t.Errorf("n.log holds %q, want only c (a new processor subscribes from the next line)", n)
	}
}

// globWait is env.waitFor for a glob feed (whose report the schema check
// of env.report, written for one-file feeds, refuses: its epoch is null).
func globWait(e *env, what string, within time.Duration, ok func(status.FeedReport) bool) {
	e.t.Helper()
	for deadline := time.Now().Add(within); ; time.Sleep(10 * time.Millisecond) {
		code, body := e.do(http.MethodGet, "/feed.status", "")
		var r status.Report
		if code == http.StatusOK && json.Unmarshal(body, &r) == nil && len(r.Feeds) > 0 && ok(r.Feeds[0]) {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s; last report: %d %s", what, code, body)
		}
	}
}

// removed.json keeps, per hold, one place per epoch (a glob's streams):
// a subscriber added back across a restart skips every stream's lines
// published while it was gone, not one stream's. A file written with a
// single "through" still reads.
func TestHoldThroughsPerEpoch(t *testing.T) {
	dir := t.TempDir()
	s, err := openHolds(dir)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Dir(s.path), 0o700)
	if err := s.add(holdEntry{Feed: "app", Subscriber: "hook", Lines: 4}); err != nil {
		t.Fatal(err)
	}
	if err := s.markStop("app", []feed.Mark{{Epoch: 1, Position: 4, OK: true}, {Epoch: 2, Position: 4, OK: true}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.markStop("app", []feed.Mark{{Epoch: 1, Position: 6, OK: true}}, nil); err != nil {
		t.Fatal(err)
	}
	s, err = openHolds(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := s.throughMarks("app", "hook")
	want := []feed.Mark{{Epoch: 1, Position: 6, OK: true}, {Epoch: 2, Position: 4, OK: true}}
	if !slices.Equal(got, want) {
		t.Fatalf("throughMarks %+v, want %+v", got, want)
	}
	old := `{"holds":[{"feed":"app","subscriber":"p","lines":2,"through":{"epoch":"00000000000000ab","position":9}}]}`
	if err := os.WriteFile(s.path, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err = openHolds(dir); err != nil {
		t.Fatal(err)
	}
	if got := s.throughMarks("app", "p"); !slices.Equal(got, []feed.Mark{{Epoch: 0xab, Position: 9, OK: true}}) {
		t.Fatalf("a file with one through: %+v", got)
	}
}
