package count

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"tailfeed/feed"
	"tailfeed/internal/fileutil"
	"tailfeed/processor"
)

// Count counts lines per value of the named group `key` of its match
// (whole lines without one); a line match does not select is finished
// uncounted. It takes a checkpoint hold: the ack point waits for the state
// file's save, at most Interval after the first unsaved change, and a
// re-delivered line the saved state covers is skipped. See the package doc.
type Count struct {
	cfg CountConfig
	key int // index of the `key` group; -1: the whole line

	// Only accessed from the group goroutine (ProcessBatch, Flush, Close).
	firstDirty time.Time
	dirtyMark  uint64
	keyBuf     strings.Builder

	mu     sync.Mutex // guards state against State() from the HTTP server
	counts map[string]uint64
	feeds  map[string]CountApplied
	epochs map[string]map[string]int64 // glob feeds: epoch → position (epochs.go)
	marks  []processor.Mark            // cfg.Feed's marks in the state loaded at open (DoneThrough)
}

// CountConfig configures a count processor.
type CountConfig struct {
	Name       string
	Path       string               // the state file, dataDir/state/count/<processor>.json
	Match      *regexp.Regexp       // nil: count whole lines
	Interval   time.Duration        // longest a change waits for its save
	Checkpoint processor.Checkpoint // the group
	// Glob names the feeds whose paths are globs: their applied positions
	// are kept per epoch (epochs.go).
	Glob map[string]bool
	// Feed is the feed it reads: DoneThrough reports that feed's marks.
	Feed string
}

// CountApplied is the last line a count applied for one feed.
type CountApplied struct {
	Epoch    string `json:"epoch"` // 16 lowercase hex digits
	Position int64  `json:"position"`
}

// StateFormat is the format version of the state files this tailfeed
// writes and the newest it reads.
const StateFormat = 1

// ErrStateVersion means a state file is of a format newer than StateFormat.
var ErrStateVersion = errors.New("count: state file format newer than this tailfeed reads")

// CountState is the state file and the body of GET /v1/state/{processor}.
// V is the format version: a file without it (written before it existed)
// is version 1; a newer one is refused (ErrStateVersion).
type CountState struct {
	V         int                     `json:"v"`
	Processor string                  `json:"processor"`
	Type      string                  `json:"type"`
	Counts    map[string]uint64       `json:"counts"`
	Feeds     map[string]CountApplied `json:"feeds"`
	// Epochs: per glob feed, the position after the last applied line of
	// each epoch (16 hex digits).
	Epochs map[string]map[string]int64 `json:"epochs,omitempty"`
}

// OpenCount loads the saved state (none: all counts zero) and takes the
// checkpoint hold.
func OpenCount(cfg CountConfig) (*Count, error) {
	if cfg.Interval <= 0 {
		cfg.Interval = 100 * time.Millisecond
	}
	c := &Count{cfg: cfg, key: -1, counts: map[string]uint64{}, feeds: map[string]CountApplied{}, epochs: map[string]map[string]int64{}}
	if cfg.Match != nil {
		c.key = cfg.Match.SubexpIndex("key")
	}
	os.Remove(cfg.Path + ".tmp") // a save a crash interrupted; the state file is whole
	data, err := os.ReadFile(cfg.Path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("read count state: %w", err)
	default:
		var st CountState
		if err := json.Unmarshal(data, &st); err != nil {
			return nil, fmt.Errorf("count state %s does not decode: %w", cfg.Path, err)
		}
		if st.V > StateFormat {
			return nil, fmt.Errorf("%w: %s: version %d, this tailfeed reads up to %d",
				ErrStateVersion, cfg.Path, st.V, StateFormat)
		}
		for k, v := range st.Counts {
			c.counts[k] = v
		}
		for f, a := range st.Feeds {
			if _, err := strconv.ParseUint(a.Epoch, 16, 64); err != nil {
				return nil, fmt.Errorf("count state %s: feed %s: bad epoch %q", cfg.Path, f, a.Epoch)
			}
			c.feeds[f] = a
		}
		if err := c.loadEpochs(cfg.Path, st.Epochs); err != nil {
			return nil, err
		}
	}
	c.seedEpochs()
	c.marks = c.feedMarks(cfg.Feed)
	cfg.Checkpoint.Hold()
	return c, nil
}

// feedMarks is the state's done-through marks for feed (DESIGN §11): its
// last applied line, and for a glob feed every epoch's.
func (c *Count) feedMarks(feed string) []processor.Mark {
	var out []processor.Mark
	seen := map[uint64]bool{}
	if a, ok := c.feeds[feed]; ok {
		if e, err := strconv.ParseUint(a.Epoch, 16, 64); err == nil && e != 0 {
			out = append(out, processor.Mark{Epoch: e, Position: a.Position})
			seen[e] = true
		}
	}
	for es, p := range c.epochs[feed] {
		if e, err := strconv.ParseUint(es, 16, 64); err == nil && e != 0 && !seen[e] {
			out = append(out, processor.Mark{Epoch: e, Position: p})
		}
	}
	return out
}

