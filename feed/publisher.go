package feed

import (
	"cmp"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"tailfeed/overload"
)

// Publisher numbers a feed's batches, hands them to every subscriber queue
// under its overload policy, and keeps the acknowledgement window. All its
// methods are called from the feed's source goroutine only; the atomics it
// exposes may be read by anyone (the status report).
type Publisher struct {
	Feed   string
	Queues []*Queue

	maxPending int
	win        *window
	wake       chan struct{}

	start, end []uint64 // scratch per queue
	ackPts     []uint64
	holds      []bool

	// Pause reasons, made once: a refused publish allocates nothing.
	whyWindow           string
	whyStalled, whyFull []string

	seq     atomic.Uint64 // last sequence published (0 = none)
	acked   atomic.Uint64 // last sequence acknowledged by every holding queue
	pending atomic.Int64  // lines awaiting acknowledgement
	paused  atomic.Bool
	pauses  atomic.Uint64
	reason  atomic.Pointer[string] // why the feed is paused now (for logs)
	since   atomic.Int64           // when the current pause began (unix nanos; 0 = running)

	pausedNanos atomic.Int64 // time spent in finished pauses (nanoseconds)

	barrier atomic.Uint64 // the epoch the source waits to start at an epoch barrier (0 = none)
	fullAt  atomic.Uint64 // the acknowledged sequence at the last refusal for a full window

	held atomic.Bool // a removed subscriber holds the pointer: nothing is acknowledged (SetHeld)

	// stop ends a waiting policy's wait for room (StopWaits); stopped says
	// a wait ended so (source goroutine only).
	stop     <-chan struct{}
	stopped  bool
	waitHeld bool                // a wait for room ended because its subscriber holds the feed (source goroutine only)
	dec      []overload.Decision // scratch per queue

	// Epochs a processor waits for (Want), counted; any goroutine.
	wantMu sync.Mutex
	wanted map[uint64]int
	// What the source says of an epoch (SetEpochInfo; nil: nothing).
	epochInfo atomic.Pointer[func(uint64) EpochInfo]

	// lossSync makes the losses counted so far durable (SetLossSync). The
	// rest is PollAcks' (source goroutine only, or under the glob's mux
	// lock): lossSynced is the sum of the queues' lossGen last made
	// durable; lossFlight the sum a running sync (lossDone) covers;
	// lossRetry when a sync may start again after a failed one.
	lossSync   LossSync
	lossSynced uint64
	lossFlight uint64
	lossOwed   bool // a loss from before this publisher may not be durable yet (OweLossSync)
	lossOwing  bool // the running sync started while lossOwed
	lossBusy   bool
	lossDone   chan error
	lossRetry  time.Time

	// The last positioned line published and acknowledged (source
	// goroutine only; read by Through once the source stopped).
	lastPub, lastAck Mark
}

// Mark is a line's place in its file: the position just after it in
// epoch Epoch (OK false: none).
type Mark struct {
	Epoch    uint64
	Position int64
	OK       bool
}

// NewPublisher makes a publisher over queues with a window of at most
// maxPending lines (a batch of up to maxBatch lines is still accepted into an
// empty window).
func NewPublisher(feed string, queues []*Queue, maxPending, maxBatch int) *Publisher {
	nq := len(queues)
	p := &Publisher{
		Feed:       feed,
		Queues:     queues,
		maxPending: maxPending,
		win:        newWindow(nq, maxPending+maxBatch),
		wake:       make(chan struct{}, 1),
		start:      make([]uint64, nq),
		end:        make([]uint64, nq),
		ackPts:     make([]uint64, nq),
		holds:      make([]bool, nq),
		dec:        make([]overload.Decision, nq),
		whyWindow:  "window full",
	}
	for _, q := range queues {
		q.notify = p.wake
		p.whyStalled = append(p.whyStalled, "subscriber "+q.Name+" stalled")
		p.whyFull = append(p.whyFull, "queue "+q.Name+" full")
	}
	return p
}

