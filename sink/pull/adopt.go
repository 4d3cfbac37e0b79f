package pull

import (
	"maps"
	"regexp"
	"slices"
	"time"
)

// A reload that restarts a feed (for another processor's sake, or a
// changed setting) stops the feed as at shutdown and builds every
// subscriber again; the new instance re-reads from the final commit. A
// pull subscriber's client may hold deliveries of that instance: without
// more, their ids would be unknown (404) and their lines handed out again
// at attempt 1, though ackTimeout did not run out (DESIGN §12: a reload
// applies the difference without a restart; §6 pull). So the new instance
// adopts, from the stopped one (Config.Previous), every delivery still out
// (same deliveryId, attempt and ACK deadline) and every line acknowledged
// out of order, keyed by its place in the file (epoch, position):
//   - an ACK or NACK of an adopted delivery works as before the reload;
//   - when the re-read brings the line, it takes the adopted entry's place
//     in queue order (still out: its ACK moves the ack point; acknowledged
//     meanwhile or before the restart: done at once, not handed out);
//   - an adopted delivery that times out is handed out again (attempt + 1),
//     as any other.
// Lines without a position, replayed dead letters, lines out of attempts
// (held, being dead-lettered) and lines never handed out are not adopted:
// the re-read brings them as new lines. A best-effort subscriber adopts
// nothing (its unacknowledged lines were counted dropped at the stop and
// are not re-read for it). An ACK sent while the reload stops and rebuilds
// the feed (between the old instance's Close and the new one's routes) is
// answered 404; the delivery is valid again once the reload answered.

// adoptKey is a line's place in its file.
type adoptKey struct {
	epoch uint64
	pos   int64
}

// adopt takes over prev's deliveries in flight and its lines acknowledged
// out of order (prev is closed; it is not changed: a reload that fails and
// rebuilds the old config adopts from it again). Called by New, before
// anything runs.
func (p *Pull) adopt(prev *Pull) {
	if prev == p || prev.name != p.name || !sameRE(prev.match, p.match) || !sameRE(prev.exclude, p.exclude) {
		return
	}
	prev.mu.Lock()
	defer prev.mu.Unlock()
	// prev's own lines, and the entries prev adopted in turn whose lines
	// it had not re-read yet (its ProcessBatch waited while they filled
	// maxInFlight): those never entered prev.order, and forgetting them
	// would make a second reload lose the deliveries the first kept.
	cand := prev.order[prev.head:]
	if len(prev.adopted) > 0 {
		cand = append(slices.Clip(cand), slices.Collect(maps.Values(prev.adopted))...)
	}
	var out []*pullEntry
	for _, old := range cand {
		if old.replay || !old.src.positioned || old.held {
			continue
		}
		live := old.state == pullOut && old.hasID
		if !live && old.state != pullDone {
			continue
		}
		e := new(pullEntry)
		*e = *old
		e.through, e.rank, e.ridx, e.tidx, e.slot = 0, 0, -1, -1, false
		if live {
			// The same deadline on this instance's clock.
			e.due = p.clock(prev.t0.Add(time.Duration(old.due)))
			p.byID.put(e)
			p.out++
			p.unacked++
			p.ubytes += len(e.line)
			out = append(out, e)
		}
		if p.adopted == nil {
			p.adopted = map[adoptKey]*pullEntry{}
		}
		p.adopted[adoptKey{e.src.epoch, e.pos}] = e
	}
	// outq is in deadline order.
	slices.SortStableFunc(out, func(a, b *pullEntry) int {
		switch {
		case a.due < b.due:
			return -1
		case a.due > b.due:
			return 1
		}
		return 0
	})
	for _, e := range out {
		p.outq = append(p.outq, outSlot{e, e.attempt})
	}
	if len(out) > 0 {
		p.log.Info("pull deliveries in flight across the feed's restart stay valid", "deliveries", len(out))
	}
}

// takeAdopted is the adopted entry of the line at (epoch, pos) now re-read
// as queue line through (nil: none); it leaves the adopted set.
func (p *Pull) takeAdopted(epoch uint64, pos int64, through uint64) *pullEntry {
	k := adoptKey{epoch, pos}
	e := p.adopted[k]
	if e == nil {
		return nil
	}
	delete(p.adopted, k)
	e.through = through
	if e.state != pullDone && e.ridx < 0 {
		e.rank = through
	}
	return e
}

// isAdopted: the line at (epoch, pos) has an adopted entry (under p.mu
// or before the subscriber runs: adopted changes only under it).
func (p *Pull) isAdopted(epoch uint64, pos int64) bool {
	if len(p.adopted) == 0 {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.adopted[adoptKey{epoch, pos}]
	return ok
}

// sameRE: both nil, or the same expression.
func sameRE(a, b *regexp.Regexp) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.String() == b.String()
}
