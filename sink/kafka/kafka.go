package kafka

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"tailfeed/feed"
	"tailfeed/pointer"
	"tailfeed/processor"
)

// Header names every record carries (DESIGN §11).
const (
	HeaderInstance = "tailfeed-instance"
	HeaderFeed     = "tailfeed-feed"
	HeaderEpoch    = "tailfeed-epoch"
	HeaderPosition = "tailfeed-position"
	HeaderPath     = "tailfeed-path"
)

// Config configures a Sink.
type Config struct {
	Group    processor.Host // the subscriber's group: retry policy, fence, counters
	Name     string         // the processor's name (in the transactional id and offsets keys)
	Instance string         // the sidecar's instance (DESIGN §11)
	Feed     string         // the feed it reads (DoneThrough's marks are this feed's)

	Topic        string
	Key          string // template over {instance} {feed} {path} {epoch}; "" = no key
	ExactlyOnce  bool
	OffsetsTopic string // exactlyOnce
	// TransactionalID (exactlyOnce); "" = tailfeed-<instance>-<processor>.
	TransactionalID string
	CreateTopics    bool
	// Timeout bounds one attempt: a batch not acknowledged by then fails
	// (and is retried), and so does a metadata or offsets read.
	Timeout time.Duration
	// EpochsFile is dataDir/feeds/<feed>.epochs: the file key of an epoch
	// in the offsets record ("" there when unknown).
	EpochsFile string
	// Client are the connection options: seed brokers, TLS, SASL (built by
	// the registration from the config; tests and the bench pass their own).
	Client []kgo.Opt
	Logger hclog.Logger
}

// Sink is the `kafka` sink.
type Sink struct {
	cfg  Config
	h    processor.Host
	log  hclog.Logger
	txID string

	cl    *kgo.Client // nil until ready (and after a reset)
	ready bool
	// stored is the offsets topic's record for this processor: the last
	// committed position per (feed, epoch) (exactlyOnce only).
	stored map[feedEpoch]int64

	hook connHook // the last connection error, for the stall's reason

	fileKeys map[uint64]string // epoch → file key (16 hex), from the epochs file

	// Per-batch scratch, reused (the group goroutine only).
	recs    []kgo.Record
	ptrs    []*kgo.Record
	hdrs    []kgo.RecordHeader
	hdrsSet int // s.hdrs[:5*hdrsSet] hold keyFor's constant headers
	arena   []byte
	keyFor  keyCache
	offsets kgo.Record
}

type feedEpoch struct {
	feed  string
	epoch uint64
}

type keyCache struct {
	feed, path string
	epoch      uint64
	valid      bool
	key        []byte
	epochHex   []byte
	// The constant header values, shared by every record of the epoch.
	inst, feedB, pathB []byte
}

// offsetsValue is the offsets record's value.
type offsetsValue struct {
	Feed     string `json:"feed"`
	FileKey  string `json:"fileKey"`
	Epoch    string `json:"epoch"`
	Position int64  `json:"position"`
}

// Open builds the sink. It does not reach the brokers: the first batch
// does (an engine that is down then stalls the feed, with the reason,
// rather than failing the start).
func Open(cfg Config) (*Sink, error) {
	if cfg.Group == nil {
		return nil, errors.New("kafka: no group")
	}
	if cfg.Topic == "" {
		return nil, errors.New("kafka: no topic")
	}
	if cfg.ExactlyOnce && cfg.OffsetsTopic == "" {
		return nil, errors.New("kafka: exactlyOnce needs an offsetsTopic")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = cfg.Group.Logger()
	}
	s := &Sink{cfg: cfg, h: cfg.Group, log: log, stored: map[feedEpoch]int64{}, fileKeys: map[uint64]string{}}
	if cfg.ExactlyOnce {
		s.txID = cfg.TransactionalID
		if s.txID == "" {
			s.txID = "tailfeed-" + cfg.Instance + "-" + cfg.Name
		}
	}
	return s, nil
}

// TransactionalID is the producer's transactional id ("" without exactlyOnce).
func (s *Sink) TransactionalID() string { return s.txID }

