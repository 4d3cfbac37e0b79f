package daemon

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/overload"
	"tailfeed/pointer"
	"tailfeed/source/file"
	"tailfeed/status"
)

// Review of session 6: reload (Publisher.StartAt(seq, acked) and the
// carried `dispatched`), and source/file/open.go's unnamed record with
// nothing at the path (the source is driven directly, as in
// source/file/unnamed_record_test.go).

// TestRevS6bReaddedProcessorAfterReleaseSettles: DESIGN §12 "Reload": a new
// processor subscribes from the next line its feed publishes (it owes none
// of the earlier sequences); adding back a removed processor re-reads
// nothing. DESIGN §7: `drained` is "its queue is empty"; the feed settles
// once every holding queue is drained. Expected: a processor removed with a
// hold, released, then added back by a reload while the feed is idle is
// drained (dispatched == position) and the feed settles. Observed: the
// reload carries the removed subscriber's hold row (its `dispatched` is the
// hold's line count, 20, not a sequence) into c.dispatched under the same
// name, and addCarry shows it as the new processor's `dispatched` until it
// finishes a line: dispatched 20 < position 40, drained false, the feed
// never settles while its input stays idle.
func TestRevS6bReaddedProcessorAfterReleaseSettles(t *testing.T) {
	_, e := startWithStuckSlow(t)
	// Remove slow: its 20 unfinished lines become a hold.
	e.rewrite(reloadBase)
	if code, body := e.reload(); code != http.StatusOK {
		t.Fatalf("reload: %d %s", code, body)
	}
	e.waitFor("stalled", 10*time.Second, func(f status.FeedReport) bool { return f.Stalled != nil })
	if code, body := e.do(http.MethodPost, "/admin/release/app/slow", "sesame"); code != http.StatusOK {
		t.Fatalf("release: %d %s", code, body)
	}
	e.waitFor("settled after release", 10*time.Second, settled)
	// Add slow back (a new processor: it owes nothing published before).
	e.rewrite(reloadBase + "  - {name: slow, feed: app, type: file, path: %DIR%/slow.log}\n")
	if code, body := e.reload(); code != http.StatusOK {
		t.Fatalf("reload: %d %s", code, body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := e.report()
		f := r.Feeds[0]
		s := sub(t, f, "slow")
		if f.Settled && s.Drained && s.Dispatched == s.Position {
			return
		}
		if time.Now().After(deadline) {
			js, _ := json.MarshalIndent(f, "", " ")
			t.Fatalf("a processor added back (after its hold was released) is not drained and the idle feed never settles: slow position %d dispatched %d drained %v; report:\n%s",
				s.Position, s.Dispatched, s.Drained, js)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startWithStuckSlow starts reloadBase plus a processor "slow" that never
// finishes a line, appends 20 lines and waits until archive finished them;
// it returns the config and the env.
func startWithStuckSlow(t *testing.T) (string, *env) {
	t.Helper()
	cfg := reloadBase + "  - {name: slow, feed: app, type: discard}\n"
	b := newBlocker()
	e := start(t, cfg, Options{Processors: map[string]Build{"slow": b.build}})
	e.appendLines(numbered("a", 0, 20)...)
	e.waitFor("archive done", 10*time.Second, func(f status.FeedReport) bool { return sub(t, f, "archive").Dispatched == 20 })
	return cfg, e
}

// TestRevS6bMetricsDispatchedAfterReload: the change makes feed.status show
// a kept subscriber's `dispatched` as its earlier ack point until the new
// instance finishes a line ("acknowledged and dispatched never claim lines
// the earlier instance's subscribers did not finish"). /metrics'
// tailfeed_subscriber_lines_dispatched_total is the same quantity ("The
// subscriber's ack point"). Expected: after a reload, a subscriber that
// finished none of its 20 lines shows dispatched 0 in both. Observed:
// /metrics still adds the carried sequence (report.go metrics():
// Dispatched += f.carry.seq) and claims 20 lines finished while
// feed.status says 0.
func TestRevS6bMetricsDispatchedAfterReload(t *testing.T) {
	cfg, e := startWithStuckSlow(t)
	// A feed setting changes: the feed restarts, slow is kept (and still
	// finishes nothing).
	e.rewrite(strings.Replace(cfg, "pollIntervalMillis: 20", "pollIntervalMillis: 25", 1))
	if code, body := e.reload(); code != http.StatusOK {
		t.Fatalf("reload: %d %s", code, body)
	}
	f := e.waitFor("reloaded", 10*time.Second, func(f status.FeedReport) bool { return f.Sequence >= 20 })
	if d := sub(t, f, "slow").Dispatched; d != 0 {
		t.Fatalf("feed.status: slow dispatched %d; the review expects 0 (it finished nothing)", d)
	}
	code, body := e.do(http.MethodGet, "/metrics", "")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	var got string
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "tailfeed_subscriber_lines_dispatched_total{") && strings.Contains(l, `"slow"`) {
			got = l
		}
	}
	if got == "" {
		t.Fatalf("no dispatched metric for slow:\n%s", body)
	}
	if !strings.HasSuffix(got, " 0") {
		t.Fatalf("/metrics claims lines slow never finished: %q (feed.status: dispatched 0)", got)
	}
}

// TestRevS6bWebhookCarryAfterReloadNotStuck: DESIGN §6 webhook: after a
// restart the sink rebuilds the recorded request under the same key;
// webhook/carry.go "Why waiting cannot deadlock": when the window is full
// and every line before the carry is acknowledged, evidence (4) lets the
// carry go (starved: acked+1 >= the carry's first sequence). A reload
// restarts the feed "from its pointer" (DESIGN §12). Expected: a webhook
// that was retrying a 64-line request when a reload shrank the feed's
// window (queueCapacity 8, maxPendingAcks 10) delivers every line once its
// server answers again, and the feed settles. Observed: StartAt(seq,
// acked) now leaves acknowledged at the earlier instance's 0 while the
// carry's first line gets sequence seq+1, so acked+1 < carry seq holds for
// ever: the carry never goes, the window stays full, the feed stays paused
// and the lines are never delivered (before the change acknowledged
// started at seq and (4) held).
func TestRevS6bWebhookCarryAfterReloadNotStuck(t *testing.T) {
	var failing atomic.Bool
	failing.Store(true)
	var mu sync.Mutex
	seen := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if failing.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		mu.Lock()
		for _, l := range strings.Split(strings.TrimSpace(string(body)), "\n") {
			var o struct {
				Line string `json:"line"`
			}
			if json.Unmarshal([]byte(l), &o) == nil {
				seen[o.Line] = true
			}
		}
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	const base = `
dataDir: %DIR%/state
status: {listen: "127.0.0.1:0", token: sesame}
shutdownTimeoutMillis: 300
feeds:
  - {name: app, path: %DIR%/app.log, pollIntervalMillis: 20, queueCapacity: QC, maxPendingAcks: MPA}
processors:
  - {name: hook, feed: app, type: webhook, url: "URL", batchMaxLines: 500, retry: {initialMillis: 20, maxMillis: 50, attempts: 1000}}
`
	cfg := func(qc, mpa string) string {
		return strings.NewReplacer("QC", qc, "MPA", mpa, "URL", srv.URL).Replace(base)
	}
	e := start(t, cfg("64", "1000"), Options{})
	e.appendLines(numbered("a", 0, 64)...)
	// The hook records its request and keeps retrying it.
	e.waitFor("published", 10*time.Second, func(f status.FeedReport) bool { return f.Sequence == 64 })
	time.Sleep(300 * time.Millisecond)
	// The operator shrinks the window; the feed restarts from its pointer.
	e.rewrite(cfg("8", "10"))
	if code, body := e.reload(); code != http.StatusOK {
		t.Fatalf("reload: %d %s", code, body)
	}
	failing.Store(false)
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := e.report()
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if n == 64 && r.Feeds[0].Settled {
			return
		}
		if time.Now().After(deadline) {
			js, _ := json.MarshalIndent(r.Feeds[0], "", " ")
			t.Fatalf("after the reload the webhook's rebuilt request never goes: %d of 64 lines delivered; report:\n%s", n, js)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRevS6bBestEffortLeftoversDrainedAfterReload: DESIGN §5: lines still
// in a DROP_AFTER_SPIN subscriber's queue when the stop's bound expires
// count in `dropped`; §7: a subscriber is `drained` when its queue is
// empty, and the feed's `drained` when every subscriber is. A reload's
// restarted instance skips every line a best-effort queue was given
// (reload.go stopFeed: "a line counted lost is never delivered after all").
// Expected: after a reload that restarted the feed, the tap whose 20 lines
// were counted dropped at the stop owes nothing: its queue is empty, it is
// drained and so is the idle feed. Observed: addCarry shows the earlier
// instance's finished count (0) as the tap's `dispatched` until it finishes
// a line in the new instance, so with position 20 it is never drained, nor
// is the feed, while the input stays idle (before the change: 20, drained).
func TestRevS6bBestEffortLeftoversDrainedAfterReload(t *testing.T) {
	cfg := reloadBase + "  - {name: tap, feed: app, type: discard}\n"
	cfg = strings.Replace(cfg, "queueCapacity: 64}", "queueCapacity: 64, overload: {subscribers: {tap: {policy: DROP_AFTER_SPIN}}}}", 1)
	b := newBlocker()
	e := start(t, cfg, Options{Processors: map[string]Build{"tap": b.build}})
	e.appendLines(numbered("a", 0, 20)...)
	e.waitFor("archive done", 10*time.Second, func(f status.FeedReport) bool {
		return sub(t, f, "archive").Dispatched == 20 && f.Settled
	})
	e.rewrite(strings.Replace(cfg, "pollIntervalMillis: 20", "pollIntervalMillis: 25", 1))
	if code, body := e.reload(); code != http.StatusOK {
		t.Fatalf("reload: %d %s", code, body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		f := e.report().Feeds[0]
		s := sub(t, f, "tap")
		if f.Dropped != 20 {
			t.Fatalf("dropped %d; want the tap's 20 lines counted at the stop", f.Dropped)
		}
		if f.Settled && s.Drained && f.Drained {
			return
		}
		if time.Now().After(deadline) {
			js, _ := json.MarshalIndent(f, "", " ")
			t.Fatalf("after the reload the tap (its 20 lines counted dropped, its queue empty) is not drained: position %d dispatched %d; report:\n%s",
				s.Position, s.Dispatched, js)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRevS6bUnnamedRecordEmptyAdoptionCompressedNoLoss: DESIGN §4 "Nothing
// green over a loss" counts a lost tail only where tailfeed cannot show
// that no line was skipped, and "Restart after rotation" reads every
// generation still on disk, a .gz through gzip. Session 6 made a record
// with an epoch but no identity take its file from the epochs file also
// with nothing at the path. Setup: the input was adopted while still empty
// (the adopted line has a file key and fingerprint length 0), lines were
// written and published, then a kill -9 before the first commit; while
// stopped logrotate rotated and compressed it (app.log.1.gz) and no new
// file is at the path yet. Expected: the .gz is read from its start and
// nothing is counted lost (before the change this case read it as a later
// generation, lostTails 0). Observed: the adopted line's key is not the
// .gz's and its empty fingerprint matches no copy, so the restart counts a
// lost tail (lostTails 1, lossless false) although it then reads every line
// of the .gz.
func TestRevS6bUnnamedRecordEmptyAdoptionCompressedNoLoss(t *testing.T) {
	dir, data := t.TempDir(), t.TempDir()
	input := filepath.Join(dir, "app.log")
	epochs := filepath.Join(data, "app.epochs")
	ptrPath := filepath.Join(data, "app.ptr")
	if err := os.WriteFile(input, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(input)
	if err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(in.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	p, err := pointer.Open(ptrPath, pointer.Options{EpochsPath: epochs, Input: input})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Adopt(in, pointer.FileKey(uint64(st.Dev), st.Ino)); err != nil {
		t.Fatal(err)
	}
	in.Close()
	// Lines written (and published) after the adoption; killed before the
	// first commit.
	if err := os.WriteFile(input, []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.Close()
	time.Sleep(50 * time.Millisecond)
	// Rotated and compressed while stopped (logrotate compress); nothing at
	// the path yet.
	later := time.Now()
	gz, err := os.Create(input + ".1.gz")
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(gz)
	zw.Write([]byte("one\ntwo\n"))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	gz.Close()
	os.Chtimes(input+".1.gz", later, later)
	if err := os.Remove(input); err != nil {
		t.Fatal(err)
	}
	p, err = pointer.Open(ptrPath, pointer.Options{EpochsPath: epochs, Input: input})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	q := feed.NewQueue("rec", 64, 1<<20, overload.Policy{Kind: overload.Pause})
	pub := feed.NewPublisher("app", []*feed.Queue{q}, 1024, 64)
	src := file.New(file.Config{Feed: "app", Path: input, Strategy: file.Committed,
		Pointer: p, NoNotify: true, Poll: 20 * time.Millisecond}, pub)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		src.Run(ctx)
	}()
	defer func() { cancel(); <-done }()
	var got []string
	deadline := time.Now().Add(10 * time.Second)
	for len(got) < 2 && time.Now().Before(deadline) {
		pctx, pcancel := context.WithTimeout(ctx, time.Until(deadline))
		b, err := q.Pop(pctx)
		pcancel()
		if err != nil {
			break
		}
		for _, l := range b.Lines {
			got = append(got, string(l))
		}
		q.AddDispatched(uint64(len(b.Lines)))
		b.Release()
	}
	if len(got) != 2 || got[0] != "one" || got[1] != "two" {
		t.Fatalf("lines read from the compressed generation: %q; want [one two]", got)
	}
	if n := src.LostTails(); n != 0 {
		t.Fatalf("lostTails %d (detail %q): every line of the rotated file was read from its .gz, nothing is lost", n, src.Detail())
	}
}
