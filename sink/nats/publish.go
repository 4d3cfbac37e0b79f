package nats

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"tailfeed/feed"
)

// The per-message publish path: at least once on a stream without fast
// batches (fast batches, chain.go, use the same inbox and reused message).
//
// Messages go out with nats.Conn.PublishMsg, each with a reply subject of
// the sink's own inbox (<inbox>.<id>), and the stream's acks come back on
// one channel subscription read by the group goroutine itself: one
// hand-off per ack (the connection's reader to the group), no future, no
// timer and no map entry per message, and the one nats.Msg and header map
// of a batch are reused (PublishMsg copies them into the connection's
// buffer before it returns). At most Window messages await their ack;
// when the window is full the sink waits until half of it came back, so
// publishes and acks go out and come in as large writes while the stream
// works through the other half.
//
// An ack is matched to its line by the id in its reply subject: ids grow
// for the connection's lifetime, so an ack of an earlier call (one that
// gave up on a timeout) never counts for a later one.

// acker is the reply inbox of one connection.
type acker struct {
	nc    *nats.Conn
	inbox string // <inbox>. (the reply prefix)
	ch    chan *nats.Msg
	sub   *nats.Subscription
	next  uint64 // the id of the next message

	// the current call's results, by line index
	base  uint64
	state []uint8 // 0 awaited, 1 acknowledged, 2 failed
	errs  map[int]error
	seqs  []uint64 // stream sequences (kept only when want seqs)
	dups  []bool
	done  int // leading lines acknowledged
	got   uint64
}

const (
	ackWaiting uint8 = iota
	ackOK
	ackFailed
)

// ackChanLen is the reply channel's capacity: acks past it are dropped by
// the library (a slow consumer), their lines time out and are published
// again, so it is far above any window.
func ackChanLen(window int) int { return max(1<<16, 4*window) }

// acks returns the reply inbox of the current connection, subscribing it
// at first use.
func (s *Sink) acks() (*acker, error) {
	if s.ack != nil && s.ack.nc == s.nc {
		return s.ack, nil
	}
	if s.ack != nil {
		_ = s.ack.sub.Unsubscribe()
	}
	a := &acker{nc: s.nc, inbox: s.nc.NewInbox() + ".", ch: make(chan *nats.Msg, ackChanLen(s.cfg.Window)), errs: map[int]error{}}
	sub, err := s.nc.ChanSubscribe(a.inbox+">", a.ch) // <id>, or a fast batch's reply (chain.go)
	if err != nil {
		return nil, s.unavailable(fmt.Errorf("nats %s: subscribing the ack inbox: %w", s.shown, err))
	}
	a.sub = sub
	s.ack = a
	return a, nil
}