// Wake is poked when a batch leaves a queue (room freed) and by the groups
// when they finish work (ack point moved). The source waits on it.
func (p *Publisher) Wake() chan struct{} { return p.wake }

// Poke wakes the source (non-blocking).
func (p *Publisher) Poke() { poke(p.wake) }

// TryPublish offers b to every queue. It returns false, and leaves b to the
// caller untouched (nothing numbered, queued or dropped), when the window is
// full, a pointer-holding subscriber is fenced or dead, or a PAUSE queue has
// no room (after polling up to spinFor for its group to take a batch: a
// streaming source then hardly ever parks). Otherwise it numbers the lines, queues the batch (or, per policy,
// drops or refuses it for a queue) and records the window entry; from then on
// the batch belongs to the queues.
func (p *Publisher) TryPublish(b *Batch) bool {
	n, nb := b.Len(), b.Bytes()
	if n == 0 {
		return true
	}
	past := false // an awaited epoch's batch past a full window: the feed stays paused for the others
	if pend := int(p.pending.Load()); pend > 0 && pend+n > p.maxPending {
		if past = p.wantedBatch(b); !past {
			p.fullAt.Store(p.acked.Load())
			return p.pause(&p.whyWindow)
		}
	}
	for i, q := range p.Queues {
		if q.Stalling() {
			return p.pause(&p.whyStalled[i])
		}
	}
	// PAUSE queues first: a refusal must leave every queue untouched.
	for i, q := range p.Queues {
		if q.Gate.Policy.Kind == overload.Pause && !q.roomSpin(n, nb) {
			return p.pause(&p.whyFull[i])
		}
	}
	if !past {
		p.resume()
	}
	// Decide for every queue before counting anything: a wait for room
	// that the feed's stop ends (StopWaits) leaves b to the caller, nothing
	// numbered, queued, dropped or refused — its lines are read again by
	// the next run, not lost by the stop.
	waited := false
	for i, q := range p.Queues {
		p.dec[i] = overload.Accept
		if q.Gate.Policy.Kind != overload.Pause {
			p.dec[i] = q.Gate.Admit(q.HasRoom(n, nb), func(deadline time.Time) bool {
				waited = true
				return p.waitRoom(q, n, nb, deadline, &p.whyFull[i])
			})
			if p.stopped {
				return false
			}
			if p.waitHeld {
				// Fenced or dead while the batch waited: a hold, not a
				// refusal (DESIGN §5 Holds) — nothing counted, the
				// feed paused with the reason, the batch kept.
				p.waitHeld = false
				return p.pause(&p.whyStalled[i])
			}
		}
	}
	if waited && !past {
		p.resume() // the wait was a pause (waitRoom): the feed reads on
	}
	b.FirstSeq = p.seq.Load() + 1
	var take int32
	decisions := p.ackPts // reuse as scratch: 1 = accept
	for i, q := range p.Queues {
		p.start[i] = q.Position()
		q.noteOld(b) // given again, queued or counted dropped or refused below
		switch p.dec[i] {
		case overload.Accept:
			decisions[i] = 1
			take++
			if q.onAccept != nil && b.Positioned && b.Start >= 0 {
				if k := q.skipped(b); k < n {
					from := b.Start
					if k > 0 {
						from = b.Ends[k-1]
					}
					q.onAccept(b.Epoch, from, b.Ends[n-1])
				}
			}
		case overload.Drop:
			decisions[i] = 0
			if k := n - q.skipped(b); k > 0 { // a line its group skips is finished, not lost
				q.Counters.Dropped.Add(uint64(k))
				q.NoteLoss()
			}
		case overload.Skip:
			decisions[i] = 0
			if k := n - q.skipped(b); k > 0 {
				q.Counters.Refused.Add(uint64(k))
				q.NoteLoss()
				if q.onRefuse != nil && b.Positioned && b.Start >= 0 {
					q.onRefuse(b.Epoch, b.Start, b.Ends[n-1])
				}
			}
		}
		p.end[i] = p.start[i] + decisions[i]*uint64(n)
	}
	// Everything that reads b happens before the first push: once queued,
	// a group may finish and recycle the batch at any moment.
	last := b.FirstSeq + uint64(n) - 1
	if b.Positioned {
		p.lastPub = Mark{Epoch: b.Epoch, Position: b.Ends[n-1], OK: true}
	}
	p.win.push(b, p.start, p.end)
	p.pending.Add(int64(n))
	if take == 0 {
		b.refs.Store(1)
		b.Release()
	} else {
		b.Retain(take)
		for i, q := range p.Queues {
			if decisions[i] == 1 {
				q.push(b, n, nb)
			}
		}
	}
	p.seq.Store(last)
	return true
}

