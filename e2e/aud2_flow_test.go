package e2e

// Second-pass black-box audit of DESIGN §2 (delivery contract), §5 (feed,
// overload, acknowledgement window), §7 (feed.status, /metrics, HTTP) and §9
// against the built binary. TestAud2X… tests are findings: each fails on the
// binary as it stands and names the DESIGN sentence it holds it to.
// TestAud2OK… tests are passing probes of rules that were checked and held.

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// aud2PullCfg is a COMMITTED feed read by one pull subscriber whose
// deliveries stay out for a minute unless acknowledged; QC is replaced by
// the feed's queueCapacity, so that a reload can change a feed setting.
const aud2PullCfg = `dataDir: ./state
status: {listen: "` + addrPlaceholder + `", token: ` + ctToken + `}
shutdownTimeoutMillis: 300
feeds:
  - name: app
    path: ./in.log
    queueCapacity: QC
processors:
  - {name: pl, feed: app, type: pull, ackTimeoutMillis: 60000}
`

// TestAud2XReloadAcknowledgedClaimsUnackedLines checks DESIGN §7:
// "`acknowledged`: the highest sequence every pointer-holding subscriber has
// finished (0 = none)" and "Subscriber `position`/`dispatched`: lines given
// to its queue / its ack point, this run", with §1 "Ack point ... how many
// of its lines ... are all done (... for `pull` also acknowledged by the
// client)", across a reload that changes a feed setting (§12: the feed "is
// stopped the same way, then started again from its pointer"; "Counters are
// never reset by a reload").
//
// Ten lines are published to a pull subscriber; a client pulls three and
// acknowledges none. A reload changes the feed's queueCapacity. No client
// has acknowledged any line, the pointer is still at 0, so `acknowledged`
// must stay 0 and the subscriber's `dispatched` (its ack point) 0.
//
// Observed: after the reload the feed re-publishes the ten lines as
// sequences 11–20 and reports `acknowledged` 10 and the subscriber's
// `dispatched` 10 (and tailfeed_feed_lines_acknowledged_total 10) although
// not one line was acknowledged: the status claims work that was never done.
func TestAud2XReloadAcknowledgedClaimsUnackedLines(t *testing.T) {
	e := newEnv(t, strings.ReplaceAll(aud2PullCfg, "QC", "100"))
	in := newInput(t, e.path("in.log"))
	in.appendLines(10)
	d := e.start()
	d.waitFor("10 lines published", 30*time.Second, func(r *report) bool { return r.Feeds[0].Sequence == 10 })
	if evs := pullFromN(t, d, "pl", 3, ""); len(evs) != 3 {
		t.Fatalf("pulled %d, want 3", len(evs))
	}
	before, _ := statusRaw(t, d)
	if f := before.Feeds[0]; f.Acknowledged != 0 || f.sub(t, "pl").Dispatched != 0 {
		t.Fatalf("before the reload, nothing acknowledged: acknowledged %d dispatched %d, want 0 0", f.Acknowledged, f.sub(t, "pl").Dispatched)
	}

	e.tmpl = strings.ReplaceAll(aud2PullCfg, "QC", "101")
	e.cfgWith(d.addr)
	if code, _, body := request(t, d, http.MethodPost, "/admin/reload", ctToken, nil); code != 200 {
		t.Fatalf("reload: %d %s", code, body)
	}
	// Let the restarted feed re-read and publish what its pointer did not cover.
	time.Sleep(3 * time.Second)
	r, raw := statusRaw(t, d)
	f := r.Feeds[0]
	pl := f.sub(t, "pl")
	if f.Acknowledged != 0 || pl.Dispatched != 0 {
		t.Errorf("no client acknowledged any line (pointer offset %d), yet after a reload acknowledged %d and subscriber dispatched %d; want 0 and 0\n%s",
			f.Pointer.Offset, f.Acknowledged, pl.Dispatched, raw)
	}
	_, metrics, _ := d.get("/metrics")
	for _, l := range strings.Split(string(metrics), "\n") {
		if strings.HasPrefix(l, `tailfeed_feed_lines_acknowledged_total{feed="app"}`) && !strings.HasSuffix(l, " 0") {
			t.Errorf("metrics: %s, want 0 (nothing acknowledged)", l)
		}
	}
}