// clientOpts are the producer's options.
func (s *Sink) clientOpts() []kgo.Opt {
	opts := append([]kgo.Opt{}, s.cfg.Client...)
	opts = append(opts,
		kgo.DefaultProduceTopic(s.cfg.Topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), // with the idempotent producer (kgo's default)
		kgo.MaxBufferedRecords(1<<20),      // a group batch goes in whole
		kgo.WithHooks(&s.hook),
		// A batch is buffered whole, then flushed (produce): one request
		// per batch and partition, not a first request of the first
		// record and more behind it.
		kgo.ManualFlushing(),
		kgo.ProduceRequestTimeout(s.cfg.Timeout),
		kgo.UnknownTopicRetries(2),
	)
	if s.cfg.ExactlyOnce {
		opts = append(opts, kgo.TransactionalID(s.txID),
			kgo.TransactionTimeout(max(s.cfg.Timeout*2, time.Minute)))
	}
	return opts
}

// ensure makes the sink ready: a client, the topics (created or checked),
// and with exactlyOnce the producer id (which fences an older producer of
// the same transactional id and ends its open transaction) and the stored
// positions, read from the offsets topic to its end.
func (s *Sink) ensure(ctx context.Context) error {
	if s.ready {
		return nil
	}
	if s.cl == nil {
		cl, err := kgo.NewClient(s.clientOpts()...)
		if err != nil {
			return fmt.Errorf("kafka client: %w", err)
		}
		s.cl = cl
	}
	actx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	if err := s.topics(actx); err != nil {
		return err
	}
	if s.cfg.ExactlyOnce {
		if _, _, err := s.cl.ProducerID(actx); err != nil {
			s.reset()
			return fmt.Errorf("kafka transactional producer %q: %w", s.txID, err)
		}
		if err := s.readOffsets(ctx); err != nil {
			return err
		}
	}
	s.ready = true
	return nil
}

// reset drops the client: the next attempt starts over (a new producer id
// with exactlyOnce, and the stored positions read again).
func (s *Sink) reset() {
	if s.cl != nil {
		s.cl.Close()
		s.cl = nil
	}
	s.ready = false
}

// topics checks that the topics exist, creating missing ones when asked,
// and warns about an offsets topic that is not compacted.
func (s *Sink) topics(ctx context.Context) error {
	adm := kadm.NewClient(s.cl)
	want := []string{s.cfg.Topic}
	if s.cfg.ExactlyOnce {
		want = append(want, s.cfg.OffsetsTopic)
	}
	have, err := adm.ListTopics(ctx, want...)
	if err != nil {
		return fmt.Errorf("kafka metadata: %w%s", err, s.lastConnErr())
	}
	for _, t := range want {
		if d, ok := have[t]; ok && d.Err == nil {
			continue
		}
		if !s.cfg.CreateTopics {
			return fmt.Errorf("kafka topic %q does not exist (create it, or set createTopics: true)", t)
		}
		var r kadm.CreateTopicResponse
		if t == s.cfg.OffsetsTopic && s.cfg.ExactlyOnce {
			r, err = adm.CreateTopic(ctx, 1, -1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, t)
		} else {
			r, err = adm.CreateTopic(ctx, -1, -1, nil, t)
		}
		if err == nil {
			err = r.Err
		}
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("kafka create topic %q: %w", t, err)
		}
		s.log.Info("kafka topic created", "topic", t)
	}
	if s.cfg.ExactlyOnce {
		rc, err := adm.DescribeTopicConfigs(ctx, s.cfg.OffsetsTopic)
		if err == nil {
			if c, err := rc.On(s.cfg.OffsetsTopic, nil); err == nil && c.Err == nil {
				compact := false
				for _, kv := range c.Configs {
					if kv.Key == "cleanup.policy" && strings.Contains(kv.MaybeValue(), "compact") {
						compact = true
					}
				}
				if !compact {
					s.log.Warn("kafka offsetsTopic is not compacted: it grows by one record per batch (set cleanup.policy=compact)",
						"offsetsTopic", s.cfg.OffsetsTopic)
				}
			}
		}
	}
	return nil
}

// offsetsPrefix starts every offsets key of this processor.
func (s *Sink) offsetsPrefix() string { return s.cfg.Instance + ":" + s.cfg.Name + ":" }

