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

// stampTargets writes the stamp of every processor of cfg whose stamp on
// disk differs, before any of them writes under its target.
func (d *Daemon) stampTargets(cfg *config.Config) error {
	dir := filepath.Join(cfg.DataDir, datadir.State, datadir.TargetDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, pc := range cfg.Processors {
		want := targetStamp(pc)
		if got, err := readStamp(cfg.DataDir, pc.Name); err == nil && got == want {
			continue
		}
		if err := fileutil.WriteAtomic(datadir.Target(cfg.DataDir, pc.Name), []byte(want+"\n")); err != nil {
			return err
		}
	}
	return nil
}

// startAside moves aside, at a start, the state of every processor whose
// stamp names another target, as a reload does for a changed target; its
// dead letters are given up (losses.jsonl first, counted in released of
// its feed: giveUpAside). It returns what was given up.
func (d *Daemon) startAside(cfg *config.Config) ([]asideLoss, error) {
	var gaveUp []asideLoss
	for _, pc := range cfg.Processors {
		got, err := readStamp(cfg.DataDir, pc.Name)
		if err != nil {
			return gaveUp, err
		}
		if got == "" || got == targetStamp(pc) {
			continue
		}
		var ferr error
		var gone *asideLoss
		d.moveStateAside(pc.Name, func(dir string) error {
			l, err := processor.OpenLedger(datadir.DeadLetters(cfg.DataDir, pc.Name), d.log.Named(pc.Name))
			if err != nil {
				ferr = err
				return err
			}
			n := l.Len()
			if n == 0 {
				return nil
			}
			g := &asideLoss{feed: pc.Feed, proc: pc.Name, dir: dir, lines: uint64(n),
				detail: fmt.Sprintf("dead letters of processor %s moved aside to %s (its target changed while tailfeed was stopped): %d", pc.Name, dir, n)}
			e, err := d.appendAsideLoss(g)
			if err != nil {
				ferr = err
				return err
			}
			g.entry, gone = e, g
			return nil
		})
		if ferr != nil {
			return gaveUp, fmt.Errorf("processor %s: its target changed while tailfeed was stopped, and its dead letters cannot be given up: %w", pc.Name, ferr)
		}
		if gone != nil {
			gaveUp = append(gaveUp, *gone)
		}
	}
	return gaveUp, nil
}
