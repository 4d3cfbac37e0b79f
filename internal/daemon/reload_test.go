package daemon

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/internal/datadir"
	"tailfeed/status"
)

const reloadBase = `
dataDir: %DIR%/state
status: {listen: "127.0.0.1:0", token: sesame}
shutdownTimeoutMillis: 300
feeds:
  - {name: app, path: %DIR%/app.log, pollIntervalMillis: 20, queueCapacity: 64}
processors:
  - {name: archive, feed: app, type: file, path: %DIR%/out.log}
`

// rewrite replaces the running daemon's config file.
func (e *env) rewrite(cfgYAML string) {
	e.t.Helper()
	text := strings.ReplaceAll(cfgYAML, "%DIR%", e.dir)
	if err := os.WriteFile(filepath.Join(e.dir, "tailfeed.yaml"), []byte(text), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) reload() (int, string) {
	e.t.Helper()
	code, body := e.do(http.MethodPost, "/admin/reload", "sesame")
	return code, string(body)
}

func TestReloadInvalidRunsOnUnchanged(t *testing.T) {
	e := start(t, reloadBase, Options{})
	e.appendLines(numbered("a", 0, 5)...)
	e.waitFor("settled", 10*time.Second, settled)
	e.rewrite(reloadBase + "  - {name: bad, feed: nowhere, type: discard}\n  - {name: worse, feed: app, type: nosuch}\n")
	code, body := e.reload()
	if code != http.StatusBadRequest || !strings.Contains(body, "tailfeed.yaml:9:") || !strings.Contains(body, "tailfeed.yaml:10:") {
		t.Fatalf("reload: %d %s; want 400 with both FILE:LINE errors", code, body)
	}
	e.appendLines(numbered("b", 0, 5)...)
	e.waitFor("settled", 10*time.Second, func(f status.FeedReport) bool { return f.Settled && f.Sequence >= 5 })
	if got := readLines(t, filepath.Join(e.dir, "out.log")); len(got) != 10 {
		t.Fatalf("the daemon did not run on: %d lines", len(got))
	}
	r := e.report()
	if r.Config == nil || r.Config.ReloadFailures != 1 || r.Config.Reloads != 0 || r.Config.LastError == nil ||
		!strings.Contains(*r.Config.LastError, "tailfeed.yaml:9:") {
		t.Fatalf("config: %+v", r.Config)
	}
	_, m := e.do(http.MethodGet, "/metrics", "")
	if !strings.Contains(string(m), `tailfeed_reloads_total{result="error"} 1`) || !strings.Contains(string(m), `tailfeed_reloads_total{result="ok"} 0`) {
		t.Fatalf("metrics lack the reload counters")
	}
	// dataDir cannot change; a body is refused.
	e.rewrite(strings.Replace(reloadBase, "%DIR%/state", "%DIR%/other", 1))
	if code, body := e.reload(); code != http.StatusBadRequest || !strings.Contains(body, "dataDir") {
		t.Fatalf("dataDir change: %d %s", code, body)
	}
	// status.tls turned on with files that do not load: an error at its
	// line, plain HTTP stays (a pair that loads: reload_status_test.go).
	for _, f := range []string{"c.pem", "k.pem"} {
		if err := os.WriteFile(filepath.Join(e.dir, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	e.rewrite(strings.Replace(reloadBase, "token: sesame}", "token: sesame, tls: {certFile: %DIR%/c.pem, keyFile: %DIR%/k.pem}}", 1))
	if code, body := e.reload(); code != http.StatusBadRequest || !strings.Contains(body, "status.tls") {
		t.Fatalf("status.tls change: %d %s", code, body)
	}
	// A feed path that is a directory is a reload error.
	if err := os.Mkdir(filepath.Join(e.dir, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.rewrite(strings.Replace(reloadBase, "%DIR%/app.log", "%DIR%/adir", 1))
	if code, body := e.reload(); code != http.StatusBadRequest || !strings.Contains(body, "is a directory") {
		t.Fatalf("directory path: %d %s", code, body)
	}
	e.rewrite(reloadBase)
	if code, body := e.reload(); code != http.StatusOK || !strings.Contains(body, `"reloaded"`) {
		t.Fatalf("reload: %d %s", code, body)
	}
	if r := e.report(); r.Config.Reloads != 1 || r.Config.LastError != nil {
		t.Fatalf("config after a good reload: %+v", r.Config)
	}
}

func TestReloadAddsProcessor(t *testing.T) {
	e := start(t, reloadBase, Options{})
	e.appendLines(numbered("a", 0, 10)...)
	e.waitFor("settled", 10*time.Second, settled)
	e.rewrite(reloadBase + "  - {name: added, feed: app, type: file, path: %DIR%/added.log}\n")
	if code, body := e.reload(); code != http.StatusOK {
		t.Fatalf("reload: %d %s", code, body)
	}
	e.appendLines(numbered("b", 0, 5)...)
	e.waitFor("settled", 10*time.Second, func(f status.FeedReport) bool { return f.Settled && len(f.Subscribers) == 2 && f.Sequence >= 5 })
	got := readLines(t, filepath.Join(e.dir, "added.log"))
	if strings.Join(got, ",") != strings.Join(numbered("b", 0, 5), ",") {
		t.Fatalf("added processor got %v; want the 5 lines published after the reload", got)
	}
	if n := len(readLines(t, filepath.Join(e.dir, "out.log"))); n != 15 {
		t.Fatalf("archive has %d lines, want 15", n)
	}
}

func TestReloadRemovedSubscriberHolds(t *testing.T) {
	cfg := reloadBase + "  - {name: slow, feed: app, type: discard}\n"
	b := newBlocker()
	dir := t.TempDir()
	e := startIn(t, dir, cfg, Options{Processors: map[string]Build{"slow": b.build}})
	e.appendLines(numbered("a", 0, 20)...)
	e.waitFor("archive done", 10*time.Second, func(f status.FeedReport) bool { return sub(t, f, "archive").Dispatched == 20 })
	e.rewrite(reloadBase)
	if code, body := e.reload(); code != http.StatusOK {
		t.Fatalf("reload: %d %s", code, body)
	}
	f := e.waitFor("stalled", 10*time.Second, func(f status.FeedReport) bool { return f.Stalled != nil })
	if !strings.Contains(*f.Stalled, "removed subscriber slow holds 20 lines") || f.Settled {
		t.Fatalf("stalled: %q settled %v", *f.Stalled, f.Settled)
	}
	if _, err := os.Stat(datadir.RemovedHolds(filepath.Join(dir, "state"))); err != nil {
		t.Fatalf("the hold is not persisted: %v", err)
	}
	// A restart does not clear the hold.
	e.Stop()
	e = startIn(t, dir, reloadBase, Options{})
	f = e.waitFor("stalled after a restart", 10*time.Second, func(f status.FeedReport) bool { return f.Stalled != nil })
	if !strings.Contains(*f.Stalled, "removed subscriber slow holds 20 lines") {
		t.Fatalf("after restart: %q", *f.Stalled)
	}
	// Adding the processor back re-reads nothing: it gets the lines
	// published after the reload; the hold stays.
	e.waitFor("re-read", 10*time.Second, func(f status.FeedReport) bool { return f.Sequence == 20 })
	e.rewrite(reloadBase + "  - {name: slow, feed: app, type: file, path: %DIR%/slow.log}\n")
	if code, body := e.reload(); code != http.StatusOK {
		t.Fatalf("reload: %d %s", code, body)
	}
	e.appendLines("c1", "c2")
	// The restart numbers on from the 20 published (counters are never
	// reset): the held 20 lines are re-read under new sequences, then c1, c2.
	e.waitFor("slow back", 10*time.Second, func(f status.FeedReport) bool {
		return f.Sequence == 42 && sub(t, f, "slow").Drained && f.Stalled != nil
	})
	if got := readLines(t, filepath.Join(dir, "slow.log")); strings.Join(got, ",") != "c1,c2" {
		t.Fatalf("slow added back got %v; want [c1 c2]", got)
	}
	code, body := e.do(http.MethodPost, "/admin/release/app/slow", "sesame")
	if code != http.StatusOK || !strings.Contains(string(body), `"released":20`) {
		t.Fatalf("release: %d %s", code, body)
	}
	f = e.waitFor("settled after release", 10*time.Second, settled)
	if f.Lossless || f.Released != 20 {
		t.Fatalf("after release: lossless %v released %d", f.Lossless, f.Released)
	}
	// Counters are never reset by a reload (this one restarts the feed).
	e.rewrite(reloadBase)
	if code, body := e.reload(); code != http.StatusOK {
		t.Fatalf("reload: %d %s", code, body)
	}
	f = e.waitFor("settled after a reload", 10*time.Second, settled)
	if f.Lossless || f.Released != 20 {
		t.Fatalf("after a reload: lossless %v released %d", f.Lossless, f.Released)
	}
	// Acknowledged losses stay acknowledged across a reload.
	if code, body := e.do(http.MethodDelete, "/admin/losses/app", "sesame"); code != http.StatusOK {
		t.Fatalf("DELETE losses: %d %s", code, body)
	}
	e.rewrite(reloadBase + "  - {name: slow, feed: app, type: file, path: %DIR%/slow.log}\n")
	if code, body := e.reload(); code != http.StatusOK {
		t.Fatalf("reload: %d %s", code, body)
	}
	f = e.waitFor("settled after a reload", 10*time.Second, settled)
	if !f.Lossless || f.Released != 0 {
		t.Fatalf("after DELETE and a reload: lossless %v released %d", f.Lossless, f.Released)
	}
	// The hold is gone; the slow added back is live, not held.
	if code, _ := e.do(http.MethodPost, "/admin/release/app/slow", "sesame"); code != http.StatusConflict {
		t.Fatalf("a second release: %d", code)
	}
}

func TestReloadFeedPathChange(t *testing.T) {
	e := start(t, reloadBase, Options{})
	e.appendLines(numbered("a", 0, 10)...)
	e.waitFor("settled", 10*time.Second, settled)
	off := e.report().Feeds[0].Pointer.Offset
	if off != e.inputSize() {
		t.Fatalf("pointer %d before the reload", off)
	}
	if err := os.WriteFile(filepath.Join(e.dir, "new.log"), []byte("n1\nn2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.rewrite(strings.Replace(reloadBase, "%DIR%/app.log", "%DIR%/new.log", 1))
	if code, body := e.reload(); code != http.StatusOK {
		t.Fatalf("reload: %d %s", code, body)
	}
	olds, _ := filepath.Glob(filepath.Join(e.dir, "state", "feeds", "app.ptr.*.old"))
	if len(olds) != 1 {
		t.Fatalf("old pointer not moved aside: %v", olds)
	}
	e.waitFor("new file read", 10*time.Second, func(f status.FeedReport) bool {
		return f.Settled && strings.HasSuffix(f.Path, "new.log") && f.Pointer != nil && f.Pointer.Offset == 6
	})
	got := readLines(t, filepath.Join(e.dir, "out.log"))
	if len(got) != 12 || got[11] != "n2" {
		t.Fatalf("out: %v", got)
	}
	// The pointer moved aside is tailfeed's: a restart accepts the dataDir
	// and resumes the new path from its own pointer.
	e.Stop()
	e = startIn(t, e.dir, strings.Replace(reloadBase, "%DIR%/app.log", "%DIR%/new.log", 1), Options{})
	e.waitFor("settled after a restart", 10*time.Second, func(f status.FeedReport) bool {
		return f.Settled && f.Pointer != nil && f.Pointer.Offset == 6 && f.Sequence == 0
	})
}

func TestReloadMovesListen(t *testing.T) {
	e := start(t, reloadBase, Options{})
	oldBase := e.base
	// Occupied address (the daemon's own): the reload fails, the old
	// listener stays.
	busy := e.d.Addr()
	e.rewrite(strings.Replace(reloadBase, `listen: "127.0.0.1:0"`, `listen: "`+busy+`"`, 1))
	if code, body := e.reload(); code != http.StatusBadRequest || !strings.Contains(body, "status listen") {
		t.Fatalf("bind failure: %d %s", code, body)
	}
	ln := freePort(t)
	e.rewrite(strings.Replace(reloadBase, `listen: "127.0.0.1:0"`, `listen: "`+ln+`"`, 1))
	if code, body := e.reload(); code != http.StatusOK {
		t.Fatalf("reload: %d %s", code, body)
	}
	e.base = "http://" + ln
	if r := e.report(); r.Config.Reloads != 1 {
		t.Fatalf("new listener: %+v", r.Config)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := http.Get(oldBase + "/feed.status")
		if err != nil {
			break
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("the old listener still answers")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestReloadUnderLoad: 20 reloads (a processor added and removed, a
// feed setting changed) under a steady writer lose no line, and leave no
// goroutine behind once stopped (TestMain's goleak) nor while running.
func TestReloadUnderLoad(t *testing.T) {
	e := start(t, reloadBase, Options{})
	e.appendLines("warm")
	e.waitFor("settled", 10*time.Second, settled)
	time.Sleep(100 * time.Millisecond)
	before := runningGoroutines()
	var stop atomic.Bool
	done := make(chan int)
	go func() {
		n := 0
		for !stop.Load() {
			e.appendLines(numbered("l", n, 10)...)
			n += 10
			time.Sleep(5 * time.Millisecond)
		}
		done <- n
	}()
	for i := 0; i < 20; i++ {
		switch i % 3 {
		case 0:
			e.rewrite(reloadBase + "  - {name: extra, feed: app, type: discard}\n")
		case 1:
			e.rewrite(strings.Replace(reloadBase, "queueCapacity: 64", "queueCapacity: 32", 1))
		default:
			e.rewrite(reloadBase)
		}
		if code, body := e.reload(); code != http.StatusOK {
			stop.Store(true)
			<-done
			t.Fatalf("reload %d: %d %s", i, code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop.Store(true)
	n := <-done
	e.rewrite(reloadBase)
	e.reload()
	e.waitFor("settled", 20*time.Second, func(f status.FeedReport) bool { return f.Settled && f.Stalled == nil })
	got := map[string]bool{}
	for _, l := range readLines(t, filepath.Join(e.dir, "out.log")) {
		got[l] = true
	}
	lost := 0
	for _, l := range numbered("l", 0, n) {
		if !got[l] {
			lost++
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d lines lost across 20 reloads", lost, n)
	}
	r := e.report()
	if !r.Lossless || r.Config.Reloads != 21 {
		t.Fatalf("lossless %v reloads %d", r.Lossless, r.Config.Reloads)
	}
	t.Logf("%d lines written, 0 lost, 21 reloads", n)
	deadline := time.Now().Add(10 * time.Second)
	for runningGoroutines() > before+2 {
		if time.Now().After(deadline) {
			t.Fatalf("goroutines: %d before the reloads, %d after", before, runningGoroutines())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func runningGoroutines() int {
	http.DefaultClient.CloseIdleConnections()
	httpc.CloseIdleConnections()
	return numGoroutine()
}

var _ = json.Marshal
var _ = context.Background

func numGoroutine() int { return runtime.NumGoroutine() }

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestReloadRestartRedeliversNothing: a subscriber that is behind holds the
// pointer; a reload that restarts the feed (a processor added) re-reads
// from the pointer, yet the added processor gets only the lines published
// after the reload and the caught-up one gets no line twice; the slow one
// keeps its position and gets, after the reload, exactly what it had not
// finished.
func TestReloadRestartRedeliversNothing(t *testing.T) {
	cfg := reloadBase + "  - {name: slow, feed: app, type: discard}\n"
	b := newBlocker()
	seen := &recorder{}
	e := start(t, cfg, Options{Processors: map[string]Build{"slow": b.build}})
	e.appendLines(numbered("a", 0, 20)...)
	e.waitFor("archive done", 10*time.Second, func(f status.FeedReport) bool { return sub(t, f, "archive").Drained && f.Sequence == 20 })
	// slow takes its first batch and blocks: it finished nothing.
	e.rewrite(cfg + "  - {name: added, feed: app, type: file, path: %DIR%/added.log}\n")
	e.d.opts.Processors["slow"] = seen.build
	if code, body := e.reload(); code != http.StatusOK {
		t.Fatalf("reload: %d %s", code, body)
	}
	e.appendLines(numbered("b", 0, 5)...)
	e.waitFor("settled", 10*time.Second, func(f status.FeedReport) bool { return f.Settled && len(f.Subscribers) == 3 })
	if got := readLines(t, filepath.Join(e.dir, "added.log")); strings.Join(got, ",") != strings.Join(numbered("b", 0, 5), ",") {
		t.Errorf("added got %v; want only the lines published after the reload", got)
	}
	want := append(numbered("a", 0, 20), numbered("b", 0, 5)...)
	if got := readLines(t, filepath.Join(e.dir, "out.log")); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("archive got %d lines (%v…); want each line once", len(got), got[:min(len(got), 25)])
	}
	if got := seen.got(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("slow's new instance got %d lines; want the 20 it had not finished, then the 5 new ones", len(got))
	}
}

// TestReloadProcessorStateByTarget: a changed processor keeps its durable
// state (the exactlyOnce record) while its target is unchanged; a new
// target moves it aside to state/<processor>.<time>.old/.
func TestReloadProcessorStateByTarget(t *testing.T) {
	cfg := strings.Replace(reloadBase, "path: %DIR%/out.log}", "path: %DIR%/out.log, exactlyOnce: true}", 1)
	e := start(t, cfg, Options{})
	e.appendLines(numbered("a", 0, 5)...)
	e.waitFor("settled", 10*time.Second, settled)
	rec := datadir.Record(filepath.Join(e.dir, "state"), "archive")
	if _, err := os.Stat(rec); err != nil {
		t.Fatalf("no record: %v", err)
	}
	// Same target, another setting: the record stays.
	e.rewrite(strings.Replace(cfg, "exactlyOnce: true}", "exactlyOnce: true, fsync: never}", 1))
	if code, body := e.reload(); code != http.StatusOK {
		t.Fatalf("reload: %d %s", code, body)
	}
	if _, err := os.Stat(rec); err != nil {
		t.Fatalf("record gone with an unchanged target: %v", err)
	}
	olds, _ := filepath.Glob(filepath.Join(e.dir, "state", "state", "archive.*.old"))
	if len(olds) != 0 {
		t.Fatalf("moved aside with an unchanged target: %v", olds)
	}
	// Another path: moved aside, and the processor starts as new.
	e.rewrite(strings.Replace(cfg, "%DIR%/out.log", "%DIR%/out2.log", 1))
	if code, body := e.reload(); code != http.StatusOK {
		t.Fatalf("reload: %d %s", code, body)
	}
	olds, _ = filepath.Glob(filepath.Join(e.dir, "state", "state", "archive.*.old", "archive.rec"))
	if len(olds) != 1 {
		t.Fatalf("record not moved aside: %v", olds)
	}
	// Counters are never reset: the restart numbers on from the last sequence.
	prev := e.waitFor("restarted", 10*time.Second, settled).Sequence
	e.appendLines("b1")
	e.waitFor("settled", 10*time.Second, func(f status.FeedReport) bool { return f.Settled && f.Sequence == prev+1 })
	if got := readLines(t, filepath.Join(e.dir, "out2.log")); strings.Join(got, ",") != "b1" {
		t.Fatalf("out2.log %v", got)
	}
	// What was moved aside is tailfeed's: a restart accepts the dataDir.
	e.Stop()
	startIn(t, e.dir, strings.Replace(cfg, "%DIR%/out.log", "%DIR%/out2.log", 1), Options{})
}

// TestReloadTargetChangeGivesUpDeadLetters: a changed processor's dead
// letters moved aside with its state (its target changed) are given up as
// a purge is: deadLettered drops by them, released grows by them, an entry
// in losses.jsonl names the processor and the .old directory, and the feed
// stays lossless false, across a restart, until DELETE /admin/losses.
func TestReloadTargetChangeGivesUpDeadLetters(t *testing.T) {
	var armed atomic.Bool
	armed.Store(true)
	opts := Options{Processors: map[string]Build{"sink": poisonSink(&armed, "")}}
	e := start(t, dlqConfig, opts)
	e.appendLines("a", "poison", "b")
	e.waitFor("the poison line dead-lettered", 10*time.Second, func(f status.FeedReport) bool { return f.Settled && f.DeadLettered == 1 })
	moved := strings.Replace(dlqConfig, "%DIR%/out.log", "%DIR%/out2.log", 1)
	e.rewrite(moved)
	if code, body := e.reload(); code != http.StatusOK {
		t.Fatalf("reload: %d %s", code, body)
	}
	f := e.waitFor("restarted", 10*time.Second, settled)
	if f.DeadLettered != 0 || f.Released != 1 || f.Lossless {
		t.Fatalf("after the move aside: deadLettered %d released %d lossless %v, want 0, 1, false", f.DeadLettered, f.Released, f.Lossless)
	}
	olds, _ := filepath.Glob(filepath.Join(e.dir, "state", "state", "sink.*.old", "sink.jsonl"))
	if len(olds) != 1 {
		t.Fatalf("ledger not moved aside: %v", olds)
	}
	b, _ := os.ReadFile(filepath.Join(e.dir, "state", "losses.jsonl"))
	var le LossEntry
	if err := json.Unmarshal(b, &le); err != nil || le.Counter != "released" || le.Amount != 1 || le.Feed != "app" ||
		!strings.Contains(le.Detail, "processor sink") || !strings.Contains(le.Detail, filepath.Dir(olds[0])) {
		t.Fatalf("losses.jsonl %q (%v)", b, err)
	}
	e.Stop()
	e = startIn(t, e.dir, moved, opts)
	if f := e.waitFor("started", 10*time.Second, settled); f.Lossless || f.DeadLettered != 0 {
		t.Fatalf("after a restart: lossless %v deadLettered %d, want false, 0", f.Lossless, f.DeadLettered)
	}
	if code, body := e.do(http.MethodDelete, "/admin/losses/app", "sesame"); code != http.StatusOK {
		t.Fatalf("DELETE /admin/losses/app: %d %s", code, body)
	}
	if f := e.waitFor("acknowledged", 10*time.Second, settled); !f.Lossless {
		t.Fatalf("lossless false after the acknowledgement: %+v", f)
	}
}