// pause records a pause; why is never modified after it is stored.
func (p *Publisher) pause(why *string) bool {
	if !p.paused.Load() {
		p.pauses.Add(1)
		p.since.Store(time.Now().UnixNano())
		p.paused.Store(true)
	}
	if p.reason.Load() != why {
		p.reason.Store(why)
	}
	return false
}

// waitRoom waits until q has room for a batch or deadline passes. The
// source reads nothing meanwhile: the feed is paused (why) for the wait —
// a slow subscriber makes the feed paused, not stalled (DESIGN §7). The
// feed's stop ends the wait at once (stopped; no room).
func (p *Publisher) waitRoom(q *Queue, n, nb int, deadline time.Time, why *string) bool {
	if q.HasRoom(n, nb) {
		return true
	}
	p.pause(why)
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	// A subscriber that turns fenced or dead while the batch waits holds
	// the feed (its lines are not refused): looked at every stallLook.
	look := time.NewTicker(stallLook)
	defer look.Stop()
	for {
		if q.HasRoom(n, nb) {
			return true
		}
		if q.Stalling() { // (never a best-effort queue: Stalls)
			p.waitHeld = true
			return false
		}
		select {
		case <-q.Room():
		case <-look.C:
		case <-t.C:
			if q.HasRoom(n, nb) {
				return true
			}
			p.waitHeld = q.Stalling()
			return false
		case <-p.stop:
			p.stopped = true
			return false
		}
	}
}

// stallLook is how often a wait for room looks whether its subscriber
// turned fenced or dead (a hold ends the wait).
const stallLook = 10 * time.Millisecond

// StopWaits makes done end every wait for room (BLOCK_WITH_DEADLINE's
// deadline, DROP_AFTER_SPIN's spin) once it is closed: the feed's stop
// (SIGTERM, a reload) does not wait them out, and the batch waiting is
// neither refused nor dropped — TryPublish returns false and the source,
// stopping, leaves its lines to the next run. Call before the source runs.
func (p *Publisher) StopWaits(done <-chan struct{}) { p.stop = done }

// LossSync makes every loss counted so far (the queues' and groups' loss
// counters) durable: written to the losses ledger and fsynced (DESIGN §7
// "Losses outlive the run"). nil: done. Safe for concurrent use.
type LossSync func() error

// SetLossSync makes PollAcks wait for sync before it acknowledges lines
// whenever a queue noted a loss since the last sync that succeeded, and
// Queue.AddReleased call it before it returns: the pointer never commits
// past a lost line, nor is a release or purge answered, before the loss is
// in the ledger. The sync runs on a goroutine of its own, one at a time
// (as the pointer's msync): the source reads and publishes on meanwhile,
// and one sync covers every loss noted before it started (a drop burst
// costs one fsync per sync, not one per batch); it pokes Wake when done.
// Call it before anything runs.
func (p *Publisher) SetLossSync(sync LossSync) {
	p.lossSync = sync
	p.lossDone = make(chan error, 1)
	for _, q := range p.Queues {
		q.lossSync = sync
	}
}

