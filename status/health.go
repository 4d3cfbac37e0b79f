package status

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// HealthSnapshot is what /healthz asks of one feed.
type HealthSnapshot struct {
	Feed        string
	Failed      bool   // the source is FAILED
	Detail      string // the source's detail ("" for none)
	Stalls      []Stall
	PausedSince time.Time // zero when not paused
	PauseReason string
}

// Stall is one pointer-holding subscriber that is fenced or dead.
type Stall struct {
	Since  time.Time
	Reason string
}

// Health is /healthz's rule (DESIGN §12 "Health"): unhealthy when a feed
// is FAILED (at once: no wait will mend it), or has been stalled or paused
// for longer than limit, with the reasons.
func Health(feeds []HealthSnapshot, limit time.Duration, now time.Time) (bool, string) {
	var why []string
	for _, f := range feeds {
		if f.Failed {
			reason := "feed " + f.Feed + " FAILED"
			if f.Detail != "" {
				reason += ": " + f.Detail
			}
			why = append(why, reason)
			continue
		}
		if since, reason := firstStall(f.Stalls); !since.IsZero() && now.Sub(since) > limit {
			why = append(why, "feed "+f.Feed+" stalled: "+reason)
			continue
		}
		if !f.PausedSince.IsZero() && now.Sub(f.PausedSince) > limit {
			why = append(why, "feed "+f.Feed+" paused: "+f.PauseReason)
		}
	}
	return len(why) == 0, strings.Join(why, "; ")
}

// firstStall is the stall that began first (zero time for none).
func firstStall(stalls []Stall) (time.Time, string) {
	var first time.Time
	var reason string
	for _, s := range stalls {
		if first.IsZero() || s.Since.Before(first) {
			reason, first = s.Reason, s.Since
		}
	}
	return first, reason
}

// ReadyFeed is what /readyz asks of one feed.
type ReadyFeed struct {
	Feed  string
	State string // the source state, for the reason
	Open  bool   // past STARTING and not FAILED: it opened its file or waits for one
}

// Readiness is /readyz's rule (DESIGN §12 "Health"): ready once every feed
// has been seen open, and from then on (a feed that fails later shows in
// /healthz, not here). Each feed's "open" latches too, so a feed that
// opens and fails between two checks still counts as having opened.
type Readiness struct {
	ready  atomic.Bool
	mu     sync.Mutex
	opened map[string]bool
}

// Check reports readiness, calling feeds only until it latched.
func (r *Readiness) Check(feeds func() []ReadyFeed) (bool, string) {
	if r.ready.Load() {
		return true, ""
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.opened == nil {
		r.opened = map[string]bool{}
	}
	var why []string
	for _, f := range feeds() {
		if r.opened[f.Feed] {
			continue
		}
		if !f.Open {
			why = append(why, "feed "+f.Feed+" "+f.State)
			continue
		}
		r.opened[f.Feed] = true
	}
	if len(why) > 0 {
		return false, strings.Join(why, "; ")
	}
	r.ready.Store(true)
	return true, ""
}
