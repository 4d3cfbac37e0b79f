package pull

import (
	"container/heap"
	"errors"
	"fmt"
	"time"

	"tailfeed/feed"
	"tailfeed/processor"
)

// The pull subscriber's clock: ACK deadlines, redeliveries after a backoff
// step, dead letters and the hold (see Pull).

// setTimer puts e in the timer heap at e.due (or moves it there): a
// redelivery after a backoff step. (ACK deadlines are in outq.)
func (p *Pull) setTimer(e *pullEntry) {
	if e.tidx >= 0 {
		heap.Fix(&p.timers, int(e.tidx))
	} else {
		heap.Push(&p.timers, e)
	}
	if p.timers[0] == e {
		kickChan(p.kick)
	}
}

// expire handles every deadline due at now; p.mu is held. Afterwards the
// front of outq is live (or outq is empty).
func (p *Pull) expire(now time.Time) {
	changed := false
	for p.outHead < len(p.outq) {
		s := p.outq[p.outHead]
		live := s.live()
		if live && s.e.due > p.clock(now) {
			break
		}
		p.outq[p.outHead] = outSlot{}
		p.outHead++
		if live {
			s.e.slot = true // out counts it until its redelivery (or its late ACK)
			p.fail(s.e, now, fmt.Errorf("not acknowledged within %v", p.ackTimeout), false)
			changed = true
		}
	}
	if p.outHead == len(p.outq) {
		p.outq, p.outHead = p.outq[:0], 0
	}
	for len(p.timers) > 0 && p.timers[0].due <= p.clock(now) {
		e := heap.Pop(&p.timers).(*pullEntry)
		if e.state == pullDelayed {
			// Ready first among the ready lines (redeliveries come first):
			// the slot it kept is its own at the next handout.
			p.freeSlot(e)
			e.state = pullReady
			heap.Push(&p.ready, e)
		}
		changed = true
	}
	if changed {
		p.advance()
		p.broadcast()
	}
}

// nextDue is the earliest deadline after expire (zero: none).
func (p *Pull) nextDue() time.Time {
	next, ok := int64(0), false
	if p.outHead < len(p.outq) {
		next, ok = p.outq[p.outHead].e.due, true
	}
	if len(p.timers) > 0 && (!ok || p.timers[0].due < next) {
		next, ok = p.timers[0].due, true
	}
	if !ok {
		return time.Time{}
	}
	return p.t0.Add(time.Duration(next))
}

// fail handles a failed delivery of e (already out of the heaps and the
// out count): redelivery after a backoff step (at once for a NACK), the
// dead-letter ledger or the hold once the attempts ran out.
func (p *Pull) fail(e *pullEntry, now time.Time, err error, nacked bool) {
	p.h.Fail()
	e.lastErr = err
	if nacked {
		p.dropID(e)
	}
	if e.replay && int(e.attempt) >= p.retry.Attempts {
		// Out of attempts again: it stays in the ledger, once.
		p.log.Warn("replayed dead letter not acknowledged; it stays in the dead-letter ledger",
			"position", e.pos, "attempts", e.attempt, "error", err)
		p.finish(e, err)
		return
	}
	if !e.replay && int(e.attempt) >= p.retry.Attempts {
		if p.onFailure == processor.DeadLetter {
			p.dropID(e)
			p.freeSlot(e)
			e.state = pullDying
			p.dying = append(p.dying, e)
			kickChan(p.kick)
			return
		}
		if !e.held {
			e.held = true
			p.held++
			p.fence(e)
		}
	}
	if nacked {
		e.state = pullReady
		heap.Push(&p.ready, e)
		return
	}
	e.state = pullDelayed
	e.due = p.clock(now) + int64(p.retry.Step(int(e.attempt)))
	p.setTimer(e)
}

// fence makes the subscriber hold the feed (the line out of attempts); the
// group logs it once, with the reason.
func (p *Pull) fence(e *pullEntry) {
	p.h.HoldFence(fmt.Errorf("line at position %d (epoch %016x) not acknowledged after %d attempts: %v",
		e.pos, e.src.epoch, e.attempt, e.lastErr))
}

func (p *Pull) unfence() {
	p.h.LiftHold() // logs "subscriber recovered" when it was fenced
}

