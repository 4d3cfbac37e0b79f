package daemon

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"tailfeed/feed"
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
// rule per stream (catchUpStreams). A processor with a reload skip mark
// (added back by a reload, or a feed restarted by one; or added back while
// it holds the feed) is done through that mark: it re-reads nothing (DESIGN
// §12). What the catch-up cannot place — a sink whose record names only
// epochs the epochs file does not, a sink that lost part of what its record
// had seen (processor.DoneThroughDoubter) — is counted as a possible loss.
func (f *Feed) catchUp(ctx context.Context, dataDir string) {
	if f.strat != file.Committed || (f.ptr == nil && f.glob == nil) {
		return
	}
	var sinks []catchup.Sink
	var doubts []string
	var lines []pointer.EpochLine // a single-file feed's epochs file
	var linesErr error
	if f.glob == nil {
		lines, linesErr = pointer.ReadEpochs(datadir.Epochs(dataDir, f.cfg.Name))
	}
	for _, g := range f.groups {
		dt, ok := g.Sink().(processor.DoneThrougher)
		if !ok || g.Queue().BestEffort() {
			continue
		}
		marks, ok := doneThrough(ctx, g, dt)
		if !ok {
			return // stopped while the sink could not answer
		}
		// Lines it was released from while it could not record them
		// (released.go): its record would have passed them.
		marks = f.released.apply(f.cfg.Name, g.Name(), marks, lines)
		if d, ok := g.Sink().(processor.DoneThroughDoubter); ok {
			if why := d.DoneThroughDoubt(); why != "" {
				doubts = append(doubts, fmt.Sprintf("sink %s: %s", g.Name(), why))
			}
		}
		if sms := g.SkipMarks(); len(sms) > 0 && len(marks) > 0 {
			// Added back by a reload (or while it holds the feed), or a
			// feed restarted by one: the lines through its skip marks
			// (one per epoch: a glob's streams) are finished without it —
			// it re-reads nothing of them (DESIGN §12), so its record is
			// never "behind" them. Kept as released ranges too: the skip
			// marks last only this build, and the next start, after a
			// clean stop before the sink applied a later line, would take
			// its record for a restored one and have the feed re-read
			// them (audit 9A).
			f.keepSkips(g.Name(), marks, sms)
			for _, sm := range sms {
				if sm.OK {
					marks = append(marks, processor.Mark{Epoch: sm.Epoch, Position: sm.Position})
				}
			}
		}
		sinks = append(sinks, catchup.Sink{Name: g.Name(), Marks: marks})
	}
	var epoch uint64
	if f.ptr != nil {
		epoch = f.ptr.Record().Epoch
	}
	for _, d := range doubts {
		f.countLoss(1, 0, epoch, "catch-up at start: "+d)
	}
	if len(sinks) == 0 {
		return
	}
	if f.glob != nil {
		f.catchUpStreams(ctx, datadir.GlobPointers(dataDir, f.cfg.Name), datadir.Epochs(dataDir, f.cfg.Name), sinks)
		return
	}
	err := linesErr
	if err != nil {
		f.log.Warn("epochs file read with errors; a sink left at an epoch it cannot map is counted as a possible loss", "error", err)
	}
	cur := f.ptr.Record()
	for _, s := range catchup.Unplaced(cur, f.ptr.Fresh(), lines, err == nil, sinks) {
		f.countLoss(1, 0, cur.Epoch, fmt.Sprintf("catch-up at start: sink %s holds a record only of epochs the epochs file does not name "+
			"(%s), and that file is not whole (deleted, torn or cut), while the pointer is at epoch %016x: it may lack lines and nothing tells which; "+
			"not caught up, counted as a possible loss", s.Name, markList(s.Marks), cur.Epoch))
	}
	p, behind := catchup.Decide(cur, f.ptr.Fresh(), lines, sinks)
	rec := cur
	if behind {
		rec = p.Record(cur)
	}
	if !f.ptr.Fresh() {
		f.olderEpoch(cur, rec, lines, p, behind)
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

// countLoss counts a loss the catch-up found before the source runs (its
// lostTails/lostBytes, the ledger, detail).
func (f *Feed) countLoss(tails, bytes, epoch uint64, detail string) {
	switch {
	case f.glob != nil:
		f.glob.CountLoss(tails, bytes, epoch, detail)
	default:
		if src, ok := f.src.(*file.Source); ok {
			src.CountLoss(tails, bytes, epoch, detail)
		}
	}
}

func markList(ms []processor.Mark) string {
	var b strings.Builder
	for i, m := range ms {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%016x:%d", m.Epoch, m.Position)
	}
	return b.String()
}

// olderEpoch tells the source how to read a catch-up's point (cur: the
// pointer's record before the backward commit; rec: the record it opens).
// Behind the pointer in its own epoch: should the gap be gone from the
// input (the file truncated or rewritten while stopped, no copy), it is
// counted with its size and the sink named. From an older epoch (now, or
// one a kill -9 cut short: the pointer names an epoch it had left): from
// that generation's rest through every later one, each under the epoch the
// epochs file names for it, the later ones found by the time the pointer
// started that epoch; a gone generation — the catch-up's own, a later one,
// or the pointer's own file cut while stopped — is counted with the bytes
// it is known to have held that the sinks lacked.
func (f *Feed) olderEpoch(cur, rec pointer.Record, lines []pointer.EpochLine, p catchup.Point, behind bool) {
	src, ok := f.src.(*file.Source)
	if !ok {
		return
	}
	_, _, left := catchup.Left(rec, lines)
	if behind && p.Current && !left {
		var since time.Time
		if st, err := os.Stat(f.ptr.Path()); err == nil {
			since = st.ModTime() // its last commit (the backward one comes next)
		}
		who := "catch-up of sink " + p.Sink
		src.SetCatchUp(file.CatchUp{Epoch: rec.Epoch, Since: since, LostBytes: uint64(max(cur.Offset-p.Position, 0)), Who: who,
			Detail: fmt.Sprintf("%s: the input no longer holds the gap it lacks (epoch %016x, positions %d to %d: truncated or rewritten while stopped, no copy found); "+
				"those %d bytes are lost for the sinks that lacked them", who, rec.Epoch, p.Position, cur.Offset, max(cur.Offset-p.Position, 0))})
		return
	}
	var gen pointer.EpochLine
	var end int64
	var later []file.LaterGen
	who := "a catch-up cut short by a restart"
	if behind {
		who = "catch-up of sink " + p.Sink
	}
	if behind && !p.Current {
		gen, end = p.File, p.End
		for _, g := range p.Later {
			later = append(later, file.LaterGen{Epoch: g.Epoch, FileKey: g.FileKey, FPLen: g.FPLen, FP: g.FP, End: g.End, Path: g.Path})
		}
	} else {
		gen, end, ok = catchup.Left(rec, lines)
		if !ok {
			return
		}
	}
	var lost uint64
	if end > rec.Offset {
		lost = uint64(end - rec.Offset)
	}
	to := fmt.Sprintf("%d", end)
	if end < 0 {
		to = "its end (not known: its epoch ended before the pointer's chain began afresh)"
	}
	src.SetCatchUp(file.CatchUp{Epoch: rec.Epoch, Since: gen.Time, LostBytes: lost, Known: lines, Later: later, Who: who,
		Detail: fmt.Sprintf("%s: the generation read as %s (epoch %016x) is gone; its lines from position %d to %s are lost for the sinks that lacked them",
			who, gen.Path, rec.Epoch, rec.Offset, to)})
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
		// A release asked meanwhile (POST /admin/release) is answered at
		// once: nothing was delivered yet, so it gives up nothing (audit
		// 9E: it went unanswered until its 30 s bound, then 503).
		req, ok := g.Wait(ctx, g.Retry().Backoff(attempt))
		if !ok {
			return nil, false
		}
		if req != nil {
			g.GiveUp(req, 0)
		}
	}
}

// catchUpStreams applies the rule to each stream of a glob feed (DESIGN
// §10: its own pointer and epoch) before the glob opens any: a sink's mark
// for a stream's epoch behind that stream's offset commits that stream's
// pointer back (the earliest over the sinks). Only under the stream's own
// epoch: a sink's mark of an epoch a stream left (a file truncated or
// replaced in place) is not mapped to that file's earlier content; its gap,
// like that of a stream whose file is gone or forgotten, is counted
// (streamsGone). Pointer files are read without a lock first (pointer.Inspect), opened
// (locked) only to be committed back; one that is unreadable is left to
// the glob's own open.
func (f *Feed) catchUpStreams(ctx context.Context, dir, epochs string, sinks []catchup.Sink) {
	ents, _ := os.ReadDir(dir)
	held := map[uint64]bool{} // epochs a stream pointer that names a file holds
	for _, e := range ents {
		if name := e.Name(); strings.HasSuffix(name, ".ptr") && e.Type().IsRegular() {
			if cur, err := pointer.Inspect(filepath.Join(dir, name)); err == nil && (cur.FileKey != 0 || cur.FPLen != 0) {
				held[cur.Epoch] = true
			}
		}
	}
	f.streamsGone(epochs, held, sinks)
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

// streamsGone counts, on a glob feed, the gap of a sink behind in a
// stream's epoch that no stream pointer naming a file holds any more (its
// file deleted — the pointer emptied — or forgotten — the pointer deleted —
// or truncated or replaced in place — the pointer moved to a new epoch):
// the input no longer holds those lines, so they cannot be re-read (DESIGN
// §10, §11 "a generation that is gone is counted"). The epoch's end is the
// epochs file's line that moved the stream's pointer off it
// (previousOffset): a mark before it counts lostTails + 1 and the bytes in
// between, naming the sink. An epoch no line moved a pointer off is not
// decided here (a stream's live epoch, or one the epochs file does not
// name: other streams', downgraded lines').
func (f *Feed) streamsGone(epochs string, held map[uint64]bool, sinks []catchup.Sink) {
	lines, err := pointer.ReadEpochs(epochs)
	if err != nil {
		f.log.Warn("epochs file read with errors; a sink behind in a stream whose file is gone may not be counted", "error", err)
	}
	end := map[uint64]pointer.EpochLine{} // epoch → last line moving a pointer off it
	path := map[uint64]string{}
	for _, l := range lines {
		if l.PrevEpoch != 0 && l.PrevEpoch != l.Epoch {
			end[l.PrevEpoch] = l
		}
		if l.Path != "" {
			path[l.Epoch] = l.Path
		}
	}
	for _, s := range sinks {
		for _, m := range s.Marks {
			if m.Epoch == 0 || held[m.Epoch] {
				continue
			}
			l, ok := end[m.Epoch]
			if !ok || m.Position >= l.PrevOffset {
				continue
			}
			f.countLoss(1, uint64(l.PrevOffset-m.Position), m.Epoch, fmt.Sprintf(
				"catch-up of sink %s: it lacks the lines of %s (epoch %016x) from position %d to %d, and that file is gone from the input "+
					"(deleted, forgotten, or truncated or replaced): lost for it", s.Name, cmp.Or(path[m.Epoch], "a glob file"), m.Epoch, m.Position, l.PrevOffset))
		}
	}
}

// keepSkips records in released.json, for a sink with a record (marks) that
// starts with skip marks sms, the lines each skip mark passes that its
// record does not: from its mark of that epoch (none: the epoch's start)
// through the skip mark. released.apply moves the record over them at a
// later start only while it is still at or past that mark (a sink restored
// to an earlier point is still caught up).
func (f *Feed) keepSkips(sub string, marks []processor.Mark, sms []feed.Mark) {
	for _, sm := range sms {
		if !sm.OK {
			continue
		}
		after, found := int64(0), false
		for _, m := range marks {
			if m.Epoch == sm.Epoch {
				after, found = max(after, m.Position), true
			}
		}
		if found && after >= sm.Position {
			continue
		}
		if err := f.released.add(f.cfg.Name, sub, sm.Epoch, after, sm.Position); err != nil {
			f.log.Warn("could not record the lines a re-added subscriber skips; a later start may deliver them again (duplicates)", "subscriber", sub, "error", err)
		}
	}
}
