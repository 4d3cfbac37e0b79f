package processor

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"

	"tailfeed/feed"
	"tailfeed/internal/fileutil"
)

// The dead-letter ledger (DESIGN §6): dataDir/dlq/<processor>.jsonl, one
// JSON object per line, appended and fsynced before the line it holds counts
// as processed:
//
//	{"v":1,"feed":"app","path":"/var/log/app.log","epoch":"00c3a1d2e4f50617","position":1234,
//	 "positioned":true,"attempts":6,"error":"write out.log: no space left on device",
//	 "time":"2026-01-02T15:04:05.123456789Z","line":"text","lineBase64":"dGV4dA==",
//	 "request":"app:00c3a1d2e4f50617:1200-1234","requestLines":3}
//
// `v` is the entry's format version, LedgerFormat; an entry without it
// (written before it existed) is version 1. A ledger holding an entry of a
// newer version does not open (ErrLedgerVersion): an older tailfeed cannot
// replay what it does not understand, and must not purge it either.
//
// `request` and `requestLines` (webhook only, omitted otherwise) name the
// request the line was in: its Idempotency-Key and its number of lines. A
// replay sends the entries of one request as that request, under that key
// (dlq_replay.go). Entries written before these fields existed are read as
// before and replayed line by line.
//
// `line` is the line as text (one U+FFFD per invalid UTF-8 byte, as every
// JSON output); `lineBase64` holds the raw bytes exactly and is what a
// replay delivers. The ledger's entries are read from disk at open, so
// `deadLettered` (entries now in the ledgers) and `lossless: false` survive
// a restart. An entry leaves the ledger only through a replay that processed
// it or a purge; both rewrite the file atomically (temp file, fsync, rename,
// fsync of the directory).
//
// A torn last line (a crash during the append) is cut off at open: its line
// was not yet processed, so it is delivered again and dead-lettered again.
// A line with a position that is already in the ledger (a re-delivery after
// a crash) is not appended twice, nor handed to the processor again: the
// group (and a pull subscriber) finishes it at once, as processed — which
// it is: it is in the ledger. So a crash that came before the pointer
// passed a dead letter never puts its line in the output as well (where a
// replay would write it a second time, even under exactlyOnce), and
// `deadLettered` stays the number of entries in the ledger. The line leaves
// the ledger only through a replay or a purge, as any other entry.
//
// A complete line that does not decode is kept and counted (it may hold a
// line); a replay leaves it in place, a purge removes it.

// LedgerFormat is the format version of the ledger entries this tailfeed
// writes and the newest it reads.
const LedgerFormat = 1

// ErrLedgerVersion means a dead-letter ledger holds an entry of a format
// newer than LedgerFormat.
var ErrLedgerVersion = errors.New("processor: dead-letter ledger format newer than this tailfeed reads")

// DeadLetterEntry is one ledger line.
type DeadLetterEntry struct {
	V    int    `json:"v"` // format version; 0 (absent) reads as 1
	Feed string `json:"feed"`
	Path string `json:"path,omitempty"`
	// PathBase64 is the path's exact bytes when they are not valid UTF-8
	// (a glob's file named so): JSON would put U+FFFD for each bad byte,
	// and a replay would carry another path (audit 10B). Absent otherwise.
	PathBase64 string `json:"pathBase64,omitempty"`
	Epoch      string `json:"epoch"` // 16 lowercase hex digits
	Position   int64  `json:"position"`
	Positioned bool   `json:"positioned"`
	Attempts   int    `json:"attempts"`
	Error      string `json:"error"`
	Time       string `json:"time"` // RFC 3339, UTC, nanoseconds
	Line       string `json:"line"`
	LineBase64 string `json:"lineBase64"`
	// A webhook request dead-lettered whole (one entry per line) names
	// itself in each of its entries: its Idempotency-Key and its number of
	// lines. A replay sends those entries again as that one request, under
	// that key. Entries written before these fields existed (and those of
	// every other processor) have neither and are replayed line by line.
	Request      string `json:"request,omitempty"`
	RequestLines int    `json:"requestLines,omitempty"`
}

// ledgerEntry is an entry in memory: its bytes on disk (without '\n') and,
// when they decode, the entry and its raw line.
type ledgerEntry struct {
	id   uint64
	raw  []byte
	e    *DeadLetterEntry // nil: corrupt
	line []byte
	key  ledgerKey
}

type ledgerKey struct {
	feed     string
	epoch    uint64
	position int64
}