// readOffsets reads the offsets topic from its start to its end as of now
// (the high watermark) and keeps the last committed position of each
// (feed, epoch) of this processor. Read-committed in effect: a record of
// this processor counts once its transaction's commit marker follows it,
// never when an abort marker does. The read is uncommitted, each
// transaction told by its marker, because a read-committed read stops at
// the last stable offset: many sidecars share the offsets topic, and
// another one's open transaction (for up to its transaction timeout after
// a kill -9) would hide this processor's newer records behind it — the
// sink would take itself for behind the pointer and produce the lines
// again (DESIGN §11). This processor's own transactions have all ended
// here (ensure takes the producer id first, which aborts an open one of
// the previous run); a record of its keys in a transaction still open at
// the end (another producer writing them) is waited for: an error, which
// the caller retries, the feed held with the reason, no record reported.
func (s *Sink) readOffsets(ctx context.Context) error {
	actx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	adm := kadm.NewClient(s.cl)
	ends, err := adm.ListEndOffsets(actx, s.cfg.OffsetsTopic)
	if err != nil {
		return fmt.Errorf("kafka offsets topic %q: %w", s.cfg.OffsetsTopic, err)
	}
	if err := ends.Error(); err != nil {
		return fmt.Errorf("kafka offsets topic %q: %w", s.cfg.OffsetsTopic, err)
	}
	starts, err := adm.ListStartOffsets(actx, s.cfg.OffsetsTopic)
	if err != nil {
		return fmt.Errorf("kafka offsets topic %q: %w", s.cfg.OffsetsTopic, err)
	}
	want := map[int32]int64{} // partition → end (exclusive)
	parts := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		st, _ := starts.Lookup(o.Topic, o.Partition)
		if o.Offset > st.Offset {
			want[o.Partition] = o.Offset
			parts[o.Partition] = kgo.NewOffset().At(st.Offset)
		}
	})
	stored := map[feedEpoch]int64{}
	type txn struct {
		partition int32
		producer  int64
	}
	open := map[txn][]*kgo.Record{} // this processor's records whose transaction has no marker yet
	if len(want) > 0 {
		opts := append([]kgo.Opt{}, s.cfg.Client...)
		opts = append(opts,
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{s.cfg.OffsetsTopic: parts}),
			kgo.FetchIsolationLevel(kgo.ReadUncommitted()),
			kgo.KeepControlRecords(), // the markers tell committed from aborted
		)
		cons, err := kgo.NewClient(opts...)
		if err != nil {
			return fmt.Errorf("kafka offsets reader: %w", err)
		}
		defer cons.Close()
		prefix := s.offsetsPrefix()
		apply := func(r *kgo.Record) {
			var v offsetsValue
			if json.Unmarshal(r.Value, &v) != nil {
				s.log.Warn("kafka offsets record unreadable; ignored", "key", string(r.Key))
				return
			}
			e, err := strconv.ParseUint(v.Epoch, 16, 64)
			if err != nil {
				s.log.Warn("kafka offsets record unreadable; ignored", "key", string(r.Key))
				return
			}
			stored[feedEpoch{v.Feed, e}] = v.Position
		}
		for len(want) > 0 {
			fs := cons.PollFetches(actx)
			if actx.Err() != nil {
				return fmt.Errorf("kafka offsets topic %q: read to its end timed out (%d partitions left)", s.cfg.OffsetsTopic, len(want))
			}
			var ferr error
			fs.EachError(func(t string, p int32, err error) { ferr = err })
			if ferr != nil && !errors.Is(ferr, context.DeadlineExceeded) {
				return fmt.Errorf("kafka offsets topic %q: %w", s.cfg.OffsetsTopic, ferr)
			}
			fs.EachRecord(func(r *kgo.Record) {
				end, ok := want[r.Partition]
				if !ok || r.Offset >= end {
					return // past the end as of the start
				}
				if r.Offset+1 >= end {
					delete(want, r.Partition)
				}
				t := txn{r.Partition, r.ProducerID}
				switch {
				case r.Attrs.IsControl():
					// The key is a version and a type (int16s): 1 commits, 0 aborts.
					if len(r.Key) >= 4 && binary.BigEndian.Uint16(r.Key[2:4]) == 1 {
						for _, x := range open[t] {
							apply(x)
						}
					}
					delete(open, t)
				case !strings.HasPrefix(string(r.Key), prefix):
				case r.Attrs.IsTransactional():
					open[t] = append(open[t], r)
				default:
					apply(r)
				}
			})
		}
	}
	for t := range open {
		return fmt.Errorf("kafka offsets topic %q: waiting for open transactions on it to end: producer id %d holds a record of this processor (%s…) in a transaction not committed or aborted yet",
			s.cfg.OffsetsTopic, t.producer, s.offsetsPrefix())
	}
	s.stored = stored
	s.log.Debug("kafka offsets read", "offsetsTopic", s.cfg.OffsetsTopic, "epochs", len(stored))
	return nil
}