// begin starts a call publishing n messages.
func (a *acker) begin(n int, seqs bool) {
	a.base = a.next
	a.next += uint64(n)
	a.state = grow(a.state, n)
	clear(a.errs)
	a.done = 0
	if seqs {
		a.seqs = grow(a.seqs, n)
		a.dups = grow(a.dups, n)
	} else {
		a.seqs, a.dups = a.seqs[:0], a.dups[:0]
	}
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// reply builds the reply subject of line i.
func (a *acker) reply(buf []byte, i int) []byte {
	buf = append(buf, a.inbox...)
	return strconv.AppendUint(buf, a.base+uint64(i), 10)
}

var (
	ackPrefix = []byte(`{"stream":`)
	ackError  = []byte(`"error"`)
	ackSeq    = []byte(`"seq":`)
	ackDup    = []byte(`"duplicate"`)
)

// take records one ack.
func (s *Sink) take(a *acker, m *nats.Msg, subj string) {
	if len(m.Subject) <= len(a.inbox) {
		return
	}
	id, err := strconv.ParseUint(m.Subject[len(a.inbox):], 10, 64)
	if err != nil || id < a.base || id-a.base >= uint64(len(a.state)) {
		return // another call's (it gave up on it)
	}
	i := int(id - a.base)
	if a.state[i] != ackWaiting {
		return
	}
	a.got++
	seq, dup, err := s.parseAck(m, subj)
	if err != nil {
		a.state[i] = ackFailed
		a.errs[i] = err
		return
	}
	a.state[i] = ackOK
	if len(a.seqs) > 0 {
		a.seqs[i], a.dups[i] = seq, dup
	}
	for a.done < len(a.state) && a.state[a.done] == ackOK {
		a.done++
	}
}

// parseAck reads a publish ack: the stream sequence and whether it was a
// duplicate, or the error (classified).
func (s *Sink) parseAck(m *nats.Msg, subj string) (uint64, bool, error) {
	d := m.Data
	if bytes.HasPrefix(d, ackPrefix) && !bytes.Contains(d, ackError) {
		// The stream's own template: {"stream":"S",["domain":"D",]"seq":N[,"duplicate": true]}
		if k := bytes.Index(d, ackSeq); k >= 0 {
			j := k + len(ackSeq)
			for j < len(d) && d[j] == ' ' {
				j++
			}
			var seq uint64
			n := 0
			for ; j < len(d) && d[j] >= '0' && d[j] <= '9'; j++ {
				seq = seq*10 + uint64(d[j]-'0')
				n++
			}
			if n > 0 {
				return seq, bytes.Contains(d, ackDup), nil
			}
		}
	}
	if len(d) == 0 && m.Header.Get("Status") == "503" {
		return 0, false, s.classify(jetstream.ErrNoStreamResponse, subj)
	}
	var r struct {
		Error     *jetstream.APIError `json:"error"`
		Stream    string              `json:"stream"`
		Seq       uint64              `json:"seq"`
		Duplicate bool                `json:"duplicate"`
	}
	if err := json.Unmarshal(d, &r); err != nil {
		return 0, false, s.unavailable(fmt.Errorf("nats publish to %s: an ack that is not one (%q): %w", s.shown, trim(d), err))
	}
	if r.Error != nil {
		return 0, false, s.classify(r.Error, subj)
	}
	if r.Stream == "" {
		return 0, false, s.unavailable(fmt.Errorf("nats publish to %s: an ack without a stream (%q)", s.shown, trim(d)))
	}
	return r.Seq, r.Duplicate, nil
}

func trim(d []byte) []byte {
	if len(d) > 200 {
		return d[:200]
	}
	return d
}

// failedAt is the failure that stops the call at line a.done, if its
// result came.
func (a *acker) failedAt() error {
	if a.done < len(a.state) && a.state[a.done] == ackFailed {
		return a.errs[a.done]
	}
	return nil
}

// waitFor reads acks until at least target leading lines are
// acknowledged, or the line after the acknowledged ones failed (its error
// returned), or no ack came for the timeout, the connection was lost, or
// ctx ended.
func (s *Sink) waitFor(ctx context.Context, a *acker, gen uint64, target int, subj string, t **time.Timer) error {
	if a.done >= target {
		return nil
	}
	if err := a.failedAt(); err != nil {
		return err
	}
	if *t == nil {
		*t = time.NewTimer(s.cfg.Timeout)
	} else {
		(*t).Reset(s.cfg.Timeout)
	}
	seen := a.got
	for {
		select {
		case m := <-a.ch:
			s.take(a, m, subj)
		drain:
			for a.done < target {
				select {
				case m := <-a.ch:
					s.take(a, m, subj)
				default:
					break drain
				}
			}
		case <-(*t).C:
			if a.got == seen {
				return s.unavailable(fmt.Errorf("nats publish to %s: no ack in %v", s.shown, s.cfg.Timeout))
			}
			seen = a.got
			(*t).Reset(s.cfg.Timeout)
		case <-s.kick:
		case <-ctx.Done():
			return ctx.Err()
		}
		if a.done >= target {
			return nil
		}
		if err := a.failedAt(); err != nil {
			return err
		}
		if err := s.deniedSince(s.deny, subj); err != nil {
			return err
		}
		if s.gen.Load() != gen {
			return s.unavailable(fmt.Errorf("nats publish to %s: %s", s.shown, s.lostCause()))
		}
	}
}

// lostCause says why the connection went away.
func (s *Sink) lostCause() string {
	if e := s.lastErr.Load(); e != nil {
		return "the connection was lost (" + *e + ")"
	}
	return "the connection was lost"
}

// kicked wakes a waiting call (the connection's state changed).
func (s *Sink) kicked() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// lineMsg builds the messages of a batch on one reused nats.Msg.
type lineMsg struct {
	m      nats.Msg
	pos    []string
	id     []string
	idPfx  string // <instance>:<feed>:<epoch>:
	buf    []byte
	posted bool
}

func (s *Sink) newLineMsg(b *feed.Batch, subj, epoch string) *lineMsg {
	l := &lineMsg{pos: []string{""}, id: []string{""}}
	l.m.Subject = subj
	l.m.Header = nats.Header{
		HeaderInstance: {s.cfg.Instance},
		HeaderFeed:     {b.Feed},
		HeaderEpoch:    {epoch},
		HeaderPath:     {b.Path},
	}
	if b.Placed() { // downgraded lines too: their id is unique (audit 9E)
		l.m.Header[HeaderPosition] = l.pos
		l.m.Header[jetstream.MsgIDHeader] = l.id
		l.idPfx = s.cfg.Instance + ":" + b.Feed + ":" + epoch + ":"
		l.posted = true
	}
	return l
}

// set makes the message line i of b, replying to a's id r (none if r < 0):
// one string holds the reply subject, the Nats-Msg-Id and the position.
func (l *lineMsg) set(a *acker, b *feed.Batch, i, r int) {
	buf := l.buf[:0]
	if r >= 0 {
		buf = a.reply(buf, r)
	}
	r = len(buf)
	var p int
	if l.posted {
		buf = append(buf, l.idPfx...)
		p = len(buf)
		buf = strconv.AppendInt(buf, b.Ends[i], 10)
	}
	l.buf = buf
	str := string(buf)
	l.m.Reply = str[:r]
	if l.posted {
		l.id[0] = str[r:]
		l.pos[0] = str[p:]
	}
	l.m.Data = b.Lines[i]
}

// publishAsync publishes b's lines from line `from`, at most Window
// awaiting their ack, and returns when every one is acknowledged (done =
// len), or the count of leading lines acknowledged and the first failure.
func (s *Sink) publishAsync(ctx context.Context, b *feed.Batch, subj, epoch string) (int, error) {
	a, err := s.acks()
	if err != nil {
		return 0, err
	}
	gen := s.gen.Load()
	n := len(b.Lines)
	a.begin(n, false)
	l := s.newLineMsg(b, subj, epoch)
	var t *time.Timer
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	w := s.cfg.Window
	for i := 0; i < n; i++ {
		if i-a.done >= w {
			// The window is full: wait for half of it.
			if err := s.waitFor(ctx, a, gen, i-w/2, subj, &t); err != nil {
				return a.done, err
			}
		}
		l.set(a, b, i, i)
		if err := s.nc.PublishMsg(&l.m); err != nil {
			return s.settle(ctx, a, gen, i, subj, &t, s.classify(err, subj))
		}
	}
	if err := s.waitFor(ctx, a, gen, n, subj, &t); err != nil {
		return a.done, err
	}
	return n, nil
}

// settle ends a call whose line `sent` could not be published (err): the
// acks of the lines before it still count (they are awaited, within the
// timeout), so done is as far as the stream acknowledged.
func (s *Sink) settle(ctx context.Context, a *acker, gen uint64, sent int, subj string, t **time.Timer, err error) (int, error) {
	if e := s.waitFor(ctx, a, gen, sent, subj, t); e != nil {
		return a.done, e
	}
	return a.done, err
}
