package processor

import (
	"fmt"
	"sync"
	"sync/atomic"

	"tailfeed/feed"
)

// The subscriber's state (LIVE → FENCED → DEAD → released) is kept here,
// in one place: a fence per owner, and the queue's state (what feed.status
// shows) computed from them. Nothing else writes the queue's state or its
// released counter: sinks ask through Host (Fence, Unfence, HoldFence,
// LiftHold), a release is a message to the group goroutine (release.go).
//
// Owners:
//   - retry: the group's own retries (a failing Process, ProcessBatch or
//     Flush; a webhook's POST loop runs inside ProcessBatch and fences as
//     the group does). Set and lifted on the group goroutine.
//   - hold: a sink that holds the feed by itself, from any goroutine (pull:
//     a line out of attempts under onFailure hold). The group never lifts it
//     when a batch succeeds; the sink does (LiftHold), or a release does.
//   - dead: the group goroutine recovered a panic; only a release lifts it.
//
// State: dead → DEAD; else any fence → FENCED (the retry's reason first);
// else RELEASED after a release, LIVE otherwise (a fence lifted shows LIVE).
type subState struct {
	mu       sync.Mutex
	retry    string // reason; "" none
	hold     string
	dead     string
	released bool // the last change was a release (shows as LIVE, see feed.Released)

	retrySet atomic.Bool // retry != "": the group's per-batch unfence skips the lock without it
}

// setFence sets (reason != "") or lifts (reason == "") owner's fence and
// recomputes the queue's state.
func (g *Group) setFence(owner *string, reason string) {
	s := &g.st
	s.mu.Lock()
	before, br := g.q.State()
	if reason != "" {
		s.released = false
	}
	*owner = reason
	s.retrySet.Store(s.retry != "")
	after, ar := g.applyState()
	s.mu.Unlock()
	if before == feed.Fenced && (after == feed.Live || after == feed.Released) {
		g.log.Info("subscriber recovered")
	}
	if before != after || br != ar {
		g.cfg.Wake()
	}
}

// applyState writes the queue's state from the fences; g.st.mu is held.
func (g *Group) applyState() (feed.SubState, string) {
	s := &g.st
	var st feed.SubState
	var reason string
	switch {
	case s.dead != "":
		st, reason = feed.Dead, s.dead
	case s.retry != "":
		st, reason = feed.Fenced, s.retry
	case s.hold != "":
		st, reason = feed.Fenced, s.hold
	case s.released:
		st = feed.Released
	default:
		st = feed.Live
	}
	if cur, r := g.q.State(); cur != st || r != reason {
		g.q.SetState(st, reason)
	}
	return st, reason
}

// released counts n lines given up on purpose, lifts every fence (a
// release lets the subscriber go on) and shows RELEASED. The group is the
// only writer of the queue's released counter.
func (g *Group) released(n uint64) {
	s := &g.st
	s.mu.Lock()
	g.q.AddReleased(n)
	s.retry, s.hold, s.dead, s.released = "", "", "", true
	s.retrySet.Store(false)
	g.applyState()
	s.mu.Unlock()
	g.cfg.Wake()
}

// fence holds the feed at this subscriber for the group's retries.
func (g *Group) fence(err error) {
	reason := fmt.Sprintf("subscriber %s failing: %v", g.cfg.Name, err)
	if s, r := g.q.State(); s != feed.Fenced || r != reason {
		g.log.Warn("subscriber failing; holding the pointer", "error", err)
	}
	g.setFence(&g.st.retry, reason)
}

// unfence lifts the retries' fence (once per batch: no lock without one).
// A fence a sink holds by itself (HoldFence) stays.
func (g *Group) unfence() {
	if g.st.retrySet.Load() {
		g.setFence(&g.st.retry, "")
	}
}

// die quarantines the subscriber: DEAD with reason until a release.
func (g *Group) die(reason string) { g.setFence(&g.st.dead, reason) }

// purged counts n dead letters purged from the ledger (DELETE /admin/dlq)
// as released; the subscriber's state does not change.
func (g *Group) purged(n uint64) {
	g.st.mu.Lock()
	g.q.AddReleased(n)
	g.st.mu.Unlock()
	g.cfg.Wake()
}
