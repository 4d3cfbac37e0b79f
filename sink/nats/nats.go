// Package nats is the `nats` sink (DESIGN §11): it publishes each line to a
// NATS JetStream stream and counts it processed on the publish ack.
//
// Each message's body is the raw line; its subject is the configured
// template with {instance}, {feed}, {path} and {epoch} filled in ({path}
// without its leading '/', every '/', '.', space, '*' and '>' made '_', so
// it stays one subject token: /var/log/app.log gives var_log_app_log;
// {epoch} is 16 lowercase hex digits). Headers: Nats-Msg-Id
// `<instance>:<feed>:<epoch>:<position>` (the stream drops a re-publish
// within its duplicate window) and tailfeed-instance, tailfeed-feed,
// tailfeed-epoch, tailfeed-position, tailfeed-path.
//
// On a stream with allow_batched (createStream sets it) a batch goes out
// as one JetStream fast batch in gap-fail mode, pipelined with a flow ack
// every few hundred messages (chain.go); without it, at least once
// publishes through the connection with a reply inbox, at most
// batchMaxLines awaiting their ack (publish.go). Either way ProcessBatch
// returns once the stream acknowledged every line of the batch (done =
// len), or the count of leading lines it stored and the first failure (at
// least once: a line whose ack was lost is published again, and the stream
// dedupes it only within its duplicate window).
//
// With exactlyOnce a message is stored only after its predecessor: in a
// fast batch the first message carries Nats-Expected-Last-Subject-Sequence
// = the sequence of the last message this sink stored on the subject, and
// the server stores a prefix of the batch right after it; without fast
// batches every message carries it (one round trip per line). At start,
// after every reconnect and after any failure the sink reads the last
// message of the subject: its tailfeed-epoch and tailfeed-position headers
// are the record, and deliveries AlreadyApplied under it are skipped. A
// line without a position (a dead-letter replay, a downgraded line) has no
// Nats-Msg-Id and no tailfeed-position; under exactlyOnce it carries the
// record instead (tailfeed-applied-epoch, tailfeed-applied-position), so a
// replay never moves the record back.
//
// Failures: a connection failure, a timeout, JetStream unavailable or a
// missing stream wrap processor.ErrFatal, so the group retries them at its
// backoff cap whatever onFailure says (the feed stalls with the reason). A
// message the server rejects (over the stream's or the server's size
// limit, any other API error) is returned plain and follows onFailure.
package nats

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"tailfeed/config"
	"tailfeed/feed"
	"tailfeed/internal/redact"
	"tailfeed/processor"
)

// Header names.
const (
	HeaderInstance = "tailfeed-instance"
	HeaderFeed     = "tailfeed-feed"
	HeaderEpoch    = "tailfeed-epoch"
	HeaderPosition = "tailfeed-position"
	HeaderPath     = "tailfeed-path"
	// On an exactlyOnce message without a position (a dead-letter replay,
	// a downgraded line): the sink's record when it was published, so the
	// subject's last message still tells a restart what it holds.
	HeaderAppliedEpoch    = "tailfeed-applied-epoch"
	HeaderAppliedPosition = "tailfeed-applied-position"
)

// Config configures a Sink.
type Config struct {
	Group        processor.Host
	URL          string // one or more comma-separated server URLs
	Stream       string
	Subject      string // template
	CreateStream bool
	ExactlyOnce  bool
	Instance     string
	TLS          *config.NatsTLS
	CredsFile    string
	Token        string
	Timeout      time.Duration // per publish ack and per API request
	Window       int           // messages awaiting their ack at once (batchMaxLines)
	Logger       hclog.Logger
}

