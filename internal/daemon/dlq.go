package daemon

import (
	"fmt"

	"github.com/hashicorp/go-hclog"

	"tailfeed/config"
	"tailfeed/internal/datadir"
	"tailfeed/processor"
)

// The dead-letter ledgers and a processor's state. The handlers are
// status's (status.AdminRoutes, status.StateRoutes).

// openLedger opens dataDir/dlq/<processor>.jsonl. Every processor has one,
// whatever its onFailure: entries left by an earlier config still count
// (lossless false) and can be replayed or purged.
func (d *Daemon) openLedger(cfg *config.Config, pc *config.Processor, log hclog.Logger) (*processor.Ledger, error) {
	l, err := processor.OpenLedger(datadir.DeadLetters(cfg.DataDir, pc.Name), log.Named(pc.Name))
	if err != nil {
		return nil, fmt.Errorf("processor %s: %w", pc.Name, err)
	}
	return l, nil
}

// stater is a processor that exposes its state (count).
type stater interface{ State() any }

// stateOf is status.StateOf over the daemon's groups: GET
// /v1/state/{processor} answers a count processor's counts.
func (d *Daemon) stateOf(name string) (v any, found, keeps bool) {
	g := d.processorGroup(name)
	if g == nil {
		return nil, false, false
	}
	s, ok := g.Sink().(stater)
	if !ok {
		return nil, true, false
	}
	return s.State(), true, true
}
