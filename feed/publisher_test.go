package feed

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"tailfeed/overload"
)

// lineSrc hands out lines of distinct lengths so that every position is
// different from its neighbours' and a wrong index shows.
type lineSrc struct {
	pos  int64
	n    int
	ends []int64 // ends[i]: position after line i+1 (sequence i+1)
}

func (s *lineSrc) batch(n int) *Batch {
	b := NewBatch()
	b.Feed, b.Path, b.Epoch = "f", "/in", 7
	for range n {
		s.n++
		l := fmt.Sprintf("line-%d-%s", s.n, strings.Repeat("x", s.n%5))
		s.pos += int64(len(l)) + 1
		b.AppendLine([]byte(l), s.pos)
		s.ends = append(s.ends, s.pos)
	}
	return b
}

// end is the position after the line with sequence seq.
func (s *lineSrc) end(seq uint64) int64 { return s.ends[seq-1] }

func pauseQ(name string, capLines int) *Queue {
	return NewQueue(name, capLines, 1<<20, overload.Policy{Kind: overload.Pause})
}

// consume pops every batch queued in q and counts its lines as dispatched.
func consume(q *Queue) int {
	n := 0
	for b := q.TryPop(); b != nil; b = q.TryPop() {
		n += b.Len()
		b.Release()
	}
	q.AddDispatched(uint64(n))
	return n
}

func mustPublish(t *testing.T, p *Publisher, b *Batch) {
	t.Helper()
	if !p.TryPublish(b) {
		t.Fatalf("TryPublish refused a batch of %d lines (reason %q)", b.Len(), p.PauseReason())
	}
}

func wantAck(t *testing.T, a Acked, seq uint64, pos int64) {
	t.Helper()
	if !a.Moved || a.Seq != seq || !a.Positioned || a.Position != pos || a.Epoch != 7 {
		t.Fatalf("PollAcks = %+v, want seq %d position %d epoch 7", a, seq, pos)
	}
}

func TestPublishNumbersContiguouslyFromOne(t *testing.T) {
	q := pauseQ("a", 100)
	p := NewPublisher("f", []*Queue{q}, 1000, 10)
	var src lineSrc
	if p.Sequence() != 0 {
		t.Fatalf("Sequence before any publish = %d, want 0", p.Sequence())
	}
	next := uint64(1)
	for _, n := range []int{1, 3, 2, 7} {
		b := src.batch(n)
		mustPublish(t, p, b)
		if b.FirstSeq != next {
			t.Fatalf("FirstSeq = %d, want %d", b.FirstSeq, next)
		}
		next += uint64(n)
		if p.Sequence() != next-1 || q.Position() != next-1 {
			t.Fatalf("Sequence %d, Position %d, want %d", p.Sequence(), q.Position(), next-1)
		}
	}
	seq := uint64(1)
	for b := q.TryPop(); b != nil; b = q.TryPop() {
		if b.FirstSeq != seq {
			t.Fatalf("queued batch starts at %d, want %d", b.FirstSeq, seq)
		}
		seq += uint64(b.Len())
		b.Release()
	}
}

func TestPauseQueueFullRefusesWholePublish(t *testing.T) {
	a := pauseQ("a", 4)
	drop := NewQueue("tap", 1, 1<<20, overload.Policy{Kind: overload.DropAfterSpin, Spin: time.Hour})
	block := NewQueue("slow", 1, 1<<20, overload.Policy{Kind: overload.BlockWithDeadline, Deadline: time.Hour})
	p := NewPublisher("f", []*Queue{a, drop, block}, 1000, 10)
	var src lineSrc
	mustPublish(t, p, src.batch(3)) // every queue is empty: all take it

	b := src.batch(2)
	if p.TryPublish(b) {
		t.Fatal("TryPublish accepted a batch a full PAUSE queue has no room for")
	}
	// Nothing numbered, queued, dropped or refused; the DROP and BLOCK
	// queues (full too) were not even asked, or the test would hang.
	if b.FirstSeq != 0 || p.Sequence() != 3 || p.Pending() != 3 {
		t.Fatalf("after a refusal: FirstSeq %d Sequence %d Pending %d", b.FirstSeq, p.Sequence(), p.Pending())
	}
	for _, q := range []*Queue{a, drop, block} {
		if q.Position() != 3 || q.Depth() != 3 {
			t.Fatalf("queue %s: position %d depth %d after a refusal, want 3/3", q.Name, q.Position(), q.Depth())
		}
	}
	if drop.Counters.Dropped.Load() != 0 || block.Counters.Refused.Load() != 0 {
		t.Fatal("a refused publish counted drops or refusals")
	}
	if !p.Paused() || p.Pauses() != 1 || !strings.Contains(p.PauseReason(), "queue a full") || p.PausedSince().IsZero() {
		t.Fatalf("paused %v pauses %d reason %q", p.Paused(), p.Pauses(), p.PauseReason())
	}
	if p.TryPublish(b) || p.Pauses() != 1 {
		t.Fatalf("a second refusal in the same episode: pauses %d, want 1", p.Pauses())
	}

	consume(a)
	consume(drop)
	consume(block)
	mustPublish(t, p, b)
	if b.FirstSeq != 4 || p.Sequence() != 5 || p.Paused() || !p.PausedSince().IsZero() {
		t.Fatalf("after room freed: FirstSeq %d Sequence %d paused %v", b.FirstSeq, p.Sequence(), p.Paused())
	}
	consume(a)
	consume(drop)
	consume(block)
	mustPublish(t, p, src.batch(4))
	if p.TryPublish(src.batch(1)) || p.Pauses() != 2 {
		t.Fatalf("a new full episode: pauses %d, want 2", p.Pauses())
	}
}

