package nats

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"tailfeed/feed"
)

// exactlyOnce in fast batches.
//
// The sequence chain (each message stored only after its predecessor) is
// kept a batch at a time, with JetStream's fast batch publish in its
// gap-fail mode (stream allow_batched, nats-server 2.14 or later;
// createStream sets it). A call's lines go out as one batch, pipelined
// like the at-least-once path: each message's reply subject names the
// batch, its place in it and the commit on the last
// (<inbox>.<batch>.<flow>.fail.<n>.<op>.$FI). The batch's first message
// carries Nats-Expected-Last-Subject-Sequence = the sequence of the last
// message the sink stored on the subject; every message keeps its
// Nats-Msg-Id. The server stores the messages in order and ends the batch
// at the first one it does not store (a refused expectation, a rejected
// message, a gap: a message lost on a dropped connection), storing none
// after it; a batch it no longer knows (its inactivity timeout, a server
// restart) stores nothing more. So what the batch stored is always a
// prefix of it, right after the expected message: a message is still
// stored only after its predecessor, and the subject's last message is
// still the sink's record. The final ack tells how many were stored and
// the last one's sequence; flow acks every few hundred messages ("the
// first k are stored") pace the window.
//
// On a failure the sink re-reads the subject's last message before the
// retry (the record), as the one-at-a-time chain does. A batch's rejected
// message is named by the server (its sequence in the batch), so done is
// exact and the group's retries and onFailure apply to that line.
//
// A stream without allow_batched (made by hand, or an older server) gets
// the one-at-a-time chain (publishChained), with an INFO saying so.
//
// Outside the prefix rule (nats-server 2.15, stream.go): a message that
// passes the server's checks and then fails in the store (an I/O error, a
// limit the store enforces itself) is answered with a plain error and the
// batch is not ended, so later messages may be stored after the gap. The
// sink stops at that reply (done is before the failed line: at least once
// holds). Under exactlyOnce the re-read record may then be past the failed
// line, which the skip would count as held: the sink remembers the line
// (suspect) and, while the subject's record is past it, holds the feed
// with the reason instead (checkSuspect) until a release gives it up.

// fastBatches reports whether the stream takes fast batches.
func (s *Sink) fastBatches() bool {
	if s.stream == nil {
		return false
	}
	info := s.stream.CachedInfo()
	if info == nil {
		return false
	}
	if !info.Config.AllowBatchPublish && !s.toldChain {
		s.toldChain = true
		how := "each message gets its own ack"
		if s.cfg.ExactlyOnce {
			how = "exactlyOnce publishes one message per round trip"
		}
		s.log.Info("nats stream does not allow fast batches, so "+how+" (set allow_batched: true on it, nats-server 2.14 or later, for batches)",
			"stream", s.cfg.Stream)
	}
	return info.Config.AllowBatchPublish
}

// hdrExpectLast is the header of the sequence chain.
const hdrExpectLast = "Nats-Expected-Last-Subject-Sequence"

// fastReply is one reply to a fast batch.
type fastReply struct {
	Type   string              `json:"type"` // ack, err, gap; "" for a PubAck (or a plain error)
	Seq    uint64              `json:"seq"`  // ack, err: the batch sequence; PubAck: the stream sequence
	Error  *jetstream.APIError `json:"error"`
	Batch  string              `json:"batch"`
	Stream string              `json:"stream"`
	Count  uint64              `json:"count"`
	Dup    bool                `json:"duplicate"`
}

// fastState is what a fast batch learned from its replies.
type fastState struct {
	stored uint64 // leading messages known stored (flow acks)
	errAt  uint64 // the batch sequence of the first rejected message (0: none)
	err    error
	done   bool   // the final ack (or the first message's own error) came
	count  uint64 // final: messages stored
	seq    uint64 // final: the stream sequence of the last one stored
	dup    bool   // final: the first message was a duplicate (stored before)
	gone   bool   // the server does not know the batch (any more)
	// storeFail: the batch sequence of a message the server failed to
	// store without ending the batch (0: none).
	storeFail uint64
	replies   uint64
}

