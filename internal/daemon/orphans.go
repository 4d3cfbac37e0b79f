package daemon

// Dead letters of processors the config no longer names (DESIGN §6 "Dead
// letters": `lossless` is false while any ledger is non-empty, across
// restarts). A reload that removes a processor, or a start without it,
// leaves its ledger dataDir/dlq/<processor>.jsonl on disk; it still counts.
// Decisions where the contract is silent:
//   - Each entry counts in `deadLettered` of the feed it names, so that feed
//     is lossless false until the entries are purged (or replayed by the
//     processor added back). An entry that names no running feed (its feed
//     was removed too) or does not decode counts for the config's first
//     feed: no ledger entry is ever out of every report.
//   - GET /admin/dlq/<processor> lists them; DELETE purges them, counted in
//     `released` of the feed each named (an entry in losses.jsonl, as any
//     purge); POST /admin/dlq/<processor>/replay answers 409: there is no
//     processor to replay into.
//   - A processor added back under the same name takes its ledger back
//     (its group reads the file, as at any start).

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"tailfeed/config"
	"tailfeed/internal/datadir"
	"tailfeed/processor"
	"tailfeed/status"
)

// orphanLedgers are the ledgers in dataDir/dlq of processors the running
// config does not name.
type orphanLedgers struct {
	dataDir string
	log     hclog.Logger

	mu     sync.Mutex
	byName map[string]*processor.Ledger
	feeds  map[string]bool // the running config's feeds
	first  string          // its first feed
	counts map[string]uint64
}

func newOrphanLedgers(dataDir string, log hclog.Logger) *orphanLedgers {
	return &orphanLedgers{dataDir: dataDir, log: log, byName: map[string]*processor.Ledger{}}
}

