package daemon

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"tailfeed/internal/testutil"
	"tailfeed/status"
)

// overloadConfig is a COMMITTED feed with small queues, a file sink
// (archive) and a second subscriber (slow) that tests swap for a blocker;
// extra goes under the feed's overload section.
func overloadConfig(window int, extra string) string {
	return `
dataDir: %DIR%/state
status: {listen: "127.0.0.1:0", stallAlertMillis: 150}
shutdownTimeoutMillis: 300
feeds:
  - name: app
    path: %DIR%/app.log
    queueCapacity: 16
    maxPendingAcks: ` + strconv.Itoa(window) + `
    pollIntervalMillis: 20
    overload:
      spinBoundMillis: 5
      blockDeadlineMillis: 5
` + extra + `
processors:
  - {name: archive, feed: app, type: file, path: %DIR%/out.log}
  - {name: slow, feed: app, type: discard}
`
}

func sameLines(t *testing.T, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("sink has %d lines, want %d (first difference at %d)", len(got), len(want), testutil.FirstDiff(got, want))
	}
}

// A PAUSE subscriber that never drains pauses the feed: not settled, not
// stalled (nothing failed), nothing dropped, lossless; /healthz turns 503
// once the pause outlasts stallAlertMillis. When it drains, every line
// arrives and the feed settles.
func TestPauseSubscriberThatNeverDrains(t *testing.T) {
	slow := newBlocker()
	e := start(t, overloadConfig(64, ""), Options{Processors: map[string]Build{"slow": slow.build}})
	if code, body := e.do(http.MethodGet, "/healthz", ""); code != http.StatusOK {
		t.Fatalf("/healthz before any pause: %d %s", code, body)
	}
	lines := numbered("line-", 0, 500)
	e.appendLines(lines...)
	f := e.waitFor("paused", 10*time.Second, func(f status.FeedReport) bool { return f.Paused })
	deadline := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(deadline) {
		f = e.report().Feeds[0]
		if f.Settled || !f.Paused || f.Dropped != 0 || f.Refused != 0 || !f.Lossless || f.Stalled != nil {
			t.Fatalf("paused feed reports %+v", f)
		}
		if s := sub(t, f, "slow"); s.State != "LIVE" || s.Drained {
			t.Fatalf("slow subscriber %+v", s)
		}
		if f.Sequence >= 500 {
			t.Fatalf("sequence %d: the source did not pause", f.Sequence)
		}
	}
	deadline = time.Now().Add(10 * time.Second)
	for {
		code, body := e.do(http.MethodGet, "/healthz", "")
		if code == http.StatusServiceUnavailable {
			if !strings.Contains(string(body), "feed app paused") {
				t.Fatalf("/healthz 503 body %s", body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz still %d %s", code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(slow.open)
	f = e.waitFor("settled", 20*time.Second, settled)
	if !f.Lossless || f.Sequence != 500 || f.Acknowledged != 500 || f.Pointer.Offset != e.inputSize() {
		t.Fatalf("after draining: %+v pointer %+v", f, f.Pointer)
	}
	sameLines(t, readLines(t, e.dir+"/out.log"), lines)
	if code, body := e.do(http.MethodGet, "/healthz", ""); code != http.StatusOK {
		t.Fatalf("/healthz after the pause: %d %s", code, body)
	}
}

// A DROP_AFTER_SPIN override makes only that subscriber lossy: the feed
// settles, counts its drops, is not lossless, and the other subscriber got
// every line with the pointer at the end of the input.
func TestDropOverrideIsolatesLossyTap(t *testing.T) {
	slow := newBlocker()
	defer close(slow.open)
	e := start(t, overloadConfig(64, "      subscribers: {slow: {policy: DROP_AFTER_SPIN}}"),
		Options{Processors: map[string]Build{"slow": slow.build}})
	lines := numbered("line-", 0, 500)
	e.appendLines(lines...)
	f := e.waitFor("settled", 20*time.Second, func(f status.FeedReport) bool { return f.Settled && f.Sequence == 500 })
	if f.Dropped == 0 || f.Lossless || f.Refused != 0 || f.Stalled != nil || f.Policy != "PAUSE" {
		t.Fatalf("lossy tap: %+v", f)
	}
	if f.Acknowledged != 500 || f.PendingAcks != 0 || f.Pointer.Offset != e.inputSize() {
		t.Fatalf("pointer-holding side: acknowledged %d pending %d pointer %+v (input %d)", f.Acknowledged, f.PendingAcks, f.Pointer, e.inputSize())
	}
	s := sub(t, f, "slow")
	if s.Position+f.Dropped != 500 || s.Drained {
		t.Fatalf("slow: %+v with %d dropped; want position+dropped = 500", s, f.Dropped)
	}
	sameLines(t, readLines(t, e.dir+"/out.log"), lines)
	r := e.report()
	if r.Settled != true || r.Lossless != false {
		t.Fatalf("top level settled %v lossless %v", r.Settled, r.Lossless)
	}
}

// BLOCK_WITH_DEADLINE refuses batches for the full queue after the
// deadline (counted, lossy) but the lines that queue did get still hold the
// pointer until it finishes them.
func TestBlockWithDeadlineRefusesAndHolds(t *testing.T) {
	slow := newBlocker()
	e := start(t, overloadConfig(1000, "      subscribers: {slow: {policy: BLOCK_WITH_DEADLINE}}"),
		Options{Processors: map[string]Build{"slow": slow.build}})
	lines := numbered("line-", 0, 500)
	e.appendLines(lines...)
	f := e.waitFor("all published", 20*time.Second, func(f status.FeedReport) bool { return f.Sequence == 500 })
	if f.Refused == 0 || f.Lossless || f.Dropped != 0 || f.Settled {
		t.Fatalf("refusing feed: %+v", f)
	}
	if f.Pointer.Offset != 0 || f.Acknowledged != 0 {
		t.Fatalf("the lines slow holds must hold the pointer: %+v acknowledged %d", f.Pointer, f.Acknowledged)
	}
	s := sub(t, f, "slow")
	if s.Position+f.Refused != 500 {
		t.Fatalf("slow: %+v with %d refused; want position+refused = 500", s, f.Refused)
	}
	close(slow.open)
	f = e.waitFor("settled", 20*time.Second, settled)
	if f.Lossless || f.Pointer.Offset != e.inputSize() || f.Acknowledged != 500 {
		t.Fatalf("after draining: %+v pointer %+v", f, f.Pointer)
	}
	sameLines(t, readLines(t, e.dir+"/out.log"), lines)
}

// A best-effort subscriber that dies never stalls the feed: it is DEAD in
// the report, the feed is not stalled, settles, and the pointer follows the
// other subscriber; what the dead tap never finished counts as dropped at
// the stop.
func TestDeadBestEffortTapNeverStalls(t *testing.T) {
	tap := &recorder{panicOn: "line-000010"}
	tap.armed.Store(true)
	e := start(t, overloadConfig(64, "      subscribers: {slow: {policy: DROP_AFTER_SPIN}}"),
		Options{Processors: map[string]Build{"slow": tap.build}})
	lines := numbered("line-", 0, 200)
	e.appendLines(lines...)
	f := e.waitFor("settled", 20*time.Second, func(f status.FeedReport) bool { return f.Settled && f.Sequence == 200 })
	if f.Stalled != nil || f.Pointer.Offset != e.inputSize() || f.Acknowledged != 200 {
		t.Fatalf("feed with a dead tap: %+v pointer %+v", f, f.Pointer)
	}
	if s := sub(t, f, "slow"); s.State != "DEAD" || f.Consumers != 1 {
		t.Fatalf("tap %+v, consumers %d", s, f.Consumers)
	}
	sameLines(t, readLines(t, e.dir+"/out.log"), lines)
	s := sub(t, f, "slow")
	e.Stop()
	if got := e.d.Report().Feeds[0].Dropped; got != f.Dropped+s.Position-s.Dispatched {
		t.Fatalf("dropped after stop %d, want %d + the %d lines the tap was given and never finished", got, f.Dropped, s.Position-s.Dispatched)
	}
}