// publishFast publishes lines i.. of b as one fast batch chained to rec
// (exactlyOnce), or unchained (rec nil: at least once, where the batch
// saves the stream an ack per line).
func (s *Sink) publishFast(ctx context.Context, b *feed.Batch, subj, epoch string, rec *record, i int) (int, error) {
	n := len(b.Lines) - i
	if n <= 0 {
		return len(b.Lines), nil // every line skipped: the subject holds them
	}
	if n == 1 {
		if rec == nil {
			return s.publishAsync(ctx, b, subj, epoch) // i is 0 at least once
		}
		return s.publishOne(ctx, b, subj, epoch, rec, i)
	}
	a, err := s.acks()
	if err != nil {
		return i, err
	}
	gen := s.gen.Load()
	s.batchN++
	id := a.inbox[len("_INBOX."):len(a.inbox)-1] + "-" + strconv.FormatUint(s.batchN, 10)
	w := max(1, s.cfg.Window)
	flow := min(max(1, w/4), 65535)
	base := a.inbox + id + "."
	pfx := base + strconv.Itoa(flow) + ".fail."
	l := s.newLineMsg(b, subj, epoch)
	h := l.m.Header
	if rec != nil {
		h[hdrExpectLast] = []string{strconv.FormatUint(rec.seq, 10)}
	}
	var st fastState
	var t *time.Timer
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	fail := func(err error) (int, error) {
		s.overloadedFast(subj, err)
		if rec == nil {
			return i + int(st.stored), err
		}
		delete(s.recs, subj) // re-read the subject's last message before the retry
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
			s.log.Warn("nats subject moved under the sink (another writer, a restore, a lost ack); re-reading its last message",
				"subject", subj, "expected", rec.seq)
		}
		return i + int(st.stored), err
	}
	for k := 1; k <= n && !st.done && st.errAt == 0 && !st.gone; k++ {
		if uint64(k-1)-st.stored >= uint64(w) {
			target := uint64(k-1) - uint64(w/2)
			if err := s.waitFast(ctx, a, gen, base, subj, &st, &t, func() bool { return st.stored >= target }); err != nil {
				return fail(err)
			}
			if st.done || st.errAt != 0 || st.gone {
				break
			}
		}
		op := 1
		switch {
		case k == n:
			op = 2 // commit
		case k == 1:
			op = 0 // start
		}
		buf := append(l.buf[:0], pfx...)
		buf = strconv.AppendInt(buf, int64(k), 10)
		buf = append(buf, '.')
		buf = strconv.AppendInt(buf, int64(op), 10)
		buf = append(buf, ".$FI"...)
		r := len(buf)
		buf = append(buf, l.idPfx...)
		p := len(buf)
		buf = strconv.AppendInt(buf, b.Ends[i+k-1], 10)
		l.buf = buf
		str := string(buf)
		l.m.Reply, l.id[0], l.pos[0] = str[:r], str[r:], str[p:]
		l.m.Data = b.Lines[i+k-1]
		err := s.nc.PublishMsg(&l.m)
		if k == 1 {
			delete(h, hdrExpectLast)
		}
		if err != nil {
			if k == 1 {
				return fail(s.classify(err, subj))
			}
			// Nothing after line k went out: end the batch where it is
			// (the server stores nothing more of it once it times out);
			// what it stored is read back from the subject.
			return fail(s.classify(err, subj))
		}
	}
	err = s.waitFast(ctx, a, gen, base, subj, &st, &t, func() bool { return st.done || st.gone })
	if st.storeFail > 0 && rec != nil && int(st.storeFail) <= n {
		s.suspect = &suspect{subj: subj, epoch: b.Epoch, pos: b.Ends[i+int(st.storeFail)-1], err: st.err}
		s.log.Warn("nats stream failed to store a line inside a batch and may have stored later ones; the subject is checked before the retry",
			"subject", subj, "position", s.suspect.pos, "error", st.err)
	}
	if err != nil {
		return fail(err)
	}
	if st.storeFail > 0 {
		// The final reply's count does not say which lines were stored
		// around the failed one: the subject is read back (fail).
		return fail(st.err)
	}
	switch {
	case st.dup:
		// A batch answered as a duplicate of its first line (the server
		// skips a duplicate inside a batch and counts it, so this is only
		// a batch it ended right there).
		delete(s.recs, subj)
		if rec == nil {
			return i + 1, nil
		}
		// exactlyOnce: stored only if the subject holds it (chainOne's doc).
		held, nr, err := s.dupHeld(ctx, b, subj, i)
		if err != nil {
			return i, err
		}
		if !held {
			s.dupWarn(subj, b.Ends[i], st.seq)
			s.sawRemoval(subj)
			if err := s.chainOne(ctx, b, subj, epoch, &nr, i, st.seq); err != nil {
				return i, err
			}
		}
		return i + 1, nil
	case st.done && st.count > 0:
		if rec != nil && st.seq == 0 {
			// No stream sequence in the final ack (a batch of duplicates
			// only): never expect sequence 0; read the subject again.
			delete(s.recs, subj)
			nr, err := s.record(ctx, subj)
			if err != nil {
				return i, err
			}
			*rec = *nr
			s.recs[subj] = rec
			if !b.AlreadyApplied(len(b.Lines)-1, rec.epoch, rec.position) || !rec.has {
				// Skipped as duplicates, and not in the subject.
				s.dupWarn(subj, b.Ends[i], 0)
				s.sawRemoval(subj)
				return i, errDupBatch
			}
		} else if rec != nil {
			rec.seq = st.seq
			if st.count <= uint64(n) {
				rec.epoch, rec.position, rec.has = b.Epoch, b.Ends[i+int(st.count)-1], true
			}
		}
		st.stored = st.count
	}
	if st.done && st.count == uint64(n) {
		return len(b.Lines), nil
	}
	if st.err != nil && (!st.done || st.errAt == st.count+1) {
		return fail(st.err)
	}
	if st.gone {
		return fail(s.unavailable(fmt.Errorf("nats stream %q: the server ended the batch (a timeout or a restart) after %d of %d lines", s.cfg.Stream, st.stored, n)))
	}
	return fail(s.unavailable(fmt.Errorf("nats stream %q stored %d of %d lines of a batch without naming an error", s.cfg.Stream, st.count, n)))
}