// Ledger is one processor's dead-letter file. Its methods are safe for
// concurrent use: the group appends and replays, the admin API lists and
// purges.
type Ledger struct {
	path string
	log  hclog.Logger

	mu      sync.Mutex
	entries []ledgerEntry
	keys    map[ledgerKey]int // positioned entries by (feed, epoch, position): count
	nextID  uint64
	size    int64 // bytes in the file

	taken map[uint64]bool // entries a replay in progress holds (take): a purge leaves them

	spans map[ledgerSpan][2]int64 // lowest and highest position of the positioned entries per (feed, epoch)
	nkeys atomic.Int64            // len(keys), read without the lock by within
}

type ledgerSpan struct {
	feed  string
	epoch uint64
}

// span widens the (feed, epoch) span over k's position.
func (l *Ledger) span(k ledgerKey) {
	sk := ledgerSpan{k.feed, k.epoch}
	sp, ok := l.spans[sk]
	if !ok {
		sp = [2]int64{k.position, k.position}
	}
	l.spans[sk] = [2]int64{min(sp[0], k.position), max(sp[1], k.position)}
}

// OpenLedger reads the ledger at path (a missing file is an empty ledger;
// the file is created at the first dead letter).
func OpenLedger(path string, log hclog.Logger) (*Ledger, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	l := &Ledger{path: path, log: log, keys: map[ledgerKey]int{}, taken: map[uint64]bool{}, spans: map[ledgerSpan][2]int64{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read dead-letter ledger %s: %w", path, err)
	}
	if i := bytes.LastIndexByte(data, '\n'); i+1 < len(data) {
		log.Warn("dead-letter ledger ends in a torn entry; cutting it off (a crash tears only an entry whose line the pointer has not passed: it is delivered again)",
			"path", path, "bytes", len(data)-i-1)
		data = data[:i+1]
		if err := os.Truncate(path, int64(len(data))); err != nil {
			return nil, fmt.Errorf("truncate torn dead-letter ledger %s: %w", path, err)
		}
	}
	for n, rest := 1, data; len(rest) > 0; n++ {
		i := bytes.IndexByte(rest, '\n')
		if i > 0 {
			if v := entryVersion(rest[:i]); v > LedgerFormat {
				return nil, fmt.Errorf("%w: %s line %d: version %d, this tailfeed reads up to %d",
					ErrLedgerVersion, path, n, v, LedgerFormat)
			}
			l.add(bytes.Clone(rest[:i]))
		}
		rest = rest[i+1:]
	}
	l.size = int64(len(data))
	for _, e := range l.entries {
		if e.e == nil {
			log.Warn("dead-letter ledger holds an entry that does not decode; kept (purge removes it)", "path", path)
			break
		}
	}
	return l, nil
}

// entryVersion is the "v" of a ledger entry: 1 without one, 0 when the
// entry does not decode (kept as corrupt).
func entryVersion(raw []byte) int {
	var e struct {
		V *int `json:"v"`
	}
	if json.Unmarshal(raw, &e) != nil {
		return 0
	}
	if e.V == nil {
		return 1
	}
	return *e.V
}

// add decodes raw and appends it to the in-memory entries.
func (l *Ledger) add(raw []byte) {
	le := ledgerEntry{id: l.nextID, raw: raw}
	l.nextID++
	var e DeadLetterEntry
	if err := json.Unmarshal(raw, &e); err == nil {
		if line, err := base64.StdEncoding.DecodeString(e.LineBase64); err == nil {
			if ep, err := strconv.ParseUint(e.Epoch, 16, 64); err == nil {
				if e.PathBase64 != "" {
					if p, err := base64.StdEncoding.DecodeString(e.PathBase64); err == nil {
						e.Path = string(p)
					}
				}
				le.e, le.line = &e, line
				le.key = ledgerKey{e.Feed, ep, e.Position}
			}
		}
	}
	if le.e != nil && le.e.Positioned {
		l.keys[le.key]++
		l.span(le.key)
		l.nkeys.Store(int64(len(l.keys)))
	}
	l.entries = append(l.entries, le)
}

// Within returns the positions of b's lines that are in the ledger (a
// re-delivery after a crash), nil when there are none: at the cost of one
// atomic load while the ledger holds no positioned entry.
func (l *Ledger) Within(b *feed.Batch) map[int64]bool {
	if l.nkeys.Load() == 0 || !b.Positioned || len(b.Ends) == 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	sp, ok := l.spans[ledgerSpan{b.Feed, b.Epoch}]
	if !ok || b.Ends[0] > sp[1] || b.Ends[len(b.Ends)-1] < sp[0] {
		return nil // the usual case: the entries lie before (or after) this batch
	}
	var out map[int64]bool
	for _, end := range b.Ends {
		if end >= sp[0] && end <= sp[1] && l.keys[ledgerKey{b.Feed, b.Epoch, end}] > 0 {
			if out == nil {
				out = map[int64]bool{}
			}
			out[end] = true
		}
	}
	return out
}

// Len is the number of entries in the ledger.
func (l *Ledger) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

// Path is the ledger file's path.
func (l *Ledger) Path() string { return l.path }

// Feeds counts the entries per feed they name ("" for an entry that does
// not decode): where the entries of a processor no longer configured
// count (DESIGN §6: lossless false while any ledger is non-empty).
func (l *Ledger) Feeds() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int{}
	for _, e := range l.entries {
		if e.e != nil {
			out[e.e.Feed]++
		} else {
			out[""]++
		}
	}
	return out
}

