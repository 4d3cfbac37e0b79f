package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"tailfeed/feed"
	"tailfeed/internal/ndjson"
	"tailfeed/internal/redact"
	"tailfeed/internal/slotrec"
	"tailfeed/processor"
)

// Webhook is the `webhook` sink: it POSTs a group's lines as NDJSON
// requests of at most batchMaxLines lines and batchMaxBytes bytes, one
// epoch each, under Idempotency-Key `<feed>:<epoch>:<first>-<last>`. It
// records each request before its first POST and the applied position
// after a 2xx, so a restart skips applied lines and rebuilds the recorded
// request under the same key. Failures are retried with the group's
// backoff (fenced); poison (4xx but 408, 429) and requests out of attempts
// are dead-lettered whole or held, per onFailure. It takes a checkpoint
// hold: the ack point moves once a group batch is acknowledged by the
// receiver (or dead-lettered, released, filtered). See the package doc.
type Webhook struct {
	cfg    WebhookConfig
	h      processor.Host
	log    hclog.Logger
	client *http.Client
	shown  string   // cfg.URL with its password masked: what errors name
	hide   []string // secrets an error must not show (the password, header values)
	book   *whBook  // the record (epochs.go)

	// Only accessed from the group goroutine.
	carries   map[uint64]*whChunk // per epoch: lines of its recorded request, waiting for the rest (carry.go)
	carryLook time.Time           // when Flush last looked for a reason to give a carry up
	at        int                 // in ProcessBatch: the first line of the batch not finished yet (-1: outside, or nothing to report)
	buf       bytes.Buffer
	enc       *json.Encoder
	obj       whLine
}

// WebhookConfig configures a Webhook.
type WebhookConfig struct {
	// Group is the subscriber's group: its checkpoint hold, retry policy,
	// onFailure, ledger, fence and counters.
	Group         processor.Host
	URL           string
	Timeout       time.Duration // per request
	BatchMaxLines int
	BatchMaxBytes int
	Headers       map[string]string
	Raw           bool   // add lineBase64
	Record        string // dataDir/state/<processor>.rec
	// OpenRecord opens the record file (fault-injection seam; default: the
	// file at Record).
	OpenRecord func(path string) (slotrec.RecordFile, error)
	// Client sends the requests (default: its own transport; redirects are
	// not followed).
	Client *http.Client
	// Publisher is the feed's publisher: an incomplete recorded request
	// asks it whether the source waits for these very lines (an epoch
	// barrier, a full window) before it gives the request up. Nil: it
	// waits for a line of its epoch past the range or for another epoch.
	Publisher *feed.Publisher
	// CarryPoll is how often an incomplete recorded request asks the
	// publisher while the group is idle (default 100 ms). It only looks: the
	// request is never given up for time alone.
	CarryPoll time.Duration
	// PerEpoch: the feed is a glob, whose files (epochs) interleave: the
	// record keeps the applied position and the recorded request of every
	// epoch (layout 2, epochs.go), and a batch of another epoch is no
	// evidence that a recorded request's rest cannot come.
	PerEpoch bool
	// Committed tells, for the epochs asked, the offset each one's stream
	// pointer holds (epochs whose stream has no pointer any more are left
	// out): the record drops what no restart can deliver again (see
	// epochs.go). Nil: nothing is dropped but past the size bound.
	Committed func(epochs []uint64) (map[uint64]int64, error)
	// Feed is the feed's name (default: the publisher's): PendingRequest
	// looks its recorded requests up in the dead-letter ledger.
	Feed   string
	Logger hclog.Logger
}

