package daemon

// Live reload (DESIGN §12 "Reload"): SIGHUP and POST /admin/reload re-read
// the config file, validate it whole, and apply the difference.
//
// How the difference is applied (decisions where the contract is silent):
//   - A feed is restarted — stopped as at shutdown (sources stopped, queues
//     drained within shutdownTimeoutMillis, final commit, pointer closed and
//     unlocked), then built and started again from its pointer (without
//     one: from its previous instance's place in memory, resumeFor) — when its
//     own settings changed or any of its processors was added, removed or
//     changed. Feeds that nothing touched keep running untouched. So a
//     changed processor's new instance receives first the lines the old
//     one did not finish (they lie past the final commit), and a new
//     processor subscribes from the next line its feed publishes. Each
//     subscriber skips the re-read through the (epoch, position) of the
//     last line it finished, one per epoch (skipsFor), so the lines it finished past the
//     final commit (a drain cut short) are not delivered again. The
//     stopped feeds drain together, under one shutdownTimeoutMillis that
//     a stop of the daemon cuts short.
//   - The stopped feeds are rebuilt only once every new one built; if one
//     does not build (a sink's output cannot be opened), what the stops
//     moved aside is put back, the stopped feeds are rebuilt from the old
//     config and started (each skips what its subscribers finished), and
//     the reload fails: the daemon runs on unchanged.
//   - Counters are carried into the restarted feed (never reset).
//   - A changed processor's dead letters moved aside with its state (its
//     target changed) are given up as a purge is: counted in released of
//     its feed, with an entry in losses.jsonl (giveUpAside).
//   - A change of instance changes every processor whose type puts it in
//     an engine-side identity (sink.Type.Instance: kafka, nats, postgres):
//     its feed restarts and builds it with the new instance. instance is
//     not a target, so their state is kept.
//   - A removed processor that did not finish what it was given holds the
//     feed: its lines are recorded in dataDir/state/removed.json and, until
//     POST /admin/release/<feed>/<name>, the restarted feed acknowledges
//     nothing (the pointer stays; the window fills and the feed pauses)
//     and reports stalled "removed subscriber <name> holds N lines". The
//     release counts N in released (a losses ledger entry: lossless false).
//   - status.listen moves by binding the new address first; the other
//     status settings (token, protectRead, maxConnections) apply to the
//     running server otherwise (from its next request, or connection).
//     Other status.tls files are loaded before anything changes (a set
//     that does not load fails the reload) and served from the next
//     handshake once the reload succeeded; turning status.tls on or off is
//     a reload error (restart).
//   - log.level and log.format apply from the end of the reload on
//     (Options.SetLog; `tailfeed run` passes its logger's switch).

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"tailfeed/config"
	"tailfeed/feed"
	"tailfeed/internal/datadir"
	"tailfeed/internal/fileutil"
	"tailfeed/internal/tlsconfig"
	"tailfeed/pointer"
	"tailfeed/processor"
	"tailfeed/sink"
	"tailfeed/source/file"
	"tailfeed/status"
)

// reloadState is feed.status's "config".
type reloadState struct {
	mu         sync.Mutex
	loadedAt   time.Time
	ok, failed uint64
	lastError  *string
}

func (d *Daemon) reloadCounts() (ok, failed uint64) {
	d.rl.mu.Lock()
	defer d.rl.mu.Unlock()
	return d.rl.ok, d.rl.failed
}

// withConfig adds the top-level "config" to a report.
func (d *Daemon) withConfig(r status.Report) status.Report {
	cfg := d.config()
	d.rl.mu.Lock()
	defer d.rl.mu.Unlock()
	path := cfg.Name
	if path == "" {
		path = cfg.File
	}
	r.Config = &status.ConfigReport{Path: path, LoadedAt: d.rl.loadedAt.UTC().Format(time.RFC3339),
		Reloads: d.rl.ok, ReloadFailures: d.rl.failed, LastError: d.rl.lastError}
	return r
}

// feedList is the running feeds (a reload replaces the slice, never
// changes it in place).
func (d *Daemon) feedList() []*Feed {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.feeds
}

// config is the running config.
func (d *Daemon) config() *config.Config {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.cfg
}

// Reload re-reads the config file and applies the difference; on any error
// the daemon runs on unchanged (what a feed restart could not rebuild is
// logged). The error lists every FILE:LINE: message.
func (d *Daemon) Reload(ctx context.Context) error {
	d.reloadMu.Lock()
	defer d.reloadMu.Unlock()
	if d.runCtx == nil || d.runCtx.Err() != nil || d.stopped {
		return errors.New("the daemon is not running (starting or stopping)")
	}
	// Certificate files are re-read at every reload (DESIGN §12), whatever
	// else it changes; one that does not load keeps the old pair (a WARN).
	if err := d.ReloadCertificates(); err != nil {
		d.log.Warn("status.tls: certificate not re-read; the previous one stays in use", "error", err)
	}
	err := d.reload()
	d.rl.mu.Lock()
	if err != nil {
		d.rl.failed++
		msg := err.Error()
		d.rl.lastError = &msg
	} else {
		d.rl.ok++
		d.rl.lastError = nil
		d.rl.loadedAt = time.Now()
	}
	d.rl.mu.Unlock()
	if err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			d.log.Error("reload failed; running on the unchanged config", "error", line)
		}
		return err
	}
	d.log.Info("config reloaded", "config", d.config().Name)
	return nil
}

