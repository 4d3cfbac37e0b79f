package processor

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"tailfeed/feed"
)

// OnFailure is what a group does with a line whose retries ran out.
type OnFailure int

const (
	Hold       OnFailure = iota // keep retrying at the cap; the feed stalls; nothing lost
	DeadLetter                  // write the line to the ledger; it counts as processed
)

// DeadLetterer stores a line that exhausted its retries (dataDir/dlq).
type DeadLetterer interface {
	DeadLetter(d *feed.Delivery, attempts int, lastErr error) error
}

// GroupConfig configures a Group.
type GroupConfig struct {
	Name      string
	Queue     *feed.Queue
	Processor Processor      // may be nil when Batch is set
	Batch     BatchProcessor // optional
	Match     *regexp.Regexp // optional: only matching lines are processed
	Exclude   *regexp.Regexp // optional: matching lines are skipped
	// Skip finishes without processing, for each of its marks, the lines
	// of the mark's epoch at or before its position, until the first line
	// of that epoch that is not (a feed restarted by a reload re-reads
	// from its pointers: lines this subscriber finished, or that were
	// published before it was added, are not delivered again; a re-read
	// of an epoch without a mark, e.g. after a copytruncate, skips
	// nothing). One mark per epoch: a glob feed's streams interleave, and
	// each is re-read from its own pointer (DESIGN §10). A processor that
	// filters itself takes the marks (TakeSkips) and applies them.
	Skip      []feed.Mark
	Retry     Retry
	OnFailure OnFailure
	Ledger    DeadLetterer // required for DeadLetter
	Logger    hclog.Logger
	Wake      func() // pokes the feed's source when the ack point moved
	// OnRelease, optional, records lines of a positioned batch given up on
	// purpose (POST /admin/release) before the ack point passes them: the
	// lines of epoch from position after (the end of the line before the
	// first of them: the batch's Start, or its previous line's end),
	// through the one ending at through. The daemon keeps them, so that the
	// processor's done-through mark passes them at the next start (DESIGN
	// §11: its record advances over lines it was released from) when it
	// reaches after. Called on the group goroutine; for a sink with a
	// record (DoneThrougher) also by the publisher for lines refused to
	// the queue (feed.Queue.SetOnRefuse).
	OnRelease func(epoch uint64, after, through int64)
	// OnGiven, optional, for a sink with a record (DoneThrougher): told by
	// the publisher the range of each positioned batch given to the queue
	// (feed.Queue.SetOnAccept), so that a range OnRelease recorded that
	// those lines overlap is dropped.
	OnGiven func(epoch uint64, after, through int64)
}

// Group is one subscriber: it reads its queue on one goroutine and runs the
// processor on every line, in order. It is the only writer of the queue's
// dispatched counter, and (state.go) of its state and released counter.
type Group struct {
	retrying atomic.Bool // in retryWait's Flush: a sink's Unfence keeps the batch's fence

	cfg GroupConfig
	q   *feed.Queue
	log hclog.Logger

	// Only accessed from the run goroutine.
	view      feed.Batch // the filtered lines of the current batch
	subv      feed.Batch // a tail of view handed to ProcessBatch after a partial success
	cur       *feed.Batch
	idx       []int            // view index → batch index (when mapped)
	mapped    bool             // the view leaves lines of the batch out: idx maps it
	lines     [][]byte         // the view's lines when mapped
	ends      []int64          // and their positions
	dlq       *Ledger          // cfg.Ledger when it is a *Ledger: lines already in it are skipped
	ownFilter bool             // the processor filters by itself (pull): the view is always the whole batch
	skip      map[uint64]int64 // cfg.Skip's marks still applying, by epoch (until the first line of it past the mark)
	d         feed.Delivery
	mark      uint64 // queue count through the end of the current batch
	cpMark    uint64 // Mark(): queue count through the lines handed to the processor now
	stepFrom  int    // the view line the processor call in progress starts at
	stepEnd   int    // the view line after the last one it was given
	published uint64 // dispatched count published so far

	replays chan *replayReq // dead-letter replays, run between batches (dlq_replay.go)

	completionFailures atomic.Uint64
	failures           atomic.Uint64
	deadLettered       atomic.Uint64

	// Release (release.go): progress is the queue count of lines finished
	// so far; left is what the batch a panic interrupted still held;
	// replaying is the replay in progress (answered if it panics). All
	// run goroutine only.
	progress  uint64
	left      uint64
	replaying *replayReq
	releases  chan *ReleaseRequest
	stopping  atomic.Bool  // a release no longer restarts the run loop
	fate      atomic.Int32 // running, ended or abandoned (Abandon)

	// Shared with Abandon (another goroutine), under pubMu: sent is the
	// dispatched count given to the queue (published is the run
	// goroutine's own view of it), finished the batch's finished prefix
	// as the run goroutine last noted it (noteProgress), so that an
	// abandon publishes exactly what the group finished within its batch.
	pubMu    sync.Mutex
	sent     uint64
	finished uint64

	st subState // the fences and the queue's state (state.go)

	done chan struct{} // closed when the group's goroutine ended
}

