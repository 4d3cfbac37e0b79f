package processor

import (
	"fmt"
	"sync"
	"sync/atomic"

	"tailfeed/feed"
)

// The subscriber's state (LIVE → FENCED → DEAD → released) is kept here,
// in one place: a fence per owner, and the queue's state (what feed.status
// shows) computed from them.
//
// One writer. Every write of the fences, of the queue's state
// (Queue.SetState) and of its released counter (Queue.AddReleased) is made
// by one function, Group.change, under g.st.mu; every other way in
// (fence, unfence, die, released, purged, Host.HoldFence, Host.LiftHold,
// Host.ReleaseHeld) only describes the change it wants (a stateChange).
// TestStateHasOneWriter checks this on the package's source, and
// TestStateChangesFromEveryGoroutine races every caller under -race.
//
// The changes come from more than one goroutine, and that is on purpose:
// a sink's hold (pull: a line out of attempts) is set from the sink's
// timer goroutine while the group goroutine may be blocked inside the
// sink's ProcessBatch (pull waits there while maxInFlight lines are out,
// which is when a line runs out of attempts): a hold posted to the group
// goroutine would not show FENCED until a client acknowledged something.
// So the one writer is a function under a mutex, not a goroutine; a
// release, which needs the group's run state, is still a message to the
// group goroutine (release.go).
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

// fenceOwner names one of subState's fences.
type fenceOwner int

const (
	noFence fenceOwner = iota
	retryFence
	holdFence
	deadFence
)

// stateChange is one change of the subscriber's state, applied by change.
type stateChange struct {
	owner   fenceOwner // the fence set (reason != "") or lifted (reason == ""); noFence: a count
	reason  string
	release bool // a release: lift every fence and show RELEASED
	// released counts lines given up on purpose in the queue's released
	// counter (a release, or dead letters purged); with owner noFence only.
	released uint64
	// refusable: a purge, which removes nothing when its count cannot be
	// made durable (Queue.AddReleased takes the count back then).
	refusable bool
	// takeBack, when not nil, receives the count's take-back
	// (Queue.AddReleased) once it was made durable.
	takeBack *func() error
}

// change applies c: the only writer of the fences, the queue's state and
// its released counter (see above). It returns the error of making a
// count durable (Queue.AddReleased), nil otherwise.
func (g *Group) change(c stateChange) error {
	s := &g.st
	s.mu.Lock()
	before, br := g.q.State()
	count := c.owner == noFence // a release or a purge
	var err error
	if count {
		var tb func() error
		tb, err = g.q.AddReleased(c.released, c.refusable)
		if c.takeBack != nil {
			*c.takeBack = tb
		}
	}
	switch {
	case c.release:
		s.retry, s.hold, s.dead, s.released = "", "", "", true
	case c.owner != noFence:
		if c.reason != "" {
			s.released = false
		}
		*s.fence(c.owner) = c.reason
	}
	s.retrySet.Store(s.retry != "")
	after, ar := s.derive()
	if before != after || br != ar {
		g.q.SetState(after, ar)
	}
	s.mu.Unlock()
	if before == feed.Fenced && !c.release && (after == feed.Live || after == feed.Released) {
		g.log.Info("subscriber recovered")
	}
	if before != after || br != ar || count {
		g.cfg.Wake()
	}
	return err
}

// fence is owner's reason.
func (s *subState) fence(owner fenceOwner) *string {
	switch owner {
	case retryFence:
		return &s.retry
	case holdFence:
		return &s.hold
	default:
		return &s.dead
	}
}

// derive is the queue's state the fences make; s.mu is held.
func (s *subState) derive() (feed.SubState, string) {
	switch {
	case s.dead != "":
		return feed.Dead, s.dead
	case s.retry != "":
		return feed.Fenced, s.retry
	case s.hold != "":
		return feed.Fenced, s.hold
	case s.released:
		return feed.Released, ""
	}
	return feed.Live, ""
}

// released counts n lines given up on purpose, lifts every fence (a
// release lets the subscriber go on) and shows RELEASED.
func (g *Group) released(n uint64) { g.change(stateChange{release: true, released: n}) }

// fence holds the feed at this subscriber for the group's retries.
func (g *Group) fence(err error) {
	reason := fmt.Sprintf("subscriber %s failing: %v", g.cfg.Name, err)
	if s, r := g.q.State(); s != feed.Fenced || r != reason {
		g.log.Warn("subscriber failing; holding the pointer", "error", err)
	}
	g.change(stateChange{owner: retryFence, reason: reason})
}

// unfence lifts the retries' fence (once per batch: no lock without one).
// A fence a sink holds by itself (HoldFence) stays.
func (g *Group) unfence() {
	if g.st.retrySet.Load() {
		g.change(stateChange{owner: retryFence})
	}
}

// hold sets the sink's own fence (Host.HoldFence; Host.LiftHold lifts it).
func (g *Group) hold(err error) {
	reason := fmt.Sprintf("subscriber %s failing: %v", g.cfg.Name, err)
	if s, r := g.q.State(); s != feed.Fenced || r != reason {
		g.log.Warn("subscriber failing; holding the pointer", "error", err)
	}
	g.change(stateChange{owner: holdFence, reason: reason})
}

// die quarantines the subscriber: DEAD with reason until a release.
func (g *Group) die(reason string) { g.change(stateChange{owner: deadFence, reason: reason}) }

// purged counts n dead letters purged from the ledger (DELETE /admin/dlq)
// as released; the subscriber's state does not change. takeBack (nil:
// none) takes the count back out when the purge fails after all.
func (g *Group) purged(n uint64) (takeBack func() error, err error) {
	err = g.change(stateChange{released: n, refusable: true, takeBack: &takeBack})
	return takeBack, err
}