func TestPollAcksOnlyWhatEveryHoldingQueuePassed(t *testing.T) {
	q1, q2 := pauseQ("q1", 100), pauseQ("q2", 100)
	p := NewPublisher("f", []*Queue{q1, q2}, 1000, 10)
	var src lineSrc
	for range 3 {
		mustPublish(t, p, src.batch(2))
	}
	if a := p.PollAcks(); a.Moved {
		t.Fatalf("nothing dispatched, PollAcks = %+v", a)
	}
	q1.AddDispatched(6)
	if a := p.PollAcks(); a.Moved || p.Acknowledged() != 0 {
		t.Fatalf("only q1 finished, PollAcks = %+v", a)
	}
	q2.AddDispatched(2)
	wantAck(t, p.PollAcks(), 2, src.end(2))
	q2.AddDispatched(3) // line 5 of the batch 5..6
	wantAck(t, p.PollAcks(), 5, src.end(5))
	if p.Pending() != 1 || p.Acknowledged() != 5 {
		t.Fatalf("Pending %d Acknowledged %d, want 1 and 5", p.Pending(), p.Acknowledged())
	}
	if a := p.PollAcks(); a.Moved {
		t.Fatalf("nothing new, PollAcks = %+v", a)
	}
	q2.AddDispatched(1)
	wantAck(t, p.PollAcks(), 6, src.end(6))
	if p.Pending() != 0 {
		t.Fatalf("Pending %d, want 0", p.Pending())
	}
}

func TestPartlyAcknowledgedBatchResolvesToLastAcknowledgedLine(t *testing.T) {
	q1, q2 := pauseQ("q1", 100), pauseQ("q2", 100)
	p := NewPublisher("f", []*Queue{q1, q2}, 1000, 10)
	var src lineSrc
	mustPublish(t, p, src.batch(5))
	mustPublish(t, p, src.batch(5))
	q1.AddDispatched(3)
	q2.AddDispatched(7)
	wantAck(t, p.PollAcks(), 3, src.end(3))
	q1.AddDispatched(6) // 9
	wantAck(t, p.PollAcks(), 7, src.end(7))
	q2.AddDispatched(1) // 8
	wantAck(t, p.PollAcks(), 8, src.end(8))
	q2.AddDispatched(2)
	q1.AddDispatched(1)
	wantAck(t, p.PollAcks(), 10, src.end(10))
}

func TestLinesWithoutPositionAcknowledgeWithoutCommit(t *testing.T) {
	q := pauseQ("q", 100)
	p := NewPublisher("f", []*Queue{q}, 1000, 10)
	var src lineSrc
	b := src.batch(2)
	b.Positioned = false
	mustPublish(t, p, b)
	q.AddDispatched(2)
	a := p.PollAcks()
	if !a.Moved || a.Seq != 2 || a.Positioned {
		t.Fatalf("PollAcks = %+v, want seq 2 without a position", a)
	}
}