// Stored is the stored position of (feed, epoch) and whether there is one
// (exactlyOnce; for tests).
func (s *Sink) Stored(feedName string, epoch uint64) (int64, bool) {
	p, ok := s.stored[feedEpoch{feedName, epoch}]
	return p, ok
}

// ProcessBatch produces b's lines and returns once the brokers acknowledged
// them (with exactlyOnce: once their transaction, with the offsets record,
// committed). A connection failure, a timeout or an unavailable engine is
// retried here at the backoff cap whatever onFailure says (fenced: the feed
// stalls with the reason); a record the brokers reject is returned, so the
// group's retries and onFailure (hold, deadLetter) apply to it.
func (s *Sink) ProcessBatch(ctx context.Context, b *feed.Batch) (int, error) {
	n := len(b.Lines)
	end := s.doneEnd(b)
	if n == 0 && end < 0 {
		return 0, nil
	}
	rp := s.h.Retry()
	for attempt := 1; ; attempt++ {
		from, err := 0, s.ensure(ctx)
		if err == nil {
			from = s.skipApplied(b)
			if from == n && !s.moves(b, end) {
				s.h.Unfence()
				return n, nil
			}
			var done int
			done, err = s.send(ctx, b, from, end)
			if err == nil {
				s.h.Unfence()
				return n, nil
			}
			from += done
			if ctx.Err() != nil {
				return from, ctx.Err()
			}
			var rel released
			if errors.As(err, &rel) {
				s.log.Warn("kafka lines released on purpose", "lines", n-from)
				s.h.GiveUpTail(rel.req, uint64(n-from))
				return n, nil
			}
			if Rejected(err) {
				return from, err
			}
			if staleTopic(err) {
				// The topic was deleted (and maybe made again): kgo keeps
				// the old topic id for the life of the client, so a new
				// client, which checks (or creates) the topic first, is
				// the only way on (audit 9E).
				s.reset()
			}
		}
		if ctx.Err() != nil {
			return from, ctx.Err()
		}
		s.h.Fail()
		s.h.Fence(err)
		rel, ok := s.h.Wait(ctx, rp.Backoff(attempt))
		if !ok {
			return from, ctx.Err()
		}
		if rel != nil {
			s.log.Warn("kafka lines released on purpose", "lines", n-from)
			s.h.GiveUpTail(rel, uint64(n-from))
			return n, nil
		}
	}
}

// doneEnd is the position the offsets record of b's transaction takes
// (exactlyOnce, positioned lines; else -1): the end of b's last line, or
// further, the end of the lines the group finished after it without
// handing them here (filtered out, dead-lettered, released) — a batch of
// no lines carries only those. So the record advances over such lines
// (DESIGN §11), and a run ending in them is not "behind" at the next start.
func (s *Sink) doneEnd(b *feed.Batch) int64 {
	if !s.cfg.ExactlyOnce || !b.Positioned {
		return -1
	}
	if end := b.Done(); end > 0 {
		return end
	}
	return -1
}

// moves reports whether end is past the stored position of b's epoch:
// a batch whose lines the record holds still commits the offsets record
// alone then.
func (s *Sink) moves(b *feed.Batch, end int64) bool {
	if end < 0 {
		return false
	}
	p, ok := s.stored[feedEpoch{b.Feed, b.Epoch}]
	return !ok || end > p
}

// DoneThrough implements processor.DoneThrougher (DESIGN §11 "A restored
// sink is caught up from the input"): with exactlyOnce, the offsets
// topic's record of this processor's feed, one mark per epoch, read to its
// end read-committed (the producer id is taken first, which ends an open
// transaction of the previous run); without exactlyOnce the sink keeps no
// record (never behind).
func (s *Sink) DoneThrough(ctx context.Context) ([]processor.Mark, error) {
	if !s.cfg.ExactlyOnce {
		return nil, nil
	}
	if err := s.ensure(ctx); err != nil {
		return nil, err
	}
	var out []processor.Mark
	for fe, p := range s.stored {
		if fe.feed == s.cfg.Feed {
			out = append(out, processor.Mark{Epoch: fe.epoch, Position: p})
		}
	}
	slices.SortFunc(out, func(a, b processor.Mark) int { return cmp.Compare(a.Epoch, b.Epoch) })
	return out, nil
}