// run is the timer goroutine: it expires deliveries and writes dead
// letters (outside the lock: an fsync).
func (p *Pull) run() {
	defer close(p.done)
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		p.mu.Lock()
		p.expire(time.Now())
		work := p.dying
		p.dying = nil
		next := p.nextDue()
		p.mu.Unlock()
		if len(work) > 0 {
			for _, e := range work {
				p.deadLetter(e)
			}
			continue
		}
		var tc <-chan time.Time
		if !next.IsZero() {
			t.Reset(time.Until(next))
			tc = t.C
		}
		select {
		case <-p.stop:
			return
		case <-p.kick:
		case <-tc:
		}
	}
}

// deadLetter writes e to the ledger; when that fails the line is held
// instead and tried again at its next expiry.
func (p *Pull) deadLetter(e *pullEntry) {
	var d feed.Delivery
	d.Reset(&feed.Batch{Feed: e.src.feed, Path: e.src.path, Epoch: e.src.epoch, Positioned: e.src.positioned, FirstSeq: e.seq,
		Lines: [][]byte{e.line}, Ends: []int64{e.pos}}, 0)
	d.Attempt = int(e.attempt)
	err := p.h.DeadLetter(&d, int(e.attempt), e.lastErr, "", 0)
	p.mu.Lock()
	defer p.mu.Unlock()
	if e.state != pullDying {
		return // finished meanwhile: never finish it twice, nor revive it (see ReleaseHold)
	}
	if err != nil {
		p.log.Error("dead-letter write failed; holding the line", "position", e.pos, "error", err)
		if !e.held {
			e.held = true
			p.held++
			e.lastErr = fmt.Errorf("%w (dead-letter write failed: %v)", e.lastErr, err)
			p.fence(e)
		}
		e.state = pullDelayed
		e.due = p.clock(time.Now()) + int64(p.retry.Step(int(e.attempt)))
		p.setTimer(e)
		return
	}
	p.log.Warn("pull line dead-lettered", "position", e.pos, "attempts", e.attempt, "error", e.lastErr)
	p.finish(e, nil)
	p.advance()
	p.broadcast()
}

// ReleaseHold implements HoldReleaser (POST /admin/release): the lines
// held out of attempts are given up — they count as done, and the group
// counts them as released (Host.ReleaseHeld) — and the subscriber goes on.
// ok is false when no line is held.
//
// A held line that ran out of attempts again and is being written to the
// ledger (pullDying) is left to that write, which runs outside the lock:
// written, it is dead-lettered; failed, it is held again and a later
// release (Group.Release keeps asking) gives it up. Releasing it meanwhile
// finished it twice, or revived it after it was finished.
func (p *Pull) ReleaseHold() (uint64, bool) {
	p.mu.Lock()
	n := uint64(0)
	for _, e := range p.order[p.head:] {
		if e.held && e.state != pullDone && e.state != pullDying {
			p.unlink(e)
			p.finish(e, nil)
			n++
		}
	}
	// An adopted delivery (a reload restarted the feed) not yet placed in
	// order — its re-read batch waits for room — is held too (review 28a
	// A): finished here, the batch that places it skips it as done.
	for _, e := range p.adopted {
		if e.held && e.state != pullDone && e.state != pullDying {
			p.unlink(e)
			p.finish(e, nil)
			n++
		}
	}
	if n > 0 {
		p.h.ReleaseHeld(n) // counted before the ack point passes them
		p.advance()
		p.broadcast()
	}
	p.mu.Unlock()
	if n == 0 {
		return 0, false
	}
	p.log.Warn("held pull lines released on purpose", "lines", n)
	p.h.Wake()
	return n, true
}

// QueueReplay queues up to max of the oldest dead letters of the ledger
// that are not out already, for clients to pull (see Pull), and returns at
// once how many it queued.
func (p *Pull) QueueReplay(max int) (int, error) {
	l := p.h.Ledger()
	if l == nil {
		return 0, processor.ErrNoLedger
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, ErrClosed
	}
	// Read under p.mu (lock order p.mu → l.mu), so the ledger and replaying
	// agree: an acknowledged entry stays in replaying until it left the
	// ledger (removeReplayed).
	items := l.Head(l.Len())
	n := 0
	for _, it := range items {
		if n >= max {
			break
		}
		if p.replaying[it.ID] != nil {
			continue
		}
		p.rank++
		src := &lineSource{feed: it.Entry.Feed, path: it.Entry.Path, epoch: it.Epoch, positioned: it.Entry.Positioned}
		e := &pullEntry{rank: p.rank, pos: it.Entry.Position, src: src, line: it.Line, replay: true, lid: it.ID, ridx: -1, tidx: -1}
		p.replaying[it.ID] = e
		heap.Push(&p.ready, e)
		n++
	}
	if n > 0 {
		p.broadcast()
		p.log.Info("dead letters queued for replay", "entries", n)
	}
	return n, nil
}