// Sink is the nats sink.
type Sink struct {
	cfg    Config
	log    hclog.Logger
	nc     *nats.Conn
	js     jetstream.JetStream
	shown  string   // cfg.URL with userinfo masked
	hide   []string // secrets an error must not show (the token, URL credentials)
	stream jetstream.Stream

	gen     atomic.Uint64          // +1 per reconnect: records read before are stale
	lastErr atomic.Pointer[string] // the last failed (re)connect attempt's error
	closing atomic.Bool            // Close was called: a disconnect is ours
	kick    chan struct{}          // wakes a call waiting for acks (the connection's state changed)
	ack     *acker                 // the current connection's reply inbox (publish.go)

	batchN    uint64   // fast batches published (their ids; chain.go)
	toldChain bool     // the INFO on a stream without fast batches was logged
	suspect   *suspect // exactlyOnce: a line the stream failed to store inside a batch (chain.go)

	// exactlyOnce: per subject, the last message this sink knows stored.
	recs map[string]*record
	opts []nats.Option
}

type record struct {
	gen      uint64
	seq      uint64 // the subject's last sequence (0: none)
	epoch    uint64
	position int64
	has      bool // the last message carried a tailfeed position
	looked   bool // a delivery was held against it (see behind)
}

// Open connects (retrying in the background when the server is down: the
// first batch then waits at the backoff cap) and returns the sink.
func Open(cfg Config) (*Sink, error) {
	if cfg.Group == nil {
		return nil, errors.New("nats: no group")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.Window < 1 {
		cfg.Window = 500
	}
	log := cfg.Logger
	if log == nil {
		log = cfg.Group.Logger()
	}
	s := &Sink{cfg: cfg, log: log, shown: redact.URLList(cfg.URL), recs: map[string]*record{}, kick: make(chan struct{}, 1)}
	s.hide = redact.URLSecrets(cfg.URL)
	if cfg.Token != "" {
		s.hide = append(s.hide, cfg.Token)
	}
	opts := []nats.Option{
		nats.Name("tailfeed " + cfg.Instance + " " + cfg.Group.Name()),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(500 * time.Millisecond),
		nats.Timeout(cfg.Timeout),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			s.gen.Add(1)
			s.kicked()
			log.Info("nats reconnected", "url", redact.URLList(nc.ConnectedUrlRedacted()))
		}),
		nats.ReconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				msg := s.secret(err).Error()
				s.lastErr.Store(&msg)
			}
		}),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			s.gen.Add(1)
			msg := "the connection was lost"
			if err != nil {
				msg = s.secret(err).Error()
			}
			s.lastErr.Store(&msg)
			s.kicked()
			if !s.closing.Load() {
				log.Warn("nats disconnected", "error", msg)
			}
		}),
	}
	if cfg.TLS != nil {
		tc, err := tlsConfig(cfg.TLS)
		if err != nil {
			return nil, err
		}
		if cfg.TLS.InsecureSkipVerify {
			log.Warn("nats tls.insecureSkipVerify is true: the server's certificate is not verified")
		}
		opts = append(opts, nats.Secure(tc))
	}
	if cfg.CredsFile != "" {
		if _, err := os.Stat(cfg.CredsFile); err != nil {
			return nil, fmt.Errorf("nats credsFile: %w", err)
		}
		opts = append(opts, nats.UserCredentials(cfg.CredsFile))
	}
	if cfg.Token != "" {
		log.Warn("nats token is written literally in the config (processors[].token); keep the config file private")
		opts = append(opts, nats.Token(cfg.Token))
	}
	s.opts = opts
	if err := s.connect(); err != nil {
		return nil, err
	}
	return s, nil
}

// connect makes the connection (retrying in the background while the
// server is down) and its JetStream context.
func (s *Sink) connect() error {
	nc, err := nats.Connect(s.cfg.URL, s.opts...)
	if err != nil {
		return s.secret(fmt.Errorf("nats connect %s: %w", s.shown, err))
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(s.cfg.Window+1),
		jetstream.WithPublishAsyncTimeout(s.cfg.Timeout), jetstream.WithDefaultTimeout(s.cfg.Timeout))
	if err != nil {
		nc.Close()
		return err
	}
	s.nc, s.js, s.stream = nc, js, nil
	s.gen.Add(1)
	return nil
}

