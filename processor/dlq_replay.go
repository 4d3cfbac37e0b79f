package processor

import (
	"context"
	"errors"
	"fmt"

	"tailfeed/feed"
)

// Replaying dead letters (DESIGN §6): POST /admin/dlq/{processor}/replay
// hands the oldest entries back to the group's processor. The replay runs on
// the group goroutine between two batches, so the processor never sees two
// callers. A replayed line keeps its original feed, epoch and position but
// has no window position: OnComplete and AlreadyApplied return false for it
// (an exactlyOnce sink writes it), its Sequence is 0, and it does not move
// the queue's counters. Each entry gets one try; the first failure ends the
// replay. A processor with deferred work (an fsync interval, a state file)
// is flushed before the replayed entries leave the ledger, so an entry
// leaves only once its line was processed (and made durable).

// ErrNoLedger is returned by Replay for a group without a dead-letter ledger.
var ErrNoLedger = errors.New("processor: subscriber has no dead-letter ledger")

// ErrReplayIncomplete wraps the error that ended a replay early.
var ErrReplayIncomplete = errors.New("processor: replay incomplete")

// ReplayResult is what a replay did.
type ReplayResult struct {
	Replayed  int `json:"replayed"`  // entries processed and removed from the ledger
	Remaining int `json:"remaining"` // entries left in the ledger
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

// replay runs on the group goroutine.
func (g *Group) replay(ctx context.Context, req *replayReq) {
	l := g.Ledger()
	items := l.head(req.max)
	g.cpMark = g.published // replays hold no queue position
	done := map[uint64]bool{}
	var err error
	for _, it := range items {
		if err = g.replayOne(ctx, it); err != nil {
			g.log.Warn("dead-letter replay failed", "position", it.entry.Position, "error", err)
			break
		}
		done[it.id] = true
	}
	if len(done) > 0 {
		if ferr := g.flushReplayed(ctx); ferr != nil {
			err = ferr
			done = nil
		}
	}
	n, rerr := l.remove(done)
	if rerr != nil && err == nil {
		err = rerr
	}
	if n > 0 {
		g.log.Info("dead letters replayed", "entries", n)
		g.cfg.Wake() // deadLettered changed
	}
	res := ReplayResult{Replayed: n, Remaining: l.Len()}
	if err != nil {
		err = fmt.Errorf("%w: %w", ErrReplayIncomplete, err)
	}
	req.reply <- replayReply{res: res, err: err}
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
	fl, _ := g.cfg.Processor.(Flusher)
	if fl == nil {
		fl, _ = g.cfg.Batch.(Flusher)
	}
	if fl == nil {
		return nil
	}
	if _, due := fl.FlushDue(); !due {
		return nil
	}
	return fl.Flush(ctx)
}
