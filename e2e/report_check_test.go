package e2e

// The feed.status of DESIGN §7 checked field by field and rule by rule, in
// every report a sampler reads while a test runs.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

// fieldKinds is every field of a feed in feed.status and its JSON kind.
var feedKinds = map[string]string{
	"feed": "string", "path": "string", "state": "state", "bounded": "bool", "sequence": "uint",
	"detail": "string|null", "drained": "bool", "settled": "bool", "lossless": "bool", "policy": "policy",
	"dropped": "uint", "refused": "uint", "downgraded": "uint", "completionFailures": "uint",
	"released": "uint", "deadLettered": "uint", "oversized": "uint", "unterminated": "uint",
	"lostTails": "uint", "lostBytes": "uint", "paused": "bool", "pauses": "uint", "acknowledged": "uint",
	"pendingAcks": "uint", "consumers": "uint", "stalled": "string|null", "epoch": "epoch",
	"pointer": "pointer", "subscribers": "subscribers",
}

var pointerKinds = map[string]string{"offset": "uint", "epoch": "hex", "commits": "uint", "commitFailures": "uint"}

var subKinds = map[string]string{"queue": "string", "position": "uint", "dispatched": "uint", "drained": "bool", "state": "substate"}

var feedStates = map[string]bool{"STARTING": true, "WAITING_FOR_FILE": true, "BEHIND": true, "CAUGHT_UP": true, "END_OF_STREAM": true, "FAILED": true}

// checkKind checks v against kind and returns a problem or "".
func checkKind(kind string, v any, present bool) string {
	if !present {
		return "missing"
	}
	switch kind {
	case "string":
		if _, ok := v.(string); !ok {
			return fmt.Sprintf("%v is not a string", v)
		}
	case "string|null":
		if _, ok := v.(string); !ok && v != nil {
			return fmt.Sprintf("%v is neither a string nor null", v)
		}
	case "bool":
		if _, ok := v.(bool); !ok {
			return fmt.Sprintf("%v is not a boolean", v)
		}
	case "uint":
		n, ok := v.(float64)
		if !ok || n < 0 || n != float64(int64(n)) {
			return fmt.Sprintf("%v is not a non-negative integer", v)
		}
	case "state":
		if s, _ := v.(string); !feedStates[s] {
			return fmt.Sprintf("%v is not one of the six states", v)
		}
	case "policy":
		if s, _ := v.(string); s != "PAUSE" && s != "DROP_AFTER_SPIN" && s != "BLOCK_WITH_DEADLINE" {
			return fmt.Sprintf("%v is not a policy", v)
		}
	case "substate":
		if s, _ := v.(string); s == "" {
			return fmt.Sprintf("%v is not a state", v)
		}
	case "hex":
		if s, _ := v.(string); !hex16.MatchString(s) {
			return fmt.Sprintf("%v is not 16 lowercase hex digits", v)
		}
	case "epoch":
		if v == nil {
			return ""
		}
		if s, _ := v.(string); s != "" && !hex16.MatchString(s) {
			return fmt.Sprintf("%v is not 16 lowercase hex digits", v)
		}
	case "pointer":
		if v == nil {
			return ""
		}
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Sprintf("%v is neither an object nor null", v)
		}
		for k, kk := range pointerKinds {
			x, ok := m[k]
			if p := checkKind(kk, x, ok); p != "" {
				return "." + k + ": " + p
			}
		}
	case "subscribers":
		subs, ok := v.([]any)
		if !ok {
			return fmt.Sprintf("%v is not an array", v)
		}
		for i, s := range subs {
			m, ok := s.(map[string]any)
			if !ok {
				return fmt.Sprintf("[%d] is not an object", i)
			}
			for k, kk := range subKinds {
				x, ok := m[k]
				if p := checkKind(kk, x, ok); p != "" {
					return fmt.Sprintf("[%d].%s: %s", i, k, p)
				}
			}
		}
	}
	return ""
}