// suspect is a line the stream failed to store inside a fast batch
// (exactlyOnce): until the subject is known not to hold later lines, the
// record cannot be trusted to skip it.
type suspect struct {
	subj  string
	epoch uint64
	pos   int64
	err   error
}

// checkSuspect holds the feed when the subject's record passed a line the
// stream failed to store (it is not in the subject, and the chain cannot
// put it back in order): only a release gives it up. A record before the
// line clears the suspicion (nothing after it was stored), and so does a
// batch that no longer holds the line (it was released).
func (s *Sink) checkSuspect(rec *record, b *feed.Batch, subj string) error {
	sp := s.suspect
	if sp == nil || sp.subj != subj || !b.Positioned || len(b.Ends) == 0 {
		return nil
	}
	if b.Epoch != sp.epoch || b.Ends[0] > sp.pos {
		s.suspect = nil // given up (released), or another epoch
		return nil
	}
	if b.Ends[len(b.Ends)-1] < sp.pos {
		return nil // not there yet
	}
	if !rec.has || rec.epoch != sp.epoch || rec.position < sp.pos {
		s.suspect = nil // the subject stops before it: the chain holds
		return nil
	}
	return s.unavailable(fmt.Errorf("nats subject %s may lack the line at position %d: stream %q failed to store it inside a batch (%v) and stored later lines, so it cannot be put back in order; POST /admin/release gives it up",
		subj, sp.pos, s.cfg.Stream, sp.err))
}

// fastClassify is classify for a fast batch's reply: an error of the batch
// protocol itself (batch publish disabled since the stream was read, too
// many batches in flight, a batch id the server forgot) is the engine's,
// never a line's: it holds, and the stream is read again before the retry.
func (s *Sink) fastClassify(e *jetstream.APIError) error {
	if e == nil {
		return s.unavailable(fmt.Errorf("nats stream %q: an error reply without an error", s.cfg.Stream))
	}
	if e.ErrorCode >= 10205 && e.ErrorCode <= 10211 { // JSBatchPublish*: disabled, pattern, id, unknown id, in flight
		s.stream = nil
		return s.unavailable(fmt.Errorf("nats stream %q (fast batch): %w", s.cfg.Stream, e))
	}
	return s.classify(e, "")
}