func (d *Daemon) reload() error {
	old := d.cfg
	name := old.Name
	if name == "" {
		name = old.File
	}
	// The new file is validated whole (DESIGN §12): the file's own
	// problems, the reload's rules and the checks on the file system are
	// listed together, by line. A file with problems of its own still gives
	// the config as far as it decoded, checked for the rest.
	var probs problems
	cfg, err := config.LoadPartial(name)
	if err != nil {
		var errs *config.Errors
		if !errors.As(err, &errs) {
			return err
		}
		for _, e := range *errs {
			probs.add(e.Line, e)
		}
		if cfg == nil {
			return probs.err()
		}
	}
	partial := err != nil
	if tok := os.Getenv("TAILFEED_TOKEN"); tok != "" {
		cfg.Status.Token = tok
	}
	// A partial config's dataDir is checked only if it decoded.
	if cfg.DataDir != old.DataDir && (!partial || cfg.DataDirLine > 0) {
		probs.configErr(d, cfg.DataDirLine, "dataDir",
			fmt.Errorf("cannot change at a reload (running with %s; restart to move it)", old.DataDir))
	}
	probs = append(probs, d.pathProblems(cfg)...)
	// Other status.tls files are loaded before anything changes (a pair
	// that does not load fails the reload) and served once it succeeded.
	// Turned on or off, the listener's protocol changes: a new server
	// (newTLS; nil: plain HTTP) takes the listening socket over (below).
	var certs *tlsconfig.Staged
	var newTLS *tlsconfig.Server
	toggled := false
	if ot, nt := old.Status.TLS, cfg.Status.TLS; !partial && (ot.CertFile != nt.CertFile || ot.KeyFile != nt.KeyFile || ot.ClientCAFile != nt.ClientCAFile) {
		switch {
		case (ot.CertFile == "") != (nt.CertFile == ""):
			toggled = true
			if nt.CertFile != "" {
				if newTLS, err = tlsconfig.NewServer(nt.CertFile, nt.KeyFile, nt.ClientCAFile, d.log.Named("http")); err != nil {
					probs.configErr(d, nt.Line, "status.tls", err)
				}
			}
		default:
			if certs, err = d.tls.Stage(nt.CertFile, nt.KeyFile, nt.ClientCAFile); err != nil {
				probs.configErr(d, nt.Line, "status.tls", err)
			}
		}
	}
	if err := probs.err(); err != nil {
		return err
	}
	var ln net.Listener
	sameSocket := false // ln is the running listener's socket (a TLS switch at the same address)
	if cfg.Status.Listen != old.Status.Listen {
		if ln, err = net.Listen("tcp", cfg.Status.Listen); err != nil {
			return fmt.Errorf("status listen %s: %w", cfg.Status.Listen, err)
		}
	} else if toggled {
		if ln, err = dupListener(d.ln); err != nil {
			return fmt.Errorf("status.tls: the listener cannot be switched: %w", err)
		}
		sameSocket = true
	}

	oldFeeds := map[string]*Feed{}
	for _, f := range d.feeds {
		oldFeeds[f.cfg.Name] = f
	}
	newFeeds := map[string]*config.Feed{}
	for _, fc := range cfg.Feeds {
		newFeeds[fc.Name] = fc
	}
	// Stop what goes or changes. undo lists what the stops changed on disk
	// (pointers and state moved aside, holds recorded): a reload that
	// cannot build its new feeds undoes it and restarts the old ones.
	stopped := map[string]*Feed{}
	var undo []func()
	var gaveUp []asideLoss // dead letters moved aside with a processor's state
	var asideErr error     // a move aside whose loss the ledger did not take: the reload rolls back
	var firstErr error
	type stopping struct {
		f       *Feed
		removed map[string]bool
		held    []holdEntry
		err     error
	}
	var stops []*stopping
	for _, f := range d.feeds {
		fc, keep := newFeeds[f.cfg.Name]
		if keep && sameFeed(f.cfg, fc) && sameProcessors(procsOf(old, f.cfg.Name), procsOf(cfg, fc.Name)) &&
			!instanceChanged(old, cfg, procsOf(cfg, fc.Name)) {
			continue
		}
		removed := map[string]bool{}
		if keep {
			for _, pc := range procsOf(old, f.cfg.Name) {
				if findProc(cfg, fc.Name, pc.Name) == nil {
					removed[pc.Name] = true
				}
			}
		}
		stops = append(stops, &stopping{f: f, removed: removed})
	}
	// The feeds stop together under one deadline (shutdownTimeoutMillis),
	// cut short by a stop of the daemon (SIGTERM): the stop's bound holds
	// during a reload too (DESIGN §12 "Signals").
	dctx, cancel := context.WithTimeout(d.runCtx, old.Built.ShutdownTimeout)
	var wg sync.WaitGroup
	for _, st := range stops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st.held, st.err = d.stopFeed(dctx, st.f, st.removed)
		}()
	}
	wg.Wait()
	cancel()
	for _, st := range stops {
		f := st.f
		if st.err != nil && firstErr == nil {
			firstErr = st.err
		}
		for _, e := range st.held {
			undo = append(undo, func() { d.holds.undo(e) })
		}
		stopped[f.cfg.Name] = f
		fc, keep := newFeeds[f.cfg.Name]
		if !keep {
			// Removed: stopped as at shutdown, so what its subscribers
			// finished is kept as a clean stop keeps it (added back
			// later, it re-delivers nothing).
			d.keepFinished(f, nil)
			continue
		}
		if fc.Path != f.cfg.Path {
			// What a subscriber kept across the change was given of the
			// old file and did not finish is never given to it again
			// (the new path starts as a new feed): given up, counted in
			// released and recorded ahead as a changed processor's dead
			// letters are (a rollback withdraws it, the lines re-read).
			// A glob changed to another glob keeps its per-file pointers:
			// a file still matched is re-read from its pointer, one no
			// longer matched is let go as an excluded one (README).
			// A new path naming the file the old one was reading (a
			// symlink to it, another spelling), under a strategy that
			// reads a new feed from its start: it is read again, nothing
			// given up.
			strat, _ := file.ParseStrategy(fc.ReadStrategy)
			same := (strat == file.Committed || strat == file.Earliest || strat == file.OnceEarliest) && readAgainAt(f, fc.Path, st.removed)
			for _, pc := range procsOf(old, f.cfg.Name) {
				n := f.finalOwed[pc.Name]
				if n == 0 || same || findProc(cfg, fc.Name, pc.Name) == nil || (config.IsGlob(f.cfg.Path) && config.IsGlob(fc.Path)) {
					continue
				}
				g := &asideLoss{feed: fc.Name, proc: pc.Name, lines: n, epoch: f.src.Epoch(),
					detail: fmt.Sprintf("processor %s had not finished %d lines of %s when a reload changed the feed's path to %s: given up", pc.Name, n, f.cfg.Path, fc.Path)}
				e, err := d.appendAsideLoss(g)
				if err != nil {
					if asideErr == nil {
						asideErr = fmt.Errorf("processor %s: the lines of the old path it did not finish cannot be given up: %w", pc.Name, err)
					}
					continue
				}
				g.entry = e
				gaveUp = append(gaveUp, *g)
			}
			if u := d.movePointerAside(f); u != nil {
				undo = append(undo, u)
			}
		}
		for _, pc := range procsOf(old, f.cfg.Name) {
			if npc := findProc(cfg, fc.Name, pc.Name); npc != nil && targetChanged(pc, npc) {
				// Dead letters given up written ahead: a kill -9 once the
				// ledger is aside must not leave the feed green. When the
				// losses ledger does not take them, nothing moves and the
				// reload is rolled back.
				ep := f.src.Epoch()
				u, gone, err := d.moveAsideGivingUp(cfg, pc.Name, fc.Name, ledgerFeeds(f, pc.Name),
					func(feed string) uint64 {
						if feed == fc.Name {
							return ep
						}
						return 0
					}, "")
				if err != nil && asideErr == nil {
					asideErr = fmt.Errorf("processor %s: its dead letters cannot be given up: %w", pc.Name, err)
				}
				if u != nil {
					undo = append(undo, u)
				}
				gaveUp = append(gaveUp, gone...)
			}
		}
	}
	d.recordLossesBy(time.Now().Add(ledgerStopWait)) // the stopped feeds' last deltas (a hung ledger: not waited for)
	// overtaken ends a reload the daemon's stop overtook: the stopped feeds
	// made their final commit; the others are Stop's. Nothing new is
	// started. What the stopped feeds' subscribers finished is kept, as
	// Stop keeps it. rolledBack: the reload had failed and undone what the
	// stops changed (the old config's feeds and processors, none removed).
	overtaken := func(rolledBack bool) error {
		if d.cfg != old { // (this goroutine is d.cfg's only writer)
			d.mu.Lock()
			d.cfg = old
			d.mu.Unlock()
		}
		for _, st := range stops {
			if rolledBack {
				d.keepFinished(st.f, nil)
			} else if newFeeds[st.f.cfg.Name] != nil {
				d.keepFinished(st.f, st.removed)
			}
		}
		var kept []*Feed
		for _, f := range d.feeds {
			if stopped[f.cfg.Name] == nil {
				kept = append(kept, f)
			}
		}
		d.mu.Lock()
		d.feeds = kept
		d.mu.Unlock()
		if ln != nil {
			ln.Close()
		}
		if !rolledBack {
			d.giveUpAside(gaveUp, nil) // what was moved aside stays there
		}
		return errors.New("the daemon stopped during the reload")
	}
	// A processor the old config did not name on its feed (added, added
	// back, or moved from another feed) whose stamp names another target:
	// its state is another target's (targets.go; review 28a C). Then the
	// stamps of the new config, before anything new writes (review 28a F:
	// a stamp not written rolls the reload back).
	for _, pc := range cfg.Processors {
		if findProc(old, pc.Feed, pc.Name) != nil {
			continue // on the same feed: targetChanged above
		}
		if got, err := readStamp(cfg.DataDir, pc.Name); err != nil || got == "" || got == targetStamp(pc) {
			continue
		}
		byFeed := d.orphans.feedsOf(pc.Name)
		for _, opc := range old.Processors {
			if opc.Name == pc.Name {
				byFeed = ledgerFeeds(stopped[opc.Feed], pc.Name)
			}
		}
		u, gone, err := d.moveAsideGivingUp(cfg, pc.Name, pc.Feed, byFeed, nil, "")
		if err != nil && asideErr == nil {
			asideErr = fmt.Errorf("processor %s: its dead letters cannot be given up: %w", pc.Name, err)
		}
		if u != nil {
			undo = append(undo, u)
		}
		gaveUp = append(gaveUp, gone...)
	}
	if asideErr == nil {
		u, err := d.restamp(cfg)
		undo = append(undo, u)
		asideErr = err
	}
	if d.runCtx.Err() != nil {
		return overtaken(false)
	}
	// Build what is new or changed, on the new config; start it only once
	// all of it built.
	d.mu.Lock()
	d.cfg = cfg
	d.mu.Unlock()
	var built map[string]*Feed
	err = asideErr
	if err == nil {
		var stop bool
		if built, err, stop = d.buildFeedsUnlessStopped(cfg, oldFeeds, stopped, false); stop {
			return overtaken(false)
		}
	}
	if err != nil {
		// Run on unchanged: undo what the stops changed on disk and
		// rebuild the stopped feeds from the old config (each resumes from
		// its pointer and skips what its subscribers finished).
		d.log.Error("reload: a feed could not be built (or a loss it gives up recorded); restarting the stopped feeds on the unchanged config", "error", err)
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
		d.withdrawAside(gaveUp) // the dead letters are back in their ledgers
		d.mu.Lock()
		d.cfg = old
		d.mu.Unlock()
		var stop bool
		if built, _, stop = d.buildFeedsUnlessStopped(old, oldFeeds, stopped, true); stop {
			return overtaken(true)
		}
		if ln != nil {
			ln.Close()
			ln = nil
		}
		cfg, firstErr = old, err
	}
	if cfg != old {
		// Counted in released of the feed each entry names: one this
		// reload rebuilt, or one it left running (review 28c A).
		counted := maps.Clone(built)
		if counted == nil {
			counted = map[string]*Feed{}
		}
		for name, f := range oldFeeds {
			if stopped[name] == nil && counted[name] == nil {
				counted[name] = f
			}
		}
		d.giveUpAside(gaveUp, counted)
	}
	var feeds []*Feed
	for _, fc := range cfg.Feeds {
		f, ok := oldFeeds[fc.Name]
		if ok && stopped[fc.Name] == nil {
			feeds = append(feeds, f)
			continue
		}
		nf := built[fc.Name]
		if nf == nil {
			continue
		}
		switch {
		case cfg == old:
			d.log.Info("feed restarted with its unchanged settings", "feed", fc.Name, "path", fc.Path)
		case ok:
			d.log.Info("feed restarted with its new settings", "feed", fc.Name, "path", fc.Path)
		default:
			d.log.Info("feed added", "feed", fc.Name, "path", fc.Path)
		}
		d.dropKeptOf(nf)
		nf.start(d.runCtx)
		feeds = append(feeds, nf)
	}
	if cfg != old {
		for name := range stopped {
			if newFeeds[name] == nil {
				d.log.Info("feed removed", "feed", name)
			}
		}
	}
	if cfg != old {
		// The new status settings and log apply with the new config (a
		// rolled-back reload keeps the old ones).
		if certs != nil {
			d.tls.Use(certs)
		}
		if ln == nil {
			status.Reconfigure(d.srv, cfg.Status.Token, cfg.Status.ProtectRead, cfg.Status.MaxConnections)
		}
		if d.opts.SetLog != nil && cfg.Log != old.Log {
			d.opts.SetLog(cfg.Log)
		}
	}
	d.orphans.refresh(d.cfg) // a removed processor's dead letters still count
	var oldSrv *http.Server
	d.mu.Lock()
	d.feeds = feeds
	if ln != nil {
		oldSrv = d.srv
		// No request after this one on the old server's connections: the
		// reload's answer closes its connection, idle ones close now (a
		// client kept alive would go on with the old protocol or address).
		oldSrv.SetKeepAlivesEnabled(false)
		if toggled {
			d.tls = newTLS
		}
		if sameSocket {
			// The old server stops accepting (its descriptor of the socket
			// closed; what it serves now finishes, below) before the new
			// one accepts: a connection meanwhile waits in the backlog.
			d.ln.Close()
		}
		d.srv, d.ln = d.newServer(cfg), ln
		d.serve(d.srv, ln)
	}
	d.mu.Unlock()
	if oldSrv != nil {
		if sameSocket {
			d.log.Info("status server switched", "listen", ln.Addr().String(), "scheme", d.Scheme())
		} else {
			d.log.Info("status server moved", "from", old.Status.Listen, "to", ln.Addr().String())
		}
		// The reload request itself may be on the old server: shut it down
		// once this handler returned.
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			oldSrv.Shutdown(ctx)
		}()
	}
	return firstErr
}

