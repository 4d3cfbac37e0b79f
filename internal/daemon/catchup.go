package daemon

import (
	"context"
	"fmt"
	"time"

	"tailfeed/internal/catchup"
	"tailfeed/internal/datadir"
	"tailfeed/pointer"
	"tailfeed/processor"
	"tailfeed/source/file"
)

// catchUp runs in a feed's run goroutine before its source reads a line
// (DESIGN §11 "A restored sink is caught up from the input";
// internal/catchup decides): every pointer-holding subscriber whose sink
// keeps a stored record reports its done-through marks — one that fails
// (its engine is down) is asked again with its processor's backoff,
// meanwhile fenced with the reason (the feed is stalled; a stop ends the
// wait) — and when one is behind the pointer, the pointer is committed back
// to the earliest point any of them needs, synced before the source opens:
// the whole feed re-reads from there (the others skip what they hold
// through AlreadyApplied, or receive duplicates). COMMITTED single-file
// feeds only: a glob feed's streams are not caught up (README).
func (f *Feed) catchUp(ctx context.Context, dataDir string) {
	if f.ptr == nil || f.strat != file.Committed || f.glob != nil {
		return
	}
	var sinks []catchup.Sink
	for _, g := range f.groups {
		dt, ok := g.Sink().(processor.DoneThrougher)
		if !ok || g.Queue().BestEffort() {
			continue
		}
		marks, ok := doneThrough(ctx, g, dt)
		if !ok {
			return // stopped while the sink could not answer
		}
		sinks = append(sinks, catchup.Sink{Name: g.Name(), Marks: marks})
	}
	if len(sinks) == 0 {
		return
	}
	lines, err := pointer.ReadEpochs(datadir.Epochs(dataDir, f.cfg.Name))
	if err != nil {
		f.log.Warn("epochs file read with errors; a sink left at an epoch it cannot map is not caught up", "error", err)
	}
	cur := f.ptr.Record()
	p, ok := catchup.Decide(cur, f.ptr.Fresh(), lines, sinks)
	if !ok {
		return
	}
	rec := p.Record(cur)
	f.log.Warn("a sink is behind the pointer (restored to an earlier point?); committing the pointer back and re-reading the input from there: "+
		"every subscriber receives those lines again",
		"sink", p.Sink, "from", p.String(), "pointerEpoch", fmt.Sprintf("%016x", cur.Epoch), "pointerOffset", cur.Offset,
		"sinkMark", fmt.Sprintf("%016x:%d", p.Mark.Epoch, p.Mark.Position))
	if !p.Current {
		if src, ok := f.src.(*file.Source); ok {
			var lost uint64
			if p.End > p.Position {
				lost = uint64(p.End - p.Position)
			}
			src.SetCatchUp(file.CatchUp{Epoch: p.Epoch, Since: p.File.Time, LostBytes: lost, Known: lines,
				Detail: fmt.Sprintf("catch-up of sink %s: the generation read as %s (epoch %016x) is gone; its lines from position %d to %d are lost for that sink",
					p.Sink, p.File.Path, p.Epoch, p.Position, p.End)})
		}
	}
	for attempt := 1; ; attempt++ {
		err := f.ptr.Rewind(rec)
		if err == nil {
			return
		}
		f.log.Error("the catch-up's backward commit of the pointer failed; trying again", "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(min(time.Duration(attempt)*100*time.Millisecond, 2*time.Second)):
		}
	}
}

// doneThrough asks g's sink for its marks until it answers or ctx ends
// (false); while it fails, g is fenced with the reason (the feed stalls).
func doneThrough(ctx context.Context, g *processor.Group, dt processor.DoneThrougher) ([]processor.Mark, bool) {
	for attempt := 1; ; attempt++ {
		marks, err := dt.DoneThrough(ctx)
		if err == nil {
			if attempt > 1 {
				g.LiftHold()
			}
			return marks, true
		}
		if ctx.Err() != nil {
			return nil, false
		}
		g.HoldFence(fmt.Errorf("reading its stored record for the catch-up at start: %w", err))
		select {
		case <-ctx.Done():
			return nil, false
		case <-time.After(g.Retry().Backoff(attempt)):
		}
	}
}