// DeadLetter appends d's line with its attempts and last error and fsyncs
// the ledger. A positioned line already in the ledger is not appended again.
func (l *Ledger) DeadLetter(d *feed.Delivery, attempts int, lastErr error) error {
	return l.DeadLetterRequest(d, attempts, lastErr, "", 0)
}

// DeadLetterRequest is DeadLetter for a line of a webhook request: the entry
// also records the request's Idempotency-Key and number of lines, so that a
// replay can send the request whole, under its key.
func (l *Ledger) DeadLetterRequest(d *feed.Delivery, attempts int, lastErr error, request string, requestLines int) error {
	msg := ""
	if lastErr != nil {
		msg = lastErr.Error()
	}
	e := DeadLetterEntry{V: LedgerFormat,
		Feed: d.Feed, Path: d.Path, Epoch: fmt.Sprintf("%016x", d.Epoch), Position: d.Position,
		Positioned: d.Positioned(), Attempts: attempts, Error: msg,
		Time: time.Now().UTC().Format(time.RFC3339Nano),
		Line: string(d.Line), LineBase64: base64.StdEncoding.EncodeToString(d.Line),
		Request: request, RequestLines: requestLines,
	}
	if !utf8.ValidString(d.Path) {
		e.PathBase64 = base64.StdEncoding.EncodeToString([]byte(d.Path))
	}
	raw, err := json.Marshal(e)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if d.Positioned() && l.keys[ledgerKey{d.Feed, d.Epoch, d.Position}] > 0 {
		return nil // dead-lettered before a crash, delivered again since
	}
	if err := l.appendLocked(raw); err != nil {
		return err
	}
	l.add(raw)
	return nil
}

// appendLocked appends raw and a newline and fsyncs. The file is opened per
// append (dead letters are rare), created with an fsync of its directory.
func (l *Ledger) appendLocked(raw []byte) error {
	created := false
	if _, err := os.Stat(l.path); errors.Is(err, os.ErrNotExist) {
		created = true
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open dead-letter ledger: %w", err)
	}
	defer f.Close()
	if created {
		if err := fileutil.SyncDir(filepath.Dir(l.path)); err != nil {
			return fmt.Errorf("fsync dlq directory: %w", err)
		}
	}
	buf := append(bytes.Clone(raw), '\n')
	n, err := f.Write(buf)
	if err == nil && n < len(buf) {
		err = io.ErrShortWrite
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		// Leave no partial entry behind: the line is retried and held.
		f.Truncate(l.size)
		return fmt.Errorf("append to dead-letter ledger %s: %w", l.path, err)
	}
	l.size += int64(n)
	return nil
}

// LedgerItem is an entry as the admin API lists it.
type LedgerItem struct {
	*DeadLetterEntry
	Corrupt string `json:"corrupt,omitempty"` // the undecodable bytes, when the entry does not decode
}

// List returns the first max entries (oldest first) and the total.
func (l *Ledger) List(max int) ([]LedgerItem, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := min(max, len(l.entries))
	out := make([]LedgerItem, 0, n)
	for _, e := range l.entries[:n] {
		if e.e == nil {
			out = append(out, LedgerItem{DeadLetterEntry: &DeadLetterEntry{}, Corrupt: string(e.raw)})
			continue
		}
		c := *e.e
		out = append(out, LedgerItem{DeadLetterEntry: &c})
	}
	return out, len(l.entries)
}

// replayItem is an entry handed to a replay.
type replayItem struct {
	id    uint64
	entry DeadLetterEntry
	line  []byte
	epoch uint64
}

