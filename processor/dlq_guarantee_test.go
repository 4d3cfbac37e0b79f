package processor

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"tailfeed/feed"
)

// dedupReceiver applies each Idempotency-Key once (what the design tells a
// receiver to do) and remembers the lines it applied.
type dedupReceiver struct {
	mu      sync.Mutex
	keys    map[string]bool
	applied map[string]int
}

func (d *dedupReceiver) lines() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for l := range d.applied {
		out = append(out, l)
	}
	sort.Strings(out)
	return out
}

// A webhook request is replayed whole or not at all (DESIGN §12), also
// when its dead letter was cut short. Found by a review: a request dead-lettered in part before a restart (the ledger
// write failed after 2 of its 4 lines) sits in the ledger with only 2 of its
// 4 lines (requestLines 4). A replay served between batches after the
// restart, before the group re-reads the request, sends those 2 lines under
// the request's ORIGINAL Idempotency-Key and removes them from the ledger.
// Then the rest of the request is no longer "partly lettered" (its first
// line left the ledger), so the sink rebuilds the recorded request p0..p3
// and POSTs it under the same key: a receiver that dedupes on the key (as
// DESIGN §6 asks) drops it, and p2, p3 are never applied although the
// pointer passes them.
func TestReplayKeepsAPartlyLetteredRequestUntilWhole(t *testing.T) {
	dir := t.TempDir()
	rcv := &dedupReceiver{keys: map[string]bool{}, applied: map[string]int{}}
	var run2 bool
	var mu sync.Mutex
	h := newHookServer(t, func(n int, q hookReq) (int, map[string]string) {
		mu.Lock()
		defer mu.Unlock()
		if !run2 {
			return 500, nil // run 1: the receiver is down, applies nothing
		}
		rcv.mu.Lock()
		defer rcv.mu.Unlock()
		if rcv.keys[q.key] {
			return 200, nil // duplicate key: deduped
		}
		rcv.keys[q.key] = true
		for _, o := range decodeNDJSON(t, q.body) {
			rcv.applied[o.Line]++
		}
		return 200, nil
	})
	l, err := OpenLedger(filepath.Join(dir, "hook.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	flaky := &ledgerFailsOnce{Ledger: l, after: true}
	flaky.failAt.Store(3) // the 3rd line's write fails (ENOSPC), and every later one
	r1 := newHookRig(t, dir, GroupConfig{Retry: fastRetry(1), OnFailure: DeadLetter, Ledger: flaky},
		WebhookConfig{URL: h.srv.URL, BatchMaxLines: 4})
	r1.publish("p0", "p1", "p2", "p3")
	waitFor(t, "the stuck dead letter", func() bool { return flaky.calls.Load() >= 4 })
	r1.stop()

	mu.Lock()
	run2 = true
	mu.Unlock()
	r2 := newHookRig(t, dir, GroupConfig{Retry: fastRetry(3), OnFailure: DeadLetter},
		WebhookConfig{URL: h.srv.URL, BatchMaxLines: 4})
	items, n := r2.ledger.List(10)
	if n != 2 || items[0].RequestLines != 4 {
		t.Fatalf("setup: ledger %d entries (%+v)", n, items)
	}
	// The operator replays right after the restart (the group is between
	// batches: the source has not re-read p0..p3 yet).
	res, err := r2.g.Replay(context.Background(), 10)
	t.Logf("replay after restart: %+v, %v; POSTs %v", res, err, keysAfter(h, 0))
	if err != nil || res.Replayed != 0 || res.Remaining != 2 {
		t.Fatalf("replay of a part request still pending = %+v, %v; want replayed 0, remaining 2 (it waits for its rest)", res, err)
	}
	// Then the source re-reads the request.
	r2.publish("p0", "p1", "p2", "p3")
	r2.waitAck(4, 10*time.Second)
	// Whatever is still in the ledger is replayed once more.
	if res, err := r2.g.Replay(context.Background(), 10); err != nil {
		t.Fatalf("second replay %+v, %v", res, err)
	}
	if got := rcv.lines(); fmt.Sprint(got) != "[p0 p1 p2 p3]" {
		t.Fatalf("receiver applied %v, want [p0 p1 p2 p3]; ledger now %d entries; POSTs %v (the pointer passed all 4 lines)",
			got, r2.ledger.Len(), keysAfter(h, 0))
	}
}

// An acknowledged replayed dead letter is never queued again (each entry
// is delivered once). Found by a review: an ACK of a replayed dead letter races a replay. settle()
// drops the entry from p.replaying under p.mu, then removes it from the
// ledger after unlocking (removeReplayed); QueueReplay snapshots the ledger
// (l.head) before it takes p.mu. A replay that snapshots the ledger in
// between queues the entry again although it was acknowledged (and is
// about to leave, or has left, the ledger): the line is handed out a
// second time, and `queued` counts an entry that is not in the ledger.
// No NACK, no timeout here: every entry must be delivered exactly once.
func TestPullReplayNeverQueuesAnAcknowledgedEntryAgain(t *testing.T) {
	r := newPullRig(t, GroupConfig{Retry: slowRetry(6), OnFailure: DeadLetter}, time.Hour, 10000)
	const n = 400
	for i := range n {
		var d feed.Delivery
		d.Reset(&feed.Batch{Feed: "app", Path: "/in.log", Epoch: 0xe1, Positioned: true,
			Lines: [][]byte{[]byte(fmt.Sprintf("l%03d", i))}, Ends: []int64{int64(i+1) * 10}}, 0)
		if err := r.ledger.DeadLetter(&d, 6, fmt.Errorf("x")); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var queued int
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // an operator (or a script) replaying again and again
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			k, _ := r.p.QueueReplay(10000)
			queued += k
		}
	}()
	seen := map[int64]int{}
	idle := time.Now()
	for time.Since(idle) < 500*time.Millisecond {
		evs := r.p.Pull(context.Background(), 1, 20*time.Millisecond, false)
		for _, ev := range evs {
			seen[ev.Position]++
			r.ack(ev)
			idle = time.Now()
		}
	}
	close(stop)
	wg.Wait()
	dups := 0
	for pos, c := range seen {
		if c > 1 {
			if dups++; dups <= 3 {
				t.Logf("position %d delivered %d times", pos, c)
			}
		}
	}
	t.Logf("entries %d, delivered %d distinct, queued in total %d, ledger now %d", n, len(seen), queued, r.ledger.Len())
	if dups > 0 || queued != n {
		t.Fatalf("%d acknowledged replayed entries were queued and delivered again; queued %d for %d entries", dups, queued, n)
	}
}

// A purge never takes the lines a replay in progress holds: `replayed`
// counts the lines that reached the receiver, and they are not counted
// released. Found by a review: a purge (DELETE /admin/dlq) during a webhook replay. The
// replay took the request's entries, POSTs them (the receiver applies
// them), the purge removes them meanwhile, and the replay's remove finds
// nothing: the answer says replayed 0 although the 3 lines reached their
// processor this call (DESIGN §12: `replayed` is the lines that reached
// their processor this call), and the purge counted them as released (a
// loss, lossless false) although they were delivered.
func TestPurgeDuringWebhookReplayLeavesTheReplayedLines(t *testing.T) {
	var poison sync.Mutex
	bad := true
	inReplay := make(chan struct{})
	release := make(chan struct{})
	h := newHookServer(t, func(int, hookReq) (int, map[string]string) {
		poison.Lock()
		b := bad
		poison.Unlock()
		if b {
			return 400, nil
		}
		close(inReplay)
		<-release
		return 200, nil
	})
	r := newHookRig(t, t.TempDir(), GroupConfig{Retry: fastRetry(1), OnFailure: DeadLetter},
		WebhookConfig{URL: h.srv.URL, BatchMaxLines: 3})
	r.publish("x1", "x2", "x3")
	r.waitAck(3, 10*time.Second)
	poison.Lock()
	bad = false
	poison.Unlock()
	type out struct {
		res ReplayResult
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := r.g.Replay(context.Background(), 10)
		done <- out{res, err}
	}()
	<-inReplay
	purged, err := r.ledger.Purge(10) // what DELETE /admin/dlq/hook does (and counts in released)
	if err != nil {
		t.Fatal(err)
	}
	close(release)
	o := <-done
	t.Logf("purged %d while the replay POSTed them; replay = %+v, %v", purged, o.res, o.err)
	if o.err != nil || o.res.Replayed != 3 {
		t.Fatalf("replay answered replayed %d (%v), but 3 lines reached the receiver this call (and the purge counted them released: %d)",
			o.res.Replayed, o.err, purged)
	}
	if purged != 0 || r.ledger.Len() != 0 {
		t.Fatalf("purge removed %d entries held by the replay; ledger now %d", purged, r.ledger.Len())
	}
}

// letterRequest writes one ledger entry of a webhook request (key, lines).
func letterRequest(t *testing.T, l *Ledger, line string, pos int64, key string, lines int) {
	t.Helper()
	var d feed.Delivery
	d.Reset(&feed.Batch{Feed: "app", Path: "/in.log", Epoch: 0xe1, Positioned: true,
		Lines: [][]byte{[]byte(line)}, Ends: []int64{pos}}, 0)
	if err := l.DeadLetterRequest(&d, 6, fmt.Errorf("x"), key, lines); err != nil {
		t.Fatal(err)
	}
}

// A purge never leaves part of a webhook request in the ledger (where a
// replay would send the part under the request's key): max is rounded up
// to whole requests, as for a replay.
func TestPurgeRemovesWholeRequests(t *testing.T) {
	l, err := OpenLedger(filepath.Join(t.TempDir(), "hook.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	letterRequest(t, l, "a1", 3, "app:00000000000000e1:3-9", 2)
	letterRequest(t, l, "b", 5, "", 0)
	letterRequest(t, l, "a2", 9, "app:00000000000000e1:3-9", 2)
	n, err := l.Purge(1)
	if err != nil || n != 2 {
		t.Fatalf("Purge(1) = %d, %v; want 2 (a1 and a2, one request)", n, err)
	}
	if got := ledgerTexts(t, l); fmt.Sprint(got) != "[b]" {
		t.Fatalf("ledger after the purge %v, want [b]", got)
	}
}

// A part of a request whose rest can no longer come (the webhook's record
// names no pending request: it moved on) is replayed as it is, under its
// key: it is not kept in the ledger for ever.
func TestReplaySendsAPartRequestThatIsNoLongerPending(t *testing.T) {
	h := newHookServer(t, func(int, hookReq) (int, map[string]string) { return 200, nil })
	dir := t.TempDir()
	l, err := OpenLedger(filepath.Join(dir, "hook.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	letterRequest(t, l, "p0", 3, "app:00000000000000e1:3-12", 4)
	letterRequest(t, l, "p1", 6, "app:00000000000000e1:3-12", 4)
	r := newHookRig(t, dir, GroupConfig{Retry: fastRetry(1), OnFailure: DeadLetter},
		WebhookConfig{URL: h.srv.URL, BatchMaxLines: 4})
	res, err := r.g.Replay(context.Background(), 10)
	if err != nil || res.Replayed != 2 || res.Remaining != 0 {
		t.Fatalf("replay %+v, %v; want replayed 2, remaining 0", res, err)
	}
	if got := keysAfter(h, 0); fmt.Sprint(got) != "[app:00000000000000e1:3-12]" {
		t.Fatalf("POSTs %v, want one under the request's key", got)
	}
}

// A purge during a pull replay drops the purged entries from the
// subscriber: a queued one is not handed out any more, and the ACK of one
// out is unknown, so no line counts both as delivered and as released.
func TestPullPurgeDropsQueuedReplays(t *testing.T) {
	r := newPullRig(t, GroupConfig{Retry: slowRetry(6), OnFailure: DeadLetter}, time.Hour, 100)
	for i, s := range []string{"d1", "d2", "d3"} {
		var d feed.Delivery
		d.Reset(&feed.Batch{Feed: "app", Path: "/in.log", Epoch: 0xe1, Positioned: true,
			Lines: [][]byte{[]byte(s)}, Ends: []int64{int64(i+1) * 3}}, 0)
		if err := r.ledger.DeadLetter(&d, 6, fmt.Errorf("x")); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := r.p.QueueReplay(10); n != 3 || err != nil {
		t.Fatalf("queued %d, %v", n, err)
	}
	out := r.pull(1, false)[0]
	n, err := r.g.PurgeDeadLetters(10)
	if err != nil || n != 3 || r.ledger.Len() != 0 {
		t.Fatalf("purge %d, %v; ledger %d", n, err, r.ledger.Len())
	}
	if r.p.Ack(out.DeliveryID) {
		t.Fatalf("the ACK of purged entry %s was accepted (it counts released)", out.Line)
	}
	if evs := r.p.Pull(context.Background(), 10, 100*time.Millisecond, false); len(evs) != 0 {
		t.Fatalf("purged entries still handed out: %+v", evs)
	}
	if f := r.p.InFlight(); f != 0 {
		t.Fatalf("in flight %d after the purge", f)
	}
}

// blockingProc blocks on every line until release is closed.
type blockingProc struct {
	started chan struct{}
	release chan struct{}
}

func (b *blockingProc) Process(ctx context.Context, _ *feed.Delivery) error {
	select {
	case b.started <- struct{}{}:
	default:
	}
	select {
	case <-b.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// A replay answers when its ctx ends, also while the processor is busy
// with a replayed line (the admin call never hangs).
func TestReplayAnswersWhenItsContextEnds(t *testing.T) {
	l, err := OpenLedger(filepath.Join(t.TempDir(), "sink.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var d feed.Delivery
	d.Reset(&feed.Batch{Feed: "app", Path: "/in.log", Epoch: 0xe1, Positioned: true,
		Lines: [][]byte{[]byte("x")}, Ends: []int64{2}}, 0)
	if err := l.DeadLetter(&d, 6, fmt.Errorf("x")); err != nil {
		t.Fatal(err)
	}
	bp := &blockingProc{started: make(chan struct{}, 1), release: make(chan struct{})}
	r := newGRig(t, GroupConfig{Name: "sink", Processor: bp, Retry: fastRetry(1), OnFailure: DeadLetter, Ledger: l})
	r.run()
	defer close(bp.release)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	type out struct {
		res ReplayResult
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := r.g.Replay(ctx, 10)
		done <- out{res, err}
	}()
	select {
	case o := <-done:
		if !errors.Is(o.err, ErrReplayRunning) || !errors.Is(o.err, ErrReplayIncomplete) || o.res.Remaining != 1 {
			t.Fatalf("replay = %+v, %v; want still running, remaining 1", o.res, o.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the replay did not answer when its context ended")
	}
}
