package daemon

import (
	"context"
	"os"
	"strings"
	"time"

	"tailfeed/feed"
	"tailfeed/internal/fileutil"
	"tailfeed/source/file"
	"tailfeed/status"
)

// Report builds the feed.status document. Reports are built one at a time,
// so a higher version never carries an older snapshot.
func (d *Daemon) Report() status.Report {
	d.reportMu.Lock()
	defer d.reportMu.Unlock()
	r := status.Report{Settled: true, Lossless: true, Feeds: make([]status.FeedReport, 0, len(d.feeds))}
	for _, f := range d.feeds {
		fr := f.report()
		r.Settled = r.Settled && fr.Settled
		r.Lossless = r.Lossless && fr.Lossless
		r.Feeds = append(r.Feeds, fr)
	}
	return d.reports.Stamp(r)
}

// report reads one feed. The order matters: sequence first, then the read
// position, the source state, the file, the ack points and queues, and the
// sequence again; see the package doc of status.
//
// Why that order makes a false "settled" impossible: the source stores
// BEHIND before it moves the read position and CAUGHT_UP only once every
// complete line read is published, so a CAUGHT_UP read after the position
// means the lines up to that position were published before the state was
// read; the second sequence read shows whether anything was published while
// the report was being built; a queue's position is read before its ack
// point, so "drained" (ack point >= position) means every line given to it
// was finished; pendingAcks is 0 only once the publisher acknowledged every
// line it numbered.
func (f *Feed) report() status.FeedReport {
	src, pub := f.src, f.pub
	seq1 := pub.Sequence()
	// The open file's identity before the position (the source publishes a
	// new file as BEHIND, position, identity): a CAUGHT_UP read after both
	// means they belong together.
	dev, ino, open := src.FileIdentity()
	readPos := src.ReadPos()
	state := src.State()
	if state == file.CaughtUp && !f.fileCaughtUp(dev, ino, open, readPos) {
		state = file.Behind
	}
	fr := status.FeedReport{
		Feed:         f.cfg.Name,
		Path:         f.cfg.Path,
		State:        state.String(),
		Bounded:      f.strat.Bounded(),
		Policy:       f.policy.String(),
		Downgraded:   src.Downgraded(),
		Oversized:    src.Oversized(),
		Unterminated: src.Unterminated(),
		LostTails:    src.LostTails(),
		LostBytes:    src.LostBytes(),
		Paused:       pub.Paused(),
		Pauses:       pub.Pauses(),
		Epoch:        status.Hex(src.Epoch()),
		Drained:      true,
		Subscribers:  make([]status.SubscriberReport, 0, len(f.groups)),
	}
	if d := src.Detail(); d != "" {
		fr.Detail = &d
	}
	var stalled []string
	holdingDrained := true
	for _, g := range f.groups {
		q := g.Queue()
		st, reason := q.State()
		sr := status.SubscriberReport{
			Queue:    q.Name,
			Position: q.Position(), // before the ack point: see above
			State:    st.String(),
		}
		if q.BestEffort() {
			sr.Dispatched = q.Finished()
		} else {
			sr.Dispatched = q.AckPoint()
		}
		// Drained: nothing queued and nothing given to it unfinished (a
		// batch being processed has left the queue but is not done).
		sr.Drained = sr.Dispatched >= sr.Position && q.Depth() == 0
		if !q.BestEffort() {
			if !sr.Drained {
				holdingDrained = false
			}
			if q.Stalls(st) { // st and reason from one read: never a reason of another state
				stalled = append(stalled, reason)
			}
		}
		if !sr.Drained {
			fr.Drained = false
		}
		if st == feed.Live || st == feed.Released {
			fr.Consumers++
		}
		fr.Dropped += q.Counters.Dropped.Load()
		fr.Refused += q.Counters.Refused.Load()
		fr.CompletionFailures += g.CompletionFailures()
		fr.Released += q.ReleasedLines()
		fr.DeadLettered += uint64(g.Ledgered()) // entries now in the ledger (read from disk at start)
		fr.Subscribers = append(fr.Subscribers, sr)
	}
	// Pending before acknowledged: once pending reads 0, acknowledged reads
	// at least every sequence published before, so the commit check below
	// (synced sequence >= acknowledged) cannot pass on a stale value.
	fr.PendingAcks = pub.Pending()
	fr.Acknowledged = pub.Acknowledged()
	if len(stalled) > 0 {
		s := strings.Join(stalled, "; ")
		fr.Stalled = &s
	}
	committed := true
	if f.ptr != nil {
		rec := f.ptr.Record()
		fr.Pointer = &status.PointerReport{
			Offset:         rec.Offset,
			Epoch:          status.Hex(rec.Epoch),
			Commits:        rec.Commits,
			CommitFailures: src.CommitFailures(),
		}
		committed = src.CommitOK() && src.SyncedSeq() >= fr.Acknowledged
	}
	// This run's counters less what an operator acknowledged (DELETE
	// /admin/losses/{feed}); the ledger is checked by the caller.
	b := f.lossBase()
	fr.Dropped, fr.Refused = sub0(fr.Dropped, b.dropped), sub0(fr.Refused, b.refused)
	fr.CompletionFailures, fr.Released = sub0(fr.CompletionFailures, b.completionFailures), sub0(fr.Released, b.released)
	fr.LostTails, fr.LostBytes = sub0(fr.LostTails, b.lostTails), sub0(fr.LostBytes, b.lostBytes)
	seq2 := pub.Sequence()
	fr.Sequence = seq2
	srcDone := state == file.CaughtUp || state == file.WaitingForFile || state == file.EndOfStream
	fr.Settled = srcDone && holdingDrained && fr.PendingAcks == 0 && fr.Stalled == nil && committed && seq1 == seq2
	fr.Lossless = fr.Dropped == 0 && fr.Refused == 0 && fr.CompletionFailures == 0 && fr.Released == 0 &&
		fr.LostTails == 0 && fr.LostBytes == 0 && fr.DeadLettered == 0 &&
		(f.ledger == nil || !f.ledger.has(f.cfg.Name)) // DESIGN §7 "Losses outlive the run"
	return fr
}

