// Package daemon wires a validated config into running feeds: one source
// per feed, one group per processor, the status server (whose rules and
// handlers are status's: the daemon gives it snapshots and implements
// status.Admin; paths under dataDir are internal/datadir's), and the ordered
// shutdown of DESIGN §5 (stop sources → let groups drain within
// shutdownTimeoutMillis → final commit of exactly what the pointer-holding
// groups finished → close).
package daemon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"tailfeed/config"
	"tailfeed/feed"
	"tailfeed/internal/datadir"
	"tailfeed/internal/fileutil"
	"tailfeed/internal/tlsconfig"
	"tailfeed/overload"
	"tailfeed/pointer"
	"tailfeed/processor"
	"tailfeed/sink"
	"tailfeed/source/file"
	"tailfeed/status"
)

// ErrConfig marks errors that are the config's fault (exit 2): every such
// error is a *ConfigError, and errors.Is(err, ErrConfig) holds.
var ErrConfig = errors.New("daemon: config")

// ConfigError is an error that is the config's fault (exit 2), found at
// start (a feed path that is a directory, an unusable dataDir). It reads
// "FILE:LINE: key: cause", as config's own errors do; Unwrap gives the
// cause (a *fs.PathError, a syscall.Errno).
type ConfigError struct {
	Loc string // FILE:LINE, or FILE without a line
	Key string // the config key at fault: dataDir, feeds[0].path
	Err error
}

func (e *ConfigError) Error() string { return e.Loc + ": " + e.Key + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *ConfigError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrConfig) hold.
func (e *ConfigError) Is(target error) bool { return target == ErrConfig }

// ConfigErrors is every problem a start or a reload found in the config,
// in the order of their lines (problems without a line first, then as
// found): a start's checks on the file system (paths, files named) and a
// reload's own rules with them, so that one rejection names them all
// (DESIGN §12 "Reload": "an ERROR with every FILE:LINE: message"). Its
// Error has one "FILE:LINE: message" per line; errors.Is(err, ErrConfig)
// holds, and errors.As finds each member (a *ConfigError, or a
// *config.Error of the file's own validation).
type ConfigErrors []error