// waitFast reads the batch's replies until ok() holds, the batch ended,
// or no reply came for the timeout, the connection was lost, or ctx ended.
func (s *Sink) waitFast(ctx context.Context, a *acker, gen uint64, base, subj string, st *fastState, t **time.Timer, ok func() bool) error {
	// After a store failure inside the batch the server goes on with its
	// later messages: the batch's end is waited for (its final reply, or
	// the timeout), so that the subject read back next holds all the
	// batch stored — read before, it could end before the failed line
	// and clear the suspicion while later lines were still being stored
	// (the chain then skipped the failed line as applied: lost).
	end := func() bool { return (ok() || st.done || st.gone) && (st.storeFail == 0 || st.done) }
	if end() {
		return nil
	}
	if *t == nil {
		*t = time.NewTimer(s.cfg.Timeout)
	} else {
		(*t).Reset(s.cfg.Timeout)
	}
	seen := st.replies
	for {
		select {
		case m := <-a.ch:
			s.takeFast(m, base, st)
		case <-(*t).C:
			if st.replies == seen {
				if st.storeFail > 0 {
					return nil // no end after the store failure: st.err tells why
				}
				return s.unavailable(fmt.Errorf("nats publish to %s: no ack in %v", s.shown, s.cfg.Timeout))
			}
			seen = st.replies
			(*t).Reset(s.cfg.Timeout)
		case <-s.kick:
		case <-ctx.Done():
			return ctx.Err()
		}
		if end() {
			return nil
		}
		if err := s.deniedSince(s.deny, subj); err != nil {
			return err
		}
		if s.gen.Load() != gen {
			return s.unavailable(fmt.Errorf("nats publish to %s: %s", s.shown, s.lostCause()))
		}
	}
}

// takeFast records one reply of the batch whose reply subjects start with
// base (others are an earlier batch's).
func (s *Sink) takeFast(m *nats.Msg, base string, st *fastState) {
	if !strings.HasPrefix(m.Subject, base) {
		return
	}
	st.replies++
	// <flow>.fail.<n>.<op>.$FI: the message the reply is about.
	toks := strings.Split(m.Subject[len(base):], ".")
	var k uint64
	if len(toks) == 5 {
		k, _ = strconv.ParseUint(toks[2], 10, 64)
	}
	var r fastReply
	if err := json.Unmarshal(m.Data, &r); err != nil {
		if len(m.Data) == 0 && m.Header.Get("Status") == "503" {
			st.gone, st.err = true, s.classify(jetstream.ErrNoStreamResponse, "")
			if st.errAt == 0 {
				st.errAt = max(k, 1)
			}
		}
		return
	}
	e := r.Error
	if e == nil {
		e = &jetstream.APIError{}
	}
	switch r.Type {
	case "ack":
		st.stored = max(st.stored, r.Seq)
	case "err":
		if st.errAt == 0 || r.Seq < st.errAt {
			st.errAt, st.err = r.Seq, s.fastClassify(r.Error)
		}
	case "gap":
		// The final ack follows with what was stored.
	default:
		switch {
		case r.Error != nil && k == 1:
			// The first message's own error: nothing of the batch stored.
			st.done, st.count = true, 0
			st.errAt, st.err = 1, s.fastClassify(r.Error)
		case r.Error != nil && e.ErrorCode >= 10205 && e.ErrorCode <= 10211:
			// A message after the batch ended, or a batch the server
			// forgot (unknown batch id): nothing more is stored.
			st.gone = true
			if st.err == nil {
				st.err = s.fastClassify(r.Error)
			}
		case r.Error != nil:
			// Message k failed in the server's store after its checks:
			// the batch goes on, later messages may be stored (see the doc
			// above).
			st.gone = true
			if st.errAt == 0 || k < st.errAt {
				st.errAt, st.err = k, s.fastClassify(r.Error)
			}
			if st.storeFail == 0 || k < st.storeFail {
				st.storeFail = k
			}
		case r.Batch != "" || r.Stream != "":
			st.done, st.count, st.seq, st.dup = true, r.Count, r.Seq, r.Dup
			if r.Dup && r.Count <= 1 {
				st.count = 0
			}
		}
	}
}

// publishOne publishes line i alone, expecting rec.seq before it, and
// returns the lines done (i+1 on success).
func (s *Sink) publishOne(ctx context.Context, b *feed.Batch, subj, epoch string, rec *record, i int) (int, error) {
	if err := s.chainOne(ctx, b, subj, epoch, &rec, i, 0); err != nil {
		return i, err
	}
	return i + 1, nil
}

