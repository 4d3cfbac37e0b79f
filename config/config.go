package config

import (
	"errors"
	"io/fs"
	"os"
)

// Read strategies (Feed.ReadStrategy, normalized: the alias COMMITED reads as COMMITTED).
const (
	StrategyCommitted    = "COMMITTED"
	StrategyEarliest     = "EARLIEST"
	StrategyLatest       = "LATEST"
	StrategyOnceEarliest = "ONCE_EARLIEST"
	StrategyOnceLatest   = "ONCE_LATEST"
)

// Overload policies (Overload.Policy, SubscriberOverload.Policy).
const (
	PolicyPause             = "PAUSE"
	PolicyDropAfterSpin     = "DROP_AFTER_SPIN"
	PolicyBlockWithDeadline = "BLOCK_WITH_DEADLINE"
)

// Processor.Format values (file, stdout): the line's bytes, or
// internal/ndjson's object per line.
const (
	FormatRaw  = "raw"
	FormatJSON = "json"
)

// Processor.Fsync values.
const (
	FsyncAlways   = "always"
	FsyncInterval = "interval"
	FsyncNever    = "never"
)

// Processor.OnFailure values.
const (
	OnFailureHold       = "hold"
	OnFailureDeadLetter = "deadLetter"
)

// Config is a whole, validated config file with every default filled in.
type Config struct {
	File    string // absolute path of the config file ("" when Parse got no name)
	Name    string // the config file as Parse got it, which "FILE:LINE: …" messages name
	DataDir string // absolute
	// Instance names this sidecar in every engine-side identity (DESIGN
	// §11); default: the host name, its other characters replaced by '-'.
	Instance    string
	DataDirLine int // line of the dataDir key (0 when defaulted), for "FILE:LINE: dataDir: …"
	Status      Status
	Log         Log

	ShutdownTimeoutMillis int

	Feeds      []*Feed      // in file order
	Processors []*Processor // in file order

	Built Built // typed values (see build)

	raw map[string]string // values by key as written, before ${VAR} expansion (see Written)
}

// Status is the status section: the HTTP server.
type Status struct {
	Listen           string // host:port
	Token            string // bearer token; "" = none
	ProtectRead      bool   // /feed.status and /metrics need the token too
	StallAlertMillis int
	MaxConnections   int // concurrent connections at most; idle ones give way (DESIGN §12)
	TLS              ServerTLS
}

// ServerTLS is status.tls (DESIGN §12 "TLS for the HTTP API"): HTTPS when
// CertFile is set; with ClientCAFile, clients need a certificate it signed
// (but on the probes). Paths are absolute; the files are read at run.
type ServerTLS struct {
	CertFile, KeyFile, ClientCAFile string
	Line                            int // line of the tls key (0: absent)
}

// ClientTLS is a processor's tls (DESIGN §11 "TLS and authentication"):
// CAFile verifies the server ("": the system's roots), CertFile and
// KeyFile are a client certificate. Paths are absolute; read at run.
type ClientTLS struct {
	CAFile, CertFile, KeyFile string
	InsecureSkipVerify        bool
	Line                      int // line of the tls key (0: absent)
}

// Log is the log section.
type Log struct {
	Level  string // trace | debug | info | warn | error
	Format string // text | json
}

// Feed is one feeds[] entry: a file to tail.
type Feed struct {
	Name string
	Path string // absolute

	ReadStrategy string // COMMITTED | EARLIEST | LATEST | ONCE_EARLIEST | ONCE_LATEST

	MaxLineBytes       int
	QueueCapacity      int
	QueueBytes         int
	MaxPendingAcks     int
	PollIntervalMillis int
	RotateWaitMillis   int
	CommitSyncMillis   int

	// RotatedNames are globs over base names that a rotated generation of
	// the input matches (filepath.Match syntax). Empty: the default, the
	// input's base name then '.' or '-', then digits, a date, or both,
	// optionally ".gz" (DESIGN §4).
	RotatedNames []string

	// Glob feeds (DESIGN §10): Exclude holds absolute globs over whole
	// paths; the rest are ignored by a single-file feed.
	Exclude             []string
	ScanIntervalMillis  int
	MaxOpenFiles        int
	CloseInactiveMillis int
	ForgetAfterMillis   int

	Overload Overload

	Line     int // line of the feed's entry
	PathLine int // line of its path key (0: none)

	Built FeedBuilt // typed values (see build)
}

// Overload is a feed's overload section.
type Overload struct {
	Policy              string // PAUSE | DROP_AFTER_SPIN | BLOCK_WITH_DEADLINE
	SpinBoundMillis     int
	BlockDeadlineMillis int

	// Subscribers holds per-processor overrides, keyed by processor name. Parse
	// fills what an entry leaves out from the feed's values, so each entry is
	// the processor's effective overload. Nil when the file sets none.
	Subscribers map[string]SubscriberOverload
}