// LossCount counts n lines of subscriber sub released (apply) and makes
// the count durable as LossSync does, with no other sync in between; when
// the ledger did not take the count (its write failed, or its fsync did and
// the entry could be taken out again), it calls undo and returns the error.
// On success takeBack, called later, takes the count back out of the ledger
// and calls undo (the caller could not give the lines up after all: a
// purge whose dead-letter rewrite failed); it returns an error, the count
// kept, when it cannot. Safe for concurrent use.
type LossCount func(sub string, n uint64, apply, undo func()) (takeBack func() error, err error)

// SetLossCount is what Queue.AddReleased counts a refusable loss through
// (a purge). Call it before anything runs.
func (p *Publisher) SetLossCount(c LossCount) {
	for _, q := range p.Queues {
		q.lossCount = c
	}
}

// lossRetryGap is how long a failed loss sync waits before the next.
const lossRetryGap = 100 * time.Millisecond

// OweLossSync makes PollAcks acknowledge nothing until a LossSync that
// started after this call succeeded, whatever the queues noted: losses
// counted before this publisher (a feed's earlier instance, stopped by a
// reload while the ledger failed) may not be durable yet, and the lines
// this one re-reads include theirs. Call it before anything runs.
func (p *Publisher) OweLossSync() { p.lossOwed = true }

// SyncLosses makes every loss the queues noted so far durable, waiting
// until by at most (after the sync in flight, if any, ended), and on
// success lets PollAcks acknowledge past them without another sync: the
// final commit at a stop, which a sync started by PollAcks itself would
// leave behind. A ledger whose fsync hangs does not hang the stop: past by
// it returns ErrLossSyncTimeout, the sync left running, and nothing is
// acknowledged past the losses. Call it only while nothing polls (the
// source stopped; a glob's mux: under its lock).
func (p *Publisher) SyncLosses(by time.Time) error {
	if p.lossBusy {
		if done, _ := p.awaitLossSync(by); !done {
			return ErrLossSyncTimeout
		}
	}
	gen := p.lossGen()
	if gen == p.lossSynced && !p.lossOwed {
		return nil
	}
	if p.lossSync == nil {
		p.lossSynced, p.lossOwed = gen, false
		return nil
	}
	p.startLossSync(gen)
	done, err := p.awaitLossSync(by)
	if !done {
		return ErrLossSyncTimeout
	}
	return err
}

// ErrLossSyncTimeout: SyncLosses gave up waiting for the losses ledger.
var ErrLossSyncTimeout = errors.New("losses ledger: sync did not finish in time")

// startLossSync runs the LossSync on a goroutine of its own, covering the
// loss generation gen (lossDone receives its result).
func (p *Publisher) startLossSync(gen uint64) {
	p.lossBusy, p.lossFlight, p.lossOwing = true, gen, p.lossOwed
	go func(sync LossSync, done chan<- error) {
		done <- sync()
		p.Poke()
	}(p.lossSync, p.lossDone)
}

// awaitLossSync takes the result of the sync in flight, waiting until by
// at most; done false: it did not finish (still in flight).
func (p *Publisher) awaitLossSync(by time.Time) (done bool, err error) {
	t := time.NewTimer(time.Until(by))
	defer t.Stop()
	select {
	case err := <-p.lossDone:
		p.lossDoneWith(err)
		return true, err
	case <-t.C:
		return false, nil
	}
}

// lossGen is the sum of the queues' loss generations.
func (p *Publisher) lossGen() uint64 {
	var gen uint64
	for _, q := range p.Queues {
		gen += q.lossGen.Load()
	}
	return gen
}

// lossDoneWith takes the result of the sync in flight.
func (p *Publisher) lossDoneWith(err error) {
	p.lossBusy = false
	if err != nil {
		p.lossRetry = time.Now().Add(lossRetryGap)
		time.AfterFunc(lossRetryGap, p.Poke)
		return
	}
	p.lossSynced = p.lossFlight
	if p.lossOwing {
		p.lossOwed = false
	}
}