var _ processor.DoneThrougher = (*Sink)(nil)

// skipApplied returns the index of b's first line the stored record does
// not hold (exactlyOnce).
func (s *Sink) skipApplied(b *feed.Batch) int {
	if !s.cfg.ExactlyOnce || !b.Positioned {
		return 0
	}
	pos, ok := s.stored[feedEpoch{b.Feed, b.Epoch}]
	if !ok {
		return 0
	}
	i := 0
	for i < len(b.Lines) && b.AlreadyApplied(i, b.Epoch, pos) {
		i++
	}
	return i
}

// Rejected reports whether err is a record the brokers (or the client,
// for its size) refuse: poison, which follows onFailure. Anything else is
// the engine being unreachable or unavailable.
func Rejected(err error) bool {
	for _, e := range []*kerr.Error{kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidRecord,
		kerr.CorruptMessage, kerr.PolicyViolation, kerr.TopicAuthorizationFailed,
		kerr.InvalidTopicException, kerr.UnsupportedForMessageFormat, kerr.InvalidRequiredAcks} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// staleTopic reports whether err says the broker does not know the topic
// (or its id) the client produces to.
func staleTopic(err error) bool {
	return errors.Is(err, kerr.UnknownTopicID) || errors.Is(err, kerr.UnknownTopicOrPartition)
}

// released is produce's error when a release (POST /admin/release) was
// asked while it waited for the brokers: the batch's unacknowledged lines
// are given up.
type released struct {
	req      *processor.ReleaseRequest
	resolved bool // every record acknowledged or failed (else none counts as done)
}

func (released) Error() string { return "released on purpose while waiting for the brokers" }

// releasePoll is how often produce, waiting for the brokers while fenced,
// looks for a release request.
const releasePoll = 50 * time.Millisecond

// build fills the records of lines from.. of b. Per record it writes only
// what differs: the line, the position (formatted into the per-batch
// arena) and the record itself; the four constant headers (instance, feed,
// epoch, path) stay in the reused header slice while the batch's feed,
// path and epoch are the previous batch's, and share their bytes. The
// records of a batch take one timestamp, read once (kgo would read the
// clock per record; it keeps milliseconds).
func (s *Sink) build(b *feed.Batch, from int) []*kgo.Record {
	n := len(b.Lines) - from
	kc := &s.keyFor
	if !kc.valid || kc.feed != b.Feed || kc.path != b.Path || kc.epoch != b.Epoch {
		kc.feed, kc.path, kc.epoch, kc.valid = b.Feed, b.Path, b.Epoch, true
		kc.epochHex = hex16(nil, b.Epoch)
		kc.inst, kc.feedB, kc.pathB = []byte(s.cfg.Instance), []byte(b.Feed), []byte(b.Path)
		kc.key = nil
		if s.cfg.Key != "" {
			kc.key = []byte(strings.NewReplacer("{instance}", s.cfg.Instance, "{feed}", b.Feed,
				"{path}", b.Path, "{epoch}", string(kc.epochHex)).Replace(s.cfg.Key))
		}
		s.hdrsSet = 0 // the constant headers in s.hdrs are another batch's
	}
	if cap(s.recs) < n {
		s.recs = make([]kgo.Record, n)
		s.ptrs = make([]*kgo.Record, n, n+1)
		s.hdrs = make([]kgo.RecordHeader, 5*n)
		s.hdrsSet = 0
	}
	recs, ptrs, hdrs := s.recs[:n], s.ptrs[:n], s.hdrs[:5*n]
	for i := s.hdrsSet; i < n; i++ {
		h := hdrs[5*i : 5*i+5]
		h[0] = kgo.RecordHeader{Key: HeaderInstance, Value: kc.inst}
		h[1] = kgo.RecordHeader{Key: HeaderFeed, Value: kc.feedB}
		h[2] = kgo.RecordHeader{Key: HeaderEpoch, Value: kc.epochHex}
		h[3].Key = HeaderPosition
		h[4] = kgo.RecordHeader{Key: HeaderPath, Value: kc.pathB}
	}
	s.hdrsSet = max(s.hdrsSet, n)
	// 20 bytes hold any int64: the arena never grows in the loop, so the
	// slices into it stay valid.
	if cap(s.arena) < 20*n {
		s.arena = make([]byte, 0, 20*n)
	}
	arena := s.arena[:0]
	now := time.Now()
	for i := range n {
		at := len(arena)
		arena = strconv.AppendInt(arena, b.Ends[from+i], 10)
		h := hdrs[5*i : 5*i+5 : 5*i+5]
		h[3].Value = arena[at:len(arena):len(arena)]
		recs[i] = kgo.Record{Topic: s.cfg.Topic, Key: kc.key, Value: b.Lines[from+i], Headers: h, Timestamp: now}
		ptrs[i] = &recs[i]
	}
	s.arena = arena
	return ptrs
}

// send produces lines from.. of b and waits for the acks; it returns how
// many leading lines are acknowledged (with exactlyOnce: all or none, and
// the offsets record at end).
func (s *Sink) send(ctx context.Context, b *feed.Batch, from int, end int64) (int, error) {
	ptrs := s.build(b, from)
	if s.cfg.ExactlyOnce {
		return 0, s.sendTxn(ctx, b, ptrs, end)
	}
	failed, err := s.produce(ctx, ptrs)
	var rel released
	if errors.As(err, &rel) {
		// Released: the leading lines the brokers acknowledged before are
		// done, the rest given up.
		if !rel.resolved {
			return 0, err
		}
		for i, p := range ptrs {
			if _, bad := failed[p]; bad {
				return i, err
			}
		}
		return len(ptrs), err
	}
	if err != nil {
		return 0, err
	}
	if failed == nil {
		return len(ptrs), nil
	}
	for i, p := range ptrs {
		if err, bad := failed[p]; bad {
			return i, s.wrap(err)
		}
	}
	return len(ptrs), nil
}

// produce hands the records to kgo and waits for every one to be
// acknowledged or failed. kgo's idempotent producer retries by itself and
// fails a record only when that is safe (a request sent without a
// response is not), so while the brokers are away the records wait in the
// client: after Timeout without an answer the subscriber is fenced with
// the reason (the last connection error) and the wait goes on. ctx ending
// (a stop) closes the client, which fails what is left. It returns the
// records that failed (nil: none).
func (s *Sink) produce(ctx context.Context, ptrs []*kgo.Record) (map[*kgo.Record]error, error) {
	var (
		mu     sync.Mutex
		failed map[*kgo.Record]error
		left   atomic.Int64
		done   = make(chan struct{})
	)
	left.Store(int64(len(ptrs)))
	promise := func(r *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			if failed == nil {
				failed = map[*kgo.Record]error{}
			}
			failed[r] = err
			mu.Unlock()
		}
		if left.Add(-1) == 0 {
			close(done)
		}
	}
	for _, p := range ptrs {
		s.cl.Produce(ctx, p, promise)
	}
	// Flush sends what is buffered now; the wait is below (Flush returns
	// when the records are done, or ctx ends, or the client closes).
	cl := s.cl
	go cl.Flush(ctx) //nolint:errcheck // the promises carry the outcome
	timer := time.NewTimer(s.cfg.Timeout)
	defer timer.Stop()
	var poll <-chan time.Time // while fenced: a release is taken (Host.Wait), not left waiting for the brokers
	for {
		select {
		case <-done:
			mu.Lock()
			defer mu.Unlock()
			return failed, nil
		case <-timer.C:
			s.h.Fail()
			s.h.Fence(s.wrap(fmt.Errorf("no acknowledgement for %d records within %s, waiting for the brokers%s",
				left.Load(), s.cfg.Timeout, s.lastConnErr())))
			timer.Reset(s.cfg.Timeout)
			if poll == nil {
				t := time.NewTicker(releasePoll)
				defer t.Stop()
				poll = t.C
			}
		case <-poll:
			req, _ := s.h.Wait(ctx, time.Millisecond)
			if req == nil {
				continue
			}
			s.reset() // fails what kgo still holds: those lines are given up
			select {
			case <-done:
			case <-time.After(s.cfg.Timeout):
				return nil, released{req: req} // which were acknowledged is not known: none done
			}
			mu.Lock()
			defer mu.Unlock()
			return failed, released{req: req, resolved: true}
		case <-ctx.Done():
			s.reset() // fails what kgo still holds: no record outlives the batch's lines
			select {
			case <-done:
			case <-time.After(s.cfg.Timeout):
			}
			return nil, ctx.Err()
		}
	}
}

