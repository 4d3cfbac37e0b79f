package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/signal"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"tailfeed/config"
	"tailfeed/internal/daemon"
	"tailfeed/internal/redact"
	"tailfeed/internal/sdnotify"
)

func cmdRun(args []string, stderr io.Writer) int {
	hups := make(chan os.Signal, 1)
	signal.Notify(hups, syscall.SIGHUP)
	defer signal.Stop(hups)
	// SIGTERM/SIGINT are caught from the start too (DESIGN §12: SIGTERM
	// always stops the daemon): the start may block (a sink's first
	// connection waits its timeout), and a signal then must end the run
	// cleanly, not by the signal's default action.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	path := fs.String("config", "", "the config file (default: $TAILFEED_CONFIG, else ./tailfeed.yaml, else /etc/tailfeed/tailfeed.yaml)")
	if pos, ok := parseFlags(fs, args, stderr); !ok || !noArgs("run", pos, stderr) || !requireConfig("run", path, stderr) {
		return 2
	}
	cfg, err := config.Load(*path)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	tokenInFile := literalToken(cfg)
	if tok := os.Getenv("TAILFEED_TOKEN"); tok != "" {
		cfg.Status.Token = tok
	}
	log, setLog := newLogger(stderr, cfg.Log)
	securityWarnings(cfg, *path, tokenInFile, log)
	d, code := start(cfg, log, daemon.Options{SetLog: setLog}, sigs, stderr)
	if d == nil {
		return code
	}
	if stop := startCPUProfile(os.Getenv("TAILFEED_CPUPROFILE"), log); stop != nil {
		defer stop()
	}
	ctx, cancel := context.WithCancel(context.Background())
	d.Start(ctx)
	// SIGHUP reloads the config file and never kills (DESIGN §12
	// "Signals"): caught from before the config is read through the stop; a
	// reload failure leaves the daemon running on its config.
	sd := &notifier{log: log}
	go func() {
		for range hups {
			log.Info("SIGHUP received: reloading the config")
			sd.reload(func() { d.Reload(context.Background()) })
		}
	}()
	log.Info("tailfeed running", "version", version, "config", *path, "status", d.Scheme()+"://"+d.Addr()+"/feed.status", "feeds", len(cfg.Feeds))
	sd.ready()
	sig := <-sigs
	sd.stopping()
	log.Info("stopping: draining subscribers, then the final commit", "signal", sig.String())
	go func() {
		s := <-sigs
		log.Warn("second signal: exiting at once, without a final commit", "signal", s.String())
		os.Exit(1)
	}()
	cancel()
	if err := d.Stop(); err != nil {
		log.Error("stopped with an error", "error", err)
		return 1
	}
	log.Info("stopped cleanly")
	return 0
}

// notifier tells a service manager the daemon's state (sdnotify; nothing
// without $NOTIFY_SOCKET) in an order the protocol expects: READY=1 once
// the daemon serves (after a reload that began before it, once that ended),
// RELOADING=1 … READY=1 around a reload, STOPPING=1 at the stop and nothing
// after it. A failed send is logged, never fatal.
type notifier struct {
	log       hclog.Logger
	mu        sync.Mutex
	started   bool // READY=1 was due (the start ended)
	reloading bool
	stopped   bool
}

func (n *notifier) send(state string) {
	if named, err := sdnotify.Notify(state); named && err != nil {
		n.log.Warn("cannot notify the service manager ($NOTIFY_SOCKET)", "state", state, "error", err)
	}
}

func (n *notifier) ready() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.started = true
	if !n.reloading && !n.stopped {
		n.send("READY=1")
	}
}

// reload runs do between RELOADING=1 and READY=1 (neither once stopping;
// before the start ended, READY=1 is the start's).
func (n *notifier) reload(do func()) {
	n.mu.Lock()
	n.reloading = true
	if n.started && !n.stopped {
		n.send(sdnotify.Reloading())
	}
	n.mu.Unlock()
	do()
	n.mu.Lock()
	defer n.mu.Unlock()
	n.reloading = false
	if n.started && !n.stopped {
		n.send("READY=1")
	}
}

func (n *notifier) stopping() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.stopped = true
	n.send("STOPPING=1")
}

// start builds the daemon (daemon.NewWithOptions: it opens the dataDir,
// the pointers and every sink) while it watches sigs. It returns the
// daemon, or nil and the exit code: that of a failed start (2 for the
// config's fault, else 1), or that of a stop signal that came during the
// start. Nothing has been read then, so there is nothing to commit: the
// start is given shutdownTimeoutMillis to finish (what it opened is then
// closed) and otherwise left unfinished (a sink's open or connection that
// blocks, as a silent NATS server makes it); either way the exit is 0, as
// after a clean SIGTERM (DESIGN §9). A second signal exits at once (1).
func start(cfg *config.Config, log hclog.Logger, opts daemon.Options, sigs <-chan os.Signal, stderr io.Writer) (*daemon.Daemon, int) {
	type result struct {
		d   *daemon.Daemon
		err error
	}
	done := make(chan result, 1)
	go func() {
		d, err := daemon.NewWithOptions(cfg, log, opts)
		done <- result{d, err}
	}()
	var r result
	select {
	case r = <-done:
	case sig := <-sigs:
		log.Info("stopping during the start: nothing was read yet, so there is nothing to commit", "signal", sig.String())
		grace := time.NewTimer(cfg.Built.ShutdownTimeout)
		defer grace.Stop()
		select {
		case r = <-done:
			if r.err == nil {
				r.d.Close()
				log.Info("stopped cleanly")
				return nil, 0
			}
		case <-grace.C:
			log.Warn("the start did not finish within shutdownTimeoutMillis; exiting without it (nothing was read)")
			log.Info("stopped cleanly")
			return nil, 0
		case s := <-sigs:
			log.Warn("second signal: exiting at once", "signal", s.String())
			return nil, 1
		}
	}
	if r.err != nil {
		// The config's fault (exit 2): a *daemon.ConfigError, or a
		// daemon.ConfigErrors naming every problem, one per line.
		if errors.Is(r.err, daemon.ErrConfig) {
			fmt.Fprintln(stderr, r.err)
			return nil, 2
		}
		log.Error("cannot start", "error", r.err)
		fmt.Fprintf(stderr, "tailfeed run: %v\n", r.err)
		return nil, 1
	}
	return r.d, 0
}