// lossesDurable reports whether every loss the queues noted is durable;
// when some is not, it starts a sync (if none runs) and reports false.
// Called after the ack points were read: a loss is noted before the ack
// point passes its lines, so a moved ack point read before shows its loss
// here.
func (p *Publisher) lossesDurable() bool {
	gen := p.lossGen()
	if gen == p.lossSynced && !p.lossOwed {
		return true
	}
	if p.lossSync == nil {
		p.lossSynced, p.lossOwed = gen, false
		return true
	}
	if p.lossBusy {
		select {
		case err := <-p.lossDone:
			p.lossDoneWith(err)
		default:
		}
	}
	if gen == p.lossSynced && !p.lossOwed {
		return true
	}
	if !p.lossBusy && !time.Now().Before(p.lossRetry) {
		p.startLossSync(gen)
	}
	return false
}

// Acked is the result of PollAcks.
type Acked struct {
	Seq        uint64 // highest sequence acknowledged by every holding queue
	Position   int64  // position to commit, valid when Positioned
	Epoch      uint64
	Positioned bool
	Moved      bool
}

// PollAcks reads the ack point of every pointer-holding queue and
// acknowledges the window entries they all passed, once the losses counted
// so far are durable (SetLossSync): until the sync they wait for is done,
// it acknowledges nothing (the pointer stays; while the ledger cannot be
// written the feed fills its window and pauses).
func (p *Publisher) PollAcks() Acked {
	if p.held.Load() {
		return Acked{Seq: p.acked.Load()}
	}
	for i, q := range p.Queues {
		p.holds[i] = !q.BestEffort()
		p.ackPts[i] = q.AckPoint()
	}
	if !p.lossesDurable() {
		return Acked{Seq: p.acked.Load()}
	}
	a := p.win.poll(p.ackPts, p.holds)
	if a.positioned {
		p.lastAck = Mark{Epoch: a.epoch, Position: a.pos, OK: true}
	}
	if a.moved {
		p.acked.Store(a.seq)
		p.pending.Store(int64(p.win.pending))
	}
	return Acked{Seq: a.seq, Position: a.pos, Epoch: a.epoch, Positioned: a.positioned, Moved: a.moved}
}

// Through is the mark of the last line queue i was given among its first
// count (count 0: none), or of every line published when i < 0. Call it
// only once the source stopped publishing and polling (a feed stopped by a
// reload). A count inside the acknowledged lines gives the last
// acknowledged mark; a line without a position gives no mark.
func (p *Publisher) Through(i int, count uint64) Mark {
	if i < 0 {
		return p.lastPub
	}
	w := p.win
	if count == 0 {
		return Mark{}
	}
	for k := w.n - 1; k >= 0; k-- {
		j := (w.head + k) % len(w.entries)
		e := w.entries[j]
		start, end := w.bounds[j*2*w.nq+i], w.bounds[j*2*w.nq+w.nq+i]
		if end == start || count <= start {
			continue
		}
		if count > end {
			// Past what the window holds for i: every line it was given.
			count = end
		}
		if !e.positioned {
			return Mark{}
		}
		seq := e.firstSeq + (count - start) - 1
		return Mark{Epoch: e.epoch, Position: w.ends[seq%uint64(len(w.ends))], OK: true}
	}
	return p.lastAck
}

