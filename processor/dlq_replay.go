package processor

import (
	"context"
	"errors"
	"fmt"

	"tailfeed/feed"
)

// Replaying dead letters (DESIGN §6, §12): POST /admin/dlq/{processor}/replay
// hands the oldest entries back to the group's processor. The replay runs on
// the group goroutine between two batches, so the processor never sees two
// callers. A replayed line keeps its original feed, epoch and position but
// has no window position: OnComplete and AlreadyApplied return false for it
// (an exactlyOnce sink writes it), its Sequence is 0, and it does not move
// the queue's counters nor a sink's stored position. Each entry gets one
// try; the first failure ends the replay, and what it did not process stays
// in the ledger, once. A processor with deferred work (an fsync interval, a
// state file) is flushed before the replayed entries leave the ledger, so an
// entry leaves only once its line was processed (and made durable).
//
// Counting is in lines (entries). A webhook replays the entries of one
// dead-lettered request as that request, one POST under its original
// Idempotency-Key (the entries name it: DeadLetterEntry.Request); max is
// rounded up to whole requests. Entries that name no request (older
// ledgers) go one line per request, as before. A part of the webhook's
// pending request waits in the ledger for its rest (Ledger.take). The
// entries a replay took are its own until it ends: a purge meanwhile
// leaves them (Ledger.Purge), so `replayed` is the lines that reached the
// processor and none of them counts as released.
//
// A pull subscriber does not run the replay: its clients take the entries
// when they poll. Replay queues them and returns at once (Queued); each
// leaves the ledger when a client acknowledges it (see Pull).

// ErrNoLedger is returned by Replay for a group without a dead-letter ledger.
var ErrNoLedger = errors.New("processor: subscriber has no dead-letter ledger")

// ErrNotConfigured is returned by a replay of the dead letters of a
// processor the config no longer names: there is nothing to replay them
// into (they can be listed and purged).
var ErrNotConfigured = errors.New("processor: not in the running config")

// ErrReplayRunning is returned (wrapped) by Replay when ctx ended while the
// replay was running: how many lines it replayed is not known yet.
var ErrReplayRunning = errors.New("processor: replay still running")

// ErrReplayIncomplete wraps the error that ended a replay early.
var ErrReplayIncomplete = errors.New("processor: replay incomplete")

// errAbandoned ends a replay whose group a stop abandoned (Group.Abandon)
// in a processor call that returned after all: the processor is not called
// again.
var errAbandoned = errors.New("subscriber abandoned by the stop")

// ReplayResult is what a replay did.
type ReplayResult struct {
	Replayed  int `json:"replayed"`  // entries processed and removed from the ledger
	Remaining int `json:"remaining"` // entries left in the ledger
	// A replay into a pull subscriber only queues the entries: Queued is
	// how many (Queuing true); each leaves the ledger when acknowledged.
	Queued  int  `json:"queued"`
	Queuing bool `json:"-"`
}

// replayQueuer is a sink whose clients take replayed entries when they
// come (pull): the replay queues them and returns at once.
type replayQueuer interface {
	QueueReplay(max int) (int, error)
}

type replayReq struct {
	max   int
	reply chan replayReply
}

type replayReply struct {
	res ReplayResult
	err error
}

// Ledger returns the group's dead-letter ledger (nil when it has none).
func (g *Group) Ledger() *Ledger {
	l, _ := g.cfg.Ledger.(*Ledger)
	return l
}

// Ledgered is the number of entries now in the group's ledger.
func (g *Group) Ledgered() int {
	if l := g.Ledger(); l != nil {
		return l.Len()
	}
	return 0
}

