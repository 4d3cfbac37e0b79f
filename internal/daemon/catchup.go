package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
// through AlreadyApplied, or receive duplicates). A glob feed applies the
// rule per stream (catchUpStreams).
func (f *Feed) catchUp(ctx context.Context, dataDir string) {
	if f.strat != file.Committed || (f.ptr == nil && f.glob == nil) {
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
	if f.glob != nil {
		f.catchUpStreams(ctx, datadir.GlobPointers(dataDir, f.cfg.Name), datadir.Epochs(dataDir, f.cfg.Name), sinks)
		return
	}
	lines, err := pointer.ReadEpochs(datadir.Epochs(dataDir, f.cfg.Name))
	if err != nil {
		f.log.Warn("epochs file read with errors; a sink left at an epoch it cannot map is not caught up", "error", err)
	}
	cur := f.ptr.Record()
	p, behind := catchup.Decide(cur, f.ptr.Fresh(), lines, sinks)
	rec := cur
	if behind {
		rec = p.Record(cur)
	}
	if !f.ptr.Fresh() {
		f.olderEpoch(rec, lines, p, behind)
	}
	if !behind {
		return
	}
	f.log.Warn("a sink is behind the pointer (restored to an earlier point?); committing the pointer back and re-reading the input from there: "+
		"every subscriber receives those lines again",
		"sink", p.Sink, "from", p.String(), "pointerEpoch", fmt.Sprintf("%016x", cur.Epoch), "pointerOffset", cur.Offset,
		"sinkMark", fmt.Sprintf("%016x:%d", p.Mark.Epoch, p.Mark.Position))
	var sg *processor.Group // fenced while the backward commit fails
	for _, g := range f.groups {
		if g.Name() == p.Sink {
			sg = g
		}
	}
	for attempt := 1; ; attempt++ {
		err := f.ptr.Rewind(rec)
		if err == nil {
			if attempt > 1 && sg != nil {
				sg.LiftHold()
			}
			f.log.Info("catch-up: pointer committed back and synced; the source reads from it",
				"epoch", fmt.Sprintf("%016x", rec.Epoch), "offset", rec.Offset)
			return
		}
		f.log.Error("the catch-up's backward commit of the pointer failed; trying again", "error", err)
		if sg != nil {
			sg.HoldFence(fmt.Errorf("catch-up at start: committing the pointer back failed: %w", err))
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(min(time.Duration(attempt)*100*time.Millisecond, 2*time.Second)):
		}
	}
}

// olderEpoch tells the source, when rec (the record it opens: the pointer,
// or where the catch-up puts it back) names an epoch the pointer had left
// (a catch-up into an older generation, now or one a kill -9 cut short),
// how to read on (file.CatchUp): from that generation's rest through every
// later one, each under the epoch the epochs file names for it, the later
// ones found by the time the pointer started that epoch; a gone generation
// is counted with the bytes it is known to have held past rec's offset.
func (f *Feed) olderEpoch(rec pointer.Record, lines []pointer.EpochLine, p catchup.Point, behind bool) {
	src, ok := f.src.(*file.Source)
	if !ok {
		return
	}
	gen, end, ok := catchup.Left(rec, lines)
	if !ok {
		return
	}
	var lost uint64
	if end > rec.Offset {
		lost = uint64(end - rec.Offset)
	}
	who := "a catch-up cut short by a restart"
	if behind {
		who = "catch-up of sink " + p.Sink
	}
	src.SetCatchUp(file.CatchUp{Epoch: rec.Epoch, Since: gen.Time, LostBytes: lost, Known: lines,
		Detail: fmt.Sprintf("%s: the generation read as %s (epoch %016x) is gone; its lines from position %d to %d are lost for the sinks that lacked them",
			who, gen.Path, rec.Epoch, rec.Offset, end)})
	if !behind {
		f.log.Info("the pointer names an epoch it had left (a catch-up cut short): reading on from that generation",
			"epoch", fmt.Sprintf("%016x", rec.Epoch), "offset", rec.Offset, "file", gen.Path)
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

// catchUpStreams applies the rule to each stream of a glob feed (DESIGN
// §10: its own pointer and epoch) before the glob opens any: a sink's mark
// for a stream's epoch behind that stream's offset commits that stream's
// pointer back (the earliest over the sinks). Only under the stream's own
// epoch: a sink's mark of an epoch a stream left (a file truncated or
// replaced in place) is not mapped to that file's earlier content (README).
// Pointer files are read without a lock first (pointer.Inspect), opened
// (locked) only to be committed back; one that is unreadable is left to
// the glob's own open.
func (f *Feed) catchUpStreams(ctx context.Context, dir, epochs string, sinks []catchup.Sink) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	n := 0
	for _, e := range ents {
		if ctx.Err() != nil {
			return
		}
		name := e.Name()
		if !strings.HasSuffix(name, ".ptr") || !e.Type().IsRegular() {
			continue
		}
		path := filepath.Join(dir, name)
		cur, err := pointer.Inspect(path)
		if err != nil || (cur.FileKey == 0 && cur.FPLen == 0) {
			continue // unreadable (the glob decides), or no file of it pending
		}
		p, ok := catchup.Decide(cur, false, nil, sinks)
		if !ok {
			continue
		}
		ptr, err := pointer.Open(path, pointer.Options{Logger: f.log, EpochsPath: epochs})
		if err != nil {
			f.log.Error("catch-up: cannot open a stream pointer to commit it back; its sink is not caught up", "pointer", path, "error", err)
			continue
		}
		if r := ptr.Record(); r.Epoch == cur.Epoch && r.Offset == cur.Offset {
			err = ptr.Rewind(p.Record(r))
		}
		if cerr := ptr.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			f.log.Error("catch-up: committing a stream pointer back failed; its sink is not caught up", "pointer", path, "error", err)
			continue
		}
		n++
		f.log.Warn("a sink is behind a stream's pointer (restored to an earlier point?); committing it back and re-reading that file from there: "+
			"every subscriber receives those lines again", "sink", p.Sink, "pointer", path, "epoch", fmt.Sprintf("%016x", p.Epoch),
			"from", p.Position, "pointerOffset", cur.Offset)
	}
	if n > 0 {
		f.log.Info("catch-up: stream pointers committed back", "streams", n)
	}
}