// aud2RefuseCfg: a file sink and a pull subscriber that takes one line at a
// time under POLICY (BLOCK_WITH_DEADLINE with a 1 ms deadline refuses at once
// when its one-line queue is full).
var aud2RefuseCfg = aud2QueueCfg("", 1, "{subscribers: {pl: {policy: POLICY, blockDeadlineMillis: 1}}}", 1)

// aud2QueueCfg is a feed app with queueCapacity qc and the given overload
// setting, written to a file sink "out" and read by a pull subscriber "pl"
// that takes at most maxInFlight lines at a time; statusExtra is added to
// the status block.
func aud2QueueCfg(statusExtra string, qc int, overload string, maxInFlight int) string {
	return fmt.Sprintf(`dataDir: ./state
status: {listen: "%s"%s}
shutdownTimeoutMillis: 300
feeds:
  - name: app
    path: ./in.log
    queueCapacity: %d
    overload: %s
processors:
  - {name: out, feed: app, type: file, path: ./out.log}
  - {name: pl, feed: app, type: pull, maxInFlight: %d, ackTimeoutMillis: 60000}
`, addrPlaceholder, statusExtra, qc, overload, maxInFlight)
}

// TestAud2XKill9ForgetsCountedRefusal checks DESIGN §7 "Losses outlive the
// run. Every counted loss is also appended (fsynced) to
// `dataDir/losses.jsonl` (feed, counter, amount, ...)" and "A restart never
// turns a lossy feed green by itself". DESIGN's only kill -9 exception is
// §5's *uncounted* loss of what a best-effort queue held; a refusal is
// counted.
//
// A BLOCK_WITH_DEADLINE subscriber refuses lines while feed.status is
// polled; after each answer the ledger must hold at least the refusals it
// reported (a kill -9 at that moment would otherwise leave it short), then
// the daemon is killed with SIGKILL and the next run (the subscriber now
// PAUSE, refusing nothing) must report the feed lossless false.
//
// Was: refusals reached the ledger only every 100 ms, so a report could
// show more than the ledger held (reported 2, ledger 1, then killed): the
// amount an operator acknowledges with DELETE /admin/losses understated the
// loss. Now a report is answered only once its losses are in the ledger.
func TestAud2XKill9ForgetsCountedRefusal(t *testing.T) {
	e := newEnv(t, strings.ReplaceAll(aud2RefuseCfg, "POLICY", "BLOCK_WITH_DEADLINE"))
	in := newInput(t, e.path("in.log"))
	in.appendLines(1)
	d := e.start()
	in.appendLines(2000)
	var seen uint64
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		// Every answered report's refusals are in the ledger already.
		r, err := d.status()
		if err != nil || r.Feeds[0].Refused == 0 {
			continue
		}
		seen = r.Feeds[0].Refused
		if l := ledgerSum(t, e.path("state/losses.jsonl"), "app", "refused"); l < seen {
			d.kill()
			t.Fatalf("a report said refused %d while the ledger held %d: a kill -9 now leaves the ledger short", seen, l)
		}
	}
	if seen == 0 {
		t.Fatalf("no refusal reported within 10 s")
	}
	d.kill()
	e.tmpl = strings.ReplaceAll(aud2RefuseCfg, "POLICY", "PAUSE")
	d2 := e.start()
	time.Sleep(time.Second)
	r, raw := statusRaw(t, d2)
	if f := r.Feeds[0]; f.Lossless || r.Lossless {
		t.Errorf("run 1 reported refused %d and was killed; run 2 reports lossless %v (top level %v), want false\n%s", seen, f.Lossless, r.Lossless, raw)
	}
	if l := ledgerSum(t, e.path("state/losses.jsonl"), "app", "refused"); l < seen {
		t.Errorf("the ledger holds refused %d after the kill, want ≥ %d (reported before it)", l, seen)
	}
	d2.kill()
}