// dupListener is another listener on ln's socket (its own descriptor:
// closing ln leaves the socket listening through it).
func dupListener(ln net.Listener) (net.Listener, error) {
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		return nil, fmt.Errorf("not a TCP listener (%T)", ln)
	}
	f, err := tl.File()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return net.FileListener(f)
}

// buildFeedsUnlessStopped is buildFeeds, given up when the daemon's stop
// begins before it returned (a sink whose engine does not answer can take
// its timeoutMillis to build: DESIGN §12 bounds the stop, not the build;
// what the build still makes is closed once it returned): stop true.
func (d *Daemon) buildFeedsUnlessStopped(cfg *config.Config, oldFeeds, stopped map[string]*Feed, all bool) (map[string]*Feed, error, bool) {
	type result struct {
		built map[string]*Feed
		err   error
	}
	done := make(chan result, 1)
	go func() {
		built, err := d.buildFeeds(cfg, oldFeeds, stopped, all)
		done <- result{built, err}
	}()
	select {
	case r := <-done:
		return r.built, r.err, false
	case <-d.runCtx.Done():
		go func() {
			r := <-done
			for _, f := range r.built {
				f.close()
			}
		}()
		return nil, nil, true
	}
}

// buildFeeds builds (does not start) every feed of cfg that is new or was
// stopped, each inheriting its stopped instance's counters and skipping
// what its subscribers finished. Unless all is set, the first failure
// closes what was built and is returned; with all set, a feed that does not
// build is logged and left out (the rollback of a failed reload).
func (d *Daemon) buildFeeds(cfg *config.Config, oldFeeds, stopped map[string]*Feed, all bool) (map[string]*Feed, error) {
	built := map[string]*Feed{}
	var firstErr error
	for _, fc := range cfg.Feeds {
		f, ok := oldFeeds[fc.Name]
		if ok && stopped[fc.Name] == nil {
			continue
		}
		if ok {
			d.skips = skipsFor(f, procsOf(cfg, fc.Name))
			d.prev = prevSinksOf(f, fc)
			d.resume, d.resumes = resumeFor(f, fc, procsOf(cfg, fc.Name))
		}
		nf, err := d.buildFeed(cfg, fc)
		d.skips, d.prev, d.resume, d.resumes = nil, nil, nil, nil
		if err != nil {
			err = fmt.Errorf("feed %s: %w", fc.Name, err)
			if !all {
				for _, b := range built {
					b.close()
				}
				return nil, err
			}
			d.log.Error("reload: feed not restarted", "feed", fc.Name, "error", err)
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if ok {
			nf.inherit(f)
		}
		built[fc.Name] = nf
	}
	return built, firstErr
}

// pathProblems refuses, in cfg (the running one at the start, or one read
// at a reload, where they are reload errors), every feed whose path is a
// directory (DESIGN §12 "Validation": an error at run, exit 2, naming it)
// and every path that is a sink's output or tailfeed's standard output
// on the file system, every file sink output that is a directory, and
// every file a processor names (its tls, its type's own) that does not
// load. `validate` checks the file only, so it accepts such
// a config. Anything else that is not a regular file, and a directory
// that appears later, is the source's to report (the feed goes FAILED).
// cfg may be a partial config (config.LoadPartial): a path that did not
// decode is empty and checked for nothing.
func (d *Daemon) pathProblems(cfg *config.Config) problems {
	var probs problems
	for i, fc := range cfg.Feeds {
		if fc.Path == "" || config.IsGlob(fc.Path) {
			continue // a glob's matches are checked one by one (DESIGN §10)
		}
		if fi, err := os.Stat(fc.Path); err == nil && fi.IsDir() {
			probs.configErr(d, max(fc.PathLine, fc.Line), fmt.Sprintf("feeds[%d].path", i),
				fmt.Errorf("%s is a directory; a feed tails one file (feed %q)", fc.Path, fc.Name))
		}
	}
	// A feed path that is a sink's output through a symlink or a hard link
	// (DESIGN §10): the output read back and written again without end.
	for _, bad := range config.CheckOutputInputs(cfg) {
		probs.configErr(d, bad.Line, bad.Key, errors.New(bad.Msg))
	}
	for _, bad := range config.CheckOutputOutputs(cfg) {
		probs.configErr(d, bad.Line, bad.Key, errors.New(bad.Msg))
	}
	for i, pc := range cfg.Processors {
		// A file sink's output that is a directory is refused like a
		// feed's (DESIGN §12 "a path that is a directory is an error at
		// run, exit 2, naming it"), not a build error without a line.
		if o := pc.OutputPath(); o != "" {
			if fi, err := os.Stat(o); err == nil && fi.IsDir() {
				probs.configErr(d, max(pc.PathLine, pc.Line), fmt.Sprintf("processors[%d].path", i),
					fmt.Errorf("%s is a directory; a %s processor writes one file (processor %q)", o, pc.Type, pc.Name))
			}
		}
		// The files a processor's tls names are read here too, so a
		// missing or bad one is a config error at its line (exit 2 at a
		// start, a rejected reload naming it), not an error of the feed's
		// build without one; so are those its type's own keys name
		// (sink.Type.Files).
		if typ, ok := sink.Lookup(pc.Type); ok && typ.Files != nil {
			if key, line, err := typ.Files(pc); err != nil {
				probs.configErr(d, line, fmt.Sprintf("processors[%d].%s", i, key), err)
			}
		}
		t := pc.TLS
		if t.Line == 0 {
			continue
		}
		if _, err := tlsconfig.Client(tlsconfig.Files{CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile}, nil); err != nil {
			probs.configErr(d, t.Line, fmt.Sprintf("processors[%d].tls", i), err)
		}
	}
	if so := stdoutFiles(cfg); len(so) > 0 {
		for i, fc := range cfg.Feeds {
			if fc.Path == "" || config.IsGlob(fc.Path) {
				continue
			}
			if dev, ino, err := fileutil.DevInoPath(fc.Path); err == nil && (file.FileID{Dev: dev, Ino: ino}) == so[0] {
				probs.configErr(d, max(fc.PathLine, fc.Line), fmt.Sprintf("feeds[%d].path", i),
					fmt.Errorf("%s is tailfeed's standard output, which a stdout processor writes; a feed cannot read what a sink writes", fc.Path))
			}
		}
	}
	return probs
}

// awaitRun waits for f's source to end its run; once the daemon is
// stopping, runWait at most more: a source stuck in a step that does not
// return is then left as it is (false, logged), so that a reload does not
// hold the stop past its bound.
func (d *Daemon) awaitRun(f *Feed) bool {
	select {
	case <-f.runDone:
		return true
	case <-d.runCtx.Done():
	}
	t := time.NewTimer(runWait)
	defer t.Stop()
	select {
	case <-f.runDone:
		return true
	case <-t.C:
		d.log.Error("feed's source did not stop during a reload the daemon's stop cut short; left without its drain and final commit (what it read since its last commit is read again at the next start)",
			"feed", f.cfg.Name)
		return false
	}
}

// stopFeed stops one feed as at shutdown. A removed (named) pointer-holding
// subscriber that did not finish what it was given becomes a hold.
func (d *Daemon) stopFeed(ctx context.Context, f *Feed, removed map[string]bool) (held []holdEntry, _ error) {
	f.cancelSrc()
	if !d.awaitRun(f) {
		f.stopGroups(time.Now().Add(runWait))
		return nil, fmt.Errorf("feed %s: its source did not stop (a step that does not return: a losses ledger write or fsync, a read); left without its drain and final commit", f.cfg.Name)
	}
	f.src.Drain(ctx)
	f.drainBestEffort(ctx)
	first := f.stopGroups(time.Now().Add(abandonAfter))
	// What each subscriber finished, as places in the file, one per epoch:
	// a glob feed's streams interleave, and each is re-read from its own
	// pointer (DESIGN §10). Read while nothing polls the window (a glob's
	// pump may until its Close).
	var all []feed.Mark
	var last feed.Mark
	done := make([][]feed.Mark, len(f.groups))
	f.finalUnpos = map[string]bool{}
	f.quiet(func() {
		all, last = f.pub.Marks(-1, 0), f.pub.Through(-1, 0)
		for i, g := range f.groups {
			done[i] = f.finishedMarks(i, g)
			// Late lines without a position it was given and did not
			// finish: this instance's (a best-effort queue finished or
			// counted its own), or an earlier one's it has not been given
			// again (owed, carried whatever the policy now: review 20c A,
			// 20d A/B).
			q := g.Queue()
			if (!q.BestEffort() && f.pub.UnpositionedAfter(i, q.AckPoint())) || (f.owedUnpos[g.Name()] && f.owedLeft(g) > 0) {
				f.finalUnpos[g.Name()] = true
			}
		}
	})
	f.finalOwed = map[string]uint64{}
	for _, g := range f.groups {
		if !g.Queue().BestEffort() {
			f.finalOwed[g.Name()] = f.unfinished(g)
			continue
		}
		// A best-effort queue finished or counted what this instance gave
		// it; what an earlier instance gave it (before its policy became
		// best-effort) and this one did not give again is carried, or,
		// the subscriber removed, dropped.
		left := f.owedLeft(g)
		switch {
		case left == 0:
		case removed[g.Name()]:
			g.Queue().LeftAtStop(left)
			d.log.Warn("removed best-effort subscriber had not been given again lines an earlier instance gave it; counted dropped",
				"feed", f.cfg.Name, "subscriber", g.Name(), "lines", left)
		default:
			f.finalOwed[g.Name()] = left
		}
	}
	for _, g := range f.groups {
		n := f.finalOwed[g.Name()]
		if !removed[g.Name()] || n == 0 {
			continue
		}
		// Its places: every line published, also by the instances before
		// this one (its count has their lines it did not finish): added
		// back, it re-reads none of what it holds.
		e := holdEntry{Feed: f.cfg.Name, Subscriber: g.Name(), Lines: n, Through: markOf(last), Throughs: marksOf(f.publishedMarks(all))}
		if err := d.holds.add(e); err != nil && first == nil {
			first = err
		} else if err == nil {
			held = append(held, e)
		}
		d.log.Warn("removed subscriber holds lines it did not finish; the feed stalls until POST /admin/release/"+f.cfg.Name+"/"+g.Name(),
			"feed", f.cfg.Name, "subscriber", g.Name(), "lines", n)
	}
	f.finalAcked, f.finalSeq = f.pub.Acknowledged(), f.pub.Sequence()
	// The restarted feed's instance skips the re-read up to what each
	// subscriber finished (skipsFor; finishedMarks), a new subscriber
	// every line published before it was added (publishedMarks: also what
	// earlier instances published that this one had not re-read yet).
	f.finalAck = map[string][]feed.Mark{"": f.publishedMarks(all)}
	for i, g := range f.groups {
		f.finalAck[g.Name()] = done[i]
	}
	f.final = f.snapshot(false)
	f.finalRead, f.finalBytes = f.src.LinesRead(), f.src.BytesRead()
	f.finalPaused = f.pub.PausedTotal().Seconds()
	d.syncFinalLosses(f, time.Now().Add(ledgerStopWait))
	err := f.src.Close()
	if err != nil && first == nil {
		first = fmt.Errorf("feed %s: %w", f.cfg.Name, err)
	}
	return held, first
}

// quiet runs fn while nothing polls or publishes to the feed's publisher
// (its source stopped; a glob's mux may still poll until Close).
func (f *Feed) quiet(fn func()) {
	if f.glob != nil {
		f.glob.Quiet(fn)
		return
	}
	fn()
}

// finishedMarks is what f's group i finished, one place per epoch: the
// skip it started with — what it finished before (a reload's skip, a
// clean stop's kept marks) that this instance's re-read may not have
// reached yet — and, where further, what it finished in this instance:
// what its queue acknowledged or, for a best-effort queue, every line this
// instance published (finished, or counted dropped at the publish or as
// it stopped: a line counted lost is never delivered after all). Not what
// earlier instances published: a subscriber not given those lines again
// in this instance has not finished them. Call it as Marks: once the
// source stopped publishing and polling (f.quiet).
func (f *Feed) finishedMarks(i int, g *processor.Group) []feed.Mark {
	q := g.Queue()
	if q.BestEffort() {
		return furthestMarks(g.SkipMarks(), f.pub.Marks(-1, 0))
	}
	return furthestMarks(g.SkipMarks(), f.pub.Marks(i, q.AckPoint()))
}

// unfinished is how many lines group g's subscriber was given and did not
// finish: this instance's, and those an earlier instance (before a reload)
// gave it that this one has not given it again yet (a re-read stopped
// short by a full window).
func (f *Feed) unfinished(g *processor.Group) uint64 {
	q := g.Queue()
	var n uint64
	if q.Position() > q.AckPoint() {
		n = q.Position() - q.AckPoint()
	}
	return n + f.owedLeft(g)
}

// owedLeft is how many lines an earlier instance gave group g's subscriber
// without its finishing them that this instance has not given it again.
func (f *Feed) owedLeft(g *processor.Group) uint64 {
	prev := f.owed[g.Name()]
	return prev - min(prev, g.Queue().OldGiven())
}

// publishedMarks is every line the feed published, one place per epoch:
// this instance's (mine: Marks(-1, 0)) and, where further, its earlier
// instances' (before a reload) that this instance's re-read has not
// reached yet — where a subscriber added now starts. A hold's places are
// this instance's only, as its count of lines is (stopFeed).
func (f *Feed) publishedMarks(mine []feed.Mark) []feed.Mark {
	return furthestMarks(f.published, mine)
}

// furthestMarks is a's and b's places by epoch, the further of the two
// where both name one, sorted by epoch.
func furthestMarks(a, b []feed.Mark) []feed.Mark {
	if len(a) == 0 {
		return b
	}
	by := feed.MarksByEpoch(slices.Concat(a, b))
	out := make([]feed.Mark, 0, len(by))
	for e, pos := range by {
		out = append(out, feed.Mark{Epoch: e, Position: pos, OK: true})
	}
	slices.SortFunc(out, func(x, y feed.Mark) int { return cmp.Compare(x.Epoch, y.Epoch) })
	return out
}

// skipsFor is, for each processor of the restarted feed fc, where in its
// file the lines it re-reads from the pointer stop being finished without
// processing: a kept or changed processor skips what it had finished (it
// receives first the lines it did not finish), a new one (under "") every
// line the stopped instance and those before it had published (it
// subscribes from the next line) — unless it is one a hold names, added
// back: it skips the hold's places (buildGroup). The
// place is (epoch, position), so a re-read that is not the same lines (a
// copytruncate, another path, a failed final commit that leaves the
// pointer further back) skips exactly what was finished, never more.
func skipsFor(old *Feed, procs []*config.Processor) map[string][]feed.Mark {
	out := map[string][]feed.Mark{"": old.finalAck[""]}
	for _, pc := range procs {
		if m, ok := old.finalAck[pc.Name]; ok {
			out[pc.Name] = m
		}
	}
	return out
}

// prevSinksOf is, per processor, its sink in the stopped instance old of
// feed fc (sink.Env.Previous: a pull subscriber keeps its deliveries in
// flight), unless fc reads another path (a new feed); none for a group the
// stop abandoned (stopGroups).
func prevSinksOf(old *Feed, fc *config.Feed) map[string]any {
	if old.cfg.Path != fc.Path {
		return nil
	}
	out := map[string]any{}
	for _, g := range old.groups {
		if g.Abandoned() {
			continue // its call may still be using it: the new instance starts without it
		}
		out[g.Name()] = g.Sink()
	}
	return out
}

// resumeFor is where the restarted instance of old's feed reads on when it
// has no pointer (every strategy but COMMITTED): its previous instance's
// in-memory pointer (file key and first bytes, epoch, position, and for a
// once-read the size it reads to), so the subscribers' skip by place works
// as it does after a re-read from a pointer: EARLIEST does not read its
// file again, a finished ONCE_EARLIEST stays finished, LATEST delivers the
// lines appended during the restart. The source takes it only when the
// file at the path is still the one read; otherwise, and when the feed's
// path or readStrategy changed (a new feed, DESIGN §12), the strategy's
// normal start. Lines published but not finished by a kept holding
// subscriber (a drain cut short) are read again from the last line it
// finished in that file (the others skip them by place). nil: none. A
// glob feed's streams likewise resume, each in its file (the second
// result: file.GlobConfig.Resumes; nil: none).
func resumeFor(old *Feed, fc *config.Feed, procs []*config.Processor) (*file.Resume, map[uint64]file.GlobResume) {
	strat, err := file.ParseStrategy(fc.ReadStrategy)
	if err != nil || strat != old.strat || strat == file.Committed || fc.Path != old.cfg.Path {
		return nil, nil
	}
	if old.glob != nil {
		return nil, old.glob.Resumes()
	}
	src, ok := old.src.(*file.Source)
	if !ok {
		return nil, nil
	}
	r := src.ResumePoint()
	if r == nil {
		return nil, nil
	}
	c := *r
	for _, g := range old.groups {
		q := g.Queue()
		if q.BestEffort() || q.Position() <= q.AckPoint() || !slices.ContainsFunc(procs, func(pc *config.Processor) bool { return pc.Name == g.Name() }) {
			continue
		}
		at := c.From
		for _, m := range old.finalAck[g.Name()] {
			if m.OK && m.Epoch == c.Epoch && m.Position >= c.From {
				at = m.Position
			}
		}
		if at < c.Offset {
			c.Offset, c.InLong = at, false
		}
	}
	return &c, nil
}

// movePointerAside renames a stopped feed's pointer (and epoch history) to
// feeds/<feed>.ptr.<epoch>.old: its new path starts as a new feed. It
// returns how to put them back (nil: nothing moved).
func (d *Daemon) movePointerAside(f *Feed) func() {
	epoch := status.Hex(f.src.Epoch())
	if f.final.Pointer != nil {
		epoch = status.Hex(f.final.Pointer.Epoch)
	}
	from := datadir.Pointer(d.cfg.DataDir, f.cfg.Name)
	if _, err := os.Stat(from); err != nil {
		return nil
	}
	to := datadir.PointerAside(d.cfg.DataDir, f.cfg.Name, epoch)
	if err := os.Rename(from, to); err != nil {
		d.log.Error("reload: pointer not moved aside", "feed", f.cfg.Name, "error", err)
		return nil
	}
	ep := datadir.Epochs(d.cfg.DataDir, f.cfg.Name)
	epMoved := false
	if _, err := os.Stat(ep); err == nil {
		epMoved = os.Rename(ep, ep+"."+epoch+".old") == nil
	}
	d.log.Warn("feed path changed: its pointer moved aside; the new path starts as a new feed", "feed", f.cfg.Name,
		"pointer", to)
	return func() {
		os.Remove(from) // what a failed build may have created
		if err := os.Rename(to, from); err != nil {
			d.log.Error("reload: pointer not moved back", "feed", f.cfg.Name, "error", err)
		}
		if epMoved {
			os.Remove(ep)
			os.Rename(ep+"."+epoch+".old", ep)
		}
	}
}

// moveStateAside moves a processor's durable state to
// state/<processor>.<time>.old/ (its target changed). It returns how to
// put it back (nil: nothing moved). ahead, when the dead-letter ledger is
// among the files, runs with the directory before anything is moved (the
// loss it gives up is recorded first); when it fails nothing is moved.
func (d *Daemon) moveStateAside(name string, ahead func(dir string) error) func() {
	var files []string
	asideName := map[string]string{} // file → its name in the aside directory (its base name)
	for _, p := range []string{datadir.Record(d.cfg.DataDir, name), datadir.CountState(d.cfg.DataDir, name),
		datadir.DeadLetters(d.cfg.DataDir, name), datadir.CountStateOld(d.cfg.DataDir, name)} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			files = append(files, p)
			asideName[p] = filepath.Base(p)
		}
	}
	if old := datadir.CountStateOld(d.cfg.DataDir, name); asideName[old] != "" {
		// An earlier tailfeed's count state, never moved (the processor
		// was no count since): a count opened later would take it.
		asideName[old] = "earlier-" + filepath.Base(old)
	}
	if len(files) == 0 {
		return nil
	}
	dir := datadir.StateAside(d.cfg.DataDir, name, time.Now().UTC().Format("20060102T150405.000000000Z"))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		d.log.Error("state not moved aside", "processor", name, "error", err)
		return nil
	}
	if ahead != nil && slices.Contains(files, datadir.DeadLetters(d.cfg.DataDir, name)) {
		if err := ahead(dir); err != nil {
			d.log.Error("state not moved aside: the loss of its dead letters cannot be recorded", "processor", name, "error", err)
			os.Remove(dir)
			return nil
		}
	}
	var moved []string
	for _, p := range files {
		if err := os.Rename(p, filepath.Join(dir, asideName[p])); err != nil {
			d.log.Error("state not moved aside", "processor", name, "file", p, "error", err)
		} else {
			moved = append(moved, p)
		}
	}
	d.log.Warn("processor target changed: its state moved aside; it starts as new", "processor", name, "to", dir)
	return func() {
		for _, p := range moved {
			os.Remove(p) // what a failed build may have created
			if err := os.Rename(filepath.Join(dir, asideName[p]), p); err != nil {
				d.log.Error("reload: state not moved back", "processor", name, "file", p, "error", err)
			}
		}
		os.Remove(dir)
	}
}

