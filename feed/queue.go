package feed

import (
	"context"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"tailfeed/overload"
)

// SubState is a subscriber's state as the status report shows it.
type SubState int32

const (
	Live     SubState = iota // processing normally
	Fenced                   // failing and retrying; holds the pointer
	Dead                     // its goroutine ended (panic quarantined); holds the pointer
	Released                 // a backlog was given up on purpose; processing again
	Stopped                  // shut down
)

func (s SubState) String() string {
	switch s {
	case Fenced:
		return "FENCED"
	case Dead:
		return "DEAD"
	case Released:
		return "LIVE"
	case Stopped:
		return "STOPPED"
	default:
		return "LIVE"
	}
}

// Queue is one subscriber's bounded FIFO of batches, from the feed's
// publisher (one producer) to the subscriber's group (one consumer).
//
// Counters and their single writers:
//   - position (lines given to the queue): the publisher;
//   - dispatched (lines finished, a contiguous prefix): the group;
//   - durable (a contiguous prefix made durable by asynchronous work): the
//     processor's checkpoint, through DurableThrough;
//   - Counters (dropped, refused by the overload policy): the publisher;
//   - left (lines a best-effort queue's group did not finish when it
//     stopped), state and released: the group.
//
// Dropped is the publisher's drops plus left.
//
// The queue's ack point is min(dispatched, durable) while a hold is taken,
// dispatched otherwise.
type Queue struct {
	Name     string
	Gate     overload.Gate
	Counters overload.Counters

	// lossNote, when set, is signalled (never blocking) after a loss
	// counter moved: the daemon's loss recorder wakes on it instead of
	// polling (an idle daemon wakes for nothing).
	lossNote atomic.Pointer[chan struct{}]
	// lossGen counts NoteLoss calls, each made after its counter moved:
	// the publisher makes the losses durable (LossSync) before it
	// acknowledges lines while it differs from what it last made durable.
	lossGen atomic.Uint64
	// lossSync, when set (Publisher.SetLossSync, before anything runs),
	// makes the losses counted so far durable; AddReleased calls it.
	lossSync  LossSync
	lossCount LossCount // Publisher.SetLossCount
	// pubSkip: the re-read skip of the queue's group (SetPublishSkip),
	// the end of the last line finished per epoch; read by the publisher.
	pubSkip map[uint64]int64
	// pubOld: where the feed's earlier instances published through
	// (SetPublishOld); oldGiven: the lines at or before it, past pubSkip,
	// this instance gave the queue again. Both read by the publisher only.
	pubOld   map[uint64]int64
	oldGiven atomic.Uint64
	// onRefuse (SetOnRefuse), when set, records the range of a positioned
	// batch refused to the queue; called by the publisher only.
	onRefuse func(epoch uint64, after, through int64)
	// onAccept (SetOnAccept), when set, is told the range of a positioned
	// batch given to the queue (past the lines its group skips); called by
	// the publisher only.
	onAccept func(epoch uint64, after, through int64)

	capLines, capBytes int

	mu    sync.Mutex
	items []*Batch // ring
	head  int
	n     int
	lines int // lines queued now
	bytes int // bytes queued now

	ready  chan struct{} // poked when a batch is pushed (consumer wake-up)
	room   chan struct{} // poked when a batch is popped (producer wake-up)
	notify chan struct{} // the publisher's wake-up, poked when a batch is popped too

	position   atomic.Uint64
	dispatched atomic.Uint64
	holding    atomic.Bool
	durable    atomic.Uint64
	state      atomic.Pointer[subState] // nil: Live since the queue was made
	finished   atomic.Uint64            // lines the group finished (for best-effort status)
	released   atomic.Uint64            // lines given up on purpose (admin release, DLQ purge)
	left       atomic.Uint64            // lines left unfinished in a best-effort queue at stop
}

// NewQueue makes a queue holding at most capLines lines and capBytes bytes
// (one batch larger than capBytes is accepted into an empty queue).
func NewQueue(name string, capLines, capBytes int, policy overload.Policy) *Queue {
	if capLines < 1 {
		capLines = 1
	}
	return &Queue{
		Name:     name,
		Gate:     overload.Gate{Policy: policy},
		capLines: capLines,
		capBytes: capBytes,
		items:    make([]*Batch, capLines),
		ready:    make(chan struct{}, 1),
		room:     make(chan struct{}, 1),
	}
}

