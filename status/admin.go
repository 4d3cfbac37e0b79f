package status

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"

	"tailfeed/processor"
)

// The admin endpoints (DESIGN §5, §6, §7). All need the token when one is
// set.
//
//	POST   /admin/release/{feed}/{subscriber}   give a held subscriber's backlog up on purpose
//	GET    /admin/dlq/{processor}?max=N         list the oldest N dead letters (default 100)
//	POST   /admin/dlq/{processor}/replay?max=N  re-deliver the oldest N (default all)
//	DELETE /admin/dlq/{processor}?max=N         purge the oldest N (default all); counted in released
//	GET    /admin/losses/{feed}                 the feed's entries in dataDir/losses.jsonl
//	DELETE /admin/losses/{feed}                 acknowledge them (the loss counters start from 0)
//
// Release: 404 for an unknown feed or subscriber, 409 for a subscriber that
// is not held (neither fenced nor dead), 503 when it did not happen; no body
// is read. Dead letters: max is an integer 1..10000 (400 otherwise); an
// unknown processor is 404. A replay answers 200 {"processor","replayed",
// "remaining"} (lines); one cut short by a failure answers 503 with the
// same fields and "error"; entries it did not process stay in the ledger;
// one still running when the call gives up (ReplayWait) answers 503
// without "replayed" (it goes on; list the ledger). A replay into a pull
// subscriber answers at once 202 {"processor","queued","remaining"} (503
// with "queued" when the subscriber stopped): its clients take the
// entries. A purge removes whole webhook requests (max rounded up) and
// never the entries a replay holds; purged entries a pull subscriber holds
// are dropped from it (a later ACK is unknown).

const (
	maxList     = 10000
	defaultList = 100
	// ReleaseWait bounds how long a release waits for a fenced group to
	// finish the attempt it is in (a webhook's timeout, a slow write).
	ReleaseWait = 30 * time.Second
	// ReplayWait is how long a replay call waits for the group and the result.
	ReplayWait = 30 * time.Second
)

// Admin is what the admin endpoints ask of the daemon.
type Admin interface {
	// Subscriber finds a feed's subscriber: ok false for an unknown feed,
	// s nil for an unknown subscriber of a known one.
	Subscriber(feed, name string) (s Releasable, ok bool)
	// DeadLetters finds a processor's dead-letter ledger (nil: no such
	// processor, or one without a ledger).
	DeadLetters(processor string) DeadLetters
	// HasFeed reports whether the feed exists.
	HasFeed(feed string) bool
	// Losses lists the feed's entries in the losses ledger.
	Losses(feed string) ([]LossEntry, error)
	// AcknowledgeLosses removes them and makes the feed's loss counters
	// start from 0; it returns how many entries it removed.
	AcknowledgeLosses(feed string) (int, error)
}

// Releasable is a subscriber an operator may release.
type Releasable interface {
	// Release gives the held backlog up (processor.ErrNotHeld when it is
	// neither fenced nor dead) and returns the lines given up.
	Release(ctx context.Context) (uint64, error)
	ReleasedLines() uint64 // this run
	State() string         // as feed.status spells it
}

// DeadLetters is one processor's dead-letter ledger.
type DeadLetters interface {
	Name() string
	List(max int) ([]processor.LedgerItem, int)
	Len() int
	// Purge removes up to max entries and counts them as released.
	Purge(max int) (int, error)
	Replay(ctx context.Context, max int) (processor.ReplayResult, error)
}

// AdminRoutes are the admin endpoints over a; log gets the WARN of every
// loss an operator causes or acknowledges.
func AdminRoutes(a Admin, log hclog.Logger) map[string]Route {
	h := adminHandlers{a: a, log: log}
	return map[string]Route{
		"/admin/release/{feed}/{subscriber}": {Methods: []string{http.MethodPost}, Protected: true, Handler: h.release},
		"/admin/losses/{feed}":               {Methods: []string{http.MethodGet, http.MethodDelete}, Protected: true, Handler: h.losses},
		"/admin/dlq/{processor}":             {Methods: []string{http.MethodGet, http.MethodDelete}, Protected: true, Handler: h.dlq},
		"/admin/dlq/{processor}/replay":      {Methods: []string{http.MethodPost}, Protected: true, Handler: h.dlqReplay},
	}
}

type adminHandlers struct {
	a   Admin
	log hclog.Logger
}

// ReleaseResult is the body of a successful POST /admin/release.
type ReleaseResult struct {
	Feed       string `json:"feed"`
	Subscriber string `json:"subscriber"`
	Released   uint64 `json:"released"` // lines given up by this call
	Total      uint64 `json:"total"`    // lines given up for this subscriber this run
	State      string `json:"state"`
}