// PurgeDeadLetters removes the oldest entries of the group's ledger
// (DELETE /admin/dlq, counted in released here): at least max,
// rounded up to whole webhook requests, none that a replay holds (those
// reach the processor and leave the ledger as replayed). For a pull
// subscriber it also drops the replayed entries it purged from the
// subscriber (queued or out: a late ACK is then unknown).
func (g *Group) PurgeDeadLetters(max int) (int, error) {
	l := g.Ledger()
	if l == nil {
		return 0, ErrNoLedger
	}
	// The purge is counted in released, and the count made durable (the
	// losses ledger), before the entries leave the dead-letter ledger; a
	// count that cannot be made durable refuses the purge (the entries
	// stay): a purged line is always recorded somewhere.
	count := func(byFeed map[string]int) (func() error, error) {
		n := 0
		for _, c := range byFeed {
			n += c
		}
		takeBack, err := g.purged(uint64(n))
		if err != nil {
			return nil, fmt.Errorf("purge refused: the losses ledger cannot record it: %w", err)
		}
		return takeBack, nil
	}
	switch p := g.Sink().(type) {
	case DeadLetterCountedPurger:
		return p.PurgeDeadLettersCounted(max, count)
	case DeadLetterPurger:
		n, err := p.PurgeDeadLetters(max)
		if n > 0 {
			g.purged(uint64(n))
		}
		return n, err
	}
	return l.PurgeCounted(max, nil, count)
}

// Sink is the group's processor (a Processor or a BatchProcessor).
func (g *Group) Sink() any {
	if g.cfg.Batch != nil {
		return g.cfg.Batch
	}
	return g.cfg.Processor
}

// Replay re-delivers up to max of the oldest ledger entries through the
// processor, on the group goroutine, and waits (bounded by ctx) for the
// result. A replay cut short by a failure returns what it did and an error
// wrapping ErrReplayIncomplete.
func (g *Group) Replay(ctx context.Context, max int) (ReplayResult, error) {
	if g.Ledger() == nil {
		return ReplayResult{}, ErrNoLedger
	}
	if rq, ok := g.Sink().(replayQueuer); ok {
		n, err := rq.QueueReplay(max)
		return ReplayResult{Queued: n, Queuing: true, Remaining: g.Ledgered()}, err
	}
	req := &replayReq{max: max, reply: make(chan replayReply, 1)}
	done := g.Done()
	select {
	case g.replays <- req:
	case <-done:
		return ReplayResult{Remaining: g.Ledgered()}, fmt.Errorf("subscriber %s is not running", g.cfg.Name)
	case <-ctx.Done():
		return ReplayResult{Remaining: g.Ledgered()}, fmt.Errorf("subscriber %s is busy: %w", g.cfg.Name, ctx.Err())
	}
	select {
	case r := <-req.reply:
		return r.res, r.err
	case <-done: // the processor panicked on a replayed line
		return ReplayResult{Remaining: g.Ledgered()}, fmt.Errorf("%w: subscriber %s died during the replay", ErrReplayIncomplete, g.cfg.Name)
	case <-ctx.Done():
		// The replay goes on on the group goroutine (its reply channel is
		// buffered); what it did shows in the ledger afterwards.
		return ReplayResult{Remaining: g.Ledgered()}, fmt.Errorf("%w: %w: subscriber %s is still replaying (%w); list the ledger for what is left",
			ErrReplayIncomplete, ErrReplayRunning, g.cfg.Name, ctx.Err())
	}
}

// pollReplay serves a pending replay request without waiting.
func (g *Group) pollReplay(ctx context.Context) {
	select {
	case req := <-g.replays:
		g.replay(ctx, req)
	default:
	}
}

// RequestReplayer is a sink that replays a dead-lettered request whole
// (webhook): b holds the request's entries, key its original
// Idempotency-Key ("" for an entry that names no request).
type RequestReplayer interface {
	ReplayRequest(ctx context.Context, b *feed.Batch, key string) error
	// PendingRequest is the key of the request the sink recorded and has
	// not finished ("" none): a part of it in the ledger waits for its
	// rest (Ledger.take).
	PendingRequest() string
}

