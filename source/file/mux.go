package file

import (
	"sync"
	"sync/atomic"

	"tailfeed/feed"
)

// mux shares one feed.Publisher between the streams of a glob feed. Each
// stream's Source sees a streamPub of its own: its publishes go to the
// feed's publisher under one mutex (in the order they come, one batch per
// call, so no stream can hold the others back for more than a batch), and
// its acknowledgements are its own batches' (the mux keeps every published
// batch's stream, last sequence, epoch and end position in a FIFO and hands
// a batch to its stream once every holding queue finished it). A batch
// partly acknowledged counts once it is acknowledged whole: the commit is
// conservative, never ahead.
type mux struct {
	mu   sync.Mutex
	pub  *feed.Publisher
	fifo []muxEntry
	head int

	streams map[*streamPub]struct{}
	stop    chan struct{}
	done    chan struct{}
}

type muxEntry struct {
	sp         *streamPub
	last       uint64
	n          int64
	epoch      uint64
	pos        int64
	positioned bool
}

func newMux(pub *feed.Publisher) *mux {
	m := &mux{pub: pub, streams: map[*streamPub]struct{}{}, stop: make(chan struct{}), done: make(chan struct{})}
	pub.SetEpochInfo(m.epochInfo)
	go m.pump()
	return m
}

// pump turns the feed's wake-ups into wake-ups of the streams they
// concern: those whose batches were acknowledged (pollLocked) and those
// whose last publish was refused (room may have freed). A stream read to
// its end with nothing to commit is not woken by the others' traffic: with
// hundreds of open streams, waking them all at every batch the feed's
// queues took cost more than the reading.
func (m *mux) pump() {
	defer close(m.done)
	for {
		select {
		case <-m.stop:
			return
		case <-m.pub.Wake():
		}
		m.mu.Lock()
		m.pollLocked() // wakes the streams whose batches were acknowledged
		for sp := range m.streams {
			if sp.refused {
				poke(sp.wake) // room may have freed
			}
		}
		m.mu.Unlock()
	}
}

func (m *mux) close() {
	close(m.stop)
	<-m.done
}

func (m *mux) add() *streamPub {
	sp := &streamPub{m: m, wake: make(chan struct{}, 1)}
	m.mu.Lock()
	m.streams[sp] = struct{}{}
	m.mu.Unlock()
	return sp
}

func (m *mux) remove(sp *streamPub) {
	m.mu.Lock()
	delete(m.streams, sp)
	m.mu.Unlock()
}

// pollLocked acknowledges the feed's window and hands finished batches to
// their streams.
func (m *mux) pollLocked() {
	a := m.pub.PollAcks()
	seq := m.pub.Acknowledged()
	if a.Moved {
		seq = a.Seq
	}
	for m.head < len(m.fifo) && m.fifo[m.head].last <= seq {
		e := m.fifo[m.head]
		m.fifo[m.head] = muxEntry{}
		m.head++
		sp := e.sp
		sp.pending -= e.n
		sp.ack.Seq, sp.ack.Moved = e.last, true
		sp.handed.Store(e.last)
		if e.positioned {
			sp.ack.Position, sp.ack.Epoch, sp.ack.Positioned = e.pos, e.epoch, true
		} else if !sp.ack.Positioned {
			sp.ack.Epoch = e.epoch
		}
		poke(sp.wake)
	}
	if m.head > 1024 && m.head*2 > len(m.fifo) {
		n := copy(m.fifo, m.fifo[m.head:])
		m.fifo = m.fifo[:n]
		m.head = 0
	}
}

// epochInfo tells what the stream that last published a line of epoch
// tells of it (feed.Publisher.EpochState): ended at its epoch barrier (it
// moved its file on to another epoch) or once it published a line of the
// next epoch; read to its file's end.
func (m *mux) epochInfo(epoch uint64) feed.EpochInfo {
	m.mu.Lock()
	defer m.mu.Unlock()
	var info feed.EpochInfo
	for sp := range m.streams {
		if epoch != 0 && sp.prevEpoch == epoch {
			info.Ended = true // the stream went on to another epoch (past a barrier that did not wait: best-effort)
		}
		if sp.lastEpoch != epoch || epoch == 0 {
			continue
		}
		info.Open = true
		info.Ended = info.Ended || sp.barrier
		if src := sp.src.Load(); src != nil {
			switch src.State() {
			case CaughtUp, WaitingForFile, EndOfStream:
				info.CaughtUp = true
			}
		}
	}
	return info
}

