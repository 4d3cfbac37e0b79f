package pull

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/internal/grouptest"
	"tailfeed/processor"
)

// pullRig is a pull subscriber on a real group, queue and publisher.
type pullRig struct {
	*grouptest.Rig
	p      *Pull
	ledger *processor.Ledger
}

func newPullRig(t *testing.T, cfg processor.GroupConfig, ackTimeout time.Duration, maxInFlight int) *pullRig {
	t.Helper()
	l, err := processor.OpenLedger(filepath.Join(t.TempDir(), "consumer.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Name == "" {
		cfg.Name = "consumer"
	}
	if cfg.Ledger == nil {
		cfg.Ledger = l
	}
	r := &pullRig{Rig: grouptest.New(t, cfg), ledger: l}
	p, err := New(Config{Group: r.G, AckTimeout: ackTimeout, MaxInFlight: maxInFlight})
	if err != nil {
		t.Fatal(err)
	}
	r.p = p
	r.G.SetBatchProcessor(p)
	r.Run()
	t.Cleanup(func() { p.Close() })
	return r
}

// pull long-polls until n events came (or fails after a while).
func (r *pullRig) pull(n int, raw bool) []Event {
	r.T.Helper()
	var evs []Event
	deadline := time.Now().Add(10 * time.Second)
	for len(evs) < n {
		if time.Now().After(deadline) {
			r.T.Fatalf("got %d events, want %d", len(evs), n)
		}
		evs = append(evs, r.p.Pull(context.Background(), n-len(evs), time.Second, raw)...)
	}
	return evs
}

func (r *pullRig) ack(evs ...Event) {
	r.T.Helper()
	ids := make([]string, len(evs))
	for i, e := range evs {
		ids[i] = e.DeliveryID
	}
	if n, unknown := r.p.AckAll(ids); n != len(ids) {
		r.T.Fatalf("acked %d of %d; unknown %v", n, len(ids), unknown)
	}
}

func slowRetry(attempts int) processor.Retry {
	return processor.Retry{Initial: 40 * time.Millisecond, Max: 80 * time.Millisecond, Jitter: 0.2, Attempts: attempts}
}

func TestPullAckPointFollowsContiguousAcks(t *testing.T) {
	r := newPullRig(t, processor.GroupConfig{Retry: slowRetry(6)}, time.Minute, 100)
	r.Publish(grouptest.Lines("l", 0, 10)...)
	evs := r.pull(10, false)
	for i, e := range evs {
		if e.Line != grouptest.Lines("l", i, 1)[0] || e.Sequence != uint64(i+1) || e.Attempt != 1 || e.Feed != "app" || e.Path != "/in.log" {
			t.Fatalf("event %d = %+v", i, e)
		}
		if e.Epoch != "00000000000000e1" {
			t.Fatalf("epoch %q, want 16 lowercase hex digits", e.Epoch)
		}
	}
	r.ack(evs[5], evs[7])
	time.Sleep(20 * time.Millisecond)
	if got := r.Q.AckPoint(); got != 0 {
		t.Fatalf("ack point %d after ACKs of lines 6 and 8, want 0 (line 1 unacknowledged)", got)
	}
	r.ack(evs[:5]...)
	r.WaitAck(6, 5*time.Second)
	if got := r.Q.AckPoint(); got != 6 {
		t.Fatalf("ack point %d, want 6 (line 7 unacknowledged)", got)
	}
	r.ack(evs[6], evs[8], evs[9])
	r.WaitAck(10, 5*time.Second)
	if r.p.Ack(evs[0].DeliveryID) {
		t.Fatal("a second ACK of the same delivery was accepted")
	}
}

func TestPullTimeoutRedeliversWithNextAttempt(t *testing.T) {
	const timeout = 150 * time.Millisecond
	r := newPullRig(t, processor.GroupConfig{Retry: slowRetry(6)}, timeout, 100)
	r.Publish("a", "b")
	// Marked before the pull that hands "a" out: the ack timeout runs from
	// the hand-out, which cannot come before this mark (a mark after
	// r.pull returned could come after it, and the span fall short of the
	// timeout on a loaded machine though the redelivery was on time).
	handed := time.Now()
	evs := r.pull(2, false)
	r.ack(evs[1])
	again := r.pull(1, false)
	waited := time.Since(handed)
	if again[0].Line != "a" || again[0].Attempt != 2 || again[0].DeliveryID == evs[0].DeliveryID {
		t.Fatalf("redelivery %+v, want line a, attempt 2, a new id", again[0])
	}
	if waited < timeout {
		t.Fatalf("redelivered after %v, before the ack timeout %v", waited, timeout)
	}
	// The first delivery's id died with the redelivery.
	if r.p.Ack(evs[0].DeliveryID) {
		t.Fatal("ACK of a delivery that was redelivered since was accepted")
	}
	if r.Q.AckPoint() != 0 {
		t.Fatal("ack point passed an unacknowledged line")
	}
	r.ack(again...)
	r.WaitAck(2, 5*time.Second)
}

func TestPullLateAckBeforeRedeliveryCounts(t *testing.T) {
	r := newPullRig(t, processor.GroupConfig{Retry: processor.Retry{Initial: time.Hour, Max: time.Hour, Attempts: 6}}, 30*time.Millisecond, 100)
	r.Publish("a")
	evs := r.pull(1, false)
	time.Sleep(100 * time.Millisecond) // timed out; the next try is an hour away
	r.ack(evs...)
	r.WaitAck(1, 5*time.Second)
}

func TestPullNackRedeliversAtOnce(t *testing.T) {
	r := newPullRig(t, processor.GroupConfig{Retry: processor.Retry{Initial: time.Hour, Max: time.Hour, Attempts: 6}}, time.Hour, 100)
	r.Publish("a")
	evs := r.pull(1, false)
	if !r.p.Nack(evs[0].DeliveryID) {
		t.Fatal("nack refused")
	}
	if r.p.Nack(evs[0].DeliveryID) || r.p.Ack(evs[0].DeliveryID) {
		t.Fatal("a NACKed id still counts")
	}
	again := r.p.Pull(context.Background(), 10, 0, false)
	if len(again) != 1 || again[0].Attempt != 2 || again[0].Line != "a" {
		t.Fatalf("after a NACK: %+v, want line a at attempt 2 at once", again)
	}
}

func TestPullDeadLettersAfterAttempts(t *testing.T) {
	r := newPullRig(t, processor.GroupConfig{Retry: slowRetry(2), OnFailure: processor.DeadLetter}, time.Hour, 100)
	r.Publish("poison", "fine")
	evs := r.pull(2, false)
	r.ack(evs[1])
	r.p.Nack(evs[0].DeliveryID)
	again := r.pull(1, false)
	if again[0].Attempt != 2 {
		t.Fatalf("attempt %d, want 2", again[0].Attempt)
	}
	r.p.Nack(again[0].DeliveryID)
	r.WaitAck(2, 5*time.Second)
	if n := r.ledger.Len(); n != 1 {
		t.Fatalf("ledger holds %d entries, want 1", n)
	}
	items, _ := r.ledger.List(10)
	if items[0].Line != "poison" || items[0].Attempts != 2 || !strings.Contains(items[0].Error, "nacked") {
		t.Fatalf("ledger entry %+v", items[0].DeadLetterEntry)
	}
	if r.G.DeadLettered() != 1 {
		t.Fatalf("deadLettered %d, want 1", r.G.DeadLettered())
	}
	if evs := r.p.Pull(context.Background(), 10, 0, false); len(evs) != 0 {
		t.Fatalf("a dead-lettered line was handed out again: %+v", evs)
	}
}

func TestPullHoldFencesUntilReleased(t *testing.T) {
	r := newPullRig(t, processor.GroupConfig{Retry: processor.Retry{Initial: 20 * time.Millisecond, Max: 20 * time.Millisecond, Attempts: 1}}, time.Hour, 2)
	r.Publish("stuck")
	r.Publish("a")
	r.Publish("b") // waits in the group: two lines unacknowledged
	evs := r.pull(2, false)
	r.p.Nack(evs[0].DeliveryID)
	if st, why := r.Q.State(); st != feed.Fenced || !strings.Contains(why, "not acknowledged after 1 attempts") {
		t.Fatalf("state %v %q, want FENCED with the reason", st, why)
	}
	// The group finishing batch b must not lift the pull's own fence.
	r.ack(evs[1])
	deadline := time.Now().Add(5 * time.Second)
	for r.Q.Dispatched() < 3 {
		if time.Now().After(deadline) {
			t.Fatal("the group did not finish batch b")
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(10 * time.Millisecond)
	if st, _ := r.Q.State(); st != feed.Fenced {
		t.Fatalf("state %v after the group finished a batch, want still FENCED", st)
	}
	again := r.pull(2, false)
	if again[0].Line != "stuck" || again[0].Attempt != 2 || again[1].Line != "b" {
		t.Fatalf("after the hold: %+v", again)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n, err := r.G.Release(ctx)
	if err != nil || n != 1 {
		t.Fatalf("release: %d, %v; want 1 line", n, err)
	}
	r.WaitAck(2, 5*time.Second)
	if st, _ := r.Q.State(); st == feed.Fenced {
		t.Fatal("still fenced after the release")
	}
	if r.Q.ReleasedLines() != 1 {
		t.Fatalf("released %d, want 1", r.Q.ReleasedLines())
	}
	if r.p.Ack(again[0].DeliveryID) {
		t.Fatal("ACK of a released line was accepted")
	}
	r.ack(again[1])
	r.WaitAck(3, 5*time.Second)
}

func TestPullHeldLineAckedUnfences(t *testing.T) {
	r := newPullRig(t, processor.GroupConfig{Retry: processor.Retry{Initial: time.Millisecond, Max: time.Millisecond, Attempts: 1}}, time.Hour, 100)
	r.Publish("stuck")
	evs := r.pull(1, false)
	r.p.Nack(evs[0].DeliveryID)
	again := r.pull(1, false)
	if st, _ := r.Q.State(); st != feed.Fenced {
		t.Fatalf("state %v, want FENCED", st)
	}
	r.ack(again...)
	r.WaitAck(1, 5*time.Second)
	if st, _ := r.Q.State(); st != feed.Live {
		t.Fatalf("state %v after the held line's ACK, want LIVE", st)
	}
}

func TestPullMaxInFlight(t *testing.T) {
	r := newPullRig(t, processor.GroupConfig{Retry: slowRetry(6)}, time.Hour, 3)
	r.Publish(grouptest.Lines("l", 0, 5)...)
	evs := r.pull(3, false)
	if more := r.p.Pull(context.Background(), 100, 50*time.Millisecond, false); len(more) != 0 {
		t.Fatalf("%d more deliveries beyond maxInFlight 3", len(more))
	}
	r.ack(evs[0])
	more := r.pull(1, false)
	if more[0].Line != grouptest.Lines("l", 3, 1)[0] {
		t.Fatalf("next delivery %q", more[0].Line)
	}
	if r.p.InFlight() != 3 {
		t.Fatalf("in flight %d, want 3", r.p.InFlight())
	}
}

func TestPullFiltersCountAsDone(t *testing.T) {
	r := newPullRig(t, processor.GroupConfig{Retry: slowRetry(6), Match: regexp.MustCompile("keep")}, time.Hour, 100)
	r.Publish("drop0", "keep1", "drop2", "keep3", "drop4")
	evs := r.pull(2, false)
	if evs[0].Line != "keep1" || evs[1].Line != "keep3" || evs[0].Sequence != 2 || evs[1].Sequence != 4 {
		t.Fatalf("events %+v", evs)
	}
	r.ack(evs[0])
	r.WaitAck(3, 5*time.Second)
	r.ack(evs[1])
	r.WaitAck(5, 5*time.Second)
	r.Publish("drop5") // a batch with no line for the client
	r.WaitAck(6, 5*time.Second)
}

func TestPullLineAsTextAndRaw(t *testing.T) {
	r := newPullRig(t, processor.GroupConfig{Retry: slowRetry(6)}, time.Hour, 100)
	raw := "a\xffb\xc3\x28c\x00é"
	r.Publish(raw)
	evs := r.pull(1, true)
	js, err := json.Marshal(evs[0])
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	json.Unmarshal(js, &back)
	if want := "a\ufffdb\ufffd(c\x00é"; back["line"] != want {
		t.Fatalf("line %q, want %q (one U+FFFD per invalid byte)", back["line"], want)
	}
	b, _ := base64.StdEncoding.DecodeString(back["lineBase64"].(string))
	if string(b) != raw {
		t.Fatalf("lineBase64 decodes to %q, want %q", b, raw)
	}
	r.ack(evs...)
	r.Publish("")
	evs = r.pull(1, false)
	js, _ = json.Marshal(evs[0])
	if strings.Contains(string(js), "lineBase64") {
		t.Fatalf("lineBase64 without raw: %s", js)
	}
}

func TestPullIDs(t *testing.T) {
	r := newPullRig(t, processor.GroupConfig{Retry: slowRetry(6)}, time.Hour, 1000)
	r.Publish(grouptest.Lines("l", 0, 500)...)
	seen := map[string]bool{}
	for _, e := range r.pull(500, false) {
		if seen[e.DeliveryID] || !regexp.MustCompile(`^consumer:[0-9a-f]{32}$`).MatchString(e.DeliveryID) {
			t.Fatalf("deliveryId %q", e.DeliveryID)
		}
		seen[e.DeliveryID] = true
		if IDSubscriber(e.DeliveryID) != "consumer" {
			t.Fatal("IDSubscriber")
		}
	}
	if r.p.Ack("consumer:00000000000000000000000000000000") {
		t.Fatal("a made-up id was acknowledged")
	}
}

// slowLedger fails the first dead-letter write; the second one blocks until
// the test says how it ends (nil: written); later ones fail.
type slowLedger struct {
	*processor.Ledger
	calls   atomic.Int32
	entered chan struct{}
	result  chan error
}

func (l *slowLedger) DeadLetter(d *feed.Delivery, attempts int, lastErr error) error {
	switch l.calls.Add(1) {
	case 1:
		return errors.New("ledger: input/output error")
	case 2:
		l.entered <- struct{}{}
		if err := <-l.result; err != nil {
			return err
		}
		return l.Ledger.DeadLetter(d, attempts, lastErr)
	}
	return errors.New("ledger: input/output error")
}

// A held line (its first dead letter failed) runs out of attempts again and
// is being written to the ledger when POST /admin/release comes: the write
// decides its fate. Written: dead-lettered once, not released, finished
// once. Failed: held again, and then released — never revived after it was
// finished.
func TestPullReleaseWaitsForADeadLetterInProgress(t *testing.T) {
	for _, written := range []bool{true, false} {
		t.Run(fmt.Sprintf("written=%v", written), func(t *testing.T) {
			l, err := processor.OpenLedger(filepath.Join(t.TempDir(), "consumer.jsonl"), nil)
			if err != nil {
				t.Fatal(err)
			}
			slow := &slowLedger{Ledger: l, entered: make(chan struct{}, 1), result: make(chan error, 1)}
			retry := processor.Retry{Initial: 5 * time.Millisecond, Max: 5 * time.Millisecond, Attempts: 1}
			r := newPullRig(t, processor.GroupConfig{Retry: retry, OnFailure: processor.DeadLetter, Ledger: slow}, time.Hour, 100)
			t.Cleanup(func() { // a failed test must not leave the write blocked (Close waits for it)
				select {
				case slow.result <- errors.New("test over"):
				default:
				}
			})
			r.Publish("poison")
			r.p.Nack(r.pull(1, false)[0].DeliveryID) // out of attempts; the ledger fails: held
			grouptest.WaitFor(t, "the hold", func() bool { st, _ := r.Q.State(); return st == feed.Fenced })
			r.p.Nack(r.pull(1, false)[0].DeliveryID) // out of attempts again: written, slowly
			<-slow.entered
			if n, ok := r.p.ReleaseHold(); ok {
				t.Fatalf("released %d lines while the held line was being dead-lettered", n)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			type rel struct {
				n   uint64
				err error
			}
			done := make(chan rel, 1)
			go func() { n, err := r.G.Release(ctx); done <- rel{n, err} }() // waits for the write
			if written {
				slow.result <- nil
			} else {
				slow.result <- errors.New("ledger: no space left on device")
			}
			got := <-done
			r.WaitAck(1, 10*time.Second)
			r.p.mu.Lock()
			unacked, held := r.p.unacked, r.p.held
			r.p.mu.Unlock()
			if unacked != 0 || held != 0 {
				t.Fatalf("unacked %d, held %d after the line was finished, want 0, 0", unacked, held)
			}
			if written {
				if !errors.Is(got.err, processor.ErrNotHeld) || l.Len() != 1 || r.G.DeadLettered() != 1 || r.Q.ReleasedLines() != 0 {
					t.Fatalf("release %d, %v; ledger %d, deadLettered %d, released %d; want not held, 1, 1, 0",
						got.n, got.err, l.Len(), r.G.DeadLettered(), r.Q.ReleasedLines())
				}
			} else if got.err != nil || got.n != 1 || l.Len() != 0 || r.G.DeadLettered() != 0 || r.Q.ReleasedLines() != 1 {
				t.Fatalf("release %d, %v; ledger %d, deadLettered %d, released %d; want 1 released, 0, 0, 1",
					got.n, got.err, l.Len(), r.G.DeadLettered(), r.Q.ReleasedLines())
			}
			if st, _ := r.Q.State(); st == feed.Fenced {
				t.Fatal("still fenced")
			}
		})
	}
}

// A pull subscriber filters by itself, so it applies the group's re-read
// skip itself too (processor.Host.TakeSkips): a feed restarted by a
// reload, or the subscriber added back while it holds the feed, re-reads
// lines it finished or that were published while it was removed; they
// are finished unseen, never handed out again (DESIGN §12 "adding the
// processor back re-reads nothing"). Before, pull ignored the skip and
// handed out every re-read line.
func TestPullSkipsTheReread(t *testing.T) {
	r := newPullRig(t, processor.GroupConfig{Retry: slowRetry(6),
		Skip: []feed.Mark{{Epoch: 0xe1, Position: 16, OK: true}}}, time.Hour, 100) // through the second line (ends 8, 16, ...)
	r.Publish(grouptest.Lines("l", 0, 4)...)
	evs := r.pull(2, false)
	if evs[0].Line != "l-00002" || evs[1].Line != "l-00003" || evs[0].Sequence != 3 {
		t.Fatalf("events %+v, want the third and fourth lines only", evs)
	}
	if more := r.p.Pull(context.Background(), 10, 100*time.Millisecond, false); len(more) != 0 {
		t.Fatalf("re-read lines handed out: %+v", more)
	}
	r.ack(evs...)
	r.WaitAck(4, 5*time.Second)
}