// readAgainAt reports whether a new feed reading path from its start gives
// f's subscribers again every line they were given and did not finish:
// path names the file f's single-file source had open when it stopped
// (this instance's, not a pointer left on disk) — or, for a glob feed, a
// file one of its streams read in this instance, under the epoch its
// stream had at its close —, that file still begins with the bytes read
// under that epoch and is as long as what was published of it (not cut or
// rewritten in place: a copytruncate keeps the inode), and no subscriber left a
// line unfinished in another file (a rotated-away one; for a glob, any
// other matched file).
func readAgainAt(f *Feed, path string, removed map[string]bool) bool {
	if config.IsGlob(path) || f.finalAck == nil {
		return false
	}
	for name, unpos := range f.finalUnpos {
		// A kept subscriber's unfinished late lines of a file let go have
		// no place any mark names: never read again from a path (review
		// 20b B). A removed one's are its hold's (review 20c C).
		if unpos && !removed[name] {
			return false
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		return false
	}
	d, i, err := fileutil.DevInoPath(path)
	if err != nil {
		return false
	}
	var epoch, head uint64
	var headLen int
	switch src := f.src.(type) {
	case *file.Source:
		dev, ino, open := src.FileIdentity()
		if !open || d != dev || i != ino {
			return false
		}
		epoch = src.Epoch()
		var ok bool
		if headLen, head, ok = src.HeadRead(epoch); !ok {
			return false
		}
	case *file.Glob:
		var ok bool
		if epoch, headLen, head, ok = src.EpochOf(pointer.FileKey(d, i)); !ok {
			return false
		}
	default:
		return false
	}
	// Still the content read under the epoch: not truncated in place or
	// rewritten since (review 20a A-C: a copytruncate keeps the inode).
	if !file.PathHeadIs(path, headLen, head) {
		return false
	}
	published := feed.MarksByEpoch(f.finalAck[""])
	if st.Size() < published[epoch] {
		return false
	}
	for name, ms := range f.finalAck {
		if name == "" {
			continue
		}
		fin := feed.MarksByEpoch(ms)
		for e, pos := range published {
			if e != epoch && fin[e] < pos {
				return false
			}
		}
	}
	return true
}

// asideLoss is a changed processor's dead letters that a reload moved
// aside with its state.
type asideLoss struct {
	feed, proc, dir string
	lines, epoch    uint64
	detail          string    // what was given up ("": dead letters moved aside to dir)
	entry           LossEntry // as written to losses.jsonl (appendAsideLoss)
}

// ledgered is the entries in the ledger of processor name of a stopped
// feed (what its deadLettered counted).
func ledgered(f *Feed, name string) uint64 {
	for _, g := range f.groups {
		if g.Name() == name {
			return uint64(g.Ledgered())
		}
	}
	return 0
}

// appendAsideLoss records in losses.jsonl, before the ledger is moved
// aside, that g's dead letters are given up as a purge gives them up
// (DESIGN §6: purged entries count in released; §7: losses outlive the
// run): the feed stays lossless false, across restarts (a kill -9 before
// the reload ends included), until DELETE /admin/losses/<feed>. It returns
// the entry (withdrawAside removes it again if the reload is rolled back),
// or the error of a ledger that did not take it (its entry withdrawn).
func (d *Daemon) appendAsideLoss(g *asideLoss) (LossEntry, error) {
	detail := g.detail
	if detail == "" {
		detail = fmt.Sprintf("dead letters of processor %s moved aside to %s (its target changed at a reload): %d", g.proc, g.dir, g.lines)
	}
	e := LossEntry{V: lossFormat, Feed: g.feed, Counter: "released", Amount: g.lines,
		Epoch: status.Hex(g.epoch), Time: time.Now().UTC().Format(time.RFC3339Nano), Detail: detail}
	d.losses.mu.Lock()
	defer d.losses.mu.Unlock()
	if err := d.losses.appendLocked([]LossEntry{e}); err != nil {
		if werr := d.losses.withdrawLocked([]LossEntry{e}); werr != nil {
			d.log.Error("losses ledger: the entry of a move aside refused could not be withdrawn", "processor", g.proc, "error", werr)
		}
		return LossEntry{}, err
	}
	return e, nil
}

// withdrawAside removes the losses.jsonl entries of a reload rolled back:
// its dead letters are back in their ledgers (deadLettered counts them).
func (d *Daemon) withdrawAside(gone []asideLoss) {
	if len(gone) == 0 {
		return
	}
	var es []LossEntry
	for _, g := range gone {
		es = append(es, g.entry)
	}
	d.losses.mu.Lock()
	err := d.losses.withdrawLocked(es)
	d.losses.mu.Unlock()
	if err != nil {
		d.log.Error("reload rolled back: its released entries stay in losses.jsonl (DELETE /admin/losses clears them)", "error", err)
	}
}

// giveUpAside counts dead letters moved aside (recorded in losses.jsonl
// ahead: appendAsideLoss) in released of their feed's new instance (in
// built; none when the daemon stops), with a WARN. A reload that is
// rolled back puts them back and gives nothing up (withdrawAside).
func (d *Daemon) giveUpAside(gone []asideLoss, built map[string]*Feed) {
	for _, g := range gone {
		if nf := built[g.feed]; nf != nil {
			nf.asideReleased.Add(g.lines)
		}
		if g.dir == "" {
			d.log.Warn("lines of the old path given up at a path change: counted in released (losses.jsonl) until DELETE /admin/losses/"+g.feed,
				"feed", g.feed, "processor", g.proc, "lines", g.lines)
			continue
		}
		d.log.Warn("dead letters moved aside with the state are given up: counted in released (losses.jsonl) until DELETE /admin/losses/"+g.feed,
			"feed", g.feed, "processor", g.proc, "lines", g.lines, "to", g.dir)
	}
}

// sameFeed compares two feeds' settings (not their lines).
func sameFeed(a, b *config.Feed) bool {
	x, y := *a, *b
	x.Built, y.Built = config.FeedBuilt{}, config.FeedBuilt{}
	return sameSettings(reflect.ValueOf(x), reflect.ValueOf(y))
}

// sameProcessor compares two processors' settings (not their lines).
func sameProcessor(a, b *config.Processor) bool {
	x, y := *a, *b
	x.Built, y.Built = config.ProcessorBuilt{}, config.ProcessorBuilt{}
	return sameSettings(reflect.ValueOf(x), reflect.ValueOf(y))
}

// sameSettings is reflect.DeepEqual of two decoded config values (no
// cycles) but for what they keep for their messages only: the line numbers
// (an int field named Line or ending in "Line"/"line": the entry's, a file
// processor's path key, a tls key, an engine sink's own keys) and the
// fields tagged `reload:"-"` (an engine sink's key names, which hold the
// processor's index: "processors[1].dsn"). Compared too, a comment or an
// entry added above a feed made every line (or index) after it differ, and
// the reload restarted that feed (its lines published again from its
// pointer) though nothing of it changed.
func sameSettings(x, y reflect.Value) bool {
	if x.IsValid() != y.IsValid() || (x.IsValid() && x.Type() != y.Type()) {
		return false
	}
	if !x.IsValid() {
		return true
	}
	switch x.Kind() {
	case reflect.Pointer, reflect.Interface:
		if x.IsNil() || y.IsNil() {
			return x.IsNil() == y.IsNil()
		}
		return sameSettings(x.Elem(), y.Elem())
	case reflect.Struct:
		for i := range x.NumField() {
			if f := x.Type().Field(i); f.Tag.Get("reload") == "-" ||
				(f.Type.Kind() == reflect.Int && (strings.HasSuffix(f.Name, "Line") || strings.HasSuffix(f.Name, "line"))) {
				continue
			}
			if !sameSettings(x.Field(i), y.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Slice:
		if x.IsNil() != y.IsNil() {
			return false
		}
		fallthrough
	case reflect.Array:
		if x.Len() != y.Len() {
			return false
		}
		for i := range x.Len() {
			if !sameSettings(x.Index(i), y.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if x.IsNil() != y.IsNil() || x.Len() != y.Len() {
			return false
		}
		for _, k := range x.MapKeys() {
			if v := y.MapIndex(k); !v.IsValid() || !sameSettings(x.MapIndex(k), v) {
				return false
			}
		}
		return true
	case reflect.Bool:
		return x.Bool() == y.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return x.Int() == y.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return x.Uint() == y.Uint()
	case reflect.Float32, reflect.Float64:
		return x.Float() == y.Float()
	case reflect.String:
		return x.String() == y.String()
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		return x.IsNil() && y.IsNil() // as reflect.DeepEqual: equal only when both nil
	}
	return false // complex: none in a config
}

func sameProcessors(a, b []*config.Processor) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameProcessor(a[i], b[i]) {
			return false
		}
	}
	return true
}

func procsOf(cfg *config.Config, feed string) []*config.Processor {
	var out []*config.Processor
	for _, pc := range cfg.Processors {
		if pc.Feed == feed {
			out = append(out, pc)
		}
	}
	return out
}

func findProc(cfg *config.Config, feed, name string) *config.Processor {
	for _, pc := range procsOf(cfg, feed) {
		if pc.Name == name {
			return pc
		}
	}
	return nil
}

// targetChanged: a processor's durable state belongs to its target (its
// sink type's Target: file path, webhook url, postgres dsn/table, kafka
// topic/offsetsTopic, nats stream/subject); another type is another
// target. instance is none of them: a change of it alone keeps the state.
func targetChanged(a, b *config.Processor) bool {
	if a.Type != b.Type {
		return true
	}
	if t, ok := sink.Lookup(a.Type); ok && t.Target != nil {
		return t.Target(a) != t.Target(b)
	}
	return false
}

// instanceChanged: cfg's instance is not old's and one of procs puts it in
// an engine-side identity (its sink type's Instance): those processors
// changed (DESIGN §12), and their feed restarts to build them anew.
func instanceChanged(old, cfg *config.Config, procs []*config.Processor) bool {
	if old.Instance == cfg.Instance {
		return false
	}
	for _, pc := range procs {
		if t, ok := sink.Lookup(pc.Type); ok && t.Instance {
			return true
		}
	}
	return false
}

// carried is what a feed's earlier instances counted this run.
type carried struct {
	loss                                                status.LossCounters
	downgraded, oversized, pauses, linesRead, bytesRead uint64
	lostTails, lostBytes                                uint64
	pausedSeconds                                       float64
	// seq is the sequences the earlier instances published: the restarted
	// instance's publisher numbers on from it (Publisher.StartAt), so
	// sequence, acknowledged, the sequence a processor sees, and every
	// subscriber's position and dispatched never go back (each re-read
	// line is published again under a new sequence).
	seq, commitFailures uint64
	failures            map[string]uint64 // per subscriber
	dispatched          map[string]uint64 // per pointer-holding subscriber: its ack point at the earlier instance's stop
	acked               uint64            // the acknowledged sequence the earlier instance reported at its stop
	// given is, per subscriber kept from the earlier instance, the
	// position it reported at its stop (the lines given to its queue this
	// run): its position in this instance numbers on from it (DESIGN §7:
	// position and dispatched count the lines given to its queue this run;
	// a processor new at a reload has none, §12: it subscribes from the
	// next line). Not the sequences published since it joined: a refusing
	// (BLOCK_WITH_DEADLINE) or best-effort subscriber was not given every
	// line (audit 9B).
	given map[string]uint64
	// commits is the commit counter of the pointer an earlier instance
	// renamed aside at a change of path: feed.status's pointer.commits and
	// tailfeed_feed_commits_total number on from it (DESIGN §12: counters
	// are never reset by a reload).
	commits uint64
}

// reportedAcked is the acknowledged sequence feed.status and /metrics
// report: the earlier instance's until this one acknowledges a line of its
// own (pub is this instance's, numbered on from c.seq).
func (c *carried) reportedAcked(pub uint64) uint64 {
	if pub <= c.seq {
		return min(pub, c.acked)
	}
	return pub
}

// reportedDispatched is the dispatched a subscriber reports: own is its
// ack point in this instance (lines of its queue), numbered on from c.seq;
// a kept pointer-holding subscriber that finished nothing here yet reports
// its earlier ack point (a processor new at the reload owes none of the
// earlier sequences).
func (c *carried) reportedDispatched(name string, own uint64) uint64 {
	if was, ok := c.dispatched[name]; ok && own == 0 {
		return was
	}
	return own + c.before(name)
}

// before is what a subscriber's own counts in this instance (its queue's
// lines) are numbered on from: the lines the earlier instances gave its
// queue (none for a subscriber new at the last reload).
func (c *carried) before(name string) uint64 {
	return c.given[name]
}

// inherit carries the stopped instance's counters and acknowledged losses.
func (f *Feed) inherit(old *Feed) {
	s := old.final
	c := &f.carry
	c.loss = s.Carry
	for _, sub := range s.Subscribers {
		c.loss.Dropped += sub.Dropped
		c.loss.Refused += sub.Refused
		c.loss.CompletionFailures += sub.CompletionFailures
		c.loss.Released += sub.Released
	}
	c.downgraded, c.oversized, c.pauses = s.Downgraded, s.Oversized, s.Pauses
	c.lostTails, c.lostBytes = s.LostTails, s.LostBytes
	c.linesRead = old.carry.linesRead + old.finalRead
	c.bytesRead = old.carry.bytesRead + old.finalBytes
	c.pausedSeconds = old.carry.pausedSeconds + old.finalPaused
	// unterminated is not carried: it is no counter but the bytes after
	// the last terminator now (DESIGN §4), which the restarted instance
	// reports itself (it resumes where this one stopped, or re-reads them).
	c.seq = s.SeqAfter
	f.published = old.finalAck[""]
	if old.cfg.Path == f.cfg.Path {
		// (A new path starts as a new feed: what the old file's lines
		// owed is not given again by this one's.)
		f.owed, f.owedUnpos = old.finalOwed, old.finalUnpos
	}
	for _, g := range f.groups {
		if f.owed[g.Name()] > 0 {
			g.Queue().SetPublishOld(f.published)
		}
	}
	// Numbers on: a processor sees the sequence feed.status counts. What
	// the earlier instance's pointer-holding subscribers had not finished
	// is read again under new sequences: the reported acknowledged and
	// each such subscriber's dispatched stay at what was finished until
	// the new instance finishes a line (reported, below; the publisher's
	// own acknowledged is c.seq: the window and the processors see every
	// line of this instance after it). A best-effort subscriber finished
	// or dropped every line it was given; a hold's row is no subscriber.
	f.pub.StartAt(c.seq)
	c.acked = s.Acknowledged
	c.dispatched = map[string]uint64{}
	for _, g := range old.groups {
		if g.Queue().BestEffort() {
			continue
		}
		for _, sub := range s.Subscribers {
			if sub.Queue == g.Name() {
				c.dispatched[sub.Queue] = sub.Dispatched
			}
		}
	}
	c.given = map[string]uint64{}
	for _, g := range old.groups {
		i := slices.IndexFunc(s.Subscribers, func(sub status.SubscriberSnapshot) bool { return sub.Queue == g.Name() })
		if i < 0 {
			continue
		}
		// (A best-effort subscriber's dispatched numbers on from it too:
		// what it had not finished at the stop was counted dropped then,
		// and is owed no more — its queue is drained.)
		c.given[g.Name()] = s.Subscribers[i].Position
	}
	c.commits = old.carry.commits
	if old.cfg.Path != f.cfg.Path && s.Pointer != nil {
		c.commits = s.Pointer.Commits // its pointer was renamed aside; s's count includes old.carry's
	}
	c.commitFailures = old.carry.commitFailures + old.src.CommitFailures()
	c.failures = map[string]uint64{}
	for k, v := range old.carry.failures {
		c.failures[k] = v
	}
	for _, g := range old.groups {
		c.failures[g.Name()] += g.Failures()
	}
	f.base = old.lossBase()
	// The stopped instance's losses may not be in the ledger yet (its
	// last sync failed): this instance's lossSync appends them first, and
	// its pointer, which re-reads their lines, waits for a sync.
	f.prev = old
	f.pub.OweLossSync()
}

// addCarry adds the carried counters and the holds' rows to a snapshot.
func (f *Feed) addCarry(s *status.FeedSnapshot) {
	c := f.carry
	s.Carry = c.loss
	s.Downgraded += c.downgraded
	s.Oversized += c.oversized
	s.Pauses += c.pauses
	s.LostTails += c.lostTails
	s.LostBytes += c.lostBytes
	// The publisher numbers on from c.seq (StartAt): sequence and
	// acknowledged are the feed's already. A synced commit covers at least
	// what the earlier instance acknowledged (its final commit).
	if s.Pointer != nil {
		s.Pointer.SyncedSeq = max(s.Pointer.SyncedSeq, c.seq)
		s.Pointer.CommitFailures += c.commitFailures
		s.Pointer.Commits += c.commits
	}
	s.Acknowledged = c.reportedAcked(s.Acknowledged)
	for i := range s.Subscribers {
		s.Subscribers[i].Position += c.before(s.Subscribers[i].Queue)
		s.Subscribers[i].Dispatched = c.reportedDispatched(s.Subscribers[i].Queue, s.Subscribers[i].Dispatched)
	}
	s.Carry.Released += f.orphanReleased.Load() // a removed processor's dead letters purged (orphans.go)
	s.Carry.Released += f.asideReleased.Load()  // a changed processor's dead letters moved aside (giveUpAside)
	for _, h := range f.held {
		// A removed subscriber is STOPPED (the contract's states): it holds
		// until released, then its lines count as released.
		row := status.SubscriberSnapshot{Queue: h.name, Position: h.lines, State: feed.Stopped.String()}
		if h.released.Load() {
			row.Dispatched = h.lines
			s.Carry.Released += h.lines
		} else {
			row.Stalls = true
			row.StallReason = fmt.Sprintf("removed subscriber %s holds %d lines", h.name, h.lines)
		}
		s.Subscribers = append(s.Subscribers, row)
	}
}

// hold is a removed subscriber's hold on a running feed.
type hold struct {
	name     string
	lines    uint64
	since    time.Time // when this feed began holding for it (/healthz's stall clock)
	released atomic.Bool
}

// holdEntry is one hold in dataDir/state/removed.json.
type holdEntry struct {
	Feed       string `json:"feed"`
	Subscriber string `json:"subscriber"`
	Lines      uint64 `json:"lines"`
	// Through is the last line its feed published while the subscriber was
	// gone (updated at each stop): added back, even across a restart, it
	// skips the re-read through it (DESIGN §12: adding it back re-reads
	// nothing). Throughs is the same per epoch — a glob feed's streams
	// interleave and each is re-read from its own pointer (DESIGN §10), so
	// one place for the whole feed would cover one stream only. A file
	// written before Throughs existed has Through alone.
	Through  *holdMark  `json:"through,omitempty"`
	Throughs []holdMark `json:"throughs,omitempty"`
}

type holdMark struct {
	Epoch    string `json:"epoch"`
	Position int64  `json:"position"`
}

func markOf(m feed.Mark) *holdMark {
	if !m.OK {
		return nil
	}
	return &holdMark{Epoch: status.Hex(m.Epoch), Position: m.Position}
}

func marksOf(ms []feed.Mark) []holdMark {
	var out []holdMark
	for _, m := range ms {
		if hm := markOf(m); hm != nil {
			out = append(out, *hm)
		}
	}
	return out
}

// places is the hold's Throughs, or its Through alone in a file written
// before Throughs existed.
func (e *holdEntry) places() []holdMark {
	if len(e.Throughs) == 0 && e.Through != nil {
		return []holdMark{*e.Through}
	}
	return e.Throughs
}

// holdMarksKeep bounds a hold's Throughs (the epochs published last
// are kept): beyond it, an epoch left out can only bring duplicates.
const holdMarksKeep = 4096

// mergeMarks is old's places with add's (add is newer), by epoch, the
// further of the two where both name one: a later run that stopped before
// its re-read from a held pointer reached an earlier run's place has not
// undone what that run published or finished.
func mergeMarks(old, add []holdMark) []holdMark {
	if len(old) == 0 {
		return add
	}
	out := slices.Clone(old)
	for _, m := range add {
		if i := slices.IndexFunc(out, func(o holdMark) bool { return o.Epoch == m.Epoch }); i >= 0 {
			if m.Position > out[i].Position {
				out[i] = m
			}
		} else {
			out = append(out, m)
		}
	}
	if len(out) > holdMarksKeep {
		out = out[len(out)-holdMarksKeep:]
	}
	return out
}

// throughMarks is the skip a subscriber added back while it holds feed
// starts with (none: none), one place per epoch.
func (s *holdStore) throughMarks(feedName, sub string) []feed.Mark {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.entries {
		if e.Feed != feedName || e.Subscriber != sub {
			continue
		}
		return feedMarks(e.places())
	}
	return nil
}

// holdStore is dataDir/state/removed.json.
type holdStore struct {
	mu      sync.Mutex
	path    string
	entries []holdEntry
	kept    []keptEntry
}

// keptEntry is, for a configured subscriber of a feed a removed
// subscriber's hold pins, the last line of each epoch it had finished at a
// clean stop (Throughs, as a hold's): the next start re-reads from the
// held pointer, and the subscriber skips what it finished (DESIGN §2: no
// re-delivery without a crash). After a kill -9 the marks of the last clean
// stop still hold (what they name was finished); what was finished after
// them is delivered again, as after any crash. Dropped once the feed
// starts with no hold.
type keptEntry struct {
	Feed       string     `json:"feed"`
	Subscriber string     `json:"subscriber"`
	Throughs   []holdMark `json:"throughs"`
}

func openHolds(dataDir string) (*holdStore, error) {
	s := &holdStore{path: datadir.RemovedHolds(dataDir)}
	var doc struct {
		Holds []holdEntry `json:"holds"`
		Kept  []keptEntry `json:"kept"`
	}
	if err := readStateJSON(s.path, &doc); err != nil {
		return nil, err
	}
	s.entries, s.kept = doc.Holds, doc.Kept
	return s, nil
}

// markStop records, at a clean stop of feedName while a hold pins it, the
// places (one per epoch) its instance published (all: the Throughs of
// every hold of it, the last of them published last; of a hold whose
// subscriber was added back, what it finished) and those each
// configured subscriber finished (finished: its kept marks, which the
// next start skips), merged over what earlier stops recorded, in one write.
func (s *holdStore) markStop(feedName string, all []feed.Mark, finished map[string][]feed.Mark) error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := false
	for i := range s.entries {
		if s.entries[i].Feed != feedName {
			continue
		}
		ms := all
		if own, ok := finished[s.entries[i].Subscriber]; ok {
			// Added back and configured: the lines it was given since and
			// did not finish are no part of the hold, they are read again.
			ms = own
		}
		if hms := marksOf(ms); len(hms) > 0 {
			s.entries[i].Throughs = mergeMarks(s.entries[i].places(), hms)
			changed = true
		}
	}
	for sub, ms := range finished {
		hms := marksOf(ms)
		if len(hms) == 0 {
			continue
		}
		changed = true
		i := slices.IndexFunc(s.kept, func(k keptEntry) bool { return k.Feed == feedName && k.Subscriber == sub })
		if i < 0 {
			s.kept = append(s.kept, keptEntry{Feed: feedName, Subscriber: sub, Throughs: hms})
			continue
		}
		s.kept[i].Throughs = mergeMarks(s.kept[i].Throughs, hms)
	}
	if !changed {
		return nil
	}
	return s.saveLocked()
}

// keptMarks is the skip feedName's configured subscriber sub starts with
// while a hold pins the feed (markStop; none: nil).
func (s *holdStore) keptMarks(feedName, sub string) []feed.Mark {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range s.kept {
		if k.Feed == feedName && k.Subscriber == sub {
			return feedMarks(k.Throughs)
		}
	}
	return nil
}

// dropKept forgets feedName's kept marks (it starts with no hold: its
// pointer moved on from where they matter).
func (s *holdStore) dropKept(feedName string) error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.kept)
	s.kept = slices.DeleteFunc(s.kept, func(k keptEntry) bool { return k.Feed == feedName })
	if len(s.kept) == n {
		return nil
	}
	return s.saveLocked()
}