// NewGroup makes a group; Start runs it.
func NewGroup(cfg GroupConfig) *Group {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Wake == nil {
		cfg.Wake = func() {}
	}
	if cfg.Retry.Attempts < 1 {
		cfg.Retry.Attempts = 1
	}
	dlq, _ := cfg.Ledger.(*Ledger)
	if cfg.Queue != nil && len(cfg.Skip) > 0 {
		cfg.Queue.SetPublishSkip(cfg.Skip) // a drop or refusal of a line it skips counts nothing
	}
	g := &Group{cfg: cfg, q: cfg.Queue, log: cfg.Logger.Named(cfg.Name), done: make(chan struct{}),
		releases: make(chan *ReleaseRequest), replays: make(chan *replayReq), dlq: dlq, skip: feed.MarksByEpoch(cfg.Skip)}
	g.recordRefusals()
	return g
}

// recordRefusals has the lines refused to a sink with a record
// (DoneThrougher) recorded as released ones are (OnRelease), so that its
// done-through mark passes them (feed.Queue.SetOnRefuse). Called when the
// processor is set, before anything publishes.
func (g *Group) recordRefusals() {
	if g.q == nil || g.cfg.OnRelease == nil {
		return
	}
	if _, ok := g.Sink().(DoneThrougher); ok {
		g.q.SetOnRefuse(g.cfg.OnRelease)
		if g.cfg.OnGiven != nil {
			g.q.SetOnAccept(g.cfg.OnGiven)
		}
	}
}

// SetBatchProcessor sets the processor after the group was made (a sink
// that takes the group as its Checkpoint). Call before Start.
func (g *Group) SetBatchProcessor(b BatchProcessor) { g.cfg.Batch = b; g.recordRefusals() }

// SetProcessor likewise sets a per-line processor.
func (g *Group) SetProcessor(p Processor) { g.cfg.Processor = p; g.recordRefusals() }

// Queue is the group's queue.
func (g *Group) Queue() *feed.Queue { return g.q }

// Name is the subscriber's name.
func (g *Group) Name() string { return g.cfg.Name }

// SkipMarks is the group's GroupConfig.Skip: where, per epoch, a feed
// restarted by a reload (or a subscriber added back) finishes the re-read
// without processing (none: nothing).
func (g *Group) SkipMarks() []feed.Mark { return g.cfg.Skip }

// SkipSet is a sink's own copy of marks by epoch, for a sink that applies
// them itself (TakeSkips): a line of epoch e at or before set[e] is
// finished unseen; the first line of e past it ends e's skip (Skips).
type SkipSet map[uint64]int64

// NewSkipSet makes a SkipSet of marks (nil: none).
func NewSkipSet(marks []feed.Mark) SkipSet { return SkipSet(feed.MarksByEpoch(marks)) }

