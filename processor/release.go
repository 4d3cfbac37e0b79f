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
//   - Dead (its goroutine ended on a panic): what the interrupted batch had
//     left, everything queued, and anything dispatched but not yet durable
//     are given up; the queue is drained and a new goroutine starts on the
//     next line published, with the same processor.
//
// A subscriber that is neither fenced nor dead is not held: ErrNotHeld.

// ErrNotHeld is returned by Release for a subscriber that is neither fenced
// nor dead.
var ErrNotHeld = errors.New("processor: subscriber is not held (neither fenced nor dead)")

// HoldReleaser is implemented by a processor that fences its subscriber by
// itself rather than through the group's retries (pull: a delivery out of
// attempts). ReleaseHold gives the lines it holds up: it counts them with
// the queue's AddReleased, lets the ack point pass them (DurableThrough),
// lifts its fence and returns how many lines it gave up, ok true. With
// nothing of its own held it returns ok false, and the group's fence is
// released as usual.
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
		case feed.Dead:
			return g.releaseDead()
		case feed.Fenced:
			if h := g.holdReleaser(); h != nil {
				if n, ok := h.ReleaseHold(); ok {
					return n, nil
				}
			}
			req := &ReleaseRequest{reply: make(chan uint64, 1)}
			t := time.NewTimer(20 * time.Millisecond)
			select {
			case g.releases <- req:
				t.Stop()
				return <-req.reply, nil
			case <-t.C: // inside an attempt: look again
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
	vdone++
	g.progress = base + uint64(g.origDone(vdone, b.Len()))
	g.q.AddReleased(1)
	g.publish(g.progress)
	g.q.SetState(feed.Released, "")
	g.log.Warn("line released on purpose; going on with the next one", "position", pos)
	g.cfg.Wake()
	req.reply <- 1
	return vdone
}

// giveUpUnsynced releases the dispatched lines a failing flush holds back.
func (g *Group) giveUpUnsynced(req *ReleaseRequest) {
	before := g.q.AckPoint()
	g.q.DurableThrough(g.q.Dispatched())
	n := g.q.AckPoint() - before
	g.q.AddReleased(n)
	g.q.SetState(feed.Released, "")
	g.log.Warn("unsynced lines released on purpose", "lines", n)
	g.cfg.Wake()
	req.reply <- n
}

// releaseDead gives up a dead group's backlog and restarts its goroutine.
func (g *Group) releaseDead() (uint64, error) {
	g.relMu.Lock()
	defer g.relMu.Unlock()
	if st, _ := g.q.State(); st != feed.Dead {
		return 0, ErrNotHeld // released meanwhile
	}
	<-g.Done() // the dying goroutine set left; from here this goroutine owns the run state
	before := g.q.AckPoint()
	n := g.left + uint64(g.q.Drain())
	g.left = 0
	g.published += n
	g.q.AddDispatched(n)
	g.q.DurableThrough(g.published)
	released := g.q.AckPoint() - before
	g.q.AddReleased(released)
	g.q.SetState(feed.Released, "")
	g.log.Warn("dead subscriber released on purpose; restarting it on the next line", "lines", released)
	if !g.stopping && g.ctx != nil && g.ctx.Err() == nil {
		g.doneMu.Lock()
		g.done = make(chan struct{})
		g.doneMu.Unlock()
		g.Start(g.ctx)
	}
	g.cfg.Wake()
	return released, nil
}

// Stopping marks the group as shutting down: from then on a release of a
// dead subscriber gives its backlog up but no longer restarts its
// goroutine. Whoever stops the group calls it before cancelling the
// group's context and waiting for Done: a release that checked the context
// just before the cancel would otherwise start a goroutine after the wait
// returned, running the processor while (or after) it is closed. A release
// under way finishes first, its new goroutine visible through Done.
func (g *Group) Stopping() {
	g.relMu.Lock()
	g.stopping = true
	g.relMu.Unlock()
}