func TestBestEffortQueueNeverHolds(t *testing.T) {
	q := pauseQ("q", 100)
	tap := NewQueue("tap", 2, 1<<20, overload.Policy{Kind: overload.DropAfterSpin, Spin: time.Millisecond})
	p := NewPublisher("f", []*Queue{q, tap}, 4, 10)
	var src lineSrc
	for i := 1; i <= 20; i++ {
		mustPublish(t, p, src.batch(2)) // the window (4 lines) would stop the feed if tap held it
		consume(q)
		wantAck(t, p.PollAcks(), uint64(2*i), src.end(uint64(2*i)))
	}
	if tap.Dispatched() != 0 || tap.Position() != 2 || tap.Counters.Dropped.Load() != 38 {
		t.Fatalf("tap: dispatched %d position %d dropped %d, want 0, 2, 38",
			tap.Dispatched(), tap.Position(), tap.Counters.Dropped.Load())
	}
	// A dead or fenced best-effort subscriber never stalls the feed.
	tap.SetState(Dead, "subscriber tap dead: panic: boom")
	if tap.Stalling() {
		t.Fatal("a dead best-effort queue reports Stalling")
	}
	mustPublish(t, p, src.batch(1))
	consume(q)
	wantAck(t, p.PollAcks(), 41, src.end(41))
}

func TestHoldingSubscriberFencedOrDeadPausesFeed(t *testing.T) {
	for _, st := range []SubState{Fenced, Dead} {
		q, r := pauseQ("q", 100), pauseQ("r", 100)
		p := NewPublisher("f", []*Queue{q, r}, 1000, 10)
		var src lineSrc
		mustPublish(t, p, src.batch(2))
		r.SetState(st, "subscriber r failing: disk full")
		if p.TryPublish(src.batch(1)) {
			t.Fatalf("%v: a holding subscriber is %v and the publish was accepted", st, st)
		}
		if !p.Paused() || !strings.Contains(p.PauseReason(), "subscriber r stalled") || p.Sequence() != 2 {
			t.Fatalf("%v: paused %v reason %q sequence %d", st, p.Paused(), p.PauseReason(), p.Sequence())
		}
		// It holds the pointer before the first line it did not finish.
		consume(q)
		r.AddDispatched(1)
		wantAck(t, p.PollAcks(), 1, src.end(1))
		r.SetState(Live, "")
		mustPublish(t, p, src.batch(1))
	}
}

func TestBlockWithDeadlineRefusesAfterDeadlineAndDoesNotHold(t *testing.T) {
	a := pauseQ("a", 100)
	const deadline = 20 * time.Millisecond
	blk := NewQueue("blk", 2, 1<<20, overload.Policy{Kind: overload.BlockWithDeadline, Deadline: deadline})
	p := NewPublisher("f", []*Queue{a, blk}, 1000, 10)
	var src lineSrc
	mustPublish(t, p, src.batch(2))
	start := time.Now()
	mustPublish(t, p, src.batch(3)) // blk is full: waits, then refuses for blk only
	if el := time.Since(start); el < deadline {
		t.Fatalf("refused after %v, before the %v deadline", el, deadline)
	}
	if blk.Counters.Refused.Load() != 3 || blk.Position() != 2 || a.Position() != 5 || p.Sequence() != 5 {
		t.Fatalf("refused %d, blk position %d, a position %d, sequence %d",
			blk.Counters.Refused.Load(), blk.Position(), a.Position(), p.Sequence())
	}
	consume(a)
	if ack := p.PollAcks(); ack.Moved {
		t.Fatalf("blk has not finished lines 1-2, PollAcks = %+v", ack)
	}
	consume(blk)
	// The refused batch (3..5) does not wait for blk.
	wantAck(t, p.PollAcks(), 5, src.end(5))

	// Room that frees during the wait is taken: nothing refused.
	mustPublish(t, p, src.batch(2))
	blk.Gate.Policy.Deadline = time.Minute
	go func() {
		time.Sleep(10 * time.Millisecond)
		blk.TryPop().Release()
	}()
	mustPublish(t, p, src.batch(1))
	if blk.Counters.Refused.Load() != 3 || blk.Position() != 5 {
		t.Fatalf("after room freed in the wait: refused %d, position %d", blk.Counters.Refused.Load(), blk.Position())
	}
}

func TestDropAfterSpinSpinsOncePerEpisodeAndCountsLines(t *testing.T) {
	a := pauseQ("a", 100)
	const spin = 20 * time.Millisecond
	tap := NewQueue("tap", 2, 1<<20, overload.Policy{Kind: overload.DropAfterSpin, Spin: spin})
	p := NewPublisher("f", []*Queue{a, tap}, 1000, 10)
	var src lineSrc
	mustPublish(t, p, src.batch(2))
	start := time.Now()
	mustPublish(t, p, src.batch(3)) // full: spin, then drop
	if el := time.Since(start); el < spin {
		t.Fatalf("dropped after %v, before the %v spin", el, spin)
	}
	if tap.Counters.Dropped.Load() != 3 {
		t.Fatalf("dropped %d, want 3 (per line)", tap.Counters.Dropped.Load())
	}
	// Same episode: drops at once. A spin of an hour would hang here.
	tap.Gate.Policy.Spin = time.Hour
	publishWithin(t, p, src.batch(4), 10*time.Second)
	if tap.Counters.Dropped.Load() != 7 || tap.Position() != 2 {
		t.Fatalf("dropped %d position %d, want 7 and 2", tap.Counters.Dropped.Load(), tap.Position())
	}
	// Room ends the episode; the next full one spins again.
	consume(tap)
	mustPublish(t, p, src.batch(2))
	tap.Gate.Policy.Spin = spin
	start = time.Now()
	mustPublish(t, p, src.batch(1))
	if el := time.Since(start); el < spin || tap.Counters.Dropped.Load() != 8 {
		t.Fatalf("new episode: dropped %d after %v", tap.Counters.Dropped.Load(), el)
	}
	if a.Position() != 12 || p.Sequence() != 12 {
		t.Fatalf("the PAUSE queue got %d lines, sequence %d, want 12", a.Position(), p.Sequence())
	}
}