// Skips reports whether the line of epoch ending at pos is finished
// unseen, and forgets the epoch's mark at its first line past it.
func (s SkipSet) Skips(epoch uint64, pos int64) bool {
	at, ok := s[epoch]
	if !ok {
		return false
	}
	if pos <= at {
		return true
	}
	delete(s, epoch)
	return false
}

// CompletionFailures counts completions given up after their retries.
func (g *Group) CompletionFailures() uint64 { return g.completionFailures.Load() }

// Failures counts failed processing attempts.
func (g *Group) Failures() uint64 { return g.failures.Load() }

// DeadLettered counts lines this run sent to the ledger.
func (g *Group) DeadLettered() uint64 { return g.deadLettered.Load() }

// Hold implements Checkpoint.
func (g *Group) Hold() { g.q.Hold() }

// Mark implements Checkpoint: the queue count through the last line handed
// to the processor in the current call (a single line in line mode, so a
// sink that syncs inline never reports later lines of the batch durable).
func (g *Group) Mark() uint64 { return g.cpMark }

// Finished implements Host: the batch processor call in progress finished
// its leading done lines and is about to wait out a failure inside the call
// (a sink retrying by itself): their dispatch count is published now, as
// the group publishes it at a fence of its own (DESIGN §6 "exactly at a
// stop or a fence"). It returns the queue count through them, the Mark() a
// processor holding the ack point passes to DurableThrough once they are
// durable. Only inside ProcessBatch, on the group goroutine.
func (g *Group) Finished(done int) uint64 {
	v := min(g.stepFrom+done, len(g.view.Lines))
	total := g.mark - uint64(g.cur.Len()) + uint64(g.origDone(v, g.cur.Len()))
	g.publish(total)
	return total
}

// DurableThrough implements Checkpoint.
func (g *Group) DurableThrough(mark uint64) {
	g.q.DurableThrough(mark)
	g.cfg.Wake()
}

// Start runs the group's goroutine until ctx is done; Done is closed when
// it returned. The goroutine supervises itself: a panic in the processor
// is recovered (the subscriber is quarantined DEAD, holding the pointer
// before the first line it did not finish), then the goroutine parks until
// a release (Release) gives the backlog up and it runs on, or ctx ends.
// There is never more than one goroutine per group, and no one else takes
// over its run state.
func (g *Group) Start(ctx context.Context) {
	go g.supervise(ctx)
}

func (g *Group) supervise(ctx context.Context) {
	var last *ReleaseRequest // a release answered after the goroutine ended (stopping)
	defer func() {
		if g.fate.CompareAndSwap(running, ended) {
			g.leftAtStop()
		}
		close(g.done)
		if last != nil {
			last.reply <- last.n
		}
	}()
	for g.runSafe(ctx) {
		req, ok := g.park(ctx)
		if !ok {
			return
		}
		req.n = g.releaseDead()
		if g.stopping.Load() {
			// Past Stopping nothing runs the processor again (it is being
			// closed): the release gives the backlog up, the goroutine ends.
			last = req
			return
		}
		req.reply <- req.n
	}
}

// Fates of a group's goroutine (Group.fate).
const (
	running   int32 = iota
	ended           // it returned
	abandoned       // the stop went on without it (Abandon)
)

// leftAtStop counts a best-effort queue's lines left unfinished at the stop
// (queued, or in the batch the group was in) as dropped.
func (g *Group) leftAtStop() {
	if q := g.q; q.BestEffort() && q.Position() > q.Finished() {
		q.LeftAtStop(q.Position() - q.Finished())
	}
}