// Marks is Through per epoch: for every epoch, the place of the last line
// of it among the first count lines queue i was given (every line
// published when i < 0), sorted by epoch. Lines below the window count by
// the last acknowledged line of each epoch (of the epochs acknowledged
// lately: window.acked). A feed whose lines interleave epochs (a glob's
// streams, DESIGN §10) re-reads each stream from its own pointer after a
// reload; one mark for the whole feed would cover one stream only. Call
// it, as Through, only once the source stopped publishing and polling.
func (p *Publisher) Marks(i int, count uint64) []Mark {
	w := p.win
	by := map[uint64]int64{}
	for e, pos := range w.ackedOld {
		by[e] = pos
	}
	for e, pos := range w.acked {
		by[e] = pos
	}
	if i >= 0 && count == 0 {
		return nil
	}
	for k := 0; k < w.n; k++ { // oldest first: a later line of an epoch wins
		j := (w.head + k) % len(w.entries)
		e := w.entries[j]
		if !e.positioned || e.lines == 0 {
			continue
		}
		last := e.firstSeq + uint64(e.lines) - 1
		if i >= 0 {
			start, end := w.bounds[j*2*w.nq+i], w.bounds[j*2*w.nq+w.nq+i]
			if end == start || count <= start {
				continue
			}
			last = e.firstSeq + (min(count, end) - start) - 1
		}
		by[e.epoch] = w.ends[last%uint64(len(w.ends))]
	}
	if p.lastPub.OK && i < 0 {
		by[p.lastPub.Epoch] = p.lastPub.Position
	}
	out := make([]Mark, 0, len(by))
	for e, pos := range by {
		out = append(out, Mark{Epoch: e, Position: pos, OK: true})
	}
	slices.SortFunc(out, func(a, b Mark) int { return cmp.Compare(a.Epoch, b.Epoch) })
	return out
}

// UnpositionedAfter reports whether queue i was given lines without a
// position (late lines of a file let go, DESIGN §4) past the first count
// lines it was given: lines it has not finished that no Mark names. Call
// it, as Marks, only once the source stopped publishing and polling.
func (p *Publisher) UnpositionedAfter(i int, count uint64) bool {
	w := p.win
	for k := 0; k < w.n; k++ {
		j := (w.head + k) % len(w.entries)
		if e := w.entries[j]; e.positioned || e.lines == 0 {
			continue
		}
		if end := w.bounds[j*2*w.nq+w.nq+i]; end > w.bounds[j*2*w.nq+i] && end > count {
			return true
		}
	}
	return false
}

// StartAt makes the publisher number on from seq: its first line gets
// sequence seq+1, and seq counts as published and acknowledged (the
// window's and the processors' view: every line of this instance comes
// after it; what feed.status reports as acknowledged is the daemon's). A feed
// restarted by a reload numbers on from its earlier instance (DESIGN §7
// sequence, §12 "Counters are never reset by a reload"), so every line a
// processor sees (d.Sequence, a pull event's sequence) carries the number
// feed.status counts it under. Call it before the first publish.
func (p *Publisher) StartAt(seq uint64) {
	p.seq.Store(seq)
	p.acked.Store(seq)
	p.fullAt.Store(seq)
}

// SetHeld makes the publisher acknowledge nothing (true) while a removed
// subscriber still holds lines it did not finish (DESIGN §12 "Reload"):
// the pointer stays, the window fills and the feed pauses, as behind a
// dead subscriber. SetHeld(false) lets the acknowledgements catch up.
func (p *Publisher) SetHeld(v bool) {
	p.held.Store(v)
	poke(p.wake)
}

// Sequence is the last sequence published this run (0 = none).
func (p *Publisher) Sequence() uint64 { return p.seq.Load() }

// Acknowledged is the highest sequence every holding queue finished.
func (p *Publisher) Acknowledged() uint64 { return p.acked.Load() }

// Pending is the number of lines awaiting acknowledgement.
func (p *Publisher) Pending() int64 { return p.pending.Load() }

// Paused reports whether the last publish was refused.
func (p *Publisher) Paused() bool { return p.paused.Load() }

// Pauses counts pause episodes.
func (p *Publisher) Pauses() uint64 { return p.pauses.Load() }

// SetPaused marks the feed paused (a pause that is not a refused publish,
// e.g. while waiting for an epoch barrier) or running.
func (p *Publisher) SetPaused(v bool, why string) {
	if v {
		p.pause(&why)
		return
	}
	p.resume()
}

func (p *Publisher) resume() {
	if p.paused.Load() {
		if n := p.since.Load(); n != 0 {
			p.pausedNanos.Add(time.Now().UnixNano() - n)
		}
		p.paused.Store(false)
		p.since.Store(0)
	}
}

