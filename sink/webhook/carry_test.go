package webhook

import (
	"errors"
	"fmt"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/internal/grouptest"
	"tailfeed/internal/slotrec"
	"tailfeed/overload"
	"tailfeed/processor"
)

// Lines "line-00000".."line-00009" end at 11, 22, …, 110. The first life of
// each test below sends 11-44, then 55-88 (lines 4-7), which the receiver
// applies (2xx); the daemon dies before the applied position reaches the
// record, so 55-88 stays recorded and not applied.

// recordDiesAfter is a record file whose writes fail after the first n.
type recordDiesAfter struct {
	slotrec.RecordFile
	n atomic.Int32
}

func (f *recordDiesAfter) WriteAt(b []byte, off int64) (int, error) {
	if f.n.Add(-1) < 0 {
		return 0, errors.New("disk gone")
	}
	return f.RecordFile.WriteAt(b, off)
}

// diedBeforeApplied runs that first life in dir (setting cfg's URL) and
// returns the receiver and how many requests it got (2).
func diedBeforeApplied(t *testing.T, dir string, cfg *WebhookConfig) (*hookServer, int) {
	t.Helper()
	h := newHookServer(t, nil)
	cfg.URL, cfg.BatchMaxLines = h.srv.URL, 4
	if cfg.CarryPoll == 0 {
		cfg.CarryPoll = 10 * time.Millisecond
	}
	first := *cfg
	first.OpenRecord = func(path string) (slotrec.RecordFile, error) {
		f, err := slotrec.OpenFile(path)
		if err != nil {
			return nil, err
		}
		d := &recordDiesAfter{RecordFile: f}
		d.n.Store(3) // record 11-44, applied 44, record 55-88
		return d, nil
	}
	r1 := newHookRig(t, dir, processor.GroupConfig{Retry: processor.Retry{Initial: time.Hour, Max: time.Hour, Attempts: 5}}, first)
	restartLines(r1, [2]int{0, 10})
	waitFor(t, "the failed record", func() bool { st, _ := r1.Q.State(); return st == feed.Fenced })
	r1.stop()
	if got := fmt.Sprint(keysAfter(h, 0)); got != "[app:00000000000000e1:11-44 app:00000000000000e1:55-88]" {
		t.Fatalf("first life sent %s", got)
	}
	return h, 2
}

// keysAfter returns the keys of the requests after the first skip.
func keysAfter(h *hookServer, skip int) []string {
	var keys []string
	for _, q := range h.requests()[skip:] {
		keys = append(keys, q.key)
	}
	return keys
}

// appliedOnce checks what a receiver that dedupes on Idempotency-Key
// applied: each of want's lines exactly once.
func appliedOnce(t *testing.T, h *hookServer, want []string) {
	t.Helper()
	seen := map[string]bool{}
	applied := map[string]int{}
	for _, q := range h.requests() {
		if seen[q.key] {
			continue
		}
		seen[q.key] = true
		for _, o := range decodeNDJSON(t, q.body) {
			applied[o.Line]++
		}
	}
	for _, l := range want {
		if applied[l] != 1 {
			t.Errorf("line %q applied %d times by a receiver that dedupes on the key (keys %v)", l, applied[l], keysAfter(h, 0))
		}
	}
}

// quiet checks that the receiver gets no request for a while (the carry
// keeps waiting).
func quiet(t *testing.T, h *hookServer, n int, what string) {
	t.Helper()
	time.Sleep(200 * time.Millisecond) // 20 carry polls
	if got := len(h.requests()); got != n {
		t.Fatalf("%s: %d requests went out (%v), want none", what, got-n, keysAfter(h, n))
	}
}

// batchOf makes the rig's next batch without publishing it.
func batchOf(r *grouptest.Rig, lines ...string) *feed.Batch {
	b := feed.NewBatch()
	b.Feed, b.Path, b.Epoch = "app", "/in.log", r.Epoch
	for _, l := range lines {
		r.Pos += int64(len(l)) + 1
		b.AppendLine([]byte(l), r.Pos)
	}
	return b
}