// whChunk is one request's lines (views into the batch, or copies).
type whChunk struct {
	feed, path string
	epoch      uint64
	positioned bool
	lines      [][]byte
	ends       []int64
	body       []byte // encoded; nil until encoded

	// Dead-lettering: lettered leading lines are in the ledger, written
	// with letterAttempts and letterErr (the rest get the same).
	lettered       int
	letterAttempts int
	letterErr      error
	// noSend: the rest of a recorded request whose first lines are in the
	// ledger already (dead-lettered before a restart): it is only
	// dead-lettered, never POSTed, and not recorded again.
	noSend bool
	// reqKey and reqLines name the request the lines belong to in their
	// dead letters, when that is not this chunk itself (the rest of a
	// request dead-lettered in part before a restart).
	reqKey   string
	reqLines int

	// A carry (carry.go): the recorded request [first, last] being
	// rebuilt; seq is the feed sequence of its first line (0: unknown; a
	// full window alone then lets it go), before the queue count before it.
	carried     bool
	awaited     bool // its epoch is awaited at the publisher (carry.go, want)
	first, last int64
	seq         uint64
	before      uint64
}

func (c *whChunk) key() string {
	return fmt.Sprintf("%s:%016x:%d-%d", c.feed, c.epoch, c.ends[0], c.ends[len(c.ends)-1])
}

// whLine is one NDJSON object (internal/ndjson's, shared with the file
// and stdout sinks' format json).
type whLine = ndjson.Object

const maxRetryAfter = 10 * time.Minute

// OpenWebhook opens the sink's record and takes the group's checkpoint hold.
func OpenWebhook(cfg WebhookConfig) (*Webhook, error) {
	g := cfg.Group
	if g == nil {
		return nil, errors.New("webhook: no group")
	}
	if cfg.BatchMaxLines < 1 || cfg.BatchMaxBytes < 1 || cfg.Timeout <= 0 {
		return nil, errors.New("webhook: batchMaxLines, batchMaxBytes and timeoutMillis must be positive")
	}
	if cfg.CarryPoll <= 0 {
		cfg.CarryPoll = 100 * time.Millisecond
	}
	if cfg.Feed == "" && cfg.Publisher != nil {
		cfg.Feed = cfg.Publisher.Feed
	}
	log := cfg.Logger
	if log == nil {
		log = g.Logger()
	}
	book, err := openBook(cfg, log)
	if err != nil {
		return nil, err
	}
	w := &Webhook{cfg: cfg, h: g, log: log, client: cfg.Client, book: book, carries: map[uint64]*whChunk{}, at: -1}
	w.shown, w.hide = redact.Query(redact.URL(cfg.URL)), webhookSecrets(cfg)
	if w.client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		w.client = &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}}
	}
	w.enc = ndjson.NewEncoder(&w.buf)
	for _, ep := range book.pendingAny() {
		e := book.entry(ep)
		log.Info("webhook resumes a recorded request", "epoch", fmt.Sprintf("%016x", ep), "first", e.First, "last", e.Last)
	}
	g.Hold()
	return w, nil
}

// ProcessBatch sends b's lines in requests; it returns when all of them are
// acknowledged by the receiver, dead-lettered or released (or carried: see
// Webhook), and an error only when ctx ended or the record cannot be
// written. The lines it finished are published as it fences on a failing
// request, and when it returns early (progress).
func (w *Webhook) ProcessBatch(ctx context.Context, b *feed.Batch) (int, error) {
	w.at = -1
	if b.FirstSeq != 0 && len(b.Lines) > 0 {
		w.at = 0
	}
	n, err := w.processBatch(ctx, b)
	if err != nil && w.at >= 0 {
		w.at = n
		w.progress()
	}
	w.at = -1
	return n, err
}

// progress publishes the leading lines of the batch in hand that are
// finished (those before w.at: applied, dead-lettered or released) before
// the sink waits out a failing request inside the call or returns early,
// and lets its durable mark pass them unless a carry (an earlier line)
// still waits: DESIGN §6 "dispatch counts are published … exactly at a
// stop or a fence". Without it a fenced webhook held the ack point at the
// batch's start while the lines before the failing request were applied.
func (w *Webhook) progress() {
	if w.at <= 0 {
		return
	}
	mark := w.h.Finished(w.at)
	if len(w.carries) == 0 {
		w.h.DurableThrough(mark)
	}
}

