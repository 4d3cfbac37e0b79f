package webhook

import (
	"bytes"
	"context"
	"fmt"

	"tailfeed/feed"
)

// Rebuilding the recorded request after a restart (see Webhook, "Key
// stability"). The record names the request that was being sent when the
// daemon stopped: (epoch, first, last) — on a glob feed one per epoch
// (epochs.go), each rebuilt by a carry of its own while the other files'
// lines go on. The source re-reads from the
// pointer and the group may cut those lines into other batches than before,
// so the sink keeps the request's lines as they come (the carry) and sends
// them under the recorded key once the line ending at `last` arrived.
//
// The carry is given up — what it holds goes out under a new key, with a
// WARN — only on evidence that the rest of the range cannot come, never
// for time alone (a request given up too early goes out under a new key,
// then the rest under another, and a receiver that dedupes on the key
// applies the lines of the first part twice):
//
//  1. a line of the epoch past `last` (the lines are in file order);
//  2. with filters, a batch whose unfiltered lines reach `last` or past it
//     (the lines of the range it filtered out will not come);
//  3. a batch of another epoch (a single-file feed only: a glob feed's
//     files interleave, so there it proves nothing);
//  4. the source waits for these very lines: at an epoch barrier (it has
//     published every positioned line of the old epoch), or refused a batch
//     for a full window when every line before the carry was acknowledged
//     (the window can only move once the carry is) — and the group took
//     every batch published before. On a glob feed this is decided per
//     stream (starved): the carry's own file at its barrier, or read to
//     its end under a full window; a full window alone proves nothing there,
//     since the carry's epoch passes it (below).
//
// Carried lines are not durable (the queue's ack point stays before the
// first line of the oldest carry; everything before it is reported durable
// when that carry starts, and up to the next carry when it is sent), so
// waiting loses nothing: a stop or a crash leaves them behind the pointer,
// and the next run rebuilds the request again. On a glob feed the other
// files' lines sent meanwhile are not durable either: after a crash they
// are re-delivered and skipped by their epochs' applied positions.
//
// (4) looks at the oldest carry (the one the ack point waits for): the
// window full while every line before it is acknowledged; it is sent, and
// the next carry, if any, is judged again on a later refusal.
//
// Why waiting cannot deadlock. While the carry waits, the rest of the range
// is either still to be read and published (then it comes), or the source
// cannot publish it:
//   - the old file ended before the range did and the source moved to
//     another file: the epoch barrier waits for the carry's lines, and (4)
//     lets them go; a best-effort webhook, which the barrier does not wait
//     for, sees (3);
//   - the window is full: if acknowledging the carry is what it waits for,
//     (4) lets it go; otherwise a slower subscriber holds it, and its
//     progress (or its release) moves the window without the webhook;
//   - another subscriber's queue is full, or it is fenced: likewise (that is
//     the wait the carry must sit out: the rest comes after it);
//   - the webhook's own queue never fills: the group keeps taking batches
//     while it carries.
//
// The group learns of (4) without a batch: FlushDue polls the publisher
// every CarryPoll while the carry waits (it only looks).
//
// On a glob feed the carry's lines hold the ack point for every file (the
// queue's durable mark is one prefix), so the other files' lines sent
// meanwhile fill the window behind it; the rest of the carry comes from its
// own file, which may be read after them. Acknowledging the other files'
// lines past the carry would need acknowledgements out of sequence order
// (the queue's durable mark, the feed's window and the glob's per-stream
// commits all follow the feed's one sequence), so instead the carry's epoch is awaited
// (feed.Publisher.Want): its batches pass a full window, which then
// exceeds maxPendingAcks by at most the carry's rest (the carry ends at its
// last line, or at a line past it), and the other files wait until the
// carry is sent. Each file has its own epoch barrier, which the feed's
// Barrier does not show: the publisher asks the glob source
// (EpochState), so a file replaced or truncated (copytruncate) while its
// carry waits lets the carry go at that file's barrier, and the new
// epoch's lines follow. While a file waits at its barrier the feed's detail
// names it (status).
//
// What it cannot tell: a file cut short between the crash and the restart,
// at a length between the pointer and `last`, with its first bytes
// unchanged, looks to the source like the same file read to its end. The
// carry then waits for the writer (the feed is not settled meanwhile,
// pendingAcks > 0); a new line ending past `last`, or a rotation, sends it.
// On a glob feed it also goes once the window is full (the other files
// wait behind it) while its file is read to its end: lines the writer adds
// just after go out under new keys.
// A new line ending exactly at `last` would complete the range with other
// bytes under the old key — positions are what identify lines within an
// epoch, so nothing can tell them apart.