// feedMarks parses hms (one place per epoch).
func feedMarks(hms []holdMark) []feed.Mark {
	var out []feed.Mark
	for _, hm := range hms {
		ep, err := strconv.ParseUint(hm.Epoch, 16, 64)
		if err != nil {
			continue
		}
		out = append(out, feed.Mark{Epoch: ep, Position: hm.Position, OK: true})
	}
	return out
}

// readStateJSON reads a JSON file of dataDir/state into v; a missing file
// leaves v as it is.
func readStateJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func (s *holdStore) saveLocked() error {
	doc := struct {
		Holds []holdEntry `json:"holds"`
		Kept  []keptEntry `json:"kept,omitempty"`
	}{Holds: s.entries, Kept: s.kept}
	if doc.Holds == nil {
		doc.Holds = []holdEntry{}
	}
	data, _ := json.Marshal(doc)
	// fsync, rename, fsync of the directory: a hold survives a power loss.
	return fileutil.WriteAtomic(s.path, append(data, '\n'))
}

// add records a hold (a subscriber removed again adds to what it held).
func (s *holdStore) add(e holdEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.entries {
		if s.entries[i].Feed == e.Feed && s.entries[i].Subscriber == e.Subscriber {
			s.entries[i].Lines += e.Lines
			if e.Through != nil {
				s.entries[i].Through = e.Through
			}
			s.entries[i].Throughs = mergeMarks(s.entries[i].places(), e.places())
			return s.saveLocked()
		}
	}
	s.entries = append(s.entries, e)
	return s.saveLocked()
}

