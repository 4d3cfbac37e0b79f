package processor

import (
	"context"
	"errors"
	"time"

	"tailfeed/feed"
)

// Release: giving a held subscriber's backlog up on purpose (DESIGN §5,
// POST /admin/release/{feed}/{subscriber}). Every line given up counts in
// the queue's released counter (the feed turns lossless: false) and counts
// as finished for the ack point, so the pointer moves on.
//
//   - Fenced while processing (its retries keep failing): the line it is
//     stuck on is abandoned and the group goes on with the next one at
//     attempt 1. One line is released. With a processor that holds the ack
//     point (DurableThrough), the ack point passes the abandoned line once
//     the processor reports the later lines durable.
//   - Fenced while flushing (an fsync that keeps failing): the written lines
//     still waiting for their fsync are given up (the ack point jumps to
//     dispatched); the sink retries its sync at its next due time.
//   - Dead (a panic was recovered; the group's goroutine is parked): what
//     the interrupted batch had left, everything queued, and anything
//     dispatched but not yet durable are given up; the queue is drained and
//     the same goroutine runs on from the next line published, with the
//     same processor.
//
// Release only sends a message and waits for the answer: the group's
// goroutine (or, for a sink's own hold, the sink under its lock) does the
// work, and the group's state table (state.go) records it. A subscriber
// that is neither fenced nor dead is not held: ErrNotHeld. A group whose
// goroutine ended (stopped) is not released: ErrStopped.

// ErrNotHeld is returned by Release for a subscriber that is neither fenced
// nor dead.
var ErrNotHeld = errors.New("processor: subscriber is not held (neither fenced nor dead)")

// ErrStopped is returned by Release once the group's goroutine ended.
var ErrStopped = errors.New("processor: subscriber stopped")

// HoldReleaser is implemented by a processor that fences its subscriber by
// itself rather than through the group's retries (pull: a delivery out of
// attempts, held with Host.HoldFence). ReleaseHold gives the lines it holds
// up: it reports them with Host.ReleaseHeld (the group counts them, lifts
// the hold and shows RELEASED), lets the ack point pass them
// (DurableThrough) and returns how many lines it gave up, ok true. It never
// writes the queue's state or counters itself.
// With nothing of its own held it returns ok false, and the group's fence
// is released as usual.
type HoldReleaser interface {
	ReleaseHold() (released uint64, ok bool)
}

func (g *Group) holdReleaser() HoldReleaser {
	if h, ok := g.cfg.Batch.(HoldReleaser); ok {
		return h
	}
	h, _ := g.cfg.Processor.(HoldReleaser)
	return h
}

// Release gives the subscriber's held backlog up and returns how many lines
// were released. It waits (bounded by ctx) while a fenced group is inside a
// processing attempt: the release is taken between two attempts.
func (g *Group) Release(ctx context.Context) (uint64, error) {
	for {
		switch st, _ := g.q.State(); st {
		case feed.Dead, feed.Fenced:
			if h := g.holdReleaser(); h != nil && st == feed.Fenced {
				if n, ok := h.ReleaseHold(); ok {
					return n, nil
				}
			}
			// Taken by the group goroutine between two attempts (Wait) or
			// while it is parked dead (park); look again meanwhile.
			req := &ReleaseRequest{reply: make(chan uint64, 1)}
			t := time.NewTimer(20 * time.Millisecond)
			select {
			case g.releases <- req:
				t.Stop()
				return <-req.reply, nil
			case <-t.C: // inside an attempt: look again
			case <-g.done:
				t.Stop()
				return 0, ErrStopped
			case <-ctx.Done():
				t.Stop()
				return 0, ctx.Err()
			}
		default:
			return 0, ErrNotHeld
		}
	}
}

// backoff waits before the next attempt; it returns a release request taken
// meanwhile, and false when ctx is done.
func (g *Group) backoff(ctx context.Context, attempt int) (*ReleaseRequest, bool) {
	return g.Wait(ctx, g.cfg.Retry.Backoff(attempt))
}

// abandon gives up view line vdone of b (the line a fenced group is stuck
// on), publishes the prefix through it and answers the request. It returns
// the new count of finished view lines.
func (g *Group) abandon(b *feed.Batch, base uint64, vdone int, req *ReleaseRequest) int {
	pos := g.view.Ends[vdone]
	g.noteRelease(vdone, vdone)
	vdone++
	g.progress = base + uint64(g.origDone(vdone, b.Len()))
	g.noteProgress(g.progress)
	g.released(1) // counted before the ack point passes the line
	g.publish(g.progress)
	g.log.Warn("line released on purpose; going on with the next one", "position", pos)
	req.reply <- 1
	return vdone
}

// giveUpUnsynced releases the dispatched lines a failing flush holds back.
// The lines are counted (and the count made durable: Queue.AddReleased)
// before the ack point passes them.
func (g *Group) giveUpUnsynced(req *ReleaseRequest) {
	through := g.q.Dispatched()
	n := g.q.AckPointAfter(0, through) - g.q.AckPoint()
	g.released(n)
	g.q.DurableThrough(through)
	g.log.Warn("unsynced lines released on purpose", "lines", n)
	req.reply <- n
}

// releaseDead gives up a dead group's backlog, on the group's goroutine
// (parked: see supervise), and returns the lines released. They are
// counted (and the count made durable: Queue.AddReleased) before the ack
// point passes them.
func (g *Group) releaseDead() uint64 {
	n := g.left + uint64(g.q.Drain())
	g.left = 0
	released := g.q.AckPointAfter(n, g.published+n) - g.q.AckPoint()
	g.released(released)
	g.published += n
	g.pubMu.Lock()
	g.sent += n
	g.q.AddDispatched(n)
	g.pubMu.Unlock()
	g.q.DurableThrough(g.published)
	g.log.Warn("dead subscriber released on purpose; restarting it on the next line", "lines", released)
	return released
}

// Stopping marks the group as shutting down: from then on a release of a
// dead subscriber gives its backlog up, and the group's goroutine ends
// instead of running the processor again (it is about to be closed).
// Whoever stops the group calls it before cancelling the group's context.
func (g *Group) Stopping() { g.stopping.Store(true) }
