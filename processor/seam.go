package processor

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"time"

	"github.com/hashicorp/go-hclog"

	"tailfeed/feed"
)

// Host is what a sink may ask of its group: the seam every sink in sink/ is
// built on. *Group implements it; a sink never reaches into a group's
// fields. Mark, LineAt, CoveredEnd and Wait are for the group goroutine
// (inside Process, ProcessBatch or Flush); TakeFilters is for the
// constructor, before Start; the rest may be called from any goroutine (a
// sink's timers, an HTTP handler).
type Host interface {
	Checkpoint
	Name() string
	Logger() hclog.Logger
	Queue() *feed.Queue
	Retry() Retry
	OnFailure() OnFailure
	// DeadLetters reports whether lines out of attempts go to the ledger
	// (onFailure deadLetter, and the group has one).
	DeadLetters() bool
	// TakeFilters hands the group's match/exclude to a sink that filters by
	// itself (each line then gets its own queue mark). Call before Start.
	TakeFilters() (match, exclude *regexp.Regexp)
	// TakeSkips hands the group's re-read skip (GroupConfig.Skip) to a
	// sink that filters by itself, which must then finish unseen the lines
	// it covers (SkipSet). Call before Start, after TakeFilters.
	TakeSkips() []feed.Mark
	// Fail counts a failed attempt; Fence holds the feed at this subscriber
	// for the group's retries ("subscriber <name> failing: <err>"), Unfence
	// lifts that fence (a sink retrying inside ProcessBatch, as the group
	// does). A sink never writes the queue's state or counters itself.
	Fail()
	Fence(err error)
	Unfence()
	// Finished publishes the leading done lines of the batch the
	// ProcessBatch call in progress was given as dispatched, before a sink
	// waits out a failure inside the call, and returns the queue count
	// through them (for DurableThrough).
	Finished(done int) uint64
	// HoldFence holds the feed at this subscriber for the sink itself, from
	// any goroutine (pull: a line out of attempts under onFailure hold);
	// the group does not lift it when a batch succeeds. LiftHold lifts it.
	// ReleaseHeld reports n held lines given up on purpose (POST
	// /admin/release, through HoldReleaser): the group counts them as
	// released, lifts every fence and shows the subscriber RELEASED.
	HoldFence(err error)
	LiftHold()
	ReleaseHeld(n uint64)
	Wake()
	// Wait sleeps d; it returns a release request taken meanwhile (POST
	// /admin/release), and false when ctx ended.
	Wait(ctx context.Context, d time.Duration) (*ReleaseRequest, bool)
	// GiveUp answers r: n lines were given up on purpose. GiveUpTail does
	// the same for the last n lines of the batch the ProcessBatch call in
	// progress was given, and records them (GroupConfig.OnRelease) so that
	// the sink's done-through mark passes them at the next start: for a
	// sink that cannot record them itself (its engine is down).
	GiveUp(r *ReleaseRequest, n uint64)
	GiveUpTail(r *ReleaseRequest, n uint64)
	// DeadLetter writes a line to the group's ledger and counts it; a
	// request name and its line count are recorded when request != "".
	DeadLetter(d *feed.Delivery, attempts int, lastErr error, request string, requestLines int) error
	// Ledger is the group's dead-letter ledger (nil when it has none).
	Ledger() *Ledger
	// InLedger returns the positions of b's lines in the ledger (nil: none).
	InLedger(b *feed.Batch) map[int64]bool
	// LineAt finds the line of the current batch (unfiltered) ending at pos:
	// its feed sequence and the queue count before it.
	LineAt(epoch uint64, pos int64) (seq, before uint64, ok bool)
	// CoveredEnd is the position of the last line of the current batch
	// (unfiltered) that the processor call in progress covers.
	CoveredEnd() (int64, bool)
}

var _ Host = (*Group)(nil)

// DeadLetterPurger is a sink that holds replayed dead letters itself
// (pull): it purges the ledger and drops the entries it purged.
type DeadLetterPurger interface {
	PurgeDeadLetters(max int) (int, error)
}

// DeadLetterCountedPurger is a DeadLetterPurger that tells count what it
// purges before the entries leave the ledger (Ledger.RemoveCounted), and
// purges nothing when count fails. The group prefers it.
type DeadLetterCountedPurger interface {
	PurgeDeadLettersCounted(max int, count PurgeCount) (int, error)
}

// PurgeCount is told, before a purge removes anything, how many entries of
// each feed ("": an entry that names none) go, and counts them (durably);
// an error refuses the purge. takeBack (nil: nothing to take back) takes
// the count back when the entries could not be removed after all; it
// errors when it cannot (the count then stays: an overcount, never a loss
// unrecorded).
type PurgeCount func(byFeed map[string]int) (takeBack func() error, err error)