// sendTxn produces the records and the offsets record (position end) in
// one transaction and commits it; any failure aborts it. A commit whose
// outcome is unknown resets the client: the next attempt reads the
// offsets topic again.
func (s *Sink) sendTxn(ctx context.Context, b *feed.Batch, ptrs []*kgo.Record, end int64) error {
	if err := s.cl.BeginTransaction(); err != nil {
		s.reset()
		return s.wrap(err)
	}
	var fk feedEpoch
	if end >= 0 {
		fk = feedEpoch{b.Feed, b.Epoch}
		v, _ := json.Marshal(offsetsValue{Feed: b.Feed, FileKey: s.fileKey(b.Epoch), Epoch: string(s.keyFor.epochHex), Position: end})
		s.offsets = kgo.Record{Topic: s.cfg.OffsetsTopic,
			Key:   []byte(s.offsetsPrefix() + b.Feed + ":" + string(s.keyFor.epochHex)),
			Value: v}
		ptrs = append(ptrs, &s.offsets)
	}
	failed, err := s.produce(ctx, ptrs)
	if err != nil {
		return err // stopped: the client is closed, the transaction never commits
	}
	var perr error
	for _, p := range ptrs { // the first failure in order
		if e, bad := failed[p]; bad {
			perr = e
			break
		}
	}
	if perr == nil {
		actx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
		defer cancel()
		err := s.cl.EndTransaction(actx, kgo.TryCommit)
		if err == nil {
			if end >= 0 {
				s.stored[fk] = end
			}
			return nil
		}
		s.reset() // committed or not: the offsets topic will say
		return s.wrap(fmt.Errorf("commit: %w", err))
	}
	xctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.Timeout)
	defer cancel()
	if err := s.cl.AbortBufferedRecords(xctx); err != nil {
		s.reset()
	} else if err := s.cl.EndTransaction(xctx, kgo.TryAbort); err != nil {
		s.reset()
	}
	return s.wrap(perr)
}

