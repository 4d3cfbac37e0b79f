package config_test

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"tailfeed/config"
	"tailfeed/overload"
)

func mustParse(t *testing.T, src, file string) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(src), file)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return cfg
}

// TestDefaults holds the defaults to the literal values of DESIGN §7, so a
// change in defaults.go cannot drift from the contract unnoticed.
func TestDefaults(t *testing.T) {
	cfg := mustParse(t, lines(
		"feeds:",
		"  - name: app",
		"    path: /var/log/app.log",
		"processors:",
		"  - {name: p, feed: app, type: file, path: /out/p.log}",
	), "/etc/tailfeed/tailfeed.yaml")

	if cfg.File != "/etc/tailfeed/tailfeed.yaml" || cfg.DataDir != "/etc/tailfeed/var/state" || cfg.DataDirLine != 0 {
		t.Errorf("File %q DataDir %q DataDirLine %d", cfg.File, cfg.DataDir, cfg.DataDirLine)
	}
	if want := (config.Status{Listen: "127.0.0.1:8470", StallAlertMillis: 60000, MaxConnections: 256}); cfg.Status != want {
		t.Errorf("Status = %+v, want %+v", cfg.Status, want)
	}
	if want := (config.Log{Level: "info", Format: "text"}); cfg.Log != want {
		t.Errorf("Log = %+v, want %+v", cfg.Log, want)
	}
	if cfg.ShutdownTimeoutMillis != 10000 || cfg.Built != defaultBuilt {
		t.Errorf("ShutdownTimeoutMillis = %d, Built %+v", cfg.ShutdownTimeoutMillis, cfg.Built)
	}
	wantFeed := &config.Feed{
		Name: "app", Path: "/var/log/app.log", ReadStrategy: "COMMITTED",
		MaxLineBytes: 1048576, QueueCapacity: 1024, QueueBytes: 4194304, MaxPendingAcks: 65536,
		PollIntervalMillis: 250, RotateWaitMillis: 5000, CommitSyncMillis: 10,
		ScanIntervalMillis: 10000, MaxOpenFiles: 1024, CloseInactiveMillis: 300000, ForgetAfterMillis: 86400000,
		Overload: config.Overload{Policy: "PAUSE", SpinBoundMillis: 10, BlockDeadlineMillis: 100},
		Line:     2,
		PathLine: 3,
		Built:    defaultFeedBuilt,
	}
	if len(cfg.Feeds) != 1 || !reflect.DeepEqual(cfg.Feeds[0], wantFeed) {
		t.Errorf("feed\n got %+v\nwant %+v", cfg.Feeds[0], wantFeed)
	}
	wantProc := &config.Processor{
		Name: "p", Feed: "app", Type: "file", Path: "/out/p.log",
		Fsync: "never", FsyncIntervalMillis: 100, Mode: 0o640, OnFailure: "hold",
		Retry:            config.Retry{InitialMillis: 1000, MaxMillis: 16000, Jitter: 0.2, Attempts: 6},
		AckTimeoutMillis: 30000, MaxInFlight: 1000,
		TimeoutMillis: 5000, BatchMaxLines: 500, BatchMaxBytes: 1048576,
		Line: 5, PathLine: 5,
		Built: defaultProcBuilt,
	}
	if len(cfg.Processors) != 1 || !reflect.DeepEqual(cfg.Processors[0], wantProc) {
		t.Errorf("processor\n got %+v\nwant %+v", cfg.Processors[0], wantProc)
	}
}

// The build step's values for the defaults: durations from the
// milliseconds, the overload policy parsed and applied to the subscriber.
var (
	defaultBuilt     = config.Built{ShutdownTimeout: 10 * time.Second, StallAlert: time.Minute}
	defaultFeedBuilt = config.FeedBuilt{Poll: 250 * time.Millisecond, RotateWait: 5 * time.Second,
		CommitSync: 10 * time.Millisecond, Overload: overload.Pause,
		ScanInterval: 10 * time.Second, CloseInactive: 5 * time.Minute, ForgetAfter: 24 * time.Hour}
	defaultProcBuilt = config.ProcessorBuilt{
		Overload:     overload.Policy{Kind: overload.Pause, Spin: 10 * time.Millisecond, Deadline: 100 * time.Millisecond},
		RetryInitial: time.Second, RetryMax: 16 * time.Second, FsyncInterval: 100 * time.Millisecond,
		AckTimeout: 30 * time.Second, Timeout: 5 * time.Second,
	}
)