// removeReplayed removes acknowledged replayed dead letters from the
// ledger (an fsynced rewrite, outside p.mu). An entry that cannot be
// removed stays in the ledger (its line was delivered: a later replay
// delivers it again, never loses it).
func (p *Pull) removeReplayed(ids []uint64) {
	l := p.h.Ledger()
	if len(ids) == 0 || l == nil {
		return
	}
	set := make(map[uint64]bool, len(ids))
	for _, id := range ids {
		set[id] = true
	}
	n, err := l.Remove(set)
	p.mu.Lock()
	for id := range set {
		// Also after a failed rewrite: the entry is in the ledger, and a
		// later replay may queue it again.
		delete(p.replaying, id)
	}
	p.mu.Unlock()
	if err != nil {
		p.log.Error("acknowledged replayed dead letters stay in the ledger", "entries", len(ids), "error", err)
	}
	if n > 0 {
		p.log.Info("dead letters replayed", "entries", n)
		p.h.Wake() // deadLettered changed
	}
}

// errPurged ends a replayed dead letter purged from the ledger.
var errPurged = errors.New("purged from the dead-letter ledger")

// PurgeDeadLetters implements processor.DeadLetterPurger: it purges the ledger (Ledger.Purge) and drops the replayed
// entries it purged that are queued or out: a later ACK of one is unknown
// (404), so a purged entry never counts as delivered as well as released.
// Entries acknowledged and waiting for removeReplayed are left to it (they
// were delivered, not released). Under p.mu, so no ACK or replay runs in
// between.
func (p *Pull) PurgeDeadLetters(max int) (int, error) {
	return p.PurgeDeadLettersCounted(max, nil)
}

// PurgeDeadLettersCounted implements processor.DeadLetterCountedPurger:
// PurgeDeadLetters with count told first (Ledger.RemoveCounted).
func (p *Pull) PurgeDeadLettersCounted(max int, count processor.PurgeCount) (int, error) {
	l := p.h.Ledger()
	if l == nil {
		return 0, processor.ErrNoLedger
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	ids := l.PurgeIDs(max, func(id uint64) bool {
		e := p.replaying[id]
		return e != nil && e.state == pullDone
	})

	n, err := l.RemoveCounted(ids, count)
	if err != nil {
		return n, err
	}
	dropped := 0
	for id := range ids {
		if e := p.replaying[id]; e != nil && e.state != pullDone {
			p.unlink(e)
			p.finish(e, errPurged)
			dropped++
		}
	}
	if dropped > 0 {
		p.log.Info("purged dead letters dropped from the replay", "entries", dropped)
		p.broadcast()
	}
	return n, nil
}

// readyHeap orders lines by queue position (replays first).
type readyHeap []*pullEntry

func (h readyHeap) Len() int           { return len(h) }
func (h readyHeap) Less(i, j int) bool { return h.rankKey(i) < h.rankKey(j) }
func (h readyHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].ridx, h[j].ridx = int32(i), int32(j)
}
func (h *readyHeap) Push(x any) {
	e := x.(*pullEntry)
	e.ridx = int32(len(*h))
	*h = append(*h, e)
}
func (h *readyHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.ridx = -1
	return e
}

// rankKey puts replays (through 0) before every queued line.
func (h readyHeap) rankKey(i int) uint64 {
	if h[i].replay {
		return h[i].rank
	}
	return h[i].rank + 1<<62
}

// timerHeap orders entries by due time.
type timerHeap []*pullEntry

func (h timerHeap) Len() int           { return len(h) }
func (h timerHeap) Less(i, j int) bool { return h[i].due < h[j].due }
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].tidx, h[j].tidx = int32(i), int32(j)
}
func (h *timerHeap) Push(x any) {
	e := x.(*pullEntry)
	e.tidx = int32(len(*h))
	*h = append(*h, e)
}
func (h *timerHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.tidx = -1
	return e
}

// kickChan wakes the timer goroutine without blocking.
func kickChan(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