// pendingAll is every stream's unacknowledged lines.
func (m *mux) pendingAll() int64 { return m.pub.Pending() }

// streamPub is one stream's view of the feed's publisher (Publisher).
type streamPub struct {
	m       *mux
	wake    chan struct{}
	pending int64      // under m.mu
	ack     feed.Acked // acknowledgements not yet polled, under m.mu
	barrier bool       // written under m.mu
	refused bool       // under m.mu: its last publish was refused (woken by the feed's wake-ups)

	lastEpoch uint64                 // of its last published batch, under m.mu
	prevEpoch uint64                 // the epoch before lastEpoch (0: none), under m.mu
	src       atomic.Pointer[Source] // its source, once made (epochInfo)

	// handed is the last acknowledged sequence the mux handed to this
	// stream (written under m.mu, read by the glob's getters without it):
	// until its source's synced commit covers it (Source.SyncedSeq), the
	// stream's pointer is behind lines the feed counts acknowledged
	// (DESIGN §3: not settled).
	handed atomic.Uint64
}

// behind: acknowledgements were handed to this stream that synced, the
// sequence its source's last synced commit covers, does not cover yet.
func (sp *streamPub) behind(synced uint64) bool { return sp.handed.Load() > synced }

func (sp *streamPub) TryPublish(b *feed.Batch) bool {
	n := b.Len()
	if n == 0 {
		return true
	}
	e := muxEntry{sp: sp, n: int64(n), epoch: b.Epoch, pos: b.LastEnd(), positioned: b.Positioned}
	epoch := b.Epoch // b is the feed's once published
	m := sp.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.pub.TryPublish(b) { // b is the feed's from here on when true
		sp.refused = true
		return false
	}
	sp.refused = false
	e.last = m.pub.Sequence()
	m.fifo = append(m.fifo, e)
	if sp.lastEpoch != epoch {
		sp.prevEpoch = sp.lastEpoch // every line of it was published: a stream's epochs follow each other
	}
	sp.lastEpoch = epoch
	sp.pending += e.n
	return true
}

func (sp *streamPub) PollAcks() feed.Acked {
	m := sp.m
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pollLocked()
	a := sp.ack
	sp.ack.Moved = false
	if a.Moved {
		// The next poll reports only what moves after this one.
		sp.ack = feed.Acked{Seq: a.Seq, Position: a.Position, Epoch: a.Epoch}
	}
	return a
}

func (sp *streamPub) Pending() int64 {
	sp.m.mu.Lock()
	defer sp.m.mu.Unlock()
	return sp.pending
}

func (sp *streamPub) Wake() chan struct{} { return sp.wake }
func (sp *streamPub) Poke()               { poke(sp.wake) }

// A stream's barrier pauses that stream only; the feed's paused state is
// its publisher's (a refused publish).
func (sp *streamPub) SetPaused(v bool, why string) {}
func (sp *streamPub) Paused() bool                 { return sp.barrier || sp.m.pub.Paused() }
func (sp *streamPub) PauseReason() string {
	if sp.barrier {
		return whyBarrier
	}
	return sp.m.pub.PauseReason()
}

// atBarrier reports whether the stream waits at its epoch barrier (any
// goroutine).
func (sp *streamPub) atBarrier() bool {
	sp.m.mu.Lock()
	defer sp.m.mu.Unlock()
	return sp.barrier
}

func (sp *streamPub) SetBarrier(epoch uint64) {
	if v := epoch != 0; v != sp.barrier {
		sp.m.mu.Lock()
		sp.barrier = v
		sp.m.mu.Unlock()
	}
}

var _ Publisher = (*streamPub)(nil)

// Quiet runs fn while no stream of the glob publishes to or polls the
// feed's publisher (under the mux's lock): a feed a reload stopped reads
// its acknowledgement window (feed.Publisher.Marks, Through) while the
// mux's pump may still poll it until Close.
func (g *Glob) Quiet(fn func()) {
	g.mux.mu.Lock()
	defer g.mux.mu.Unlock()
	fn()
}