// startCarry starts rebuilding the recorded request pe of b's epoch at the
// line of b that ends at its first position, and reports every line before
// the oldest carry durable.
func (w *Webhook) startCarry(b *feed.Batch, pe *whEntry) *whChunk {
	c := &whChunk{feed: b.Feed, path: b.Path, epoch: b.Epoch, positioned: true, carried: true, first: pe.First, last: pe.Last}
	if seq, before, ok := w.h.LineAt(b.Epoch, pe.First); ok {
		c.seq, c.before = seq, before
	}
	w.carries[b.Epoch] = c
	w.want(c, true)
	w.reportCarried()
	return c
}

// want tells a glob feed's publisher that c's epoch is awaited (on) or no
// longer: its lines pass a full window (feed.Publisher.Want), so that the
// other files' lines, unacknowledged behind the carry, do not hold back
// the rest it waits for.
func (w *Webhook) want(c *whChunk, on bool) {
	if p := w.cfg.Publisher; p != nil && w.cfg.PerEpoch && c.awaited != on {
		c.awaited = on
		p.Want(c.epoch, on)
	}
}

// reportCarried reports durable every line before the oldest carry's
// first: the rest was skipped as applied, filtered or sent (lines of other
// epochs are finished as they come; a carry's lines wait for it).
func (w *Webhook) reportCarried() {
	if c := w.oldestCarry(); c != nil {
		w.h.DurableThrough(c.before) // 0 (unknown) reports nothing
	}
}

// oldestCarry is the carry whose first line came first (nil: none).
func (w *Webhook) oldestCarry() *whChunk {
	var old *whChunk
	for _, c := range w.carries {
		if old == nil || c.before < old.before || (c.before == old.before && c.seq < old.seq) {
			old = c
		}
	}
	return old
}

// sendCarry delivers a carry, complete or given up, and ends it.
func (w *Webhook) sendCarry(ctx context.Context, c *whChunk) error {
	w.want(c, false) // complete or given up: nothing more of it awaited while it is sent
	if err := w.deliver(ctx, c); err != nil {
		return err
	}
	delete(w.carries, c.epoch)
	w.reportCarried()
	return nil
}

// extend copies lines of c's recorded request from b (from line i) into c
// and returns the index of the first line it did not take.
func (w *Webhook) extend(c *whChunk, b *feed.Batch, i int) int {
	for i < len(b.Lines) && b.Epoch == c.epoch {
		e := b.Ends[i]
		switch {
		case len(c.ends) > 0 && e <= c.ends[len(c.ends)-1]:
			i++ // carried already
			continue
		case e > c.last:
			return i
		}
		c.lines = append(c.lines, bytes.Clone(b.Lines[i]))
		c.ends = append(c.ends, e)
		i++
		if e == c.last {
			break
		}
	}
	return i
}

// complete reports whether the carry holds its whole range.
func (c *whChunk) complete() bool {
	return len(c.ends) > 0 && c.ends[len(c.ends)-1] == c.last
}

// rangeCovered reports evidence (2) or (3) after c took what b held: b is
// of another epoch, or the group's batch, filtered lines included, reaches
// the end of the range as far as this call covers it.
func (w *Webhook) rangeCovered(c *whChunk, b *feed.Batch) bool {
	if b.Epoch != c.epoch {
		return true
	}
	end, ok := w.h.CoveredEnd()
	return ok && end >= c.last
}