func tlsConfig(t *config.NatsTLS) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: t.InsecureSkipVerify}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("nats tls.caFile: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("nats tls.caFile %s: no PEM certificate in it", t.CAFile)
		}
		tc.RootCAs = pool
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("nats tls.certFile/keyFile: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// secret masks the sink's secrets (the URL's userinfo, the token) in err.
func (s *Sink) secret(err error) error {
	msg := redact.URL(err.Error())
	for _, h := range s.hide {
		msg = strings.ReplaceAll(msg, h, redact.Mask)
	}
	return &redact.Error{Msg: msg, Err: err}
}

// unavailable marks err as a failure of the engine, not of a line: it is
// processor.ErrFatal to errors.Is (held at the cap, never dead-lettered).
func (s *Sink) unavailable(err error) error {
	return unavailableError{s.secret(err)}
}

type unavailableError struct{ error }

func (e unavailableError) Unwrap() error        { return e.error }
func (e unavailableError) Is(target error) bool { return target == processor.ErrFatal }

// ready checks the connection and finds (or creates) the stream.
func (s *Sink) ready(ctx context.Context) error {
	if s.nc.IsClosed() {
		// The library gave up (an authorization failure closes the
		// connection for good): a new one, at the group's backoff.
		last := s.nc.LastError()
		if err := s.connect(); err != nil {
			return s.unavailable(err)
		}
		if s.nc.Status() != nats.CONNECTED && last != nil && s.nc.LastError() == nil {
			return s.unavailable(fmt.Errorf("nats %s: reconnecting (%v)", s.shown, last))
		}
	}
	if st := s.nc.Status(); st != nats.CONNECTED {
		cause := "not connected yet"
		if e := s.nc.LastError(); e != nil {
			cause = e.Error()
		} else if e := s.lastErr.Load(); e != nil {
			cause = *e
		}
		return s.unavailable(fmt.Errorf("nats %s: %s (%s)", s.shown, strings.ToLower(st.String()), cause))
	}
	if s.stream != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	st, err := s.js.Stream(ctx, s.cfg.Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) && s.cfg.CreateStream {
		st, err = s.js.CreateStream(ctx, jetstream.StreamConfig{
			Name: s.cfg.Stream, Subjects: []string{s.streamSubject()},
			Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute,
			AllowBatchPublish: true, // the sink publishes fast batches (chain.go)
		})
		if err == nil {
			s.log.Info("nats stream created", "stream", s.cfg.Stream, "subject", s.streamSubject())
		}
	}
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return s.unavailable(fmt.Errorf("nats stream %q does not exist (create it, or set createStream: true)", s.cfg.Stream))
	}
	if err != nil {
		return s.unavailable(fmt.Errorf("nats stream %q: %w", s.cfg.Stream, err))
	}
	s.stream = st
	return nil
}

// streamSubject is the subject a created stream takes: the template with
// every token holding a variable made '*', and '>' when it is the last
// token (an instance may hold dots), so one stream serves every sidecar and
// feed that share the template.
func (s *Sink) streamSubject() string {
	toks := strings.Split(s.cfg.Subject, ".")
	for i, t := range toks {
		if strings.Contains(t, "{") {
			toks[i] = "*"
			if i == len(toks)-1 {
				toks[i] = ">"
			}
		}
	}
	return strings.Join(toks, ".")
}

// Subject renders the subject template for a batch.
func Subject(tmpl, instance, feedName, path string, epoch uint64) string {
	if !strings.Contains(tmpl, "{") {
		return tmpl
	}
	r := strings.NewReplacer("{instance}", instance, "{feed}", feedName, "{path}", PathToken(path),
		"{epoch}", fmt.Sprintf("%016x", epoch))
	return r.Replace(tmpl)
}

// PathToken makes a path one subject token (see the package doc).
func PathToken(p string) string {
	p = strings.TrimLeft(p, "/")
	if p == "" {
		return "_"
	}
	b := []byte(p)
	for i, c := range b {
		switch c {
		case '/', '.', ' ', '\t', '*', '>', '\r', '\n':
			b[i] = '_'
		}
	}
	return string(b)
}