func (h adminHandlers) release(w http.ResponseWriter, r *http.Request) {
	fname, sname := r.PathValue("feed"), r.PathValue("subscriber")
	s, ok := h.a.Subscriber(fname, sname)
	if !ok {
		WriteError(w, http.StatusNotFound, "no such feed: "+fname)
		return
	}
	if s == nil {
		WriteError(w, http.StatusNotFound, "feed "+fname+" has no subscriber "+sname)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), ReleaseWait)
	defer cancel()
	n, err := s.Release(ctx)
	switch {
	case errors.Is(err, processor.ErrNotHeld):
		WriteError(w, http.StatusConflict, "subscriber "+sname+" of feed "+fname+" is not held (neither fenced nor dead): nothing to release")
		return
	case err != nil:
		WriteError(w, http.StatusServiceUnavailable, "release of "+sname+" did not happen: "+err.Error())
		return
	}
	st := s.State()
	h.log.Warn("backlog released on purpose", "feed", fname, "subscriber", sname, "lines", n)
	WriteJSON(w, http.StatusOK, ReleaseResult{Feed: fname, Subscriber: sname, Released: n,
		Total: s.ReleasedLines(), State: st})
}

// dlqTarget resolves {processor} and max; it writes the error and returns
// nil on failure.
func (h adminHandlers) dlqTarget(w http.ResponseWriter, r *http.Request, def int) (DeadLetters, int) {
	name := r.PathValue("processor")
	l := h.a.DeadLetters(name)
	if l == nil {
		WriteError(w, http.StatusNotFound, "no such processor: "+name)
		return nil, 0
	}
	max, err := parseMax(r, def)
	if err != nil {
		WriteError(w, http.StatusBadRequest, err.Error())
		return nil, 0
	}
	return l, max
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

// DLQResult is the body of a purge.
type DLQResult struct {
	Processor string `json:"processor"`
	Replayed  int    `json:"replayed,omitempty"`
	Purged    int    `json:"purged,omitempty"`
	Remaining int    `json:"remaining"`
	Error     string `json:"error,omitempty"`
}

func (h adminHandlers) dlq(w http.ResponseWriter, r *http.Request) {
	def := defaultList
	if r.Method == http.MethodDelete {
		def = math.MaxInt
	}
	l, max := h.dlqTarget(w, r, def)
	if l == nil {
		return
	}
	if r.Method == http.MethodGet {
		entries, total := l.List(max)
		WriteJSON(w, http.StatusOK, DLQList{Processor: l.Name(), Total: total, Entries: entries})
		return
	}
	n, err := l.Purge(max)
	if n > 0 {
		h.log.Warn("dead letters purged on purpose", "processor", l.Name(), "entries", n)
	}
	if err != nil {
		WriteJSON(w, http.StatusInternalServerError, DLQResult{Processor: l.Name(), Purged: n,
			Remaining: l.Len(), Error: err.Error()})
		return
	}
	WriteJSON(w, http.StatusOK, DLQResult{Processor: l.Name(), Purged: n, Remaining: l.Len()})
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

func (h adminHandlers) dlqReplay(w http.ResponseWriter, r *http.Request) {
	l, max := h.dlqTarget(w, r, math.MaxInt)
	if l == nil {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), ReplayWait)
	defer cancel()
	res, err := l.Replay(ctx, max)
	code, out := replayAnswer(l.Name(), res, err)
	WriteJSON(w, code, out)
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
	if errors.Is(err, processor.ErrNotConfigured) {
		return http.StatusConflict, out // a removed processor's ledger: list or purge it
	}
	return http.StatusServiceUnavailable, out
}

// LossEntry is one line of dataDir/losses.jsonl and of GET
// /admin/losses/{feed}.
type LossEntry struct {
	V       int    `json:"v"`       // format version (1)
	Feed    string `json:"feed"`    // feed name
	Counter string `json:"counter"` // dropped | refused | completionFailures | released | lostTails | lostBytes
	Amount  uint64 `json:"amount"`  // lines (files for lostTails, bytes for lostBytes)
	Epoch   string `json:"epoch"`   // the source's epoch when counted (16 hex digits)
	Time    string `json:"time"`    // RFC 3339 with nanoseconds, UTC
	Detail  string `json:"detail"`  // which subscriber, or the source's reason
}

// LossList is the body of GET /admin/losses/{feed}.
type LossList struct {
	Feed    string      `json:"feed"`
	Entries []LossEntry `json:"entries"`
}

// LossCleared is the body of DELETE /admin/losses/{feed}.
type LossCleared struct {
	Feed    string `json:"feed"`
	Cleared int    `json:"cleared"` // ledger entries removed
}

func (h adminHandlers) losses(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("feed")
	if !h.a.HasFeed(name) {
		WriteError(w, http.StatusNotFound, "no such feed: "+name)
		return
	}
	if r.Method == http.MethodDelete {
		n, err := h.a.AcknowledgeLosses(name)
		if err != nil {
			h.log.Error("losses ledger: clearing failed", "feed", name, "error", err)
			WriteError(w, http.StatusInternalServerError, "clearing the losses of feed "+name+" failed: "+err.Error())
			return
		}
		h.log.Warn("losses acknowledged: ledger entries removed and the feed's loss counters start from 0", "feed", name, "entries", n)
		WriteJSON(w, http.StatusOK, LossCleared{Feed: name, Cleared: n})
		return
	}
	entries, err := h.a.Losses(name)
	if err != nil {
		WriteError(w, http.StatusInternalServerError, err.Error())
		return
	}
	out := LossList{Feed: name, Entries: []LossEntry{}}
	out.Entries = append(out.Entries, entries...)
	WriteJSON(w, http.StatusOK, out)
}