func (s *Sink) wrap(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("kafka produce to %q: no acknowledgement within %s (brokers unreachable or unavailable): %w", s.cfg.Topic, s.cfg.Timeout, err)
	}
	return fmt.Errorf("kafka produce to %q: %w", s.cfg.Topic, err)
}

// fileKey is the file key of epoch (16 hex) per the epochs file, "" when
// it names none. The epochs file is read at the first ask for an epoch;
// of the other epochs it holds only those whose lines name a file are
// remembered: one whose lines name none yet (a glob feed writes the
// "created" lines of many new streams ahead; each stream's "adopted" line
// naming its file follows when it opens the file, before its first line
// is published) is read again when asked for, not taken as file key 0
// for good.
func (s *Sink) fileKey(epoch uint64) string {
	if k, ok := s.fileKeys[epoch]; ok {
		return k
	}
	last := map[uint64]uint64{}
	if s.cfg.EpochsFile != "" {
		if lines, err := pointer.ReadEpochs(s.cfg.EpochsFile); err == nil {
			for _, l := range lines {
				last[l.Epoch] = l.FileKey
			}
		}
	}
	for e, key := range last {
		if key != 0 {
			s.fileKeys[e] = string(hex16(nil, key))
		}
	}
	if k, ok := s.fileKeys[epoch]; ok {
		return k
	}
	k := "" // not in the file: a downgraded epoch, never a pointer's
	if key, ok := last[epoch]; ok {
		k = string(hex16(nil, key))
	}
	s.fileKeys[epoch] = k
	return k
}

// connHook keeps the last failed connection's error.
type connHook struct{ last atomic.Pointer[string] }

// OnBrokerConnect implements kgo.HookBrokerConnect.
func (h *connHook) OnBrokerConnect(m kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err == nil {
		h.last.Store(nil)
		return
	}
	msg := fmt.Sprintf("%s:%d: %v", m.Host, m.Port, err)
	h.last.Store(&msg)
}

// lastConnErr is ": last connection error: …" when the last connection
// attempt failed, else "".
func (s *Sink) lastConnErr() string {
	if p := s.hook.last.Load(); p != nil {
		return "; last connection error: " + *p
	}
	return ""
}

// hex16 appends v as 16 lowercase hex digits.
func hex16(dst []byte, v uint64) []byte {
	const digits = "0123456789abcdef"
	for i := 15; i >= 0; i-- {
		dst = append(dst, digits[(v>>(4*uint(i)))&0xf])
	}
	return dst
}

// Close closes the client (an open transaction is ended by the next
// producer with the same transactional id).
func (s *Sink) Close() error {
	s.reset()
	return nil
}