// Abandon gives the group up: its context ended (the stop's bound
// expired) but its goroutine did not return, because the processor's
// call in progress does not (a sink that ignores its context and whose
// write never returns). Whoever stops the group goes on without it: it
// does not close the processor (the call may still use it) nor read the
// group's queue again. The lines the group did not finish stay unfinished
// (a pointer-holding subscriber holds the ack point before them: they are
// read again); a best-effort queue's count as dropped now. If the call
// returns after all, the group publishes what it finished and ends
// without calling the processor again. False: the goroutine ended
// meanwhile (Done is closed; nothing was abandoned).
//
// What the group finished within the batch it is in (a per-line
// processor's lines before the one whose call does not return; a batch
// processor's prefix it reported through Host.Finished) is published
// first, as at a fence (DESIGN §6 "exactly at a stop or a fence"), so the
// final commit stops exactly before the first line the subscriber did not
// finish.
func (g *Group) Abandon() bool {
	g.pubMu.Lock()
	if !g.fate.CompareAndSwap(running, abandoned) {
		g.pubMu.Unlock()
		return false
	}
	moved := g.finished > g.sent
	if moved {
		g.q.AddDispatched(g.finished - g.sent)
		g.sent = g.finished
	}
	g.pubMu.Unlock()
	if moved {
		g.cfg.Wake()
	}
	g.leftAtStop()
	return true
}

// noteProgress records the batch's finished prefix (the queue count
// through it) for an Abandon; on the run goroutine.
func (g *Group) noteProgress(p uint64) {
	g.pubMu.Lock()
	g.finished = p
	g.pubMu.Unlock()
}

// Abandoned reports whether Abandon gave the group up.
func (g *Group) Abandoned() bool { return g.fate.Load() == abandoned }

// runSafe runs the group until ctx ends (false), or until a panic in the
// processor, recovered here: the subscriber is quarantined DEAD (true).
func (g *Group) runSafe(ctx context.Context) (dead bool) {
	defer func() {
		if r := recover(); r != nil {
			g.recovered(r)
			dead = true
		}
	}()
	g.run(ctx)
	return false
}

// recovered quarantines the subscriber after the panic r: what it finished
// is published exactly (the hold sits before the first unfinished line),
// the interrupted batch is given back (left counts what it still held) and
// a replay under way is answered.
func (g *Group) recovered(r any) {
	g.publish(g.progress)
	if g.cur != nil {
		g.left = g.mark - g.published
		g.cur.Release()
		g.cur = nil
	}
	if rq := g.replaying; rq != nil {
		g.replaying = nil
		rq.reply <- replayReply{res: ReplayResult{Remaining: g.Ledgered()},
			err: fmt.Errorf("%w: subscriber %s died during the replay", ErrReplayIncomplete, g.cfg.Name)}
	}
	g.log.Error("processor panicked; subscriber quarantined", "panic", r)
	g.die(fmt.Sprintf("subscriber %s dead: panic: %v", g.cfg.Name, r))
}

// park waits, DEAD, for a release (true) or the end of ctx (false). A
// replay asked meanwhile is refused: the subscriber is not running.
func (g *Group) park(ctx context.Context) (*ReleaseRequest, bool) {
	for {
		select {
		case <-ctx.Done():
			return nil, false
		case req := <-g.releases:
			return req, true
		case req := <-g.replays:
			req.reply <- replayReply{res: ReplayResult{Remaining: g.Ledgered()},
				err: fmt.Errorf("subscriber %s is not running", g.cfg.Name)}
		}
	}
}

// Done is closed when the group's goroutine ended (its context is done).
func (g *Group) Done() <-chan struct{} { return g.done }