// DoneThrough implements processor.DoneThrougher: the marks of the state
// file as loaded at open, before any delivery of this run.
func (c *Count) DoneThrough(context.Context) ([]processor.Mark, error) {
	return slices.Clone(c.marks), nil
}

// ProcessBatch counts b's lines not applied yet. It never fails.
func (c *Count) ProcessBatch(_ context.Context, b *feed.Batch) (int, error) {
	var epoch uint64
	var pos int64
	c.mu.Lock()
	defer c.mu.Unlock()
	if a, ok := c.feeds[b.Feed]; ok {
		epoch, _ = strconv.ParseUint(a.Epoch, 16, 64)
		pos = a.Position
	}
	glob := c.cfg.Glob[b.Feed]
	if e, p, ok := c.appliedFor(b); ok || glob {
		// b's own epoch's entry: a single-file feed's older generation
		// read again for another sink's catch-up is skipped by its own
		// entry, not counted again against the newest (audit 8e); none
		// (a state written before single-file feeds kept them): the
		// feed's last applied line.
		epoch, pos = e, p
	}
	changed := false
	for i, l := range b.Lines {
		if b.AlreadyApplied(i, epoch, pos) {
			continue
		}
		if k, ok := c.keyOf(l); ok {
			c.counts[k]++
		}
		changed = true
	}
	// The applied position advances over the whole batch, lines the group
	// finished without the count included (b.Done(): filtered,
	// dead-lettered, released), so that a restart's catch-up does not take
	// the state for behind (DESIGN §11); never backwards, and never for a
	// replayed dead letter (not positioned).
	if b.Positioned && b.Done() > 0 && (b.Epoch != epoch || b.Done() > pos) {
		c.feeds[b.Feed] = CountApplied{Epoch: fmt.Sprintf("%016x", b.Epoch), Position: b.Done()}
		c.noteEpoch(b)
		changed = true
	}
	mark := c.cfg.Checkpoint.Mark()
	switch {
	case changed && c.firstDirty.IsZero():
		c.firstDirty = time.Now()
		c.dirtyMark = mark
	case !c.firstDirty.IsZero():
		c.dirtyMark = mark
	default:
		// Nothing new (filtered, or applied before a restart): the saved
		// state covers these lines already.
		c.cfg.Checkpoint.DurableThrough(mark)
	}
	return len(b.Lines), nil
}

// keyOf returns the key a line counts under, false when it is not counted.
func (c *Count) keyOf(l []byte) (string, bool) {
	if c.cfg.Match == nil {
		return textKey(&c.keyBuf, l), true
	}
	if c.key < 0 {
		if !c.cfg.Match.Match(l) {
			return "", false
		}
		return textKey(&c.keyBuf, l), true
	}
	m := c.cfg.Match.FindSubmatchIndex(l)
	if m == nil {
		return "", false
	}
	if m[2*c.key] < 0 {
		return "", true // the group did not take part: the empty key
	}
	return textKey(&c.keyBuf, l[m[2*c.key]:m[2*c.key+1]]), true
}

// textKey is b as text, one U+FFFD per invalid UTF-8 byte (as encoding/json
// writes it).
func textKey(sb *strings.Builder, b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	sb.Reset()
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			sb.WriteRune(utf8.RuneError)
		} else {
			sb.Write(b[:n])
		}
		b = b[n:]
	}
	return sb.String()
}

// FlushDue implements Flusher.
func (c *Count) FlushDue() (time.Time, bool) {
	if c.firstDirty.IsZero() {
		return time.Time{}, false
	}
	return c.firstDirty.Add(c.cfg.Interval), true
}

// Flush saves the state atomically and moves the durable mark.
func (c *Count) Flush(context.Context) error {
	if c.firstDirty.IsZero() {
		return nil
	}
	data, err := json.Marshal(c.State())
	if err != nil {
		return err
	}
	if err := fileutil.WriteAtomic(c.cfg.Path, append(data, '\n')); err != nil {
		return fmt.Errorf("save count state %s: %w", c.cfg.Path, err)
	}
	c.firstDirty = time.Time{}
	c.cfg.Checkpoint.DurableThrough(c.dirtyMark)
	return nil
}

// State is a copy of the counts and the applied positions.
func (c *Count) State() any {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := CountState{V: StateFormat, Processor: c.cfg.Name, Type: "count",
		Counts: make(map[string]uint64, len(c.counts)), Feeds: make(map[string]CountApplied, len(c.feeds))}
	for k, v := range c.counts {
		st.Counts[k] = v
	}
	for f, a := range c.feeds {
		st.Feeds[f] = a
	}
	for f, m := range c.epochs {
		if st.Epochs == nil {
			st.Epochs = map[string]map[string]int64{}
		}
		cp := make(map[string]int64, len(m))
		for e, p := range m {
			cp[e] = p
		}
		st.Epochs[f] = cp
	}
	return st
}

// Close saves what is unsaved.
func (c *Count) Close() error { return c.Flush(context.Background()) }
