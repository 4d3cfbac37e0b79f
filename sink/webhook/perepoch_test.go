package webhook

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/internal/grouptest"
	"tailfeed/processor"
)

// A glob feed's files (epochs) interleave (DESIGN §10 "Sinks and
// streams"). Lines "a-00000"… of epoch 0xa1 (/in/a.log) and "b-00000"… of
// 0xb2 (/in/b.log) are 8 bytes each: line i ends at 8(i+1).

const epA, epB = 0xa1, 0xb2

// publishGlob publishes lines from..to of file tag (epoch ep) as one batch.
func publishGlob(t *testing.T, r *hookRig, tag string, ep uint64, from, to int) {
	t.Helper()
	b := grouptest.Batch(ep, int64(8*from), grouptest.Lines(tag, from, to-from)...)
	b.Path = "/in/" + tag + ".log"
	if !r.Pub.TryPublish(b) {
		t.Fatal("publish refused")
	}
}

// globStuck runs a first life on a glob feed in dir: A 0-3 and B 0-3 are
// applied (A's before B's), then A's request 4-5 is applied by the
// receiver but its response is lost and the daemon dies. It returns the
// receiver (answering every later request) and the stuck request.
func globStuck(t *testing.T, dir string, cfg WebhookConfig) (*hookServer, WebhookConfig, hookReq, int) {
	t.Helper()
	var mu sync.Mutex
	down := true
	h := newHookServer(t, func(n int, q hookReq) (int, map[string]string) {
		mu.Lock()
		defer mu.Unlock()
		if down && strings.Contains(string(q.body), "a-00004") {
			return 0, nil
		}
		return 200, nil
	})
	cfg.URL, cfg.BatchMaxLines, cfg.PerEpoch = h.srv.URL, 2, true
	if cfg.CarryPoll == 0 {
		cfg.CarryPoll = 10 * time.Millisecond
	}
	r1 := newHookRig(t, dir, processor.GroupConfig{Retry: grouptest.FastRetry(1000)}, cfg)
	publishGlob(t, r1, "a", epA, 0, 4)
	publishGlob(t, r1, "b", epB, 0, 4)
	publishGlob(t, r1, "a", epA, 4, 8)
	waitFor(t, "the lost response", func() bool { return len(h.requests()) >= 5 })
	r1.stop()
	// A retry of A's request in flight at the stop still reaches the
	// receiver after it (the client gave up, the handler runs on): let it
	// land in the first life's requests, not in the next life's (a CI run
	// under load counted one there).
	settleRequests(t, h)
	reqs := h.requests()
	if got := fmt.Sprint(keysAfter(h, 0)[:5]); got != "[app:00000000000000a1:8-16 app:00000000000000a1:24-32 app:00000000000000b2:8-16 app:00000000000000b2:24-32 app:00000000000000a1:40-48]" {
		t.Fatalf("first life sent %s", got)
	}
	mu.Lock()
	down = false
	mu.Unlock()
	return h, cfg, reqs[len(reqs)-1], len(reqs)
}

// After a restart on a glob feed the files interleave in other batches
// than before: each file's applied lines are skipped by its own epoch's
// entry, and the recorded request of A is rebuilt whole, under its key,
// although lines of B come between its parts.
func TestWebhookGlobRestartRebuildsPerEpoch(t *testing.T) {
	dir := t.TempDir()
	h, cfg, stuck, before := globStuck(t, dir, WebhookConfig{})
	r := newHookRig(t, dir, processor.GroupConfig{Retry: grouptest.FastRetry(1000)}, cfg)
	publishGlob(t, r, "a", epA, 0, 5) // 0-3 applied, 4 the start of the recorded request
	publishGlob(t, r, "b", epB, 0, 3) // applied: skipped, and no reason to give A's request up
	quiet(t, h, before, "A's request waits for its rest across B's lines")
	publishGlob(t, r, "a", epA, 5, 8)
	publishGlob(t, r, "b", epB, 3, 6)
	r.WaitAck(14, 10*time.Second)
	after := collapse(h.requests()[before:])
	var keys []string
	for _, q := range after {
		keys = append(keys, q.key)
	}
	if got := fmt.Sprint(keys); got != "[app:00000000000000a1:40-48 app:00000000000000a1:56-64 app:00000000000000b2:40-48]" {
		t.Fatalf("after the restart: %s", got)
	}
	if !bytes.Equal(after[0].body, stuck.body) {
		t.Fatalf("rebuilt request %q, want %q", after[0].body, stuck.body)
	}
	appliedOnce(t, h, append(grouptest.Lines("a", 0, 8), grouptest.Lines("b", 0, 6)...))
}

// A second crash while A's request still waits for its rest and B's lines
// were applied meanwhile (not committed: the carry holds the ack point):
// the third life still rebuilds A's request under its key and skips B's.
func TestWebhookGlobSecondCrashKeepsBothEpochs(t *testing.T) {
	dir := t.TempDir()
	h, cfg, stuck, before := globStuck(t, dir, WebhookConfig{})
	r := newHookRig(t, dir, processor.GroupConfig{Retry: grouptest.FastRetry(1000)}, cfg)
	publishGlob(t, r, "a", epA, 0, 5)
	publishGlob(t, r, "b", epB, 0, 8) // b4-b7 sent and applied
	waitFor(t, "B's new lines", func() bool { return r.Q.Dispatched() >= 13 })
	if got := fmt.Sprint(keysAfter(h, before)); got != "[app:00000000000000b2:40-48 app:00000000000000b2:56-64]" {
		t.Fatalf("second life sent %s", got)
	}
	if got := r.Q.AckPoint(); got != 4 {
		t.Fatalf("ack point %d while a-00004 is carried, want 4", got)
	}
	r.stop()
	mid := len(h.requests())
	r3 := newHookRig(t, dir, processor.GroupConfig{Retry: grouptest.FastRetry(1000)}, cfg)
	publishGlob(t, r3, "b", epB, 0, 8)
	publishGlob(t, r3, "a", epA, 0, 8)
	r3.WaitAck(16, 10*time.Second)
	var keys []string
	after := collapse(h.requests()[mid:])
	for _, q := range after {
		keys = append(keys, q.key)
	}
	if got := fmt.Sprint(keys); got != "[app:00000000000000a1:40-48 app:00000000000000a1:56-64]" {
		t.Fatalf("third life sent %s", got)
	}
	if !bytes.Equal(after[0].body, stuck.body) {
		t.Fatalf("rebuilt request %q, want %q", after[0].body, stuck.body)
	}
	appliedOnce(t, h, append(grouptest.Lines("a", 0, 8), grouptest.Lines("b", 0, 8)...))
}