// checkReport checks one feed.status body against §7: every field with
// its type, and the rules that hold within one report. bestEffort names
// subscribers that do not hold the pointer.
func checkReport(raw []byte, bestEffort map[string]bool) []string {
	var probs []string
	var top map[string]any
	if err := json.Unmarshal(raw, &top); err != nil {
		return []string{"not JSON: " + err.Error()}
	}
	for k, kind := range map[string]string{"settled": "bool", "lossless": "bool", "version": "uint"} {
		x, ok := top[k]
		if p := checkKind(kind, x, ok); p != "" {
			probs = append(probs, k+": "+p)
		}
	}
	feeds, ok := top["feeds"].([]any)
	if !ok {
		return append(probs, "feeds is not an array")
	}
	for i, f := range feeds {
		m, ok := f.(map[string]any)
		if !ok {
			probs = append(probs, fmt.Sprintf("feeds[%d] is not an object", i))
			continue
		}
		for k, kind := range feedKinds {
			x, ok := m[k]
			if p := checkKind(kind, x, ok); p != "" {
				probs = append(probs, fmt.Sprintf("feeds[%d].%s: %s", i, k, p))
			}
		}
	}
	if len(probs) > 0 {
		return probs
	}
	var r report
	if err := json.Unmarshal(raw, &r); err != nil {
		return []string{err.Error()}
	}
	allSettled, allLossless := true, true
	for _, f := range r.Feeds {
		allSettled = allSettled && f.Settled
		allLossless = allLossless && f.Lossless
		bad := func(format string, args ...any) {
			probs = append(probs, fmt.Sprintf("feed %s: ", f.Feed)+fmt.Sprintf(format, args...))
		}
		// Counters of this run force lossless false; lossless false with
		// zero counters is a loss of an earlier run still in the losses
		// ledger (DESIGN §7 "Losses outlive the run").
		lossy := f.Dropped+f.Refused+f.CompletionFailures+f.Released+f.LostTails+f.DeadLettered > 0
		if f.Lossless && lossy {
			bad("lossless %v with dropped %d refused %d completionFailures %d released %d lostTails %d deadLettered %d",
				f.Lossless, f.Dropped, f.Refused, f.CompletionFailures, f.Released, f.LostTails, f.DeadLettered)
		}
		if f.Acknowledged > f.Sequence {
			bad("acknowledged %d > sequence %d", f.Acknowledged, f.Sequence)
		}
		if f.Epoch == "" && f.State != "WAITING_FOR_FILE" && f.State != "STARTING" {
			bad("no epoch in state %s", f.State)
		}
		if f.State == "END_OF_STREAM" && !f.Bounded {
			bad("END_OF_STREAM but not bounded")
		}
		live := 0
		for _, s := range f.Subscribers {
			if s.State == "LIVE" {
				live++
			}
			if s.Dispatched > s.Position {
				bad("subscriber %s dispatched %d > position %d", s.Queue, s.Dispatched, s.Position)
			}
			if f.Settled && !bestEffort[s.Queue] && !s.Drained {
				bad("settled while pointer-holding subscriber %s is not drained", s.Queue)
			}
		}
		if f.Consumers != live {
			bad("consumers %d, but %d subscribers are LIVE", f.Consumers, live)
		}
		if f.Settled {
			if f.State != "CAUGHT_UP" && f.State != "WAITING_FOR_FILE" && f.State != "END_OF_STREAM" {
				bad("settled in state %s", f.State)
			}
			if f.PendingAcks != 0 || f.Stalled != nil || f.Acknowledged != f.Sequence {
				bad("settled with pendingAcks %d, stalled %v, acknowledged %d of %d", f.PendingAcks, f.Stalled, f.Acknowledged, f.Sequence)
			}
		}
	}
	if r.Settled != allSettled || r.Lossless != allLossless {
		probs = append(probs, fmt.Sprintf("top level settled %v lossless %v, feeds say %v %v", r.Settled, r.Lossless, allSettled, allLossless))
	}
	return probs
}

// sampler polls /feed.status of one run in the background and checks
// every report (checkReport) and the version rule between consecutive
// reports: it never goes back and increases whenever another field changed.
type sampler struct {
	t          *testing.T
	d          *daemon
	bestEffort map[string]bool
	stop, done chan struct{}

	once    sync.Once
	mu      sync.Mutex
	probs   []string
	n       int
	changes int
}

// sample starts a sampler; finish reports what it found, and the test's
// cleanup stops it in any case.
func sample(t *testing.T, d *daemon, bestEffort ...string) *sampler {
	s := &sampler{t: t, d: d, bestEffort: map[string]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	for _, q := range bestEffort {
		s.bestEffort[q] = true
	}
	go s.run()
	t.Cleanup(s.halt)
	return s
}

// halt stops the sampling (idempotent).
func (s *sampler) halt() {
	s.once.Do(func() { close(s.stop) })
	<-s.done
}

func (s *sampler) run() {
	defer close(s.done)
	var lastVer uint64
	var lastRest string
	for {
		select {
		case <-s.stop:
			return
		case <-time.After(10 * time.Millisecond):
		}
		code, raw, err := s.d.get("/feed.status")
		if err != nil || code != http.StatusOK {
			continue // stopping
		}
		probs := checkReport(raw, s.bestEffort)
		var m map[string]any
		json.Unmarshal(raw, &m)
		ver, _ := m["version"].(float64)
		delete(m, "version")
		rest := string(mustJSON(m))
		s.mu.Lock()
		if s.n > 0 {
			switch {
			case uint64(ver) < lastVer:
				probs = append(probs, fmt.Sprintf("version went back from %d to %d", lastVer, uint64(ver)))
			case rest != lastRest && uint64(ver) == lastVer:
				probs = append(probs, fmt.Sprintf("version %d unchanged although the report changed:\n  %s\n  %s", lastVer, lastRest, rest))
			}
			if rest != lastRest {
				s.changes++
			}
		}
		s.n++
		lastVer, lastRest = uint64(ver), rest
		for _, p := range probs {
			if len(s.probs) < 20 {
				s.probs = append(s.probs, p+"\n  in "+string(raw))
			}
		}
		s.mu.Unlock()
	}
}

// finish stops the sampler and fails the test with what it found.
func (s *sampler) finish() {
	s.t.Helper()
	s.halt()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.probs {
		s.t.Errorf("feed.status sample: %s", p)
	}
	s.t.Logf("sampler: %d reports, %d changes", s.n, s.changes)
}