// starved returns a carry whose rest the source cannot publish (evidence
// 4) while the group holds every batch it published (nil: none).
//
// A single-file feed: the oldest carry, when the source waits at an epoch
// barrier, or refused a batch for a full window when every line before the
// carry was acknowledged.
//
// A glob feed (per stream: its files interleave and the feed shows no
// barrier): a carry whose stream moved its file on to another epoch (its
// barrier: every line of the carry's epoch was published); or the oldest
// carry, when its stream read its file to the end and the window is full
// with every line before the carry acknowledged: the other files' lines
// wait behind it, and its rest comes only if the file is written to (a
// file cut short while stopped, see "What it cannot tell"). A full window
// alone proves nothing there: the carry's own epoch passes it (Want).
func (w *Webhook) starved() *whChunk {
	p := w.cfg.Publisher
	c := w.oldestCarry()
	if p == nil || c == nil {
		return nil
	}
	if w.cfg.PerEpoch {
		var found *whChunk
		for _, k := range w.carries {
			if p.EpochState(k.epoch).Ended && (found == nil || k.before < found.before) {
				found = k
			}
		}
		if found == nil {
			acked, full := p.WindowFullAt()
			if !full || acked+1 < c.seq || w.h.Queue().BestEffort() || !p.EpochState(c.epoch).CaughtUp {
				return nil
			}
			found = c
		}
		if w.h.Queue().Depth() != 0 {
			return nil
		}
		return found
	}
	if e := p.Barrier(); e == 0 || e == c.epoch {
		// Not at a barrier: a full window waits for the carry only when
		// every line before it was acknowledged (and the queue holds the
		// pointer: the window does not wait for a best-effort one).
		acked, full := p.WindowFullAt()
		if !full || acked+1 < c.seq || w.h.Queue().BestEffort() {
			return nil
		}
	}
	if w.h.Queue().Depth() != 0 {
		return nil
	}
	return c
}

// partlyLettered reports whether the dead-letter ledger holds the first
// line of epoch's recorded request pe: its dead letter began (it is written
// from the first line on) and the request is never sent again.
func (w *Webhook) partlyLettered(feedName string, epoch uint64, pe *whEntry) bool {
	probe := feed.Batch{Feed: feedName, Epoch: epoch, Positioned: true, Ends: []int64{pe.First}}
	return w.h.InLedger(&probe) != nil
}

// restOfLettered returns the lines of b from line i through the end of the
// recorded range pe, as a request to dead-letter only, and the index of the
// line after them. It may hold part of the rest: the next batch brings the
// others (the record still names the range, applied through the last line
// written).
func (w *Webhook) restOfLettered(b *feed.Batch, i int, pe *whEntry) (*whChunk, int) {
	j := i
	for j < len(b.Lines) && b.Ends[j] <= pe.Last {
		j++
	}
	key := fmt.Sprintf("%s:%016x:%d-%d", b.Feed, b.Epoch, pe.First, pe.Last)
	lines := 0
	if l := w.h.Ledger(); l != nil {
		lines = l.RequestLines(b.Feed, key)
	}
	c := &whChunk{feed: b.Feed, path: b.Path, epoch: b.Epoch, positioned: true, noSend: true,
		lines: b.Lines[i:j], ends: b.Ends[i:j], body: []byte{}, reqKey: key, reqLines: lines,
		letterAttempts: max(1, w.h.Retry().Attempts), // the request ran out of its attempts
		letterErr:      fmt.Errorf("webhook request %s ran out of attempts and was dead-lettered in part before a restart; the rest is not sent again", key)}
	w.log.Warn("webhook dead-letters the rest of a request dead-lettered in part before a restart",
		"first", pe.First, "last", pe.Last, "lines", j-i)
	return c, j
}
