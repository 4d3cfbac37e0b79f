// Package nats is the `nats` sink (DESIGN §11): it publishes each line to a
// NATS JetStream stream and counts it processed on the publish ack.
//
// Each message's body is the raw line; its subject is the configured
// template with {instance}, {feed}, {path} and {epoch} filled in ({path}
// without its leading '/', every '/', '.', space, '*' and '>' made '_', a
// byte that is not UTF-8 written %XX, so it stays one subject token:
// /var/log/app.log gives var_log_app_log;
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
// Duplicates under exactlyOnce (chain.go chainOne): the server checks the
// Nats-Msg-Id before the expected sequence, and a message removed from
// the stream (a restore by delete or purge) keeps its id in the duplicate
// window, so a re-published line can be answered "duplicate" without
// being stored. Such an answer counts only when the subject's last
// message, read again, is at or past the line; otherwise the line is
// published again, still chained, under Nats-Msg-Id
// <instance>:<feed>:<epoch>:<position>:<sequence> (the removed message's
// stream sequence: never reused, so outside the window; the tailfeed-*
// headers are unchanged), and the subject goes one line per round trip
// until the duplicate window has passed (a fast batch would skip such
// lines silently). To see a removal before a fast batch does, after every
// record read the stream's state is read (chain.go removedAfter): a
// message removed after the subject's last one puts the subject one line
// at a time until the window has passed, a restart right at the window's
// edge included (the first removed line's id expired, later ones not);
// and the first line after the read goes alone.
//
// Done-through (DESIGN §11 "A restored sink is caught up from the input";
// exactlyOnce only, the sink keeps no record without it): DoneThrough, at
// start, lists the stream's subjects of this instance and feed (the
// template with {instance} and {feed} filled in and every token holding
// {path} or {epoch} a wildcard) and reads each one's last message: its
// epoch and position, the greatest per epoch, are the marks. The subject
// cannot hold what the sink finished without publishing (lines filtered
// out by match/exclude, dead-lettered, released by the group after a
// batch's last message): those advance a small local side record instead,
// MarksFile (dataDir/state/<processor>.rec, JSON), per subject: the end of
// those lines and the subject's last sequence, epoch and position when it
// was written. It counts only while the subject's last message is still
// that one (a later publish or a restored stream makes it void), so a
// stream restored to an earlier point is behind whatever the side record
// says, and a run ending in filtered lines is not behind at the next start.
// It is written (temp file and rename, not synced: a kill -9 keeps it;
// after a power loss a lost one only makes the next start re-read those
// lines — duplicates for the other subscribers, never a gap) before such a
// batch counts as processed.
//
// Failures: a connection failure, a timeout, JetStream unavailable, a
// missing stream, an overloaded stream (429: the server dropped the
// message) or JetStream storage full (10002 account resource limits, and
// the other insufficient-resources codes) wrap processor.ErrFatal, so the
// group retries them at its backoff cap whatever onFailure says (the feed
// stalls with the reason). A message the server rejects (over the stream's
// or the server's size limit, a publish permission violation for its
// subject, any other API error) is returned plain and follows onFailure.
package nats

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"tailfeed/feed"
	"tailfeed/internal/redact"
	"tailfeed/pointer"
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
	TLS          *TLS
	CredsFile    string
	Token        string
	Literal      []string      // config keys holding a literal secret (Settings.Literal): a WARN at start each
	Timeout      time.Duration // per publish ack and per API request
	Window       int           // messages awaiting their ack at once (batchMaxLines)
	Feed         string        // the feed it reads (DoneThrough's marks are this feed's)
	// MarksFile is the side record of lines finished without a message
	// (exactlyOnce; "" keeps none): see the package doc.
	MarksFile string
	// EpochsFile is the feed's epochs file (dataDir/feeds/<feed>.epochs;
	// "": none). With exactlyOnce, a line of an epoch older than the
	// subject's record that the file shows committed before the record's
	// epoch began is one the subject holds (pointer.HeldBefore): a
	// catch-up for another sink does not publish it again.
	EpochsFile string
	Logger     hclog.Logger
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
	held pointer.Held // exactlyOnce: older epochs a subject holds (Config.EpochsFile)
	opts []nats.Option
	// exactlyOnce: the side record of lines finished without a message,
	// per subject (loaded at first use; see the package doc).
	marks map[string]sideMark

	denied    denials   // publish permission violations (denied.go)
	dupLogged time.Time // the last WARN of a duplicate the subject does not hold (chain.go)
	// exactlyOnce, per subject: one line per round trip until then (a
	// removal inside the duplicate window was seen; chain.go).
	oneByOne map[string]time.Time
	deny     uint64 // the violation count when the current call began
}