// TestAud2XBlockWaitNotPaused checks DESIGN §7 "`paused`: paused now;
// `pauses`: pause episodes" and "`/healthz` answers 503 with the reason
// while any feed has been stalled or paused for longer than
// `status.stallAlertMillis`", for §5 "BLOCK_WITH_DEADLINE waits up to
// `blockDeadlineMillis`, then refuses". The README defines `paused` as "the
// source is not reading now (a full queue, a full window, a hold, an epoch
// barrier)".
//
// A pull subscriber under BLOCK_WITH_DEADLINE (deadline 20 s) whose client
// never pulls fills its one-line queue; the source then waits for room and
// reads nothing (the feed is BEHIND, sequence stuck at 3 of 10). Expected:
// `paused` true, `pauses` ≥ 1, and after stallAlertMillis (1 s) /healthz 503.
//
// Observed: `paused` false, `pauses` 0 and /healthz 200 {"status":"ok"} for
// the whole wait: a feed that has read nothing for seconds because a queue
// is full is reported as not paused, so the stall alert never fires.
func TestAud2XBlockWaitNotPaused(t *testing.T) {
	e := newEnv(t, aud2QueueCfg(", stallAlertMillis: 1000", 1, "{policy: BLOCK_WITH_DEADLINE, blockDeadlineMillis: 20000}", 1))
	in := newInput(t, e.path("in.log"))
	in.appendLines(10)
	d := e.start()
	// The queue is full and the source waits for room: BEHIND, nothing refused yet.
	// Blocked means the sequence stopped moving: under load a report can
	// catch the source between its first batches, before the full queue
	// stops it (CI: sequence 2, then 3).
	var seq uint64
	d.waitFor("the source blocked on the full queue", 10*time.Second, func(r *report) bool {
		f := r.Feeds[0]
		if !(f.State == "BEHIND" && f.Sequence > 0 && f.Sequence < 10 && f.Refused == 0) {
			return false
		}
		if f.Sequence != seq {
			seq = f.Sequence
			time.Sleep(300 * time.Millisecond)
			return false
		}
		return true
	})
	time.Sleep(3 * time.Second)
	r, raw := statusRaw(t, d)
	f := r.Feeds[0]
	if f.Sequence != seq || f.Refused != 0 {
		t.Fatalf("the source was expected to still wait (sequence %d, refused 0): %s", seq, raw)
	}
	if !f.Paused || f.Pauses == 0 {
		t.Errorf("the source has read nothing for 3 s, waiting for room in a full BLOCK_WITH_DEADLINE queue: paused %v pauses %d, want true and ≥ 1\n%s", f.Paused, f.Pauses, raw)
	}
	if code, _, body := request(t, d, http.MethodGet, "/healthz", "", nil); code != http.StatusServiceUnavailable {
		t.Errorf("/healthz after 3 s of a full-queue wait (stallAlertMillis 1000): %d %s, want 503", code, body)
	}
}

// TestAud2XSigtermWaitsOutBlockDeadline checks DESIGN §12 "SIGTERM/SIGINT
// stop as in §5, within `shutdownTimeoutMillis` plus 2 s (the final commit
// and closing the sinks)" and §5 "Shutdown (SIGTERM/SIGINT): stop sources →
// let groups drain (bound `shutdownTimeoutMillis`) → final commit ...".
//
// A BLOCK_WITH_DEADLINE pull subscriber (blockDeadlineMillis 20000) whose
// client never pulls fills its queue; the source waits for room. SIGTERM
// with shutdownTimeoutMillis 300 must end the process within 0.3 s + 2 s
// (the test allows 6 s), exit 0, and leave the pointer where the acknowledged
// lines end (0: nothing acknowledged).
//
// Observed: the stop waits out the source's 20 s block deadline (the
// process exits ~17–20 s after SIGTERM, "stopped cleanly"), and the batch
// refused when that deadline expires during the stop is written to the
// losses ledger as a refusal: a stop that should take 2.3 s takes the whole
// blockDeadlineMillis, and the stop itself makes the feed lossy. The same
// holds for a DROP_AFTER_SPIN subscriber's spinBoundMillis (subtest).
func TestAud2XSigtermWaitsOutBlockDeadline(t *testing.T) {
	for _, c := range []struct{ name, overload, counter string }{
		{"BLOCK_WITH_DEADLINE", "{policy: BLOCK_WITH_DEADLINE, blockDeadlineMillis: 20000}", "refused"},
		// The same stop through §5's DROP_AFTER_SPIN spin ("spins
		// spinBoundMillis once per full episode"): the stop waits out the spin.
		{"DROP_AFTER_SPIN", "{subscribers: {pl: {policy: DROP_AFTER_SPIN, spinBoundMillis: 20000}}}", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, aud2QueueCfg("", 1, c.overload, 1))
			in := newInput(t, e.path("in.log"))
			in.appendLines(10)
			d := e.start()
			d.waitFor("the source waiting on the full queue", 10*time.Second, func(r *report) bool {
				f := r.Feeds[0]
				return f.State == "BEHIND" && f.Sequence > 0 && f.Sequence < 10 && f.Refused == 0 && f.Dropped == 0
			})
			time.Sleep(500 * time.Millisecond)
			sent := time.Now()
			d.signal(syscall.SIGTERM)
			select {
			case <-d.done:
			case <-time.After(60 * time.Second):
				t.Fatalf("still running 60 s after SIGTERM")
			}
			took := time.Since(sent)
			if took > 6*time.Second {
				t.Errorf("SIGTERM with shutdownTimeoutMillis 300 took %v to exit (code %d), want ≤ 2.3 s (+ slack: 6 s)", took.Round(time.Millisecond), d.code)
			}
			if d.code != 0 {
				t.Errorf("exit code after SIGTERM %d, want 0", d.code)
			}
			if c.counter != "" {
				if got := ledgerSum(t, e.path("state/losses.jsonl"), "app", c.counter); got != 0 {
					t.Errorf("the losses ledger holds %s %d after a SIGTERM that came before any; want 0 (the stop should not refuse lines itself)", c.counter, got)
				}
			}
			if c.name == "BLOCK_WITH_DEADLINE" {
				if rec, ok := showPointer(t, e.path("state/feeds/app.ptr")); !ok || rec.Offset != 0 {
					t.Errorf("pointer after the stop: %+v (exists %v), want offset 0 (nothing acknowledged by the pull client)", rec, ok)
				}
			}
		})
	}
}

