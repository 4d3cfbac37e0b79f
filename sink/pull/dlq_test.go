package pull

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/internal/grouptest"
	"tailfeed/processor"
)

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
	r := newPullRig(t, processor.GroupConfig{Retry: slowRetry(6), OnFailure: processor.DeadLetter}, time.Hour, 10000)
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

// A purge during a pull replay drops the purged entries from the
// subscriber: a queued one is not handed out any more, and the ACK of one
// out is unknown, so no line counts both as delivered and as released.
func TestPullPurgeDropsQueuedReplays(t *testing.T) {
	r := newPullRig(t, processor.GroupConfig{Retry: slowRetry(6), OnFailure: processor.DeadLetter}, time.Hour, 100)
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
	n, err := r.G.PurgeDeadLetters(10)
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

// TestPullReplayQueuesAtOnce: a replay into a pull subscriber returns at
// once with the count queued; the entries are handed out first (sequence
// 0) and leave the ledger one by one as they are acknowledged; a NACK hands
// the entry out again; a second replay does not queue what is out.
func TestPullReplayQueuesAtOnce(t *testing.T) {
	r := newPullRig(t, processor.GroupConfig{Retry: slowRetry(2), OnFailure: processor.DeadLetter}, time.Hour, 100)
	r.Publish("p1", "p2")
	var evs []Event
	for range 2 {
		evs = r.pull(2, false)
		r.p.NackAll([]string{evs[0].DeliveryID, evs[1].DeliveryID})
	}
	r.WaitAck(2, 5*time.Second)
	if r.ledger.Len() != 2 {
		t.Fatalf("ledger %d entries, want 2", r.ledger.Len())
	}
	res := make(chan processor.ReplayResult, 1)
	go func() {
		n, _ := r.G.Replay(context.Background(), 10)
		res <- n
	}()
	var got processor.ReplayResult
	select {
	case got = <-res:
	case <-time.After(5 * time.Second):
		t.Fatal("replay into a pull subscriber did not answer at once")
	}
	if !got.Queuing || got.Queued != 2 || got.Remaining != 2 {
		t.Fatalf("replay %+v, want queued 2, remaining 2", got)
	}
	if again, err := r.G.Replay(context.Background(), 10); err != nil || again.Queued != 0 {
		t.Fatalf("second replay %+v, %v: queued what is out already", again, err)
	}
	rep := r.pull(2, false)
	for i, ev := range rep {
		if ev.Line != evs[i].Line || ev.Sequence != 0 || ev.Position != evs[i].Position || ev.Attempt != 1 {
			t.Fatalf("replayed event %+v", ev)
		}
	}
	if !r.p.Nack(rep[0].DeliveryID) {
		t.Fatal("nack refused")
	}
	r.ack(rep[1])
	if got := ledgerTexts(t, r.ledger); fmt.Sprint(got) != "[p1]" {
		t.Fatalf("ledger %v after the ACK of p2, want [p1]", got)
	}
	again := r.pull(1, false)[0]
	if again.Line != "p1" || again.Attempt != 2 || again.Sequence != 0 {
		t.Fatalf("redelivery after the NACK %+v", again)
	}
	r.ack(again)
	if r.ledger.Len() != 0 || r.G.Ledgered() != 0 {
		t.Fatalf("ledger %d entries after every ACK", r.ledger.Len())
	}
	if q := r.Q.AckPoint(); q != 2 {
		t.Fatalf("ack point %d, want 2 (replays hold no queue position)", q)
	}
}

// TestPullReplayOutOfAttemptsStaysOnce: a replayed entry whose deliveries
// fail retry.attempts times is dropped by the subscriber and stays in the
// ledger once (not dead-lettered again); a replay queues it again.
func TestPullReplayOutOfAttemptsStaysOnce(t *testing.T) {
	r := newPullRig(t, processor.GroupConfig{Retry: slowRetry(2), OnFailure: processor.DeadLetter}, 100*time.Millisecond, 100)
	r.Publish("p")
	for i := range 2 {
		ev := r.pull(1, false)[0]
		if ev.Attempt != i+1 {
			t.Fatalf("attempt %d, want %d", ev.Attempt, i+1)
		}
		r.p.Nack(ev.DeliveryID)
	}
	r.WaitAck(1, 5*time.Second)
	if got, err := r.G.Replay(context.Background(), 10); err != nil || got.Queued != 1 {
		t.Fatalf("replay %+v, %v", got, err)
	}
	ev := r.pull(1, false)[0]
	r.p.Nack(ev.DeliveryID)
	ev = r.pull(1, false)[0] // attempt 2: let it time out
	if ev.Attempt != 2 {
		t.Fatalf("attempt %d, want 2", ev.Attempt)
	}
	time.Sleep(300 * time.Millisecond)
	if evs := r.p.Pull(context.Background(), 10, 300*time.Millisecond, false); len(evs) != 0 {
		t.Fatalf("handed out %+v after the attempts ran out", evs)
	}
	if got := ledgerTexts(t, r.ledger); fmt.Sprint(got) != "[p]" {
		t.Fatalf("ledger %v, want [p] (once)", got)
	}
	if got, err := r.G.Replay(context.Background(), 10); err != nil || got.Queued != 1 {
		t.Fatalf("replay after the attempts ran out %+v, %v", got, err)
	}
	r.ack(r.pull(1, false)[0])
	if r.ledger.Len() != 0 {
		t.Fatalf("ledger %d entries after the ACK", r.ledger.Len())
	}
}

// TestPullSkipsLedgerLines: a pull subscriber does not hand out a line the
// ledger holds; the ack point passes it once the lines before it are
// acknowledged.
func TestPullSkipsLedgerLines(t *testing.T) {
	r := newPullRig(t, processor.GroupConfig{Retry: slowRetry(6), OnFailure: processor.DeadLetter}, time.Minute, 100)
	if err := r.ledger.DeadLetter(grouptest.Delivery("l-00001", 0xe1, 16), 6, errors.New("boom")); err != nil {
		t.Fatal(err)
	}
	r.Publish(grouptest.Lines("l", 0, 3)...) // ends 8, 16, 24
	evs := r.pull(2, false)
	if evs[0].Line != "l-00000" || evs[1].Line != "l-00002" {
		t.Fatalf("pulled %q, %q; want l-00000 and l-00002", evs[0].Line, evs[1].Line)
	}
	if a := r.Q.AckPoint(); a != 0 {
		t.Fatalf("ack point %d before any ACK", a)
	}
	r.ack(evs[0])
	r.WaitAck(2, 10*time.Second)
	r.ack(evs[1])
	r.WaitAck(3, 10*time.Second)
}

// TestPullEmptyBatchPassesLines: the empty batch that notes lines finished
// without the pull neither waits for maxInFlight nor moves the ack point
// before the lines ahead of it are acknowledged.
func TestPullEmptyBatchPassesLines(t *testing.T) {
	r := grouptest.New(t, processor.GroupConfig{Name: "consumer", Retry: grouptest.FastRetry(3)})
	h := &markHost{Group: r.G}
	p, err := New(Config{Group: h, AckTimeout: time.Minute, MaxInFlight: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h.mark = 1 // the group is not running: this goroutine plays it
	if n, err := p.ProcessBatch(ctx, grouptest.Batch(1, 0, "a")); n != 1 || err != nil {
		t.Fatalf("ProcessBatch = %d, %v", n, err)
	}
	h.mark = 2
	if n, err := p.ProcessBatch(ctx, &feed.Batch{Feed: "app", Epoch: 1, Positioned: true, FirstSeq: 2}); n != 0 || err != nil {
		t.Fatalf("empty ProcessBatch = %d, %v (maxInFlight reached: it must not wait)", n, err)
	}
	r.Q.AddDispatched(2)
	if a := r.Q.AckPoint(); a != 0 {
		t.Fatalf("ack point %d before a is acknowledged, want 0", a)
	}
	evs := p.Pull(ctx, 10, time.Second, false)
	if len(evs) != 1 || !p.Ack(evs[0].DeliveryID) {
		t.Fatalf("pulled %+v", evs)
	}
	if a := r.Q.AckPoint(); a != 2 {
		t.Fatalf("ack point %d after a is acknowledged, want 2", a)
	}
}

// ledgerTexts is the ledger's entries' lines, as the file holds them.
func ledgerTexts(t *testing.T, l *processor.Ledger) []string {
	t.Helper()
	items, n := l.List(1000)
	out := make([]string, 0, n)
	for _, it := range items {
		out = append(out, it.Line)
	}
	// The file agrees with memory: a reopen reads the same entries.
	again, err := processor.OpenLedger(l.Path(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.Len() != n {
		t.Fatalf("ledger file holds %d entries, memory %d", again.Len(), n)
	}
	return out
}
func letterRequest(t *testing.T, l *processor.Ledger, line string, pos int64, key string, lines int) {
	t.Helper()
	var d feed.Delivery
	d.Reset(&feed.Batch{Feed: "app", Path: "/in.log", Epoch: 0xe1, Positioned: true,
		Lines: [][]byte{[]byte(line)}, Ends: []int64{pos}}, 0)
	if err := l.DeadLetterRequest(&d, 6, fmt.Errorf("x"), key, lines); err != nil {
		t.Fatal(err)
	}
}

// markHost is a group whose Mark this test sets (it plays the group).
type markHost struct {
	*processor.Group
	mark uint64
}

func (h *markHost) Mark() uint64 { return h.mark }
