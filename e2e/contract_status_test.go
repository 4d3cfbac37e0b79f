package e2e

// DESIGN §7: feed.status, settled and acknowledged with a pull client;
// pauses and best-effort subscribers.

import (
	"bytes"
	"os"
	"testing"
	"time"
)

// TestContractStatusReport: a COMMITTED feed with a file sink and a pull
// client, and an ONCE_EARLIEST feed next to it. Every report sampled
// throughout has every field of §7 with its type, consistent settled and
// lossless, and a version that rises with every change. The pull client's
// ACKs move `acknowledged` and `dispatched` only in queue order; the feed is
// paused or pending, never stalled, while the client is slow.
func TestContractStatusReport(t *testing.T) {
	e := newEnv(t, `dataDir: ./state
status:
  listen: {{ADDR}}
  token: `+ctToken+`
shutdownTimeoutMillis: 300
feeds:
  - name: app
    path: ./in.log
  - name: once
    path: ./once.log
    readStrategy: ONCE_EARLIEST
processors:
  - name: archive
    feed: app
    type: file
    path: ./out.log
  - name: puller
    feed: app
    type: pull
  - name: sink
    feed: once
    type: discard
`)
	in := newInput(t, e.path("in.log"))
	in.appendLines(5)
	os.WriteFile(e.path("once.log"), []byte("x\n"), 0o644)
	d := e.start()
	s := sample(t, d)

	r, raw := statusRaw(t, d)
	if probs := checkReport(raw, nil); len(probs) > 0 {
		t.Fatalf("first report: %v\n%s", probs, raw)
	}
	r = waitReport(t, d, "5 lines published", 30*time.Second, func(r *report) bool { return r.feed(t, "app").Sequence == 5 })
	f := r.feed(t, "app")
	if f.Consumers != 2 || f.Policy != "PAUSE" || f.Path != in.path || f.Bounded || r.Settled || f.Settled || f.Stalled != nil {
		t.Errorf("before any ACK: consumers %d policy %s path %s bounded %v settled %v/%v stalled %v; want 2 PAUSE %s false false false null",
			f.Consumers, f.Policy, f.Path, f.Bounded, r.Settled, f.Settled, f.Stalled, in.path)
	}
	if o := r.feed(t, "once"); !o.Bounded || o.Pointer != nil || o.Consumers != 1 {
		t.Errorf("once feed: bounded %v pointer %v consumers %d", o.Bounded, o.Pointer, o.Consumers)
	}
	evs := pullFromN(t, d, "puller", 5, "")
	for i, ev := range evs {
		if ev.Sequence != uint64(i+1) {
			t.Errorf("event %d sequence %d, want %d (sequences start at 1)", i, ev.Sequence, i+1)
		}
	}
	r = waitReport(t, d, "archive finished", 30*time.Second, func(r *report) bool { return r.feed(t, "app").sub(t, "archive").Dispatched == 5 })
	if f := r.feed(t, "app"); f.Acknowledged != 0 || f.PendingAcks == 0 || f.Settled || f.Stalled != nil || f.sub(t, "puller").Dispatched != 0 {
		t.Errorf("nothing acknowledged by the client: acknowledged %d pendingAcks %d settled %v stalled %v puller %+v",
			f.Acknowledged, f.PendingAcks, f.Settled, f.Stalled, f.sub(t, "puller"))
	}

	ackAll(t, d, evs[:2])
	waitReport(t, d, "acknowledged 2, committed", 30*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return f.Acknowledged == 2 && f.Pointer.Offset == in.ends[1]
	})
	ackAll(t, d, evs[3:4]) // out of order: waits for line 3
	time.Sleep(100 * time.Millisecond)
	r, _ = statusRaw(t, d)
	if f := r.feed(t, "app"); f.Acknowledged != 2 || f.sub(t, "puller").Dispatched != 2 || f.Pointer.Offset != in.ends[1] {
		t.Errorf("after ACKs of lines 1, 2 and 4: acknowledged %d dispatched %d pointer %d; want 2 2 %d (an ACK of line 4 waits for line 3)",
			f.Acknowledged, f.sub(t, "puller").Dispatched, f.Pointer.Offset, in.ends[1])
	}
	ackAll(t, d, []event{evs[2], evs[4]})
	r = waitReport(t, d, "settled", 30*time.Second, func(r *report) bool { return r.Settled })
	if f := r.feed(t, "app"); f.Acknowledged != 5 || f.Pointer.Offset != in.size() || !f.Drained || f.PendingAcks != 0 {
		t.Errorf("settled: acknowledged %d pointer %d drained %v pendingAcks %d; want 5 %d true 0", f.Acknowledged, f.Pointer.Offset, f.Drained, f.PendingAcks, in.size())
	}

	// `tailfeed status`: exit 0 settled and lossless; --json is the report;
	// --addr takes host:port or a URL.
	for _, addr := range []string{d.addr, "http://" + d.addr, "http://" + d.addr + "/"} {
		if out, errOut, code := cli(t, "status", "--addr", addr); code != 0 {
			t.Errorf("status --addr %s: exit %d, want 0\n%s%s", addr, code, out, errOut)
		}
	}
	out, _, code := cli(t, "status", "--addr", d.addr, "--json")
	if probs := checkReport([]byte(out), nil); code != 0 || len(probs) > 0 {
		t.Errorf("status --json: exit %d, %v: %s", code, probs, out)
	}
	// Not settled (a pulled line unacknowledged) within the wait: exit 3.
	in.appendLines(1)
	pullFromN(t, d, "puller", 1, "")
	if out, errOut, code := cli(t, "status", "--addr", d.addr, "--wait-settled", "300ms"); code != 3 {
		t.Errorf("status with a line unacknowledged: exit %d, want 3\n%s%s", code, out, errOut)
	}
	s.finish()
	d.stop()
}

