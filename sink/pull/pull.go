package pull

import (
	"container/heap"
	"context"
	crand "crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"tailfeed/feed"
	"tailfeed/processor"
)

// Pull is the `pull` subscriber: it keeps the lines its group hands it
// and lends them to HTTP clients, which acknowledge every delivery (GET
// /v1/pull/{subscriber}, POST /v1/ack, POST /v1/nack: http.go). It takes a
// checkpoint hold, so the pointer follows the slowest client: the ack point
// moves only as the contiguous prefix of acknowledged, dead-lettered or
// filtered lines grows. A delivery not acknowledged within ackTimeout is
// handed out again after one backoff step (Retry.Step); out of attempts,
// onFailure applies. See the package doc.
type Pull struct {
	h           processor.Host
	q           *feed.Queue
	name        string
	log         hclog.Logger
	ackTimeout  time.Duration
	maxInFlight int
	retry       processor.Retry
	onFailure   processor.OnFailure
	match       *regexp.Regexp
	exclude     *regexp.Regexp
	// skip is the re-read a feed restarted by a reload, or the subscriber
	// added back while it holds its feed, finishes unseen (the group's
	// skip, which a sink filtering by itself applies: TakeSkips). Group
	// goroutine only.
	skip processor.SkipSet

	mu    sync.Mutex
	order []*pullEntry // lines in queue order, from the oldest one not done
	head  int          // order[:head] are gone
	// Lines waiting to be handed out: fresh[freshHead:] never handed out,
	// in queue order (a FIFO: O(1) per line); ready the others (failed
	// deliveries, replays), lowest rank first. nextReady merges the two.
	fresh     []*pullEntry
	freshHead int
	ready     readyHeap
	// ACK deadlines: outq[outHead:] in hand-out order, which is deadline
	// order (every delivery gets ackTimeout); a slot whose delivery was
	// settled since is skipped (outSlot.live). timers: backoff ends.
	outq     []outSlot
	outHead  int
	timers   timerHeap
	byID     idTable // deliveries by id
	unacked  int     // lines of order not done
	ubytes   int     // their bytes (maxBytes bounds them)
	maxBytes int
	out      int    // deliveries handed out and not acknowledged (nor timed out)
	held     int    // lines out of attempts under onFailure hold
	durable  uint64 // the mark last reported through DurableThrough
	rank     uint64 // insertion counter (order among replays)
	rng      *rand.ChaCha8
	t0       time.Time     // the origin of clock
	sig      chan struct{} // closed and replaced whenever a waiter may proceed
	dying    []*pullEntry  // out of attempts, to be written to the ledger
	closed   bool

	// adopted are the previous instance's deliveries in flight and its
	// lines acknowledged out of order (a reload restarted the feed: adopt),
	// by place in the file, until their lines are re-read.
	adopted map[adoptKey]*pullEntry

	// Replayed dead letters held here, by ledger id: queued, out, or
	// acknowledged until removeReplayed rewrote the ledger (a replay
	// meanwhile must not queue them again, nor a purge count them).
	replaying map[uint64]*pullEntry
	acked     []uint64 // ledger ids of replayed dead letters acknowledged in this settle call

	kick      chan struct{}
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// Config configures a Pull.
type Config struct {
	// Group is the subscriber's group. Pull takes its checkpoint hold, its
	// retry policy, onFailure, ledger and filters.
	Group       processor.Host
	AckTimeout  time.Duration
	MaxInFlight int
	// MaxBytes bounds the bytes of the lines taken in and not done, as
	// queueBytes bounds a queue (0: no bound): the pull's lines are its
	// queue's, copied out of it, and a subscriber nobody polls must not
	// hold a feed's backlog in memory (audit 10C: 256 MiB of 1 MiB lines,
	// RSS 290 MB, bounded only by maxInFlight lines). A line alone may
	// exceed it.
	MaxBytes int
	Logger   hclog.Logger
	// Previous is the same subscriber's instance that a reload stopped to
	// restart its feed (closed; nil: none). Its deliveries in flight stay
	// valid here (adopt).
	Previous *Pull
}

type pullState uint8

const (
	pullReady   pullState = iota // waiting to be handed out
	pullOut                      // handed out, waiting for its ACK until due
	pullDelayed                  // failed; handed out again at due
	pullDying                    // out of attempts, being dead-lettered
	pullDone                     // acknowledged, dead-lettered or released
)

// pullEntry is one line held by the subscriber.
//
// It is 128 bytes (one size class; a batch's entries are one allocation):
// what its lines share is in src, due is an offset on the monotonic clock.
type pullEntry struct {
	through uint64 // queue mark through this line and the filtered lines after it (0: a replay)
	rank    uint64 // ready order: through, or the insertion counter for a replay
	seq     uint64
	pos     int64
	src     *lineSource
	line    []byte
	id      deliveryKey // deliveryId that may still acknowledge it, when hasID
	due     int64       // pullOut: ACK deadline; pullDelayed: redelivery (Pull.clock)
	lastErr error
	lid     uint64 // a replay's ledger entry id
	attempt int    // deliveries handed out so far (never wraps: a line NACKed for days keeps counting)
	ridx    int32  // index in ready (-1: not in it)
	tidx    int32  // index in timers (-1: not in it)
	state   pullState
	hasID   bool
	held    bool // out of attempts under hold
	replay  bool // a replayed dead letter (through 0)
	// slot: a delivery that timed out keeps its in-flight slot while it
	// waits its backoff step (its late ACK still counts): maxInFlight
	// holds, and new lines do not take the slot its redelivery needs.
	slot bool
}

// lineSource is what the lines of a batch share.
type lineSource struct {
	feed, path string
	epoch      uint64
	positioned bool
}

// outSlot is a delivery's ACK deadline in outq.
type outSlot struct {
	e       *pullEntry
	attempt int
}

// live: the delivery is still out waiting for its ACK (not settled,
// timed out or handed out again since).
func (s outSlot) live() bool { return s.e.state == pullOut && s.e.attempt == s.attempt }

// Event is one delivery as GET /v1/pull returns it.
type Event struct {
	DeliveryID string  `json:"deliveryId"`
	Feed       string  `json:"feed"`
	Epoch      string  `json:"epoch"` // 16 lowercase hex digits
	Position   int64   `json:"position"`
	Sequence   uint64  `json:"sequence"`
	Attempt    int     `json:"attempt"`
	Path       string  `json:"path"`
	Line       string  `json:"line"`                 // text: one U+FFFD per invalid UTF-8 byte (encoding/json)
	LineBase64 *string `json:"lineBase64,omitempty"` // the raw bytes, with ?raw=1
}

// ErrClosed is returned by a replay into a pull subscriber that
// stopped.
var ErrClosed = errors.New("processor: pull subscriber closed")

// New makes the pull subscriber of cfg.Group and starts its timer
// goroutine (Close stops it). Call before the group starts.
func New(cfg Config) (*Pull, error) {
	g := cfg.Group
	if g == nil {
		return nil, errors.New("pull: no group")
	}
	if cfg.AckTimeout <= 0 || cfg.MaxInFlight < 1 {
		return nil, fmt.Errorf("pull: ackTimeout %v and maxInFlight %d must be positive", cfg.AckTimeout, cfg.MaxInFlight)
	}
	log := cfg.Logger
	if log == nil {
		log = g.Logger()
	}
	var seed [32]byte
	if _, err := crand.Read(seed[:]); err != nil {
		return nil, fmt.Errorf("pull: seed deliveryIds: %w", err)
	}
	p := &Pull{
		h: g, q: g.Queue(), name: g.Name(), log: log,
		ackTimeout: cfg.AckTimeout, maxInFlight: cfg.MaxInFlight, maxBytes: cfg.MaxBytes,
		retry: g.Retry(), onFailure: g.OnFailure(),
		replaying: map[uint64]*pullEntry{}, rng: rand.NewChaCha8(seed),
		sig: make(chan struct{}), kick: make(chan struct{}, 1), t0: time.Now(),
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	if p.onFailure == processor.DeadLetter && !g.DeadLetters() {
		return nil, errors.New("pull: onFailure deadLetter needs a ledger")
	}
	// Pull filters by itself: each line needs its own queue mark.
	p.match, p.exclude = g.TakeFilters()
	// And skips by itself what a restarted feed re-reads that it had
	// finished, or that was published while it was removed: DESIGN §12,
	// "adding the processor back re-reads nothing"; a kept subscriber
	// receives first the lines it did not finish.
	p.skip = processor.NewSkipSet(g.TakeSkips())
	if cfg.Previous != nil && !p.q.BestEffort() {
		p.adopt(cfg.Previous)
	}
	g.Hold()
	go p.run()
	return p, nil
}

// clock is t on the subscriber's monotonic clock (pullEntry.due).
func (p *Pull) clock(t time.Time) int64 { return int64(t.Sub(p.t0)) }

// Name is the subscriber's name (the prefix of its deliveryIds).
func (p *Pull) Name() string { return p.name }

// ProcessBatch takes b's lines in (copies) and returns at once; they count
// as done for the queue's ack point only once acknowledged. It waits while
// maxInFlight lines are unacknowledged, or their bytes and b's would pass
// maxBytes.
func (p *Pull) ProcessBatch(ctx context.Context, b *feed.Batch) (int, error) {
	if len(b.Lines) == 0 { // lines finished without the pull: done once those before them are
		p.mu.Lock()
		p.skipTo(p.h.Mark())
		p.mu.Unlock()
		return 0, nil
	}
	base := p.h.Mark() - uint64(len(b.Lines))
	// The entries and the copies of the lines, one allocation each, made
	// before the lock (ProcessBatch must not hold up the pulls).
	var want []bool
	if p.match != nil || p.exclude != nil || len(p.skip) > 0 {
		want = make([]bool, len(b.Lines))
		for i, line := range b.Lines {
			want[i] = p.wanted(line)
		}
	}
	// Lines the skip covers are finished unseen, as filtered ones, except
	// one adopted from the previous instance (its delivery is still out,
	// or it was acknowledged out of order): adoption places it.
	if len(p.skip) > 0 && b.Positioned {
		for i := range b.Lines {
			if p.skip.Skips(b.Epoch, b.Ends[i]) && !p.isAdopted(b.Epoch, b.Ends[i]) {
				want[i] = false
			}
		}
	}
	size := 0
	for i, line := range b.Lines {
		if want == nil || want[i] {
			size += len(line)
		}
	}
	text := make([]byte, 0, size)
	ents := make([]pullEntry, len(b.Lines))
	src := &lineSource{feed: b.Feed, path: b.Path, epoch: b.Epoch, positioned: b.Positioned}
	for i, line := range b.Lines {
		if want != nil && !want[i] {
			continue
		}
		at := len(text)
		text = append(text, line...)
		// Field by field into the zeroed slab: no struct copy.
		e := &ents[i]
		e.through = base + uint64(i) + 1
		e.rank, e.seq, e.pos = e.through, b.FirstSeq+uint64(i), b.Ends[i]
		e.src, e.line = src, text[at:len(text):len(text)]
		e.ridx, e.tidx = -1, -1
	}
	p.mu.Lock()
	need := size // the bytes b adds to ubytes: an adopted line's are counted already (review 28a A)
	if len(p.adopted) > 0 && b.Positioned && p.maxBytes > 0 {
		for i, line := range b.Lines {
			if _, ok := p.adopted[adoptKey{b.Epoch, b.Ends[i]}]; ok && (want == nil || want[i]) {
				need -= len(line)
			}
		}
	}
	for (p.unacked >= p.maxInFlight || p.maxBytes > 0 && p.unacked > 0 && p.ubytes+need > p.maxBytes) && !p.closed {
		ch := p.sig
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		p.mu.Lock()
	}
	led := p.h.InLedger(b) // lines dead-lettered before a crash: processed
	added := false
	for i := range b.Lines {
		through := base + uint64(i) + 1
		if (want != nil && !want[i]) || led[b.Ends[i]] {
			p.skipTo(through)
			continue
		}
		if len(p.adopted) > 0 && b.Positioned {
			if a := p.takeAdopted(b.Epoch, b.Ends[i], through); a != nil {
				if a.state == pullDone {
					p.skipTo(through) // acknowledged before the restart
				} else {
					p.order = append(p.order, a) // its delivery is still out (or failed since)
				}
				continue
			}
		}
		e := &ents[i]
		p.order = append(p.order, e)
		p.fresh = append(p.fresh, e)
		p.unacked++
		p.ubytes += len(e.line)
		added = true
	}
	if added {
		p.broadcast()
	}
	p.mu.Unlock()
	return len(b.Lines), nil
}

func (p *Pull) wanted(line []byte) bool {
	if p.match != nil && !p.match.Match(line) {
		return false
	}
	return p.exclude == nil || !p.exclude.Match(line)
}

// skipTo records a filtered line: done once every line before it is.
func (p *Pull) skipTo(through uint64) {
	if p.head < len(p.order) {
		p.order[len(p.order)-1].through = through
		return
	}
	p.report(through)
}

// report moves the queue's durable mark.
func (p *Pull) report(through uint64) {
	if through > p.durable {
		p.durable = through
		p.h.DurableThrough(through)
	}
}

// Pull hands out up to max waiting lines, waiting up to wait (or until ctx
// ends) for the first one. It returns an empty list when none came.
func (p *Pull) Pull(ctx context.Context, max int, wait time.Duration, raw bool) []Event {
	return p.events(p.take(ctx, max, wait, nil), raw)
}

// take is Pull without the events: the deliveries handed out, appended to
// hs.
func (p *Pull) take(ctx context.Context, max int, wait time.Duration, hs []handed) []handed {
	deadline := time.Now().Add(wait)
	var timer *time.Timer
	for {
		p.mu.Lock()
		now := time.Now()
		p.expire(now)
		hs = p.handout(now, max, hs)
		ch, closed := p.sig, p.closed
		p.mu.Unlock()
		if len(hs) > 0 || closed || !now.Before(deadline) {
			return hs
		}
		if timer == nil {
			timer = time.NewTimer(time.Until(deadline))
			defer timer.Stop()
		}
		select {
		case <-ch:
		case <-timer.C:
		case <-ctx.Done():
			return hs
		}
	}
}

// handed is a delivery as handed out (its id and attempt at that moment).
type handed struct {
	e       *pullEntry
	key     deliveryKey
	attempt int
}

// handout takes up to max ready lines out, within maxInFlight, and appends
// them to out.
func (p *Pull) handout(now time.Time, max int, out []handed) []handed {
	n := min(max, p.maxInFlight-p.out)
	if n <= 0 {
		return out
	}
	due := p.clock(now) + int64(p.ackTimeout)
	first := true
	for ; n > 0; n-- {
		e := p.nextReady()
		if e == nil {
			break
		}
		// A timed-out delivery's late ACK no longer counts.
		p.dropID(e)
		p.rng.Read(e.id[:])
		e.hasID = true
		p.byID.put(e)
		e.attempt++
		e.state = pullOut
		e.due = due
		if first && p.outHead == len(p.outq) {
			kickChan(p.kick) // the earliest ACK deadline now
		}
		first = false
		p.outq = append(p.outq, outSlot{e, e.attempt})
		p.out++
		out = append(out, handed{e, e.id, int(e.attempt)})
	}
	// Slots of settled deliveries behind a live one wait for it to leave
	// the front: drop them once they outnumber the live ones.
	if q := len(p.outq) - p.outHead; q > 4096 && q > 2*p.out {
		live := p.outq[:0]
		for _, s := range p.outq[p.outHead:] {
			if s.live() {
				live = append(live, s)
			}
		}
		clear(p.outq[len(live):])
		p.outq, p.outHead = live, 0
	}
	return out
}

// nextReady takes the next line to hand out (nil: none): the lowest rank
// of ready and fresh.
func (p *Pull) nextReady() *pullEntry {
	var f *pullEntry
	if p.freshHead < len(p.fresh) {
		f = p.fresh[p.freshHead]
	}
	if len(p.ready) > 0 && (f == nil || p.ready.rankKey(0) < f.rank+1<<62) {
		return heap.Pop(&p.ready).(*pullEntry)
	}
	if f == nil {
		return nil
	}
	p.fresh[p.freshHead] = nil
	p.freshHead++
	if p.freshHead == len(p.fresh) {
		p.fresh, p.freshHead = p.fresh[:0], 0
	} else if p.freshHead > 1024 && p.freshHead > len(p.fresh)/2 {
		n := copy(p.fresh, p.fresh[p.freshHead:])
		clear(p.fresh[n:])
		p.fresh, p.freshHead = p.fresh[:n], 0
	}
	return f
}

// dropID makes e's deliveryId unknown.
func (p *Pull) dropID(e *pullEntry) {
	if e.hasID {
		p.byID.del(e)
		e.hasID = false
	}
}

func (p *Pull) events(hs []handed, raw bool) []Event {
	evs := make([]Event, len(hs))
	var id []byte
	for i, h := range hs {
		e := h.e // line, epoch, position… never change once taken in
		id = appendID(id[:0], p.name, &h.key)
		evs[i] = Event{
			DeliveryID: string(id), Feed: e.src.feed, Epoch: fmt.Sprintf("%016x", e.src.epoch), Position: e.pos,
			Sequence: e.seq, Attempt: h.attempt, Path: e.src.path, Line: string(e.line),
		}
		if raw {
			s := base64.StdEncoding.EncodeToString(e.line)
			evs[i].LineBase64 = &s
		}
	}
	return evs
}

// IDSubscriber returns the subscriber named in a deliveryId ("" when id
// has no subscriber part).
func IDSubscriber(id string) string {
	i := strings.IndexByte(id, ':')
	if i <= 0 {
		return ""
	}
	return id[:i]
}

// Ack acknowledges one delivery; false when the id is unknown, already
// acknowledged, or no longer valid.
func (p *Pull) Ack(id string) bool {
	n, _ := p.AckAll([]string{id})
	return n == 1
}

// AckAll acknowledges deliveries and returns how many it acknowledged and
// the ids it did not know (unknown, already acknowledged, no longer valid).
func (p *Pull) AckAll(ids []string) (int, []string) {
	return p.settleStrings(ids, p.ack)
}

// Nack gives one delivery back: its line is handed out again at once, with
// the next attempt. False when the id is not a delivery waiting for its ACK.
func (p *Pull) Nack(id string) bool {
	n, _ := p.NackAll([]string{id})
	return n == 1
}

// NackAll is Nack for several ids, like AckAll.
func (p *Pull) NackAll(ids []string) (int, []string) {
	return p.settleStrings(ids, p.nack)
}

func (p *Pull) settleStrings(ids []string, f func(*pullEntry, time.Time)) (int, []string) {
	unknown := []string{}
	n := settle(p, ids, f, func(i int) { unknown = append(unknown, ids[i]) })
	return n, unknown
}

// settle applies f (ack or nack) to the deliveries ids name, under one
// lock, and calls unknown with the index of each id it did not know (in
// order). It returns how many it settled. An id is looked up in O(1),
// without a string: its random part is the key.
func settle[S []byte | string](p *Pull, ids []S, f func(*pullEntry, time.Time), unknown func(int)) int {
	n := 0
	p.mu.Lock()
	now := time.Now()
	for i, id := range ids {
		var e *pullEntry
		k, ok := parseKey(p.name, id)
		if ok && !p.closed {
			e = p.byID.take(&k) // its id is dead from now on
		}
		if e == nil {
			unknown(i)
			continue
		}
		e.hasID = false
		f(e, now)
		n++
	}
	if n > 0 {
		p.advance()
		p.broadcast()
	}
	replayed := p.acked
	p.acked = nil
	p.mu.Unlock()
	p.removeReplayed(replayed) // before the ACK is answered
	return n
}

// ack finishes e (its id was just removed).
func (p *Pull) ack(e *pullEntry, _ time.Time) {
	p.unlink(e)
	p.finish(e, nil)
}

// nack fails e's delivery and makes its line ready at once.
func (p *Pull) nack(e *pullEntry, now time.Time) {
	if e.state != pullOut {
		// A late id of a delivery that already timed out: it failed already;
		// only hurry the redelivery.
		if e.state == pullDelayed {
			p.unlink(e)
			e.state = pullReady
			heap.Push(&p.ready, e)
		}
		return
	}
	p.unlink(e)
	p.fail(e, now, errors.New("nacked by the client"), true)
}

// unlink takes e out of the heaps and the out count (its outq slot goes
// stale with its state).
func (p *Pull) unlink(e *pullEntry) {
	if e.state == pullOut {
		p.out--
	}
	p.freeSlot(e)
	if e.tidx >= 0 {
		heap.Remove(&p.timers, int(e.tidx))
	}
	if e.ridx >= 0 {
		heap.Remove(&p.ready, int(e.ridx))
	}
}

// freeSlot gives up the in-flight slot a timed-out delivery kept.
func (p *Pull) freeSlot(e *pullEntry) {
	if e.slot {
		e.slot = false
		p.out--
	}
}

// finish marks e done (acknowledged, dead-lettered or released); err is a
// replay's failure.
func (p *Pull) finish(e *pullEntry, err error) {
	p.dropID(e)
	p.freeSlot(e)
	e.state = pullDone
	if e.held {
		e.held = false
		p.held--
		if p.held == 0 {
			p.unfence()
		}
	}
	if e.replay {
		if err == nil {
			// Stays in replaying until removeReplayed rewrote the ledger.
			p.acked = append(p.acked, e.lid)
		} else {
			delete(p.replaying, e.lid)
		}
		return
	}
	p.unacked--
	p.ubytes -= len(e.line)
}

// advance drops the done prefix of order and reports it durable.
func (p *Pull) advance() {
	var through uint64
	for p.head < len(p.order) && p.order[p.head].state == pullDone {
		through = p.order[p.head].through
		p.order[p.head] = nil
		p.head++
	}
	if p.head == len(p.order) {
		p.order, p.head = p.order[:0], 0
	} else if p.head > 1024 && p.head > len(p.order)/2 {
		p.order = append(p.order[:0], p.order[p.head:]...)
		p.head = 0
	}
	if through > 0 {
		p.report(through)
	}
}

func (p *Pull) broadcast() {
	close(p.sig)
	p.sig = make(chan struct{})
}

// InFlight is the number of deliveries out waiting for their ACK.
func (p *Pull) InFlight() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out
}

// waiting is every entry queued or out: ready, the delayed ones and the
// live deliveries (fresh lines are never replays; Close needs only those).
func (p *Pull) waiting() []*pullEntry {
	es := append(append([]*pullEntry(nil), p.ready...), p.timers...)
	for _, s := range p.outq[p.outHead:] {
		if s.live() {
			es = append(es, s.e)
		}
	}
	return es
}

// Close stops the timer goroutine, ends long polls and fails waiting
// replays. Unacknowledged lines stay unacknowledged: the pointer does not
// pass them, and the next run delivers them again. A best-effort
// (DROP_AFTER_SPIN) subscriber does not hold the pointer, so its
// unacknowledged lines reach no one after the stop: they count as dropped
// (DESIGN §5: lines still in a best-effort queue at the stop), as the
// lines left in the queue itself do. No ACK is taken once Close began, so
// the count is exact. Close is idempotent.
func (p *Pull) Close() error {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		for _, e := range p.waiting() {
			if e.replay && e.state != pullDone {
				p.unlink(e)
				p.finish(e, ErrClosed)
			}
		}
		p.broadcast()
		p.mu.Unlock()
		close(p.stop)
		<-p.done
		p.mu.Lock()
		left := p.unacked
		p.mu.Unlock()
		if left > 0 && p.q.BestEffort() {
			p.log.Warn("best-effort pull subscriber stopped with lines no client acknowledged; counted as dropped",
				"lines", left)
			p.q.LeftAtStop(uint64(left))
		}
	})
	return nil
}