// chainOne publishes line i of b alone, expecting (*rec).seq before it on
// the subject (exactlyOnce, one round trip). On success the line is in the
// subject and *rec is the subject's last message. dupOf > 0: the stream
// answered the line's Nats-Msg-Id as a duplicate of that sequence, which
// the subject does not hold: it goes out under the suffixed id at once.
//
// A Duplicate answer only says a message with the line's Nats-Msg-Id was
// stored within the stream's duplicate window, not that it is still there:
// the server checks the Msg-Id before the expected sequence (nats-server
// 2.15 checkMsgHeadersPreClusteredProposal), so after a restore (messages
// deleted or purged back to an earlier point, the window still holding
// their ids) the re-published lines are answered as duplicates and were
// never stored again. So a duplicate counts as stored only when the
// subject's last message, read again, is at or past the line (the chain
// stores a line only after its predecessor, so then the line is there).
// Otherwise the line is published again with Nats-Msg-Id
// `<instance>:<feed>:<epoch>:<position>:<sequence>`, the sequence being the
// removed message's (stream sequences never repeat, so the id is one the
// window cannot hold, and a second restore gives a new one); its
// expected-last-subject-sequence still orders it, and the tailfeed-*
// headers are unchanged.
func (s *Sink) chainOne(ctx context.Context, b *feed.Batch, subj, epoch string, rec **record, i int, dupOf uint64) error {
	r := *rec
	m := s.message(b, subj, epoch, i)
	applied := s.setApplied(m, b, subj, r) // a line without a position carries the done-through mark
	id := m.Header.Get(jetstream.MsgIDHeader)
	if dupOf > 0 && id != "" {
		m.Header[jetstream.MsgIDHeader] = []string{id + ":" + strconv.FormatUint(dupOf, 10)}
	}
	for try := 0; ; try++ {
		pctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
		ack, err := s.js.PublishMsg(pctx, m, jetstream.WithExpectLastSequencePerSubject(r.seq))
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			delete(s.recs, subj) // re-read the subject's last message before the retry
			if e := s.deniedSince(s.deny, subj); e != nil {
				return e
			}
			var apiErr *jetstream.APIError
			if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
				s.log.Warn("nats subject moved under the sink (another writer, a restore, a lost ack); re-reading its last message",
					"subject", subj, "expected", r.seq)
			}
			return s.classify(err, subj)
		}
		if !ack.Duplicate {
			r.seq = ack.Sequence
			if b.Positioned {
				r.epoch, r.position, r.has = b.Epoch, b.Ends[i], true
				r.feed = b.Feed
			} else if applied != nil {
				seq := r.seq
				*r = *applied
				r.seq = seq
			}
			return nil
		}
		held, nr, err := s.dupHeld(ctx, b, subj, i)
		if err != nil {
			return err
		}
		*rec, r = nr, nr
		if held {
			return nil
		}
		s.sawRemoval(subj)
		if try >= 3 || id == "" {
			return s.unavailable(fmt.Errorf("nats stream %q keeps answering the line at position %d as a duplicate (of sequence %d) that subject %s does not hold",
				s.cfg.Stream, b.Ends[i], ack.Sequence, subj))
		}
		m.Header[jetstream.MsgIDHeader] = []string{id + ":" + strconv.FormatUint(ack.Sequence, 10)}
		s.dupWarn(subj, b.Ends[i], ack.Sequence)
	}
}

// errDupBatch: a fast batch was answered as duplicates only (final ack
// without a stream sequence) and the subject does not hold its lines:
// publishChained goes on one line at a time from the returned done.
var errDupBatch = errors.New("nats: a fast batch of duplicates the subject does not hold")

// sawRemoval notes that subj lost messages within the stream's duplicate
// window: until the window has passed, every id it held may be answered as
// a duplicate, which a fast batch skips silently, so the subject's lines go
// one at a time (chainOne checks each duplicate).
func (s *Sink) sawRemoval(subj string) {
	w := 2 * time.Minute
	if s.stream != nil {
		if info := s.stream.CachedInfo(); info != nil && info.Config.Duplicates > 0 {
			w = info.Config.Duplicates
		}
	}
	if s.oneByOne == nil {
		s.oneByOne = map[string]time.Time{}
	}
	s.oneByOne[subj] = time.Now().Add(w)
}