func (w *Webhook) processBatch(ctx context.Context, b *feed.Batch) (int, error) {
	n := len(b.Lines)
	if !b.Positioned {
		// No position (downgraded lines; replays go through ReplayRequest): nothing to
		// record, nothing to skip.
		for i := 0; i < n; {
			c, j := w.cut(b, i)
			w.setAt(i)
			if err := w.deliver(ctx, c); err != nil {
				return i, err
			}
			i = j
		}
		if b.FirstSeq != 0 {
			w.durable()
		}
		return n, nil
	}
	if !w.cfg.PerEpoch {
		// One file at a time: a batch of another epoch proves that a
		// carry's rest will not come (carry.go, evidence 3).
		for ep, c := range w.carries {
			if ep != b.Epoch {
				w.log.Warn("webhook cannot rebuild the recorded request: lines of another file came, not the rest of it; sending what it has under a new key (the receiver may see duplicates)",
					"first", c.first, "last", c.last, "sent", c.ends[len(c.ends)-1])
				if err := w.sendCarry(ctx, c); err != nil {
					return 0, err
				}
			}
		}
	}
	i := w.skipApplied(b, 0)
	for {
		w.setAt(i)
		pe := w.book.pendingOf(b.Epoch)
		c := w.carries[b.Epoch]
		if c == nil && i < n && pe != nil && b.Ends[i] >= pe.First && b.Ends[i] <= pe.Last && w.partlyLettered(b.Feed, b.Epoch, pe) {
			// The recorded request ran out of attempts (the receiver may
			// have applied it) and its dead letter stopped halfway: the
			// group leaves the lettered lines out, and the rest goes to the
			// ledger too, never to the receiver.
			c, j := w.restOfLettered(b, i, pe)
			if err := w.deliver(ctx, c); err != nil {
				return i, err
			}
			i = w.skipApplied(b, j)
			continue
		}
		if c == nil && i < n && pe != nil && b.Ends[i] == pe.First {
			c = w.startCarry(b, pe)
		}
		if c != nil {
			i = w.extend(c, b, i)
			if !c.complete() {
				if i == n && !w.rangeCovered(c, b) {
					return n, nil // the rest of the recorded request comes in a later batch
				}
				w.log.Warn("webhook cannot rebuild the recorded request: lines after it came, not the rest of it; sending what it has under a new key (the receiver may see duplicates)",
					"first", c.first, "last", c.last, "sent", c.ends[len(c.ends)-1])
			}
			if err := w.sendCarry(ctx, c); err != nil {
				return i, err
			}
			i = w.skipApplied(b, i)
			continue
		}
		if i >= n {
			break
		}
		c, j := w.cut(b, i)
		if err := w.deliver(ctx, c); err != nil {
			return i, err
		}
		i = w.skipApplied(b, j)
	}
	w.durable()
	return n, nil
}

// setAt notes that the batch's lines before i are finished (progress).
func (w *Webhook) setAt(i int) {
	if w.at >= 0 {
		w.at = i
	}
}

// durable reports the call's lines done, unless lines are still carried.
func (w *Webhook) durable() {
	if len(w.carries) == 0 {
		w.h.DurableThrough(w.h.Mark())
	}
}

// skipApplied returns the first line from i that the record of b's epoch
// does not hold applied.
func (w *Webhook) skipApplied(b *feed.Batch, i int) int {
	e := w.book.entry(b.Epoch)
	if e == nil || e.Applied == 0 {
		return i
	}
	for i < len(b.Lines) && b.AlreadyApplied(i, b.Epoch, e.Applied) {
		i++
	}
	return i
}