// ReleaseRequest is a request to give held lines up, taken by Wait.
type ReleaseRequest struct {
	reply chan uint64
	n     uint64 // the answer, sent after the group's goroutine ended (see supervise)
}

// ErrNoDeadLetter is returned by DeadLetter for a group without a ledger.
var ErrNoDeadLetter = errors.New("processor: no dead-letter ledger")

// Logger is the group's logger (named after the subscriber).
func (g *Group) Logger() hclog.Logger { return g.log }

// Retry is the group's retry policy.
func (g *Group) Retry() Retry { return g.cfg.Retry }

// OnFailure is what the group does with a line out of attempts.
func (g *Group) OnFailure() OnFailure { return g.cfg.OnFailure }

// DeadLetters implements Host.
func (g *Group) DeadLetters() bool { return g.cfg.OnFailure == DeadLetter && g.cfg.Ledger != nil }

// TakeFilters implements Host.
func (g *Group) TakeFilters() (match, exclude *regexp.Regexp) {
	match, exclude = g.cfg.Match, g.cfg.Exclude
	g.cfg.Match, g.cfg.Exclude, g.ownFilter = nil, nil, true
	return match, exclude
}

// TakeSkips implements Host.
func (g *Group) TakeSkips() []feed.Mark {
	marks := g.cfg.Skip
	g.skip = nil
	return marks
}

// Fail implements Host.
func (g *Group) Fail() { g.failures.Add(1) }

// Fence implements Host.
func (g *Group) Fence(err error) { g.fence(err) }

// Unfence implements Host: it lifts the retries' fence — not while the
// group waits to retry a failing batch (a webhook's Flush in retryWait
// sends its carried request and unfences; the batch still fails).
func (g *Group) Unfence() {
	if !g.retrying.Load() {
		g.unfence()
	}
}

// HoldFence implements Host.
func (g *Group) HoldFence(err error) { g.hold(err) }

// LiftHold implements Host.
func (g *Group) LiftHold() { g.change(stateChange{owner: holdFence}) }

// ReleaseHeld implements Host.
func (g *Group) ReleaseHeld(n uint64) { g.released(n) }

// Wake pokes the feed's source (the ack point or the state changed).
func (g *Group) Wake() { g.cfg.Wake() }

// Wait implements Host.
func (g *Group) Wait(ctx context.Context, d time.Duration) (*ReleaseRequest, bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil, true
	case req := <-g.releases:
		return req, true
	case <-ctx.Done():
		return nil, false
	}
}

// GiveUp implements Host.
func (g *Group) GiveUp(r *ReleaseRequest, n uint64) {
	g.released(n)
	r.reply <- n
}

// GiveUpTail implements Host: GiveUp of the last n lines of the batch the
// ProcessBatch call in progress was given, recorded through OnRelease.
func (g *Group) GiveUpTail(r *ReleaseRequest, n uint64) {
	if n > 0 {
		g.noteRelease(max(g.stepFrom, g.stepEnd-int(n)), g.stepEnd-1)
	}
	g.GiveUp(r, n)
}

// requestLetterer is a ledger that records the request a line was in.
type requestLetterer interface {
	DeadLetterRequest(d *feed.Delivery, attempts int, lastErr error, request string, requestLines int) error
}

// DeadLetter implements Host.
func (g *Group) DeadLetter(d *feed.Delivery, attempts int, lastErr error, request string, requestLines int) error {
	if g.cfg.Ledger == nil {
		return ErrNoDeadLetter
	}
	var err error
	if rl, ok := g.cfg.Ledger.(requestLetterer); ok && request != "" {
		err = rl.DeadLetterRequest(d, attempts, lastErr, request, requestLines)
	} else {
		err = g.cfg.Ledger.DeadLetter(d, attempts, lastErr)
	}
	if err == nil {
		g.deadLettered.Add(1)
	}
	return err
}

// InLedger implements Host.
func (g *Group) InLedger(b *feed.Batch) map[int64]bool {
	if g.dlq == nil {
		return nil
	}
	return g.dlq.Within(b)
}

// LineAt implements Host.
func (g *Group) LineAt(epoch uint64, pos int64) (seq, before uint64, ok bool) {
	b := g.cur
	if b == nil || !b.Positioned || b.Epoch != epoch {
		return 0, 0, false
	}
	k, found := slices.BinarySearch(b.Ends, pos) // positions grow within a batch
	if !found {
		return 0, 0, false
	}
	return b.FirstSeq + uint64(k), g.mark - uint64(b.Len()) + uint64(k), true
}

// CoveredEnd implements Host.
func (g *Group) CoveredEnd() (int64, bool) {
	b := g.cur
	if b == nil || !b.Positioned {
		return 0, false
	}
	k := int(g.cpMark) - int(g.mark-uint64(b.Len()))
	if k <= 0 || k > b.Len() {
		return 0, false
	}
	return b.Ends[k-1], true
}