func publishWithin(t *testing.T, p *Publisher, b *Batch, d time.Duration) {
	t.Helper()
	done := make(chan bool, 1)
	go func() { done <- p.TryPublish(b) }()
	select {
	case ok := <-done:
		if !ok {
			t.Fatal("TryPublish refused")
		}
	case <-time.After(d):
		t.Fatalf("TryPublish still waiting after %v", d)
	}
}

func TestWindowCapsPendingAcks(t *testing.T) {
	q := pauseQ("q", 1000)
	p := NewPublisher("f", []*Queue{q}, 8, 20)
	var src lineSrc
	mustPublish(t, p, src.batch(3))
	mustPublish(t, p, src.batch(3))
	b := src.batch(3)
	if p.TryPublish(b) {
		t.Fatal("9 lines pending with maxPendingAcks 8: publish accepted")
	}
	if !p.Paused() || p.PauseReason() != "window full" || p.Pending() != 6 || b.FirstSeq != 0 {
		t.Fatalf("paused %v reason %q pending %d", p.Paused(), p.PauseReason(), p.Pending())
	}
	q.TryPop().Release()
	q.AddDispatched(3)
	wantAck(t, p.PollAcks(), 3, src.end(3))
	mustPublish(t, p, b)
	if p.Pending() != 6 || p.Paused() {
		t.Fatalf("pending %d paused %v, want 6 and false", p.Pending(), p.Paused())
	}
	consume(q)
	wantAck(t, p.PollAcks(), 9, src.end(9))
	// A batch larger than the window still goes into an empty window.
	mustPublish(t, p, src.batch(20))
	consume(q)
	wantAck(t, p.PollAcks(), 29, src.end(29))
}

func TestWindowPositionsSurviveRingWrap(t *testing.T) {
	q1, q2 := pauseQ("q1", 64), pauseQ("q2", 64)
	p := NewPublisher("f", []*Queue{q1, q2}, 16, 7)
	var src lineSrc
	for i := 0; i < 3000; i++ {
		b := src.batch(1 + i%7)
		for !p.TryPublish(b) {
			// q1 finishes everything, q2 one line at a time: the window
			// resolves partly acknowledged batches all along.
			consume(q1)
			if b2 := q2.TryPop(); b2 != nil {
				b2.Release()
			}
			if q2.Dispatched() < q2.Position() {
				q2.AddDispatched(1)
			}
			if a := p.PollAcks(); a.Moved {
				wantAck(t, a, q2.Dispatched(), src.end(q2.Dispatched()))
			}
		}
	}
	consume(q1)
	q2.Drain()
	q2.AddDispatched(q2.Position() - q2.Dispatched())
	wantAck(t, p.PollAcks(), p.Sequence(), src.end(p.Sequence()))
}

func TestDurableHoldAckPointIsMinOfDispatchedAndDurable(t *testing.T) {
	q := pauseQ("q", 100)
	p := NewPublisher("f", []*Queue{q}, 1000, 10)
	var src lineSrc
	mustPublish(t, p, src.batch(5))
	q.Hold()
	q.AddDispatched(5)
	if q.AckPoint() != 0 {
		t.Fatalf("held queue with nothing durable: ack point %d, want 0", q.AckPoint())
	}
	if a := p.PollAcks(); a.Moved {
		t.Fatalf("nothing durable, PollAcks = %+v", a)
	}
	q.DurableThrough(3)
	wantAck(t, p.PollAcks(), 3, src.end(3))
	q.DurableThrough(2) // marks only move forward
	if q.AckPoint() != 3 {
		t.Fatalf("ack point %d after a backward mark, want 3", q.AckPoint())
	}
	q.DurableThrough(9) // durable past dispatched: dispatched bounds it
	if q.AckPoint() != 5 {
		t.Fatalf("ack point %d, want dispatched 5", q.AckPoint())
	}
	wantAck(t, p.PollAcks(), 5, src.end(5))
}

