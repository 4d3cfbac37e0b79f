package config

import "os"

// Every default of the schema lives in this file (DESIGN §7). Parse starts
// each section from these values and overlays what the file sets.

// DefaultConfig returns the top-level defaults. Feeds and Processors are empty:
// a config must name at least one feed. File and DataDir are resolved by Parse.
func DefaultConfig() *Config {
	return &Config{
		Instance: defaultInstance(), // this sidecar's name in engine-side identities (DESIGN §11)
		DataDir:  "./var/state",     // LOCK, feeds/<feed>.ptr, dlq/, state/ (relative to the config file)
		Status: Status{
			Listen:           "127.0.0.1:8470", // HTTP status/pull/admin server, loopback only
			Token:            "",               // no bearer token; TAILFEED_TOKEN overrides at run
			ProtectRead:      false,            // /feed.status and /metrics open without a token
			StallAlertMillis: 60000,            // /healthz turns 503 after 60 s stalled or paused
			MaxConnections:   256,              // concurrent HTTP connections; idle keep-alives give way to new ones
		},
		Log: Log{
			Level:  "info", // trace | debug | info | warn | error
			Format: "text", // text | json
		},
		ShutdownTimeoutMillis: 10000, // groups get 10 s to drain after SIGTERM
	}
}

// DefaultFeed returns the defaults of one feeds[] entry (Name and Path have none).
func DefaultFeed() Feed {
	return Feed{
		ReadStrategy:        StrategyCommitted, // resume at the pointer: at-least-once
		MaxLineBytes:        1048576,           // 1 MiB; longer lines are delivered in pieces
		QueueCapacity:       1024,              // lines per subscriber queue
		QueueBytes:          4194304,           // 4 MiB per subscriber queue
		MaxPendingAcks:      65536,             // lines awaiting acknowledgement before the source pauses
		PollIntervalMillis:  250,               // poll fallback when fsnotify events don't arrive
		RotateWaitMillis:    5000,              // how long a rotated-away file is still read/watched
		CommitSyncMillis:    10,                // msync of the pointer at most every 10 ms
		ScanIntervalMillis:  10000,             // glob: rescan fallback
		MaxOpenFiles:        1024,              // glob: open inputs + their pointers
		CloseInactiveMillis: 300000,            // glob: close a caught-up file unchanged this long
		ForgetAfterMillis:   86400000,          // glob: delete a finished, gone file's pointer after
		Overload:            DefaultOverload(),
	}
}

// DefaultOverload returns a feed's default overload section: never drop.
func DefaultOverload() Overload {
	return Overload{
		Policy:              PolicyPause, // a full queue pauses the source; nothing is lost
		SpinBoundMillis:     10,          // DROP_AFTER_SPIN: spin this long once per full episode
		BlockDeadlineMillis: 100,         // BLOCK_WITH_DEADLINE: wait this long, then refuse
	}
}

// DefaultProcessor returns the defaults of one processors[] entry. Keys of
// every type get their default, whatever the processor's type.
func DefaultProcessor() Processor {
	return Processor{
		ExactlyOnce:         false,         // file/count: no (epoch, position) record kept
		Fsync:               FsyncNever,    // file: survives kill -9, not power loss
		FsyncIntervalMillis: 100,           // file, fsync interval: at most 100 ms after the first unsynced write
		Mode:                0o640,         // file: owner rw, group r, others nothing
		OnFailure:           OnFailureHold, // after the retries: keep retrying at the cap, feed stalls
		Retry:               DefaultRetry(),
		AckTimeoutMillis:    30000,   // pull: redeliver after 30 s without an ACK
		MaxInFlight:         1000,    // pull: unacknowledged deliveries at most
		TimeoutMillis:       5000,    // webhook: per request
		BatchMaxLines:       500,     // webhook: lines per request
		BatchMaxBytes:       1048576, // webhook: 1 MiB of lines per request
		Raw:                 false,   // webhook: no lineBase64
	}
}

// DefaultRetry returns the default backoff of a processor error: 1 s doubling
// to 16 s, ±20 %, 6 attempts.
func DefaultRetry() Retry {
	return Retry{
		InitialMillis: 1000,  // first backoff
		MaxMillis:     16000, // backoff cap
		Jitter:        0.2,   // ± fraction of each backoff
		Attempts:      6,     // before onFailure applies
	}
}

// defaultInstance is the host name with every character outside
// [A-Za-z0-9._-] replaced by '-', or "tailfeed" when there is none.
func defaultInstance() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "tailfeed"
	}
	b := []byte(h)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '-'
		}
	}
	if len(b) > maxName {
		b = b[:maxName]
	}
	return string(b)
}