func (s *Sink) message(b *feed.Batch, subj, epoch string, i int) *nats.Msg {
	m := &nats.Msg{Subject: subj, Data: b.Lines[i], Header: make(nats.Header, 6)}
	m.Header[HeaderInstance] = []string{s.cfg.Instance}
	m.Header[HeaderFeed] = []string{b.Feed}
	m.Header[HeaderEpoch] = []string{epoch}
	m.Header[HeaderPath] = []string{b.Path}
	if b.Positioned {
		pos := strconv.FormatInt(b.Ends[i], 10)
		m.Header[HeaderPosition] = []string{pos}
		m.Header[jetstream.MsgIDHeader] = []string{s.cfg.Instance + ":" + b.Feed + ":" + epoch + ":" + pos}
	}
	return m
}

// ProcessBatch publishes b's lines and returns when every one is
// acknowledged (done = len), or the count of leading lines acknowledged and
// the first failure.
func (s *Sink) ProcessBatch(ctx context.Context, b *feed.Batch) (int, error) {
	if len(b.Lines) == 0 {
		return 0, nil
	}
	if err := s.ready(ctx); err != nil {
		return 0, err
	}
	subj := Subject(s.cfg.Subject, s.cfg.Instance, b.Feed, b.Path, b.Epoch)
	epoch := fmt.Sprintf("%016x", b.Epoch)
	if s.cfg.ExactlyOnce {
		return s.publishChained(ctx, b, subj, epoch)
	}
	if b.Positioned && s.fastBatches() {
		return s.publishFast(ctx, b, subj, epoch, nil, 0)
	}
	return s.publishAsync(ctx, b, subj, epoch)
}

// classify turns a publish error into a line's rejection (plain) or an
// unavailable engine (ErrFatal: retried at the cap, never dead-lettered).
func (s *Sink) classify(err error, subj string) error {
	if errors.Is(err, nats.ErrMaxPayload) {
		return s.secret(fmt.Errorf("nats rejected the message: %w", err))
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch {
		case apiErr.ErrorCode == jetstream.JSErrCodeStreamNotFound, apiErr.Code == 503, apiErr.Code >= 500,
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence:
			return s.unavailable(fmt.Errorf("nats stream %q: %w", s.cfg.Stream, err))
		default:
			return s.secret(fmt.Errorf("nats stream %q rejected the message: %w", s.cfg.Stream, err))
		}
	}
	if errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) {
		s.stream = nil // look for it again
		return s.unavailable(fmt.Errorf("nats publish to %s: no stream takes subject %s (is it among stream %q's subjects?): %w", s.shown, subj, s.cfg.Stream, err))
	}
	return s.unavailable(fmt.Errorf("nats publish to %s: %w", s.shown, err))
}