// removedAfter checks, after a record read from the stream (start,
// reconnect, a failure), whether the stream lost messages stored after
// rec, the subject's last message: a restore by deleting or purging the
// subject's last messages. Their Nats-Msg-Ids stay in the stream's
// duplicate window, and the lines they held are re-published (the
// catch-up, DESIGN §11). The first of them goes alone (publishChained), so
// an id still in the window shows there; but at the window's edge that
// line's id (stored first) may have expired while later ones have not,
// and a fast batch skips a duplicate past its first message silently
// (nats-server 2.15 processJetStreamFastBatchMsg), counting it stored. So when
// the stream may have lost messages after rec, the subject goes one line
// at a time (chainOne checks every duplicate against the subject) until
// the duplicate window has passed: every removed id was stored before
// this read, so it has expired by then.
//
// The stream's state tells: nothing was stored after rec (LastSeq), or
// every sequence from rec's to LastSeq is still there (no deleted
// sequence, none purged from the front past rec). Sequences never repeat
// and LastSeq never goes back, so a removed message after rec always
// shows. A shared stream with deletions elsewhere (other subjects, limits,
// acks of an interest stream) also goes one line at a time for the window
// after a record read: slower, never wrong.
func (s *Sink) removedAfter(ctx context.Context, subj string, rec *record) error {
	if s.stream == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	info, err := s.stream.Info(ctx)
	if err != nil {
		return s.unavailable(fmt.Errorf("nats reading stream %q's state: %w", s.cfg.Stream, err))
	}
	st := info.State
	if st.LastSeq <= rec.seq ||
		(st.NumDeleted == 0 && st.FirstSeq <= rec.seq+1 && st.Msgs >= st.LastSeq-st.FirstSeq+1) {
		return nil
	}
	s.sawRemoval(subj)
	s.log.Info("nats stream lost messages after the subject's last one (deleted or purged: a restore?) or elsewhere; exactlyOnce publishes one line at a time until the duplicate window has passed, so that a line still in it is checked against the subject",
		"subject", subj, "sequence", rec.seq, "streamLast", st.LastSeq, "deleted", st.NumDeleted, "until", s.oneByOne[subj].UTC().Format(time.RFC3339))
	return nil
}

// overloadBackoff is how long a subject whose fast batch met the stream's
// overload goes one message per round trip (overloadedFast).
const overloadBackoff = 10 * time.Second

// overloadedFast notes a fast batch that failed on the stream's overload
// (429: its ingest queue full, a message dropped inside the batch). The
// batch's end is then waited for — its final reply, or the timeout when
// the server dropped that too — before the subject is read back, so under
// a sustained overload each batch cost the timeout and stored a few lines
// (2,000 lines took minutes in TestOverloadedExactlyOnceInOrder). For
// overloadBackoff the subject goes one message per round trip, where a 429
// fails one message at once and the retry goes on from it; then fast
// batches again. A removal's longer one-by-one window is kept.
func (s *Sink) overloadedFast(subj string, err error) {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || apiErr.Code != 429 {
		return
	}
	if s.oneByOne == nil {
		s.oneByOne = map[string]time.Time{}
	}
	if until := time.Now().Add(overloadBackoff); until.After(s.oneByOne[subj]) {
		s.oneByOne[subj] = until
	}
}

// lineByLine reports whether subj's lines go one at a time (sawRemoval,
// overloadedFast).
func (s *Sink) lineByLine(subj string) bool {
	t, ok := s.oneByOne[subj]
	if ok && time.Now().After(t) {
		delete(s.oneByOne, subj)
		return false
	}
	return ok
}

// dupHeld re-reads subj's last message after the stream answered line i
// as a duplicate: held when the subject holds the line (its last message
// is at or past it).
func (s *Sink) dupHeld(ctx context.Context, b *feed.Batch, subj string, i int) (bool, *record, error) {
	delete(s.recs, subj)
	r, err := s.record(ctx, subj)
	if err != nil {
		return false, nil, err
	}
	return !b.Positioned || (r.has && b.AlreadyApplied(i, r.epoch, r.position)), r, nil
}

// dupWarn logs a duplicate answer for a line the subject does not hold
// (once per subject and 10 s: a restore answers every removed line so).
func (s *Sink) dupWarn(subj string, pos int64, seq uint64) {
	if time.Since(s.dupLogged) < 10*time.Second {
		return
	}
	s.dupLogged = time.Now()
	s.log.Warn("nats stream answered a line as a duplicate of a message its subject no longer holds (removed within the duplicate window: a restore?); publishing it again under a Nats-Msg-Id suffixed with that sequence (repeats not logged for 10 s)",
		"subject", subj, "position", pos, "duplicateOf", seq)
}