// undo takes back a hold add recorded (a reload rolled back).
func (s *holdStore) undo(e holdEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.entries {
		if s.entries[i].Feed == e.Feed && s.entries[i].Subscriber == e.Subscriber {
			if s.entries[i].Lines <= e.Lines {
				s.entries = append(s.entries[:i], s.entries[i+1:]...)
			} else {
				s.entries[i].Lines -= e.Lines
			}
			s.saveLocked()
			return
		}
	}
}

func (s *holdStore) remove(feed, sub string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.entries[:0]
	for _, e := range s.entries {
		if e.Feed != feed || e.Subscriber != sub {
			out = append(out, e)
		}
	}
	s.entries = out
	return s.saveLocked()
}

func (s *holdStore) forFeed(feed string) []holdEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []holdEntry
	for _, e := range s.entries {
		if e.Feed == feed {
			out = append(out, e)
		}
	}
	return out
}

// applyHolds makes a feed being built hold for every removed subscriber
// that still holds it.
func (d *Daemon) applyHolds(f *Feed) {
	if d.holds == nil {
		return
	}
	for _, e := range d.holds.forFeed(f.cfg.Name) {
		f.held = append(f.held, &hold{name: e.Subscriber, lines: e.Lines, since: time.Now()})
	}
	if len(f.held) > 0 {
		f.pub.SetHeld(true)
	}
}