// TestAud2OKBlockRefusalCountedAndNotHeld (passing probe) checks DESIGN §5
// "BLOCK_WITH_DEADLINE waits up to `blockDeadlineMillis`, then refuses: the
// batch is not given to that queue (counted `refused`, per line) and does
// not hold the pointer for it", §7 `lossless` (refused > 0 → false) and the
// losses ledger: once the client acknowledges what it got, the feed settles
// with the pointer at the end of the file, refused lines are in the ledger,
// and the subscriber's position counts only the lines given to it.
func TestAud2OKBlockRefusalCountedAndNotHeld(t *testing.T) {
	e := newEnv(t, aud2QueueCfg(", token: "+ctToken, 10, "{subscribers: {pl: {policy: BLOCK_WITH_DEADLINE, blockDeadlineMillis: 50}}}", 5))
	in := newInput(t, e.path("in.log"))
	in.appendLines(100)
	d := e.start()
	r := d.waitFor("refusals", 30*time.Second, func(r *report) bool { return r.Feeds[0].Sequence == 100 && r.Feeds[0].Refused > 0 })
	if f := r.Feeds[0]; f.Lossless || r.Lossless {
		t.Errorf("refused %d but lossless %v/%v", f.Refused, f.Lossless, r.Lossless)
	}
	got := 0
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		evs := pullFrom(t, d, "pl", "max=100&wait=200ms")
		ackAll(t, d, evs)
		got += len(evs)
		if rr, err := d.status(); err == nil && rr.Feeds[0].Settled {
			break
		}
	}
	r = d.waitSettled(30 * time.Second)
	f := r.Feeds[0]
	pl := f.sub(t, "pl")
	if f.Pointer.Offset != in.size() || f.Acknowledged != 100 || f.PendingAcks != 0 {
		t.Errorf("after acking what pl got: pointer %d acknowledged %d pendingAcks %d, want %d 100 0", f.Pointer.Offset, f.Acknowledged, f.PendingAcks, in.size())
	}
	if pl.Position+f.Refused != 100 || uint64(got) != pl.Position || pl.Dispatched != pl.Position {
		t.Errorf("pl position %d dispatched %d + refused %d (pulled %d); want position + refused = 100, dispatched = position = pulled", pl.Position, pl.Dispatched, f.Refused, got)
	}
	if f.Lossless {
		t.Errorf("settled with refused %d but lossless true", f.Refused)
	}
	d.stop()
	if sum := ledgerSum(t, e.path("state/losses.jsonl"), "app", "refused"); sum != f.Refused {
		t.Errorf("ledger refused %d, status refused %d", sum, f.Refused)
	}
}