// publishChained publishes one message at a time, each expecting the
// sequence of the one before on its subject.
func (s *Sink) publishChained(ctx context.Context, b *feed.Batch, subj, epoch string) (int, error) {
	rec, err := s.record(ctx, subj)
	if err != nil {
		return 0, err
	}
	if err := s.checkSuspect(rec, b, subj); err != nil {
		return 0, err
	}
	i := 0
	for i < len(b.Lines) && rec.has && b.AlreadyApplied(i, rec.epoch, rec.position) {
		i++
	}
	if i > 0 {
		s.log.Info("nats skips lines its subject holds", "subject", subj, "lines", i)
	}
	if !rec.looked && i < len(b.Lines) {
		rec.looked = true
		s.behind(rec, b, i, subj)
	}
	if b.Positioned && s.fastBatches() {
		return s.publishFast(ctx, b, subj, epoch, rec, i)
	}
	for ; i < len(b.Lines); i++ {
		if rec.has && b.AlreadyApplied(i, rec.epoch, rec.position) {
			continue // the subject holds it (seen on a re-read after a duplicate)
		}
		m := s.message(b, subj, epoch, i)
		if !b.Positioned && rec.has {
			m.Header[HeaderAppliedEpoch] = []string{fmt.Sprintf("%016x", rec.epoch)}
			m.Header[HeaderAppliedPosition] = []string{strconv.FormatInt(rec.position, 10)}
		}
		pctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
		ack, err := s.js.PublishMsg(pctx, m, jetstream.WithExpectLastSequencePerSubject(rec.seq))
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return i, ctx.Err()
			}
			delete(s.recs, subj) // re-read the subject's last message before the retry
			var apiErr *jetstream.APIError
			if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
				s.log.Warn("nats subject moved under the sink (another writer, a restore, a lost ack); re-reading its last message",
					"subject", subj, "expected", rec.seq)
			}
			return i, s.classify(err, subj)
		}
		if ack.Duplicate {
			delete(s.recs, subj) // stored before: the subject's last may be later
			rec, err = s.record(ctx, subj)
			if err != nil {
				return i + 1, err
			}
			continue
		}
		rec.seq = ack.Sequence
		if b.Positioned {
			rec.epoch, rec.position, rec.has = b.Epoch, b.Ends[i], true
		}
	}
	return len(b.Lines), nil
}

// behind warns when the first line delivered after a record was read
// starts past the record's position in the same epoch: the stream lost
// lines the pointer already passed (restored to an earlier point). DESIGN
// §11's catch-up from the input would re-read them; it is not built yet,
// so the gap stays and is only named here. The test is conservative (a
// CRLF terminator is assumed): a gap of one empty line is not seen.
func (s *Sink) behind(rec *record, b *feed.Batch, i int, subj string) {
	if !rec.has || !b.Positioned || b.Epoch != rec.epoch {
		return
	}
	start := b.Ends[i] - int64(len(b.Lines[i])) - 2
	if start > rec.position {
		s.log.Warn("nats subject is behind the feed (restored to an earlier point?): the lines between its last message and the feed's pointer are not in the stream and will not be re-read",
			"subject", subj, "epoch", fmt.Sprintf("%016x", rec.epoch), "streamPosition", rec.position, "feedFrom", start+1)
	}
}

// record returns what the sink knows of subj's last message, reading it
// from the stream at first use and after a reconnect.
func (s *Sink) record(ctx context.Context, subj string) (*record, error) {
	gen := s.gen.Load()
	if r := s.recs[subj]; r != nil && r.gen == gen {
		return r, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	r := &record{gen: gen}
	m, err := s.stream.GetLastMsgForSubject(ctx, subj)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
	case err != nil:
		return nil, s.unavailable(fmt.Errorf("nats reading the last message of %s: %w", subj, err))
	default:
		r.seq = m.Sequence
		ep, err1 := strconv.ParseUint(m.Header.Get(HeaderEpoch), 16, 64)
		pos, err2 := strconv.ParseInt(m.Header.Get(HeaderPosition), 10, 64)
		if m.Header.Get(HeaderPosition) == "" { // a line without a position: the record it carried
			ep, err1 = strconv.ParseUint(m.Header.Get(HeaderAppliedEpoch), 16, 64)
			pos, err2 = strconv.ParseInt(m.Header.Get(HeaderAppliedPosition), 10, 64)
		}
		if err1 == nil && err2 == nil {
			r.epoch, r.position, r.has = ep, pos, true
		}
	}
	if old := s.recs[subj]; old == nil || old.seq != r.seq {
		s.log.Info("nats record read", "subject", subj, "sequence", r.seq,
			"epoch", fmt.Sprintf("%016x", r.epoch), "position", r.position)
	}
	s.recs[subj] = r
	return r, nil
}

// Close closes the connection (pending acks are not awaited: their lines
// were not counted).
func (s *Sink) Close() error {
	s.closing.Store(true)
	s.nc.Close()
	return nil
}