// keepFinished records, for a COMMITTED feed stopped by a reload that will
// not start it again (removed, or the daemon stopping), what each of its
// subscribers finished (its finalAck; not a processor the reload removed,
// which holds instead) — as Daemon.Stop does at a clean stop (markStop).
func (d *Daemon) keepFinished(f *Feed, removed map[string]bool) {
	if f.strat != file.Committed || f.finalAck == nil {
		return
	}
	finished := map[string][]feed.Mark{}
	for name, ms := range f.finalAck {
		if name != "" && !removed[name] {
			finished[name] = ms
		}
	}
	if err := d.recordKept(f, len(d.holds.forFeed(f.cfg.Name)) > 0, f.finalAck[""], finished); err != nil {
		d.log.Warn("could not record what the stopped feed's subscribers finished; its next start may deliver those lines again", "feed", f.cfg.Name, "error", err)
	}
}

// recordKept records at a clean stop of f (markStop) the places it
// published (all) and what each subscriber finished (finished), when a hold
// pins it (held) or its subscribers finished different lines — the next
// start re-reads from the commit and each skips what it finished.
func (d *Daemon) recordKept(f *Feed, held bool, all []feed.Mark, finished map[string][]feed.Mark) error {
	if !held && !marksDiffer(finished) {
		return nil
	}
	return d.holds.markStop(f.cfg.Name, all, finished)
}

