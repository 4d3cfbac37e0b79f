// Package status owns the feed.status report (DESIGN §7) and the HTTP
// server with every handler: /feed.status, /healthz, /readyz, /livez,
// /metrics, the admin endpoints, and the routes sinks register (pull, state).
//
// Field names are part of the contract. A report is a consistent snapshot
// in the sense that matters to a launcher: it never says settled while a
// published line is unprocessed. The daemon takes a FeedSnapshot per feed
// (the sequence, then the source, the ack points and counters, then the
// sequence again, in the order FeedSnapshot documents) and Build applies
// the settled and lossless rules; a feed whose sequence moved in between is
// reported not settled. The health and ready rules (Health, Readiness) and
// the metrics (MetricsRoute) work on snapshots too, and the admin handlers
// (AdminRoutes) on the small Admin interface the daemon implements: status
// imports neither the daemon nor the source nor any sink.
package status

// Report is the whole feed.status document.
type Report struct {
	Settled  bool         `json:"settled"`
	Lossless bool         `json:"lossless"`
	Version  uint64       `json:"version"`
	Feeds    []FeedReport `json:"feeds"`
	// Config is the running config file and its reloads (DESIGN §12).
	Config *ConfigReport `json:"config,omitempty"`
}

// FeedReport is one feed.
type FeedReport struct {
	Feed               string             `json:"feed"`
	Path               string             `json:"path"`
	State              string             `json:"state"`
	Bounded            bool               `json:"bounded"`
	Sequence           uint64             `json:"sequence"`
	Detail             *string            `json:"detail"`
	Drained            bool               `json:"drained"`
	Settled            bool               `json:"settled"`
	Lossless           bool               `json:"lossless"`
	Policy             string             `json:"policy"`
	Dropped            uint64             `json:"dropped"`
	Refused            uint64             `json:"refused"`
	Downgraded         uint64             `json:"downgraded"`
	CompletionFailures uint64             `json:"completionFailures"`
	Released           uint64             `json:"released"`
	DeadLettered       uint64             `json:"deadLettered"`
	Oversized          uint64             `json:"oversized"`
	Unterminated       int64              `json:"unterminated"`
	LostTails          uint64             `json:"lostTails"`
	LostBytes          uint64             `json:"lostBytes"`
	Paused             bool               `json:"paused"`
	Pauses             uint64             `json:"pauses"`
	Acknowledged       uint64             `json:"acknowledged"`
	PendingAcks        int64              `json:"pendingAcks"`
	Consumers          int                `json:"consumers"`
	Stalled            *string            `json:"stalled"`
	Epoch              string             `json:"epoch"`
	Pointer            *PointerReport     `json:"pointer"`
	Subscribers        []SubscriberReport `json:"subscribers"`

	Glob *GlobSnapshot `json:"-"` // a glob feed's files (glob.go writes them)
}

// PointerReport is a COMMITTED feed's pointer.
type PointerReport struct {
	Offset         int64  `json:"offset"`
	Epoch          string `json:"epoch"`
	Commits        uint64 `json:"commits"`
	CommitFailures uint64 `json:"commitFailures"`
}

// SubscriberReport is one subscriber queue.
type SubscriberReport struct {
	Queue      string `json:"queue"`
	Position   uint64 `json:"position"`
	Dispatched uint64 `json:"dispatched"`
	Drained    bool   `json:"drained"`
	State      string `json:"state"`
}

// Hex formats an epoch as 16 lowercase hex digits.
func Hex(v uint64) string {
	const digits = "0123456789abcdef"
	var b [16]byte
	for i := 15; i >= 0; i-- {
		b[i] = digits[v&0xf]
		v >>= 4
	}
	return string(b[:])
}
