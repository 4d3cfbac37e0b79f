package daemon

import (
	"context"
	"fmt"
	"os"
	"time"

	"tailfeed/feed"
	"tailfeed/internal/fileutil"
	"tailfeed/source/file"
	"tailfeed/status"
)

// The daemon takes snapshots of its feeds; status applies the rules
// (status.Build, status.Health, status.Readiness, status.MetricsRoute).

// Report builds the feed.status document. Reports are built one at a time,
// so a higher version never carries an older snapshot. The losses it counts
// are in losses.jsonl, fsynced, before it is answered (DESIGN §7 "Every
// counted loss is also appended (fsynced)"): a kill -9 right after a report
// never leaves the ledger short of what the report said — unless the
// ledger's fsync hangs: the report waits ledgerWait for it, then answers.
func (d *Daemon) Report() status.Report {
	r := d.buildReport()
	d.recordLossesBy(time.Now().Add(ledgerWait)) // the counters only grow: at least what r read
	return r
}

func (d *Daemon) buildReport() status.Report { return d.buildReportOf(false) }

// buildReportOf is the report, with every glob feed's files when files.
func (d *Daemon) buildReportOf(files bool) status.Report {
	d.reportMu.Lock()
	defer d.reportMu.Unlock()
	feeds := make([]status.FeedReport, 0, 0)
	for _, f := range d.feedList() {
		feeds = append(feeds, status.Build(f.snapshot(files)))
	}
	return d.reports.Stamp(d.withConfig(status.Combine(feeds)))
}

func (f *Feed) report() status.FeedReport { return status.Build(f.snapshot(false)) }

// ReportFiles is Report with every glob feed's files (?files=1): the same
// document, config included, plus files (DESIGN §10).
func (d *Daemon) ReportFiles() status.Report {
	r := d.buildReportOf(true)
	d.recordLossesBy(time.Now().Add(ledgerWait)) // as Report
	return r
}

// snapshot reads one feed in the order status.FeedSnapshot documents.
func (f *Feed) snapshot(files bool) status.FeedSnapshot {
	src, pub := f.src, f.pub
	s := status.FeedSnapshot{Name: f.cfg.Name, Path: f.cfg.Path, SeqBefore: pub.Sequence()}
	var state file.State
	var counts file.GlobCounts
	if one, ok := src.(*file.Source); ok {
		// The open file's identity before the position (the source publishes a
		// new file as BEHIND, position, identity): a CAUGHT_UP read after both
		// means they belong together.
		dev, ino, open := one.FileIdentity()
		readPos := src.ReadPos()
		state = src.State()
		if (state == file.CaughtUp || state == file.WaitingForFile) && one.TornPending() {
			state = file.Behind // a compressed generation is unread (DESIGN §7 state)
		}
		if state == file.CaughtUp && !f.fileCaughtUp(dev, ino, open, readPos) {
			state = file.Behind
		}
	} else if f.glob != nil {
		// The glob checks every file's size itself, once for both.
		state, counts = f.glob.StateCounts()
	} else {
		state = src.State()
	}
	s.State = state.String()
	s.SourceDone = state == file.CaughtUp || state == file.WaitingForFile || state == file.EndOfStream
	s.Bounded, s.Policy = f.strat.Bounded(), f.policy.String()
	s.Downgraded, s.Oversized, s.Unterminated = src.Downgraded(), src.Oversized(), src.Unterminated()
	s.LostTails, s.LostBytes = src.LostTails(), src.LostBytes()
	s.Paused, s.Pauses, s.Epoch, s.Detail = pub.Paused(), pub.Pauses(), src.Epoch(), src.Detail()
	s.Subscribers = make([]status.SubscriberSnapshot, 0, len(f.groups))
	for _, g := range f.groups {
		q := g.Queue()
		st, reason := q.State()
		ss := status.SubscriberSnapshot{
			Queue:      q.Name,
			Position:   q.Position(), // before the ack point
			State:      st.String(),
			BestEffort: q.BestEffort(),
		}
		if ss.BestEffort {
			ss.Dispatched = q.Finished()
		} else {
			ss.Dispatched = q.AckPoint()
		}
		ss.Depth = q.Depth()
		ss.Stalls, ss.StallReason = q.Stalls(st), reason // st and reason from one read
		ss.Consumer = st == feed.Live || st == feed.Released
		ss.Dropped, ss.Refused = q.Dropped(), q.Counters.Refused.Load()
		ss.CompletionFailures, ss.Released = g.CompletionFailures(), q.ReleasedLines()
		ss.DeadLettered = uint64(g.Ledgered()) // entries now in the ledger (read from disk at start)
		s.Subscribers = append(s.Subscribers, ss)
	}
	s.PendingAcks = pub.Pending() // before acknowledged
	s.Acknowledged = pub.Acknowledged()
	if f.ptr != nil {
		rec := f.ptr.Record()
		s.Pointer = &status.PointerSnapshot{Offset: rec.Offset, Epoch: rec.Epoch, Commits: rec.Commits,
			CommitFailures: src.CommitFailures(), CommitOK: src.CommitOK(), SyncedSeq: src.SyncedSeq()}
	}
	if f.glob != nil {
		f.globSnapshot(&s, counts, files)
	}
	s.Base = f.lossBase()
	s.SeqAfter = pub.Sequence()
	s.Ledgered = f.ledger != nil && f.ledger.has(f.cfg.Name)
	s.RemovedDeadLettered = f.orphans.count(f.cfg.Name)
	f.addCarry(&s)
	return s
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
		src := f.src.(*file.Source)
		return src.FileEnded() && !src.OpenFileGrown(readPos)
	}
	if pdev != dev || pino != ino {
		return false
	}
	st, err := os.Stat(f.cfg.Path)
	if err != nil {
		return false
	}
	return st.Size() <= readPos && st.ModTime().UnixNano() == f.src.(*file.Source).VerifiedMod()
}