// The rest of the recorded request comes long after its first lines (the
// feed was paused by another subscriber): the request is rebuilt whole,
// under its key, however long that takes; only the lines before it are
// reported durable meanwhile.
func TestWebhookRebuildWaitsForALateRest(t *testing.T) {
	dir := t.TempDir()
	cfg := WebhookConfig{}
	h, before := diedBeforeApplied(t, dir, &cfg)
	r := newHookRig(t, dir, processor.GroupConfig{Retry: grouptest.FastRetry(5)}, cfg)
	restartLines(r, [2]int{0, 6})
	r.WaitAck(4, 10*time.Second)
	quiet(t, h, before, "rest not come yet")
	if got := r.Q.AckPoint(); got != 4 {
		t.Fatalf("ack point %d while lines 4-5 are carried, want 4", got)
	}
	restartLines(r, [2]int{6, 10})
	r.WaitAck(10, 10*time.Second)
	if got := fmt.Sprint(keysAfter(h, before)); got != "[app:00000000000000e1:55-88 app:00000000000000e1:99-110]" {
		t.Fatalf("keys after the restart %s", got)
	}
	appliedOnce(t, h, grouptest.Lines("line", 0, 10))
}

// A batch of another epoch (the file was replaced) proves the rest will
// not come: what was carried goes out under a new key, before the new
// epoch's lines.
func TestWebhookRebuildGivesUpOnAnotherEpoch(t *testing.T) {
	dir := t.TempDir()
	cfg := WebhookConfig{}
	h, before := diedBeforeApplied(t, dir, &cfg)
	r := newHookRig(t, dir, processor.GroupConfig{Retry: grouptest.FastRetry(5)}, cfg)
	restartLines(r, [2]int{0, 6})
	quiet(t, h, before, "same epoch, rest not come yet")
	r.Epoch, r.Pos = 0xe2, 0
	r.Publish("x")
	r.WaitAck(7, 10*time.Second)
	if got := fmt.Sprint(keysAfter(h, before)); got != "[app:00000000000000e1:55-66 app:00000000000000e2:2-2]" {
		t.Fatalf("keys after the restart %s", got)
	}
}

// At an epoch barrier the source has published every line of the old
// epoch and waits for the carried ones: they go out at once, without a
// batch (else the barrier and the carry would wait for each other).
func TestWebhookRebuildGivesUpAtEpochBarrier(t *testing.T) {
	dir := t.TempDir()
	cfg := WebhookConfig{}
	h, before := diedBeforeApplied(t, dir, &cfg)
	r := newHookRig(t, dir, processor.GroupConfig{Retry: grouptest.FastRetry(5)}, cfg)
	restartLines(r, [2]int{0, 6}) // the old file ends at 66 (it was cut short)
	quiet(t, h, before, "no barrier yet")
	r.Pub.SetBarrier(0xe2)
	r.WaitAck(6, 10*time.Second)
	if got := fmt.Sprint(keysAfter(h, before)); got != "[app:00000000000000e1:55-66]" {
		t.Fatalf("keys after the restart %s", got)
	}
}

