package status

import "strings"

// FeedSnapshot is what one feed's report is built from: values read from
// the feed's source, publisher, queues and pointer. The daemon reads them
// in this order, which Build relies on:
//
//  1. SeqBefore (the publisher's sequence);
//  2. the open file's identity, then the read position, then the source
//     state (State, SourceDone: CAUGHT_UP only when the file check passed);
//  3. per subscriber, Position before Dispatched;
//  4. PendingAcks before Acknowledged, then the pointer;
//  5. Base, SeqAfter, and Ledgered last.
//
// Each value is read after the ones it vouches for (a CAUGHT_UP state for
// the position, an ack point for the queue's position, acknowledged for
// pendingAcks), so a snapshot taken while lines move can show the feed
// unsettled, never falsely settled.
type FeedSnapshot struct {
	Name, Path   string
	SeqBefore    uint64
	State        string // the source state, as feed.status spells it
	SourceDone   bool   // CAUGHT_UP, WAITING_FOR_FILE or END_OF_STREAM
	Bounded      bool
	Policy       string
	Downgraded   uint64
	Oversized    uint64
	Unterminated int64
	LostTails    uint64
	LostBytes    uint64
	Paused       bool
	Pauses       uint64
	Epoch        uint64
	Detail       string // "" for none
	Subscribers  []SubscriberSnapshot
	PendingAcks  int64
	Acknowledged uint64
	Pointer      *PointerSnapshot // nil unless COMMITTED
	Base         LossCounters     // what DELETE /admin/losses/{feed} acknowledged
	SeqAfter     uint64
	Ledgered     bool          // the losses ledger holds an entry for the feed (DESIGN §7)
	Glob         *GlobSnapshot // a glob feed's files (nil: a single-file feed)
	// Carry is what the feed's earlier instances counted this run: a
	// reload that restarts a feed never resets its counters (DESIGN §12).
	Carry LossCounters
	// RemovedDeadLettered is the entries, counting for this feed, in the
	// dead-letter ledgers of processors the config no longer names: they
	// count in deadLettered (DESIGN §6: lossless false while any ledger is
	// non-empty).
	RemovedDeadLettered uint64
}

// SubscriberSnapshot is one subscriber queue.
type SubscriberSnapshot struct {
	Queue              string
	Position           uint64 // lines given to the queue (read before Dispatched)
	Dispatched         uint64 // its ack point; a best-effort queue's finished lines
	Depth              int    // lines waiting in the queue
	State              string
	BestEffort         bool   // does not hold the pointer
	Stalls             bool   // fenced or dead while holding the pointer
	StallReason        string // read with State
	Consumer           bool   // LIVE or RELEASED
	Dropped            uint64
	Refused            uint64
	CompletionFailures uint64
	Released           uint64
	DeadLettered       uint64 // entries now in the dead-letter ledger
}

// PointerSnapshot is a COMMITTED feed's pointer and commit state.
type PointerSnapshot struct {
	Offset         int64
	Epoch          uint64
	Commits        uint64
	CommitFailures uint64
	CommitOK       bool   // the last commit succeeded
	SyncedSeq      uint64 // the highest sequence a synced commit covers
}

// LossCounters are one feed's loss counters, summed over its subscribers.
type LossCounters struct {
	Dropped, Refused, CompletionFailures, Released, LostTails, LostBytes uint64
}

// Build applies the report's rules (DESIGN §7) to one feed's snapshot.
func Build(s FeedSnapshot) FeedReport {
	fr := header(s)
	holdingDrained, stalled := subscriberRows(&fr, s.Subscribers)
	fr.Dropped += s.Carry.Dropped
	fr.Refused += s.Carry.Refused
	fr.CompletionFailures += s.Carry.CompletionFailures
	fr.Released += s.Carry.Released
	fr.DeadLettered += s.RemovedDeadLettered
	fr.PendingAcks, fr.Acknowledged = s.PendingAcks, s.Acknowledged
	if len(stalled) > 0 {
		r := strings.Join(stalled, "; ")
		fr.Stalled = &r
	}
	committed := pointerRow(&fr, s.Pointer)
	subtractBase(&fr, s.Base)
	fr.Sequence = s.SeqAfter
	fr.Settled = s.SourceDone && holdingDrained && fr.PendingAcks == 0 && fr.Stalled == nil &&
		committed && s.SeqBefore == s.SeqAfter
	fr.Lossless = lossless(fr) && !s.Ledgered // DESIGN §7 "Losses outlive the run"
	fr.Glob = s.Glob
	return fr
}