type record struct {
	gen      uint64
	seq      uint64 // the subject's last sequence (0: none)
	epoch    uint64
	position int64
	has      bool   // the last message carried a tailfeed position
	probed   bool   // a line was published after it was read (chain.go: the first goes alone)
	feed     string // its tailfeed-feed header
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
	s := &Sink{cfg: cfg, log: log, shown: redact.URLList(cfg.URL), recs: map[string]*record{}, kick: make(chan struct{}, 1),
		held: pointer.Held{Path: cfg.EpochsFile}}
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
		nats.ErrorHandler(s.asyncErr), // logs through the sink's logger; notes permission violations (denied.go)
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
	for _, k := range cfg.Literal {
		log.Warn("nats secret written literally in the config file, not as a ${ENV} reference; keep the file private", "key", k)
	}
	if cfg.Token != "" {
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

func tlsConfig(t *TLS) (*tls.Config, error) {
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
// feed that share the template. A middle token whose {instance} or {feed}
// holds a '.' here (instance web.example) would not fit one '*': it is
// this sidecar's value, written in, its pieces that still hold {path} or
// {epoch} (one token each) made '*'.
func (s *Sink) streamSubject() string {
	r := strings.NewReplacer("{instance}", s.cfg.Instance, "{feed}", s.cfg.Feed)
	toks := strings.Split(s.cfg.Subject, ".")
	out := make([]string, 0, len(toks))
	for i, t := range toks {
		switch {
		case !strings.Contains(t, "{"):
			out = append(out, t)
		case i == len(toks)-1:
			out = append(out, ">")
		case !strings.Contains(r.Replace(t), "."):
			out = append(out, "*")
		default:
			for _, p := range strings.Split(r.Replace(t), ".") {
				if strings.Contains(p, "{") {
					p = "*"
				}
				out = append(out, p)
			}
		}
	}
	return strings.Join(out, ".")
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
	b := make([]byte, 0, len(p))
	for i := 0; i < len(p); {
		r, n := utf8.DecodeRuneInString(p[i:])
		if r == utf8.RuneError && n <= 1 {
			// A byte that is not UTF-8 as %XX: the server's JSON API
			// (the subjects the sink's record is read from) would give
			// U+FFFD back, another subject (audit 10B).
			b = append(b, '%', hexDigits[p[i]>>4], hexDigits[p[i]&15])
			i++
			continue
		}
		switch c := p[i]; c {
		case '/', '.', ' ', '\t', '*', '>', '\r', '\n':
			b = append(b, '_')
		default:
			b = append(b, p[i:i+n]...)
		}
		i += n
	}
	return string(b)
}

const hexDigits = "0123456789ABCDEF"

func (s *Sink) message(b *feed.Batch, subj, epoch string, i int) *nats.Msg {
	m := &nats.Msg{Subject: subj, Data: b.Lines[i], Header: make(nats.Header, 6)}
	m.Header[HeaderInstance] = []string{s.cfg.Instance}
	m.Header[HeaderFeed] = []string{b.Feed}
	m.Header[HeaderEpoch] = []string{epoch}
	m.Header[HeaderPath] = []string{b.Path}
	if b.Placed() { // downgraded lines too: their id is unique (audit 9E)
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
		// Lines finished without a message (filtered, dead-lettered,
		// released): exactlyOnce records their end in the side record.
		if !s.cfg.ExactlyOnce || !b.Positioned || b.Done() <= 0 || s.cfg.MarksFile == "" {
			return 0, nil
		}
	}
	if err := s.ready(ctx); err != nil {
		return 0, err
	}
	subj := Subject(s.cfg.Subject, s.cfg.Instance, b.Feed, b.Path, b.Epoch)
	epoch := fmt.Sprintf("%016x", b.Epoch)
	s.deny = s.denyMark()
	if s.cfg.ExactlyOnce {
		return s.publishChained(ctx, b, subj, epoch)
	}
	if b.Positioned && s.fastBatches() && !s.lineByLine(subj) {
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
		case apiErr.ErrorCode == jetstream.JSErrCodeStreamNotFound, apiErr.Code >= 500,
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence:
			return s.unavailable(fmt.Errorf("nats stream %q: %w", s.cfg.Stream, err))
		case apiErr.Code == 429:
			// The stream's ingest queue is full (nats-server drops the
			// message: stream.go queueInbound), or too many batches in
			// flight: the engine is overloaded, not the line bad.
			return s.unavailable(fmt.Errorf("nats stream %q is overloaded (the server dropped the message; retried at the backoff cap): %w", s.cfg.Stream, err))
		case storageFull(apiErr.ErrorCode):
			// The account's (or server's) JetStream storage is full: the
			// engine cannot take any line until there is room.
			return s.unavailable(fmt.Errorf("nats stream %q: no room for messages (the account's JetStream storage limit is reached; raise it or free space; retried at the backoff cap): %w", s.cfg.Stream, err))
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

// storageFull reports the JetStream error codes of an engine out of room
// (nats-server errors.json): 10002 resource limits exceeded for account,
// 10023 insufficient resources, 10028 insufficient memory resources,
// 10047 insufficient storage resources. They hold; they never follow
// onFailure.
func storageFull(code jetstream.ErrorCode) bool {
	switch code {
	case 10002, 10023, 10028, 10047:
		return true
	}
	return false
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
	for i < len(b.Lines) && rec.has && (b.AlreadyApplied(i, rec.epoch, rec.position) || s.heldOlder(b, i, rec)) {
		i++
	}
	if i > 0 {
		s.log.Info("nats skips lines its subject holds", "subject", subj, "lines", i)
	}
	if i == len(b.Lines) && b.Positioned && rec.has && b.Epoch != rec.epoch && s.held.Covers(rec.epoch, b.Epoch, b.Done()) {
		return len(b.Lines), nil // an older epoch held whole: the side record stays as it is
	}
	if b.Positioned && s.fastBatches() && !s.lineByLine(subj) {
		if !rec.probed && i < len(b.Lines) {
			// After a record read from the stream: when the stream lost
			// messages stored after the subject's last one, the subject
			// goes one line at a time until the duplicate window has
			// passed (removedAfter).
			if err := s.removedAfter(ctx, subj, rec); err != nil {
				return i, err
			}
			// The first line goes alone: a removal inside the duplicate
			// window shows here as a duplicate the subject does not hold
			// (chainOne), before a fast batch could skip such lines
			// silently (chain.go).
			if err := s.chainOne(ctx, b, subj, epoch, &rec, i, 0); err != nil {
				return i, err
			}
			rec.probed = true
			i++
		}
		if !s.lineByLine(subj) {
			n, err := s.publishFast(ctx, b, subj, epoch, rec, i)
			if err == nil && n == len(b.Lines) {
				s.markTail(b, subj, rec)
			}
			if !errors.Is(err, errDupBatch) {
				return n, err
			}
			i = n
			if rec, err = s.record(ctx, subj); err != nil {
				return i, err
			}
		}
	}
	for ; i < len(b.Lines); i++ {
		if rec.has && (b.AlreadyApplied(i, rec.epoch, rec.position) || s.heldOlder(b, i, rec)) {
			continue // the subject holds it (seen on a re-read after a duplicate)
		}
		if err := s.chainOne(ctx, b, subj, epoch, &rec, i, 0); err != nil {
			return i, err
		}
	}
	s.markTail(b, subj, rec)
	return len(b.Lines), nil
}

// heldOlder reports whether line i of b, of an epoch older than the
// subject's record rec, is one the subject holds: the epochs file shows its
// epoch committed through it before rec's epoch began (pointer.HeldBefore;
// the lines of a catch-up for another sink).
func (s *Sink) heldOlder(b *feed.Batch, i int, rec *record) bool {
	return b.Positioned && rec.has && rec.feed == b.Feed && s.held.Covers(rec.epoch, b.Epoch, b.Ends[i])
}

// setApplied puts on m, a message of lines not Positioned (a dead-letter
// replay, a downgraded line), the sink's done-through mark on subj: the
// record rec or, when the side record's entry for subj is still tied to
// rec (lines finished without a message after it: a dead-lettered tail),
// that entry. Once m is the subject's last message its applied headers are
// the record read at the next start, so a replayed dead letter moves
// neither the record nor the side record's mark back (DESIGN §11: a
// replayed dead letter never moves the mark; the entry tied to the
// previous last message is void from then on, and m carries it). It
// returns the record as it stands once m is stored (nil: m carries none).
func (s *Sink) setApplied(m *nats.Msg, b *feed.Batch, subj string, rec *record) *record {
	if b.Positioned {
		return nil
	}
	next := *rec
	if s.cfg.MarksFile != "" {
		s.loadMarks()
		if sm, ok := s.marks[subj]; ok && sm.Feed == b.Feed && sm.tiedTo(rec) {
			if ep, err := strconv.ParseUint(sm.Epoch, 16, 64); err == nil {
				next.epoch, next.position, next.has, next.feed = ep, sm.Position, true, sm.Feed
			}
		}
	}
	if !next.has {
		if b.Placed() {
			// A downgraded line carries its own tailfeed-position (DESIGN
			// §4: its real position, under an epoch never in a pointer):
			// marked, so that it is not read as the record.
			m.Header[HeaderAppliedEpoch] = []string{"none"}
			m.Header[HeaderAppliedPosition] = []string{"none"}
		}
		return nil
	}
	m.Header[HeaderAppliedEpoch] = []string{fmt.Sprintf("%016x", next.epoch)}
	m.Header[HeaderAppliedPosition] = []string{strconv.FormatInt(next.position, 10)}
	if next.feed == "" {
		next.feed = b.Feed
	}
	return &next
}

// sideMark is one subject's entry in the side record: the end of the lines
// finished without a message (Epoch, Position), valid while the subject's
// last message is (Seq, MsgEpoch, MsgPosition) (Seq 0: no message).
type sideMark struct {
	Feed        string `json:"feed"`
	Epoch       string `json:"epoch"`
	Position    int64  `json:"position"`
	Seq         uint64 `json:"seq"`
	MsgEpoch    string `json:"msgEpoch,omitempty"`
	MsgPosition int64  `json:"msgPosition,omitempty"`
}

// tie ties m to the subject's last message rec.
func (m *sideMark) tie(rec *record) {
	m.Seq, m.MsgEpoch, m.MsgPosition = rec.seq, "", 0
	if rec.has {
		m.MsgEpoch, m.MsgPosition = fmt.Sprintf("%016x", rec.epoch), rec.position
	}
}

// tiedTo reports whether the subject's last message is still the one m
// was written after.
func (m sideMark) tiedTo(rec *record) bool {
	want := sideMark{Feed: m.Feed, Epoch: m.Epoch, Position: m.Position}
	want.tie(rec)
	return want == m
}

// sideRecord is the MarksFile's content.
type sideRecord struct {
	Version  int                 `json:"version"`
	Subjects map[string]sideMark `json:"subjects"`
}

// markTail records, when the group finished lines of b's epoch past the
// subject's last message without handing them here (filtered,
// dead-lettered, released), their end in the side record, tied to that
// message. A failed write is logged: the lines are finished, and the next
// start then re-reads them (duplicates, never a gap).
func (s *Sink) markTail(b *feed.Batch, subj string, rec *record) {
	if s.cfg.MarksFile == "" || !b.Positioned {
		return
	}
	end := b.Done()
	if end <= 0 || (rec.has && rec.epoch == b.Epoch && end <= rec.position) {
		return
	}
	s.loadMarks()
	m := sideMark{Feed: b.Feed, Epoch: fmt.Sprintf("%016x", b.Epoch), Position: end}
	m.tie(rec)
	if old, ok := s.marks[subj]; ok && old == m {
		return
	}
	s.marks[subj] = m
	if err := s.storeMarks(); err != nil {
		s.log.Warn("nats side record not written: the lines finished without a message at the end of this run will be re-read at the next start",
			"file", s.cfg.MarksFile, "error", err)
	}
}

// loadMarks reads the side record once (missing or unreadable: empty).
func (s *Sink) loadMarks() {
	if s.marks != nil {
		return
	}
	s.marks = map[string]sideMark{}
	data, err := os.ReadFile(s.cfg.MarksFile)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			s.log.Warn("nats side record unreadable; ignored", "file", s.cfg.MarksFile, "error", err)
		}
		return
	}
	var r sideRecord
	if err := json.Unmarshal(data, &r); err != nil || r.Version != 1 {
		s.log.Warn("nats side record unreadable; ignored", "file", s.cfg.MarksFile)
		return
	}
	for k, v := range r.Subjects {
		s.marks[k] = v
	}
}

// storeMarks replaces the side record (temp file, rename; not synced).
func (s *Sink) storeMarks() error {
	data, err := json.Marshal(sideRecord{Version: 1, Subjects: s.marks})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.cfg.MarksFile), 0o700); err != nil {
		return err
	}
	tmp := s.cfg.MarksFile + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, s.cfg.MarksFile)
}