func (e ConfigErrors) Error() string {
	lines := make([]string, len(e))
	for i, err := range e {
		lines[i] = err.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap gives the members to errors.Is and errors.As.
func (e ConfigErrors) Unwrap() []error { return e }

// Is makes errors.Is(err, ErrConfig) hold.
func (e ConfigErrors) Is(target error) bool { return target == ErrConfig }

// problems collects config problems with their lines (see ConfigErrors).
type problems []problem

type problem struct {
	line int
	err  error
}

func (p *problems) add(line int, err error) { *p = append(*p, problem{line, err}) }

// configErr adds a *ConfigError at line.
func (p *problems) configErr(d *Daemon, line int, key string, err error) {
	p.add(line, &ConfigError{Loc: d.configLoc(line), Key: key, Err: err})
}

// err is nil without problems, the one problem alone, else a ConfigErrors
// sorted by line (stable: the same line keeps the order found).
func (p problems) err() error {
	switch len(p) {
	case 0:
		return nil
	case 1:
		return p[0].err
	}
	sorted := slices.Clone(p)
	slices.SortStableFunc(sorted, func(a, b problem) int { return cmp.Compare(a.line, b.line) })
	out := make(ConfigErrors, len(sorted))
	for i, pr := range sorted {
		out[i] = pr.err
	}
	return out
}

// Daemon is a running tailfeed.
type Daemon struct {
	cfg   *config.Config
	log   hclog.Logger
	lock  *os.File
	feeds []*Feed
	srv   *http.Server
	ln    net.Listener
	tls   *tlsconfig.Server // status.tls; nil: plain HTTP

	routes map[string]status.Route

	ready    status.Readiness // every feed has opened its file or waits for it (latched)
	reports  *status.Versioner
	reportMu sync.Mutex // one report at a time: versions follow build order

	losses   *lossLedger   // dataDir/losses.jsonl
	lossStop chan struct{} // stops the loss recorder
	lossNote chan struct{} // every queue signals it after a loss (wakes the recorder)
	lossDone chan struct{} // closed when the loss recorder returned
	// recMu guards recFlight: the recordLosses a report or a stop runs on
	// a goroutine of its own (recordLossesBy), so that a hung fsync of the
	// ledger does not hang them.
	recMu     sync.Mutex
	recFlight chan struct{}

	opts Options

	// Reload (reload.go): mu guards feeds, cfg, srv and ln, which a reload
	// replaces; reloadMu makes reloads and the stop one at a time.
	mu       sync.RWMutex
	reloadMu sync.Mutex
	runCtx   context.Context
	rl       reloadState
	holds    *holdStore
	released *releasedStore         // dataDir/state/released.json (released.go)
	stopped  bool                   // Stop ran (under reloadMu)
	skips    map[string][]feed.Mark // processor → the re-read it skips (per epoch; "": a processor added), while a reload builds a feed
	orphans  *orphanLedgers         // dead letters of processors no longer configured (orphans.go)
	prev     map[string]any         // processor → its sink in the stopped instance, while a reload builds a feed

	// While a reload builds a feed without a pointer: where it reads on
	// (its file, or a glob's files by key; reload.go resumeFor).
	resume  *file.Resume
	resumes map[uint64]file.GlobResume
}

// Feed is one running feed.
type Feed struct {
	cfg    *config.Feed
	src    feedSource // a *file.Source, or the glob
	glob   *file.Glob // a glob feed's source (DESIGN §10); nil for one file
	pub    *feed.Publisher
	groups []*processor.Group
	closer []processor.Closer // closer[i]: groups[i]'s processor, when it is a Closer (else nil)
	ptr    *pointer.Pointer
	policy overload.Kind
	strat  file.Strategy
	log    hclog.Logger

	runDone      chan struct{}
	cancelGroups context.CancelFunc

	cancelSrc             context.CancelFunc  // stops this feed's source alone (a reload)
	carry                 carried             // counters of the feed's earlier instances this run
	held                  []*hold             // removed subscribers that hold the pointer
	final                 status.FeedSnapshot // at its stop by a reload
	finalRead, finalBytes uint64
	finalPaused           float64
	finalAcked, finalSeq  uint64                 // acknowledged and published at that stop
	finalAck              map[string][]feed.Mark // each subscriber's finished lines at that stop, per epoch ("": all published)
	published             []feed.Mark            // what the instances before this one (reloads) published, per epoch (publishedMarks)
	owed, finalOwed       map[string]uint64      // lines earlier instances gave each holding subscriber that it did not finish (unfinished); at this one's stop
	owedUnpos, finalUnpos map[string]bool        // per holding subscriber: lines given without a position (late lines) it did not finish, by an earlier instance (owed); at this one's stop

	dataDir  string         // the daemon's (the epochs file, for a catch-up at start)
	released *releasedStore // lines its subscribers were released from (released.go)

	ledger   *lossLedger        // the daemon's losses ledger
	recorded map[subLoss]uint64 // loss counters as last appended to the ledger (under the ledger's mu)
	// prev is the instance a reload stopped for this one while its loss
	// counters' growth may not be in the ledger yet (a failing ledger):
	// this feed's lossSync appends it first (under the ledger's mu; nil
	// once appended).
	prev   *Feed
	baseMu sync.Mutex
	base   lossCounters // what DELETE /admin/losses acknowledged: subtracted in the report

	orphans        *orphanLedgers // ledgers of processors no longer configured (orphans.go)
	orphanReleased atomic.Uint64  // their entries purged while this instance ran (released)
	asideReleased  atomic.Uint64  // dead letters a reload moved aside as it built this instance (released; reload.go)
}

// New opens everything the config names (data dir lock, pointers, sinks,
// the listener); nothing runs until Start.
func New(cfg *config.Config, log hclog.Logger) (*Daemon, error) {
	return NewWithOptions(cfg, log, Options{})
}

// NewWithOptions is New with test seams (see Options).
func NewWithOptions(cfg *config.Config, log hclog.Logger, opts Options) (*Daemon, error) {
	d := &Daemon{cfg: cfg, log: log, reports: status.NewVersioner(), opts: opts, lossNote: make(chan struct{}, 1)}
	// Every problem the config has on this host is named at once (exit 2),
	// not one per start.
	probs := d.pathProblems(cfg)
	if t := cfg.Status.TLS; t.CertFile != "" {
		srv, err := tlsconfig.NewServer(t.CertFile, t.KeyFile, t.ClientCAFile, log.Named("http"))
		if err != nil {
			probs.configErr(d, t.Line, "status.tls", err)
		}
		d.tls = srv
	}
	if err := probs.err(); err != nil {
		return nil, err
	}
	lock, err := datadir.Open(cfg.DataDir, log)
	if err != nil {
		var fault *datadir.Fault
		if errors.As(err, &fault) {
			return nil, d.dataDirErr(fault.Err)
		}
		return nil, err
	}
	d.lock = lock
	losses, err := openLossLedger(cfg.DataDir, log.Named("losses"), opts.WrapLossFile)
	if err != nil {
		d.closeAll()
		return nil, d.dataDirFault(err)
	}
	d.losses = losses
	d.rl.loadedAt = time.Now()
	if d.holds, err = openHolds(cfg.DataDir); err != nil {
		d.closeAll()
		return nil, d.dataDirFault(err)
	}
	if d.released, err = openReleased(cfg.DataDir); err != nil {
		d.closeAll()
		return nil, d.dataDirFault(err)
	}
	// A processor whose target changed while tailfeed was stopped starts
	// as new, as at a reload (targets.go). A start that fails after it
	// moves the state back and withdraws what it gave up, as a reload
	// rolled back does (review 28a B), and stamps nothing.
	back, gaveUp, err := d.startAside(cfg)
	if err != nil {
		d.closeAll()
		return nil, d.dataDirFault(err)
	}
	fail := func(err error) (*Daemon, error) {
		back() // (the losses ledger still open to withdraw from)
		d.closeAll()
		return nil, err
	}
	d.orphans = newOrphanLedgers(cfg.DataDir, log.Named("dlq"))
	d.orphans.refresh(cfg)
	built := map[string]*Feed{}
	for _, fc := range cfg.Feeds {
		f, err := d.buildFeed(cfg, fc)
		if err != nil {
			return fail(d.dataDirFault(err))
		}
		d.feeds = append(d.feeds, f)
		built[fc.Name] = f
	}
	ln, err := net.Listen("tcp", cfg.Status.Listen)
	if err != nil {
		return fail(fmt.Errorf("status listen %s: %w", cfg.Status.Listen, err))
	}
	d.ln = ln
	if _, err := d.restamp(cfg); err != nil {
		return fail(d.dataDirFault(err))
	}
	d.giveUpAside(gaveUp, built)
	return d, nil
}

// configLoc is "FILE:LINE" (or FILE alone without a line), naming the
// config file as given on the command line.
func (d *Daemon) configLoc(line int) string {
	loc := d.cfg.Name
	if loc == "" {
		loc = d.cfg.File
	}
	if line > 0 {
		loc = fmt.Sprintf("%s:%d", loc, line)
	}
	return loc
}

// dataDirFault is dataDirErr for an error about a file under dataDir that
// cannot be opened, created or written (a pointer, the losses ledger, a
// state file or a dead-letter ledger that is a directory, say): DESIGN §9,
// run exits 2 "when dataDir cannot be created or written" (audit 9C: exit
// 1). A lock another process holds stays a runtime failure (exit 1), as
// does running out of descriptors or memory (dataDirErrno).
func (d *Daemon) dataDirFault(err error) error {
	var pe *fs.PathError
	if errors.Is(err, ErrConfig) || !errors.As(err, &pe) || !dataDirErrno(err) {
		return err
	}
	rel, rerr := filepath.Rel(d.cfg.DataDir, pe.Path)
	if rerr != nil || rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
		return err
	}
	return d.dataDirErr(err)
}

// dataDirErrno: err says what is in dataDir cannot be used (a directory
// where a file belongs or the reverse, no permission, a read-only or full
// file system, a symlink loop), not that the process ran short (EMFILE,
// ENOMEM: runtime failures, exit 1 — review 27b RA) or the disk failed.
func dataDirErrno(err error) bool {
	for _, e := range []syscall.Errno{syscall.EISDIR, syscall.ENOTDIR, syscall.EACCES, syscall.EPERM,
		syscall.EROFS, syscall.ENOSPC, syscall.EDQUOT, syscall.ELOOP, syscall.ENAMETOOLONG, syscall.EEXIST} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// dataDirErr names the config file as its other errors do (as given on
// the command line), with the dataDir key's line.
func (d *Daemon) dataDirErr(err error) error {
	return &ConfigError{Loc: d.configLoc(d.cfg.DataDirLine), Key: "dataDir", Err: err}
}

func (d *Daemon) buildFeed(cfg *config.Config, fc *config.Feed) (*Feed, error) {
	log := d.log.Named(fc.Name)
	strat, err := file.ParseStrategy(fc.ReadStrategy)
	if err != nil {
		return nil, err
	}
	f := &Feed{cfg: fc, strat: strat, policy: fc.Built.Overload, log: log, runDone: make(chan struct{}),
		ledger: d.losses, recorded: map[subLoss]uint64{}, dataDir: cfg.DataDir, orphans: d.orphans, released: d.released}
	// A batch may fill a queue (DESIGN §5): fewer, larger hand-offs and
	// writes; the source publishes the next one as soon as a group takes it.
	// Never more lines than the window holds: the publisher lets a batch
	// into an empty window whole, and "at most maxPendingAcks lines
	// awaiting acknowledgement" must hold then too.
	batchLines := max(1, min(fc.QueueCapacity, fc.MaxPendingAcks))
	batchBytes := max(1, fc.QueueBytes)
	var procs []*config.Processor
	var queues []*feed.Queue
	for _, pc := range cfg.Processors {
		if pc.Feed != fc.Name {
			continue
		}
		q := feed.NewQueue(pc.Name, fc.QueueCapacity, fc.QueueBytes, pc.Built.Overload)
		q.SetLossNote(d.lossNote)
		procs = append(procs, pc)
		queues = append(queues, q)
	}
	f.pub = feed.NewPublisher(fc.Name, queues, fc.MaxPendingAcks, batchLines)
	f.pub.SetLossSync(d.lossSync(f)) // a loss is in the ledger before the pointer passes it
	f.pub.SetLossCount(d.lossCount(f))
	d.applyHolds(f)
	for i, pc := range procs {
		g, c, err := d.buildGroup(cfg, f, pc, queues[i], log)
		if err != nil {
			f.close()
			return nil, err
		}
		f.groups = append(f.groups, g)
		f.closer = append(f.closer, c)
	}
	stream := file.Config{
		Feed:         fc.Name,
		Path:         fc.Path,
		Strategy:     strat,
		MaxLine:      fc.MaxLineBytes,
		BatchLines:   batchLines,
		BatchBytes:   batchBytes,
		Poll:         fc.Built.Poll,
		RotateWait:   fc.Built.RotateWait,
		CommitSync:   fc.Built.CommitSync,
		Logger:       log,
		NoNotify:     noFSNotify(),
		Outputs:      d.ownOutputs(cfg),
		OutputFiles:  stdoutFiles(cfg),
		OnLoss:       d.onLoss(fc.Name),
		RotatedNames: fc.RotatedNames,
	}
	if config.IsGlob(fc.Path) {
		if err := d.buildGlob(cfg, f, fc, stream, log); err != nil {
			f.close()
			return nil, err
		}
		return f, nil
	}
	if strat == file.Committed {
		p, err := pointer.Open(datadir.Pointer(cfg.DataDir, fc.Name), pointer.Options{
			Logger:     log,
			EpochsPath: datadir.Epochs(cfg.DataDir, fc.Name),
			Input:      fc.Path,
		})
		if err != nil {
			f.close()
			return nil, err
		}
		f.ptr = p
	}
	stream.Pointer = f.ptr
	stream.Resume = d.resume // a feed restarted by a reload (reload.go)
	f.src = file.New(stream, f.pub)
	return f, nil
}

// ownOutputs lists what the daemon writes itself (every file sink's output,
// dataDir): a source never takes one for its input's rotated file or copy.
func (d *Daemon) ownOutputs(cfg *config.Config) []string {
	out := []string{cfg.DataDir}
	for _, pc := range cfg.Processors {
		if p := pc.OutputPath(); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// stdoutFiles is the daemon's standard output when a stdout sink writes
// it and it is a regular file (a launcher redirected it to a log file): an
// output known by its identity only (fstat of descriptor 1), never read.
func stdoutFiles(cfg *config.Config) []file.FileID {
	for _, pc := range cfg.Processors {
		if pc.Type != "stdout" {
			continue
		}
		if fi, err := os.Stdout.Stat(); err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		if dev, ino, err := fileutil.DevIno(os.Stdout); err == nil && (dev != 0 || ino != 0) {
			return []file.FileID{{Dev: dev, Ino: ino}}
		}
		return nil
	}
	return nil
}

func (d *Daemon) buildGroup(cfg *config.Config, f *Feed, pc *config.Processor, q *feed.Queue, log hclog.Logger) (*processor.Group, processor.Closer, error) {
	typ, ok := sink.Lookup(pc.Type)
	if !ok && d.opts.Processors[pc.Name] == nil {
		return nil, nil, fmt.Errorf("processor %s: type %s is not available yet", pc.Name, pc.Type)
	}
	gc := processor.GroupConfig{
		Name:  pc.Name,
		Queue: q,
		Retry: processor.Retry{
			Initial:  pc.Built.RetryInitial,
			Max:      pc.Built.RetryMax,
			Jitter:   pc.Retry.Jitter,
			Attempts: pc.Retry.Attempts,
		},
		Logger: log,
		Wake:   f.pub.Poke,
	}
	if pc.Built.DeadLetter {
		gc.OnFailure = processor.DeadLetter
	}
	var err error
	if !typ.OwnMatch {
		gc.Match = pc.Built.Match
	}
	gc.Exclude = pc.Built.Exclude
	feedName, sub := f.cfg.Name, pc.Name
	gc.OnRelease = func(epoch uint64, after, through int64) {
		if err := d.released.add(feedName, sub, epoch, after, through); err != nil {
			log.Warn("could not record the released lines; a start may deliver them again (duplicates)", "error", err)
		}
	}
	gc.OnGiven = func(epoch uint64, after, through int64) {
		if err := d.released.dropOverlap(feedName, sub, epoch, after, through); err != nil {
			log.Warn("could not drop the given-up lines the sink was given again; a sink restored later may not be caught up over them", "error", err)
		}
	}
	switch skip, own := d.skips[pc.Name]; {
	case own:
		// A kept or changed processor of a feed restarted by a reload
		// (reload.go): it skips what it finished.
		gc.Skip = skip
	case f.activeHold(pc.Name) != nil:
		// Added back while it holds the feed: it re-reads nothing, neither
		// what it holds nor, added by a reload, what was published since.
		gc.Skip = furthestMarks(d.holds.throughMarks(f.cfg.Name, pc.Name), d.skips[""])
	case d.skips != nil:
		// Added by a reload: it subscribes from the next line.
		gc.Skip = d.skips[""]
	default:
		// Started on a pointer a hold pinned, or one a slower subscriber
		// kept behind, at the last clean stop: it skips what it finished
		// before it (markStop; DESIGN §2: re-delivery only after a crash).
		gc.Skip = d.holds.keptMarks(f.cfg.Name, pc.Name)
	}
	if gc.Ledger, err = d.openLedger(cfg, pc, log); err != nil {
		return nil, nil, err
	}
	g := processor.NewGroup(gc)
	if build := d.opts.Processors[pc.Name]; build != nil {
		return d.buildCustom(g, pc, build)
	}
	p, err := typ.New(sink.Env{Group: g, Config: pc, Feed: f.cfg, Publisher: f.pub, DataDir: cfg.DataDir, Instance: cfg.Instance,
		Logger: log.Named(pc.Name), Previous: d.prev[pc.Name]})
	if err != nil {
		return nil, nil, fmt.Errorf("processor %s: %w", pc.Name, err)
	}
	return d.setProcessor(g, pc, p)
}

// dropKeptOf forgets, as f starts with no hold, the finished lines the last
// clean stop recorded (markStop): its groups took them as their skips. Not
// before the start: a start that fails keeps them for the next one. A
// kill -9 from here on delivers them again, as after any crash.
func (d *Daemon) dropKeptOf(f *Feed) {
	if len(f.held) > 0 {
		return
	}
	if err := d.holds.dropKept(f.cfg.Name); err != nil {
		d.log.Warn("could not forget the finished lines recorded at the last stop", "feed", f.cfg.Name, "error", err)
	}
}

// Start runs the sources, the groups and the status server.
func (d *Daemon) Start(ctx context.Context) {
	d.runCtx = ctx
	d.logStart()
	for _, f := range d.feeds {
		d.dropKeptOf(f)
		f.start(ctx)
	}
	go d.watchReady(ctx)
	d.lossStop, d.lossDone = make(chan struct{}), make(chan struct{})
	go d.runLossRecorder(d.lossStop, d.lossDone)
	routes := status.AdminRoutes(admin{d}, d.log)
	routes["/metrics"] = status.MetricsRoute(status.Metrics{States: feedStates, Feeds: d.metrics, Reloads: d.reloadCounts})
	routes["/admin/reload"] = status.ReloadRoute(d.Reload)
	for p, rt := range status.StateRoutes(d.stateOf) {
		routes[p] = rt
	}
	for p, rt := range sink.Routes(d.sinkOf) {
		routes[p] = rt
	}
	d.routes = routes
	d.srv = d.newServer(d.cfg)
	d.serve(d.srv, d.ln)
}

func (d *Daemon) newServer(cfg *config.Config) *http.Server {
	return status.NewServer(status.ServerConfig{
		Token:          cfg.Status.Token,
		ProtectRead:    cfg.Status.ProtectRead,
		MaxConnections: cfg.Status.MaxConnections,
		Report:         d.Report,
		ReportFiles:    d.ReportFiles,
		Health:         d.Health,
		Ready:          d.Ready,
		Logger:         d.log.Named("http"),
		Routes:         d.routes,
		TLS:            d.tls,
	})
}

func (d *Daemon) serve(srv *http.Server, ln net.Listener) {
	go func() {
		// (net.ErrClosed: a reload switching status.tls closed this
		// server's descriptor of the socket; the next server serves it.)
		if err := status.Serve(srv, ln); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			d.log.Error("status server stopped", "error", err)
		}
	}()
}

// Addr is the status server's listen address.
func (d *Daemon) Addr() string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.ln.Addr().String()
}

// Scheme is "https" when status.tls is set, else "http".
func (d *Daemon) Scheme() string {
	if d.tls != nil {
		return "https"
	}
	return "http"
}

// ReloadCertificates re-reads status.tls's files now (for a reload: they
// are also re-read by themselves when they change on disk). On an error
// the certificates in use stay. Without status.tls: nil.
func (d *Daemon) ReloadCertificates() error {
	if d.tls == nil {
		return nil
	}
	return d.tls.Reload()
}

// groupCtx is separate from the source context: groups keep draining after
// the sources stopped.
func (f *Feed) start(ctx context.Context) {
	gctx, cancel := context.WithCancel(context.Background())
	f.cancelGroups = cancel
	for _, g := range f.groups {
		g.Start(gctx)
	}
	sctx, scancel := context.WithCancel(ctx)
	f.cancelSrc = scancel
	f.pub.StopWaits(sctx.Done()) // a stop never waits out a full queue's deadline or spin
	go func() {
		defer close(f.runDone)
		defer scancel()
		f.catchUp(sctx, f.dataDir)
		f.src.Run(sctx)
	}()
}

// Stop performs the ordered shutdown. It returns the first error of the
// final commits.
func (d *Daemon) Stop() error {
	// DESIGN §12: a stop ends within shutdownTimeoutMillis plus 2 s; the
	// losses ledger gets what is left of that (ledgerStopBy).
	// (d.config(): a reload the stop overtakes may be setting d.cfg.)
	hardBy := time.Now().Add(d.config().Built.ShutdownTimeout + 2*time.Second)
	d.reloadMu.Lock() // a reload in progress finishes first
	defer d.reloadMu.Unlock()
	if d.stopped {
		return nil // stopped already: Stop is idempotent
	}
	d.stopped = true
	// Sources have been told to stop through the Start context; wait,
	// half of shutdownTimeoutMillis at most (runWait at least): a source
	// in a slow step (a commit's fsync on a loaded disk) ends it and gets
	// its drain and final commit, while the groups go on processing; one
	// stuck in a step that does not return (its loss appended to a ledger
	// whose fsync hangs) is left as it is — no drain, no final commit (its
	// pointer stays where its last commit put it: the lines since are read
	// again at the next start), logged.
	stuck := map[*Feed]bool{}
	runBy := earliest(time.Now().Add(max(runWait, d.config().Built.ShutdownTimeout/2)), hardBy.Add(-1500*time.Millisecond))
	for _, f := range d.feeds {
		t := time.NewTimer(time.Until(runBy))
		select {
		case <-f.runDone:
		case <-t.C:
			stuck[f] = true
			d.log.Error("feed's source did not stop (a step that does not return: a losses ledger write or fsync, a read); stopping without its drain and final commit (what it read since its last commit is read again at the next start)",
				"feed", f.cfg.Name)
		}
		t.Stop()
	}
	// Each phase ends by its own bound and leaves the next ones theirs of
	// hardBy (a reload before may have used some of it).
	drainCtx, cancel := context.WithDeadline(context.Background(),
		earliest(time.Now().Add(d.cfg.Built.ShutdownTimeout), hardBy.Add(-time.Second)))
	defer cancel()
	var wg sync.WaitGroup
	for _, f := range d.feeds {
		if stuck[f] {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.src.Drain(drainCtx)
		}()
	}
	wg.Wait()
	// Best-effort subscribers do not hold the window, so Drain does not wait
	// for them; they get the same bound before what they still hold counts
	// as dropped.
	for _, f := range d.feeds {
		if !stuck[f] {
			f.drainBestEffort(drainCtx)
		}
	}
	var first error
	abandonBy := earliest(time.Now().Add(abandonAfter), hardBy.Add(-500*time.Millisecond))
	for _, f := range d.feeds {
		if err := f.stopGroups(abandonBy); err != nil && first == nil {
			first = err
		}
	}
	// Every loss is counted by now (stopGroups counts what best-effort
	// queues still held): the last deltas reach the ledger.
	// The ledger gets what is left of the stop's bound (a slow fsync: the
	// final commits pass the losses; a hung one: they stay before the
	// losses not made durable, whose lines the next start reads again).
	ledgerBy := ledgerStopBy(hardBy)
	if d.lossStop != nil {
		close(d.lossStop)
		t := time.NewTimer(time.Until(ledgerBy))
		select {
		case <-d.lossDone:
		case <-t.C:
		}
		t.Stop()
	}
	d.recordLossesBy(ledgerBy)
	for _, f := range d.feeds {
		if stuck[f] {
			continue
		}
		// The final commit acknowledges what the holding queues finished
		// only past losses its publisher knows durable: sync them here
		// (the recorder's appends above do not tell the publisher).
		d.syncFinalLosses(f, ledgerBy)
		if held := f.activeHoldCount() > 0; held || f.strat == file.Committed {
			// What this run published past a hold: a subscriber added back
			// at the next start skips it; and what each configured
			// subscriber finished, which the held pointer — or a slower
			// subscriber's unfinished lines — makes the next start read
			// again: it skips that (best-effort: every line published was
			// finished or counted dropped). Recorded when the subscribers
			// finished different lines (else the commit is where all are).
			var all []feed.Mark
			finished := map[string][]feed.Mark{}
			f.quiet(func() {
				all = f.pub.Marks(-1, 0)
				for i, g := range f.groups {
					finished[g.Name()] = f.finishedMarks(i, g)
				}
			})
			if err := d.recordKept(f, held, all, finished); err != nil && first == nil {
				first = err
			}
		}
		if err := f.src.Close(); err != nil && first == nil {
			first = fmt.Errorf("feed %s: %w", f.cfg.Name, err)
		}
	}
	if d.srv != nil {
		sctx, c := context.WithTimeout(context.Background(), time.Second)
		d.srv.Shutdown(sctx)
		c()
	}
	d.closeAll()
	return first
}

// drainBestEffort waits, up to ctx, until every best-effort queue's group
// finished what was given to it (for a processor with a checkpoint hold,
// a pull subscriber: until it is durable, acknowledged by a client).
func (f *Feed) drainBestEffort(ctx context.Context) {
	for _, g := range f.groups {
		q := g.Queue()
		if !q.BestEffort() {
			continue
		}
		for q.Depth() > 0 || min(q.Finished(), q.AckPoint()) < q.Position() {
			if st, _ := q.State(); st == feed.Dead {
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-g.Done():
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
}

// earliest is the earlier of a and b.
func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// runWait is the least a stop waits for a feed's source to end its run
// before it goes on without it (Stop: half of shutdownTimeoutMillis, at
// least this, within the bound); a reload the stop cut short waits this
// (awaitRun). Part of the 2 s DESIGN §12 "Signals" allows past
// shutdownTimeoutMillis.
const runWait = 500 * time.Millisecond

// abandonAfter is how long a stop waits, once the drain is over (within
// shutdownTimeoutMillis) and the groups' context ended, for a group whose
// processor call does not return before it goes on without it (stopGroups).
// Part of the 2 s DESIGN §12 "Signals" allows past shutdownTimeoutMillis.
const abandonAfter = time.Second

// stopGroups stops the groups (each counts what its best-effort queue still
// held as dropped as it ends), and closes the processors (a final flush).
// A group still in a processor call at abandonBy (a sink that ignores its
// context and whose write never returns) is abandoned: the stop goes on
// without it (DESIGN §5 bounds the drain, §12 the stop), its processor is
// not closed (the call may still use it), and what it did not finish is not
// acknowledged, so the final commit stops before a pointer-holding
// subscriber's unfinished lines (read again at the next start, or by the
// feed's next instance after a reload).
func (f *Feed) stopGroups(abandonBy time.Time) error {
	for _, g := range f.groups {
		g.Stopping() // no release restarts a dead group past this point
	}
	if f.cancelGroups != nil {
		f.cancelGroups()
	}
	bound := time.NewTimer(time.Until(abandonBy))
	defer bound.Stop()
	expired := false
	gone := make([]bool, len(f.groups))
	for i, g := range f.groups {
		if !expired {
			select {
			case <-g.Done():
			case <-bound.C:
				expired = true
			}
		}
		if expired && g.Abandon() {
			gone[i] = true
			f.log.Error("subscriber did not stop within shutdownTimeoutMillis: its processor's call does not return; going on without it (what it did not finish is not committed and is read again)",
				"subscriber", g.Name())
			continue
		}
		<-g.Done() // ended (Abandon false: it returned meanwhile)
		g.Queue().Drain()
	}
	var first error
	for i, c := range f.closer {
		if c == nil || gone[i] {
			continue
		}
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	f.closer = nil
	return first
}

func (f *Feed) close() {
	for _, c := range f.closer {
		if c != nil {
			c.Close()
		}
	}
	if f.ptr != nil {
		f.ptr.Close()
	}
}

// Close releases what New opened (sinks, pointers, the listener, the
// dataDir lock) of a daemon that was never started: `run` stopped by a
// signal that came while New was still opening. Nothing was read, so
// nothing is committed.
func (d *Daemon) Close() {
	for _, f := range d.feeds {
		f.close()
	}
	d.closeAll()
}

func (d *Daemon) closeAll() {
	if d.losses != nil {
		d.losses.close()
	}
	if d.ln != nil {
		d.ln.Close()
	}
	if d.lock != nil {
		d.lock.Close()
		d.lock = nil
	}
}
