package daemon

import (
	"fmt"
	"net/http"

	"github.com/hashicorp/go-hclog"

	"tailfeed/config"
	"tailfeed/internal/datadir"
	"tailfeed/processor"
	"tailfeed/status"
)

// Effects that happen once: the dead-letter ledgers, the exactlyOnce side
// records, the count processor and GET /v1/state/{processor} (a count
// processor's counts; token when one is set; 404 for an unknown processor
// or one that keeps no state). The dead-letter admin API is status's
// (status.AdminRoutes).

// openLedger opens dataDir/dlq/<processor>.jsonl. Every processor has one,
// whatever its onFailure: entries left by an earlier config still count
// (lossless false) and can be replayed or purged.
func (d *Daemon) openLedger(pc *config.Processor, log hclog.Logger) (*processor.Ledger, error) {
	l, err := processor.OpenLedger(datadir.DeadLetters(d.cfg.DataDir, pc.Name), log.Named(pc.Name))
	if err != nil {
		return nil, fmt.Errorf("processor %s: %w", pc.Name, err)
	}
	return l, nil
}

// effectRoutes is GET /v1/state/{processor}.
func (d *Daemon) effectRoutes() map[string]status.Route {
	return map[string]status.Route{
		"/v1/state/{processor}": {Methods: []string{http.MethodGet}, Protected: true,
			Handler: d.state},
	}
}

// stater is a processor that exposes its state (count).
type stater interface{ State() any }

func (d *Daemon) state(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("processor")
	g := d.processorGroup(name)
	if g == nil {
		status.WriteError(w, http.StatusNotFound, "no such processor: "+name)
		return
	}
	s, ok := g.Sink().(stater)
	if !ok {
		status.WriteError(w, http.StatusNotFound, "processor "+name+" keeps no state")
		return
	}
	status.WriteJSON(w, http.StatusOK, s.State())
}