func (g *Group) run(ctx context.Context) {
	fl := g.flusher()
	var timer *time.Timer
	for {
		b := g.q.TryPopSpin() // polls briefly before parking: see feed.spinFor
		if b == nil {
			var due <-chan time.Time
			if fl != nil {
				if at, ok := fl.FlushDue(); ok {
					if d := time.Until(at); d <= 0 {
						g.flush(ctx, fl)
						if ctx.Err() != nil || g.gone() {
							return // a flush still failing at the stop stays due: do not spin on it
						}
						continue
					} else {
						if timer == nil {
							timer = time.NewTimer(d)
						} else {
							timer.Reset(d)
						}
						due = timer.C
					}
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-due:
				g.flush(ctx, fl)
			case <-g.readyWait():
			case req := <-g.replays:
				g.replay(ctx, req)
			}
			if g.gone() {
				return
			}
			continue
		}
		ok := g.handle(ctx, b)
		b.Release()
		g.cur = nil
		if !ok || g.gone() {
			return
		}
		g.pollReplay(ctx) // between batches, also while busy
		if g.gone() {
			return
		}
		if fl != nil {
			if at, due := fl.FlushDue(); due && !time.Now().Before(at) {
				g.flush(ctx, fl)
				if g.gone() {
					return
				}
			}
		}
	}
}

// gone reports whether the stop went on without the group (Abandon): the
// processor is never called again, so every call into it is followed by
// this check (a call the group was abandoned in may return after all).
func (g *Group) gone() bool { return g.fate.Load() == abandoned }

func (g *Group) readyWait() <-chan struct{} { return g.q.Ready() }

// flush runs a processor's deferred work, retrying (fenced) until it works.
func (g *Group) flush(ctx context.Context, fl Flusher) {
	for attempt := 1; ; attempt++ {
		err := fl.Flush(ctx)
		if g.gone() {
			return // abandoned in the call: never called again (run returns)
		}
		if err == nil {
			g.unfence()
			return
		}
		if ctx.Err() != nil {
			return
		}
		g.fence(err)
		rel, ok := g.backoff(ctx, attempt)
		if !ok {
			return
		}
		if rel != nil {
			g.giveUpUnsynced(rel)
			return
		}
	}
}

// retryWait is backoff between two attempts of a batch, during which the
// processor's deferred work still runs when it falls due (DESIGN §6: an
// fsync interval syncs "even if no more lines come"), so that the lines
// finished before the failing one become durable, and the ack point passes
// them, however long the retries or the hold last. Flush runs here on the
// group goroutine, between two calls, as between batches; the fence stays
// the batch's. A flush that fails (its durable mark stays where it was) or
// is still due after it ran is not tried again in this wait: the next
// attempt repairs what it left (a rewrite) and the next wait flushes again.
func (g *Group) retryWait(ctx context.Context, attempt int) (*ReleaseRequest, bool) {
	end := time.Now().Add(g.cfg.Retry.Backoff(attempt))
	fl := g.flusher()
	for flushed := false; fl != nil; flushed = true {
		at, due := fl.FlushDue()
		if !due || !at.Before(end) || flushed && !at.After(time.Now()) {
			break
		}
		if rel, ok := g.Wait(ctx, time.Until(at)); rel != nil || !ok {
			return rel, ok
		}
		g.retrying.Store(true)
		err := fl.Flush(ctx)
		g.retrying.Store(false)
		if g.gone() {
			return nil, false // abandoned in the call: never called again
		}
		if err != nil && ctx.Err() == nil {
			g.log.Warn("deferred flush failed while retrying a batch; tried again at the next wait", "error", err)
		}
	}
	return g.Wait(ctx, time.Until(end))
}

// flusher is the processor's Flusher (nil: it has no deferred work).
func (g *Group) flusher() Flusher {
	if fl, ok := g.cfg.Processor.(Flusher); ok {
		return fl
	}
	fl, _ := g.cfg.Batch.(Flusher)
	return fl
}

// handle processes one batch; false when the group must stop.
func (g *Group) handle(ctx context.Context, b *feed.Batch) bool {
	base := g.published
	g.mark = base + uint64(b.Len())
	g.cur = b
	g.progress = base
	g.noteProgress(base)
	g.filter(b)
	vdone := 0 // leading view lines finished
	attempt := 1
	lineMode := false
	// finished is the batch's finished prefix: the lines a view left empty
	// by the filters count only once the processor took the empty batch
	// (until then a fence holds them).
	finished := func() uint64 {
		if len(g.view.Lines) == 0 {
			return base
		}
		return base + uint64(g.origDone(vdone, b.Len()))
	}
	for vdone < len(g.view.Lines) || (vdone == 0 && len(g.view.Lines) == 0 && g.cfg.Batch != nil) {
		n, err := g.step(ctx, vdone, attempt, lineMode)
		vdone += n
		g.progress = finished()
		g.noteProgress(g.progress)
		if g.gone() {
			// The stop went on without the group: no further call.
			g.publish(g.progress)
			return false
		}
		if err == nil {
			if n > 0 || len(g.view.Lines) == 0 {
				attempt = 1
			}
			if len(g.view.Lines) == 0 {
				break
			}
			continue
		}
		if ctx.Err() != nil {
			g.publish(finished())
			return false
		}
		g.failures.Add(1)
		if n > 0 {
			attempt = 1
		}
		g.publish(finished()) // exact at a fence
		g.fence(err)
		if attempt >= g.cfg.Retry.Attempts {
			if !lineMode && g.cfg.Batch != nil && len(g.view.Lines)-vdone > 1 {
				lineMode = true // find the failing line
				attempt = 1
				continue
			}
			// Only a line can be dead-lettered: a failure on an empty view
			// (a batch the filters emptied) or past its last line holds, and
			// so does a fatal one (the sink's output is in an unknown state:
			// the fault is the sink's, not the line's).
			if g.cfg.OnFailure == DeadLetter && g.cfg.Ledger != nil && vdone < len(g.view.Lines) && !errors.Is(err, ErrFatal) {
				if g.deadLetter(ctx, b, vdone, attempt, err) {
					vdone++
					g.progress = base + uint64(g.origDone(vdone, b.Len())) // in the ledger: processed
					g.noteProgress(g.progress)
					g.passed(ctx)
					if g.gone() {
						g.publish(g.progress)
						return false
					}
					attempt = 1
					continue
				}
				if ctx.Err() != nil {
					return false
				}
			}
			// hold: keep retrying at the cap.
		}
		rel, ok := g.retryWait(ctx, attempt)
		if !ok {
			return false
		}
		if rel != nil {
			if vdone >= len(g.view.Lines) {
				rel.reply <- 0
				break
			}
			vdone = g.abandon(b, base, vdone, rel)
			g.passed(ctx)
			if g.gone() {
				return false
			}
			attempt = 1
			continue
		}
		attempt++
	}
	// Live first: once the ack point moves past the batch nothing is left
	// for a fence to hold (a report would show it stalled, and a refused
	// TryPublish would count as a pause).
	g.unfence()
	g.publish(base + uint64(b.Len()))
	return true
}

// noteRelease reports the view's lines first through last (inclusive),
// given up on purpose, to OnRelease.
func (g *Group) noteRelease(first, last int) {
	if g.cfg.OnRelease == nil || !g.view.Positioned || first < 0 || last < first || last >= len(g.view.Lines) {
		return
	}
	after := int64(-1)
	switch {
	case first > 0:
		after = g.view.Ends[first-1]
	case g.cur != nil && g.cur.Start >= 0:
		after = g.cur.Start // lines of the batch before the view's first were filtered: finished without it
	}
	if after < 0 {
		return // a batch with no Start (not from the source): nothing to compare a mark with
	}
	g.cfg.OnRelease(g.view.Epoch, after, g.view.Ends[last])
}

// passed tells a batch processor that the lines through g.progress were
// finished without it (dead-lettered or released): it gets an empty batch
// whose Mark() is the queue count through them, as for a batch its filters
// emptied, so that a processor holding the ack point lets its durable mark
// pass them once everything before them is durable. An error is only
// logged: the lines are finished, and the next batch carries a later mark.
func (g *Group) passed(ctx context.Context) {
	if g.cfg.Batch == nil {
		return
	}
	g.cpMark = g.progress
	e := &g.subv
	through := g.progress - (g.mark - uint64(g.cur.Len())) // the batch's lines finished
	*e = feed.Batch{Feed: g.view.Feed, Path: g.view.Path, Epoch: g.view.Epoch, Positioned: g.view.Positioned,
		FirstSeq: g.cur.FirstSeq + through} // the next line's sequence (never 0)
	if through > 0 && g.cur.Positioned {
		e.Through = g.cur.Ends[through-1]
	}
	if _, err := g.cfg.Batch.ProcessBatch(ctx, e); err != nil {
		g.log.Warn("processor could not note lines finished without it", "error", err)
	}
}

// step runs the processor once from view line from; it returns the lines
// finished (including their completions).
func (g *Group) step(ctx context.Context, from, attempt int, lineMode bool) (int, error) {
	end := len(g.view.Lines)
	if lineMode || g.cfg.Batch == nil {
		end = from + 1
	}
	g.cpMark = g.mark - uint64(g.cur.Len()) + uint64(g.origDone(end, g.cur.Len()))
	g.stepFrom, g.stepEnd = from, end
	if g.cfg.Batch != nil {
		sub := g.sub(from, lineMode)
		return g.cfg.Batch.ProcessBatch(ctx, sub)
	}
	g.d.Reset(&g.view, from)
	g.d.Sequence = g.cur.FirstSeq + uint64(g.origDone(from, g.cur.Len()))
	g.d.Attempt = attempt
	if err := g.cfg.Processor.Process(ctx, &g.d); err != nil {
		return 0, err
	}
	// By index: a completion may register follow-up completions; they run
	// too, in order, before the line counts as dispatched.
	for i := 0; i < len(g.d.Completions()); i++ {
		if g.gone() {
			// Abandoned in the call: the processor's completions are not
			// run (the line is not finished; handle ends the group).
			g.d.ClearCompletions()
			return 0, nil
		}
		if !g.complete(ctx, g.d.Completions()[i]) {
			g.d.ClearCompletions()
			return 0, ctx.Err() // stopped: the line is not finished
		}
	}
	g.d.ClearCompletions()
	return 1, nil
}

// complete runs a completion under the retry policy; when it keeps failing
// it is given up and counted (the line still counts as dispatched). A stop
// before it succeeded or ran out of attempts gives nothing up: it returns
// false, the line does not count as dispatched and comes again after a
// restart (at-least-once), and nothing is counted.
func (g *Group) complete(ctx context.Context, c func() error) bool {
	for attempt := 1; ; attempt++ {
		err := c()
		if err == nil {
			return true
		}
		if ctx.Err() != nil || g.gone() {
			return false
		}
		if attempt >= g.cfg.Retry.Attempts {
			g.completionFailures.Add(1)
			g.q.NoteLoss()
			g.log.Error("completion given up", "error", err, "attempts", attempt)
			return true
		}
		if !sleep(ctx, g.cfg.Retry.Backoff(attempt)) {
			return false
		}
	}
}

func (g *Group) deadLetter(ctx context.Context, b *feed.Batch, vdone, attempts int, lastErr error) bool {
	g.d.Reset(&g.view, vdone)
	g.d.Sequence = b.FirstSeq + uint64(g.origDone(vdone, b.Len()))
	g.d.Attempt = attempts
	if err := g.cfg.Ledger.DeadLetter(&g.d, attempts, lastErr); err != nil {
		g.log.Error("dead-letter write failed; holding", "error", err)
		return false
	}
	g.deadLettered.Add(1)
	g.log.Warn("line dead-lettered", "position", g.d.Position, "error", lastErr)
	return true
}

// sub returns the view from line from (one line in line mode). It reuses the
// view's header, so it is valid until the next call.
func (g *Group) sub(from int, lineMode bool) *feed.Batch {
	if from == 0 && !lineMode {
		return &g.view
	}
	s := &g.subv
	*s = feed.Batch{Feed: g.view.Feed, Path: g.view.Path, Epoch: g.view.Epoch, Positioned: g.view.Positioned,
		FirstSeq: g.cur.FirstSeq + uint64(g.origDone(from, g.cur.Len()))} // Lines[0]'s sequence
	end := len(g.view.Lines)
	if lineMode {
		end = from + 1
	}
	s.Lines = g.view.Lines[from:end]
	s.Ends = g.view.Ends[from:end]
	if g.mapped {
		s.Through = g.throughOf(end)
	}
	return s
}

// filter builds the view of b's lines the processor must see: all of them
// but those its filters skip and those already in its dead-letter ledger (a
// dead letter delivered again after a crash is processed: see dlq.go).
func (g *Group) filter(b *feed.Batch) {
	var led map[int64]bool
	if g.dlq != nil && !g.ownFilter {
		led = g.dlq.Within(b) // nil (one atomic load) while the ledger holds no positioned entry
	}
	skip := int64(-1) // lines at or before skip are finished unseen
	if len(g.skip) > 0 && !g.ownFilter && b.Len() > 0 && b.Positioned {
		if at, ok := g.skip[b.Epoch]; ok {
			if b.Ends[0] <= at {
				skip = at
			} else {
				delete(g.skip, b.Epoch) // the re-read of this epoch is past what it finished
			}
		}
	}
	if g.cfg.Match == nil && g.cfg.Exclude == nil && led == nil && skip < 0 {
		g.view.Share(b) // all lines, and the buffer a sink may write at once
		g.idx = g.idx[:0]
		g.mapped = false
		return
	}
	lines, ends, idx := g.lines[:0], g.ends[:0], g.idx[:0]
	for i, l := range b.Lines {
		if b.Ends[i] <= skip {
			continue
		}
		if led[b.Ends[i]] {
			continue
		}
		if g.cfg.Match != nil && !g.cfg.Match.Match(l) {
			continue
		}
		if g.cfg.Exclude != nil && g.cfg.Exclude.Match(l) {
			continue
		}
		lines = append(lines, l)
		ends = append(ends, b.Ends[i])
		idx = append(idx, i)
	}
	g.lines, g.ends, g.idx, g.mapped = lines, ends, idx, true
	// Its own slices: a view shared with the previous batch must not be
	// appended to (that batch went back to the pool).
	g.view = feed.Batch{Feed: b.Feed, Path: b.Path, Epoch: b.Epoch, Positioned: b.Positioned, FirstSeq: b.FirstSeq,
		Lines: lines, Ends: ends}
	g.view.Through = g.throughOf(len(lines))
}

// throughOf is the position after the batch's last line finished once the
// view's first vend lines are (filtered lines after them included): a
// view's Through (DESIGN §11: a stored record advances over lines finished
// without the sink). 0 for a batch without positions or lines.
func (g *Group) throughOf(vend int) int64 {
	b := g.cur
	if b == nil || !b.Positioned {
		return 0
	}
	n := g.origDone(vend, b.Len())
	if n == 0 {
		return 0
	}
	return b.Ends[n-1]
}

// origDone maps finished view lines to the finished prefix of the batch.
func (g *Group) origDone(vdone, n int) int {
	if !g.mapped {
		return vdone
	}
	if vdone < len(g.idx) {
		return g.idx[vdone]
	}
	return n
}

func (g *Group) publish(total uint64) {
	if total <= g.published {
		return
	}
	g.pubMu.Lock()
	if total > g.sent { // an Abandon may have published part of it
		g.q.AddDispatched(total - g.sent)
		g.sent = total
	}
	g.pubMu.Unlock()
	g.published = total
	g.cfg.Wake()
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// ErrFatal marks an error after which a processor cannot go on (e.g. a
// failed truncate left its output in an unknown state).
var ErrFatal = errors.New("processor: fatal")