// BestEffort reports whether the queue never holds the pointer.
func (q *Queue) BestEffort() bool { return q.Gate.Policy.BestEffort() }

// HasRoom reports whether a batch of n lines and b bytes fits now.
func (q *Queue) HasRoom(n, b int) bool {
	q.mu.Lock()
	ok := q.n == 0 || (q.lines+n <= q.capLines && q.bytes+b <= q.capBytes && q.n < len(q.items))
	q.mu.Unlock()
	return ok
}

// push appends b (n lines, nb bytes); the caller checked HasRoom (the
// publisher is the only producer, so room can only grow in between). b is
// not read after it is queued: the group may finish and recycle it at once.
func (q *Queue) push(b *Batch, n, nb int) {
	q.mu.Lock()
	q.items[(q.head+q.n)%len(q.items)] = b
	q.n++
	q.lines += n
	q.bytes += nb
	q.position.Add(uint64(n))
	q.mu.Unlock()
	poke(q.ready)
}

// Pop removes the head batch, waiting until there is one or ctx is done.
// The caller owns one reference to the batch and must Release it.
func (q *Queue) Pop(ctx context.Context) (*Batch, error) {
	for {
		if b := q.TryPop(); b != nil {
			return b, nil
		}
		select {
		case <-q.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// TryPop removes the head batch if there is one.
func (q *Queue) TryPop() *Batch {
	q.mu.Lock()
	if q.n == 0 {
		q.mu.Unlock()
		return nil
	}
	b := q.items[q.head]
	q.items[q.head] = nil
	q.head = (q.head + 1) % len(q.items)
	q.n--
	q.lines -= b.Len()
	q.bytes -= b.Bytes()
	q.mu.Unlock()
	poke(q.room)
	if q.notify != nil {
		poke(q.notify) // room: the source may publish while this batch is processed
	}
	return b
}

// spinFor bounds how long a producer waiting for room, or a consumer
// waiting for a batch, polls before it parks. Parking and waking a
// goroutine costs tens of microseconds (on a virtual machine an idle vCPU
// must be woken), about what a batch of short lines takes to write: without
// the poll a streaming pipeline parks at every batch, on both sides, and
// loses about a third of its throughput. An idle feed polls once per burst.
const spinFor = 50 * time.Microsecond

// roomSpin is HasRoom, polling up to spinFor for the consumer to take a
// batch.
func (q *Queue) roomSpin(n, b int) bool {
	if q.HasRoom(n, b) {
		return true
	}
	for start := time.Now(); time.Since(start) < spinFor; {
		runtime.Gosched()
		if q.HasRoom(n, b) {
			return true
		}
	}
	return false
}

// TryPopSpin is TryPop, polling up to spinFor for a batch before it gives
// up (a group calls it before it parks).
func (q *Queue) TryPopSpin() *Batch {
	if b := q.TryPop(); b != nil {
		return b
	}
	for start := time.Now(); time.Since(start) < spinFor; {
		runtime.Gosched()
		if b := q.TryPop(); b != nil {
			return b
		}
	}
	return nil
}

// Depth is the number of lines queued now.
func (q *Queue) Depth() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.lines
}

// Ready is poked whenever a batch enters the queue.
func (q *Queue) Ready() <-chan struct{} { return q.ready }

// Room is poked whenever a batch leaves the queue.
func (q *Queue) Room() <-chan struct{} { return q.room }

// Position is the number of lines given to the queue this run.
func (q *Queue) Position() uint64 { return q.position.Load() }

// Dispatched is the number of leading lines the group finished.
func (q *Queue) Dispatched() uint64 { return q.dispatched.Load() }

// AddDispatched is called by the group only, once per batch (or at a fence).
func (q *Queue) AddDispatched(n uint64) {
	q.dispatched.Add(n)
	q.finished.Add(n)
}

// Hold makes the ack point wait for DurableThrough as well (a processor that
// persists asynchronously). A hold taken after a restart starts at nothing
// durable.
func (q *Queue) Hold() { q.holding.Store(true) }

// DurableThrough reports that the first mark lines (queue order) are durable.
// Marks only move forward.
func (q *Queue) DurableThrough(mark uint64) {
	for {
		cur := q.durable.Load()
		if mark <= cur || q.durable.CompareAndSwap(cur, mark) {
			return
		}
	}
}

// AckPointAfter is what AckPoint will be once the group adds more to
// dispatched and the processor reports durable through mark: what a
// release passes, counted before it moves anything (AddReleased).
func (q *Queue) AckPointAfter(more, mark uint64) uint64 {
	d := q.dispatched.Load() + more
	if q.holding.Load() {
		if m := max(q.durable.Load(), mark); m < d {
			return m
		}
	}
	return d
}

// AckPoint is how many leading lines of the queue are completely done.
func (q *Queue) AckPoint() uint64 {
	d := q.dispatched.Load()
	if q.holding.Load() {
		if m := q.durable.Load(); m < d {
			return m
		}
	}
	return d
}

// Finished is the number of lines the group finished this run.
func (q *Queue) Finished() uint64 { return q.finished.Load() }

// subState is a subscriber's state, its reason and when it began: one
// immutable value, replaced whole, so a reader never sees a state with
// another state's reason.
type subState struct {
	s      SubState
	reason string
	since  int64 // unix nanos
}

// SetState records the subscriber's state and the reason (for Fenced/Dead).
// The time it began moves only when the state changes.
func (q *Queue) SetState(s SubState, reason string) {
	next := &subState{s: s, reason: reason}
	for {
		cur := q.state.Load()
		switch {
		case cur != nil && cur.s == s:
			next.since = cur.since
		case cur == nil && s == Live:
		default:
			next.since = time.Now().UnixNano()
		}
		if q.state.CompareAndSwap(cur, next) {
			return
		}
	}
}

// StateSince is when the state last changed.
func (q *Queue) StateSince() time.Time {
	if st := q.state.Load(); st != nil {
		return time.Unix(0, st.since)
	}
	return time.Unix(0, 0)
}

// LeftAtStop counts n lines a best-effort queue's group did not finish
// when it stopped (they count as dropped). The group calls it once, as its
// goroutine ends.
func (q *Queue) LeftAtStop(n uint64) { q.left.Add(n); q.NoteLoss() }

// SetPublishSkip gives the queue its group's re-read skip (the lines of
// each epoch up to the mark's position, finished unseen: a feed restarted
// by a reload, DESIGN §12): a line so finished is no loss, so a drop or a
// refusal at the publish does not count it. Call before anything
// publishes.
func (q *Queue) SetPublishSkip(marks []Mark) { q.pubSkip = MarksByEpoch(marks) }

// SetOnRefuse gives the queue a recorder of the lines refused to it
// (BLOCK_WITH_DEADLINE): the epoch, the end of the line before the refused
// batch and the end of its last line, called before the publish returns.
// DESIGN §5: a refusal "does not hold the pointer" for the queue — so a
// sink's done-through mark (§11) must pass the refused lines as it passes
// released ones, or a start after a refused tail took the sink for a
// restored one behind the pointer and had the whole feed read the tail
// again. Call before anything publishes.
func (q *Queue) SetOnRefuse(f func(epoch uint64, after, through int64)) { q.onRefuse = f }

// SetOnAccept gives the queue a watcher of the lines given to it: the
// epoch, the end of the line before the first line its group does not
// skip, and the end of the batch's last line, called before the batch is
// queued. A range recorded earlier as given up for the queue's sink
// (refused, released, skipped) that such lines overlap is stale: the sink
// has them now, and its own record is what tells how far it got (review
// 27a RA: a stale range moved a restored sink's mark past lines it lacked).
// Call before anything publishes.
func (q *Queue) SetOnAccept(f func(epoch uint64, after, through int64)) { q.onAccept = f }

// SetPublishOld gives the queue where the feed's earlier instances (before
// a reload) published through, per epoch: OldGiven counts the lines at or
// before it, past the group's skip, that this instance's re-read gives the
// queue again. Call before anything publishes.
func (q *Queue) SetPublishOld(marks []Mark) { q.pubOld = MarksByEpoch(marks) }

// OldGiven is how many lines an earlier instance of the feed gave the
// queue's subscriber that this instance gave it again (SetPublishOld).
func (q *Queue) OldGiven() uint64 { return q.oldGiven.Load() }

// noteOld counts b's lines at or before the earlier instances' place and
// past the group's skip (SetPublishOld), as b is published to the queue
// (queued, or counted dropped or refused).
func (q *Queue) noteOld(b *Batch) {
	if len(q.pubOld) == 0 || !b.Positioned {
		return
	}
	at, ok := q.pubOld[b.Epoch]
	if !ok {
		return
	}
	n := sort.Search(len(b.Ends), func(i int) bool { return b.Ends[i] > at })
	if k := n - q.skipped(b); k > 0 {
		q.oldGiven.Add(uint64(k))
	}
}

// MarksByEpoch is marks as a map of epoch to the furthest position marked
// in it (marks not OK left out; nil when none is OK).
func MarksByEpoch(marks []Mark) map[uint64]int64 {
	var out map[uint64]int64
	for _, m := range marks {
		if !m.OK {
			continue
		}
		if out == nil {
			out = map[uint64]int64{}
		}
		if at, ok := out[m.Epoch]; !ok || m.Position > at {
			out[m.Epoch] = m.Position
		}
	}
	return out
}

// skipped is how many of b's lines the queue's group finishes unseen
// (SetPublishSkip): the first ones, those ending at or before its mark.
func (q *Queue) skipped(b *Batch) int {
	if len(q.pubSkip) == 0 || !b.Positioned {
		return 0
	}
	at, ok := q.pubSkip[b.Epoch]
	if !ok {
		return 0
	}
	return sort.Search(len(b.Ends), func(i int) bool { return b.Ends[i] > at })
}

// Dropped is the lines dropped for this queue: by the overload policy
// (Counters.Dropped) and left in a best-effort queue at stop.
func (q *Queue) Dropped() uint64 { return q.Counters.Dropped.Load() + q.left.Load() }

// AddReleased counts lines given up on purpose (the group only) and makes
// the count durable (LossSync) before it returns: the caller counts before
// the ack point passes the lines, and answers the operator's release or
// purge only after. A failed LossSync is returned and retried by the
// publisher, which acknowledges nothing until one succeeds. refusable: the
// caller gives nothing up when it fails (a purge keeps its dead letters):
// then a count the ledger did not take is taken back (LossCount), so a
// purge refused is not counted, and takeBack (non-nil on success) takes a
// count the ledger took back out when the caller fails after all.
func (q *Queue) AddReleased(n uint64, refusable bool) (takeBack func() error, err error) {
	apply := func() {
		q.released.Add(n)
		q.NoteLoss()
	}
	if refusable && q.lossCount != nil {
		return q.lossCount(q.Name, n, apply, func() { q.released.Add(^(n - 1)) })
	}
	apply()
	return nil, q.SyncLosses()
}

// SyncLosses makes the losses counted so far durable (the publisher's
// LossSync; nil when there is none).
func (q *Queue) SyncLosses() error {
	if q.lossSync != nil {
		return q.lossSync()
	}
	return nil
}

// SetLossNote makes the queue signal ch (buffered) after every loss it
// counts; see NoteLoss.
func (q *Queue) SetLossNote(ch chan struct{}) { q.lossNote.Store(&ch) }

// NoteLoss signals the loss note, if any, without blocking. Called after
// a loss counter of the queue (dropped, refused, released, left at stop)
// or of its group (completion failures) moved.
func (q *Queue) NoteLoss() {
	q.lossGen.Add(1)
	if p := q.lossNote.Load(); p != nil {
		select {
		case *p <- struct{}{}:
		default:
		}
	}
}

// ReleasedLines is the number of lines given up on purpose.
func (q *Queue) ReleasedLines() uint64 { return q.released.Load() }

// State returns the subscriber's state and reason.
func (q *Queue) State() (SubState, string) {
	if st := q.state.Load(); st != nil {
		return st.s, st.reason
	}
	return Live, ""
}

// StateAt returns the subscriber's state, its reason and when it began, all
// from one SetState.
func (q *Queue) StateAt() (SubState, string, time.Time) {
	if st := q.state.Load(); st != nil {
		return st.s, st.reason, time.Unix(0, st.since)
	}
	return Live, "", time.Unix(0, 0)
}

// Stalls reports whether a pointer-holding subscriber in state s holds
// the pointer: fenced or dead.
func (q *Queue) Stalls(s SubState) bool {
	return !q.BestEffort() && (s == Fenced || s == Dead)
}

// Stalling reports whether the queue holds the pointer because its subscriber
// is fenced or dead.
func (q *Queue) Stalling() bool {
	s, _ := q.State()
	return q.Stalls(s)
}

// Drain empties the queue, releasing its batches, and returns the lines removed.
func (q *Queue) Drain() int {
	n := 0
	for {
		b := q.TryPop()
		if b == nil {
			return n
		}
		n += b.Len()
		b.Release()
	}
}

func poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