// TestAud2OKPullAckPointInQueueOrder (passing probe) checks DESIGN §1 "Work
// done out of order does not move it: an ACK of line 7 waits for lines 1–6",
// §5 "a partly acknowledged batch resolves to the position of its last
// acknowledged line" and "Shutdown ... final commit of exactly what the
// pointer-holding groups finished": lines 1, 2, 3, 5 and 7 of 10 are
// acknowledged; dispatched and acknowledged are 3 and, after SIGTERM, the
// pointer is at the end of line 3; the next run delivers lines 4–10.
func TestAud2OKPullAckPointInQueueOrder(t *testing.T) {
	e := newEnv(t, strings.ReplaceAll(aud2PullCfg, "QC", "100"))
	in := newInput(t, e.path("in.log"))
	in.appendLines(10)
	d := e.start()
	evs := pullFromN(t, d, "pl", 10, "")
	var acks []event
	for _, ev := range evs {
		switch ev.Sequence {
		case 1, 2, 3, 5, 7:
			acks = append(acks, ev)
		}
	}
	ackAll(t, d, acks)
	// Wait (up to 10 s) until the in-order ACKs of 1, 2, 3 are applied; then
	// acknowledged and dispatched must be exactly 3 (the ACKs of 5 and 7
	// wait for 4 and 6).
	var r *report
	var raw []byte
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r, raw = statusRaw(t, d)
		if f := r.Feeds[0]; (f.Acknowledged >= 3 && f.sub(t, "pl").Dispatched >= 3) || time.Now().After(deadline) {
			break
		}
	}
	f := r.Feeds[0]
	if f.Acknowledged != 3 || f.sub(t, "pl").Dispatched != 3 || f.Settled {
		t.Errorf("acks of 1,2,3,5,7: acknowledged %d dispatched %d settled %v, want 3 3 false\n%s", f.Acknowledged, f.sub(t, "pl").Dispatched, f.Settled, raw)
	}
	d.stop()
	if rec, _ := showPointer(t, e.path("state/feeds/app.ptr")); rec.Offset != in.start(3) {
		t.Errorf("pointer after SIGTERM %d, want %d (end of line 3)", rec.Offset, in.start(3))
	}
	d2 := e.start()
	evs = pullFromN(t, d2, "pl", 7, "")
	if evs[0].Position != in.start(4) || evs[6].Position != in.size() {
		t.Errorf("next run delivers positions %d..%d, want %d..%d", evs[0].Position, evs[6].Position, in.start(4), in.size())
	}
	ackAll(t, d2, evs)
	d2.waitSettled(30 * time.Second)
	d2.stop()
}

// TestAud2OKHeldBlockSubscriberPauses (passing probe) checks DESIGN §5
// Holds: a pointer-holding subscriber that is fenced "holds the pointer ...;
// the feed pauses reading, reports `stalled` with the reason, is not
// settled, and stays lossless" — also under BLOCK_WITH_DEADLINE, whose
// deadline does not turn the hold into refusals.
func TestAud2OKHeldBlockSubscriberPauses(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("needs /dev/full")
	}
	e := newEnv(t, `dataDir: ./state
status: {listen: "`+addrPlaceholder+`"}
shutdownTimeoutMillis: 300
feeds:
  - name: app
    path: ./in.log
    queueCapacity: 5
    overload: {policy: BLOCK_WITH_DEADLINE, blockDeadlineMillis: 50}
processors:
  - {name: out, feed: app, type: file, path: ./out.log}
  - {name: full, feed: app, type: file, path: /dev/full, retry: {initialMillis: 10, maxMillis: 20, attempts: 2}}
`)
	in := newInput(t, e.path("in.log"))
	in.appendLines(100)
	d := e.start()
	d.waitFor("stalled", 30*time.Second, func(r *report) bool { return r.Feeds[0].Stalled != nil })
	time.Sleep(2 * time.Second)
	r, raw := statusRaw(t, d)
	f := r.Feeds[0]
	if f.Refused != 0 || !f.Lossless || f.Settled || !f.Paused || f.Sequence >= 100 || f.Pointer.Offset != 0 || f.State != "BEHIND" {
		t.Errorf("held BLOCK subscriber: refused %d lossless %v settled %v paused %v sequence %d pointer %d state %s; want 0 true false true <100 0 BEHIND\n%s",
			f.Refused, f.Lossless, f.Settled, f.Paused, f.Sequence, f.Pointer.Offset, f.State, raw)
	}
	d.stop()
}