// ReplayItem is a ledger entry as Head hands it out.
type ReplayItem struct {
	ID    uint64 // the entry's id in this run (Remove, PurgeIDs)
	Entry DeadLetterEntry
	Line  []byte
	Epoch uint64
}

// Head returns up to max decodable entries from the front, oldest first.
func (l *Ledger) Head(max int) []ReplayItem {
	items := l.head(max)
	out := make([]ReplayItem, len(items))
	for i, it := range items {
		out[i] = ReplayItem{ID: it.id, Entry: it.entry, Line: it.line, Epoch: it.epoch}
	}
	return out
}

// head returns up to max decodable entries from the front, oldest first.
func (l *Ledger) head(max int) []replayItem {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []replayItem
	for _, u := range l.unitsLocked(max, false, "", false) {
		out = append(out, u...)
	}
	return out
}

// take returns the decodable entries from the front, oldest first, in
// replay units, until they hold max lines, and marks them taken: a purge
// leaves them alone until untake (a replay in progress owns them). With
// whole, the entries of one webhook request (same feed and request key)
// form one unit, wherever they stand in the ledger, and max is rounded up
// to whole units; otherwise, and for entries that name no request, a unit
// is one entry.
//
// A request with fewer entries than lines (its dead letter was cut short)
// stays in the ledger, counted in `remaining`, while it is pending (the
// webhook's recorded request, as pendingRequest gives it): the webhook
// dead-letters the rest first, so that the request is replayed whole under
// its key. One that is not pending (its rest can no longer come) is
// replayed as it is, under its key.
func (l *Ledger) take(max int, whole bool, pending string) [][]replayItem {
	l.mu.Lock()
	defer l.mu.Unlock()
	units := l.unitsLocked(max, whole, pending, true)
	for _, u := range units {
		for _, it := range u {
			l.taken[it.id] = true
		}
	}
	return units
}

// untake ends a replay's claim on its entries (those it did not remove).
func (l *Ledger) untake(units [][]replayItem) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, u := range units {
		for _, it := range u {
			delete(l.taken, it.id)
		}
	}
}

// unitsLocked is take without the marks; skipTaken leaves out entries a
// replay holds.
func (l *Ledger) unitsLocked(max int, whole bool, pending string, skipTaken bool) [][]replayItem {
	type reqKey struct{ feed, request string }
	var reqs map[reqKey][]int // entries of each request, in ledger order
	if whole {
		reqs = map[reqKey][]int{}
		for i, e := range l.entries {
			if e.e != nil && e.e.Request != "" {
				k := reqKey{e.e.Feed, e.e.Request}
				reqs[k] = append(reqs[k], i)
			}
		}
	}
	var out [][]replayItem
	n := 0
	for _, e := range l.entries {
		if n >= max {
			break
		}
		if e.e == nil || (skipTaken && l.taken[e.id]) {
			continue
		}
		if !whole || e.e.Request == "" {
			out = append(out, []replayItem{l.item(e)})
			n++
			continue
		}
		k := reqKey{e.e.Feed, e.e.Request}
		idx, ok := reqs[k]
		if !ok {
			continue // taken with its request's first entry
		}
		delete(reqs, k)
		if rl := e.e.RequestLines; rl > 0 && len(idx) < rl && pending != "" && keyRange(e.e.Request) == pending {
			continue // its rest is still to come (see take)
		}
		u := make([]replayItem, len(idx))
		for j, i := range idx {
			u[j] = l.item(l.entries[i])
		}
		out = append(out, u)
		n += len(u)
	}
	return out
}

// keyRange is a request key without its feed part (feed names hold no ':').
func keyRange(key string) string {
	_, r, _ := strings.Cut(key, ":")
	return r
}

func (l *Ledger) item(e ledgerEntry) replayItem {
	return replayItem{id: e.id, entry: *e.e, line: e.line, epoch: e.key.epoch}
}

// RequestLines is the number of lines the request named key had, as its
// entries already in the ledger record it (0: none records it).
func (l *Ledger) RequestLines(feedName, key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.entries {
		if e.e != nil && e.e.Feed == feedName && e.e.Request == key && e.e.RequestLines > 0 {
			return e.e.RequestLines
		}
	}
	return 0
}

// Remove drops the entries with the given ids (those still present) and
// rewrites the file atomically. It returns how many it removed.
func (l *Ledger) Remove(ids map[uint64]bool) (int, error) {
	return l.RemoveCounted(ids, nil)
}