// TestExampleConfig parses config.example.yaml at the repo root: it must be
// valid, set what the README says it sets, and leave the rest at the defaults.
func TestExampleConfig(t *testing.T) {
	file, err := filepath.Abs(filepath.Join("..", "config.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(file)
	if err != nil {
		t.Fatalf("config.example.yaml: %v", err)
	}
	root := filepath.Dir(file)

	want := config.DefaultConfig()
	want.File, want.Name = file, file
	want.DataDir = filepath.Join(root, "var", "state")
	want.DataDirLine = cfg.DataDirLine
	want.Built = defaultBuilt
	wantFeed := config.DefaultFeed()
	wantFeed.Built = defaultFeedBuilt
	wantFeed.Name, wantFeed.Path, wantFeed.Line = "app", filepath.Join(root, "var/demo/app.log"), cfg.Feeds[0].Line
	wantFeed.PathLine = cfg.Feeds[0].PathLine
	wantProc := config.DefaultProcessor()
	wantProc.Built = defaultProcBuilt
	wantProc.Name, wantProc.Feed, wantProc.Type, wantProc.Line = "archive", "app", "file", cfg.Processors[0].Line
	wantProc.PathLine = cfg.Processors[0].PathLine
	wantProc.Path = filepath.Join(root, "var/demo/out.log")
	want.Feeds = []*config.Feed{&wantFeed}
	want.Processors = []*config.Processor{&wantProc}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("config.example.yaml\n got %+v\nwant %+v", cfg, want)
		if len(cfg.Feeds) == 1 {
			t.Errorf("feed\n got %+v\nwant %+v", cfg.Feeds[0], &wantFeed)
		}
		if len(cfg.Processors) == 1 {
			t.Errorf("processor\n got %+v\nwant %+v", cfg.Processors[0], &wantProc)
		}
	}
	if cfg.DataDirLine == 0 || cfg.Feeds[0].ReadStrategy != config.StrategyCommitted || cfg.Processors[0].Fsync != config.FsyncNever {
		t.Errorf("the example must set dataDir, a COMMITTED feed and fsync never explicitly")
	}
	if cfg.Status.Listen != "127.0.0.1:8470" {
		t.Errorf("listen %q", cfg.Status.Listen)
	}
}

// TestRelativePaths: relative paths are relative to the config file's
// directory, absolute ones are kept (cleaned).
func TestRelativePaths(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "conf", "tailfeed.yaml")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	src := lines(
		"dataDir: state",
		"feeds:",
		"  - {name: rel, path: ../logs/app.log}",
		"  - {name: abs, path: /var/log//syslog}",
		"processors:",
		"  - {name: out, feed: rel, type: file, path: ./out/app.log}",
		"  - {name: abs-out, feed: abs, type: file, path: /tmp/out.log}",
	)
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	check := func(what, got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("%s = %q, want %q", what, got, want)
		}
	}
	check("File", cfg.File, file)
	check("DataDir", cfg.DataDir, filepath.Join(dir, "conf", "state"))
	check("feeds[0].path", cfg.Feeds[0].Path, filepath.Join(dir, "logs", "app.log"))
	check("feeds[1].path", cfg.Feeds[1].Path, "/var/log/syslog")
	check("processors[0].path", cfg.Processors[0].Path, filepath.Join(dir, "conf", "out", "app.log"))
	check("processors[1].path", cfg.Processors[1].Path, "/tmp/out.log")
	if cfg.DataDirLine != 1 {
		t.Errorf("DataDirLine = %d, want 1", cfg.DataDirLine)
	}

	// A relative config file name is made absolute first.
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	cfg = mustParse(t, src, filepath.Join("conf", "tailfeed.yaml"))
	check("File (relative name)", cfg.File, filepath.Join(wd, "conf", "tailfeed.yaml"))
	check("DataDir (relative name)", cfg.DataDir, filepath.Join(wd, "conf", "state"))
}