var _ = feed.NewBatch

// Two epochs' requests are pending and the older one's dead letter began
// (its first line is in the ledger): PendingRequest names that one, so a
// replay keeps its lettered part waiting for the rest rather than sending
// it alone under the request's key (a receiver would then drop the rest
// as a duplicate).
func TestWebhookPendingRequestPrefersTheLetteredEpoch(t *testing.T) {
	dir := t.TempDir()
	r := newHookRig(t, dir, processor.GroupConfig{Retry: grouptest.FastRetry(3), OnFailure: processor.DeadLetter},
		WebhookConfig{URL: "http://127.0.0.1:1", PerEpoch: true})
	r.Cancel() // the group ends (the sink stays open): its goroutine is the test's now
	<-r.G.Done()
	if err := r.w.book.recordRange(epA, 40, 48); err != nil {
		t.Fatal(err)
	}
	if err := r.w.book.recordRange(epB, 8, 16); err != nil {
		t.Fatal(err)
	}
	if got := r.w.PendingRequest(); got != "00000000000000b2:8-16" {
		t.Fatalf("nothing lettered: pending %q, want the one recorded last", got)
	}
	d := grouptest.Delivery("a-00004", epA, 40)
	if err := r.ledger.DeadLetterRequest(d, 3, fmt.Errorf("out of attempts"), "app:00000000000000a1:40-48", 2); err != nil {
		t.Fatal(err)
	}
	if got := r.w.PendingRequest(); got != "00000000000000a1:40-48" {
		t.Fatalf("pending %q, want A's request, whose dead letter began", got)
	}
}

// The other files' lines sent while A's recorded request waits for its
// rest are not acknowledged (the carry holds the ack point), so they fill
// the window; the rest of A's request must still come, under its key: A's
// epoch is awaited and passes the full window (feed.Publisher.Want), and a
// full window is no evidence that the rest cannot come on a glob feed.
// Once the carry is sent, A's epoch is no longer awaited.
func TestWebhookGlobCarryPassesAFullWindow(t *testing.T) {
	dir := t.TempDir()
	h, cfg, stuck, before := globStuck(t, dir, WebhookConfig{})
	cfg.Publisher = nil
	r := newHookRigWith(t, dir, processor.GroupConfig{Retry: grouptest.FastRetry(1000)}, cfg, func(g *grouptest.Rig) {
		g.Pub = feed.NewPublisher("app", []*feed.Queue{g.Q}, 6, 512) // a window of 6 lines
	})
	publishGlob(t, r, "a", epA, 0, 5) // a-00004 starts the carry
	waitFor(t, "the carry", func() bool { r.Pub.PollAcks(); return r.Pub.Pending() == 1 })
	// B's new lines, one per batch, until the window refuses one.
	refused := false
	for i := 4; i < 20 && !refused; i++ {
		b := grouptest.Batch(epB, int64(8*i), grouptest.Lines("b", i, 1)...)
		b.Path = "/in/b.log"
		waitFor(t, "B's lines taken", func() bool { r.Pub.PollAcks(); return r.Q.Depth() == 0 })
		refused = !r.Pub.TryPublish(b)
	}
	if !refused {
		t.Fatal("the window never filled behind the carry")
	}
	publishGlob(t, r, "a", epA, 5, 8) // the rest, past the full window
	waitFor(t, "the rebuilt request", func() bool {
		for _, q := range h.requests()[before:] {
			if q.key == stuck.key {
				return true
			}
		}
		return false
	})
	r.WaitAck(8+5, 10*time.Second)
	for _, q := range h.requests()[before:] {
		if strings.HasPrefix(q.key, "app:00000000000000a1:40-") && q.key != stuck.key {
			t.Fatalf("A's recorded request went out under a new key %s (want %s)", q.key, stuck.key)
		}
	}
	// A's epoch is no longer awaited: with the window full again (the
	// group held back), a batch of A waits like any other.
	r.Cancel()
	<-r.G.Done()
	for i := 20; ; i++ {
		if !r.Pub.TryPublish(grouptest.Batch(epB, int64(8*i), grouptest.Lines("b", i, 1)...)) {
			break
		}
	}
	if r.Pub.TryPublish(grouptest.Batch(epA, 64, grouptest.Lines("a", 8, 1)...)) {
		t.Fatal("A's epoch passed a full window after its carry was sent")
	}
}

// settleRequests waits until no request has reached h for 100 ms.
func settleRequests(t *testing.T, h *hookServer) {
	t.Helper()
	n, since := len(h.requests()), time.Now()
	for deadline := time.Now().Add(10 * time.Second); time.Since(since) < 100*time.Millisecond; {
		if time.Now().After(deadline) {
			t.Fatal("requests kept coming after the stop")
		}
		time.Sleep(5 * time.Millisecond)
		if m := len(h.requests()); m != n {
			n, since = m, time.Now()
		}
	}
}