// marksDiffer reports whether the subscribers' finished places (by name)
// are not all the same: some finished lines another did not.
func marksDiffer(finished map[string][]feed.Mark) bool {
	var first map[uint64]int64
	seen := false // (one that finished nothing has no marks: nil)
	for _, ms := range finished {
		by := feed.MarksByEpoch(ms)
		if !seen {
			first, seen = by, true
			continue
		}
		if !maps.Equal(first, by) {
			return true
		}
	}
	return false
}

// activeHold is the feed's unreleased hold of subscriber name (nil: none).
func (f *Feed) activeHold(name string) *hold {
	for _, h := range f.held {
		if h.name == name && !h.released.Load() {
			return h
		}
	}
	return nil
}

// heldRelease is a removed subscriber's hold as status.Releasable.
type heldRelease struct {
	d *Daemon
	f *Feed
	h *hold
}

func (r heldRelease) Release(ctx context.Context) (uint64, error) {
	if !r.h.released.CompareAndSwap(false, true) {
		return 0, processor.ErrNotHeld
	}
	// The loss is in the ledger before the hold leaves the disk: a kill -9
	// between the two leaves the hold or both, never a release unrecorded.
	e := []LossEntry{{V: lossFormat, Feed: r.f.cfg.Name, Counter: "released", Amount: r.h.lines,
		Epoch: status.Hex(r.f.src.Epoch()), Time: time.Now().UTC().Format(time.RFC3339Nano),
		Detail: "removed subscriber " + r.h.name + " released"}}
	// A release whose loss cannot be made durable is refused: the hold
	// stays (and so does the pointer) until the ledger takes it.
	r.d.losses.mu.Lock()
	err := r.d.losses.appendLocked(e)
	r.d.losses.mu.Unlock()
	if err != nil {
		err = fmt.Errorf("the losses ledger cannot record it (the hold stays; try again): %w", err)
	} else if err = r.d.holds.remove(r.f.cfg.Name, r.h.name); err != nil {
		err = fmt.Errorf("the hold could not be removed: %w", err)
	}
	if err != nil {
		r.d.losses.mu.Lock()
		if werr := r.d.losses.withdrawLocked(e); werr != nil {
			r.d.log.Error("losses ledger: the entry of a release that failed could not be withdrawn", "feed", r.f.cfg.Name, "error", werr)
		}
		r.d.losses.mu.Unlock()
		r.h.released.Store(false)
		return 0, err
	}
	if r.f.activeHoldCount() == 0 {
		r.f.pub.SetHeld(false)
	}
	return r.h.lines, nil
}

func (r heldRelease) ReleasedLines() uint64 {
	if r.h.released.Load() {
		return r.h.lines
	}
	return 0
}

func (r heldRelease) State() string { return feed.Stopped.String() }

func (f *Feed) activeHoldCount() int {
	n := 0
	for _, h := range f.held {
		if !h.released.Load() {
			n++
		}
	}
	return n
}

// carryInto adds to an acknowledged baseline what the feed's earlier
// instances counted and its released holds.
func (f *Feed) carryInto(b *status.LossCounters) {
	c := f.carry
	b.Dropped += c.loss.Dropped
	b.Refused += c.loss.Refused
	b.CompletionFailures += c.loss.CompletionFailures
	b.Released += c.loss.Released
	b.LostTails += c.lostTails
	b.LostBytes += c.lostBytes
	for _, h := range f.held {
		if h.released.Load() {
			b.Released += h.lines
		}
	}
	b.Released += f.orphanReleased.Load()
	b.Released += f.asideReleased.Load()
}