// cut encodes the next request from line i of b and returns it with the
// index of the line after it.
func (w *Webhook) cut(b *feed.Batch, i int) (*whChunk, int) {
	c := &whChunk{feed: b.Feed, path: b.Path, epoch: b.Epoch, positioned: b.Positioned}
	w.buf.Reset()
	j := i
	for j < len(b.Lines) && j-i < w.cfg.BatchMaxLines {
		prev := w.buf.Len()
		w.encodeLine(c, b.Lines[j], b.Ends[j])
		if w.buf.Len() > w.cfg.BatchMaxBytes && j > i {
			w.buf.Truncate(prev)
			break
		}
		j++
	}
	c.lines, c.ends = b.Lines[i:j], b.Ends[i:j]
	c.body = bytes.Clone(w.buf.Bytes())
	return c, j
}

func (w *Webhook) encode(c *whChunk) {
	w.buf.Reset()
	for i, l := range c.lines {
		w.encodeLine(c, l, c.ends[i])
	}
	c.body = bytes.Clone(w.buf.Bytes())
}

func (w *Webhook) encodeLine(c *whChunk, line []byte, end int64) {
	w.obj.Fill(c.feed, c.path, c.epoch, end, line, w.cfg.Raw)
	w.enc.Encode(&w.obj) // cannot fail: strings and numbers only
}

// deliver records c (positioned), then POSTs it until it is acknowledged,
// dead-lettered or released. It fails only when ctx ends or the record
// cannot be written.
func (w *Webhook) deliver(ctx context.Context, c *whChunk) error {
	rp := w.h.Retry()
	if c.positioned && !c.noSend {
		if c.carried {
			rel, err := w.recordCarry(ctx, c)
			if err != nil || rel {
				return err
			}
		} else if err := w.recordRequest(c); err != nil {
			return err
		}
	}
	if c.body == nil {
		w.encode(c)
	}
	key := c.key()
	for attempt := 1; ; attempt++ {
		var retryAfter time.Duration
		var poison bool
		var err error
		if c.lettered == 0 && !c.noSend {
			retryAfter, poison, err = w.post(ctx, c, key)
			if err == nil {
				w.applied(c)
				w.h.Unfence()
				return nil
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			w.h.Fail()
			w.progress()
			w.h.Fence(err)
		}
		// Once part of the request is in the ledger it is never sent again
		// (a receiver that applied it would get those lines a second time
		// from a replay): only the rest of the dead letter is retried.
		// A certificate that does not verify is the connection's fault,
		// not the lines': retried at the backoff cap, never dead-lettered
		// (DESIGN §11 "TLS and authentication").
		if c.noSend || c.lettered > 0 || ((poison || attempt >= rp.Attempts && !tlsFailure(err)) && w.h.DeadLetters()) {
			lerr := w.deadLetter(c, attempt, err)
			if lerr == nil {
				w.applied(c)
				w.h.Unfence()
				return nil
			}
			if c.noSend || c.lettered > 0 {
				w.h.Fence(fmt.Errorf("%w (dead-letter write failed after %d of %d lines: %v)", c.letterErr, c.lettered, len(c.lines), lerr))
			}
		}
		step := rp.Backoff(attempt)
		if poison {
			// Poison is not retried through the attempts: under hold it
			// waits at the cap, as a request whose attempts ran out
			// (README; audit 10D: re-sent 100, 200, 400 ms apart).
			step = rp.Backoff(math.MaxInt32)
		}
		delay := max(step, retryAfter)
		rel, ok := w.h.Wait(ctx, delay)
		if !ok {
			return ctx.Err()
		}
		if rel != nil {
			w.release(c, rel)
			return nil
		}
	}
}

// recordCarry records a carry given up (its new key) before its first
// POST. The carry's lines are not in the group's view (which may be empty),
// so a record that cannot be written is the sink's to retry (fenced), and
// then to dead-letter (onFailure deadLetter: c becomes noSend) or, with
// hold, to retry until POST /admin/release gives the carry up (released
// true: done). It fails only when ctx ends.
func (w *Webhook) recordCarry(ctx context.Context, c *whChunk) (released bool, err error) {
	rp := w.h.Retry()
	for attempt := 1; ; attempt++ {
		err := w.recordRequest(c)
		if err == nil {
			return false, nil
		}
		w.h.Fail()
		w.h.Fence(err)
		if attempt >= rp.Attempts && w.h.DeadLetters() {
			c.noSend, c.letterAttempts, c.letterErr = true, attempt, err
			return false, nil
		}
		rel, ok := w.h.Wait(ctx, rp.Backoff(attempt))
		if !ok {
			return false, ctx.Err()
		}
		if rel != nil {
			w.release(c, rel)
			return true, nil
		}
	}
}

// post sends c once. It returns nil for a 2xx; otherwise the error, whether
// it is poison (a 4xx other than 408 and 429) and what Retry-After asked.
func (w *Webhook) post(ctx context.Context, c *whChunk, key string) (time.Duration, bool, error) {
	rctx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, w.cfg.URL, bytes.NewReader(c.body))
	if err != nil {
		return 0, true, w.secret(fmt.Errorf("webhook request to %s: %w", w.shown, err))
	}
	for k, v := range w.cfg.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	req.Header.Set("Idempotency-Key", key)
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "tailfeed")
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return 0, false, w.secret(fmt.Errorf("webhook POST %s (%s): %w", w.shown, key, err))
	}
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	code := resp.StatusCode
	if code >= 200 && code < 300 {
		return 0, false, nil
	}
	err = w.secret(fmt.Errorf("webhook POST %s (%s): %s: %s", w.shown, key, resp.Status, strings.TrimSpace(string(snippet))))
	poison := code >= 400 && code < 500 && code != http.StatusRequestTimeout && code != http.StatusTooManyRequests
	return retryAfter(resp.Header.Get("Retry-After")), poison, err
}