// PausedTotal is how long the feed has been paused this run, the current
// pause included (the metrics' pause seconds).
func (p *Publisher) PausedTotal() time.Duration {
	d := p.pausedNanos.Load()
	if n := p.since.Load(); n != 0 {
		d += time.Now().UnixNano() - n
	}
	return time.Duration(d)
}

// PausedSince is when the current pause began (zero when running).
func (p *Publisher) PausedSince() time.Time {
	if n := p.since.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// SetBarrier records that the source waits at an epoch barrier to start
// epoch (0: it does not): it has published every line of the previous
// epoch and publishes nothing more until all of them are acknowledged.
func (p *Publisher) SetBarrier(epoch uint64) { p.barrier.Store(epoch) }

// Barrier is the epoch the source waits to start at an epoch barrier (0 =
// none). While it is set, no positioned line of an earlier epoch is
// published any more.
func (p *Publisher) Barrier() uint64 { return p.barrier.Load() }

// WindowFullAt reports whether the feed is paused because the window is
// full, and the acknowledged sequence when the last publish was refused for
// it: the source publishes nothing more until lines after it are
// acknowledged. (A processor that holds lines back while it waits for later
// ones, like the webhook rebuilding a request, learns from it that they
// cannot come until it lets go.)
func (p *Publisher) WindowFullAt() (acked uint64, full bool) {
	full = p.paused.Load() && p.reason.Load() == &p.whyWindow
	return p.fullAt.Load(), full
}

// Want marks epoch as awaited (on) or no longer (off; each on needs one
// off) by a processor that holds lines of it back until more of its lines
// come and reports nothing after them durable meanwhile (the webhook
// rebuilding a request after a restart). While it is awaited, its
// positioned batches are published even when the window is full: on a
// glob feed the window fills with other files' lines that the held-back
// lines keep unacknowledged, and the awaited lines must not wait behind
// them. The window then exceeds maxPendingAcks by at most what the
// processor awaits (it lets the epoch go once its lines came, or cannot).
// Any goroutine; the source is poked when an epoch becomes awaited.
func (p *Publisher) Want(epoch uint64, on bool) {
	p.wantMu.Lock()
	if p.wanted == nil {
		p.wanted = map[uint64]int{}
	}
	if on {
		p.wanted[epoch]++
	} else if p.wanted[epoch]--; p.wanted[epoch] <= 0 {
		delete(p.wanted, epoch)
	}
	p.wantMu.Unlock()
	if on {
		poke(p.wake)
	}
}

// wantedBatch: b is a positioned batch of an awaited epoch.
func (p *Publisher) wantedBatch(b *Batch) bool {
	if !b.Positioned {
		return false
	}
	p.wantMu.Lock()
	defer p.wantMu.Unlock()
	return p.wanted[b.Epoch] > 0
}

// EpochInfo is what the source tells of one epoch (EpochState).
type EpochInfo struct {
	// Ended: the source published every positioned line of the epoch it
	// ever will (it moved its file on to another epoch: an epoch barrier).
	Ended bool
	// CaughtUp: the source read the epoch's file to its end; more lines
	// come only if it is written to.
	CaughtUp bool
	// Open: a source reads the epoch now (false: none does, or unknown).
	Open bool
}

// SetEpochInfo sets what EpochState asks (a glob feed's source: its files
// have their own epochs and barriers, which Barrier does not show).
func (p *Publisher) SetEpochInfo(f func(epoch uint64) EpochInfo) { p.epochInfo.Store(&f) }

// EpochState is what the source tells of epoch (zero without SetEpochInfo).
// Any goroutine.
func (p *Publisher) EpochState(epoch uint64) EpochInfo {
	if f := p.epochInfo.Load(); f != nil {
		return (*f)(epoch)
	}
	return EpochInfo{}
}

// PauseReason is why the feed was last paused.
func (p *Publisher) PauseReason() string {
	if r := p.reason.Load(); r != nil {
		return *r
	}
	return ""
}