// fileCaughtUp checks, when a report is built, that no byte lies past the
// read position, that the path still names the open file (or is missing
// with the open file read to its end), and that the file was not written
// since the source last checked its content (its mtime moved: a same-size
// rewrite is not CAUGHT_UP before the source re-read its first bytes).
func (f *Feed) fileCaughtUp(dev, ino uint64, open bool, readPos int64) bool {
	if !open {
		return true
	}
	pdev, pino, err := fileutil.DevInoPath(f.cfg.Path)
	if err != nil {
		if !os.IsNotExist(err) {
			return false
		}
		return f.src.FileEnded()
	}
	if pdev != dev || pino != ino {
		return false
	}
	st, err := os.Stat(f.cfg.Path)
	if err != nil {
		return false
	}
	return st.Size() <= readPos && st.ModTime().UnixNano() == f.src.VerifiedMod()
}

// Health reports whether any feed is FAILED (at once: no wait will mend
// it), or has been stalled or paused for longer than stallAlertMillis, and
// why (DESIGN §12 "Health").
func (d *Daemon) Health() (bool, string) {
	limit := time.Duration(d.cfg.Status.StallAlertMillis) * time.Millisecond
	var why []string
	for _, f := range d.feeds {
		if f.src.State() == file.Failed {
			reason := "feed " + f.cfg.Name + " FAILED"
			if dt := f.src.Detail(); dt != "" {
				reason += ": " + dt
			}
			why = append(why, reason)
			continue
		}
		if since, reason := f.stalledSince(); !since.IsZero() && time.Since(since) > limit {
			why = append(why, "feed "+f.cfg.Name+" stalled: "+reason)
			continue
		}
		if since := f.pub.PausedSince(); !since.IsZero() && time.Since(since) > limit {
			why = append(why, "feed "+f.cfg.Name+" paused: "+f.pub.PauseReason())
		}
	}
	return len(why) == 0, strings.Join(why, "; ")
}

func (f *Feed) stalledSince() (time.Time, string) {
	var first time.Time
	var reason string
	for _, g := range f.groups {
		q := g.Queue()
		st, why, since := q.StateAt()
		if !q.Stalls(st) {
			continue
		}
		if first.IsZero() || since.Before(first) {
			reason, first = why, since
		}
	}
	return first, reason
}

// Ready reports whether every feed has opened its file or is waiting for
// it (DESIGN §12 "Health": /readyz). Once true it stays true: a feed that
// fails later shows in /healthz, not here.
func (d *Daemon) Ready() (bool, string) {
	if d.ready.Load() {
		return true, ""
	}
	var why []string
	for _, f := range d.feeds {
		if !f.opened() {
			why = append(why, "feed "+f.cfg.Name+" "+f.src.State().String())
		}
	}
	if len(why) > 0 {
		return false, strings.Join(why, "; ")
	}
	d.ready.Store(true)
	return true, ""
}

// opened latches once the source has been seen past STARTING and not
// FAILED: it opened its file or waits for one to appear.
func (f *Feed) opened() bool {
	if f.wasOpen.Load() {
		return true
	}
	switch f.src.State() {
	case file.Starting, file.Failed:
		return false
	}
	f.wasOpen.Store(true)
	return true
}

// watchReady polls the sources until every feed has opened (then Ready
// stays true), so a feed that opens and fails between two probes still
// counts as having opened.
func (d *Daemon) watchReady(ctx context.Context) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if ok, _ := d.Ready(); ok {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
