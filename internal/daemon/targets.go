package daemon

// Targets kept across runs (DESIGN §12 "Reload": a processor's durable
// state — exactlyOnce record, webhook record, count state, dead letters —
// "is kept only when its target is unchanged … otherwise that state is
// moved aside to state/<processor>.<time>.old with a WARN and the processor
// starts as new"). A reload compares the old config with the new one; a
// start has no old config, so each processor's target is stamped in
// dataDir/state/targets/<processor>.target (a hash of its type and its
// sink's target: a DSN may carry a password) and a start compares with it.
// Without the stamp, an exactlyOnce sink whose path changed while tailfeed
// was stopped applied its old record to the new file and cut bytes it
// never wrote (audit 10A). A processor without a stamp (state from an
// earlier tailfeed, or a new processor) keeps what it finds, as before.

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"tailfeed/config"
	"tailfeed/internal/datadir"
	"tailfeed/internal/fileutil"
	"tailfeed/processor"
	"tailfeed/sink"
)

// targetStamp is the hash a processor's state is stamped with.
func targetStamp(pc *config.Processor) string {
	target := ""
	if t, ok := sink.Lookup(pc.Type); ok && t.Target != nil {
		target = t.Target(pc)
	}
	h := sha256.Sum256([]byte(pc.Type + "\x00" + target))
	return hex.EncodeToString(h[:])
}

// readStamp is the stamp on disk ("" when there is none).
func readStamp(dataDir, name string) (string, error) {
	b, err := os.ReadFile(datadir.Target(dataDir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return strings.TrimSpace(string(b)), err
}

// restamp writes the stamp of every processor of cfg whose stamp on disk
// differs, before any of them writes under its target, and returns how to
// put the earlier stamps back (a reload rolled back, a start that fails).
func (d *Daemon) restamp(cfg *config.Config) (func(), error) {
	dir := filepath.Join(cfg.DataDir, datadir.State, datadir.TargetDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return func() {}, err
	}
	type was struct{ name, stamp string }
	var undo []was
	back := func() {
		for i := len(undo) - 1; i >= 0; i-- {
			p := datadir.Target(cfg.DataDir, undo[i].name)
			if undo[i].stamp == "" {
				os.Remove(p)
			} else if err := fileutil.WriteAtomic(p, []byte(undo[i].stamp+"\n")); err != nil {
				d.log.Error("a processor's earlier target stamp cannot be put back", "processor", undo[i].name, "error", err)
			}
		}
	}
	for _, pc := range cfg.Processors {
		want := targetStamp(pc)
		got, err := readStamp(cfg.DataDir, pc.Name)
		if err == nil && got == want {
			continue
		}
		if err := fileutil.WriteAtomic(datadir.Target(cfg.DataDir, pc.Name), []byte(want+"\n")); err != nil {
			back()
			return func() {}, fmt.Errorf("processor %s: its target cannot be stamped: %w", pc.Name, err)
		}
		undo = append(undo, was{pc.Name, got})
	}
	return back, nil
}

// moveAsideGivingUp moves processor name's state aside (moveStateAside),
// its dead letters first recorded as given up in losses.jsonl: byFeed is
// its ledger's entries per feed they name, each counted for that feed (an
// entry naming no feed cfg runs, or not decoding, for own) — as a purge
// counts them (review 28a D). epoch names a feed's epoch for the entry;
// detail ("": the reload's) says why. It returns how to move the state
// back (nil: nothing moved), what was given up, and the error of a losses
// ledger that did not take it (nothing moved then, nothing recorded).
func (d *Daemon) moveAsideGivingUp(cfg *config.Config, name, own string, byFeed map[string]int, epoch func(string) uint64, detail string) (func(), []asideLoss, error) {
	running := map[string]bool{}
	for _, fc := range cfg.Feeds {
		running[fc.Name] = true
	}
	counts := map[string]uint64{}
	for f, n := range byFeed {
		if !running[f] {
			f = own
		}
		counts[f] += uint64(n)
	}
	feeds := make([]string, 0, len(counts))
	for f := range counts {
		feeds = append(feeds, f)
	}
	sort.Strings(feeds)
	var gone []asideLoss
	var ferr error
	u := d.moveStateAside(name, func(dir string) error {
		for _, f := range feeds {
			g := asideLoss{feed: f, proc: name, dir: dir, lines: counts[f]}
			if epoch != nil {
				g.epoch = epoch(f)
			}
			if detail != "" {
				g.detail = fmt.Sprintf("dead letters of processor %s moved aside to %s (%s): %d", name, dir, detail, counts[f])
			}
			e, err := d.appendAsideLoss(&g)
			if err != nil {
				d.withdrawAside(gone)
				gone, ferr = nil, err
				return err
			}
			g.entry = e
			gone = append(gone, g)
		}
		return nil
	})
	return u, gone, ferr
}

// startAside moves aside, at a start, the state of every processor whose
// stamp names another target, as a reload does for a changed target. It
// returns how to move it all back and what was given up.
func (d *Daemon) startAside(cfg *config.Config) (func(), []asideLoss, error) {
	var undos []func()
	var gaveUp []asideLoss
	back := func() {
		for i := len(undos) - 1; i >= 0; i-- {
			undos[i]()
		}
		d.withdrawAside(gaveUp)
	}
	for _, pc := range cfg.Processors {
		got, err := readStamp(cfg.DataDir, pc.Name)
		if err != nil {
			back()
			return func() {}, nil, err
		}
		if got == "" || got == targetStamp(pc) {
			continue
		}
		l, err := processor.OpenLedger(datadir.DeadLetters(cfg.DataDir, pc.Name), d.log.Named(pc.Name))
		if err != nil {
			back()
			return func() {}, nil, err
		}
		u, gone, err := d.moveAsideGivingUp(cfg, pc.Name, pc.Feed, l.Feeds(), nil, "its target changed while tailfeed was stopped")
		if err != nil {
			back()
			return func() {}, nil, fmt.Errorf("processor %s: its target changed while tailfeed was stopped, and its dead letters cannot be given up: %w", pc.Name, err)
		}
		if u != nil {
			undos = append(undos, u)
		}
		gaveUp = append(gaveUp, gone...)
	}
	return back, gaveUp, nil
}

// ledgerFeeds is the entries per feed of processor name's ledger in f.
func ledgerFeeds(f *Feed, name string) map[string]int {
	if f == nil {
		return nil
	}
	for _, g := range f.groups {
		if g.Name() == name {
			if l := g.Ledger(); l != nil {
				return l.Feeds()
			}
		}
	}
	return nil
}