// Health is /healthz (status.Health over every feed).
func (d *Daemon) Health() (bool, string) {
	feeds := make([]status.HealthSnapshot, 0, 0)
	for _, f := range d.feedList() {
		h := status.HealthSnapshot{Feed: f.cfg.Name, Failed: f.src.State() == file.Failed, Detail: f.src.Detail()}
		for _, g := range f.groups {
			q := g.Queue()
			if st, why, since := q.StateAt(); q.Stalls(st) {
				h.Stalls = append(h.Stalls, status.Stall{Since: since, Reason: why})
			}
		}
		for _, hd := range f.held {
			// A removed subscriber's hold stalls the feed as feed.status
			// says (DESIGN §12 Reload), from when this feed began holding.
			if !hd.released.Load() {
				h.Stalls = append(h.Stalls, status.Stall{Since: hd.since,
					Reason: fmt.Sprintf("removed subscriber %s holds %d lines", hd.name, hd.lines)})
			}
		}
		h.PausedSince, h.PauseReason = f.pub.PausedSince(), f.pub.PauseReason()
		feeds = append(feeds, h)
	}
	return status.Health(feeds, d.config().Built.StallAlert, time.Now())
}

// Ready is /readyz (status.Readiness over every feed).
func (d *Daemon) Ready() (bool, string) { return d.ready.Check(d.readyFeeds) }

func (d *Daemon) readyFeeds() []status.ReadyFeed {
	out := make([]status.ReadyFeed, 0, 0)
	for _, f := range d.feedList() {
		st := f.src.State()
		open := st != file.Starting && st != file.Failed
		if o, ok := f.src.(interface{ Opened() bool }); ok && o.Opened() {
			open = true // opened, then failed before a check looked (audit 9C)
		}
		out = append(out, status.ReadyFeed{Feed: f.cfg.Name, State: st.String(), Open: open})
	}
	return out
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

// metrics snapshots every feed for GET /metrics.
func (d *Daemon) metrics() []status.FeedMetrics {
	out := make([]status.FeedMetrics, 0, 0)
	for _, f := range d.feedList() {
		out = append(out, f.metrics())
	}
	d.recordLossesBy(time.Now().Add(ledgerWait)) // as Report: the loss counters shown are in the ledger
	return out
}

func (f *Feed) metrics() status.FeedMetrics {
	m := status.FeedMetrics{Report: f.report(), FileSize: -1}
	src, pub := f.src, f.pub
	m.ReadPos = src.ReadPos()
	m.LinesRead, m.BytesRead = src.LinesRead()+f.carry.linesRead, src.BytesRead()+f.carry.bytesRead
	m.Pauses, m.PausedSeconds, m.Paused = pub.Pauses()+f.carry.pauses, pub.PausedTotal().Seconds()+f.carry.pausedSeconds, pub.Paused()
	m.CommitFailures, m.SyncedSeq = src.CommitFailures()+f.carry.commitFailures, max(src.SyncedSeq(), f.carry.seq)
	if st, err := os.Stat(f.cfg.Path); err == nil && f.glob == nil {
		m.FileSize = st.Size()
	}
	if f.ptr != nil {
		rec := f.ptr.Record()
		m.Pointer = &status.PointerMetrics{Commits: rec.Commits + f.carry.commits, Offset: rec.Offset, Epoch: rec.Epoch, SourceEpoch: src.Epoch()}
	}
	for _, g := range f.groups {
		q := g.Queue()
		s := status.SubscriberMetrics{Name: q.Name, Dispatched: q.AckPoint()}
		if q.BestEffort() {
			s.Dispatched = q.Finished()
		}
		s.Dispatched = f.carry.reportedDispatched(q.Name, s.Dispatched) // a reload's restart numbers on (reload.go carried)
		s.Position, s.Depth, s.Failures = q.Position()+f.carry.before(q.Name), q.Depth(), g.Failures()+f.carry.failures[q.Name]
		st, _ := q.State()
		s.Held = (st == feed.Fenced || st == feed.Dead) && !q.BestEffort() // a best-effort subscriber never holds the pointer (DESIGN §5)
		m.Subscribers = append(m.Subscribers, s)
	}
	return m
}

// feedStates are every source state, for tailfeed_feed_state.
var feedStates = func() []string {
	var out []string
	for st := file.Starting; st <= file.Failed; st++ {
		out = append(out, st.String())
	}
	return out
}()