// SubscriberOverload is the overload of one subscriber. In a hand-built
// Config, an empty Policy or a zero number means "the feed's" (see Policy).
type SubscriberOverload struct {
	Policy              string
	SpinBoundMillis     int
	BlockDeadlineMillis int
}

// Processor is one processors[] entry: a subscriber of one feed.
type Processor struct {
	Name string // also the subscriber queue's name
	Feed string // a feeds[].name
	Type string // a registered sink type (RegisterSink; SinkTypes lists them)

	Match   string // optional RE2 (compiled at load); count: may hold a named group "key"
	Exclude string // optional RE2 (compiled at load)

	Path                string // file: absolute output path
	ExactlyOnce         bool   // file/count
	Fsync               string // file: always | interval | never
	FsyncIntervalMillis int    // file
	Mode                uint32 // file: the output's permission bits (0640)
	Format              string // file, stdout: raw | json ("" = raw)

	OnFailure string // hold | deadLetter
	Retry     Retry

	AckTimeoutMillis int // pull
	MaxInFlight      int // pull

	URL           string            // webhook: http(s) URL
	TimeoutMillis int               // webhook
	BatchMaxLines int               // webhook
	BatchMaxBytes int               // webhook
	Headers       map[string]string // webhook; nil when none
	Raw           bool              // webhook: add lineBase64
	TLS           ClientTLS         // webhook

	// Settings are the keys of the processor's own type, decoded by its
	// SinkSpec.Decode into the sink package's type (kafka, nats and
	// postgres: *kafka.Settings and so on); nil when it has none.
	Settings any

	Line     int // line of the processor's entry
	PathLine int // line of its path key (0: none)

	Built ProcessorBuilt // typed values (see build)
}

// Retry is a processor's backoff after an error.
type Retry struct {
	InitialMillis int
	MaxMillis     int
	Jitter        float64 // fraction in [0, 1]
	Attempts      int
}

// Policy returns the effective overload of processor p on feed f: its entry in
// f.Overload.Subscribers where one exists, the feed's policy otherwise. An
// empty policy or a zero number in the entry inherits the feed's value.
func (p *Processor) Policy(f *Feed) SubscriberOverload {
	eff := SubscriberOverload{
		Policy:              f.Overload.Policy,
		SpinBoundMillis:     f.Overload.SpinBoundMillis,
		BlockDeadlineMillis: f.Overload.BlockDeadlineMillis,
	}
	o, ok := f.Overload.Subscribers[p.Name]
	if !ok {
		return eff
	}
	if o.Policy != "" {
		eff.Policy = o.Policy
	}
	if o.SpinBoundMillis > 0 {
		eff.SpinBoundMillis = o.SpinBoundMillis
	}
	if o.BlockDeadlineMillis > 0 {
		eff.BlockDeadlineMillis = o.BlockDeadlineMillis
	}
	return eff
}

// Load reads the config file at path and parses it (see Parse). A missing or
// unreadable file is an *Errors with one entry "FILE: message" and no line.
func Load(path string) (*Config, error) {
	cfg, _, err := load(path)
	return cfg, err
}

// LoadPartial is Load for a caller that lists every problem of a file it
// will not run (a reload, whose rejection names every FILE:LINE: message,
// DESIGN §12, and which adds checks of its own on the file system): with
// the *Errors of an invalid file it returns the config as far as it was
// decoded — a value that did not decode keeps its default (DataDirLine is
// 0 for a dataDir that did not), Built is zero or incomplete, and the
// config is nil when the document could not be read at all. Such a
// config is only to look for more problems in, never to run. A valid file
// gives what Load gives.
func LoadPartial(path string) (*Config, error) {
	cfg, partial, err := load(path)
	if err != nil {
		return partial, err
	}
	return cfg, nil
}

// load is Load, with the partial config of an invalid file (see
// LoadPartial).
func load(path string) (cfg, partial *Config, err error) {
	if path == "" {
		return nil, nil, &Errors{{File: "<config>", Msg: "no config file given"}}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		msg := "cannot read config file: " + err.Error()
		var pe *fs.PathError
		if errors.As(err, &pe) {
			msg = "cannot read config file: " + pe.Err.Error()
		}
		return nil, nil, &Errors{{File: path, Msg: msg, Err: err}}
	}
	return parse(data, path)
}

// Parse decodes and validates a config. file names it in errors and anchors
// its relative paths (they are relative to file's directory; to the working
// directory when file is ""). On any problem it returns nil and an *Errors
// listing every problem found, sorted by line.
func Parse(data []byte, file string) (*Config, error) {
	cfg, _, err := parse(data, file)
	return cfg, err
}

// parse is Parse, with the partial config of an invalid document (see
// LoadPartial).
func parse(data []byte, file string) (cfg, partial *Config, err error) {
	d := newDecoder(file)
	cfg = d.parse(data)
	if errs := d.result(); len(errs) > 0 {
		return nil, cfg, &errs
	}
	d.build(cfg)
	if errs := d.result(); len(errs) > 0 {
		return nil, cfg, &errs
	}
	return cfg, nil, nil
}