// A window only the carried lines hold: the source cannot publish the rest
// until they are acknowledged, so they go out.
func TestWebhookRebuildGivesUpWhenItHoldsAFullWindow(t *testing.T) {
	dir := t.TempDir()
	cfg := WebhookConfig{}
	h, before := diedBeforeApplied(t, dir, &cfg)
	r := newHookRigWith(t, dir, processor.GroupConfig{Retry: grouptest.FastRetry(5)}, cfg, func(g *grouptest.Rig) {
		g.Pub = feed.NewPublisher("app", []*feed.Queue{g.Q}, 5, 512)
	})
	all := grouptest.Lines("line", 0, 10)
	r.Publish(all[:6]...) // into an empty window
	r.WaitAck(4, 10*time.Second)
	r.Pub.PollAcks()
	rest := batchOf(r.Rig, all[6:]...)
	if r.Pub.TryPublish(rest) {
		t.Fatal("the window took 2 + 4 lines over 5")
	}
	waitFor(t, "the carried lines", func() bool { return len(h.requests()) > before })
	deadline := time.Now().Add(10 * time.Second)
	for r.Pub.PollAcks(); !r.Pub.TryPublish(rest); r.Pub.PollAcks() {
		if time.Now().After(deadline) {
			t.Fatal("the window never opened")
		}
		time.Sleep(time.Millisecond)
	}
	r.WaitAck(10, 10*time.Second)
	if got := fmt.Sprint(keysAfter(h, before)); got != "[app:00000000000000e1:55-66 app:00000000000000e1:77-110]" {
		t.Fatalf("keys after the restart %s", got)
	}
}

// A full window that a slower subscriber holds is no reason: its progress
// opens the window, the rest comes, and the request is rebuilt whole.
func TestWebhookRebuildWaitsOutAWindowAnotherSubscriberHolds(t *testing.T) {
	dir := t.TempDir()
	cfg := WebhookConfig{}
	h, before := diedBeforeApplied(t, dir, &cfg)
	slow := feed.NewQueue("slow", 1024, 1<<20, overload.Policy{Kind: overload.Pause})
	r := newHookRigWith(t, dir, processor.GroupConfig{Retry: grouptest.FastRetry(5)}, cfg, func(g *grouptest.Rig) {
		g.Pub = feed.NewPublisher("app", []*feed.Queue{g.Q, slow}, 6, 512)
	})
	all := grouptest.Lines("line", 0, 10)
	r.Publish(all[:6]...)
	r.WaitAck(4, 10*time.Second)
	r.Pub.PollAcks()
	rest := batchOf(r.Rig, all[6:]...)
	if r.Pub.TryPublish(rest) {
		t.Fatal("the window took 6 + 4 lines over 6")
	}
	quiet(t, h, before, "the slow subscriber holds the window")
	// The slow subscriber finishes its 6 lines: the window opens to 2 + 4.
	slow.TryPop().Release()
	slow.AddDispatched(6)
	r.Pub.PollAcks()
	if !r.Pub.TryPublish(rest) {
		t.Fatal("the window did not open")
	}
	r.WaitAck(10, 10*time.Second)
	if got := fmt.Sprint(keysAfter(h, before)); got != "[app:00000000000000e1:55-88 app:00000000000000e1:99-110]" {
		t.Fatalf("keys after the restart %s", got)
	}
	appliedOnce(t, h, grouptest.Lines("line", 0, 10))
}

// With filters (changed since the crash: lines 6 and 7 now excluded), a
// batch whose unfiltered lines reach the end of the range proves the rest
// will not come, although the sink saw none of its lines.
func TestWebhookRebuildGivesUpWhenFiltersCoverTheRange(t *testing.T) {
	dir := t.TempDir()
	cfg := WebhookConfig{}
	h, before := diedBeforeApplied(t, dir, &cfg)
	r := newHookRig(t, dir, processor.GroupConfig{Retry: grouptest.FastRetry(5), Exclude: regexp.MustCompile(`line-0000[67]`)}, cfg)
	restartLines(r, [2]int{0, 6}, [2]int{6, 8})
	r.WaitAck(8, 10*time.Second)
	if got := fmt.Sprint(keysAfter(h, before)); got != "[app:00000000000000e1:55-66]" {
		t.Fatalf("keys after the restart %s", got)
	}
	restartLines(r, [2]int{8, 10})
	r.WaitAck(10, 10*time.Second)
	if got := fmt.Sprint(keysAfter(h, before)); got != "[app:00000000000000e1:55-66 app:00000000000000e1:99-110]" {
		t.Fatalf("keys after the restart %s", got)
	}
}