// webhookSecrets lists what the sink's errors must never show, longest
// first: the URL's userinfo (the password, and the user name when it is
// the whole credential, as in https://APIKEY@host/; each as written and
// as decoded, and the Basic credential Go's client sends for it), every
// configured header value, and each word of a sensitive header's value
// (Authorization, Cookie, or a name holding token, key, secret, auth,
// session, password or signature) but an Authorization scheme: a receiver
// may echo "invalid token <tok>" for "Authorization: Bearer <tok>". Values
// under 4 bytes (words under 6) are left alone: masking "1" or "on"
// everywhere would only garble messages.
func webhookSecrets(cfg WebhookConfig) []string {
	var out []string
	add := func(v string, min int) {
		if len(v) >= min {
			out = append(out, v)
		}
	}
	if u, err := url.Parse(cfg.URL); err == nil && u.User != nil {
		user := u.User.Username()
		pw, hasPw := u.User.Password()
		if !hasPw || pw == "" {
			add(user, 4)
			add(url.User(user).String(), 4) // as the URL spells it
		} else {
			add(pw, 4)
			if esc := (&url.URL{User: url.UserPassword("", pw)}).String(); len(esc) > 3 {
				add(esc[3:len(esc)-1], 4) // the password as the URL spells it ("//:" … "@")
			}
		}
		add(base64.StdEncoding.EncodeToString([]byte(user+":"+pw)), 4) // Basic auth
	}
	for _, v := range redact.QuerySecrets(cfg.URL) {
		add(v, 4) // ?token=… (a black-box probe found it in logs and dead letters)
	}
	for k, v := range cfg.Headers {
		add(v, 4)
		if !redact.SensitiveHeader(k) {
			continue
		}
		words := strings.FieldsFunc(v, func(r rune) bool {
			return r == ' ' || r == '\t' || r == ',' || r == ';' || r == '='
		})
		for i, w := range words {
			if i == 0 && len(words) > 1 && (strings.EqualFold(k, "Authorization") || strings.EqualFold(k, "Proxy-Authorization")) {
				continue // the scheme: Bearer, Basic, Token
			}
			add(w, 6)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// secret returns err with every secret of the sink masked in its text
// (status, /healthz, logs and the dead-letter ledger show error texts);
// errors.Is and As still see the cause.
func (w *Webhook) secret(err error) error {
	msg := redact.URL(err.Error())
	for _, s := range w.hide {
		msg = strings.ReplaceAll(msg, s, redact.Mask)
	}
	return &redact.Error{Msg: msg, Err: err}
}

// tlsFailure reports whether err is a TLS handshake failure: a server
// certificate that does not verify, or the server refusing ours.
func tlsFailure(err error) bool {
	var verify *tls.CertificateVerificationError
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	return err != nil && (errors.As(err, &verify) || errors.As(err, &unknown) || errors.As(err, &host) ||
		errors.As(err, &invalid) || strings.Contains(err.Error(), "remote error: tls:"))
}

// retryAfter parses a Retry-After value (seconds or an HTTP date).
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	var d time.Duration
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
		d = time.Duration(s) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = time.Until(t)
	}
	return min(max(d, 0), maxRetryAfter)
}

// recordRequest stores (epoch, first, last) before c's first POST, unless
// it is the recorded request being rebuilt.
func (w *Webhook) recordRequest(c *whChunk) error {
	first, last := c.ends[0], c.ends[len(c.ends)-1]
	if e := w.book.pendingOf(c.epoch); e != nil && e.First == first && e.Last == last {
		return nil
	}
	// The request this one replaces: of c's epoch, or with layout 1 of
	// any (the record holds one).
	replaced := []uint64{c.epoch}
	if !w.cfg.PerEpoch {
		replaced = w.book.pendingAny()
	}
	for _, ep := range replaced {
		if e := w.book.pendingOf(ep); e != nil && w.carries[ep] == nil { // a carry given up said why already
			w.log.Warn("webhook gives up a recorded request it could not rebuild", "epoch", fmt.Sprintf("%016x", ep), "first", e.First, "last", e.Last)
		}
	}
	return w.book.recordRange(c.epoch, first, last)
}

// applied records that c's lines are done (positioned lines only). A failed
// store is logged: the request was acknowledged, and a resend after a
// restart carries the same key.
func (w *Webhook) applied(c *whChunk) {
	if !c.positioned {
		return
	}
	if err := w.book.markApplied(c.epoch, c.ends[len(c.ends)-1]); err != nil {
		w.log.Warn("webhook record not updated after an acknowledged request; a restart may send it again under the same key", "error", err)
	}
}

// deadLetter writes c's lines to the ledger, from the first one not there
// yet: a write that fails after k lines is resumed at line k+1, so no line
// is written (or counted) twice — the ledger skips a positioned line it
// holds already, not a line without a position.
func (w *Webhook) deadLetter(c *whChunk, attempts int, lastErr error) error {
	if c.lettered == 0 && c.letterErr == nil {
		c.letterAttempts, c.letterErr = attempts, lastErr
	}
	key, lines := c.key(), len(c.lines)
	if c.reqKey != "" {
		key, lines = c.reqKey, c.reqLines
	}
	var d feed.Delivery
	for ; c.lettered < len(c.lines); c.lettered++ {
		i := c.lettered
		d.Reset(&feed.Batch{Feed: c.feed, Path: c.path, Epoch: c.epoch, Positioned: c.positioned,
			Lines: [][]byte{c.lines[i]}, Ends: []int64{c.ends[i]}}, 0)
		d.Attempt = c.letterAttempts
		if err := w.h.DeadLetter(&d, c.letterAttempts, c.letterErr, key, lines); err != nil {
			w.log.Error("dead-letter write failed; holding the request", "lines", len(c.lines), "written", i, "error", err)
			return err
		}
	}
	w.log.Warn("webhook request dead-lettered", "key", c.key(), "lines", len(c.lines), "error", c.letterErr)
	return nil
}

// ReplayRequest sends dead-lettered lines again as one request under key
// (DESIGN §12 "Dead-letter replay"): the lines of a request dead-lettered
// whole go out under its original Idempotency-Key, in the same NDJSON
// objects, so a receiver that applied the request before dedupes it. An
// empty key (an entry written before the ledger named requests) sends the
// line alone under its own key, as before. One try: no retry, no dead
// letter, no record (a replayed line never changes the stored position); the
// error of a request that was not acknowledged is returned as it is.
func (w *Webhook) ReplayRequest(ctx context.Context, b *feed.Batch, key string) error {
	c := &whChunk{feed: b.Feed, path: b.Path, epoch: b.Epoch, lines: b.Lines, ends: b.Ends}
	w.encode(c)
	if key == "" {
		key = c.key()
	}
	_, _, err := w.post(ctx, c, key)
	return err
}

// PendingRequest is the Idempotency-Key of the recorded request not
// acknowledged yet, without its feed part: `<epoch>:<first>-<last>` (""
// none; the sink reads one feed). With several (a glob feed: one per
// epoch), the one whose dead letter began (the ledger holds its first
// line: its lettered part waits in the ledger for the rest), else the one
// recorded last. On the group goroutine (replays run there).
func (w *Webhook) PendingRequest() string {
	var ep uint64
	var last *whEntry
	pending := w.book.pendingAny()
	lettered := false
	for _, p := range pending {
		e := w.book.entry(p)
		l := len(pending) > 1 && w.cfg.Feed != "" && w.partlyLettered(w.cfg.Feed, p, e)
		if last == nil || (l && !lettered) || (l == lettered && e.used > last.used) {
			ep, last, lettered = p, e, l
		}
	}
	if last == nil {
		return ""
	}
	return fmt.Sprintf("%016x:%d-%d", ep, last.First, last.Last)
}

// release gives c's lines up (POST /admin/release while retrying), but
// those already in the ledger (a dead letter that failed halfway).
func (w *Webhook) release(c *whChunk, req *processor.ReleaseRequest) {
	n := uint64(len(c.lines) - c.lettered)
	w.applied(c)
	w.log.Warn("webhook request released on purpose", "key", c.key(), "lines", n)
	w.h.GiveUp(req, n)
}

// FlushDue implements Flusher: while an incomplete recorded request waits,
// every CarryPoll (at once when the source waits for its lines); lines the
// group finished without the sink (a dead letter after a record failure) are
// reported at once.
func (w *Webhook) FlushDue() (time.Time, bool) {
	if len(w.carries) > 0 {
		if w.starved() != nil {
			return time.Time{}, true
		}
		return w.carryLook.Add(w.cfg.CarryPoll), true
	}
	if q := w.h.Queue(); q.AckPoint() < q.Dispatched() {
		return time.Time{}, true
	}
	return time.Time{}, false
}

// Flush implements Flusher; it runs between batches, when everything the
// group dispatched is done but what the carry holds. The carry goes out
// only when the source waits for its lines (see starved).
func (w *Webhook) Flush(ctx context.Context) error {
	if len(w.carries) > 0 {
		c := w.starved()
		if c == nil {
			w.carryLook = time.Now()
			return nil
		}
		w.log.Warn("webhook cannot rebuild the recorded request: the source waits for its lines and the rest cannot come; sending what it has under a new key (the receiver may see duplicates)",
			"first", c.first, "last", c.last, "sent", c.ends[len(c.ends)-1])
		if err := w.sendCarry(ctx, c); err != nil {
			return err
		}
		if len(w.carries) > 0 {
			return nil // sendCarry reported what is durable
		}
	}
	w.h.DurableThrough(w.h.Queue().Dispatched())
	return nil
}

// Close closes the record and idle connections.
func (w *Webhook) Close() error {
	for _, c := range w.carries {
		w.want(c, false)
	}
	w.client.CloseIdleConnections()
	return w.book.close()
}