// feedFilter is the subject filter of this instance's and feed's subjects:
// the template with {instance} and {feed} filled in, every token holding
// {path} or {epoch} made '*'.
func (s *Sink) feedFilter() string {
	r := strings.NewReplacer("{instance}", s.cfg.Instance, "{feed}", s.cfg.Feed)
	toks := strings.Split(s.cfg.Subject, ".")
	for i, t := range toks {
		if strings.Contains(t, "{path}") || strings.Contains(t, "{epoch}") {
			toks[i] = "*"
		} else {
			toks[i] = r.Replace(t)
		}
	}
	return strings.Join(toks, ".")
}

// DoneThrough implements processor.DoneThrougher (DESIGN §11): with
// exactlyOnce, per epoch, the greatest position of the last messages of
// this feed's subjects, or of a side-record entry still tied to its
// subject's last message. Without exactlyOnce the sink keeps no record.
func (s *Sink) DoneThrough(ctx context.Context) ([]processor.Mark, error) {
	if !s.cfg.ExactlyOnce {
		return nil, nil
	}
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	ictx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	info, err := s.stream.Info(ictx, jetstream.WithSubjectFilter(s.feedFilter()))
	cancel()
	if err != nil {
		return nil, s.unavailable(fmt.Errorf("nats stream %q: listing the subjects of feed %s: %w", s.cfg.Stream, s.cfg.Feed, err))
	}
	best := map[uint64]int64{}
	note := func(ep uint64, pos int64) {
		if p, ok := best[ep]; !ok || pos > p {
			best[ep] = pos
		}
	}
	subjects := map[string]bool{}
	for subj := range info.State.Subjects {
		subjects[subj] = true
	}
	if s.cfg.MarksFile != "" {
		s.loadMarks()
		for subj, m := range s.marks {
			if m.Feed == s.cfg.Feed {
				subjects[subj] = true // also those with no message yet
			}
		}
	}
	for subj := range subjects {
		if strings.ContainsAny(subj, "*>") {
			continue
		}
		delete(s.recs, subj) // read it now
		rec, err := s.record(ctx, subj)
		if err != nil {
			return nil, err
		}
		if rec.has && rec.feed == s.cfg.Feed {
			note(rec.epoch, rec.position)
		}
		m, ok := s.marks[subj]
		if !ok || m.Feed != s.cfg.Feed || !m.tiedTo(rec) {
			continue // void: the subject moved on, or was restored
		}
		if ep, err := strconv.ParseUint(m.Epoch, 16, 64); err == nil {
			note(ep, m.Position)
		}
	}
	out := make([]processor.Mark, 0, len(best))
	for ep, pos := range best {
		out = append(out, processor.Mark{Epoch: ep, Position: pos})
	}
	slices.SortFunc(out, func(a, b processor.Mark) int { return cmp.Compare(a.Epoch, b.Epoch) })
	return out, nil
}

var _ processor.DoneThrougher = (*Sink)(nil)

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
		if m.Header.Get(HeaderPosition) == "" || m.Header.Get(HeaderAppliedEpoch) != "" {
			// A line without a position (a replay) or downgraded (its
			// position is in an epoch of its own): the record it carried
			// ("none": none).
			ep, err1 = strconv.ParseUint(m.Header.Get(HeaderAppliedEpoch), 16, 64)
			pos, err2 = strconv.ParseInt(m.Header.Get(HeaderAppliedPosition), 10, 64)
		}
		if err1 == nil && err2 == nil {
			r.epoch, r.position, r.has = ep, pos, true
			r.feed = m.Header.Get(HeaderFeed)
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