func TestCommitedAlias(t *testing.T) {
	for _, s := range []string{"COMMITED", "COMMITTED"} {
		cfg := mustParse(t, feedDoc("    readStrategy: "+s), "/t.yaml")
		if got := cfg.Feeds[0].ReadStrategy; got != config.StrategyCommitted {
			t.Errorf("readStrategy %s → %q, want COMMITTED", s, got)
		}
	}
	for _, s := range config.Strategies {
		if got := mustParse(t, feedDoc("    readStrategy: "+s), "/t.yaml").Feeds[0].ReadStrategy; got != s {
			t.Errorf("readStrategy %s → %q", s, got)
		}
	}
}

func TestSubscriberOverload(t *testing.T) {
	cfg := mustParse(t, lines(
		"feeds:",
		"  - name: app",
		"    path: /a",
		"    overload:",
		"      policy: BLOCK_WITH_DEADLINE",
		"      blockDeadlineMillis: 250",
		"      subscribers:",
		"        tap: {policy: DROP_AFTER_SPIN, spinBoundMillis: 3}",
		"        slow: {blockDeadlineMillis: 5000}",
		"        same:",
		"processors:",
		"  - {name: tap, feed: app, type: pull}",
		"  - {name: slow, feed: app, type: pull}",
		"  - {name: same, feed: app, type: discard}",
		"  - {name: plain, feed: app, type: discard}",
	), "/t.yaml")
	f := cfg.Feeds[0]
	want := map[string]config.SubscriberOverload{
		"tap":   {Policy: config.PolicyDropAfterSpin, SpinBoundMillis: 3, BlockDeadlineMillis: 250},
		"slow":  {Policy: config.PolicyBlockWithDeadline, SpinBoundMillis: 10, BlockDeadlineMillis: 5000},
		"same":  {Policy: config.PolicyBlockWithDeadline, SpinBoundMillis: 10, BlockDeadlineMillis: 250},
		"plain": {Policy: config.PolicyBlockWithDeadline, SpinBoundMillis: 10, BlockDeadlineMillis: 250},
	}
	for _, p := range cfg.Processors {
		if got := p.Policy(f); got != want[p.Name] {
			t.Errorf("%s: Policy = %+v, want %+v", p.Name, got, want[p.Name])
		}
	}
	if len(f.Overload.Subscribers) != 3 || f.Overload.Subscribers["slow"] != want["slow"] {
		t.Errorf("Subscribers = %+v (want the effective values of the three entries)", f.Overload.Subscribers)
	}

	// A hand-built config: empty and zero fields inherit the feed's.
	hand := &config.Feed{Overload: config.Overload{Policy: config.PolicyPause, SpinBoundMillis: 10, BlockDeadlineMillis: 100,
		Subscribers: map[string]config.SubscriberOverload{"x": {Policy: config.PolicyDropAfterSpin}}}}
	if got := (&config.Processor{Name: "x"}).Policy(hand); got != (config.SubscriberOverload{config.PolicyDropAfterSpin, 10, 100}) {
		t.Errorf("hand-built Policy = %+v", got)
	}
}