// replay runs on the group goroutine.
func (g *Group) replay(ctx context.Context, req *replayReq) {
	g.replaying = req // answered by recovered if the processor panics
	l := g.Ledger()
	rr, _ := g.Sink().(RequestReplayer)
	pending := ""
	if rr != nil {
		pending = rr.PendingRequest()
	}
	units := l.take(req.max, rr != nil, pending)
	defer l.untake(units)  // after remove: a purge never takes a line this replay processed
	g.cpMark = g.published // replays hold no queue position
	done := map[uint64]bool{}
	var err error
units:
	for _, u := range units {
		if rr != nil {
			err = g.replayRequest(ctx, rr, u)
			if err == nil && g.gone() {
				// Abandoned in the call, which returned after all: the unit
				// was acknowledged, nothing more reaches the processor.
				for _, it := range u {
					done[it.id] = true
				}
				err = errAbandoned
			}
			if err != nil {
				g.log.Warn("dead-letter replay failed", "request", u[0].entry.Request, "position", u[0].entry.Position, "error", err)
				break
			}
			for _, it := range u {
				done[it.id] = true
			}
			continue
		}
		for _, it := range u {
			err = g.replayOne(ctx, it)
			if err == nil && g.gone() {
				done[it.id] = true
				err = errAbandoned // nothing more reaches the processor
			}
			if err != nil {
				g.log.Warn("dead-letter replay failed", "position", it.entry.Position, "error", err)
				break units
			}
			done[it.id] = true
		}
	}
	if len(done) > 0 && rr == nil { // a request replayer's lines were acknowledged
		if ferr := g.flushReplayed(ctx); ferr != nil {
			err = ferr
			done = nil
		}
	}
	n, rerr := l.Remove(done)
	if rerr != nil && err == nil {
		err = rerr
	}
	if n > 0 {
		g.log.Info("dead letters replayed", "entries", n)
		g.cfg.Wake() // deadLettered changed
	}
	// Replayed counts the lines that reached the processor (DESIGN §12),
	// also when the ledger rewrite failed (they then stay in the ledger, and
	// the error says so): the taken entries are this replay's alone, so no
	// purge can have removed them meanwhile.
	res := ReplayResult{Replayed: len(done), Remaining: l.Len()}
	if err != nil {
		err = fmt.Errorf("%w: %w", ErrReplayIncomplete, err)
	}
	g.replaying = nil
	req.reply <- replayReply{res: res, err: err}
}

// replayRequest sends one unit through a request replayer: the entries of
// one webhook request (or one entry that names none), in ledger order.
func (g *Group) replayRequest(ctx context.Context, rr RequestReplayer, u []replayItem) error {
	b := &g.subv
	*b = feed.Batch{Feed: u[0].entry.Feed, Path: u[0].entry.Path, Epoch: u[0].epoch}
	for _, it := range u {
		b.Lines = append(b.Lines, it.line)
		b.Ends = append(b.Ends, it.entry.Position)
	}
	return rr.ReplayRequest(ctx, b, u[0].entry.Request)
}

// replayOne delivers one entry's line, without a position, once.
func (g *Group) replayOne(ctx context.Context, it replayItem) error {
	b := &g.subv
	*b = feed.Batch{Feed: it.entry.Feed, Path: it.entry.Path, Epoch: it.epoch, Positioned: false,
		Lines: [][]byte{it.line}, Ends: []int64{it.entry.Position}}
	if g.cfg.Batch != nil {
		n, err := g.cfg.Batch.ProcessBatch(ctx, b)
		if err == nil && n != 1 {
			err = fmt.Errorf("processor finished %d of 1 line", n)
		}
		return err
	}
	g.d.Reset(b, 0)
	g.d.Sequence = 0
	return g.cfg.Processor.Process(ctx, &g.d)
}

// flushReplayed runs the processor's deferred work once, so that replayed
// lines are durable before they leave the ledger.
func (g *Group) flushReplayed(ctx context.Context) error {
	fl := g.flusher()
	if fl == nil {
		return nil
	}
	if _, due := fl.FlushDue(); !due {
		return nil
	}
	if g.gone() {
		return errAbandoned // not flushed: the replayed lines stay in the ledger
	}
	return fl.Flush(ctx)
}