// TestPublishedBatchIsNotReadAfterQueueing runs two feeds at once whose
// groups recycle batches at once: the race detector catches a publisher
// that reads a batch after handing it over (another feed may own it by then).
func TestPublishedBatchIsNotReadAfterQueueing(t *testing.T) {
	var wg sync.WaitGroup
	for f := range 2 {
		q := pauseQ(fmt.Sprint("q", f), 64)
		p := NewPublisher(fmt.Sprint("f", f), []*Queue{q}, 1<<20, 8)
		stop := make(chan struct{})
		wg.Add(2)
		go func() { // the group
			defer wg.Done()
			for {
				select {
				case <-q.Ready():
				case <-stop:
					return
				}
				consume(q)
			}
		}()
		go func() { // the source
			defer wg.Done()
			defer close(stop)
			var src lineSrc
			for range 3000 {
				b := src.batch(3)
				for !p.TryPublish(b) {
					<-q.Room()
				}
				p.PollAcks()
			}
		}()
	}
	wg.Wait()
}

// A wait for room is a pause (the source reads nothing meanwhile); the
// feed's stop ends it at once, nothing numbered, refused or dropped; a
// subscriber that turns fenced during it holds the feed instead of having
// its lines refused at the deadline (DESIGN §5 Holds, §7 paused, §12
// Signals). Before: the wait showed paused false, a stop waited out the
// whole deadline and then counted the batch refused, and a fence during
// the wait became a refusal.
func TestWaitForRoomPausesEndsAtStopAndYieldsToAHold(t *testing.T) {
	for _, policy := range []overload.Policy{
		{Kind: overload.BlockWithDeadline, Deadline: time.Hour},
		{Kind: overload.DropAfterSpin, Spin: time.Hour},
	} {
		t.Run(policy.Kind.String(), func(t *testing.T) {
			q := NewQueue("slow", 2, 1<<20, policy)
			p := NewPublisher("f", []*Queue{q}, 1000, 10)
			stop := make(chan struct{})
			p.StopWaits(stop)
			b, done := publishWaitingForRoom(t, p)
			if !strings.Contains(p.PauseReason(), "queue slow full") || p.Pauses() != 1 {
				t.Fatalf("pause reason %q, pauses %d", p.PauseReason(), p.Pauses())
			}
			close(stop)
			select {
			case ok := <-done:
				if ok {
					t.Fatal("a publish ended by the stop was accepted")
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the stop did not end the wait")
			}
			if b.FirstSeq != 0 || p.Sequence() != 2 || q.Counters.Refused.Load() != 0 || q.Dropped() != 0 {
				t.Fatalf("after the stop: FirstSeq %d sequence %d refused %d dropped %d", b.FirstSeq, p.Sequence(),
					q.Counters.Refused.Load(), q.Dropped())
			}
		})
	}
	t.Run("fenced during the wait", func(t *testing.T) {
		q := NewQueue("slow", 2, 1<<20, overload.Policy{Kind: overload.BlockWithDeadline, Deadline: time.Hour})
		p := NewPublisher("f", []*Queue{q}, 1000, 10)
		_, done := publishWaitingForRoom(t, p)
		q.SetState(Fenced, "failing")
		select {
		case ok := <-done:
			if ok {
				t.Fatal("a publish to a fenced subscriber's full queue was accepted")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the fence did not end the wait")
		}
		if q.Counters.Refused.Load() != 0 || p.Sequence() != 2 || !p.Paused() || !strings.Contains(p.PauseReason(), "stalled") {
			t.Fatalf("after the fence: refused %d sequence %d paused %v reason %q", q.Counters.Refused.Load(), p.Sequence(), p.Paused(), p.PauseReason())
		}
	})
}

// publishWaitingForRoom fills p's two-line queue, starts a publish of three
// more lines and waits until p is paused waiting for room; it returns the
// waiting batch and the channel that gets TryPublish's result.
func publishWaitingForRoom(t *testing.T, p *Publisher) (*Batch, chan bool) {
	t.Helper()
	var src lineSrc
	mustPublish(t, p, src.batch(2))
	b := src.batch(3)
	done := make(chan bool)
	go func() { done <- p.TryPublish(b) }()
	waitTrue(t, "paused while waiting for room", p.Paused)
	return b, done
}

func waitTrue(t *testing.T, what string, f func() bool) {
	t.Helper()
	end := time.Now().Add(5 * time.Second)
	for !f() {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
