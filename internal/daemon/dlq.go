package daemon

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"

	"tailfeed/config"
	"tailfeed/processor"
	"tailfeed/status"
)

// Effects that happen once: the dead-letter ledgers and their admin API,
// the exactlyOnce side records, the count processor and GET /v1/state.
//
//	GET    /admin/dlq/{processor}?max=N         list the oldest N entries (default 100)
//	POST   /admin/dlq/{processor}/replay?max=N  re-deliver the oldest N (default all)
//	DELETE /admin/dlq/{processor}?max=N         purge the oldest N (default all); counted in released
//	GET    /v1/state/{processor}                a count processor's counts
//
// All need the token when one is set. max is an integer 1..10000 (400
// otherwise); an unknown processor is 404. A replay answers 200
// {"processor","replayed","remaining"} (lines); one cut short by a failure
// answers 503 with the same fields and "error"; entries it did not process
// stay in the ledger; one still running when the call gives up (replayWait)
// answers 503 without "replayed" (it goes on; list the ledger). A replay
// into a pull subscriber answers at once 202 {"processor","queued",
// "remaining"} (503 with "queued" when the subscriber stopped): its clients
// take the entries. A purge removes whole webhook requests (max rounded up)
// and never the entries a replay holds; purged entries a pull subscriber
// holds are dropped from it (a later ACK is unknown).

const (
	maxList     = 10000
	defaultList = 100
	replayWait  = 30 * time.Second // how long a replay call waits for the group and the result
)

// openLedger opens dataDir/dlq/<processor>.jsonl. Every processor has one,
// whatever its onFailure: entries left by an earlier config still count
// (lossless false) and can be replayed or purged.
func (d *Daemon) openLedger(pc *config.Processor, log hclog.Logger) (*processor.Ledger, error) {
	l, err := processor.OpenLedger(filepath.Join(d.cfg.DataDir, "dlq", pc.Name+".jsonl"), log.Named(pc.Name))
	if err != nil {
		return nil, fmt.Errorf("processor %s: %w", pc.Name, err)
	}
	return l, nil
}

// effectRoutes are the admin DLQ and state endpoints.
func (d *Daemon) effectRoutes() map[string]status.Route {
	return map[string]status.Route{
		"/admin/dlq/{processor}": {Methods: []string{http.MethodGet, http.MethodDelete}, Protected: true,
			Handler: d.dlq},
		"/admin/dlq/{processor}/replay": {Methods: []string{http.MethodPost}, Protected: true,
			Handler: d.dlqReplay},
		"/v1/state/{processor}": {Methods: []string{http.MethodGet}, Protected: true,
			Handler: d.state},
	}
}

// processorGroup finds the group of a processor by name.
func (d *Daemon) processorGroup(name string) *processor.Group {
	for _, f := range d.feeds {
		if g := f.group(name); g != nil {
			return g
		}
	}
	return nil
}

// dlqTarget resolves {processor} and max; it writes the error and returns
// nil on failure.
func (d *Daemon) dlqTarget(w http.ResponseWriter, r *http.Request, def int) (*processor.Group, *processor.Ledger, int) {
	name := r.PathValue("processor")
	g := d.processorGroup(name)
	if g == nil || g.Ledger() == nil {
		status.WriteError(w, http.StatusNotFound, "no such processor: "+name)
		return nil, nil, 0
	}
	max, err := parseMax(r, def)
	if err != nil {
		status.WriteError(w, http.StatusBadRequest, err.Error())
		return nil, nil, 0
	}
	return g, g.Ledger(), max
}

// parseMax reads ?max= (1..10000); def when absent.
func parseMax(r *http.Request, def int) (int, error) {
	if !r.URL.Query().Has("max") {
		return def, nil
	}
	s := r.URL.Query().Get("max")
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > maxList {
		return 0, fmt.Errorf("max must be an integer from 1 to %d, got %q", maxList, s)
	}
	return n, nil
}

// DLQList is the body of GET /admin/dlq/{processor}.
type DLQList struct {
	Processor string                 `json:"processor"`
	Total     int                    `json:"total"`
	Entries   []processor.LedgerItem `json:"entries"`
}

// DLQResult is the body of a replay or purge.
type DLQResult struct {
	Processor string `json:"processor"`
	Replayed  int    `json:"replayed,omitempty"`
	Purged    int    `json:"purged,omitempty"`
	Remaining int    `json:"remaining"`
	Error     string `json:"error,omitempty"`
}

func (d *Daemon) dlq(w http.ResponseWriter, r *http.Request) {
	def := defaultList
	if r.Method == http.MethodDelete {
		def = math.MaxInt
	}
	g, l, max := d.dlqTarget(w, r, def)
	if g == nil {
		return
	}
	if r.Method == http.MethodGet {
		entries, total := l.List(max)
		status.WriteJSON(w, http.StatusOK, DLQList{Processor: g.Name(), Total: total, Entries: entries})
		return
	}
	n, err := g.PurgeDeadLetters(max)
	if n > 0 {
		g.Queue().AddReleased(uint64(n))
		d.log.Warn("dead letters purged on purpose", "processor", g.Name(), "entries", n)
	}
	if err != nil {
		status.WriteJSON(w, http.StatusInternalServerError, DLQResult{Processor: g.Name(), Purged: n,
			Remaining: l.Len(), Error: err.Error()})
		return
	}
	status.WriteJSON(w, http.StatusOK, DLQResult{Processor: g.Name(), Purged: n, Remaining: l.Len()})
}

// DLQReplay is the body of a replay: lines replayed (or, into a pull
// subscriber, queued for its clients) and lines left in the ledger.
type DLQReplay struct {
	Processor string `json:"processor"`
	Replayed  *int   `json:"replayed,omitempty"`
	Queued    *int   `json:"queued,omitempty"`
	Remaining int    `json:"remaining"`
	Error     string `json:"error,omitempty"`
}

func (d *Daemon) dlqReplay(w http.ResponseWriter, r *http.Request) {
	g, _, max := d.dlqTarget(w, r, math.MaxInt)
	if g == nil {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), replayWait)
	defer cancel()
	res, err := g.Replay(ctx, max)
	code, out := replayAnswer(g.Name(), res, err)
	status.WriteJSON(w, code, out)
}

// replayAnswer is the status and body of a replay: 200 {replayed,
// remaining}; a pull subscriber 202 {queued, remaining}; cut short 503 with
// "error" (a pull subscriber's still says queued, never replayed; a replay
// still running when the call gave up says neither).
func replayAnswer(name string, res processor.ReplayResult, err error) (int, DLQReplay) {
	out := DLQReplay{Processor: name, Replayed: &res.Replayed, Remaining: res.Remaining}
	if res.Queuing {
		out.Replayed, out.Queued = nil, &res.Queued
		if err == nil {
			return http.StatusAccepted, out
		}
	}
	if err == nil {
		return http.StatusOK, out
	}
	if errors.Is(err, processor.ErrReplayRunning) {
		out.Replayed = nil // not known yet
	}
	out.Error = err.Error()
	if errors.Is(err, processor.ErrNoLedger) {
		return http.StatusNotFound, out
	}
	return http.StatusServiceUnavailable, out
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