// TestParseAccepts covers inputs that look odd but are valid.
func TestParseAccepts(t *testing.T) {
	tests := []struct {
		name  string
		src   string
		check func(t *testing.T, c *config.Config)
	}{
		{"null values take defaults", lines("dataDir:", "status: ~", "log:", "feeds:", "  - name: app", "    path: /a", "    queueCapacity: null", "processors:", "  - {name: p, feed: app, type: discard, retry: ~}"),
			func(t *testing.T, c *config.Config) {
				if c.DataDir != "/etc/var/state" || c.DataDirLine != 0 || c.Feeds[0].QueueCapacity != 1024 || len(c.Processors) != 1 || c.Processors[0].Retry.Attempts != 6 {
					t.Errorf("got %+v %+v", c, c.Feeds[0])
				}
			}},
		{"integer forms", feedDoc("    queueCapacity: 0x400", "    queueBytes: 4_194_304", "    rotateWaitMillis: 0"),
			func(t *testing.T, c *config.Config) {
				if f := c.Feeds[0]; f.QueueCapacity != 1024 || f.QueueBytes != 4194304 || f.RotateWaitMillis != 0 {
					t.Errorf("got %+v", f)
				}
			}},
		{"rotatedNames", feedDoc("    rotatedNames: ['app.log.[0-9]*', 'app-*.log.gz']"),
			func(t *testing.T, c *config.Config) {
				if f := c.Feeds[0]; len(f.RotatedNames) != 2 || f.RotatedNames[0] != "app.log.[0-9]*" || f.RotatedNames[1] != "app-*.log.gz" {
					t.Errorf("got %+v", f.RotatedNames)
				}
			}},
		{"scalars as strings", read(lines("status: {token: 12345}", "feeds:", "  - {name: 2024, path: /a}"), "2024"),
			func(t *testing.T, c *config.Config) {
				if c.Status.Token != "12345" || c.Feeds[0].Name != "2024" {
					t.Errorf("got %+v %+v", c.Status, c.Feeds[0])
				}
			}},
		{"jitter as integer", procDoc("    retry: {jitter: 0}"),
			func(t *testing.T, c *config.Config) {
				if c.Processors[0].Retry.Jitter != 0 {
					t.Errorf("got %+v", c.Processors[0].Retry)
				}
			}},
		{"keys of other types are accepted", procDoc("    url: http://x", "    path: out.log", "    maxInFlight: 5", "    headers: {A: b}"),
			func(t *testing.T, c *config.Config) {
				if p := c.Processors[0]; p.URL != "http://x" || p.Path != "/etc/out.log" || p.MaxInFlight != 5 || p.Headers["A"] != "b" {
					t.Errorf("got %+v", p)
				}
			}},
		{"count with a key group", procDoc(`    match: '^(?P<key>\w+) '`, `    exclude: '^#'`),
			func(t *testing.T, c *config.Config) {
				if c.Processors[0].Match != `^(?P<key>\w+) ` || c.Processors[0].Exclude != "^#" {
					t.Errorf("got %+v", c.Processors[0])
				}
			}},
		{"webhook", lines("feeds:", "  - {name: app, path: /a}", "processors:",
			"  - name: hook", "    feed: app", "    type: webhook", "    url: https://example.com:8443/in",
			"    headers: {X-Source: tailfeed, Authorization: Bearer x}", "    raw: true"),
			func(t *testing.T, c *config.Config) {
				p := c.Processors[0]
				if p.URL != "https://example.com:8443/in" || !p.Raw || len(p.Headers) != 2 || p.Headers["Authorization"] != "Bearer x" {
					t.Errorf("got %+v", p)
				}
			}},
		{"anchors and merge keys", lines(
			"feeds:",
			"  - &base",
			"    name: app",
			"    path: /a",
			"    queueCapacity: 64",
			"  - <<: *base",
			"    name: web",
			"    path: /b",
			"processors:",
			"  - {name: p, feed: web, type: discard, retry: &r {attempts: 2}}",
			"  - {name: q, feed: app, type: discard, retry: *r}"),
			func(t *testing.T, c *config.Config) {
				if f := c.Feeds[1]; f.Name != "web" || f.Path != "/b" || f.QueueCapacity != 64 || f.Line != 6 {
					t.Errorf("got %+v", f)
				}
				if c.Processors[1].Retry.Attempts != 2 {
					t.Errorf("got %+v", c.Processors[1])
				}
			}},
		{"trailing empty document", feedDoc() + "---\n",
			func(t *testing.T, c *config.Config) {}},
		{"listen on any interface, port 0", read(lines("status: {listen: ':0'}", "feeds:", "  - {name: a, path: /a}"), "a"),
			func(t *testing.T, c *config.Config) {
				if c.Status.Listen != ":0" {
					t.Errorf("got %q", c.Status.Listen)
				}
			}},
		{"all processor types", lines("feeds:", "  - {name: app, path: /a}", "processors:",
			"  - {name: f, feed: app, type: file, path: /o, fsync: interval, exactlyOnce: true, onFailure: deadLetter}",
			"  - {name: p, feed: app, type: pull}",
			"  - {name: w, feed: app, type: webhook, url: 'http://h/'}",
			"  - {name: c, feed: app, type: count}",
			"  - {name: d, feed: app, type: discard}"),
			func(t *testing.T, c *config.Config) {
				if len(c.Processors) != 5 || c.Processors[0].OnFailure != config.OnFailureDeadLetter || c.Processors[0].Fsync != config.FsyncInterval {
					t.Errorf("got %+v", c.Processors[0])
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, mustParse(t, tt.src, "/etc/t.yaml"))
		})
	}
}
