package config

import (
	"regexp"
	"time"

	"tailfeed/overload"
)

// The build step. Parse ends with it once the config is valid: it turns
// the YAML's numbers and words into what they mean (durations, compiled
// regular expressions, parsed enums), so no later code converts
// milliseconds, compiles a regex again or parses an enum and ignores the
// error. The decoded fields stay as the file gave them; Built holds the
// typed values beside them.

// Built are the config's typed top-level values.
type Built struct {
	ShutdownTimeout time.Duration // shutdownTimeoutMillis
	StallAlert      time.Duration // status.stallAlertMillis
}

// FeedBuilt are a feed's typed values.
type FeedBuilt struct {
	Poll       time.Duration // pollIntervalMillis
	RotateWait time.Duration // rotateWaitMillis

	ScanInterval, CloseInactive, ForgetAfter time.Duration // glob feeds
	CommitSync                               time.Duration // commitSyncMillis
	Overload                                 overload.Kind // overload.policy
}

// ProcessorBuilt are a processor's typed values.
type ProcessorBuilt struct {
	Match   *regexp.Regexp // nil when match is unset (compiled once, by the decoder)
	Exclude *regexp.Regexp // nil when exclude is unset
	// Overload is the subscriber's effective policy on its feed: the
	// feed's overload with overload.subscribers' override applied.
	Overload      overload.Policy
	RetryInitial  time.Duration // retry.initialMillis
	RetryMax      time.Duration // retry.maxMillis
	DeadLetter    bool          // onFailure: deadLetter
	FsyncInterval time.Duration // fsyncIntervalMillis (file, count)
	AckTimeout    time.Duration // ackTimeoutMillis (pull)
	Timeout       time.Duration // timeoutMillis (webhook)
}

func millis(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// build fills the Built values of a valid config. An error here is a bug
// of validation (every enum was checked), reported at the entry's line
// rather than ignored.
func (d *decoder) build(cfg *Config) {
	cfg.Built = Built{ShutdownTimeout: millis(cfg.ShutdownTimeoutMillis), StallAlert: millis(cfg.Status.StallAlertMillis)}
	feeds := map[string]*Feed{}
	for i, f := range cfg.Feeds {
		feeds[f.Name] = f
		k, err := overload.Parse(f.Overload.Policy)
		if err != nil {
			d.errorf(f.Line, "feeds[%d].overload.policy: %v", i, err)
		}
		f.Built = FeedBuilt{Poll: millis(f.PollIntervalMillis), RotateWait: millis(f.RotateWaitMillis),
			CommitSync: millis(f.CommitSyncMillis), Overload: k, ScanInterval: millis(f.ScanIntervalMillis),
			CloseInactive: millis(f.CloseInactiveMillis), ForgetAfter: millis(f.ForgetAfterMillis)}
	}
	for i, p := range cfg.Processors {
		b := &p.Built
		b.RetryInitial, b.RetryMax = millis(p.Retry.InitialMillis), millis(p.Retry.MaxMillis)
		b.DeadLetter = p.OnFailure == OnFailureDeadLetter
		b.FsyncInterval, b.AckTimeout, b.Timeout = millis(p.FsyncIntervalMillis), millis(p.AckTimeoutMillis), millis(p.TimeoutMillis)
		f := feeds[p.Feed]
		if f == nil {
			d.errorf(p.Line, "processors[%d].feed: %q names no feed", i, clip(p.Feed))
			continue
		}
		eff := p.Policy(f)
		k, err := overload.Parse(eff.Policy)
		if err != nil {
			d.errorf(p.Line, "processors[%d]: overload policy: %v", i, err)
		}
		b.Overload = overload.Policy{Kind: k, Spin: millis(eff.SpinBoundMillis), Deadline: millis(eff.BlockDeadlineMillis)}
	}
}

// compileRegex compiles an RE2 expression for the decoder (which reports
// the error at its line); nil for "".
func compileRegex(s string) (*regexp.Regexp, error) {
	if s == "" {
		return nil, nil
	}
	return regexp.Compile(s)
}