// TestContractSlowConsumerPausesNotStalls: a pull client that does not
// keep up makes the feed paused (BEHIND, not settled), never stalled; after
// stallAlertMillis /healthz answers 503 with the reason and `status` exits
// 3; once the client catches up the feed settles and /healthz is 200.
func TestContractSlowConsumerPausesNotStalls(t *testing.T) {
	e := newEnv(t, `dataDir: ./state
status:
  listen: {{ADDR}}
  token: `+ctToken+`
  stallAlertMillis: 200
shutdownTimeoutMillis: 300
feeds:
  - name: app
    path: ./in.log
    queueCapacity: 2
processors:
  - name: puller
    feed: app
    type: pull
    maxInFlight: 3
`)
	in := newInput(t, e.path("in.log"))
	in.appendLines(100)
	d := e.start()
	s := sample(t, d)
	first := pullFrom(t, d, "puller", "max=1&wait=5s") // out, unacknowledged for now
	r := waitReport(t, d, "paused", 30*time.Second, func(r *report) bool { return r.Feeds[0].Paused })
	f := r.Feeds[0]
	if f.Stalled != nil || f.Settled || f.State != "BEHIND" || f.Pauses == 0 || f.Consumers != 1 || !f.Lossless {
		t.Errorf("slow client: stalled %v settled %v state %s pauses %d consumers %d lossless %v; want null, false, BEHIND, ≥ 1, 1, true",
			f.Stalled, f.Settled, f.State, f.Pauses, f.Consumers, f.Lossless)
	}
	var body []byte
	waitUntil(t, "/healthz 503", 20*time.Second, func() bool {
		var code int
		code, _, body = request(t, d, "GET", "/healthz", "", nil)
		return code == 503
	})
	if !bytes.Contains(body, []byte("app")) {
		t.Errorf("/healthz 503 body %s does not name the paused feed", body)
	}
	if out, errOut, code := cli(t, "status", "--addr", d.addr); code != 3 {
		t.Errorf("status of a paused feed: exit %d, want 3\n%s%s", code, out, errOut)
	}
	ackAll(t, d, first)
	deadline := time.Now().Add(60 * time.Second)
	for {
		r, _ := statusRaw(t, d)
		if r.Settled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not settled while the client keeps up: %+v", r.Feeds[0])
		}
		evs := pullFrom(t, d, "puller", "max=100&wait=20ms")
		if len(evs) > 3 {
			t.Fatalf("a pull handed out %d deliveries; maxInFlight is 3", len(evs))
		}
		ackAll(t, d, evs)
	}
	r, _ = statusRaw(t, d)
	if f := r.Feeds[0]; f.Paused || f.State != "CAUGHT_UP" || f.Pointer.Offset != in.size() || f.Acknowledged != 100 {
		t.Errorf("caught up: paused %v state %s pointer %+v acknowledged %d", f.Paused, f.State, f.Pointer, f.Acknowledged)
	}
	waitUntil(t, "/healthz 200", 20*time.Second, func() bool {
		code, _, _ := request(t, d, "GET", "/healthz", "", nil)
		return code == 200
	})
	s.finish()
	d.stop()
}

// TestContractBestEffortTap: a DROP_AFTER_SPIN subscriber that never keeps
// up drops lines (counted, lossless false, `status` exit 1) but never holds
// the pointer or `settled`: the file sink next to it gets every line and
// the feed settles with the pointer at the end.
func TestContractBestEffortTap(t *testing.T) {
	e := newEnv(t, `dataDir: ./state
status:
  listen: {{ADDR}}
  token: `+ctToken+`
shutdownTimeoutMillis: 300
feeds:
  - name: app
    path: ./in.log
    queueCapacity: 4
    overload:
      subscribers: {tap: {policy: DROP_AFTER_SPIN}}
processors:
  - name: out
    feed: app
    type: file
    path: ./out.log
  - name: tap
    feed: app
    type: pull
    maxInFlight: 2
`)
	in := newInput(t, e.path("in.log"))
	in.appendLines(2000)
	d := e.start()
	s := sample(t, d, "tap")
	r := waitReport(t, d, "settled", 30*time.Second, func(r *report) bool { return r.Settled && r.Feeds[0].Sequence == 2000 })
	f := r.Feeds[0]
	if f.Dropped == 0 || f.Lossless || r.Lossless || f.Pointer.Offset != in.size() || f.Acknowledged != 2000 {
		t.Errorf("dropped %d lossless %v/%v pointer %d acknowledged %d; want > 0, false, the pointer at %d, 2000",
			f.Dropped, f.Lossless, r.Lossless, f.Pointer.Offset, f.Acknowledged, in.size())
	}
	if tap := f.sub(t, "tap"); tap.Position+f.Dropped != 2000 {
		t.Errorf("tap: position %d + dropped %d, want 2000 (every line queued or dropped)", tap.Position, f.Dropped)
	}
	if out, errOut, code := cli(t, "status", "--addr", d.addr); code != 1 {
		t.Errorf("status with drops: exit %d, want 1\n%s%s", code, out, errOut)
	}
	s.finish()
	d.stop()
	checkExactlyOnce(t, in, parseOutput(t, in, e.path("out.log")), 2000)
}