// RemoveCounted is Remove for entries given up (a purge): count (nil:
// none) is told, before anything is removed, how many entries of each feed
// ("": an entry that names none) go, and an error from it removes nothing
// and is returned; a rewrite that fails then takes the count back. A purge
// so counts its loss (and makes the count durable) before the entries leave
// the ledger: a kill -9 in between leaves them recorded twice, never
// nowhere.
func (l *Ledger) RemoveCounted(ids map[uint64]bool, count PurgeCount) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	keep := make([]ledgerEntry, 0, len(l.entries))
	byFeed := map[string]int{}
	for _, e := range l.entries {
		if !ids[e.id] {
			keep = append(keep, e)
		} else if e.e != nil {
			byFeed[e.e.Feed]++
		} else {
			byFeed[""]++
		}
	}
	n := len(l.entries) - len(keep)
	if n == 0 {
		return 0, nil
	}
	var takeBack func() error
	if count != nil {
		var err error
		if takeBack, err = count(byFeed); err != nil {
			return 0, err
		}
	}
	if err := l.rewriteLocked(keep); err != nil {
		// Nothing removed: the count is taken back (a retried purge
		// counts the entries once).
		if takeBack != nil {
			if terr := takeBack(); terr != nil {
				return 0, fmt.Errorf("%w (and its count could not be taken back, so it stays counted: %v)", err, terr)
			}
		}
		return 0, err
	}
	for _, e := range l.entries {
		if ids[e.id] && e.e != nil && e.e.Positioned {
			if l.keys[e.key]--; l.keys[e.key] <= 0 {
				delete(l.keys, e.key)
			}
		}
	}
	clear(l.spans)
	for k := range l.keys {
		l.span(k)
	}
	l.nkeys.Store(int64(len(l.keys)))
	l.entries = keep
	return n, nil
}

// Purge removes the oldest entries (corrupt ones included), at least max
// of them: the entries of a webhook request leave together (max is rounded
// up to whole requests, as for a replay), so a purge never leaves part of a
// request to be replayed under its key. Entries a replay holds (take) are
// left alone: that replay removes them once their lines reached the
// processor, or gives them back. It returns how many it removed.
func (l *Ledger) Purge(max int) (int, error) {
	return l.purge(max, nil)
}

// purge is Purge; skip (nil: none) names more entries to leave alone.
func (l *Ledger) purge(max int, skip func(id uint64) bool) (int, error) {
	return l.PurgeCounted(max, skip, nil)
}

// PurgeCounted is Purge with count told first (RemoveCounted); skip (nil:
// none) names more entries to leave alone.
func (l *Ledger) PurgeCounted(max int, skip func(id uint64) bool, count PurgeCount) (int, error) {
	ids := l.PurgeIDs(max, skip)
	return l.RemoveCounted(ids, count)
}

// PurgeIDs chooses the entries Purge removes.
func (l *Ledger) PurgeIDs(max int, skip func(id uint64) bool) map[uint64]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	type reqKey struct{ feed, request string }
	reqs := map[reqKey][]ledgerEntry{}
	for _, e := range l.entries {
		if e.e != nil && e.e.Request != "" {
			k := reqKey{e.e.Feed, e.e.Request}
			reqs[k] = append(reqs[k], e)
		}
	}
	held := func(e ledgerEntry) bool { return l.taken[e.id] || (skip != nil && skip(e.id)) }
	ids := map[uint64]bool{}
	for _, e := range l.entries {
		if len(ids) >= max {
			break
		}
		if ids[e.id] || held(e) {
			continue
		}
		if e.e == nil || e.e.Request == "" {
			ids[e.id] = true
			continue
		}
		unit := reqs[reqKey{e.e.Feed, e.e.Request}]
		if slices.ContainsFunc(unit, held) {
			continue // a replay holds part of it: all of it stays
		}
		for _, u := range unit {
			ids[u.id] = true
		}
	}
	return ids
}

// rewriteLocked replaces the file with entries: temp file, fsync, rename,
// fsync of the directory. An empty ledger removes the file.
func (l *Ledger) rewriteLocked(entries []ledgerEntry) error {
	dir := filepath.Dir(l.path)
	if len(entries) == 0 {
		if err := os.Remove(l.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove dead-letter ledger: %w", err)
		}
		l.size = 0
		return fileutil.SyncDir(dir)
	}
	var buf bytes.Buffer
	for _, e := range entries {
		buf.Write(e.raw)
		buf.WriteByte('\n')
	}
	if err := fileutil.WriteAtomic(l.path, buf.Bytes()); err != nil {
		return fmt.Errorf("rewrite dead-letter ledger: %w", err)
	}
	l.size = int64(buf.Len())
	return nil
}