// Combine is the whole document over its feeds' reports (without its
// version: see Versioner).
func Combine(feeds []FeedReport) Report {
	r := Report{Settled: true, Lossless: true, Feeds: feeds}
	if r.Feeds == nil {
		r.Feeds = []FeedReport{}
	}
	for _, fr := range feeds {
		r.Settled = r.Settled && fr.Settled
		r.Lossless = r.Lossless && fr.Lossless
	}
	return r
}

func header(s FeedSnapshot) FeedReport {
	fr := FeedReport{
		Feed:         s.Name,
		Path:         s.Path,
		State:        s.State,
		Bounded:      s.Bounded,
		Policy:       s.Policy,
		Downgraded:   s.Downgraded,
		Oversized:    s.Oversized,
		Unterminated: s.Unterminated,
		LostTails:    s.LostTails,
		LostBytes:    s.LostBytes,
		Paused:       s.Paused,
		Pauses:       s.Pauses,
		Epoch:        Hex(s.Epoch),
		Drained:      true,
		Subscribers:  make([]SubscriberReport, 0, len(s.Subscribers)),
	}
	if s.Detail != "" {
		d := s.Detail
		fr.Detail = &d
	}
	return fr
}

// subscriberRows adds one row per subscriber and sums their counters. A
// subscriber is drained when nothing is queued and nothing given to it is
// unfinished (a batch being processed has left the queue but is not
// done); the feed is settled only when every pointer-holding one is.
func subscriberRows(fr *FeedReport, subs []SubscriberSnapshot) (holdingDrained bool, stalled []string) {
	holdingDrained = true
	for _, s := range subs {
		sr := SubscriberReport{Queue: s.Queue, Position: s.Position, Dispatched: s.Dispatched, State: s.State}
		sr.Drained = sr.Dispatched >= sr.Position && s.Depth == 0
		if !s.BestEffort {
			holdingDrained = holdingDrained && sr.Drained
			if s.Stalls {
				stalled = append(stalled, s.StallReason)
			}
		}
		fr.Drained = fr.Drained && sr.Drained
		if s.Consumer {
			fr.Consumers++
		}
		fr.Dropped += s.Dropped
		fr.Refused += s.Refused
		fr.CompletionFailures += s.CompletionFailures
		fr.Released += s.Released
		fr.DeadLettered += s.DeadLettered
		fr.Subscribers = append(fr.Subscribers, sr)
	}
	return holdingDrained, stalled
}

// pointerRow reports a COMMITTED feed's pointer and whether its commits
// cover every acknowledged line (always true without a pointer).
func pointerRow(fr *FeedReport, p *PointerSnapshot) (committed bool) {
	if p == nil {
		return true
	}
	fr.Pointer = &PointerReport{Offset: p.Offset, Epoch: Hex(p.Epoch), Commits: p.Commits, CommitFailures: p.CommitFailures}
	return p.CommitOK && p.SyncedSeq >= fr.Acknowledged
}

// subtractBase reports this run's counters less what an operator
// acknowledged (DELETE /admin/losses/{feed}).
func subtractBase(fr *FeedReport, b LossCounters) {
	fr.Dropped, fr.Refused = Sub0(fr.Dropped, b.Dropped), Sub0(fr.Refused, b.Refused)
	fr.CompletionFailures, fr.Released = Sub0(fr.CompletionFailures, b.CompletionFailures), Sub0(fr.Released, b.Released)
	fr.LostTails, fr.LostBytes = Sub0(fr.LostTails, b.LostTails), Sub0(fr.LostBytes, b.LostBytes)
}

// lossless: no loss counted this run (less what was acknowledged) and no
// line in a dead-letter ledger.
func lossless(fr FeedReport) bool {
	return fr.Dropped == 0 && fr.Refused == 0 && fr.CompletionFailures == 0 && fr.Released == 0 &&
		fr.LostTails == 0 && fr.LostBytes == 0 && fr.DeadLettered == 0
}

// Sub0 is a-b, or 0 when b >= a.
func Sub0(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return 0
}
