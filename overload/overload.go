// Package overload holds the policies that decide what a feed does when a
// subscriber queue has no room for the next batch (DESIGN §5):
//
//   - PAUSE (the default of a file feed): the publish is refused whole and the
//     source reads nothing more until there is room. Nothing is lost.
//   - BLOCK_WITH_DEADLINE: wait up to the deadline for room, then refuse the
//     batch for that queue only (counted per line in Refused). The refused
//     lines never hold the pointer for that queue.
//   - DROP_AFTER_SPIN: wait up to the spin bound once per full episode, then
//     drop at once until there is room (counted per line in Dropped). Such a
//     subscriber is best-effort: it never holds the pointer, the window or
//     settled.
//
// A policy is chosen per subscriber: the feed's policy, or the override under
// overload.subscribers.<name>.
package overload

import (
	"fmt"
	"sync/atomic"
	"time"
)

// Kind is an overload policy.
type Kind int

const (
	Pause Kind = iota
	DropAfterSpin
	BlockWithDeadline
)

func (k Kind) String() string {
	switch k {
	case DropAfterSpin:
		return "DROP_AFTER_SPIN"
	case BlockWithDeadline:
		return "BLOCK_WITH_DEADLINE"
	default:
		return "PAUSE"
	}
}

// Parse turns a config word into a Kind.
func Parse(s string) (Kind, error) {
	switch s {
	case "", "PAUSE":
		return Pause, nil
	case "DROP_AFTER_SPIN":
		return DropAfterSpin, nil
	case "BLOCK_WITH_DEADLINE":
		return BlockWithDeadline, nil
	}
	return Pause, fmt.Errorf("overload: unknown policy %q", s)
}

// Policy is one subscriber's effective policy.
type Policy struct {
	Kind     Kind
	Spin     time.Duration // DROP_AFTER_SPIN: how long to wait once per full episode
	Deadline time.Duration // BLOCK_WITH_DEADLINE: how long to wait per batch
}

// BestEffort reports whether a subscriber under p never holds the pointer.
func (p Policy) BestEffort() bool { return p.Kind == DropAfterSpin }

// Counters are one queue's loss counters. The publisher (the feed's source
// goroutine) is their only writer; anyone may read them.
type Counters struct {
	Dropped atomic.Uint64 // lines dropped under DROP_AFTER_SPIN (feed.Queue.Dropped adds those left at shutdown)
	Refused atomic.Uint64 // lines refused under BLOCK_WITH_DEADLINE
}

// Decision is what the publisher does with a batch for one queue.
type Decision int

const (
	Accept Decision = iota // queue the batch
	Refuse                 // PAUSE: refuse the whole publish
	Skip                   // BLOCK_WITH_DEADLINE timed out: not given to this queue
	Drop                   // DROP_AFTER_SPIN: dropped for this queue
)

// Gate applies a policy to one queue. Only the publisher uses it.
type Gate struct {
	Policy   Policy
	dropping bool // DROP_AFTER_SPIN: inside a full episode, after its spin
}

// Admit decides for a batch given whether the queue has room now. wait
// blocks until room may have freed or the deadline passes and reports whether
// the queue has room now; it is called only by the waiting policies.
func (g *Gate) Admit(room bool, wait func(deadline time.Time) bool) Decision {
	if room {
		g.dropping = false
		return Accept
	}
	switch g.Policy.Kind {
	case BlockWithDeadline:
		if wait(time.Now().Add(g.Policy.Deadline)) {
			return Accept
		}
		return Skip
	case DropAfterSpin:
		if g.dropping {
			return Drop
		}
		if wait(time.Now().Add(g.Policy.Spin)) {
			return Accept
		}
		g.dropping = true
		return Drop
	default:
		return Refuse
	}
}
