package config_test

import (
	"testing"
	"time"

	"tailfeed/overload"
)

// The build step gives the daemon typed values: a subscriber's effective
// overload policy with its override applied, durations from milliseconds,
// onFailure as a flag and match/exclude compiled once.
func TestBuildTypedValues(t *testing.T) {
	cfg := mustParse(t, lines(
		"shutdownTimeoutMillis: 1500",
		"status: {stallAlertMillis: 2500}",
		"feeds:",
		"  - name: app",
		"    path: /var/log/app.log",
		"    pollIntervalMillis: 7",
		"    overload:",
		"      policy: BLOCK_WITH_DEADLINE",
		"      blockDeadlineMillis: 40",
		"      subscribers:",
		"        tap: {policy: DROP_AFTER_SPIN, spinBoundMillis: 3}",
		"processors:",
		"  - {name: p, feed: app, type: discard, match: 'a+', exclude: 'b', onFailure: deadLetter, retry: {initialMillis: 5, maxMillis: 9}}",
		"  - {name: tap, feed: app, type: discard}",
	), "/etc/tailfeed/tailfeed.yaml")
	if cfg.Built.ShutdownTimeout != 1500*time.Millisecond || cfg.Built.StallAlert != 2500*time.Millisecond {
		t.Errorf("Built %+v", cfg.Built)
	}
	f := cfg.Feeds[0].Built
	if f.Poll != 7*time.Millisecond || f.Overload != overload.BlockWithDeadline {
		t.Errorf("feed Built %+v", f)
	}
	p, tap := cfg.Processors[0].Built, cfg.Processors[1].Built
	if p.Overload != (overload.Policy{Kind: overload.BlockWithDeadline, Spin: 10 * time.Millisecond, Deadline: 40 * time.Millisecond}) {
		t.Errorf("p's policy %+v", p.Overload)
	}
	if tap.Overload != (overload.Policy{Kind: overload.DropAfterSpin, Spin: 3 * time.Millisecond, Deadline: 40 * time.Millisecond}) {
		t.Errorf("tap's policy %+v", tap.Overload)
	}
	if !p.DeadLetter || tap.DeadLetter || p.RetryInitial != 5*time.Millisecond || p.RetryMax != 9*time.Millisecond {
		t.Errorf("p %+v, tap %+v", p, tap)
	}
	if p.Match == nil || !p.Match.MatchString("xaay") || p.Exclude == nil || p.Exclude.String() != "b" || tap.Match != nil {
		t.Errorf("regexes: match %v exclude %v, tap's match %v", p.Match, p.Exclude, tap.Match)
	}
}