// securityWarnings logs at start what leaves the daemon open (DESIGN §12):
// a status.listen that is not loopback with no token (anyone who reaches
// the port may release backlogs and read dead letters), and each secret
// the config file holds literally (DESIGN §11), saying so when every local
// user may read the file.
func securityWarnings(cfg *config.Config, path string, tokenInFile bool, log hclog.Logger) {
	if cfg.Status.Token == "" && !loopback(cfg.Status.Listen) {
		log.Warn("status.listen is not a loopback address and no token is set: anyone who reaches it may use the admin and pull API; set status.token or TAILFEED_TOKEN",
			"listen", cfg.Status.Listen)
	}
	if cfg.Status.TLS.CertFile == "" && !loopback(cfg.Status.Listen) {
		log.Warn("status.listen is not a loopback address and status.tls is not set: tokens, pulled lines and dead letters cross the network in clear text; set status.tls",
			"listen", cfg.Status.Listen)
	}
	// DESIGN §11: a literal secret (not a ${ENV} reference) is accepted
	// with a WARN at start naming the key, never its value; a file every
	// local user may read says so too (chmod o-r it).
	mode := ""
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o004 != 0 {
		mode = fmt.Sprintf("%04o", fi.Mode().Perm())
	}
	if tokenInFile {
		if mode != "" {
			log.Warn("the config file holds status.token and is readable by every local user; chmod o-r it or pass the token in TAILFEED_TOKEN",
				"config", path, "mode", mode, "key", "status.token")
		} else {
			log.Warn("a secret is written literally in the config file; prefer a ${ENV} reference or TAILFEED_TOKEN", "key", "status.token")
		}
	}
	for _, k := range literalSecrets(cfg) {
		if mode != "" {
			log.Warn("the config file holds a secret and is readable by every local user; chmod o-r it",
				"config", path, "mode", mode, "key", k)
		} else {
			log.Warn("a secret is written literally in the config file; prefer a ${ENV} reference", "key", k)
		}
	}
}

// literalSecrets names the keys of the webhook secrets the config file
// holds literally: a url's userinfo and each sensitive header. (The
// engine sinks warn of theirs as they are built: nats, kafka, postgres.)
func literalSecrets(cfg *config.Config) []string {
	var all []string
	for i, p := range cfg.Processors {
		if p.Type != "webhook" {
			continue // (a nats url's userinfo: the nats sink's WARN)
		}
		var keys []string
		// Values are looked at as the file wrote them: a secret that comes
		// from a ${VAR} reference is not in the file.
		key := fmt.Sprintf("processors[%d].url", i)
		if u, err := url.Parse(p.URL); err == nil && u.User != nil && !config.HasReference(userinfo(cfg.Written(key, p.URL))) {
			keys = append(keys, key+" (its userinfo)")
		}
		for k, v := range p.Headers {
			if redact.SensitiveHeader(k) && !config.HasReference(cfg.Written(fmt.Sprintf("processors[%d].headers.%s", i, k), v)) {
				keys = append(keys, fmt.Sprintf("processors[%d].headers.%s", i, k))
			}
		}
		sort.Strings(keys)
		all = append(all, keys...)
	}
	return all
}

// literalToken reports whether the config file itself holds status.token:
// a ${VAR} reference is not a token held by the file (DESIGN §12).
func literalToken(cfg *config.Config) bool {
	return cfg.Status.Token != "" && !config.HasReference(cfg.Written("status.token", cfg.Status.Token))
}

// userinfo is the text between a URL's "//" and the last '@' before its
// path ("" when there is none), as written.
func userinfo(raw string) string {
	_, rest, ok := strings.Cut(raw, "//")
	if !ok {
		return ""
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		return rest[:i]
	}
	return ""
}

// loopback reports whether a host:port listens on loopback only: a
// loopback IP or "localhost" (an empty host or a wildcard is every
// interface; another name may resolve anywhere).
func loopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// startCPUProfile profiles the whole run into path (env TAILFEED_CPUPROFILE,
// for `make bench`); the returned func stops it. Empty path: nil.
func startCPUProfile(path string, log hclog.Logger) func() {
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		log.Warn("cpu profile not started", "path", path, "error", err)
		return nil
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