// refresh makes the set match cfg: ledgers of processors it names are its
// groups' (dropped here), those of the others are opened (once) and
// counted. Call it with the running config, at start and after a reload.
func (o *orphanLedgers) refresh(cfg *config.Config) {
	if o == nil {
		return
	}
	named := map[string]bool{}
	for _, pc := range cfg.Processors {
		named[pc.Name] = true
	}
	var names []string
	if ents, err := os.ReadDir(filepath.Join(o.dataDir, datadir.DLQ)); err == nil {
		for _, e := range ents {
			if n, ok := strings.CutSuffix(e.Name(), ".jsonl"); ok && n != "" && e.Type().IsRegular() && !named[n] {
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	o.mu.Lock()
	defer o.mu.Unlock()
	next := map[string]*processor.Ledger{}
	for _, n := range names {
		l := o.byName[n]
		if l == nil {
			var err error
			l, err = processor.OpenLedger(datadir.DeadLetters(o.dataDir, n), o.log.Named(n))
			if err != nil {
				o.log.Error("dead-letter ledger of a processor not in the config cannot be read; it is not counted", "processor", n, "error", err)
				continue
			}
			if l.Len() == 0 {
				continue
			}
			o.log.Warn("dead-letter ledger of a processor not in the config: its entries still count (deadLettered, lossless false) until purged",
				"processor", n, "entries", l.Len(), "list", "GET /admin/dlq/"+n, "purge", "DELETE /admin/dlq/"+n)
		}
		next[n] = l
	}
	o.byName = next
	o.feeds = map[string]bool{}
	o.first = ""
	for i, fc := range cfg.Feeds {
		o.feeds[fc.Name] = true
		if i == 0 {
			o.first = fc.Name
		}
	}
	o.recountLocked()
}

// attributeLocked maps a ledger's per-feed counts onto the running feeds.
func (o *orphanLedgers) attributeLocked(byFeed map[string]int) map[string]uint64 {
	out := map[string]uint64{}
	for f, n := range byFeed {
		if !o.feeds[f] {
			f = o.first
		}
		out[f] += uint64(n)
	}
	return out
}

func (o *orphanLedgers) recountLocked() {
	o.counts = map[string]uint64{}
	for _, l := range o.byName {
		for f, n := range o.attributeLocked(l.Feeds()) {
			o.counts[f] += n
		}
	}
}

// count is the entries that count for feed.
func (o *orphanLedgers) count(feed string) uint64 {
	if o == nil {
		return 0
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.counts[feed]
}

// get is the ledger of processor name when the config does not name it.
func (o *orphanLedgers) get(name string) *processor.Ledger {
	if o == nil {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.byName[name]
}

// purgeOrphan purges up to max entries of a removed processor's ledger and
// counts them in released of the feeds they counted for (losses.jsonl).
// It runs under reloadMu: no reload gives the ledger back to a group
// meanwhile.
func (d *Daemon) purgeOrphan(name string, max int) (int, error) {
	d.reloadMu.Lock()
	defer d.reloadMu.Unlock()
	o := d.orphans
	l := o.get(name)
	if l == nil || d.stopped {
		return 0, fmt.Errorf("the dead letters of %s are no longer a removed processor's (configured again, or stopping): try again", name)
	}
	// The purge's loss is in losses.jsonl (appended and fsynced) before the
	// entries leave the dead-letter ledger; when it cannot be, nothing is
	// purged (a kill -9 in between leaves the line recorded twice, never
	// nowhere).
	var counted []struct {
		f *Feed
		n uint64
	}
	n, err := l.PurgeCounted(max, nil, func(byFeed map[string]int) (func() error, error) {
		o.mu.Lock()
		gone := o.attributeLocked(byFeed)
		o.mu.Unlock()
		var out []LossEntry
		now := time.Now().UTC().Format(time.RFC3339Nano)
		for fn, g := range gone {
			f := d.feed(fn)
			if g == 0 || f == nil {
				continue
			}
			counted = append(counted, struct {
				f *Feed
				n uint64
			}{f, g})
			out = append(out, LossEntry{V: lossFormat, Feed: fn, Counter: "released", Amount: g,
				Epoch: status.Hex(f.src.Epoch()), Time: now,
				Detail: fmt.Sprintf("dead letters of removed processor %s purged: %d", name, g)})
		}
		d.losses.mu.Lock()
		defer d.losses.mu.Unlock()
		if err := d.losses.appendLocked(out); err != nil {
			counted = nil
			if werr := d.losses.withdrawLocked(out); werr != nil {
				d.log.Error("losses ledger: the entries of a purge refused could not be withdrawn", "processor", name, "error", werr)
			}
			return nil, fmt.Errorf("purge refused: the losses ledger cannot record it: %w", err)
		}
		// The dead-letter rewrite failed after all: nothing purged, the
		// entries withdrawn (a retried purge counts them once).
		return func() error {
			d.losses.mu.Lock()
			defer d.losses.mu.Unlock()
			if err := d.losses.withdrawLocked(out); err != nil {
				return err
			}
			counted = nil
			return nil
		}, nil
	})
	if n > 0 {
		for _, c := range counted {
			c.f.orphanReleased.Add(c.n)
		}
	}
	o.mu.Lock()
	if l.Len() == 0 {
		delete(o.byName, name) // gone from disk: an unknown processor from now on
	}
	o.recountLocked()
	o.mu.Unlock()
	return n, err
}

// orphanDLQ is a removed processor's ledger as status.DeadLetters.
type orphanDLQ struct {
	d    *Daemon
	name string
	l    *processor.Ledger
}

func (o orphanDLQ) Name() string                               { return o.name }
func (o orphanDLQ) List(max int) ([]processor.LedgerItem, int) { return o.l.List(max) }
func (o orphanDLQ) Len() int                                   { return o.l.Len() }
func (o orphanDLQ) Purge(max int) (int, error)                 { return o.d.purgeOrphan(o.name, max) }
func (o orphanDLQ) Replay(_ context.Context, _ int) (processor.ReplayResult, error) {
	return processor.ReplayResult{Remaining: o.l.Len()}, fmt.Errorf("%w: processor %s is not configured; there is nothing to replay its dead letters into (add it back under this name, or purge them: DELETE /admin/dlq/%s)",
		processor.ErrNotConfigured, o.name, o.name)
}

// feedsOf is the entries per feed of the ledger of processor name, a
// processor the running config does not name (nil: none, or it is named).
func (o *orphanLedgers) feedsOf(name string) map[string]int {
	if o == nil {
		return nil
	}
	o.mu.Lock()
	l := o.byName[name]
	o.mu.Unlock()
	if l == nil {
		return nil
	}
	return l.Feeds()
}
