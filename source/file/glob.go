package file

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/hashicorp/go-hclog"

	"tailfeed/feed"
	"tailfeed/internal/fileutil"
	"tailfeed/pointer"
)

// GlobConfig configures a Glob: a feed whose path is a glob (DESIGN §10).
type GlobConfig struct {
	// Stream is the template of every stream's Source (Path, Pointer,
	// DeliveryPath and Pinned are the glob's to set). Stream.Path is the
	// pattern.
	Stream        Config
	Exclude       []string // globs over whole paths
	PointerDir    string   // dataDir/feeds/<feed>; "" unless COMMITTED
	EpochsPath    string
	ScanInterval  time.Duration
	MaxOpenFiles  int
	CloseInactive time.Duration
	ForgetAfter   time.Duration
	// Resumes, for a feed without pointers restarted by a reload: what its
	// previous glob knew of each file by key (Glob.Resumes). At the first
	// scan a file in it starts where its previous stream stopped (or, never
	// read, as that glob would have started it); a file not in it is new
	// (read from its start; ONCE_*: not read). nil: a start.
	Resumes map[uint64]GlobResume
}

// GlobResume is what a glob without pointers knew of one file when it
// closed (Glob.Resumes).
type GlobResume struct {
	First     string  // the path it was first matched under (Delivery.Path)
	Resume    *Resume // where its last source stopped (nil: never read)
	StartSize int64   // its size when first matched (ONCE_EARLIEST's end)
	// LATEST, never read yet: its first turn starts at EndAt, unless its
	// first bytes are no longer EndHead's.
	FromEnd    bool
	EndAt      int64
	EndHeadLen int
	EndHead    uint64
	// Copy: taken for another file's copy (a copytruncate's), not read.
	Copy bool
}

// FileStatus is one tracked file in GET /feed.status?files=1.
type FileStatus struct {
	Path    string  `json:"path"`
	FileKey string  `json:"fileKey"`
	Epoch   *string `json:"epoch"` // nil until its stream has one
	Offset  int64   `json:"offset"`
	Size    int64   `json:"size"`
	State   string  `json:"state"`
}

// Glob reads every file a pattern matches, one stream each, through one
// publisher. Run, Drain and Close as for Source; the getters are safe from
// any goroutine.
type Glob struct {
	cfg  GlobConfig
	pat  *Pattern
	excl []*Pattern
	outs []string
	log  hclog.Logger
	mux  *mux
	pub  *feed.Publisher

	// Manager goroutine only, read by the getters under mu.
	mu      sync.Mutex
	byPath  map[string]*gstream
	byKey   map[uint64]*gstream
	retired map[uint64]bool // keys whose file was seen deleted: a new file with one is new
	skipped map[string]bool
	open    int // streams holding a slot (running or stopping)
	queue   []*gstream
	started bool
	// ready: the start is over (logStart): a previous run's pointers that
	// matched no file are counted and tracked. The feed is STARTING until
	// then, never settled with a gone file counted in lostTails and not
	// listed yet (a report between the two showed neither its row nor it
	// in filesTracked).
	ready    bool
	scanned  bool
	stopped  chan *gstream
	rest     chan struct{} // a stream read all it could: a waiting one may take its slot
	watcher  *fsnotify.Watcher
	watched  map[string]bool
	events   chan string
	kick     chan struct{}
	startAt  time.Time
	acc      globTotals // counters of closed sources
	maxSlots int
	loaded   []loaded        // a previous run's pointers not yet matched to a file
	ctx      context.Context // Run's
	life     context.Context // ended by Close: drains of streams still stopping end
	endLife  context.CancelFunc
	lastHK   time.Time
	ghosts   uint64 // map keys of gone streams whose key a new file took

	// readBefore: at the start, by file key, the epochs lines that moved a
	// pointer off a file (its key, first bytes and committed end): a file
	// new at this start that is one of them, no longer than that end, was
	// read to it by a previous run (readBeforeStart).
	readBefore map[uint64]pointer.EpochLine

	drainBound time.Duration         // how long a stopping stream waits for its lines' acknowledgements
	afterWalk  func([]found)         // tests: runs between a scan's walk and its look at what it listed
	beforeWalk func()                // tests: runs before each walk
	startWalk  func([]found)         // tests: runs after each of the start's walks, before walkAtStart looks at it
	afterOrder func([]*gstream)      // tests: runs (under mu) with the streams a scan made, once it ordered them, before it schedules
	owed       map[*gstream]struct{} // the closed (or queued) streams that owe a commit (settleOwed)

	// opening bounds the pointer I/O waiting for the disk at once across
	// the streams (a new pointer's fsyncs, a stream's open and adoption,
	// each commit's msync; Config.IOSlots): each blocked call holds an OS
	// thread, and hundreds of streams starting together made hundreds of
	// threads that a Go process never gives back (~50 KiB resident each).
	opening chan struct{}

	aheadWG sync.WaitGroup // createdAhead appends running (Close waits)

	outsRes []outPath // outputsNow's resolution, made at outsAt
	outsAt  time.Time

	keys     map[uint64]string // scan's: each matched key's path (reused)
	lastWalk int               // files the last walk found

	// walk's, against reading the daemon's own outputs through another
	// name (DESIGN §10 "Never matched"): the outputs' identities (rebuilt
	// at each walk, reused), the symlinks matched with where each leads
	// (resolved again only when the file it reaches changes), and the
	// paths already logged as not read for it.
	ownIDs map[[2]uint64]bool
	links  map[string]linkSeen
	// linkTo maps a matched symlink's target to the symlinks leading to it,
	// and targetDirs are the directories watched only for such targets (not
	// matched by the glob): an event there wakes the symlinks' streams, and
	// an event naming any other file there is ignored. Manager goroutine.
	linkTo     map[string][]string
	targetDirs map[string]bool
	walkGen    uint64
	ownLogged  map[string]bool

	// Housekeeping looks at these, not at every tracked stream (thousands
	// of idle files): the streams holding a slot (running or stopping),
	// the new files held back as possible copies, and when the gone
	// streams were last looked at for forgetting.
	running    map[*gstream]struct{}
	held       []*gstream
	heldForget []*gstream // closed beside their path, read to their end, not forgotten yet (forgetHeld)
	watchOut   []*gstream // closed out of the glob within rotateWait of their last growth (lookWatched)
	// watchWrites maps a watched stream's path to its watchWrote (forward
	// marks it at a write event); evErrs counts fsnotify's errors (an
	// overflow drops events).
	watchWrites sync.Map
	evErrs      atomic.Uint64
	lastForget  time.Time

	filesSkipped atomic.Uint64

	// scanDue: a queued stream's file left its path since the last scan
	// (awaitScan): Run scans at its next pass.
	scanDue atomic.Bool
	final   bool // Close's last settleOwed pass: no scan comes (under mu)
	// firstScanStep, when set (tests), is called by the first scan under
	// mu after it found the files: with 0 before it looks for the
	// previous run's listed files, with 1 before it writes the start's
	// unread list — the windows in which a file it found may go.
	firstScanStep func(step int)
	closing       bool // Close runs: a stream closed now closes for the stop (under mu)
	// vacated: paths a stream left (renamed within the glob) while it may
	// still hold a new file there back (the per-path barrier): a rotation
	// within the glob whose new file shows up at a later scan (or sorts
	// after the old file's new name) waits for it all the same.
	vacated map[string]*gstream

	// readKeys: the keys of every stream ever queued to be read (under
	// keyMu, asked by the streams' goroutines: Config.Adoptable): a
	// stream never adopts one of them as its own file's new key.
	keyMu    sync.Mutex
	readKeys map[uint64]bool

	live liveUnread // the unread list kept while running (unreadlive.go; under mu)
	// listedRead: keys of the previous run's unread list the first scan
	// found beside their path and read there (readListedBeside).
	listedRead map[uint64]bool
	// handed: listed files the first scan handed to their path's stream
	// (handed.go), until its pointer passes them.
	handed      []*handedFile
	resetOff    map[uint64][]pointer.EpochLine // the epochs file's "reset" lines by the key they moved off (listedPassed)
	bornAtStart map[uint64]int64               // the first scan's listed files' birth times by key, until readListedBesideAll
	// listedAtStart: the keys the previous run's unread list names (keysAtStart), until readListedBesideAll.
	listedAtStart map[uint64]bool
	// listedInGlob: keys of the previous run's unread list the first scan
	// found in the glob (their streams decide: readListedBesideAll).
	listedInGlob map[uint64]bool
	ptrKeys      map[uint64]bool // the file keys the pointers found at the start name

	detail string // the last loss CountLoss counted (under mu)
	lossQ  []Loss // losses counted under mu, for OnLoss (countLossLocked, flushLosses)
}

type globTotals struct {
	lines, bytes, downgraded, oversized, lostTails, lostBytes, commitFailures, unterminated uint64
	commits                                                                                 uint64 // forgotten pointers' commit counters
}

type streamState int

const (
	stClosed   streamState = iota // tracked, no descriptor
	stQueued                      // waits for a slot
	stOpen                        // its Source runs
	stStopping                    // its Source drains and closes
)

type gstream struct {
	path    string // where the file is now
	first   string // the path it was first matched under (Delivery.Path)
	key     uint64
	ptrPath string
	st      streamState
	// copies: the keys of the copies (copytruncate) its earlier sources in
	// this process took (trimCopies): not later generations of
	// its file for the next source (Config.prevCopies).
	copies []CopyTaken
	// gens: the files its earlier sources in this process switched away
	// from (trimGens): read already, not later generations of its file for
	// the next source unless grown (Config.prevGens).
	gens []GenDone
	// cutSeen: a look found its file (a pointer's, closed or queued) cut
	// or rewritten in place, cutUnread bytes past its pointer seen before;
	// its next source takes both (Config.cutSeen).
	cutSeen   bool
	cutUnread int64
	genTail   genTail   // the pointer's generation its last source was reading at its close (Config.genTail)
	gone      bool      // deleted or out of the glob
	goneAt    time.Time // when it was seen gone
	after     *gstream  // per-path barrier: the stream previously at path
	fromEnd   bool      // LATEST, present at start

	src      *Source
	sp       *streamPub
	cancel   context.CancelFunc
	runDone  chan struct{}
	openedAt time.Time
	activeAt time.Time // last read progress or change seen
	lastRead uint64

	size, mod int64 // at the last look
	offset    int64 // the pointer's offset when closed
	epoch     uint64
	// readHeadLen, readHead: its last source's fingerprint of the first
	// bytes of the file it read under epoch, at its close (HeadRead; 0:
	// not known).
	readHeadLen int
	readHead    uint64
	reopen      bool // changed while stopping: open again
	// nl: the byte before offset is the '\n' of a "\r\n" whose line its
	// source took at the '\r' (Source.closeNL): the pointer, at that
	// line's end, is one byte short of offset and covers it (lineEnd).
	nl          bool
	commits     uint64   // its pointer's commit counter when closed
	behind      bool     // stopped with bytes unread: queued again once closed
	src0dropped bool     // its source dropped a batch it never published: queued again
	newEpoch    uint64   // the epoch a new stream's pointer file is named by and starts with
	empty       bool     // a new file with no bytes yet: admitted when it has some
	copyOf      *gstream // held back as a possible copy of this stream's file
	// keyReused: a look found its key at its path with other first bytes
	// (a new file on its inode — or its own file cut and written again
	// while its stream was closed: a copytruncate, whose copy a later file
	// of the same look may be: copyCandidate).
	keyReused bool
	// unlisted: the last scan did not list its file, yet found it at its
	// path by its key (scan): the next one decides.
	unlisted bool
	held     bool // its pointer kept for the path's empty new file (forgetOrHold)
	// heldMark: its pointer's "held" epochs line (nothing of its file
	// pending at the record's offset): found at the start (voided on disk
	// then, used by this start only: Config.held), or written by
	// forgetOrHold in this run (heldLive: still its epoch's last line,
	// voided when the stream starts again).
	heldMark  heldMark
	heldLive  bool
	watching  bool  // in watchOut: closed out of the glob, its writer may still append
	watchSize int64 // watching: its file's size at the last look
	// watching: a write event for its path seen since the watch began
	// (forward), fsnotify's error count then, and when a look first found
	// its file gone.
	watchWrote  *atomic.Bool
	watchErrs   uint64
	watchGoneAt time.Time
	heldUntil   time.Time // until when
	fpLen, fp   uint64    // the pointer's fingerprint when closed
	done        bool      // ONCE_EARLIEST: read to its size and closed for good
	owe         *owed     // closed with lines unacknowledged (a drain cut short): the commit they owe

	// hookHeld: the "held" line its source's holdDeleted wrote (set on
	// the source's goroutine), until markHeld takes it or voidHeld voids it.
	hookHeld atomic.Pointer[pointer.EpochLine]

	// tailEnd < tailSize: its file held bytes past what its stream
	// published when the stream closed (Source.closeSize, closeEnd);
	// read when it is opened again, counted lost if the file turns out
	// gone from the glob (loseTailLocked).
	tailEnd, tailSize int64
	// awaitScan: queued, its file no longer at its path and no scan has
	// seen where it went (renamed within the glob, to another matched
	// directory, out of the glob or deleted): it is not started until a
	// scan follows it or finds it gone (schedule).
	awaitScan bool
	seenAt    time.Time // when the glob first saw its file
	startSize int64     // its size then
	// touched: a source of this stream opened its file (read it, bound
	// it, forgot it, or counted it lost): unread is false from then on.
	touched bool
	// genOwn: given a gone file's pointer at the start (adoptByPath): its
	// sources do not take files the glob matches for the pointer's file or
	// a later generation (streams of their own; restartOrder publishes the
	// generations beside its path first).
	genOwn bool
	// listed: the previous run's unread-list entry this stream, queued by
	// the first scan for the file found beside the entry's path
	// (readListedBeside), reads: kept in the list until its pointer names
	// the file (a kill -9 before left nothing else naming it; review 31b).
	listed  *unreadEntry
	goneKey uint64 // with genOwn: the gone file's key its pointer named
	goneEp  uint64 // with genOwn: its pointer's epoch then
	// ownLost: with genOwn, its own file left the glob before its source
	// reached it and was counted lost (leftUnread); its sources read the
	// pointer's file beside the path only.
	ownLost bool
	// ownAt: with genOwn, where its own file was found beside the path
	// (renamed out of the glob) before its source reached it: its next
	// source opens it there (Config.ownAt); s.path stays.
	ownAt string
	// leftFrom: its file, never read, left the glob while its stream
	// waited (leftUnread) from this path for s.path beside it: the unread
	// list names it under leftFrom (a restart after a kill -9 or a stop
	// finds it beside that path by its key and first bytes and reads it,
	// the new file at that path after it), until its stream's pointer
	// does. Only while s.gone.
	leftFrom string
	// ownRead: with genOwn, a source of it reached its own file (its
	// pointer named the file at a close): from then on an ownAt is no
	// file left unread (ownOut), whatever the pointer names later (the
	// empty record once the file is forgotten).
	ownRead bool
	// copyFor: adoptCopies gave it the pointer of the file now at this
	// path, cut (restartOrder publishes that file's new lines after it).
	copyFor string
	// heldCopies: its original's source's CopiesRead when it was held
	// back; handoff: its original's resume point, handed over when the
	// original (no pointer, closed) was seen truncated while it was held.
	heldCopies uint64
	handoff    *Resume
	// onRetired: made for a key whose file was seen deleted (retired): a
	// copy taken of that key before it was seen is another file.
	onRetired bool
	// heldBorn: its file's birth time when it was held back (zero: not
	// known), to tell it from a later file on its inode (tookIt).
	heldBorn time.Time
	// isCopy: done as a copy of another stream's file; if it grows or
	// its first bytes change later it is no snapshot but a file of its
	// own, read from its start. copyHeadLen, copyHead: its first bytes'
	// fingerprint when it was taken for a copy.
	isCopy      bool
	copyHeadLen int
	copyHead    uint64
	copyEpoch   uint64  // the epoch its bytes were read under (Files)
	resume      *Resume // EARLIEST without pointers: where its last source stopped
	endAt       int64   // LATEST, present at start: its size then (where its first turn starts)
	// endHeadLen, endHead: its first bytes' fingerprint then (EndHead).
	endHeadLen int
	endHead    uint64
	// readEpoch, readEnd: the epoch its file's lines were read under
	// and where its last source stopped (closed), kept for Files when
	// its pointer is reset to the empty record (forgetStep, forgetClosed).
	readEpoch uint64
	readEnd   int64
	// ptrOff: at the start, its previous run's pointer offset (0: none;
	// logStart tells a file with unread bytes from one read to its end).
	ptrOff int64
	// shownKey: the file key Files shows when key is a made-up map key
	// (a file gone while stopped, its pointer reset: countGone); 0: key.
	shownKey uint64
	// unterm: its source's bytes after the last terminator when it
	// closed; still there while the file is closed (Unterminated).
	unterm int64
}

// owed is the commit obligation of a stream closed while lines of it were
// unacknowledged (its drain gave up after drainBound) or its last commit
// had failed: its streamPub stays in the mux's FIFO and still receives
// their acknowledgements; once every line is acknowledged the housekeeping
// opens the pointer for a moment (one descriptor of the reserve), stores
// the acknowledged position, syncs and closes it (settleOwed). Until then
// the feed is not settled (CommitOK) and the stream is not forgotten.
type owed struct {
	sp     *streamPub
	epoch  uint64 // the pointer's epoch at the close: acknowledgements of it move it
	pos    int64  // the highest acknowledged position of epoch (the record's offset at the close)
	dirty  bool   // the last commit before the close failed: store and sync even at pos
	synced uint64 // the sequence the pointer's synced record covered at the close
	ended  bool   // closed read to its end, gone from its path (closed's forgetClosed case)
	// headLen, head: the fingerprint of the file's first bytes as its
	// source read them (Source.HeadAtClose); the commit binds the file at
	// the path only if they are still those (not rewritten in place since).
	headLen int
	head    uint64
}

// NewGlob makes a glob source publishing to pub.
func NewGlob(cfg GlobConfig, pub *feed.Publisher) (*Glob, error) {
	pat, err := CompilePattern(cfg.Stream.Path)
	if err != nil {
		return nil, err
	}
	g := &Glob{cfg: cfg, pat: pat, log: cfg.Stream.Logger, pub: pub,
		byPath: map[string]*gstream{}, byKey: map[uint64]*gstream{}, retired: map[uint64]bool{}, vacated: map[string]*gstream{},
		skipped: map[string]bool{}, watched: map[string]bool{}, stopped: make(chan *gstream, 64), rest: make(chan struct{}, 1),
		events: make(chan string, 1024), kick: make(chan struct{}, 1), opening: make(chan struct{}, maxOpening),
		running: map[*gstream]struct{}{}, owed: map[*gstream]struct{}{}, readKeys: map[uint64]bool{}}
	if g.log == nil {
		g.log = hclog.NewNullLogger()
	}
	if cfg.PointerDir != "" {
		// Another file where its pointers' directory goes: a single-file
		// feed's pointer or epochs file whose name this feed took (a feed
		// removed or renamed by a reload leaves its pointer behind).
		if fi, err := os.Stat(cfg.PointerDir); err == nil && !fi.IsDir() {
			return nil, fmt.Errorf("%s is a file, not a directory: a glob feed keeps its per-file pointers there (another feed's pointer of that name? rename the feed, or move the file if that feed is gone)", cfg.PointerDir)
		}
	}
	for _, e := range cfg.Exclude {
		p, err := CompilePattern(e)
		if err != nil {
			return nil, fmt.Errorf("exclude: %w", err)
		}
		g.excl = append(g.excl, p)
	}
	for _, o := range cfg.Stream.Outputs {
		g.outs = append(g.outs, filepath.Clean(o))
	}
	if cfg.ScanInterval <= 0 {
		g.cfg.ScanInterval = 10 * time.Second
	}
	if cfg.MaxOpenFiles <= 0 {
		g.cfg.MaxOpenFiles = 1024
	}
	if cfg.CloseInactive <= 0 {
		g.cfg.CloseInactive = 5 * time.Minute
	}
	if cfg.ForgetAfter <= 0 {
		g.cfg.ForgetAfter = 24 * time.Hour
	}
	// One input and one pointer descriptor per open stream; a rotation
	// inside a stream is not possible (streams are pinned to their file).
	per := 1
	if cfg.PointerDir != "" {
		per = 2
	}
	// A reserve of maxOpenFiles/16 (at least one) is kept for short looks:
	// the fingerprint checks of new or changed files, a stream's search
	// for its file's copy or generations.
	reserve := max(1, g.cfg.MaxOpenFiles/16)
	g.maxSlots = max(1, (g.cfg.MaxOpenFiles-reserve)/per)
	g.mux = newMux(pub)
	g.drainBound = stopDrainBound
	g.life, g.endLife = context.WithCancel(context.Background())
	return g, nil
}

// setOwe sets s's commit obligation (nil: none), keeping g.owed, the set
// housekeeping settles, in step (under g.mu).
func (g *Glob) setOwe(s *gstream, o *owed) {
	s.owe = o
	if o == nil {
		delete(g.owed, s)
	} else {
		g.owed[s] = struct{}{}
	}
}

// stopDrainBound is how long a stream being closed waits for its lines'
// acknowledgements before it closes anyway and owes their commit (owed).
var stopDrainBound = time.Minute

// maxOpening is how many streams' pointer I/O calls wait for the disk at
// once: enough for their fsyncs to share the file system's journal
// commits.
const maxOpening = 32

// openPointer opens a stream's pointer (a test counts the opens in flight).
var openPointer = pointer.Open

// bounded: a ONCE_* feed.
func (g *Glob) bounded() bool { return g.cfg.Stream.Strategy.Bounded() }

// Run discovers, schedules and watches until ctx is done.
func (g *Glob) Run(ctx context.Context) error {
	g.startAt, g.ctx = time.Now(), ctx
	if g.cfg.PointerDir != "" {
		if err := os.MkdirAll(g.cfg.PointerDir, 0o700); err != nil {
			return err
		}
		g.loadPointers()
	}
	if !g.cfg.Stream.NoNotify {
		if w, err := fsnotify.NewWatcher(); err == nil {
			g.watcher = w
			go g.forward(w)
		} else {
			g.log.Warn("fsnotify unavailable; discovery by rescan only", "error", err)
		}
	}
	g.scan(ctx)
	g.mu.Lock()
	g.started = true
	g.mu.Unlock()
	if g.cfg.PointerDir != "" {
		g.countUnreadGone()
	}
	g.countGone()
	g.removeMovedList() // (countGone read it; the next stop writes its own)
	g.logStart()
	scanT := time.NewTicker(g.cfg.ScanInterval)
	defer scanT.Stop()
	tick := time.NewTicker(min(g.cfg.Stream.Poll, 250*time.Millisecond))
	defer tick.Stop()
	for {
		g.flushLosses() // counted under mu since the last pass (countLossLocked)
		if g.scanDue.Swap(false) {
			g.scan(ctx) // a queued stream waits to know where its file went
			g.liveUnreadNow()
		}
		select {
		case <-ctx.Done():
			g.stopAll()
			return nil
		case <-scanT.C:
			g.scan(ctx)
			g.liveUnreadNow()
		case <-g.kick:
			if g.drainEvents(ctx) {
				g.liveUnreadNow()
			}
		case s := <-g.stopped:
			g.closed(s)
			g.handOver(ctx) // its slot is free
		case <-g.rest:
			g.handOver(ctx)
		case <-tick.C:
			g.housekeep(ctx)
		}
	}
}

// forward turns fsnotify events into rescans (coalesced) and wake-ups of
// the stream whose file the event names.
func (g *Glob) forward(w *fsnotify.Watcher) {
	for {
		select {
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if ev.Has(fsnotify.Write) {
				if v, ok := g.watchWrites.Load(ev.Name); ok {
					v.(*atomic.Bool).Store(true)
				}
			}
			select {
			case g.events <- ev.Name:
			default:
			}
			poke(g.kick)
		case _, ok := <-w.Errors:
			if !ok {
				return
			}
			g.evErrs.Add(1)
			poke(g.kick)
		}
	}
}

// drainEvents handles the pending fsnotify events and reports whether it
// rescanned.
func (g *Glob) drainEvents(ctx context.Context) bool {
	rescan := false
	for {
		select {
		case name := <-g.events:
			if g.watched[name] {
				// An event naming a watched directory (removed, renamed,
				// recreated): watch it again at the rescan.
				delete(g.watched, name)
				rescan = true
				continue
			}
			g.mu.Lock()
			s := g.byPath[name]
			if s == nil && (g.linkTo[name] != nil || g.targetDirs[filepath.Dir(name)]) {
				// A matched symlink's target, or another file in a
				// directory watched only for targets: the symlinks'
				// streams are woken, nothing else (no rescan).
				for _, lp := range g.linkTo[name] {
					switch ls := g.byPath[lp]; {
					case ls != nil && ls.st == stOpen:
						poke(ls.src.events)
						ls.activeAt = time.Now()
					case ls != nil && !ls.gone && g.lookAt(ls):
					case g.linkTo[name] != nil:
						rescan = true
					}
				}
				g.mu.Unlock()
				continue
			}
			switch {
			case s != nil && s.st == stOpen:
				poke(s.src.events)
				s.activeAt = time.Now()
			case s != nil && !s.gone && g.lookAt(s):
				// A write to a closed file: no rescan needed.
			default:
				rescan = true
			}
			g.mu.Unlock()
			continue
		default:
		}
		break
	}
	if rescan {
		g.scan(ctx)
	}
	return rescan
}

// lookAt checks a tracked stream's file at its path (an fsnotify event
// named it); false when the path no longer names it (a rescan decides).
func (g *Glob) lookAt(s *gstream) bool {
	st, err := os.Stat(s.path)
	if err != nil || !st.Mode().IsRegular() {
		return false
	}
	dev, ino, err := fileutil.DevInoPath(s.path)
	if err != nil || pointer.FileKey(dev, ino) != s.key {
		return false
	}
	f := found{path: s.path, dev: dev, ino: ino, size: st.Size(), mod: st.ModTime().UnixNano()}
	if bt := birthTimeTarget(s.path); !bt.IsZero() {
		// A second look: replaced since the key's, it is another file's
		// birth — sameFile then says no and a rescan decides.
		f.born = bt.UnixNano()
	}
	if !g.sameFile(s, f) {
		return false
	}
	g.seen(s, f, time.Now())
	g.schedule(g.ctx)
	return true
}

// found is one matching regular file at one scan.
type found struct {
	path      string
	dev, ino  uint64
	size, mod int64
	born      int64 // birth time (UnixNano) from the same stat as the key; 0: not known
}

func (g *Glob) own(p string) bool { return ownPath(g.outs, p) }

// ownPath reports whether p is one of outs or lies under one.
func ownPath(outs []string, p string) bool {
	for _, o := range outs {
		if p == o || under(p, o) {
			return true
		}
	}
	return false
}

func (g *Glob) excluded(p string) bool {
	for _, e := range g.excl {
		if e.Match(p) {
			return true
		}
	}
	return false
}

// walk lists the matching files below root, watching every directory that
// may hold matches (symlinked directories are not descended).
func (g *Glob) walk() []found {
	if g.beforeWalk != nil {
		g.beforeWalk()
	}
	out := make([]found, 0, g.lastWalk)
	var st statScratch
	g.walkGen++
	// Where the outputs lead, symlinks resolved (dataDir's included; an
	// output without symlinks is its own real path): a directory reached
	// through a symlink (the glob's root, or an ancestor of it), one that
	// is dataDir's symlink target, or a symlink matched, whose real path
	// is under one is not read. The output directories' identities catch
	// what no path shows (a bind mount of dataDir under the glob).
	var reals []string
	var ownDirs map[[2]uint64]bool
	for _, o := range g.outputsNow() {
		if o.real != "" {
			reals = append(reals, o.real)
		} else {
			reals = append(reals, o.p)
		}
		if st, err := os.Stat(o.p); err == nil && st.IsDir() {
			if dev, ino, err := fileutil.DevInoPath(o.p); err == nil {
				if ownDirs == nil {
					ownDirs = map[[2]uint64]bool{}
				}
				ownDirs[[2]uint64{dev, ino}] = true
			}
		}
	}
	var visit func(dir, real string)
	// real: dir with its symlinks resolved ("": not known).
	visit = func(dir, real string) {
		if g.own(dir) || (real != "" && ownPath(reals, real)) {
			return
		}
		d, err := os.Open(dir)
		if err != nil {
			return
		}
		if ownDirs != nil {
			if dev, ino, err := fileutil.DevIno(d); err == nil && ownDirs[[2]uint64{dev, ino}] {
				d.Close()
				g.ownNote(dir)
				return
			}
		}
		// Watched before it is listed: a file created in between is seen
		// by the listing or by an event.
		if g.watcher != nil && !g.watched[dir] {
			if err := g.watcher.Add(dir); err == nil {
				g.watched[dir] = true
				delete(g.targetDirs, dir) // matched here now: its events are the glob's
			}
		}
		ents, err := d.ReadDir(-1)
		if err != nil {
			d.Close()
			return
		}
		// One stat per matching entry, relative to the open directory
		// (this walk recurs every scanIntervalMillis over every file);
		// subdirectories are visited once it is closed.
		m := g.pat.inDir(dir)
		var sub []string
		for _, e := range ents {
			name := e.Name()
			if e.IsDir() {
				if p := filepath.Join(dir, name); g.pat.MayHoldMatches(p) {
					sub = append(sub, p)
				}
			}
			if !m.match(name) {
				continue
			}
			p := filepath.Join(dir, name)
			if g.excluded(p) || g.own(p) {
				continue
			}
			regular, isDir, dev, ino, size, mod, born, err := statAt(d, name, &st)
			link := e.Type()&fs.ModeSymlink != 0
			if errors.Is(err, fs.ErrNotExist) {
				if !link || !lexists(p) {
					continue // deleted since the listing: gone, not skipped
				}
				err = errDangling // a symlink to nothing: skipped
				g.linkDangling(p, reals)
			}
			if err != nil || !regular {
				g.skip(p, isDir, err)
				continue
			}
			if link && g.linkOwn(p, dev, ino, reals) {
				continue
			}
			out = append(out, found{path: p, dev: dev, ino: ino, size: size, mod: mod, born: born})
		}
		d.Close()
		for _, p := range sub {
			r := ""
			if real != "" {
				r = filepath.Join(real, filepath.Base(p))
			}
			visit(p, r)
		}
	}
	root := g.pat.Root()
	for d := root; ; d = filepath.Dir(d) {
		// A root that does not exist yet: watch the nearest ancestor.
		if _, err := os.Stat(d); err == nil {
			if d != root {
				if g.watcher != nil && !g.watched[d] && g.watcher.Add(d) == nil {
					g.watched[d] = true
					delete(g.targetDirs, d)
				}
			}
			break
		}
		if d == "/" || d == "." {
			break
		}
	}
	real := ""
	if r, err := filepath.EvalSymlinks(root); err == nil {
		real = r // the walk descends no symlink: below root, dir's real path is real's
	}
	visit(root, real)
	out = g.dropOwnFiles(out)
	for p, l := range g.links {
		if l.gen != g.walkGen {
			delete(g.links, p) // not matched any more
			g.unlinkTarget(p, l.target)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	g.lastWalk = len(out)
	return out
}

// errDangling is why a dangling symlink that matches is skipped.
var errDangling = errors.New("a dangling symlink (its target does not exist)")

// lexists reports whether p names something itself (a symlink not
// followed): a matching entry whose stat found nothing is a dangling
// symlink, not a file deleted since the listing.
func lexists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// linkSeen is a matched symlink as the last walks saw it: the file it
// reached, and whether its real path is one of the daemon's outputs or
// under dataDir.
type linkSeen struct {
	dev, ino uint64
	own      bool
	gen      uint64 // the walk that last matched it
	target   string // its resolved path ("": not resolved)
}

// linkOwn reports whether the matched symlink p, reaching the file (dev,
// ino), leads to one of the daemon's outputs or under dataDir (reals: the
// outputs' resolved paths). Its path is resolved once, and again when it
// reaches another file.
func (g *Glob) linkOwn(p string, dev, ino uint64, reals []string) bool {
	if l, ok := g.links[p]; ok && l.dev == dev && l.ino == ino {
		l.gen = g.walkGen
		g.links[p] = l
		return l.own
	}
	own := false
	target := ""
	if r, err := filepath.EvalSymlinks(p); err == nil {
		own = g.own(r) || ownPath(reals, r)
		target = r
	}
	if g.links == nil {
		g.links = map[string]linkSeen{}
	}
	if old, ok := g.links[p]; ok {
		g.unlinkTarget(p, old.target)
	}
	g.links[p] = linkSeen{dev: dev, ino: ino, own: own, gen: g.walkGen, target: target}
	if own {
		g.ownNote(p)
	} else if target != "" {
		g.watchTarget(p, target)
	}
	return own
}

// linkDangling notes the matched dangling symlink p: the directory where
// its target would be made is watched, so the target's creation is an
// event (a rescan) and not a wait for scanIntervalMillis — a link made
// before the file it names (an application's current.log made at its
// deployment, the file at its first write). Where it would lead is found
// again at each walk (a link retargeted); a target under the daemon's
// outputs or dataDir is not watched (the walk skips it once it exists).
func (g *Glob) linkDangling(p string, reals []string) {
	target := danglingTarget(p)
	if target != "" && (g.own(target) || ownPath(reals, target)) {
		target = ""
	}
	if g.links == nil {
		g.links = map[string]linkSeen{}
	}
	if old, ok := g.links[p]; ok && old.target != target {
		g.unlinkTarget(p, old.target)
	}
	// dev and ino 0 (no file): linkOwn resolves it again once it reaches one.
	g.links[p] = linkSeen{gen: g.walkGen, target: target}
	if target != "" {
		g.watchTarget(p, target)
	}
}

// danglingTarget is where the dangling symlink p would lead: its links
// followed (40 at most, the kernel's limit) to the first name that does
// not exist, that name's directory resolved; "" when that directory does
// not exist either or the chain loops.
func danglingTarget(p string) string {
	cur := p
	for range 40 {
		fi, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			d, err := filepath.EvalSymlinks(filepath.Dir(cur))
			if err != nil {
				return ""
			}
			return filepath.Join(d, filepath.Base(cur))
		}
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			return "" // not dangling (any more)
		}
		to, err := os.Readlink(cur)
		if err != nil {
			return ""
		}
		if !filepath.IsAbs(to) {
			d, err := filepath.EvalSymlinks(filepath.Dir(cur))
			if err != nil {
				return ""
			}
			to = filepath.Join(d, to)
		}
		cur = to
	}
	return ""
}

// watchTarget watches the directory of the matched symlink p's target
// (outside the glob's watched directories, a write there sends no event
// the glob's own watches see: a rewrite of the target would wait for the
// rescan) and maps target to p.
func (g *Glob) watchTarget(p, target string) {
	if g.linkTo == nil {
		g.linkTo = map[string][]string{}
	}
	if !slices.Contains(g.linkTo[target], p) {
		g.linkTo[target] = append(g.linkTo[target], p)
	}
	dir := filepath.Dir(target)
	if g.watcher == nil || g.watched[dir] || g.targetDirs[dir] {
		return
	}
	if g.watcher.Add(dir) == nil {
		if g.targetDirs == nil {
			g.targetDirs = map[string]bool{}
		}
		g.targetDirs[dir] = true
	}
}

// unlinkTarget forgets that the symlink p led to target.
func (g *Glob) unlinkTarget(p, target string) {
	if target == "" {
		return
	}
	ls := slices.DeleteFunc(g.linkTo[target], func(q string) bool { return q == p })
	if len(ls) == 0 {
		delete(g.linkTo, target)
	} else {
		g.linkTo[target] = ls
	}
}

// dropOwnFiles removes from a walk's list the files that are the daemon's
// outputs by identity (device and inode): reached through a symlink or a
// hard link, or the daemon's standard output (Config.OutputFiles). The
// outputs are stat'ed after the listing: an output the walk saw existed
// then, so its identity is known here.
func (g *Glob) dropOwnFiles(out []found) []found {
	if g.ownIDs == nil {
		g.ownIDs = map[[2]uint64]bool{}
	}
	ids := g.ownIDs
	clear(ids)
	for _, o := range g.outs {
		if dev, ino, err := fileutil.DevInoPath(o); err == nil {
			ids[[2]uint64{dev, ino}] = true
		}
	}
	for _, f := range g.cfg.Stream.OutputFiles {
		ids[[2]uint64{f.Dev, f.Ino}] = true
	}
	if len(ids) == 0 {
		return out
	}
	return slices.DeleteFunc(out, func(f found) bool {
		if !ids[[2]uint64{f.dev, f.ino}] {
			return false
		}
		g.ownNote(f.path)
		return true
	})
}

// ownNote logs once per path that a match is not read: it is one of the
// daemon's outputs under another name.
func (g *Glob) ownNote(p string) {
	if g.ownLogged[p] {
		return
	}
	if g.ownLogged == nil {
		g.ownLogged = map[string]bool{}
	}
	g.ownLogged[p] = true
	g.log.Warn("glob match not read: it is tailfeed's own output (a sink's output or a file under dataDir) under another name", "path", p)
}

func (g *Glob) skip(p string, isDir bool, err error) {
	if g.skipped[p] {
		return
	}
	g.skipped[p] = true
	g.filesSkipped.Add(1)
	why := "not a regular file"
	if err != nil {
		why = err.Error()
	} else if isDir {
		why = "a directory"
	}
	g.log.Warn("glob match skipped: not a regular file", "path", p, "why", why)
}

// walkAtStart is the first scan's walk. A walk is no snapshot: it reads
// a directory, then stats each name, and a rotation in between (p.log
// renamed p.log.5, a new p.log made after) leaves the renamed file in no
// list — read before the rename, p.log's stat names the new file, or none
// yet; p.log.5 is not in the names read. At the start a pointer whose file
// no list holds is taken for a file gone while stopped: counted lost and
// its pointer given to the file at its path, and the next look, finding
// the file in the glob, read it again from its start (the thirty-sixth
// session's kill -9 rotation soak under load: a whole generation twice in
// the exactlyOnce output, a false lostTails). So while the walk misses
// some of the pointers' files, the directories are walked again (twice at
// most), and the walk missing the fewest is taken: a file rotated out of
// the glob while tailfeed was down costs one more walk at the start.
//
// A walk that met a file born after it began (birth times, where the file
// system tells them) raced a change of the directories: a rotation's new
// file stat'ed at the path whose old file was renamed after the directory
// was read. It is walked again too (twice at most), and the later walk
// taken: the next look would find the renamed file new, with no barrier
// before the path's new file.
func (g *Glob) walkAtStart() []found {
	want := g.keysAtStart()
	walk := func() []found {
		l := g.walk()
		if g.startWalk != nil {
			g.startWalk(l)
		}
		return l
	}
	at := time.Now()
	list := walk()
	missing, raced := keysMissing(want, list), bornSince(list, at)
	for i := 0; i < 2 && (missing > 0 || raced); i++ {
		at = time.Now()
		again := walk()
		m, r := keysMissing(want, again), bornSince(again, at)
		if m > missing {
			break // (a change since: the earlier walk is no worse)
		}
		improved := m < missing
		list, missing, raced = again, m, r
		if !improved && !r {
			break // the same keys missing, no race: gone for good
		}
	}
	return list
}

// bornSince: a file of list was born at or after at — less a margin: the
// file system stamps births with a coarse clock, a tick behind.
func bornSince(list []found, at time.Time) bool {
	t := at.Add(-10 * time.Millisecond).UnixNano()
	for _, f := range list {
		if f.born >= t {
			return true
		}
	}
	return false
}

// keysAtStart is the file keys the start expects in the glob: those the
// pointers found name, and those of the previous run's unread list (a
// listed file the walk missed was counted gone while stopped, then read
// when the next look found it: a false lostTails in the same soak).
func (g *Glob) keysAtStart() map[uint64]bool {
	want := maps.Clone(g.ptrKeys)
	if g.cfg.PointerDir == "" {
		return want
	}
	ws, _ := readUnreadList(filepath.Join(g.cfg.PointerDir, unreadListName))
	for _, w := range ws {
		if w.Gone || w.Out {
			continue // (Out: listed beside its path, out of the glob)
		}
		if want == nil {
			want = map[uint64]bool{}
		}
		want[w.Key] = true
		if g.listedAtStart == nil {
			g.listedAtStart = map[uint64]bool{}
		}
		g.listedAtStart[w.Key] = true
	}
	return want
}

// keysMissing is how many of want are not in list.
func keysMissing(want map[uint64]bool, list []found) int {
	if len(want) == 0 {
		return 0
	}
	in := make(map[uint64]bool, len(want))
	for _, f := range list {
		if k := pointer.FileKey(f.dev, f.ino); want[k] {
			in[k] = true
		}
	}
	return len(want) - len(in)
}

// scan matches the pattern and reconciles the tracked streams with it.
func (g *Glob) scan(ctx context.Context) {
	var list []found
	if !g.started { // (written by this goroutine only)
		list = g.walkAtStart()
	} else {
		list = g.walk()
	}
	if g.afterWalk != nil {
		g.afterWalk(list)
	}
	now := time.Now()
	defer g.flushLosses() // after the unlock
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.keys == nil {
		g.keys = make(map[uint64]string, len(list))
	}
	keys := g.keys // reused: a rescan of thousands of files rebuilds it
	clear(keys)
	for _, f := range list {
		k := pointer.FileKey(f.dev, f.ino)
		if _, dup := keys[k]; dup {
			continue // the same file under several paths: the first in sort order
		}
		keys[k] = f.path
		if !g.started && f.born != 0 && g.listedAtStart[k] {
			if g.bornAtStart == nil {
				g.bornAtStart = map[uint64]int64{}
			}
			g.bornAtStart[k] = f.born // (readListedBesideAll; dropped after it)
		}
	}
	var made []*gstream // the streams this scan makes
	for _, f := range list {
		k := pointer.FileKey(f.dev, f.ino)
		if keys[k] != f.path {
			continue
		}
		if s := g.byKey[k]; s != nil && !(s.gone && g.retired[k]) && !s.ownLost && g.sameFile(s, f) {
			if s.path != f.path {
				// Renamed within the glob: the stream follows its file.
				if g.byPath[s.path] == s {
					delete(g.byPath, s.path)
					g.vacated[s.path] = s
				}
				g.log.Debug("file renamed within the glob", "from", s.path, "to", f.path)
				s.path = f.path
				g.byPath[f.path] = s
			}
			s.gone, s.unlisted = false, false
			s.ownAt = "" // back in the glob: its file is at s.path (review 21c A, B)
			s.leftFrom = ""
			g.seen(s, f, now)
			continue
		}
		if s := g.byKey[k]; s != nil {
			// The key with other first bytes (inode reuse), or a retired
			// key: a new file. The old stream stays tracked, gone, until
			// it is forgotten.
			delete(g.byKey, k)
			if !s.gone {
				s.gone, s.goneAt = true, now
				if (s.st == stQueued || s.st == stClosed) && g.ownAfterGone(s) {
					// Given a gone file's pointer at the start, its own
					// file deleted before its source reached it: counted
					// whole, and the pointer's file is read beside the
					// path — now, or once its owed commit is made
					// (settleOwed) — never the new file on its inode
					// (Config.ownGone; review 21a B).
					g.ownGone(s)
					if s.owe == nil {
						g.enqueue(s)
					}
				} else if (s.st == stQueued || s.st == stClosed) && g.unread(s) {
					// Its file deleted (its inode is another file's now)
					// with bytes its stream never read: nobody else
					// counts them.
					g.neverRead(s)
				} else {
					// Read to the size last seen and committed: its
					// pointer records that nothing of it is pending, as
					// for a closed file gone from the glob (a restart
					// would count it gone while stopped).
					g.forgetClosed(s, true)
				}
			}
			s.keyReused = true
			g.ghosts++
			g.byKey[1<<63|g.ghosts] = s
		}
		onRetired := g.retired[k]
		delete(g.retired, k) // a new stream from here on
		carried, isCarried := g.cfg.Resumes[k]
		isCarried = isCarried && !g.started
		if g.bounded() && (g.started || (g.cfg.Resumes != nil && !isCarried)) {
			continue // ONCE_*: only the files matched at start (a reload's: at the first start)
		}
		if g.cfg.Stream.Strategy == OnceLatest {
			continue // delivers nothing
		}
		prev := g.byPath[f.path]
		if prev == nil {
			prev = g.vacated[f.path]
		}
		delete(g.vacated, f.path)
		s := &gstream{path: f.path, first: f.path, key: k, size: f.size, mod: f.mod, activeAt: now, seenAt: now, startSize: f.size, onRetired: onRetired}
		if ptr, first, off := g.ptrFor(k, f); ptr != "" {
			s.ptrPath, s.ptrOff = ptr, off
			if first != "" {
				s.first = first // renamed while stopped: still named as first matched
			}
		}
		if isCarried && s.ptrPath == "" {
			// Restarted by a reload: on from where its previous stream
			// stopped (its source checks the file is still the one read).
			s.first, s.resume, s.startSize = carried.First, carried.Resume, carried.StartSize
			s.fromEnd, s.endAt, s.endHeadLen, s.endHead = carried.FromEnd, carried.EndAt, carried.EndHeadLen, carried.EndHead
		} else if !g.started && g.cfg.Stream.Strategy == Latest && g.cfg.Resumes == nil {
			s.fromEnd, s.endAt = true, f.size
			// Its first bytes, to tell a rewrite in place before its
			// first turn from growth (one read per file, at start).
			s.endHeadLen, s.endHead = headOfPath(f.path)
		}
		if prev != nil && prev != s {
			// Also behind a closed one with nothing owed (barrierDone
			// says so while it stays closed): this look may find its file
			// grown under a new name later in its list (p.log.6 sorts
			// after p.log) and queue it again — the new file then waits
			// for it (the soak of the thirty-sixth session: a last burst
			// published after the next file's first lines).
			s.after = prev
		}
		g.byKey[k] = s
		g.byPath[f.path] = s
		made = append(made, s)
		if isCarried && carried.Copy {
			g.markCopy(s, nil) // a copy its previous glob did not read: not read (unless it changes)
			continue
		}
		g.admit(s, f, now)
	}
	if !g.started {
		g.adoptCopies(made)
		g.adoptByPath(made)
		g.restartOrder(made)
	} else {
		g.runningOrder(made)
	}
	if g.afterOrder != nil {
		g.afterOrder(made)
	}
	// Tracked streams whose file is not matched any more.
	for k, s := range g.byKey {
		if p, ok := keys[k]; ok && p == s.path {
			continue
		}
		if _, ok := keys[k]; ok {
			continue
		}
		if !s.gone {
			away := !exists(s.path, s.key) // once: a file created at its path since is decided by the next scan
			if !away && !s.unlisted && g.matched(s.path) {
				// Not listed by the walk, yet at its path in the glob by
				// its key now: deleted, and a file created there since
				// the walk was given its inode, or put back. Seen gone
				// now, the stream would not be forgotten (its file "at
				// its path") and the new file's stream would not look at
				// it again (already gone): its pointer, naming a deleted
				// file, would count "gone while stopped" at the next
				// start. The next scan tells them apart (sameFile), as
				// for any file at its path; once.
				s.unlisted = true
				g.scanDue.Store(true)
				continue
			}
			s.unlisted = false
			s.gone, s.goneAt = true, now
			if away && (s.st == stQueued || s.st == stClosed) {
				// Out of the glob beside its path, with bytes its stream
				// has not read: read there (s.path names it now).
				switch {
				case g.unread(s):
					if g.leftUnread(s) {
						g.enqueue(s) // closed: read where it is now
						away = false
					}
				case g.ownAfterGone(s):
					// Its source read (some of) the pointer's file, not
					// its own yet: leftUnread counts its own file and
					// its stream reads the pointer's file on beside the
					// path — now, or once its owed commit is made
					// (settleOwed).
					away = false
					if s.owe == nil && g.leftUnread(s) {
						g.enqueue(s)
					} else if s.owe != nil && g.findBeside(s) == "" {
						g.ownGone(s) // counted now (review 21a F)
					}
				case s.st == stClosed && s.owe == nil:
					away = !g.readBeside(s)
				case s.owe != nil && g.findBeside(s) != "":
					// Owing its commit: read there once it is made
					// (settleOwed; commitOwed binds a pointer naming no
					// file yet where the file went), its noted tail with
					// it — closed, or queued to start again.
					away = false
				}
			}
			if away {
				if s.st != stOpen && s.st != stStopping {
					// Retired once no descriptor holds it (closed): back
					// in the glob meanwhile, it is the file its stream
					// reads (its inode cannot be reused while open).
					g.retired[k] = true
				}
				if s.st == stClosed || (s.tailSize > s.tailEnd && !g.pointerNames(s)) {
					// Bytes past what its stream published, read by
					// nobody now: closed; or queued (or started again)
					// with a pointer naming no file, whose source
					// finds nothing and counts nothing. A pointer
					// naming the file: its source finds it by key
					// beside its path, or counts it.
					g.loseTailLocked(s)
				}
				g.forgetClosed(s, true)
			}
			if s.st == stOpen {
				poke(s.src.events)
			}
		}
	}
	for p, s := range g.vacated {
		// Kept for a closed stream with nothing owed while it still
		// tracks its file elsewhere: its writer may append to it through
		// its descriptor before it makes the path's new file, and the
		// new file then waits for it (s.after; review 36 E). Dropped once
		// no stream is to wait for.
		if s.st == stClosed && s.owe == nil && (s.done || s.gone || s.path == p || g.byKey[s.key] != s) {
			delete(g.vacated, p) // nothing left to wait for
		}
	}
	g.scanned = true
	for _, s := range g.queue {
		s.awaitScan = false // followed, at its path again, or gone
	}
	if !g.started {
		if g.firstScanStep != nil {
			g.firstScanStep(0)
		}
		g.readListedBesideAll() // the previous run's list, before the start's own
		g.bornAtStart, g.listedAtStart = nil, nil
		if g.firstScanStep != nil {
			g.firstScanStep(1)
		}
		g.startUnreadLocked() // before the first stream starts
	}
	g.schedule(ctx)
}

// restartOrder keeps the epoch barrier per path across a restart (DESIGN
// §10 "Order", as §4 reads a pointer's generation, then the later
// generations, before the file at the path): the streams a start finds
// first matched under one path elsewhere now (files rotated away from it:
// their pointers name it), the files new at this start beside it under one
// of its rotatedNames (generations rotated while tailfeed was stopped), and
// the file at the path are published one after the other: the first two
// kinds oldest first by mtime, the file at the path last.
func (g *Glob) restartOrder(made []*gstream) {
	var away map[string][]*gstream // first path → streams now elsewhere
	for _, s := range made {
		if s.copyFor != "" {
			// A copy adoptCopies gave a pointer: before the new lines of the
			// file it was cut from (at copyFor, whatever the stream's first
			// path: it may have been renamed within the glob).
			if away == nil {
				away = map[string][]*gstream{}
			}
			away[s.copyFor] = append(away[s.copyFor], s)
			continue
		}
		if s.first != s.path || s.genOwn {
			if away == nil {
				away = map[string][]*gstream{}
			}
			if s.genOwn {
				// Given a gone file's pointer at its own path (adoptByPath):
				// the generations the glob matches beside it, rotated
				// while stopped, go first; it reads its pointer's file, if
				// found, then its own.
				if _, ok := away[s.first]; !ok {
					away[s.first] = nil
				}
				continue
			}
			away[s.first] = append(away[s.first], s)
		}
	}
	// Also a path no stream is away from whose generations are in the
	// glob: each of them found by this start at its own name — new, or
	// with a pointer of its own made there by a run that found it there
	// (read in part, or not at all: adopted, then a kill -9) — is ordered
	// all the same (the thirty-sixth session's soak: such a generation,
	// its own pointer made at p.log.9, read after p.log.10 to p.log.15).
	// (By directory and stem: a start with thousands of files costs a
	// map, not their square; a stem shared by more than maxStemOrder of
	// them is no rotation's.)
	stems := map[stemKey][]*gstream{}
	for _, s := range made {
		if s.first == s.path {
			k := stemOf(s.path)
			stems[k] = append(stems[k], s)
		}
	}
	for _, at := range made {
		if _, ok := away[at.path]; ok || at.first != at.path || at.copyFor != "" || at.genOwn {
			continue
		}
		cs := stems[stemOf(at.path)]
		if len(cs) < 2 || len(cs) > maxStemOrder {
			continue
		}
		base := filepath.Base(at.path)
		for _, s := range cs {
			if name := filepath.Base(s.path); s != at && sameStem(name, base) && isRotatedName(g.cfg.Stream.RotatedNames, name, base) {
				if away == nil {
					away = map[string][]*gstream{}
				}
				away[at.path] = nil
				break
			}
		}
	}
	for p, ss := range away {
		base := filepath.Base(p)
		for _, s := range stems[stemOf(p)] { // (first matched at their own paths, in p's directory)
			name := filepath.Base(s.path)
			if _, head := away[s.path]; !head && sameStem(name, base) && isRotatedName(g.cfg.Stream.RotatedNames, name, base) {
				// Born and rotated while stopped (no pointer names p), or
				// given a pointer of its own where it is now by a run that
				// found it there.
				ss = append(ss, s)
			}
		}
		slices.SortStableFunc(ss, func(a, b *gstream) int { return cmp.Compare(a.mod, b.mod) })
		if at := g.byPath[p]; at != nil && (at.first == p || at.genOwn) && at.copyFor == "" && slices.Contains(made, at) {
			ss = append(ss, at)
		}
		for i := 1; i < len(ss); i++ {
			if ss[i].after == nil && !waitsFor(ss[i-1], ss[i]) {
				ss[i].after = ss[i-1]
			}
		}
	}
}

// runningOrder keeps the per-path order (DESIGN §10 "Order") of the
// generations one look finds new while running: two rotations or more
// since the last look (p.log renamed p.log.7 and a new p.log made, while
// p.log's stream read what is p.log.6 now) leave files under the path's
// rotated names that no look saw at the path, so no barrier named them —
// the new p.log waited for p.log's previous stream only, and p.log.7 for
// nothing (the thirty-sixth session's soak under load: a generation
// published whole before the one before it). Each such new file, queued,
// with no pointer, in the directory of a new file at a path whose previous
// stream it waits for, under one of that path's rotatedNames, goes between
// the two, oldest first by mtime (as restartOrder orders the generations
// rotated while tailfeed was down). Under mu.
func (g *Glob) runningOrder(made []*gstream) {
	if len(made) < 2 {
		return
	}
	// The candidates by directory and stem (sameStem): one look making
	// thousands of new files costs a map, not their square — and a stem
	// shared by more than maxStemOrder of them is no rotation's (left
	// unordered).
	// free: s waits for nothing now — no barrier, or one already lifted
	// (a new file at a path a closed, finished stream held before the
	// look followed that stream away: logrotate's numbered shift,
	// p.log.1 → p.log.2 before p.log → p.log.1; review 36b 1).
	free := func(s *gstream) bool { return s.after == nil || g.barrierDone(s.after) }
	var cands map[stemKey][]*gstream
	for _, s := range made {
		if s.st == stQueued && free(s) && !s.done && s.copyOf == nil && s.ptrPath == "" && s.first == s.path {
			if cands == nil {
				cands = map[stemKey][]*gstream{}
			}
			k := stemOf(s.path)
			cands[k] = append(cands[k], s)
		}
	}
	var awayAt map[string]*gstream // first path → the newest stream first matched there, now elsewhere (built once)
	for _, n := range made {
		// (Any new file at a path: also one empty at this look — logrotate's
		// create — or held back as a possible copy; when it is queued
		// later it waits all the same: review 36b 2.)
		if n.first != n.path || n.done {
			continue
		}
		base := filepath.Base(n.path)
		cs := cands[stemOf(n.path)]
		if len(cs) > maxStemOrder {
			continue
		}
		var gens []*gstream
		for _, s := range cs {
			name := filepath.Base(s.path)
			if s != n && free(s) && sameStem(name, base) && isRotatedName(g.cfg.Stream.RotatedNames, name, base) &&
				!waitsFor(n.after, s) {
				gens = append(gens, s)
			}
		}
		if len(gens) == 0 {
			continue
		}
		slices.SortStableFunc(gens, func(a, b *gstream) int { return cmp.Compare(a.mod, b.mod) })
		prev := n.after
		if prev == nil {
			// No stream was at the path (the start's walk missed the
			// path's file as it was rotated): the newest stream first
			// matched there and now elsewhere goes before them.
			if awayAt == nil {
				awayAt = map[string]*gstream{}
				inMade := make(map[*gstream]bool, len(made))
				for _, m := range made {
					inMade[m] = true
				}
				for _, o := range g.byKey {
					if o.first != o.path && !o.done && !inMade[o] {
						if q := awayAt[o.first]; q == nil || o.mod > q.mod {
							awayAt[o.first] = o
						}
					}
				}
			}
			if o := awayAt[n.path]; o != nil && !waitsFor(o, n) && !slices.ContainsFunc(gens, func(x *gstream) bool { return waitsFor(o, x) }) {
				prev = o
			}
		}
		for _, s := range gens {
			s.after, prev = prev, s
		}
		n.after = prev
	}
}

// stemKey is the bucket restartOrder and runningOrder look for a path's
// generations in: the directory, and the name up to its first '.', '-' or
// '_' — a prefix of every name sameStem takes for a generation of it
// (messages-20261201 for messages, app-20261201.log for app.log).
type stemKey struct{ dir, stem string }

func stemOf(p string) stemKey {
	name := filepath.Base(p)
	if i := strings.IndexAny(name, ".-_"); i >= 0 {
		name = name[:i]
	}
	return stemKey{filepath.Dir(p), name}
}

// maxStemOrder bounds the files of one directory and stem that
// restartOrder and runningOrder order as one path's generations: more is
// no rotation's (a directory of app.1.log … app.9999.log), left unordered
// rather than looked at in pairs.
const maxStemOrder = 512

// sameStem: name begins with base's name up to its first dot, then '.',
// '-' or '_' (a generation of base, not of another file a rotatedNames
// glob like "*.old" also matches).
func sameStem(name, base string) bool {
	stem, _, _ := strings.Cut(base, ".")
	return len(name) > len(stem) && strings.HasPrefix(name, stem) && strings.ContainsRune(".-_", rune(name[len(stem)]))
}

// waitsFor: s already waits, through its barriers, for t (so t waiting
// for s would wait forever).
func waitsFor(s, t *gstream) bool {
	for p := s; p != nil; p = p.after {
		if p == t {
			return true
		}
	}
	return false
}

// owedWaits: s owes a commit (that would bind its file: its pointer names
// none), and the file is no longer at its path while no scan has seen it
// gone (settleOwed).
func (g *Glob) owedWaits(s *gstream) bool {
	o := s.owe
	return o != nil && s.ptrPath != "" && !s.gone && !exists(s.path, s.key) && !g.pointerNames(s)
}

// finalScan follows, for Close, the files of streams whose owed commit
// waits for a scan (owedWaits): Run has returned, none comes. Called
// without mu.
func (g *Glob) finalScan() {
	g.mu.Lock()
	need := false
	for s := range g.owed {
		if s.src == nil && g.owedWaits(s) {
			need = true
			break
		}
	}
	g.mu.Unlock()
	if !need {
		return
	}
	list := g.walk()
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, f := range list {
		s := g.byKey[pointer.FileKey(f.dev, f.ino)]
		if s != nil && s.owe != nil && s.src == nil && s.path != f.path && g.owedWaits(s) {
			if g.byPath[s.path] == s {
				delete(g.byPath, s.path)
			}
			s.path = f.path
			if g.byPath[f.path] == nil {
				g.byPath[f.path] = s
			}
		}
	}
	for s := range g.owed {
		if s.src == nil && g.owedWaits(s) {
			// Not in the glob: out of it beside its path, the commit
			// names it there (the restart counts it, gone while stopped).
			if p := g.findBeside(s); p != "" {
				s.path, s.gone = p, true
			}
		}
	}
}

// headOfPath is the fingerprint of path's first bytes (up to
// pointer.MaxFingerprint); 0, 0 when it cannot be read.
func headOfPath(path string) (int, uint64) {
	fh, err := fileutil.OpenRegular(path)
	if err != nil {
		return 0, 0
	}
	defer fh.Close()
	b := make([]byte, pointer.MaxFingerprint)
	n, err := fh.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, 0
	}
	return n, pointer.Fingerprint(b[:n])
}

// rewrittenAt: the file at path is still the one of key, and its first n
// bytes no longer hash to fp (false when it cannot be read, or another
// file took the path since the look: nothing is known of it then).
func rewrittenAt(path string, key uint64, n int, fp uint64) bool {
	fh, err := fileutil.OpenRegular(path)
	if err != nil {
		return false
	}
	defer fh.Close()
	dev, ino, err := fileutil.DevIno(fh)
	if err != nil || pointer.FileKey(dev, ino) != key {
		return false
	}
	return !headIs(fh, n, fp)
}

// seenEnd is how far the glob saw s's file that its stream is due to read:
// the largest size seen (a look's, or its last source's at close), for
// ONCE_EARLIEST not past the file's size when it was first matched (what
// was appended since is never read, so never lost).
func (g *Glob) seenEnd(s *gstream) int64 {
	end := max(s.size, s.tailSize)
	if g.bounded() {
		lim := s.startSize
		if s.resume != nil && s.resume.Limit > 0 {
			lim = s.resume.Limit
		}
		end = min(end, lim)
	}
	return end
}

// unreadSeen is what the glob saw of s's file that its stream never read:
// from unreadFrom to seenEnd, n bytes (0: nothing known to be unread).
func (g *Glob) unreadSeen(s *gstream) (from, n int64) {
	from = g.unreadFrom(s)
	if n = g.seenEnd(s) - from; from < 0 || n < 0 {
		n = 0
	}
	return from, n
}

// resumeUnread is what s's file held past where its last source stopped,
// as the glob last saw it while its first bytes were those that source
// read: the bytes a rewrite or truncation found at the next open loses
// (Config.ResumeUnread); 0 without a resume point.
func (g *Glob) resumeUnread(s *gstream) int64 {
	if s.resume == nil {
		return 0
	}
	_, n := g.unreadSeen(s)
	return n
}

// maxUnendedTail bounds the unterminated last line readBeforeStart reads
// past a record's end to tell it holds no line.
const maxUnendedTail = 64 << 10

// headIs: f's first n bytes hash to fp.
func headIs(f *os.File, n int, fp uint64) bool {
	b := make([]byte, n)
	got, err := f.ReadAt(b, 0)
	return got == n && (err == nil || errors.Is(err, io.EOF)) && pointer.Fingerprint(b) == fp
}

// PathHeadIs: the file at path begins with n bytes whose fingerprint is
// fp (as Source.HeadRead tells them): a reload asks it of a new path's file
// (internal/daemon readAgainAt).
func PathHeadIs(path string, n int, fp uint64) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	return headIs(f, n, fp)
}

func exists(path string, key uint64) bool {
	dev, ino, err := fileutil.DevInoPath(path)
	return err == nil && pointer.FileKey(dev, ino) == key
}

// sameFile: is f the file s tracks (its key, and first bytes matching the
// pointer's fingerprint)? A retired key is never the same file again.
//
// The key alone proves it only while a descriptor holds the inode: the
// stream's source reading it (its inode cannot be reused meanwhile). A
// source lets its file go (deleted, read to its end) before the glob books
// the stream closed and retires the key, and the file system may give the
// inode to a new file at once: a file found under a stream's key at another
// path, or after the stream's file was seen gone, its source holding no
// descriptor on it, is the stream's only if its first bytes are the ones
// the stream read (DESIGN §10: the same key with other first bytes is inode reuse, a
// new stream read from its start), and never when it was born after the
// glob first saw the stream's file (seenAt, moved on by takeOver when the
// stream takes another file's key; the walk's birth time, none on
// overlayfs: a copy-up moves it).
func (g *Glob) sameFile(s *gstream, f found) bool {
	open := s.st == stOpen || s.st == stStopping
	if open && s.src != nil && s.src.holds(s.key) {
		return true
	}
	// bornAfter: the walk's birth time (of the inode it keyed; 0 where
	// none is known, overlayfs included) is after the glob first saw the
	// stream's file (zero seenAt: a previous run's pointer, any birth).
	bornAfter := f.born != 0 && (s.seenAt.IsZero() || f.born > s.seenAt.UnixNano())
	if bornAfter && !s.seenAt.IsZero() {
		// No descriptor pins the inode and the file was born after the
		// glob first saw the stream's: another file on its freed inode,
		// whatever its path, size, mtime or first bytes (a deletion no
		// look saw: its event names an open stream's path, a poke; the
		// source lets the file go RotateWait later, before the next
		// periodic scan; a new file given the inode at once, with the old
		// one's size, even its mtime: cp -p, rsync -t; the same banner
		// longer than the fingerprint).
		return false
	}
	moved := f.path != s.path || s.gone
	neverRead := s.src == nil && s.fpLen == 0 // waiting for its first turn: nothing of its first bytes known
	if !moved && (open || (s.ptrPath == "" && !neverRead) || (f.size == s.size && f.mod == s.mod)) {
		// At its path, never seen gone, not born since (where the file
		// system tells birth times; elsewhere this trusts an open stream
		// whose source let its file go, and an unchanged size and mtime:
		// README "Rewrites tailfeed cannot see"): an open stream's source
		// holds it or lets it go only RotateWait after its path went; a
		// cut file its source reads the copy of is still its own
		// (ownCutFile).
		return true
	}
	if s.ptrPath != "" {
		rec, err := pointer.Inspect(s.ptrPath)
		if err == nil && s.genOwn && rec.FileKey != s.key {
			// Given a gone file's pointer at its path (adoptByPath), its
			// source not on its own file yet: the record names the gone
			// file, a later generation beside the path its source read
			// next, or none (reset for the next file, nothing committed);
			// its first bytes are not the stream's file's. Born after the
			// glob first saw it, its inode was given to another file.
			return !bornAfter
		}
		if err == nil && rec.FileKey != 0 && (rec.FileKey != s.key || rec.FPLen > 0) {
			if globHeadMatches(f.path, rec) {
				return true
			}
			// Other first bytes under the key its pointer names, at its
			// path, never seen gone, waiting: cut or rewritten in place
			// (a copytruncate between two looks) — its source's next open
			// reads the copy from the pointer's offset, or counts the tail
			// lost, as a single file's does (DESIGN §4) — unless born after
			// the glob first saw it: its inode reused by a new file.
			if !moved && rec.FileKey == s.key && (s.st == stClosed || s.st == stQueued) {
				return !bornAfter
			}
			return false
		}
	}
	// No pointer, or one naming no file (reset when the file went:
	// forgotten) or no first bytes: the ones the stream's source last
	// read.
	if s.src != nil {
		if n, fp := s.src.Head(); n > 0 {
			return globHeadMatches(f.path, pointer.Record{FPLen: n, FP: fp})
		}
	}
	if s.fpLen > 0 {
		return globHeadMatches(f.path, pointer.Record{FPLen: s.fpLen, FP: s.fp})
	}
	// Nothing of it was read (waiting for its first turn), at another
	// path or changed at its own: a file born after the glob first saw
	// the stream's is another one (its inode reused, deleted and made
	// again at its path too); born before, or no birth time, it is taken
	// for the stream's.
	return !bornAfter
}

func globHeadMatches(path string, rec pointer.Record) bool {
	fh, err := os.Open(path)
	if err != nil {
		return false
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return false
	}
	ok, err := sameHead(fh, &rec, st.Size())
	return err == nil && ok
}

// seen records a look at a tracked stream's file.
func (g *Glob) seen(s *gstream, f found, now time.Time) {
	if s.done && s.isCopy && (f.size != s.size || f.mod != s.mod) {
		// Taken for a copy (a snapshot), it grew or its first bytes
		// changed: a file of its own after all, read from its start
		// (duplicates at worst, never a gap). Its times alone changing,
		// or a cut that kept its first bytes, is no new content (DESIGN
		// §3): noted, so that it is not behind.
		if f.size > s.size || f.size < int64(s.copyHeadLen) || rewrittenAt(f.path, s.key, s.copyHeadLen, s.copyHead) {
			g.log.Warn("a file taken for a copy changed; reading it from its start", "path", f.path)
			s.done, s.isCopy = false, false
		} else {
			s.size, s.mod = f.size, f.mod
		}
	}
	if s.done {
		return
	}
	changed := f.size != s.size || f.mod != s.mod
	if s.ptrPath != "" && changed && (s.st == stClosed || s.st == stQueued) {
		switch {
		case s.cutSeen && f.size < s.size:
			// Cut again before its stream ran: what the looks saw of the
			// refill since the last cut is gone unread too.
			s.cutUnread += g.seenEnd(s)
		case !s.cutSeen && (f.size < s.size || (s.fpLen > 0 && rewrittenAt(f.path, s.key, int(s.fpLen), s.fp))):
			// Cut or rewritten in place while its stream waits: what the
			// glob saw past where its stream had read (not its pointer's
			// commit: a stream closed owing its commit read further) is
			// what is known lost when no copy holds it (its next source
			// looks).
			from := max(g.unreadFrom(s), s.offset)
			s.cutUnread = max(g.seenEnd(s)-from, 0)
			s.cutSeen = true
		}
	}
	if f.size < s.size {
		// Truncated: no pointer to check it against (EARLIEST, LATEST):
		// what is there now was written after the start, read whole.
		if r := s.resume; r != nil && f.size < r.Offset && (s.st == stClosed || s.st == stQueued) && g.handOff(s) {
			s.resume, s.tailEnd, s.tailSize = nil, 0, 0
		} else if r != nil && f.size < r.Offset && (s.st == stClosed || s.st == stQueued) {
			// What it held past where its stream stopped is gone unread
			// (an open stream's source counts its own truncation).
			if from, n := g.unreadSeen(s); n > 0 {
				g.countLossLocked(1, uint64(n), r.Epoch, fmt.Sprintf("glob file %s truncated while closed: its %d bytes from offset %d were never read",
					s.path, n, from))
			}
			s.resume, s.tailEnd, s.tailSize = nil, 0, 0
		} else if r == nil && s.ptrPath == "" && !s.touched && s.copyOf == nil && (s.st == stClosed || s.st == stQueued) {
			// Never read (waiting for its first turn), cut: no source
			// will know what it held (DESIGN §4: size last seen − read
			// position; what is left of it, if any, is read).
			if from, n := g.unreadSeen(s); n > 0 && !g.copyNearby(s, now) {
				g.countLossLocked(1, uint64(n), s.epoch, fmt.Sprintf("glob file %s truncated before any of it was read: its %d bytes from offset %d were never read",
					s.path, n, from))
			}
		}
		if s.fromEnd && f.size < s.endAt {
			s.endAt = 0
		}
	}
	if r := s.resume; r != nil && changed && r.HeadLen > 0 && f.size >= r.Offset && (s.st == stClosed || s.st == stQueued) &&
		rewrittenAt(f.path, s.key, r.HeadLen, r.Head) {
		// Rewritten in place while its stream waited (no shrink to see):
		// its next source reads it from its start, and what it held past
		// where its stream stopped, seen by the last look, is gone unread.
		if from, n := g.unreadSeen(s); n > 0 {
			g.countLossLocked(1, uint64(n), r.Epoch, fmt.Sprintf("glob file %s rewritten while closed: its %d bytes from offset %d were never read",
				s.path, n, from))
		}
		s.resume, s.tailEnd, s.tailSize = nil, 0, 0
	}
	s.size, s.mod = f.size, f.mod
	if !changed {
		return
	}
	s.activeAt = now
	switch s.st {
	case stOpen:
		poke(s.src.events)
	case stStopping:
		s.reopen = true
	case stClosed:
		switch {
		case s.copyOf != nil:
			// Held back as a possible copy: housekeep decides.
		case s.empty:
			s.empty = false
			g.admit(s, f, now)
		case f.size != s.offset || g.cfg.PointerDir == "":
			g.enqueue(s)
		case s.fpLen > 0 && rewrittenAt(f.path, s.key, int(s.fpLen), s.fp):
			// Rewritten in place to the size it was read to (a
			// copytruncate refilled as long): its source's next open
			// reads the copy, or counts the tail, then the new content.
			g.enqueue(s)
		}
	}
}

// admit queues a new stream, except (once running) an empty file, which
// waits for its first bytes, and a file whose first bytes match a tracked
// file's fingerprint, held back for rotateWaitMillis: if that file is
// truncated or disappears meanwhile, the new one is its copy (a
// copytruncate), whose unread tail that file's stream reads (§4); else it is
// a new stream from its start (DESIGN §10).
func (g *Glob) admit(s *gstream, f found, now time.Time) {
	if !g.started && s.ptrPath == "" && !g.bounded() && g.readBeforeStart(s, f) {
		g.markCopy(s, nil)
		g.log.Info("file new at this start was read to its end before (a copy taken for its original's); not read again",
			"path", f.path, "size", f.size)
		return
	}
	if !g.started || s.ptrPath != "" || g.bounded() {
		g.enqueue(s)
		return
	}
	if f.size == 0 {
		s.empty = true
		return
	}
	if c := g.adoptedBy(s.key); c != nil {
		g.takeOver(c, s, s.key)
		return
	}
	if c := g.tookForCopy(s); c != nil {
		// Its file's stream took it for its copy at a truncation (before
		// a look met it): not read again.
		g.markCopy(s, c)
		g.log.Info("new file is a copy its original's stream took; not read again", "path", f.path, "of", c.path)
		return
	}
	if c := g.copyCandidate(s, f); c != nil {
		if g.replacedClosed(c, s, f) {
			return
		}
		s.copyOf, s.heldUntil = c, now.Add(g.cfg.Stream.RotateWait)
		s.heldBorn = birthTimeTarget(f.path) // (a symlink matched: its target's, as the take's)
		if c.src != nil {
			s.heldCopies = c.src.CopiesRead()
		}
		g.held = append(g.held, s)
		g.log.Debug("new file holds a tracked file's first bytes; held back", "path", f.path, "of", c.path)
		return
	}
	g.enqueue(s)
}

// readBeforeStart: f, new at this start with no pointer naming it, is a
// file a previous run's pointer moved off with every byte of it committed —
// its key, its first bytes those of the record left, and no longer than
// that record's offset: a copytruncate copy the original's stream read and
// left for the cut file (the pointer moved onto the cut file, the copy
// stays, matched by the glob when its name matches: logrotate's dateext
// with "extension .log"). Read from its start it would deliver those lines
// again after a clean restart. One that grows later is read from its
// start (markCopy).
func (g *Glob) readBeforeStart(s *gstream, f found) bool {
	if g.cfg.EpochsPath == "" || f.size == 0 {
		return false
	}
	if g.readBefore == nil {
		g.readBefore = map[uint64]pointer.EpochLine{}
		lines, _ := pointer.ReadEpochs(g.cfg.EpochsPath) // what parsed; adoptedEpochs warns
		for _, l := range lines {
			// Only the barrier's Reset ("reset"): its file read to its end,
			// every line acknowledged. A forgotten file that comes back is
			// read from its start (DESIGN §10), and so is one counted lost.
			if l.Reason == "reset" && l.PrevEpoch != 0 && l.PrevFileKey != 0 && l.PrevOffset > 0 && l.PrevFPLen > 0 {
				g.readBefore[l.PrevFileKey] = l
			}
		}
	}
	l, ok := g.readBefore[s.key]
	if !ok || f.size > l.PrevOffset+maxUnendedTail || uint64(f.size) < l.PrevFPLen {
		return false
	}
	fh, err := fileutil.OpenRegular(f.path)
	if err != nil {
		return false
	}
	defer fh.Close()
	if !headIs(fh, int(l.PrevFPLen), l.PrevFP) {
		return false
	}
	if f.size > l.PrevOffset {
		// Past the committed end only a last line with no terminator (a
		// writer stopped mid-line when the copy was made): never a line,
		// never delivered (DESIGN §4); a terminator there is a line not
		// read — the file is read from its start (duplicates, no gap).
		tail := make([]byte, f.size-l.PrevOffset)
		if n, err := fh.ReadAt(tail, l.PrevOffset); int64(n) != int64(len(tail)) && err != nil {
			return false
		}
		if bytes.ContainsAny(tail, "\r\n") {
			return false
		}
	}
	s.copyEpoch = l.PrevEpoch // read under it (the status shows it)
	return true
}

// copyCandidate is a tracked file whose fingerprint f's first bytes match.
func (g *Glob) copyCandidate(self *gstream, f found) *gstream {
	fh, err := os.Open(f.path)
	if err != nil {
		return nil
	}
	defer fh.Close()
	head := make([]byte, pointer.MaxFingerprint)
	n, _ := fh.ReadAt(head, 0)
	head = head[:n]
	sums := map[uint64]uint64{}
	for _, c := range g.byKey {
		if c == self || (c.gone && !(c.keyReused && c.st == stClosed)) || c.done || c.copyOf != nil {
			// (A closed stream whose key now names other first bytes may
			// have been cut by a copytruncate: the copy, met later in the
			// same look — app.log.1 after app.log — is held for it, not
			// read again from its start.)
			continue
		}
		fpLen, fp := c.fpLen, c.fp
		named := false // its open source's pointer names a file
		if c.src != nil && c.src.ptr != nil {
			rec := c.src.ptr.Record()
			fpLen, fp, named = rec.FPLen, rec.FP, rec.FileKey != 0
		}
		if fpLen == 0 && c.src != nil && !named {
			// No pointer, or one not committed yet (a paused feed, no
			// line acknowledged): its source's look.
			fpLen, fp = c.src.Head()
		}
		if fpLen == 0 && c.resume != nil {
			fpLen, fp = uint64(c.resume.HeadLen), c.resume.Head // no pointer: its last source's look
		}
		if fpLen == 0 || fpLen > uint64(len(head)) {
			continue
		}
		sum, ok := sums[fpLen]
		if !ok {
			sum = pointer.Fingerprint(head[:fpLen])
			sums[fpLen] = sum
		}
		if sum == fp {
			return c
		}
	}
	return nil
}

// copyNearby: beside s's path is a file the glob reads, created since the
// glob first saw s's (where the file system tells birth times; else
// modified lately), that holds at least as many bytes as the glob last
// saw of s's (never read, so never fingerprinted): the copy a
// copytruncate left, as far as anything can tell — read as a file of its
// own, so the cut lost nothing (DESIGN §4 counts a truncation "with no
// copy found"). Logs written before s was seen are never taken for its
// copy.
func (g *Glob) copyNearby(s *gstream, now time.Time) bool {
	dir := filepath.Dir(s.path)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	since := now.Add(-g.cfg.ScanInterval - g.cfg.Stream.RotateWait - 2*time.Second)
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if !e.Type().IsRegular() || p == s.path || g.own(p) || !g.matched(p) {
			continue // a copy the glob does not read holds nothing for it
		}
		info, err := e.Info()
		if err != nil || info.Size() < g.seenEnd(s) {
			continue
		}
		if born := birthTimePath(p); !born.IsZero() {
			if !born.Before(s.seenAt) {
				return true // created since (cp -p keeps only the mtime old)
			}
		} else if !info.ModTime().Before(since) {
			return true
		}
	}
	return false
}

// adoptable: no stream was ever queued to read the file of key k
// (Config.Adoptable). Any goroutine.
func (g *Glob) adoptable(k uint64) bool {
	g.keyMu.Lock()
	defer g.keyMu.Unlock()
	return !g.readKeys[k]
}

// adoptedBy is the running stream whose source reads on the file of key k
// as its own file's same content under a new key (a rename into place:
// Source.Adopted), or nil.
func (g *Glob) adoptedBy(k uint64) *gstream {
	for c := range g.running {
		if c.src != nil && c.key != k && c.src.Adopted() == k {
			return c
		}
	}
	return nil
}

// takeOver makes c, whose source went on reading the file of n's key as
// its own (the same content renamed into place over c's file: DESIGN §3
// "keeps the pointer and epoch", §10 a copy "is read from the old offset
// under the old stream"), the stream of that key; n, the new file's
// stream, never started, is dropped. n may be nil (no look met the file
// yet: c.path stays). Under mu.
func (g *Glob) takeOver(c, n *gstream, k uint64) {
	if g.byKey[c.key] == c {
		delete(g.byKey, c.key)
	}
	from := c.path
	c.key = k
	g.byKey[k] = c
	// Its file is n's from here: first seen when n's was or, no look met
	// it yet, when c's source switched to it (holding it open: born
	// before, its inode not reused yet), for every birth-time check
	// (sameFile, findBeside) against the file its key names now.
	switch {
	case n != nil && !n.seenAt.IsZero():
		c.seenAt = n.seenAt
	case c.src != nil && c.src.Adopted() == k && !c.src.AdoptedAt().IsZero():
		c.seenAt = c.src.AdoptedAt()
	default:
		c.seenAt = time.Now()
	}
	c.gone, c.goneAt = false, time.Time{}
	delete(g.retired, k)
	if n != nil {
		n.done, n.copyOf = true, nil
		if i := slices.Index(g.queue, n); i >= 0 {
			g.queue = slices.Delete(g.queue, i, i+1)
			n.st = stClosed
		}
		if g.byPath[n.path] == n {
			delete(g.byPath, n.path)
		}
		if c.path != n.path {
			if g.byPath[c.path] == c {
				delete(g.byPath, c.path)
			}
			c.path = n.path
		}
		g.byPath[c.path] = c
		c.size, c.mod = n.size, n.mod
	}
	g.keyMu.Lock()
	g.readKeys[k] = true
	g.keyMu.Unlock()
	g.log.Info("a file with the same content replaced a glob file; its stream reads on from its position under its epoch",
		"path", c.path, "from", from)
}

// replacedClosed: n's file, at c's path and holding c's pointer's first
// bytes and offset, replaced c's file while c's stream was closed (a
// rename into place over it, or the file deleted and copied back: c's key
// is neither in the glob nor beside its path). It is the same content
// under a new key (DESIGN §3, §10: read from the old offset under the old
// stream): c takes n's key and is queued, its source keeps its pointer's
// epoch and offset (KeptNewKey), and n is dropped. Under mu, from a scan.
func (g *Glob) replacedClosed(c, n *gstream, f found) bool {
	if c.st != stClosed || c.ptrPath == "" || c.owe != nil || c.done || c.isCopy || c.copyOf != nil || c.path != f.path || c.tailSize > c.tailEnd {
		return false
	}
	if _, ok := g.keys[c.key]; ok || exists(c.path, c.key) || g.findBeside(c) != "" {
		return false
	}
	rec, err := pointer.Inspect(c.ptrPath)
	if err != nil || rec.FileKey != c.key || rec.FPLen == 0 || f.size < rec.Offset || !globHeadMatches(f.path, rec) {
		return false
	}
	g.takeOver(c, n, n.key)
	g.enqueue(c)
	return true
}

// markCopy takes s's file for c's copy: not read, unless it changes later
// (seen).
func (g *Glob) markCopy(s, c *gstream) {
	s.done, s.isCopy = true, true
	if c == nil {
		// No stream of this run read it: s.copyEpoch is the caller's.
	} else if s.copyEpoch = c.epoch; c.src != nil { // read (or to be read) under c's pointer's epoch
		s.copyEpoch = c.src.ReadEpoch()
		if t := c.src.CopyKey(); t != nil && t.Key == s.key {
			s.copyEpoch = t.Epoch // c's source read it before its reset
		}
	}
	s.copyHeadLen, s.copyHead = headOfPath(s.path)
	if size, mod, err := statSizeMod(s.path); err == nil {
		s.size, s.mod = size, mod
	}
}

// tookForCopy is the stream whose source took s's file for its own file's
// copy at a truncation (Source.CopyKey), or nil.
func (g *Glob) tookForCopy(s *gstream) *gstream {
	for _, c := range g.byKey {
		// (A stream closed since its source took it too: gstream.copies —
		// review 25d D, a rescan meeting the copy only after the stream
		// that took it closed read it again.)
		if c != s && (c.src != nil || len(c.copies) > 0) && tookAsCopy(c, s, time.Time{}) {
			return c
		}
	}
	return nil
}

// tookSince is the copy c's source took since when, or nil.
func tookSince(c *gstream, when time.Time) *CopyTaken {
	if c.src == nil {
		return nil
	}
	if t := c.src.CopyKey(); t != nil && !t.At.Before(when) {
		return t
	}
	return nil
}

// tookIt: t is s's file taken for a copy — its key, its first bytes still
// the take's (t.Head: another file on a freed copy's inode starts
// otherwise; review 26a A, A2), and the file born when the take's was (a
// file born otherwise reuses a deleted copy's inode: a new file) or, the
// take's birth not known, born before it was taken; where no birth time
// is known, first seen within a minute of the take. byBirth: birth times
// told it.
func tookIt(t *CopyTaken, s *gstream) (ok, byBirth bool) {
	if t == nil || t.Key != s.key {
		return false, false
	}
	born := s.heldBorn
	if born.IsZero() {
		born = birthTimeTarget(s.path) // a symlink's target's (review 26c B)
	}
	// Its size is looked at only where no birth time tells: a copy grows
	// after the take when lines still land in it (its source reads them
	// on: TestAuditFilesCopyListedWithEpochZero).
	if !headStill(t, s.path, born.IsZero()) {
		return false, false
	}
	if !born.IsZero() {
		if !t.Born.IsZero() {
			// Both births known: the same file only if born together (its
			// own gone since, another file on its inode was taken).
			return t.Born.Equal(born), true
		}
		return !born.After(t.At), true
	}
	return s.seenAt.Sub(t.At) < time.Minute, false
}

// headStill: the file at path still starts with the first bytes t's file
// had when taken (t.HeadLen, t.Head; decompressed for a .gz copy) and,
// sized, is no longer than it was then — true where that is not known (no
// head recorded, the file not readable now), false only where it is not.
func headStill(t *CopyTaken, path string, sized bool) bool {
	if t.HeadLen <= 0 {
		return true
	}
	fh, err := fileutil.OpenRegular(path)
	if err != nil {
		return true
	}
	defer fh.Close()
	b := make([]byte, t.HeadLen)
	n, err := fh.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return true
	}
	if n == t.HeadLen && pointer.Fingerprint(b) == t.Head {
		// Longer than the copy was when taken: another file starting
		// with its few first bytes (a header line: review 26c A), or the
		// copy written to since — no snapshot either way.
		st, err := fh.Stat()
		return err != nil || !sized || t.Size <= 0 || st.Size() <= t.Size
	}
	if head, ok := gzHead(path); ok && len(head) >= t.HeadLen && pointer.Fingerprint(head[:t.HeadLen]) == t.Head {
		return true // a .gz copy (findGzCopy): its decompressed bytes
	}
	return false
}

// tookAsCopy: s's file (held back from since as a possible copy of c's;
// zero: not held) is a copy one of c's sources took — its current one or
// one closed since (gstream.copies) — by tookIt, taken since the hold began
// or within copyTakeSlack before it (the take and the look that held it back at the
// same moment: review 25b H), and — its key retired before it was seen,
// and no birth times to tell the files on its inode apart — not more than
// copyTakeSlack before it was seen (another file on a deleted copy's
// inode: review 25c B; a copy the source takes at the truncation is met by
// the glob's look just after; with birth times a copy met later is still
// it: review 26a B).
func tookAsCopy(c, s *gstream, since time.Time) bool {
	takes := slices.Clone(c.copies)
	if c.src != nil {
		takes = append(takes, c.src.CopiesTaken()...)
	}
	for i := range takes {
		t := &takes[i]
		if !since.IsZero() && t.At.Before(since.Add(-copyTakeSlack)) {
			continue
		}
		ok, byBirth := tookIt(t, s)
		if ok && (byBirth || !s.onRetired || !t.At.Before(s.seenAt.Add(-copyTakeSlack))) {
			return true
		}
	}
	return false
}

// copyTakeSlack: how long before a new file was held back as a possible
// copy its original's source may have taken it.
const copyTakeSlack = time.Second

// decideHeld ends the hold of a possible copy once it is due; true while
// it is still held.
func (g *Glob) decideHeld(s *gstream, now time.Time) bool {
	if s.copyOf == nil {
		return false
	}
	if c := g.adoptedBy(s.key); c != nil {
		g.takeOver(c, s, s.key)
		return false
	}
	if now.Before(s.heldUntil) {
		return true
	}
	c := s.copyOf
	s.copyOf = nil
	// Its size now: the baseline a later growth is told by (a look may
	// not have seen it whole yet), and whether it still is the snapshot
	// it was held as.
	size, mod, serr := statSizeMod(s.path)
	if serr == nil {
		s.size, s.mod = size, mod
	}
	asCopy := func(why string) bool {
		g.markCopy(s, c)
		g.log.Info("new file is a copy of a tracked file; not read again", "path", s.path, "of", c.path, "why", why)
		return false
	}
	if r := s.handoff; r != nil {
		// Its original (no pointer, closed) was truncated while it was
		// held: the copy holds what its stream had not read; read from
		// there (DESIGN §10: a copy is read from the old offset).
		s.handoff = nil
		s.resume = &Resume{Epoch: r.Epoch, Offset: r.Offset, HeadLen: r.HeadLen, Head: r.Head, Size: r.Offset, InLong: r.InLong}
		g.log.Info("new file is a copy of a truncated file; reading what its stream had not read from it", "path", s.path, "of", c.path, "offset", r.Offset)
		g.enqueue(s)
		return false
	}
	if tookAsCopy(c, s, s.heldUntil.Add(-g.cfg.Stream.RotateWait)) {
		// Its original's streams took it for a copy — also just before
		// the look that held it back, or by a source closed since (review
		// 25b H: read as a file of its own, or counted lost once gzip
		// unlinked it).
		return asCopy("its original's stream read its tail from it")
	}
	if t := tookSince(c, s.heldUntil.Add(-g.cfg.Stream.RotateWait)); t != nil {
		// Its original's source found it truncated and took a copy
		// meanwhile: another one (this one is a file of its own).
		g.enqueue(s)
		return false
	}
	off := c.offset
	switch {
	case c.src != nil && c.src.ptr != nil:
		off = c.src.ptr.Record().Offset
	case c.src != nil:
		off = c.src.ReadPos() // no pointer: what its source read
	}
	st, err := os.Stat(c.path)
	switch {
	case c.gone || err != nil || !exists(c.path, c.key):
		// Its original went away (renamed out, deleted): nobody reads
		// this file's bytes past what the original's stream read — a
		// copy holding nothing more is not read again; one holding more
		// (or a new file with the same first bytes) is read from its
		// start (duplicates at worst, never a gap). An open original's
		// stream reads its own file to its end, wherever it went.
		covered := off
		if c.src != nil {
			covered = max(off, c.size, c.src.ReadPos())
		}
		if serr == nil && size <= covered {
			return asCopy("its original went away, and it holds nothing its stream had not read")
		}
	case st.Size() < off && c.st != stOpen:
		// Its original (closed, or stopping: not reading) was
		// truncated: a copy, whose unread tail the original's next
		// stream reads from it (§4, found by its pointer's fingerprint);
		// it is not read again. An open original's stream took its copy
		// itself (above) — or another file, or none: then nobody reads
		// this one's bytes but its own stream.
		return asCopy("its original was truncated")
	}
	g.enqueue(s)
	return false
}

func (g *Glob) enqueue(s *gstream) {
	if s.st != stClosed {
		return
	}
	g.keyMu.Lock()
	g.readKeys[s.key] = true
	g.keyMu.Unlock()
	s.st = stQueued
	g.queue = append(g.queue, s)
}

// schedule opens queued streams while slots are free, and closes caught-up
// streams when others wait.
func (g *Glob) schedule(ctx context.Context) {
	if len(g.queue) > 0 && g.open >= g.maxSlots {
		g.preempt()
	}
	// The "created" lines of the new pointers this pass starts are
	// written ahead, together (see createdAhead).
	ahead := &createdAhead{done: make(chan struct{})}
	defer ahead.write(g.cfg.EpochsPath, &g.aheadWG)
	for len(g.queue) > 0 && g.open < g.maxSlots {
		i, atPath := -1, false
		for j, s := range g.queue {
			// A stream that owes a commit waits until its lines are
			// acknowledged and committed (housekeep settles it): a new
			// source reads from the pointer, which is behind the lines
			// still in flight, and would publish them again.
			if s.owe != nil || s.awaitScan || (s.after != nil && !g.barrierPassed(s.after)) {
				continue
			}
			// A file that left its path since the last scan waits for
			// the next one: a source started now would look for it only
			// beside its old path, and count it lost when it went to
			// another matched directory, where the scan then follows it
			// and it is read again (a false loss). The scan follows it,
			// or sees it gone from the glob (gone: its source finds it
			// beside its path by key, or counts it).
			if atPath = exists(s.path, s.key); !atPath && !s.gone {
				s.awaitScan = true
				g.scanDue.Store(true)
				continue
			}
			i = j
			break
		}
		if i < 0 {
			return
		}
		s := g.queue[i]
		g.queue = append(g.queue[:i], g.queue[i+1:]...)
		s.after = nil
		if err := g.start(ctx, s, ahead, atPath); err != nil {
			g.log.Error("cannot open a matched file", "path", s.path, "error", err)
			s.st = stClosed
		}
	}
}

// barrierDone: every line of the stream previously at a path is
// acknowledged and it is read to its end (DESIGN §10 "Order").
func (g *Glob) barrierDone(p *gstream) bool {
	switch p.st {
	case stClosed:
		// Closed with lines unacknowledged (or their commit not made
		// yet): the barrier holds until the owed commit is made.
		return p.owe == nil
	case stQueued:
		return false
	case stStopping:
		return false
	}
	// CAUGHT_UP is the state its source set at its last look: bytes
	// appended since (a writer's last lines before it rotated) are not
	// read yet, and the next file at the path waits for them (CI,
	// TestAud3GOKKill9ExactlyOnceRotationsBounded: a generation's last
	// burst published after the next generation's first lines). The
	// position before the state, as the report reads them (setFile).
	pos := p.src.ReadPos()
	st := p.src.State()
	if p.sp.Pending() != 0 {
		return false
	}
	return (st == WaitingForFile || st == CaughtUp) && !p.src.OpenFileGrown(pos)
}

// barrierPassed: barrierDone, and p's file holds no last line ended by a
// lone '\r' still to be taken: the next file waits at p's path, so p's
// file is left and that line comes first (takeHeldCR asks for it; the
// barrier passes once it is published and acknowledged).
func (g *Glob) barrierPassed(p *gstream) bool {
	return g.barrierDone(p) && !(p.st == stOpen && p.src.State() == CaughtUp && takeHeldCR(p))
}

// takeHeldCR: s's source, at its last look at its file's end, held a last
// line ended by a lone '\r' (waiting for a byte that may make it "\r\n"):
// the file is left — another file waits at its path (barrierPassed), or
// it was read out of the glob and stayed quiet for rotateWaitMillis — so
// the source is asked to take the '\r' as the line's end (DESIGN §4: "when
// its file is left … the \r ends the line"), before the next file's lines
// and before it is stopped (stopped first, the line waited for a byte that
// never came: review 36 F), as a single-file feed's source does when it
// switches away. A '\n' written after that completes the terminator and
// is skipped. A file closed as inactive is not left (reopened when it
// grows): its line stays held. True when asked: s is not done yet.
func takeHeldCR(s *gstream) bool {
	if s.src == nil || !s.src.crHeld.Load() {
		return false
	}
	s.src.finalCR.Store(true)
	poke(s.src.events)
	return true
}

// preempt stops caught-up streams (or ones that ran a full turn) so that
// waiting ones get a slot.
func (g *Glob) preempt() {
	need := len(g.queue)
	now := time.Now()
	for s := range g.running {
		if need == 0 {
			return
		}
		if s.st != stOpen {
			continue
		}
		st := s.src.State()
		done := st == CaughtUp || st == WaitingForFile
		if s.gone && st == CaughtUp {
			// Out of the glob and caught up: its writer may still append
			// until rotateWaitMillis after its last growth (DESIGN §10).
			// It gives up its slot (a still-written file out of the glob
			// never starves a waiting one: review 16a A, with slow
			// acknowledgements too: 16b D) only where its next turn
			// finds it again — beside its path (closed() then has it
			// watched: lookWatched) — or once quiet.
			// Elsewhere (moved to another directory, deleted while
			// written) a line appended after a stop was read by nobody
			// (review 15a B, 15b B, or its pointer kept until
			// forgetAfter: 15b A); housekeeping closes it once quiet.
			// A gone stream with bytes to read is never stopped before
			// its end.
			if !g.quietOut(s, s.src, now) && !g.refindable(s) {
				done = false
			}
		}
		// A stream still STARTING (its pointer being created, its file
		// opened) has not had its turn yet, however long that takes.
		turn := !s.gone && st != Starting && now.Sub(s.openedAt) > time.Second
		if done || turn {
			// A file with unread bytes takes its turn again later (closed
			// queues it).
			g.stop(s)
			need--
		}
	}
}

// refindable: s's file, gone from the glob, is where a stream started
// again finds it: at s.path (beside its first path, or excluded in place),
// or beside its path by its key (findBeside). Under mu.
func (g *Glob) refindable(s *gstream) bool {
	return exists(s.path, s.key) || g.findBeside(s) != ""
}

// outputsNow is the daemon's outputs with their symlinks resolved, as the
// streams it starts take them: resolved again at most once a second (a
// thousand streams starting together each walked every output's path
// components; an output's symlink retargeted while running reaches new
// streams a second later). Manager goroutine.
func (g *Glob) outputsNow() []outPath {
	if now := time.Now(); g.outsRes == nil || now.Sub(g.outsAt) >= time.Second {
		g.outsRes, g.outsAt = resolveOutputs(g.cfg.Stream.Outputs), now
		if g.outsRes == nil {
			g.outsRes = []outPath{}
		}
	}
	return g.outsRes
}

// createdAhead writes the "created" epochs lines of the new pointers one
// schedule pass starts with one write and one fsync
// (pointer.AppendCreated), before any of those pointer files is created:
// one by one, each new stream waited for an fsync of the epochs file of
// its own (shared only with the streams arriving meanwhile, serialised
// with the others) on the way to its first line. The streams wait for
// done; err nil: each opens its pointer with Options.CreatedLogged.
type createdAhead struct {
	epochs []uint64
	done   chan struct{}
	err    error
}

// write appends the lines (on a goroutine of its own, counted in wg: Close
// waits for it, so that no append of the feed's outlives the feed and a
// clean stop never cuts one short) and closes done.
func (a *createdAhead) write(path string, wg *sync.WaitGroup) {
	if len(a.epochs) == 0 || path == "" {
		a.err = errNoneAhead
		close(a.done)
		return
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		a.err = appendCreated(path, a.epochs)
		close(a.done)
	}()
}

// maxCopiesKept bounds gstream.copies and a source's CopiesTaken — for the
// copies taken more than copiesWindow before the last one only: every copy
// of the last minute is kept, however many (a source open across more
// copytruncates than a fixed bound, all within DESIGN §4's 2 s of the copy
// its stream's next source resumes from, had the oldest read again as
// later generations: review 22a B). An older copy stays a later generation
// only through its mtime changing since (or a compressed twin): the last
// maxCopiesKept are kept for those.
const maxCopiesKept = 8

// copiesWindow: the copies taken this long before the last one are all
// kept (trimCopies).
const copiesWindow = time.Minute

// trimGens is trimCopies for the files a source switched away from.
func trimGens(gs []GenDone) []GenDone {
	return trimTaken(gs, func(g GenDone) time.Time { return g.At })
}

// noteGens keeps the files src switched away from in s.gens (an entry of
// the same file moved to the larger end).
func (s *gstream) noteGens(src *Source) {
	for _, d := range src.GensDone() {
		i := slices.IndexFunc(s.gens, func(g GenDone) bool { return g.Key == d.Key && g.FPLen == d.FPLen && g.FP == d.FP })
		if i >= 0 {
			s.gens[i].End = max(s.gens[i].End, d.End)
			continue
		}
		s.gens = append(s.gens, d)
	}
	s.gens = trimGens(s.gens)
}

// trimCopies drops the oldest of cs (in the order taken) past
// maxCopiesKept that were taken more than copiesWindow before the last.
func trimCopies(cs []CopyTaken) []CopyTaken {
	return trimTaken(cs, func(c CopyTaken) time.Time { return c.At })
}

// trimTaken drops the oldest of xs (in the order taken; at tells when)
// past maxCopiesKept that were taken more than copiesWindow before the
// last one.
func trimTaken[T any](xs []T, at func(T) time.Time) []T {
	if len(xs) <= maxCopiesKept {
		return xs
	}
	var last time.Time
	for _, x := range xs {
		if t := at(x); t.After(last) {
			last = t
		}
	}
	n := 0
	for len(xs)-n > maxCopiesKept && last.Sub(at(xs[n])) > copiesWindow {
		n++
	}
	return slices.Delete(xs, 0, n)
}

// noteCopy keeps the copies src took in s.copies (trimCopies). A copy is
// told by its key, first bytes and size: a later copy given an earlier,
// deleted one's inode (logrotate's compress removed it) is another copy,
// whose first bytes and size tell its own compressed twin (prevCopyGz);
// the same copy taken again by a later source is kept once. Every copy, not only the last: a source open across several
// copytruncates took one per truncation, and a later source must not read
// any of them again as a later generation (audit 7 A).
func (s *gstream) noteCopy(src *Source) {
	same := func(a, b CopyTaken) bool {
		return a.Key == b.Key && a.HeadLen == b.HeadLen && a.Head == b.Head && a.Size == b.Size
	}
	for _, t := range src.CopiesTaken() {
		if slices.ContainsFunc(s.copies, func(c CopyTaken) bool { return same(c, t) }) {
			continue
		}
		s.copies = append(s.copies, t)
	}
	s.copies = trimCopies(s.copies)
}

// appendCreated is pointer.AppendCreated (a test makes it fail).
var appendCreated = pointer.AppendCreated

var errNoneAhead = errors.New("no created line written ahead")

// start opens s's pointer and runs its Source (a new pointer's "created"
// line goes into ahead); atPath: its file is at s.path (schedule looked).
func (g *Glob) start(ctx context.Context, s *gstream, ahead *createdAhead, atPath bool) error {
	if err := g.voidHeld(s); err != nil {
		return err
	}
	c := g.cfg.Stream
	c.held = s.heldMark // a mark found at this start (one written in this run was voided)
	c.Path, c.DeliveryPath, c.Pinned, c.PinKey, c.PinGone = s.path, s.first, true, s.key, s.gone
	c.globFiles = g.matched
	first, key := s.first, s.key
	c.holdDeleted = func(rec pointer.Record) bool { return g.holdDeleted(s, first, key, rec) }
	if s.genOwn {
		c.GlobMatched, c.GoneKey, c.GoneEpoch = g.matched, s.goneKey, s.goneEp // also when started again (preempted)
		c.ownGone = s.ownLost
		if !s.ownLost && s.ownAt != "" && s.gone && !g.pointerNames(s) {
			c.ownAt = s.ownAt
		}
		c.otherKeys = g.otherKeys(s)
	}
	if s.src != nil {
		c.prevSource = true
		c.prevHeadLen, c.prevHead = s.src.Head()
		s.noteCopy(s.src)
	}
	c.prevCopies = slices.Clone(s.copies)
	c.prevGens = slices.Clone(s.gens)
	c.cutSeen, c.cutUnread = s.cutSeen, s.cutUnread
	c.genTail = s.genTail
	s.cutSeen, s.cutUnread = false, 0
	c.NoNotify = true // the glob's watcher wakes it
	c.OnRest = func() { poke(g.rest) }
	c.Adoptable = g.adoptable
	c.resolvedOuts = g.outputsNow()
	// Hundreds of streams may read at once: while behind, each msyncs
	// its pointer at most once a second (stored at every acknowledgement
	// all the same: kill -9 keeps it); caught up, every commitSyncMillis.
	c.BusySync = max(c.CommitSync, time.Second)
	c.IOSlots = g.opening
	if g.watcher != nil && !s.gone {
		// Events wake the stream; while its file is where it was, its own
		// look is a fallback at the rescan interval (thousands of open
		// files stay idle). Rotations and deletions poll at Poll. A file
		// out of the glob (read beside its path) polls at Poll: events
		// name it by a path the glob does not track.
		c.IdlePoll = g.cfg.ScanInterval
	}
	c.Pointer = nil
	withPtr := g.cfg.PointerDir != ""
	newPtr := false // this start names s's pointer: its file is created next
	switch {
	case withPtr:
		c.Strategy = Committed
		if s.ptrPath == "" {
			newPtr = true
			epoch := pointer.NewEpoch()
			s.ptrPath = filepath.Join(g.cfg.PointerDir, hex16(epoch)+".ptr")
			s.newEpoch = epoch
		}
	case g.bounded():
		c.Strategy = OnceEarliest
		c.Resume, c.OnceLimit = s.resume, s.startSize
		c.ResumeUnread = g.resumeUnread(s)
	case s.fromEnd:
		c.Strategy = Latest
		c.EndAt, c.HasEndAt = s.endAt, true
		c.EndHeadLen, c.EndHead = s.endHeadLen, s.endHead
	default:
		c.Strategy = Earliest
		c.Resume = s.resume
		c.ResumeUnread = g.resumeUnread(s)
	}
	if atPath || g.pointerNames(s) {
		// Its new source reads the tail from its pointer (or, its file
		// gone from the path, finds it by key beside it or counts it).
		// Otherwise the tail stays noted: a scan that finds the file
		// gone from the glob counts it; one that finds it renamed within
		// the glob follows it.
		s.tailEnd, s.tailSize = 0, 0
	}
	// s.owe is nil: schedule holds a stream that owes a commit until it
	// is made (its new source starts from a pointer covering every line
	// its last one published).
	s.sp = g.mux.add()
	s.src = New(c, s.sp)
	s.sp.src.Store(s.src) // the feed's EpochState asks it
	rctx, cancel := context.WithCancel(ctx)
	s.cancel, s.runDone = cancel, make(chan struct{})
	s.st, s.openedAt, s.activeAt, s.reopen = stOpen, time.Now(), time.Now(), false
	s.lastRead = 0
	g.open++
	g.running[s] = struct{}{}
	opts := pointer.Options{Logger: g.log, EpochsPath: g.cfg.EpochsPath, Input: s.first, Epoch: s.newEpoch, DeferSync: true}
	ptrPath := s.ptrPath
	if newPtr {
		ahead.epochs = append(ahead.epochs, s.newEpoch)
	} else {
		ahead = nil // an existing pointer, or one a failed Open left to create again (its own line)
	}
	go func(src *Source, done chan struct{}) {
		defer close(done)
		if ahead != nil {
			select {
			case <-ahead.done:
			case <-rctx.Done():
				return
			}
			// Failed: the pointer writes its line itself (and reports
			// the failure as it always did).
			opts.CreatedLogged = ahead.err == nil
		}
		if withPtr {
			// Opened here, not on the manager's goroutine: a new pointer
			// costs an fsync of the epochs file, which streams opening at
			// once share; its directory entry and slots are synced by the
			// source's first commit step (DeferSync), off the way to its
			// first line.
			select {
			case g.opening <- struct{}{}:
			case <-rctx.Done():
				return
			}
			p, err := openPointer(ptrPath, opts)
			if err != nil {
				<-g.opening
				src.fail(fmt.Errorf("stream pointer %s: %w", ptrPath, err))
				return
			}
			g.mu.Lock()
			src.ptr, src.cfg.Pointer = p, p
			g.mu.Unlock()
			if p.Fresh() {
				// The source's open (its input, the identity check) goes
				// on in the slot this goroutine holds: released and taken
				// again, it queued behind every stream still waiting to
				// create its pointer, and no stream published a line
				// before nearly all had (bench 7a: 0.2 s of 480 streams
				// starting with nothing read).
				src.slotHeld = true
			} else {
				<-g.opening
			}
			if !p.Synced() {
				// Created with DeferSync: synced (directory entry, both
				// slots) with the stream's first commit, by the source's
				// msync goroutine, at most BusySync from now.
				src.commit.stored = true
				src.commit.lastSync = time.Now()
			}
		}
		src.Run(rctx)
	}(s.src, s.runDone)
	return nil
}

// stop ends s's Source: the run, then (on a goroutine) the drain of its
// published lines and the final commit; closed takes it back.
func (g *Glob) stop(s *gstream) {
	st := s.src.State()
	s.behind = st != CaughtUp && st != WaitingForFile
	s.st = stStopping
	s.cancel()
	go func() {
		<-s.runDone
		ctx, cancel := context.WithTimeout(g.life, g.drainBound)
		s.src.Drain(ctx)
		cancel()
		s.src.Close()
		giveFound(&s.src.found) // its Run has returned: nothing splits into it again
		g.stopped <- s
	}()
}

// closed books a stopped stream.
func (g *Glob) closed(s *gstream) {
	defer g.flushLosses() // after the unlock
	g.mu.Lock()
	defer g.mu.Unlock()
	src := s.src
	if k := src.Adopted(); k != 0 && k != s.key {
		// Its source went on with its file's content under a new key
		// before a look followed it there: the stream's file is that one.
		n := g.byKey[k]
		if n != nil && (n.st != stClosed || n.touched || n.ptrPath != "") {
			n = nil // not expected (Adoptable): leave that stream alone
			g.log.Warn("a glob stream's adopted file is tracked by another stream", "path", s.path)
		} else {
			g.takeOver(s, n, k)
		}
	}
	s.genTail = src.closeGen
	if src.closeUntaken {
		// A line read and never taken (the run ended between a read and
		// the split, after stop sampled CAUGHT_UP): not read, whatever
		// the read position says — another turn reads it (review 37 2).
		s.behind = true
	}
	switch {
	case src.closeSize > src.closeEnd:
		s.tailEnd, s.tailSize = src.closeEnd, src.closeSize
	case src.BytesRead() > 0:
		s.tailEnd, s.tailSize = 0, 0
	default:
		// Its source read nothing (its file was not at its path): a
		// tail noted before stays noted (start).
	}
	g.acc.lines += src.LinesRead()
	g.acc.bytes += src.BytesRead()
	g.acc.downgraded += src.Downgraded()
	g.acc.oversized += src.Oversized()
	g.acc.lostTails += src.LostTails()
	g.acc.lostBytes += src.LostBytes()
	g.acc.commitFailures += src.CommitFailures()
	if src.ptr != nil {
		rec := src.ptr.Record()
		s.commits, s.fpLen, s.fp = rec.Commits, rec.FPLen, rec.FP
		if s.genOwn && (rec.FileKey == s.key || src.ForgotKey() == s.key) {
			// (Or it read its own file to its end and forgot it: the
			// pointer holds the empty record now — audit 9D.)
			s.ownRead = true
		}
	}
	s.offset, s.nl = src.ReadPos(), src.closeNL
	if src.closeUntaken && src.closeTaken < s.offset {
		s.offset, s.nl = src.closeTaken, false // the line read and never taken is not read (review 37b 1)
	}
	if src.keptDeleted && src.ptr != nil {
		// Its pointer kept at the deleted file's end (holdDeleted): lines
		// read after that were downgraded; the record is where it ends.
		s.offset, s.nl = src.ptr.Record().Offset, false
	}
	s.epoch = src.Epoch()
	s.readHeadLen, s.readHead, _ = src.HeadRead(s.epoch)
	s.noteCopy(src)
	s.noteGens(src)
	if e := src.ReadEpoch(); e != 0 { // 0: it opened nothing
		s.readEpoch, s.readEnd = e, s.offset
	}
	if src.BytesRead() > 0 || src.LostTails() > 0 || src.Forgot() || (src.ptr != nil && src.ptr.Record().FileKey != 0) {
		// Forgot: its file was read to its end before this run (caught up
		// at the start, nothing new) and forgotten at its deletion — the
		// empty record names no file, yet nothing of it is unread.
		s.touched = true
	}
	if g.cfg.PointerDir == "" {
		// Without a pointer the glob remembers where its source stopped.
		if r := src.ResumePoint(); r != nil || src.BytesRead() > 0 {
			s.resume = r // nil: its content changed, read from its start
			s.fromEnd = false
			if r != nil {
				s.size = r.Size // the source's look is the latest
			}
		}
	}
	s.src0dropped = src.dropped
	ended := src.State() == WaitingForFile // pinned: read to its end, gone from its path
	if ended && !s.gone {
		// Its path names another file or none: a scan marks it gone and
		// finds a file there since (an fsnotify event naming an open
		// stream's path only woke the stream: audit 8c, a deleted file
		// shown CLOSED and a recreated one unread until the next rescan).
		// Not for one a scan marked gone already: a rotation of many
		// files closes them one by one (review 26d B: a scan each).
		g.scanDue.Store(true)
	}
	g.setOwe(s, nil)
	// Lines unacknowledged, a failed last commit, or acknowledgements the
	// mux handed to the stream after its source's final commit (between
	// its Close and now): the pointer is behind them, a commit is owed.
	if s.sp.Pending() > 0 || (src.ptr != nil && !src.CommitOK()) || s.sp.behind(src.SyncedSeq()) {
		o := &owed{sp: s.sp, synced: src.SyncedSeq(), ended: ended, dirty: src.ptr != nil && !src.CommitOK()}
		o.headLen, o.head = src.HeadAtClose()
		if src.ptr != nil {
			rec := src.ptr.Record()
			o.epoch, o.pos = rec.Epoch, rec.Offset
		}
		g.setOwe(s, o)
	}
	g.mux.remove(s.sp)
	s.src, s.sp = nil, nil
	s.st = stClosed
	g.open--
	delete(g.running, s)
	if s.done {
		g.acc.unterminated += uint64(max(src.Unterminated(), 0))
		return
	}
	s.unterm = max(src.Unterminated(), 0)
	if src.NotFound() && !s.done {
		// Its file moved as it started, and its source counted nothing.
		switch {
		case !s.gone:
			// A scan follows it (or finds it gone from the glob)
			// before it starts again.
			s.awaitScan = true
			g.scanDue.Store(true)
			g.enqueue(s)
		case g.unread(s):
			// No pointer names it: the glob looks beside its path.
			if g.leftUnread(s) {
				g.enqueue(s)
			}
		case g.ownAfterGone(s):
			// Its own file gone before its source reached it: counted
			// (leftUnread); the pointer's file is read on beside the path.
			if s.owe == nil && g.leftUnread(s) {
				g.enqueue(s)
			}
		case !g.pointerNames(s):
			// Its pointer names no file (an owed commit bound to none):
			// its source cannot look for it; the glob does.
			if p := g.findBeside(s); p != "" {
				s.path = p
				g.enqueue(s)
			} else if from := g.unreadFrom(s); from >= 0 {
				if n := g.seenEnd(s) - from; n > 0 {
					g.countLossLocked(1, uint64(n), s.epoch, fmt.Sprintf("glob file %s left the glob with its %d bytes from offset %d unread, and was not found beside its path",
						s.path, n, from))
				}
				s.tailEnd, s.tailSize = 0, 0
			}
		default:
			// Seen gone from the glob meanwhile: started again, its
			// source looks beside its path by the pointer's key, or
			// counts it (PinGone).
			g.enqueue(s)
		}
		return
	}
	if (s.reopen || s.behind || s.src0dropped || g.grownSince(s)) && !s.gone {
		g.enqueue(s)
		return
	}
	if s.gone && !exists(s.path, s.key) {
		if !g.unread(s) && s.tailSize > s.tailEnd && (g.pointerNames(s) || s.owe != nil) && g.findBeside(s) != "" {
			// Renamed out beside its path as its stream closed, with
			// bytes written before the rename its source did not read:
			// read there to its end (DESIGN §10), now, or once its owed
			// commit is made (settleOwed; commitOwed binds a pointer that
			// names no file yet where the file went) — not a lost tail.
			if s.owe == nil && g.readBeside(s) {
				return
			}
		} else if !ended && !g.closing && s.owe == nil && !g.unread(s) && g.readBeside(s) {
			// Renamed out beside its path as the glob closed its stream
			// (for inactivity or a slot), no byte past what it read yet:
			// read there to its end, rotateWaitMillis after its last
			// growth (DESIGN §10), as when a scan sees the rename after
			// the close — the application may write on to its
			// descriptor until it reopens its log (review 13a B: such a
			// line was neither read nor counted).
			return
		} else {
			if g.byKey[s.key] == s {
				g.retired[s.key] = true // not retired at the scan while open
			}
			if g.ownAfterGone(s) && s.owe == nil {
				// Its source read (some of) the pointer's file and the
				// generations after it, and its own file left the path
				// before the source opened it. Beside the path: read
				// there — on from where its source stopped, or, ended
				// (what it found beside the path read, its own file not
				// among them), at its new name. Gone: counted whole
				// (ownGone), and a source that had not ended reads on
				// (the pointer's file's tail); an ended one read it to
				// its end: its pointer goes below (forgetOrHold).
				if g.ownBesideOrGone(s) { // (ended: its source found nothing else to read)
					g.enqueue(s)
					return
				}
				if !ended {
					g.enqueue(s)
					return
				}
			} else if g.ownAfterGone(s) {
				// Owing its commit: its own file is counted now, the
				// stream queued to read on once the commit is made
				// (settleOwed; review 21a F: a stop before the
				// acknowledgements counted nothing).
				if g.findBeside(s) == "" {
					g.ownGone(s)
				}
			} else if !g.unread(s) {
				g.loseTailLocked(s)
			} else if g.leftUnread(s) {
				// Its source found another file at its path (or none) and
				// read nothing, or (no pointers) its file went beside it.
				g.enqueue(s)
				return
			}
		}
	}
	if s.gone && !exists(s.path, s.key) && (ended || g.caughtUpOut(s, src)) {
		g.forgetOrHold(s)
	} else if s.gone && exists(s.path, s.key) && !g.matched(s.path) {
		switch {
		case s.behind || s.src0dropped || s.tailSize > s.tailEnd:
			// Out of the glob beside its path with bytes its stream did
			// not read (its turn ended, or the file grew after its last
			// look): read on where it is.
			g.enqueue(s)
		case src.State() == CaughtUp && s.owe == nil && g.quietOut(s, src, time.Now()):
			// Read to its end where it went out of the glob and quiet for
			// rotateWaitMillis (DESIGN §10: then closed): nothing of it is
			// pending (a restart would count it gone while stopped), and
			// its key is retired (renamed out and closed; back in the glob
			// it is a new stream) — or kept for a live rotation's empty
			// new file (forgetOrHold). Also at a stop. Sooner (a stop
			// within rotateWaitMillis of its last growth), the pointer
			// stays: its writer may still append, and the next start
			// reads on beside the path what the file got while tailfeed
			// was stopped, as after a kill -9 (review 15a C, D; a start
			// with no file at the path it left counts it gone instead:
			// an overcount, open_rev15b_c).
			g.forgetOrHold(s)
			if g.byKey[s.key] == s {
				g.retired[s.key] = true
			}
		case !g.closing && src.State() == CaughtUp:
			// Stopped within rotateWaitMillis of its last growth (a
			// waiting file took its slot: review 16a A), or with lines
			// unacknowledged (its pointer goes once they are committed
			// and it is quiet: 16a B): its writer may still append. Housekeeping watches its size: grown, it is
			// queued to read on where it is; quiet, its pointer goes
			// (lookWatched). Not queued now: a queued stream holds the
			// barrier of the file new at its path, which would wait for
			// it, and preempt would stop it again for that file — round
			// and round.
			g.watch(s)
		}
	}
	if s.owe != nil {
		g.settleOwed(s)
	}
}

// caughtUpOut: s, whose file left the glob and its path, was closed by the
// glob (for inactivity or for a slot, never at a stop) once its source had
// read the file to its end and every line it published was committed.
// Closed so, nobody reads that file again (a file out of the glob whose
// stream closed is not followed: DESIGN §10 "read to its end ..., then
// closed"), so its pointer goes as an ended source's does (forgetOrHold);
// kept, it named the file until forgetAfterMillis, and a restart in
// between counted the file gone when it was deleted while tailfeed was
// stopped, although every line of it was delivered (review 13b D). A
// stream closed by a stop keeps its pointer: the next start reads on
// beside its path what the file got while tailfeed was stopped. Under mu.
func (g *Glob) caughtUpOut(s *gstream, src *Source) bool {
	if g.closing || s.owe != nil || src.State() != CaughtUp || s.behind || s.src0dropped || s.tailSize > s.tailEnd {
		return false
	}
	// Quiet for rotateWaitMillis (DESIGN §10: read to its end
	// rotateWaitMillis after its last growth, then closed): the glob
	// closes a gone stream no sooner (preempt, housekeep); one closed
	// sooner all the same (a read racing the close) keeps its pointer,
	// since its writer may still append (review 15a B: such a line was
	// then neither read nor counted).
	return g.quietOut(s, src, time.Now())
}

// quietOut: s's source (src) read nothing for rotateWaitMillis — a gone
// stream is done with its file (DESIGN §10). Bytes src read since the last
// look count as growth now. Under mu.
func (g *Glob) quietOut(s *gstream, src *Source, now time.Time) bool {
	if n := src.BytesRead(); n != s.lastRead {
		s.lastRead, s.activeAt = n, now
	}
	return now.Sub(s.activeAt) >= g.cfg.Stream.RotateWait
}

// loseTailLocked counts the bytes a closed stream's file held past what
// its stream published when it closed (a line written just before the
// file was renamed out of the glob or deleted, while the stream was
// closing): nobody reads them now (DESIGN §10: a file that disappears
// with an unread tail counts in lostTails). Under mu; the ledger entries
// are appended by flushLosses once mu is released.
func (g *Glob) loseTailLocked(s *gstream) {
	if s.tailSize <= s.tailEnd {
		return
	}
	if o := g.byKey[s.key]; o != nil && o != s {
		// Its key is back in the glob (renamed out and in again): a new
		// stream reads the file from its start, the tail with it.
		s.tailEnd, s.tailSize = 0, 0
		return
	}
	n := uint64(s.tailSize - s.tailEnd)
	g.countLossLocked(1, n, s.epoch, fmt.Sprintf("glob file %s renamed out of the glob or deleted while its stream was closing: its last %d bytes (offset %d to %d) were never read",
		s.path, n, s.tailEnd, s.tailSize))
	s.tailEnd, s.tailSize = 0, 0
	s.behind = false // what it had not read is counted: nothing else is owed (review 37b 7)
}

// unread: s's file was never read by a stream of this glob — no pointer
// names it (none made yet, or one whose source closed before it bound
// the file: another file had taken its path), nothing noted unread (a
// noted tail is loseTailLocked's), not held back as a possible copy, and
// its stream is to read it from its start.
func (g *Glob) unread(s *gstream) bool {
	if s.copyOf != nil || s.done || s.ownLost {
		// (ownLost: its own file was counted; it reads its pointer's.)
		return false
	}
	if g.cfg.PointerDir == "" {
		return true // no pointer: only the glob knows its file (resume)
	}
	return !s.touched && s.tailSize <= s.tailEnd && !s.fromEnd && !g.pointerNames(s)
}

// leftUnread handles a stream (queued or closed) whose file left the glob
// (renamed out or deleted) before any of it was read: with no pointer
// naming the file its source would not know it. Renamed out beside its
// path (a name the glob does not match, found by its key), it is true and
// s.path names it there: its stream reads it to its end (DESIGN §10: a
// rename out of the glob is read to its end). Gone, its bytes at the last
// look are counted lost and the stream is closed (taken off the queue).
// Under mu.
func (g *Glob) leftUnread(s *gstream) bool {
	if g.ownAfterGone(s) {
		// Given a gone file's pointer at the start (adoptByPath), its
		// source was to read the pointer's file beside the path first,
		// the later generations, then its own from its start. Queued
		// gone, its source looks for the pointer's file beside its path
		// by the pointer's key and reads its tail, or counts it
		// (PinGone), and the later generations after it — its own file
		// among them when it is beside the path too (s.path stays: the
		// generations are named after it; followed to its own file's new
		// name, a source reading a later generation misses those between
		// it and its own: review 14b A's scenario). Its own file gone,
		// it is counted whole (review 13a C: the stream was taken off
		// the queue, the pointer's file neither read nor counted, and the
		// own file's bytes counted from the pointer's offset in the
		// other file: nothing).
		g.ownBesideOrGone(s)
		return true
	}
	if p := g.findBeside(s); p != "" {
		g.log.Debug("file renamed out of the glob before any of it was read; read where it is", "from", s.path, "to", p)
		if g.matched(s.path) {
			s.leftFrom = s.path
		}
		s.path = p
		return true
	}
	g.neverRead(s)
	return false
}

// leftBeside: s's file, never read, is out of the glob beside a path of
// it, waiting to be read there — it left the glob while its stream waited
// (leftUnread: leftFrom), or the previous run's unread list named it and
// this start found it there (readListedBeside: listed). The unread list
// names it under that path (besidePath) until its stream's pointer does,
// while running and at a stop (which counted it lost before: a kill -9
// left it listed, the next start read it). Not one a stream of its first
// path, given a gone file's pointer, reads as a later generation of that
// file (readAsGeneration): listed, it would be read twice. Under mu.
func (g *Glob) leftBeside(s *gstream) bool {
	return s.gone && (s.leftFrom != "" || s.listed != nil) && !g.matched(s.path) && g.unread(s) && !g.readAsGeneration(s)
}

// followBeside: a leftBeside stream's file not at s.path any more (renamed
// again while it waited: the next rotation) is looked for again beside the
// path the list names it under, and s.path follows it; false when it is
// nowhere there (its stream's next start finds it gone and counts it).
// Under mu.
// back: it is there under a name the glob matches (renamed back into the
// glob): neither listed nor counted at a stop, the next start's scan finds
// it in the glob and reads it (review 32c B: counted lost, then read).
func (g *Glob) followBeside(s *gstream) (ok, back bool) {
	if exists(s.path, s.key) {
		return true, false
	}
	p := g.findBesideAt(besidePath(s), s)
	switch {
	case p == "":
		return false, false
	case g.matched(p):
		return false, true
	}
	s.path = p
	return true, false
}

// besidePath is the path the unread list names a leftBeside stream's file
// under.
func besidePath(s *gstream) string {
	if s.listed != nil {
		return s.listed.Path
	}
	return s.leftFrom
}

// ownBesideOrGone: s's own file (ownAfterGone) left the glob; found beside
// its path, true, and it is read there (ownAt) after the pointer's file and
// the later generations; else it is counted (ownGone). Under mu.
func (g *Glob) ownBesideOrGone(s *gstream) bool {
	if p := g.findBeside(s); p != "" {
		s.ownAt = p
		return true
	}
	g.ownGone(s)
	return false
}

// ownGone counts, once, the whole of s's own file (ownAfterGone: its
// source never reached it) as lost, and marks s so that its sources read
// the pointer's file beside the path only (Config.ownGone). Under mu.
func (g *Glob) ownGone(s *gstream) {
	s.ownLost = true
	s.tailEnd, s.tailSize = 0, 0
	if n := g.seenEnd(s); n > 0 {
		g.countLossLocked(1, uint64(n), s.epoch, fmt.Sprintf("glob file %s renamed out of the glob or deleted before its stream read it (it was to read the previous run's file of its path first): its %d bytes were never read",
			s.path, n))
	}
}

// ownAfterGone: s was given a gone file's pointer at the start
// (adoptByPath), its own file is not counted yet (ownLost) nor was it
// reached by a source of s (ownRead), while the
// pointer names another file — the gone one, or a later generation its
// source read after it — or, bound while empty, none: its source has not
// reached its own file. Under mu.
func (g *Glob) ownAfterGone(s *gstream) bool {
	return s.genOwn && !s.ownLost && !s.ownRead && s.ptrPath != "" && !s.done && !g.pointerNames(s)
}

// laterGeneration: the file at p, beside s's first path, is one a start
// reads as a later generation of the file s's pointer names (a genOwn
// stream's source: resumeRotated) — a rotated name of the path, modified
// no earlier than that file (its mtime, or the pointer file's when it is
// not found) less mtimeSlack. Under mu.
func (g *Glob) laterGeneration(s *gstream, p string) bool {
	name, base := filepath.Base(p), filepath.Base(s.first)
	if !sameStem(name, base) || !isRotatedName(g.cfg.Stream.RotatedNames, name, base) {
		return false
	}
	st, err := os.Stat(p)
	if err != nil {
		return false
	}
	var ref time.Time
	if rec, err := pointer.Inspect(s.ptrPath); err == nil && rec.FileKey != 0 {
		if f := g.keyBeside(s.first, rec); f != nil {
			if fst, err := f.Stat(); err == nil {
				ref = fst.ModTime()
			}
			f.Close()
		}
	}
	if ref.IsZero() {
		pst, err := os.Stat(s.ptrPath)
		if err != nil {
			return false
		}
		ref = pst.ModTime()
	}
	return !st.ModTime().Before(ref.Add(-mtimeSlack))
}

// readAsGeneration: s's file, out of the glob beside s's first path,
// is one the next start reads as a later generation of another stream's
// pointer's file (laterGeneration): a stream of the same first path given
// a gone file's pointer at this start whose source has not reached its own
// file — the pointer still names that gone file, and the next start gives
// it to the file then at the path, whose source reads the generations
// beside it (review 21c C: the stop counted such a file, then the restart
// delivered it). Under mu.
func (g *Glob) readAsGeneration(s *gstream) bool {
	for _, q := range g.byKey {
		if q != s && q.genOwn && q.first == s.first && q.ptrPath != "" && !q.done && !g.pointerNames(q) && g.laterGeneration(q, s.path) {
			return true
		}
	}
	return false
}

// committedGzBeside: a .gz beside l's first path (and a symlinked path's
// target) holds the first bytes l's record names, decompresses to exactly
// its committed offset and was last written no earlier than the pointer
// took its file (takenAt: gzip keeps the file's mtime) — its file,
// compressed after it was read and committed to its end: that .gz, else
// "". A record with no first bytes or at offset 0 proves nothing, nor an
// older generation holding the same bytes (review 39b finding 1: an idle
// day's header-only file, compressed days before, taken for a file
// committed at its header whose later lines were lost with it). Manager
// goroutine, at the start.
func (g *Glob) committedGzBeside(l loaded, taken time.Time) string {
	rec := l.rec
	if l.s.first == "" || rec.FPLen == 0 || rec.Offset <= 0 || rec.Offset < int64(rec.FPLen) || taken.IsZero() {
		return ""
	}
	places := [][2]string{{filepath.Dir(l.s.first), filepath.Base(l.s.first)}}
	if t, link := resolveLink(l.s.first); link {
		places = append(places, [2]string{filepath.Dir(t), filepath.Base(t)})
	}
	var found string
	g.eachRotatedName(places, false, func(p, name string) {
		if found != "" || !strings.HasSuffix(name, ".gz") {
			return
		}
		if head, ok := gzHead(p); !ok || !headMatches(head, rec.FPLen, rec.FP) {
			return
		}
		if st, err := os.Stat(p); err != nil || st.ModTime().Before(taken) {
			return
		}
		if hw, ok := readGz(p); ok && endsAfterLine(hw.n, rec.Offset, knownTail(hw.last)) {
			found = p
		}
	})
	return found
}

// ptrFileAt: the file the pointer at ptrPath names (its key and first
// bytes) is at path.
func (g *Glob) ptrFileAt(ptrPath, path string) bool {
	rec, err := pointer.Inspect(ptrPath)
	return err == nil && rec.FileKey != 0 && exists(path, rec.FileKey) && (rec.FPLen == 0 || globHeadMatches(path, rec))
}

// otherKeys is the keys of the files of the streams other than s the glob
// tracks beside s's first path, out of the glob (Config.otherKeys). Under
// mu.
func (g *Glob) otherKeys(s *gstream) map[uint64]bool {
	var out map[uint64]bool
	dir := filepath.Dir(s.first)
	for _, o := range g.byKey {
		if o != s && !o.done && o.key != 0 && filepath.Dir(o.path) == dir && !g.matched(o.path) {
			if out == nil {
				out = map[uint64]bool{}
			}
			out[o.key] = true
		}
	}
	return out
}

// neverRead counts, as lost, what a queued or closed stream whose file
// left the glob for good never read of it, and takes it off the queue.
func (g *Glob) neverRead(s *gstream) {
	if i := slices.Index(g.queue, s); i >= 0 {
		g.queue = slices.Delete(g.queue, i, i+1)
		s.st = stClosed
	}
	if g.bounded() {
		s.done = true // ONCE_*: nothing more of it will be read
	}
	// What was never read of it: from where its stream would have read on
	// (a noted tail's start; past the size its last source saw: what is
	// after its last newline is an unterminated line, never a loss; LATEST:
	// its end at the start) to the largest size seen since (by the glob,
	// or by its source at close); ONCE_EARLIEST: to its size at start.
	from, end := g.unreadFrom(s), g.seenEnd(s)
	if from < 0 {
		from = end // nothing of it is known to be lost
	}
	if g.bounded() {
		if s.resume != nil && s.resume.Limit > 0 {
			end = min(end, s.resume.Limit)
		} else if s.resume == nil {
			end = min(end, s.startSize)
		}
	}
	s.tailEnd, s.tailSize = 0, 0 // counted here, not again by loseTailLocked
	s.listed = nil               // nor by the next start from the unread list (review 31c)
	if n := end - from; n > 0 {
		g.countLossLocked(1, uint64(n), s.epoch, fmt.Sprintf("glob file %s renamed out of the glob or deleted before its stream read it to its end: its %d bytes from offset %d were never read",
			s.path, n, from))
	}
}

// findBeside looks for s's file by its key beside its path and, for a
// symlinked path, beside the link's final target (where a rotation of the
// target leaves it): its path, or "". A file born after the glob first saw
// s's is not it (its inode reused by a new file).
func (g *Glob) findBeside(s *gstream) string {
	return g.findBesideAt(s.path, s)
}

// findBesideAt is findBeside beside path.
func (g *Glob) findBesideAt(path string, s *gstream) string {
	f := g.keyBeside(path, pointer.Record{FileKey: s.key})
	if f == nil {
		return ""
	}
	bt := birthTime(f)
	f.Close()
	if !bt.IsZero() && bt.After(s.seenAt) {
		return ""
	}
	return f.Name()
}

// keyBeside opens the file of rec (its key, and its first bytes when rec
// has a fingerprint) beside path or, for a symlinked path, beside the
// link's final target; nil when there is none.
func (g *Glob) keyBeside(path string, rec pointer.Record) *os.File {
	outs := keepOutputs(g.outputsNow(), path)
	never := func(dev, ino uint64) bool { return false }
	dirs := []string{filepath.Dir(path)}
	if t, link := resolveLink(path); link && filepath.Dir(t) != dirs[0] {
		dirs = append(dirs, filepath.Dir(t))
	}
	for _, d := range dirs {
		if f, _, _ := findByKeyIn(d, rec, &outs, never); f != nil {
			return f
		}
	}
	return nil
}

// keyBesideBefore is keyBeside, but not a file born after at (where birth
// times are known): a file a mark written at at names existed then, so
// one born later has its key by inode reuse.
func (g *Glob) keyBesideBefore(path string, rec pointer.Record, at time.Time) *os.File {
	f := g.keyBeside(path, rec)
	if f != nil {
		if b := birthTime(f); !b.IsZero() && b.After(at) {
			f.Close()
			return nil
		}
	}
	return f
}

// matched: p is a path the glob matches (not excluded, not its own).
func (g *Glob) matched(p string) bool {
	return g.pat.Match(p) && !g.excluded(p) && !g.own(p)
}

// readBeside: s's file, gone from the glob, is beside its path (or a
// symlinked path's target): s.path names it there and the stream is queued
// to read it to its end (DESIGN §10: a file renamed out of the glob is read
// to its end, rotateWaitMillis after its last growth, then closed) — also
// with no byte past what its pointer committed yet: logrotate renames, and
// the application writes on to its descriptor until it reopens its log.
// Only for a pointer naming the file.
func (g *Glob) readBeside(s *gstream) bool {
	if s.ptrPath == "" || s.done {
		return false
	}
	rec, err := pointer.Inspect(s.ptrPath)
	if err != nil || rec.FileKey != s.key {
		return false
	}
	p := g.findBeside(s)
	if p == "" {
		return false
	}
	s.path = p
	g.enqueue(s)
	return true
}

// handOff gives s's resume point to a new file held back as a possible
// copy of s's (copytruncate) when s's file is seen truncated, closed and
// without a pointer: that copy reads on from it (decideHeld). True when
// one took it.
func (g *Glob) handOff(s *gstream) bool {
	for _, h := range g.held {
		if h.copyOf == s && h.handoff == nil {
			h.handoff = s.resume
			return true
		}
	}
	return false
}

// unreadFrom is where what s's stream had not read of its file starts: a
// noted tail's start; without pointers, where its last source stopped
// (-1 when it had read to the largest size seen: an unterminated last line
// is never a loss — grown since, that line was ended and is counted
// whole), LATEST's end at the start, or 0; with a pointer naming no file,
// the pointer's offset.
func (g *Glob) unreadFrom(s *gstream) int64 {
	switch {
	case s.tailSize > s.tailEnd:
		return s.tailEnd
	case s.resume != nil:
		if g.seenEnd(s) <= s.resume.Size {
			return -1
		}
		return s.resume.Offset
	case s.fromEnd:
		return s.endAt
	case s.ptrPath != "":
		if rec, err := pointer.Inspect(s.ptrPath); err == nil {
			return rec.Offset
		}
	}
	return 0
}

// pointerNames: s's pointer names its file (by key), so that its source
// finds the file by that key when the path no longer does.
func (g *Glob) pointerNames(s *gstream) bool {
	if s.ptrPath == "" {
		return false
	}
	rec, err := pointer.Inspect(s.ptrPath)
	return err == nil && rec.FileKey == s.key
}

// flushLosses hands the losses counted under mu (countLossLocked) to
// OnLoss, the ledger; never under mu.
func (g *Glob) flushLosses() {
	g.mu.Lock()
	q := g.lossQ
	g.lossQ = nil
	g.mu.Unlock()
	if g.cfg.Stream.OnLoss == nil {
		return
	}
	for _, l := range q {
		g.cfg.Stream.OnLoss(l)
	}
}

// settleOwed takes the acknowledgements a closed stream's lines received
// since its close and, once every one of them is acknowledged, commits
// the pointer to the acknowledged position (opened for a moment) and drops
// the obligation; a failed commit is retried at the next housekeeping.
// Manager goroutine, under mu.
func (g *Glob) settleOwed(s *gstream) {
	o := s.owe
	if a := o.sp.PollAcks(); a.Moved && a.Positioned && a.Epoch == o.epoch && a.Position > o.pos {
		o.pos, o.dirty = a.Position, true
	}
	if o.sp.Pending() > 0 {
		return
	}
	if o.dirty && g.owedWaits(s) {
		if !g.final {
			// Its file left its path since the last scan and its pointer
			// names no file (closed before its first commit): the commit
			// binds the file at its path, so it waits for the scan to
			// follow the file or find it gone; bound to nothing, the
			// next source would read the file again from its start.
			g.scanDue.Store(true)
			return
		}
		// Close: no scan comes (finalScan looked); bound to nothing.
	}
	if o.dirty && s.ptrPath != "" {
		if err := g.commitOwed(s, o); err != nil {
			g.acc.commitFailures++
			g.log.Error("pointer commit of a closed glob file's acknowledged lines failed; retrying",
				"path", s.path, "pointer", s.ptrPath, "offset", o.pos, "error", err)
			return
		}
		g.log.Debug("closed glob file's late acknowledgements committed", "path", s.path, "offset", o.pos)
	}
	g.setOwe(s, nil)
	if s.gone && !exists(s.path, s.key) && s.genOwn && !s.done && s.ptrPath != "" && !g.pointerNames(s) {
		// Its own file left the glob before its source reached it:
		// counted (ownGone: now, or when it was seen gone), or found
		// beside the path; the pointer's file is read on beside the
		// path — not forgotten: its source may have stopped short of its
		// end (forgetClosed takes an ownLost stream's record for read to
		// its end). At the stop, the pointer stays for the next start.
		if g.ownAfterGone(s) {
			g.leftUnread(s)
		}
		if !g.final {
			g.enqueue(s)
		}
		return
	}
	if s.gone && !exists(s.path, s.key) && !(s.st == stClosed && g.readBeside(s)) {
		if s.st == stClosed {
			// A tail closed and the scan left for it, read by nobody now
			// (queued: its source finds the file beside its path or counts it).
			g.loseTailLocked(s)
		}
		g.forgetClosed(s, !o.ended)
	}
}

// commitOwed stores and syncs o's position in the pointer at path, unless
// the pointer is at another epoch or already past it.
func (g *Glob) commitOwed(s *gstream, o *owed) error {
	path := s.ptrPath
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil // nothing to move (Open would create one)
	}
	p, err := pointer.Open(path, pointer.Options{Logger: g.log, EpochsPath: g.cfg.EpochsPath})
	if err != nil {
		return err
	}
	if rec := p.Record(); rec.Epoch == o.epoch && rec.Offset <= o.pos {
		// The record names its file only once a commit stored it: a
		// stream closed before its first commit left the file key 0.
		// Bound to its file (still at its path), the commit records the
		// file's key and fingerprint, so that the next source started
		// from it recognises its file rather than reading it again. A
		// file gone from the glob is bound where it went beside its path
		// (its next source finds it there by key; a restart counts it).
		at := s.path
		if rec.FileKey == 0 && s.gone && !exists(at, s.key) {
			at = g.findBeside(s)
		}
		if f, ferr := os.Open(at); at != "" && ferr == nil {
			// Only the content its source read: a file rewritten in place
			// since (or one whose source saw it rewritten: no head) is not
			// bound, and the next source reads it whole under a new epoch.
			if dev, ino, kerr := fileutil.DevIno(f); kerr == nil && pointer.FileKey(dev, ino) == s.key && (rec.FileKey == 0 || rec.FileKey == s.key) &&
				o.headLen > 0 && headIs(f, o.headLen, o.head) {
				p.Bind(f, s.key)
			}
			defer f.Close()
		}
		err = p.Commit(o.pos)
	}
	if err == nil {
		s.commits = p.Record().Commits // status's commits counter follows the pointer's
	}
	if cerr := p.Close(); err == nil {
		err = cerr
	}
	return err
}

// grownSince: s's file (still at s.path) differs in size from where its
// source stopped reading (a change seen while it was open and about to
// close is not lost).
func (g *Glob) grownSince(s *gstream) bool {
	st, err := os.Stat(s.path)
	return err == nil && st.Size() != s.offset && exists(s.path, s.key)
}

// handOver runs the scheduler when files wait for a slot: a stream that
// closed, or read all it could, lets one of them in at once rather than at
// the next tick.
func (g *Glob) handOver(ctx context.Context) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.queue) > 0 && ctx.Err() == nil {
		g.schedule(ctx)
	}
}

// housekeep closes inactive and finished streams, forgets old pointers and
// runs the scheduler.
func (g *Glob) housekeep(ctx context.Context) {
	now := time.Now()
	g.mu.Lock()
	if len(g.queue) == 0 && now.Sub(g.lastHK) < min(time.Second, g.cfg.CloseInactive/2, g.cfg.ForgetAfter/2) {
		// Nothing waits for a slot: once a second is enough (thousands
		// of idle files).
		g.mu.Unlock()
		return
	}
	g.lastHK = now
	g.checkHanded()
	for s := range g.owed {
		if s.src == nil {
			g.settleOwed(s) // closed, or queued for a slot
		}
	}
	g.forgetHeld()
	g.lookWatched(now)
	for s := range g.running {
		if s.st != stOpen {
			continue
		}
		if n := s.src.BytesRead(); n != s.lastRead {
			s.lastRead, s.activeAt = n, now
		}
		st := s.src.State()
		switch {
		case st == EndOfStream && s.sp.Pending() == 0:
			s.done = true // ONCE_EARLIEST: read to its size
			g.stop(s)
		case st == Failed:
			g.stop(s)
		case st == WaitingForFile && s.sp.Pending() == 0:
			// Pinned: its file is read to its end and gone from the path.
			g.stop(s)
		case st == CaughtUp && !s.gone && now.Sub(s.activeAt) >= g.cfg.CloseInactive && !s.src.queuedAtRest.Load():
			// (A last line ended by a lone '\r' stays held: the file is
			// not left, its writer's next byte may make it "\r\n"; it
			// is reopened when it grows.)
			// (Not while files wait behind the open one for its
			// rotateWaitMillis: closed then, nothing reopened it and the
			// later generations a restart found were never read — review
			// 13b A's test, closeInactiveMillis 50 < rotateWaitMillis 200.)
			g.stop(s)
		case st == CaughtUp && s.gone && s.sp.Pending() == 0 && now.Sub(s.activeAt) >= g.cfg.Stream.RotateWait && !takeHeldCR(s):
			// Read where it went out of the glob: done rotateWait after
			// its last growth, as a file renamed out of the glob is —
			// not closed as inactive before (a closeInactiveMillis
			// shorter than rotateWaitMillis left a line its writer
			// appended just after the rename unread: review 13a B).
			g.stop(s)
		}
	}
	held := g.held[:0]
	for _, s := range g.held {
		if g.decideHeld(s, now) {
			held = append(held, s) // still held
		}
	}
	clear(g.held[len(held):])
	g.held = held
	// Forgetting is due forgetAfter after a file went: a look every
	// forgetAfter/4 (at most a minute) keeps it that precise without a
	// pass over every tracked stream every second.
	if now.Sub(g.lastForget) >= min(time.Minute, g.cfg.ForgetAfter/4) {
		g.lastForget = now
		g.forget(now)
	}
	g.schedule(ctx)
	list, write := g.liveUnreadDue(now)
	g.mu.Unlock()
	if write {
		// A loss counted by this pass (checkHanded) is in the ledger
		// before the list no longer names its file: a kill -9 between
		// the two must not leave neither (review 40 finding 4).
		g.flushLosses()
		g.writeLiveUnread(list)
	}
}

// watch puts s, closed out of the glob within rotateWaitMillis of its last
// growth (closed), on watchOut, its path's writes noted from now on
// (forward). Under mu.
func (g *Glob) watch(s *gstream) {
	if s.watching {
		return
	}
	s.watching, s.watchSize, s.watchGoneAt = true, s.offset, time.Time{}
	s.watchWrote = new(atomic.Bool)
	s.watchErrs = g.evErrs.Load()
	g.watchWrites.Store(s.path, s.watchWrote)
	g.watchOut = append(g.watchOut, s)
}

// unwatch ends s's watch. Under mu.
func (g *Glob) unwatch(s *gstream) {
	s.watching = false
	if v, ok := g.watchWrites.Load(s.path); ok && v == s.watchWrote {
		g.watchWrites.Delete(s.path)
	}
}

// lookWatched looks at the streams closed out of the glob within
// rotateWaitMillis of their last growth (closed): a file grown past what
// its stream read is queued to read on (DESIGN §10: read to its end
// rotateWaitMillis after its last growth); one quiet for rotateWaitMillis
// lets its pointer go and its key is retired, as when it is closed so;
// one gone from where it was (renamed again, deleted) is found beside its
// path, or let go — counted when it may have got a line nobody read. A
// stream started again, or no longer tracked, is not watched any more.
// At the stop (final), a grown one is left for the next start. Under mu.
func (g *Glob) lookWatched(now time.Time) {
	keep := g.watchOut[:0]
	for _, s := range g.watchOut {
		if s.st != stClosed || !s.gone || g.byKey[s.key] != s {
			g.unwatch(s)
			continue
		}
		if s.owe != nil {
			keep = append(keep, s) // settleOwed commits its lines first
			continue
		}
		if !exists(s.path, s.key) {
			if p := g.findBeside(s); p != "" {
				g.watchWrites.Delete(s.path)
				s.path, s.watchGoneAt = p, time.Time{}
				g.watchWrites.Store(p, s.watchWrote)
			} else {
				if s.watchGoneAt.IsZero() && !g.final {
					// Decided at the next look: fsnotify's events up to
					// the deletion (a write just before it) are in by then.
					s.watchGoneAt = now
					keep = append(keep, s)
					continue
				}
				// Deleted (or moved out of reach) within rotateWaitMillis
				// of its last growth, its stream closed: logrotate's
				// compress after a rename, say. A write to it since its
				// stream closed (fsnotify's event, or a size seen past
				// the stream's end) was read by nobody: counted (review
				// 16b B). Without one, nothing was lost (review 16c A:
				// counting each such rotation was an overcount) — unless
				// nobody could have seen one (its directory not watched,
				// no fsnotify, or events dropped): counted then too
				// (DESIGN §4 "Nothing green over a loss"). Its key is
				// retired (a file given its inode later is new: 16b C)
				// and its pointer records that nothing of it is pending,
				// so a restart counts it no more.
				wrote := s.watchWrote.Load() || s.watchSize > s.offset
				blind := g.watcher == nil || !g.watched[filepath.Dir(s.path)] || g.evErrs.Load() != s.watchErrs
				g.unwatch(s)
				if wrote || blind {
					g.countLossLocked(1, uint64(max(s.watchSize-s.offset, 0)), s.epoch, fmt.Sprintf(
						"glob file %s, out of the glob and closed for a waiting file within rotateWaitMillis of its last growth, went before its next look: lines appended to it since (written: %v) were never read",
						s.path, wrote))
				}
				g.retired[s.key] = true
				g.forgetClosed(s, false)
				continue
			}
		}
		s.watchGoneAt = time.Time{}
		size, _, err := statSizeMod(s.path)
		if err == nil {
			s.watchSize = size
		}
		switch {
		case err == nil && size > s.offset && g.final:
			// Grown at the stop: the pointer stays, the next start
			// reads on beside its path.
			keep = append(keep, s)
		case err == nil && size > s.offset:
			s.activeAt = now
			g.unwatch(s)
			g.enqueue(s)
		case now.Sub(s.activeAt) >= g.cfg.Stream.RotateWait:
			g.unwatch(s)
			g.forgetOrHold(s)
			if g.byKey[s.key] == s {
				g.retired[s.key] = true
			}
		default:
			keep = append(keep, s)
		}
	}
	clear(g.watchOut[len(keep):])
	g.watchOut = keep
}

// forget deletes the pointers of streams gone, closed and finished for
// forgetAfter (DESIGN §10 "Forgetting"), and drops them from tracking.
func (g *Glob) forget(now time.Time) {
	for k, s := range g.byKey {
		if !s.gone || s.st != stClosed || s.owe != nil || s.watching || s.held || now.Sub(s.goneAt) < g.cfg.ForgetAfter || g.listedLive(s.key) {
			continue
		}
		if s.ptrPath != "" {
			if err := os.Remove(s.ptrPath); err != nil && !errors.Is(err, os.ErrNotExist) {
				g.log.Warn("cannot delete a forgotten pointer", "path", s.ptrPath, "error", err)
				continue
			}
			g.log.Debug("pointer forgotten", "path", s.path, "pointer", s.ptrPath)
		}
		delete(g.byKey, k)
		g.acc.commits += s.commits // a _total counter: a forgotten pointer's commits stay counted
		if g.byPath[s.path] == s {
			delete(g.byPath, s.path)
		}
		if s.copyOf != nil {
			g.held = slices.DeleteFunc(g.held, func(h *gstream) bool { return h == s })
		}
	}
}

// lineEnd is where s's pointer records the end of its last line when
// every line s's source read is committed: offset, or one byte before it
// after a '\n' that completed a "\r\n" whose line was taken at its '\r'
// (review 41 F2: the file is read to its end at offset).
func (s *gstream) lineEnd() int64 {
	if s.nl {
		return s.offset - 1
	}
	return s.offset
}

// forgetClosed resets to the empty record the pointer of a closed stream
// whose file is gone (deleted, or renamed out of the glob: its key is
// retired, a file coming back is read from its start anyway) while the
// daemon runs, when the pointer covers every byte read and no line of it
// is unacknowledged: a restart then does not count it lost (countGone), as
// for a file deleted while its source ran (forgetStep). atScan: the stream
// was closed before its file went; it must then have been read to the size
// the last look saw (growth between that look and the deletion is not
// seen, as while the daemon runs). Otherwise the stream was closed after
// its file went, read to its end (not behind).
func (g *Glob) forgetClosed(s *gstream, atScan bool) {
	if s.st != stClosed || s.ptrPath == "" || s.owe != nil || s.behind || s.src0dropped || s.done || (atScan && s.offset != s.size) {
		return
	}
	rec, err := pointer.Inspect(s.ptrPath)
	// (Its own file counted gone unread, ownLost: the record names the
	// file beside the path its source read last — the pointer's file, or
	// a later generation — read to its end, committed: review 21a A.)
	if err == nil && rec.FileKey == 0 && rec.FPLen == 0 && rec.Offset == 0 && s.offset == 0 && rec.Epoch == s.epoch && s.key != 0 {
		// Bound while its file was empty and never committed (the record
		// names no file on disk, its epochs line does): nothing of it was
		// ever pending. Its pointer goes: kept, a held line its source
		// wrote for it stayed good for a restart and its record the
		// path's (review 30a: a loss counted once more per such record,
		// or a later generation's committed lines read again); reset, a
		// restart kept its empty record as a gone stream of the path that
		// held the path's stream back (review 13b A's test).
		if err := os.Remove(s.ptrPath); err != nil && !errors.Is(err, os.ErrNotExist) {
			g.log.Warn("cannot delete the pointer of a glob file gone before a line of it was read", "path", s.path, "pointer", s.ptrPath, "error", err)
			return
		}
		g.log.Info("closed glob file gone before a line of it was read; its pointer is deleted", "path", s.path, "pointer", s.ptrPath)
		s.ptrPath = ""
		return
	}
	if err != nil || (rec.FileKey != s.key && !(s.ownLost && rec.FileKey != 0)) || rec.Offset != s.lineEnd() {
		return
	}
	p, err := pointer.Open(s.ptrPath, pointer.Options{Logger: g.log, EpochsPath: g.cfg.EpochsPath})
	if err == nil {
		next := pointer.NewEpoch()
		err = p.Reset(next, nil, 0)
		if err == nil {
			s.commits = p.Record().Commits
		}
		if cerr := p.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			if s.readEpoch == 0 {
				s.readEpoch, s.readEnd = s.epoch, s.offset // Files
			}
			s.epoch, s.offset, s.nl, s.fpLen, s.fp = next, 0, false, 0, 0
			g.log.Info("closed glob file gone after every line of it was committed; the pointer records that nothing of it is pending",
				"path", s.path, "end", rec.Offset, "pointer", s.ptrPath)
			return
		}
	}
	g.acc.commitFailures++
	g.log.Error("pointer reset after a closed glob file went away failed; a restart will count it lost",
		"path", s.path, "pointer", s.ptrPath, "error", err)
}

// loadPointers reads the pointers a previous run left: each names its file
// by key and fingerprint. Unfinished creations (new-*.tmp: no line was
// published under them) are removed.
func (g *Glob) loadPointers() {
	ents, err := os.ReadDir(g.cfg.PointerDir)
	if err != nil {
		return
	}
	var adopted map[uint64]pointer.EpochLine
	var idx *epochsIndex // read at the first pointer that needs it
	for _, e := range ents {
		p := filepath.Join(g.cfg.PointerDir, e.Name())
		if strings.HasPrefix(e.Name(), "new-") && strings.HasSuffix(e.Name(), ".tmp") {
			os.Remove(p)
			continue
		}
		if !strings.HasSuffix(e.Name(), ".ptr") {
			continue
		}
		rec, err := pointer.Inspect(p)
		if err != nil {
			if neverWritten(p) {
				// Created, then killed before its first record was
				// written: no epoch was ever held, no line published.
				os.Remove(p)
				g.log.Info("unfinished stream pointer removed (created, never written)", "pointer", p)
				continue
			}
			g.log.Warn("unreadable stream pointer ignored", "pointer", p, "error", err)
			continue
		}
		if rec.FileKey == 0 && rec.Offset == 0 {
			// Never committed (or forgotten): the epochs file names the
			// file it was adopted for, if any; such a pointer is taken
			// again by that file, its epoch kept (a sink's record of it
			// still skips what was written under it).
			if adopted == nil {
				adopted = g.adoptedEpochs()
			}
			if a, ok := adopted[rec.Epoch]; ok {
				rec.FileKey, rec.FPLen, rec.FP = a.FileKey, a.FPLen, a.FP
			}
		}
		s := &gstream{ptrPath: p, key: rec.FileKey, offset: rec.Offset, epoch: rec.Epoch, commits: rec.Commits, gone: true, goneAt: time.Now()}
		if idx == nil && g.cfg.EpochsPath != "" {
			idx = g.readEpochsIndex()
		}
		if rec.FileKey != 0 && idx != nil {
			// Delivery.Path stays the path the stream was first matched
			// under (DESIGN §10), across restarts: the epochs file's first
			// line naming a file for the pointer's first epoch (its name),
			// else for its current one.
			if m, ok := idx.marks[rec.Epoch]; ok && m.FileKey == rec.FileKey {
				// (Its end may be past the record's offset now: a restored
				// sink's catch-up rewound the pointer. The mark then says
				// nothing of the file — names — but its empty file is
				// still looked for: review 19a C.)
				s.heldMark = heldMark{Epoch: rec.Epoch, Key: rec.FileKey, End: m.End, FPLen: m.FPLen, FP: m.FP,
					Next: m.NextKey, At: m.Time}
			}
			s.first = idx.first(e.Name(), rec.Epoch)
		}
		if rec.FileKey != 0 {
			if g.ptrKeys == nil {
				g.ptrKeys = map[uint64]bool{}
			}
			g.ptrKeys[rec.FileKey] = true
		}
		if rec.FileKey == 0 {
			// Finished and forgotten by its source: deleted after forgetAfter.
			g.ghosts++
			s.key = 1<<63 | 1<<62 | g.ghosts
			if l, ok := idx.leftLine(rec.Epoch); ok {
				// Files shows the file it was (audit 8c: a GONE row lost
				// its path and key at a restart): the epochs line that
				// left it for this empty record names its key, the epoch
				// and end it was read under and to, and its first epoch's
				// line its path.
				s.shownKey, s.readEpoch, s.readEnd = l.PrevFileKey, l.PrevEpoch, l.PrevOffset
				s.path = idx.first(e.Name(), l.PrevEpoch)
			}
		}
		g.loaded = append(g.loaded, loaded{s: s, rec: rec})
	}
	g.voidLoadedHeld()
}

// voidLoadedHeld voids on disk the held marks found at this start (an
// "unheld" line each, one write and fsync for all): each is good for this
// start only — its pointer is taken by the file at its path, or found
// beside it and read on, or counted gone, and a later start must judge by
// what this run records. Kept in memory (gstream.heldMark) while the
// record still names the file at its end. The append failed, none is used
// (counted gone, as without marks).
func (g *Glob) voidLoadedHeld() {
	for _, l := range g.loaded {
		if m := &l.s.heldMark; m.Epoch != 0 && l.s.first != "" {
			// (One born after the line is another file on its inode: the
			// marked file is gone — review 19b B.)
			if f := g.keyBesideBefore(l.s.first, l.rec, m.At); f != nil {
				if st, err := f.Stat(); err == nil {
					m.Found, m.FoundSize = true, st.Size()
					if endsAfterLine(st.Size(), m.End, fileTail(f, st.Size())) {
						m.FoundSize = m.End // read to its end (heldDone)
					}
				}
				f.Close()
			}
		}
	}
	g.countNextGone()
	var lines []pointer.EpochLine
	for _, l := range g.loaded {
		if m := l.s.heldMark; m.Epoch != 0 && !m.Counted {
			lines = append(lines, pointer.EpochLine{Epoch: m.Epoch, FileKey: m.Key, FPLen: m.FPLen, FP: m.FP,
				Path: l.s.first, Time: time.Now(), Reason: pointer.ReasonUnheld})
		}
	}
	if len(lines) == 0 {
		return
	}
	if err := appendEpochs(g.cfg.EpochsPath, lines); err != nil {
		g.log.Warn("cannot void the held marks found at this start; their files, if gone, are counted lost", "epochs", g.cfg.EpochsPath, "error", err)
		for _, l := range g.loaded {
			if !l.s.heldMark.Counted {
				l.s.heldMark = heldMark{}
			}
		}
	}
}

// countNextGone counts, at the start, one lost tail for each held mark's
// empty file (heldMark.Next) found nowhere beside the path it was at, by
// its key, born before the mark (a file born after it on its inode is
// another): the application may have written to it while tailfeed was
// down before it was deleted (DESIGN §4 "Nothing green over a loss"), and
// nothing else on disk named it (review 14a G). Found (at the path, or
// rotated beside it), it is read as any file there is. Before the marks
// are voided: a kill -9 in between counts it again at the next start,
// never not at all. Not looked for elsewhere: moved to another directory
// (or compressed: a .gz has another key) it is counted (an overcount). One
// that got a pointer of its own before the stop (opened with its first
// bytes, nothing committed before the kept pointer was let go) is counted
// here too — that pointer, bound while the file was empty, names no first
// bytes, and its source would take an older file beside the path for a
// later generation and count nothing — and that pointer's record is marked
// so that it is not counted again. Also when that pointer names first
// bytes (its lines delivered, none committed, and the file compressed
// while tailfeed was down: read from its .gz and counted, an overcount):
// left to that pointer, a file of the same first bytes beside the path (a
// banner line every generation starts with) or on its reused inode was
// taken for it and its lines were lost uncounted (review 30c).
func (g *Glob) countNextGone() {
	for _, l := range g.loaded {
		m := l.s.heldMark
		if m.Next == 0 || l.s.first == "" {
			continue
		}
		if f := g.keyBesideBefore(l.s.first, pointer.Record{FileKey: m.Next}, m.At); f != nil {
			f.Close()
			continue
		}
		if slices.ContainsFunc(g.loaded, func(o loaded) bool { return o.rec.FileKey == m.Next && o.rec.Offset > 0 }) {
			// Its own pointer holds a commit (the kept one would have been
			// let go at the next housekeeping): that record is found or
			// counted as any committed one (review 30a: counted here too,
			// its lines all read from its .gz).
			continue
		}
		detail := fmt.Sprintf("glob file %s, a rotation's newer file at that path with no line of it committed yet, is gone while stopped: its lines, if any, are lost",
			l.s.first)
		g.mu.Lock()
		g.countLossLocked(1, 0, m.Epoch, detail)
		g.mu.Unlock()
		g.log.Warn(detail, "fileKey", hex16(m.Next), "pointer", l.s.ptrPath)
		for _, o := range g.loaded {
			if o.rec.FileKey == m.Next && o.s.heldMark.Epoch == 0 {
				// Its own pointer (its stream opened before the stop,
				// nothing of it committed): counted here, not again by
				// whoever takes that pointer.
				o.s.heldMark = heldMark{Epoch: o.rec.Epoch, Key: o.rec.FileKey, End: o.rec.Offset,
					FPLen: o.rec.FPLen, FP: o.rec.FP, Counted: true}
			}
		}
	}
	g.flushLosses()
}

// appendEpochs is pointer.AppendEpochs (a test makes it fail).
var appendEpochs = pointer.AppendEpochs

// neverWritten: the pointer file at p holds no byte but zeros (at most
// pointer.Size of them): created (O_EXCL, sized) and never written.
func neverWritten(p string) bool {
	b, err := os.ReadFile(p)
	if err != nil || len(b) > pointer.Size {
		return false
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// adoptedEpochs maps each epoch to its last line in the epochs file when
// that line names a file (adopted for it, or reset to it).
func (g *Glob) adoptedEpochs() map[uint64]pointer.EpochLine {
	out := map[uint64]pointer.EpochLine{}
	if g.cfg.EpochsPath == "" {
		return out
	}
	lines, err := pointer.ReadEpochs(g.cfg.EpochsPath)
	if err != nil {
		g.log.Warn("cannot read the epochs file", "path", g.cfg.EpochsPath, "error", err)
	}
	for _, l := range lines {
		if l.FileKey != 0 {
			out[l.Epoch] = l
		} else {
			delete(out, l.Epoch)
		}
	}
	return out
}

// epochsIndex is what loadPointers takes from the epochs file, read once:
// each epoch's first path (the path of its first line naming a file), each
// epoch whose last line is a "held" one (pointer.HeldMarks), and each
// epoch a pointer was moved to off a file (its reset to the empty record:
// "forgotten", "lost") with the last line that did it.
type epochsIndex struct {
	firsts map[uint64]string
	marks  map[uint64]pointer.EpochLine
	left   map[uint64]pointer.EpochLine
}

func (g *Glob) readEpochsIndex() *epochsIndex {
	x := &epochsIndex{firsts: map[uint64]string{}, left: map[uint64]pointer.EpochLine{}}
	lines, _ := pointer.ReadEpochs(g.cfg.EpochsPath) // what parsed; adoptedEpochs warns
	for _, l := range lines {
		if _, ok := x.firsts[l.Epoch]; !ok && l.Path != "" {
			x.firsts[l.Epoch] = l.Path
		}
		if l.PrevFileKey != 0 && l.PrevEpoch != 0 && l.FileKey == 0 {
			x.left[l.Epoch] = l
		}
	}
	x.marks = pointer.HeldMarks(lines)
	return x
}

// leftLine is the line that moved a pointer to epoch off a file (x nil:
// no epochs file).
func (x *epochsIndex) leftLine(epoch uint64) (pointer.EpochLine, bool) {
	if x == nil {
		return pointer.EpochLine{}, false
	}
	l, ok := x.left[epoch]
	return l, ok
}

// first is the path the pointer file named name was first matched under:
// its first epoch's (the file's name), else that of epoch.
func (x *epochsIndex) first(name string, epoch uint64) string {
	n, _ := strconv.ParseUint(strings.TrimSuffix(name, ".ptr"), 16, 64)
	if p := x.firsts[n]; p != "" {
		return p
	}
	return x.firsts[epoch]
}

// unmatchedAt: the file of rec (its key, its first bytes) is still at p,
// which the config no longer matches — its path changed or was narrowed
// (a reload, or a restart with another config), an exclude removes it, it
// is now the daemon's own output, or the walk does not reach it (a path
// widened to ** that names it through a symlinked directory, which the
// walk never descends): the operator chose not to read it any more (DESIGN
// §12, a changed path starts as a new feed); and its size. After the first
// scan (g.keys).
func (g *Glob) unmatchedAt(p string, rec pointer.Record) (bool, int64) {
	if p == "" || (g.matched(p) && g.keys[rec.FileKey] == p) || !exists(p, rec.FileKey) || !globHeadMatches(p, rec) {
		return false, 0
	}
	st, err := os.Stat(p)
	if err != nil {
		return false, 0
	}
	return true, st.Size()
}

// countGone counts, at start, one lost tail for every previous run's
// pointer that names a file (file key, fingerprint) the first scan did not
// find, at any path the glob matches (DESIGN §4 "Nothing green over a
// loss"): the file went away while the daemon was stopped, and lines may
// have been appended to it before (a pointer cannot tell; counting is the
// conservative side). Not counted: the empty record (file key 0: every
// line of its file was committed before it was forgotten, or its tail was
// counted already), and a file whose copy holds its bytes — a file new at
// this start (no pointer of its own) at least as long as the pointer's
// offset whose first bytes match its fingerprint and that copyName allows
// (cp + rm, copytruncate while stopped): read from its start as a new file
// (duplicates, no gap); a file still at its path that an exclude now
// removes or the changed path no longer matches (unmatchedAt: not read any
// more by the operator's choice); and a
// file found beside the path its stream was first matched under by the
// pointer's key and first bytes (besideAtStart: renamed out of the glob,
// read there from the pointer's offset).
// The loss is counted first (OnLoss returns once the ledger entry is
// fsynced), then the pointer is Reset to the empty record under a new
// epoch (epochs line "lost"; "forgotten" for a copy), so the next restart does not count it again;
// a kill -9 in between counts it twice, never not at all. The pointer is
// then tracked as a forgotten one (deleted after forgetAfter). Manager
// goroutine, before logStart.
func (g *Glob) countGone() {
	var gone []loaded
	for _, l := range g.loaded {
		if l.rec.FileKey != 0 {
			gone = append(gone, l)
		}
	}
	if len(gone) == 0 {
		return
	}
	g.mu.Lock()
	var fresh []string // files matched at this start with no previous run's pointer
	for _, s := range g.byKey {
		if !s.gone && (s.ptrPath == "" || s.newEpoch != 0) && !s.done {
			fresh = append(fresh, s.path)
		}
	}
	g.mu.Unlock()
	sort.Strings(fresh)
	var besides []takenBeside // taken beside their first path (besideAtStart)
	defer func() { g.readGaps(besides) }()
	var movedList map[[2]uint64]movedEntry // read once, at the first file it may name
	moved := func() map[[2]uint64]movedEntry {
		if movedList == nil {
			movedList = g.readMovedList()
			if movedList == nil {
				movedList = map[[2]uint64]movedEntry{}
			}
		}
		return movedList
	}
	var takenAt map[[2]uint64]time.Time // read once, at the first file found beside
	taken := func(l loaded) time.Time {
		if takenAt == nil {
			takenAt = g.takenAt()
		}
		return takenOr(takenAt, l)
	}
	for _, l := range gone {
		rec := l.rec
		g.mu.Lock()
		l.s.path = l.s.first // Files names it: the path its epochs line gave
		g.mu.Unlock()
		copyAt := ""
		excl, size := g.unmatchedAt(l.s.first, rec)
		at := l.s.first // where the file is, for the log
		if rec.FPLen > 0 && !excl {
			for _, p := range fresh {
				if st, err := os.Stat(p); err == nil && st.Size() >= rec.Offset && globHeadMatches(p, rec) && g.copyName(l.s.first, p, rec) {
					copyAt = p
					break
				}
			}
		}
		if copyAt == "" && !excl {
			if ok, alone := g.besideAtStart(l, taken); ok {
				besides = append(besides, takenBeside{l, alone})
				continue // renamed out beside its path: read there, not lost
			}
		}
		if copyAt == "" && !excl {
			// Its first path no longer matched, its file renamed within
			// the glob before (to a name the config no longer matches
			// either): excluded as the file at its first path would be.
			// Its first path still matched: only the stop's moved list
			// tells a rename within the glob before the stop (review 9c A).
			if q, sz, ok := g.unmatchedBeside(l, taken); ok {
				excl, size, at = true, sz, q
			} else if q, sz, ok := g.movedUnmatched(l, moved()); ok {
				excl, size, at = true, sz, q
			}
		}
		reason := "lost"
		switch {
		case excl:
			// Still at its path, which the config no longer matches
			// (an exclude, a changed or narrowed path): the operator
			// chose not to read it any more (as a changed path,
			// DESIGN §12), no loss. What it holds past the pointer is
			// not read; a WARN says how much.
			reason = "forgotten"
			if n := size - rec.Offset; n > 0 {
				g.log.Warn("glob file no longer matched by the config (path or exclude) with bytes unread; not read any more (not counted lost)",
					"path", at, "unreadBytes", n, "pointer", l.s.ptrPath, "offset", rec.Offset)
			} else {
				g.log.Info("glob file no longer matched by the config (path or exclude), read to its end; not read any more",
					"path", at, "pointer", l.s.ptrPath)
			}
		case copyAt == "" && g.heldDone(l):
			// Read to its end and closed with every line committed in an
			// earlier run, its pointer kept only for the path's new file
			// (markHeld): DESIGN §4, not a lost tail.
			reason = "forgotten"
			g.log.Info("a glob file read to its end and closed before is gone; nothing of it was pending",
				"path", l.s.first, "pointer", l.s.ptrPath, "offset", rec.Offset)
			g.readNext(l)
		case copyAt == "" && g.committedGzBeside(l, taken(l)) != "":
			// Compressed beside its path since it was last read (logrotate
			// compress), the .gz holding its first bytes and exactly its
			// committed offset: every byte of it was read and committed,
			// nothing unread (this session's soak: a file taken beside its
			// path at a start, read to its end, then compressed, counted
			// lost at the next start with every line delivered).
			reason = "forgotten"
			g.log.Info("a glob file gone while stopped was compressed beside its path holding exactly its committed bytes; nothing of it was unread",
				"path", l.s.first, "gz", g.committedGzBeside(l, taken(l)), "pointer", l.s.ptrPath, "offset", rec.Offset)
			g.readNext(l)
		case copyAt == "":
			g.readNext(l) // (its empty file, written and rotated beside the path: review 19b D)
			detail := fmt.Sprintf("glob file gone while stopped (pointer %s at offset %d); its unread tail, if any, is lost",
				filepath.Base(l.s.ptrPath), rec.Offset)
			g.mu.Lock()
			g.acc.lostTails++
			g.mu.Unlock()
			if g.cfg.Stream.OnLoss != nil {
				g.cfg.Stream.OnLoss(Loss{Counter: "lostTails", Amount: 1, Epoch: rec.Epoch, Detail: detail})
			}
			g.log.Warn(detail, "pointer", l.s.ptrPath, "offset", rec.Offset, "fileKey", hex16(rec.FileKey),
				"epoch", hex16(rec.Epoch))
		default:
			reason = "forgotten" // its bytes are in the copy, read from its start
			g.log.Info("a glob file gone while stopped has a copy holding its bytes; the copy is read from its start",
				"pointer", l.s.ptrPath, "copy", copyAt, "offset", rec.Offset)
		}
		p, err := pointer.Open(l.s.ptrPath, pointer.Options{Logger: g.log, EpochsPath: g.cfg.EpochsPath})
		if err == nil {
			next := pointer.NewEpoch()
			err = p.ResetAs(reason, next, nil, 0)
			commits := p.Record().Commits
			if cerr := p.Close(); err == nil {
				err = cerr
			}
			if err == nil {
				g.mu.Lock()
				l.s.commits = commits
				g.ghosts++
				// Files shows the file as its stream read it: its key,
				// the epoch and the end it was read under and to.
				l.s.shownKey, l.s.readEpoch, l.s.readEnd = rec.FileKey, rec.Epoch, rec.Offset
				l.s.key, l.s.epoch, l.s.offset, l.s.nl = 1<<63|1<<62|g.ghosts, next, 0, false
				g.mu.Unlock()
				continue
			}
		}
		g.mu.Lock()
		g.acc.commitFailures++
		g.mu.Unlock()
		g.log.Error("pointer reset after a glob file gone while stopped failed; the next restart may count it again",
			"pointer", l.s.ptrPath, "error", err)
	}
}

// besideAtStart, at the start, finds a previous run's pointer's file that
// left the glob (DESIGN §4 "Restart after rotation": the pointer's file key
// and first bytes, looked for beside the path its stream was first matched
// under and beside that path's symlink target): logrotate renamed app.log
// to app.log.1, out of the glob, before its stream had read it to its end
// and closed — while stopped, or within rotateWaitMillis of the rename
// (the new app.log's stream holds a pointer of its own, so adoptByPath
// gives this one to nobody). Found, the pointer's stream is tracked there,
// gone from the glob, and queued: its source reads the file from the
// pointer's offset to its end, and it is closed rotateWaitMillis after its
// last growth, as a file renamed out of the glob while running is; its
// pointer then records that nothing of it is pending (closed). Not taken:
// a record without first bytes (at a restart a key alone is no identity),
// and a name the pattern matches (excluded, or the daemon's own output:
// the operator's choice not to read it); and a pointer whose path holds a
// matched file with no pointer of its own nor one given at this start (new
// at this start, adoptByPath gave it none): generations born at that path
// and rotated away while stopped could follow its file unseen, and only a
// source reading from the path's pointer reads them — so it is counted as
// before (an overcount when there were none). With no file at the path at
// all (logrotate renamed it and the application has not written since;
// review 15b C) the file is taken where the file system tells birth times
// (readGaps then reads every generation born beside the path after it that
// nothing names: the upper bound is now), not taken where it does not, nor
// for a held pointer (its mark decides, heldDone). Manager goroutine,
// before logStart.
func (g *Glob) besideAtStart(l loaded, taken func(loaded) time.Time) (ok bool, alone time.Time) {
	if l.s.first == "" || l.rec.FPLen == 0 {
		return false, time.Time{}
	}
	g.mu.Lock()
	at := g.byPath[l.s.first]
	known := at != nil && !at.gone && at.ptrPath != "" && at.newEpoch == 0
	untracked := at == nil || at.gone
	g.mu.Unlock()
	// (Nothing at the path: only a path the config still matches — one it
	// no longer matches is let go as an excluded one, unmatchedBeside:
	// review 20a D.)
	if !known && (!untracked || l.s.heldMark.Epoch != 0 || !g.matched(l.s.first) || !noFileAt(l.s.first)) {
		return false, time.Time{}
	}
	if !known {
		alone = time.Now() // nothing at the path when looked
	}
	f := g.keyBeside(l.s.first, l.rec)
	if f == nil {
		return false, time.Time{}
	}
	p := f.Name()
	st, err := f.Stat()
	born := birthTime(f)
	f.Close()
	if err != nil || g.pat.Match(p) || (!known && born.IsZero()) {
		// (No file at the path: the generations born there after this
		// one are found by their birth times, readGaps.)
		return false, time.Time{}
	}
	// The pointer's file existed when the pointer took it (its stream had
	// it open): one born after that instant has the key by inode reuse
	// (ext4 gives a deleted file's inode to the next one), whatever its
	// first bytes. That instant is when the pointer took its current file
	// (takenAt), not when the pointer file was made: a pointer file is
	// reset in place for every later file at its path (DESIGN §3), and
	// those were all born after it.
	if at := taken(l); !born.IsZero() && !at.IsZero() && born.After(at) {
		g.log.Warn("a file beside a gone glob file's path has its file key but was born after its pointer took that key: another file (inode reuse), not read",
			"path", p, "first", l.s.first, "pointer", l.s.ptrPath, "born", born, "taken", at)
		return false, time.Time{}
	}
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	s := l.s
	if g.byKey[s.key] != nil {
		return false, time.Time{}
	}
	s.path, s.size, s.mod = p, st.Size(), st.ModTime().UnixNano()
	s.seenAt, s.activeAt, s.startSize = now, now, st.Size()
	g.byKey[s.key] = s
	g.enqueue(s)
	g.log.Info("a glob file left the glob (renamed out beside its path); read there from its pointer to its end",
		"path", p, "first", s.first, "pointer", s.ptrPath, "offset", l.rec.Offset, "size", st.Size())
	return true, alone
}

// readGaps, at the start, after besideAtStart took the pointers in
// besides (their files left the glob beside their first path): a
// generation beside such a path that was born after the file one of them
// names and before the file the path's stream's pointer names (its own,
// or the one it reads first), and last written before that file was — or,
// with nothing at the path (besideAtStart, review 15b C), born after it
// and before besideAtStart found the path empty — is read by nobody — the
// one source reads from its pointer to its file's
// end, the other from its own pointer on — while no pointer and no epochs
// line names it: a stream given the older pointer at an earlier start was
// to read it (its own file) and was stopped before it did (preempted, then
// killed or reloaded; audit 7 C). Each such file is read from its start
// as a file of its own, beside the path (DESIGN §4: every generation still
// on disk is read; twice is a duplicate, never a gap). Only where the file
// system tells birth times, plain files, not matched by the glob, none of
// the pointers' files or a copy of them (their whole fingerprint, or the
// whole file); such a generation compressed since is counted instead
// (countGzGap), also where the path's pointer's own file was compressed
// too (found by its first bytes; its mtime bounds them; review 23c C).
// Manager goroutine, before logStart.
func (g *Glob) readGaps(besides []takenBeside) {
	if len(besides) == 0 {
		return
	}
	type bound struct {
		low   time.Time        // the earliest birth of a file taken beside
		recs  []pointer.Record // those files' records
		alone time.Time        // nothing at the path when one was taken (the latest such look)
	}
	byFirst := map[string]*bound{}
	for _, tb := range besides {
		l := tb.loaded
		g.mu.Lock()
		p := l.s.path
		g.mu.Unlock()
		bt := birthTimePath(p)
		if bt.IsZero() {
			continue
		}
		b := byFirst[l.s.first]
		if b == nil {
			b = &bound{low: bt}
			byFirst[l.s.first] = b
		}
		if bt.Before(b.low) {
			b.low = bt
		}
		if tb.alone.After(b.alone) {
			b.alone = tb.alone
		}
		b.recs = append(b.recs, l.rec)
	}
	var named map[uint64][]namedAs // file key → first bytes the epochs file names it with
	for first, b := range byFirst {
		g.mu.Lock()
		at := g.byPath[first]
		ok := at != nil && !at.gone && at.ptrPath != "" && at.newEpoch == 0
		var atPtr string
		var atKey, atGone uint64
		if ok {
			atPtr, atKey = at.ptrPath, at.key
			if at.genOwn {
				atGone = at.goneKey
			}
		}
		g.mu.Unlock()
		var rec pointer.Record
		var upBorn, upMod time.Time
		// The path's source reads the later generations of a file
		// (resumeRotated, or after a cut file's copy): those modified from
		// genRef − mtimeSlack on, and not born before genBorn unless
		// modified from genRef on (scanGenerations). Zero: none.
		var genRef, genBorn time.Time
		var cut *pointer.Record // the path's pointer, its file at the path cut: its source reads a copy of it
		// Beside the path, and beside a symlinked path's final target
		// under the target's name (the generations a rotation of the
		// target makes; review 18c E).
		places := [][2]string{{filepath.Dir(first), filepath.Base(first)}}
		if t, link := resolveLink(first); link {
			places = append(places, [2]string{filepath.Dir(t), filepath.Base(t)})
		}
		cutCopy := ""
		gzOnly := false // no birth bound: only compressed gaps (countGzGap) are told
		switch {
		case ok:
			var err error
			rec, err = pointer.Inspect(atPtr)
			if err != nil {
				continue
			}
			// A pointer bound while its file was empty names no first
			// bytes, nor its key while nothing of it was read: its own
			// file, read from its start, bounds the gaps — the file at the
			// path (review 18c B), or, given to that file at this start
			// (adoptByPath), the gone file the epochs file names when it
			// is beside the path: its source reads the generations after
			// that one (review 20a G). One naming another file needs its
			// first bytes to be found beside the path.
			var gone *os.File
			if rec.FileKey == 0 && rec.Offset == 0 && atGone != 0 {
				gone = g.keyBeside(first, pointer.Record{FileKey: atGone})
			}
			if gone != nil {
				upBorn = birthTime(gone)
				if st, err := gone.Stat(); err == nil {
					upMod = st.ModTime()
				}
				gone.Close()
				genRef, genBorn = upMod, upBorn
			} else if rec.FileKey == atKey || (rec.FileKey == 0 && rec.Offset == 0) {
				// (Also when the gone file is not beside the path any
				// more: its source counts it and reads no generation
				// beside the path for it — review 20c B.)
				upBorn = birthTimeTarget(first)
				if st, err := os.Stat(first); err == nil {
					upMod = st.ModTime()
					if rec.FileKey == atKey && rec.FPLen > 0 && (st.Size() < rec.Offset || !globHeadMatches(first, rec)) {
						cut = &rec
					}
				}
			} else if rec.FileKey == 0 || rec.FPLen == 0 {
				continue
			} else if f := g.keyBeside(first, rec); f != nil {
				upBorn = birthTime(f)
				if st, err := f.Stat(); err == nil {
					upMod = st.ModTime()
				}
				f.Close()
				genRef, genBorn = upMod, upBorn
			} else if gz, gzMod := g.gzCopyOf(places, rec); gz != "" {
				// Its file compressed too while stopped (logrotate's
				// compress without delaycompress; review 23c C): a .gz has
				// a key of its own, so it is found by its first bytes; its
				// mtime (gzip keeps it) is the file's last write. Its
				// source reads a copy from the pointer (copyAt: a plain
				// one findCopy picks — a shared header, review 24a A —
				// else the one findGzCopy picks), then the generations
				// modified from that copy's mtime less mtimeSlack on. Its
				// birth is not known (the .gz's is the compression's): a
				// plain generation is not told from a later one by it, so
				// only the compressed ones, which that compression made
				// too, are looked at (a plain twin of one: gapTwin).
				upMod, gzOnly, genBorn = gzMod, true, time.Time{}
				if mod, plain := g.plainCopyOf(places, rec, atKey); plain {
					// A plain file written after the .gz's file taken for
					// the copy (a later generation sharing a short head):
					// the .gz, and what was compressed between them, is
					// read by nobody — counted (review 24a B).
					genRef = mod
					if mod.After(gzMod) {
						upMod = mod
					}
				} else {
					genRef, cutCopy = gzMod, gz
				}
			}
		case !b.alone.IsZero():
			// No file at the path when besideAtStart looked (review 15b
			// C): every generation born beside it after the earliest file
			// taken there and before that look is a gap. A file made at
			// the path since (not a generation then) is a new stream of
			// its own (review 20a E).
			upBorn = b.alone
			upMod = upBorn.Add(time.Hour) // (any last write: none was at the path)
		default:
			continue
		}
		if upMod.IsZero() || (gzOnly && !b.low.Before(upMod)) || (!gzOnly && (upBorn.IsZero() || !b.low.Before(upBorn))) {
			continue
		}
		recs := b.recs
		if rec.FileKey != 0 {
			recs = append([]pointer.Record{rec}, recs...)
		}
		if cut != nil {
			// Its source reads the copy findCopy picks, else the one
			// findGzCopy picks (the last written of those with the
			// pointer's first bytes and at least its offset), then the
			// generations after it; without one, those after its pointer
			// file's last commit (review 23c A, B, D; 23d B).
			mod, plain := g.plainCopyOf(places, *cut, atKey)
			if !plain {
				cutCopy, mod = g.gzCopyOf(places, *cut)
			}
			if !plain && cutCopy == "" {
				if st, err := os.Stat(atPtr); err == nil {
					mod = st.ModTime()
				}
			}
			genRef, genBorn = mod, time.Time{}
		}
		g.eachRotated(places, func(p, name string) {
			if g.pat.Match(p) {
				return
			}
			if named == nil {
				named = g.epochsNamed()
			}
			if !strings.HasSuffix(name, ".gz") {
				if !gzOnly {
					g.readGap(p, first, b.low, upBorn, upMod, genRef, genBorn, recs, named)
				}
				return
			}
			if p == cutCopy {
				return // the path's file cut while stopped: its source reads this copy from the pointer (review 23b B)
			}
			if twin := gzTwin(p); twin != "" && g.pat.Match(twin) {
				return // a glob file's: its stream reads it
			} else if twin != "" {
				// Its compressor still running (or keeping the file): its
				// content is the twin's, looked at instead — also when
				// the twin's name is no generation name (review 24c C).
				// But a twin the path's source does not read instead
				// leaves the .gz to that source's own scan: in its window
				// (by the .gz's times), the source reads the .gz (review
				// 25a C: the twin, born before, was read here as a gap too).
				if !twinRead(p, g.cfg.Stream.RotatedNames, places, g.matched, nil) && gzInSourceWindow(p, genRef, genBorn) {
					return
				}
				if gzOnly {
					g.gapTwin(twin, first, b.low, upMod, genRef, genBorn, recs, named)
				} else {
					g.readGap(twin, first, b.low, upBorn, upMod, genRef, genBorn, recs, named)
				}
				return
			}
			// (Another file of its name beside it, no twin: the path's
			// source reads it as a generation of its own — review 24d B.)
			g.countGzGap(p, first, b.low, upMod, genRef, genBorn, recs, named)
		})
	}
}

// gzTwin is the plain twin of the .gz at p — the file of its name without
// ".gz", holding every first byte the .gz decompresses to (its first 4 KiB,
// or all of it; any file of that name while the .gz is too short to tell:
// its compressor has just begun) — or "". Another file of that name (a
// later generation, the path's pointer's own file, one sharing only a
// header with it) is no twin: the .gz is a generation of its own (review
// 24c B, 24d A).
func gzTwin(p string) string {
	t, _ := gzTwinTold(p)
	return t
}

// gzTwinTold is gzTwin, and whether the twin was told by its bytes: the
// .gz's decompressed first bytes cover the twin's (all of them, or 4 KiB),
// or the .gz is whole. False: too short to tell — a prefix of a .gz still
// being written may be a header every generation starts with (review 25e
// B, B2).
func gzTwinTold(p string) (string, bool) {
	twin := strings.TrimSuffix(p, ".gz")
	f, err := fileutil.OpenRegular(twin)
	if err != nil {
		return "", false
	}
	defer f.Close()
	head, ok := gzHead(p)
	if !ok || len(head) == 0 {
		return twin, false
	}
	b := make([]byte, len(head))
	if n, _ := f.ReadAt(b, 0); n != len(b) || !bytes.Equal(b, head) {
		return "", false
	}
	if len(head) < pointer.MaxFingerprint {
		if st, err := f.Stat(); err != nil || st.Size() > int64(len(head)) {
			// Shorter than the twin: told only when the .gz is whole (a
			// snapshot of the twin's first bytes: gzip -k while the
			// application wrote on, review 25a A2), not while it grows.
			if _, dsize, whole := inspectGz(p); !whole || dsize != int64(len(head)) {
				return twin, false
			}
		}
	}
	return twin, true
}

// readGap queues the file at p as a gap generation of first (readGaps)
// when it is one.
func (g *Glob) readGap(p, first string, low, upBorn, upMod, genRef, genBorn time.Time, recs []pointer.Record, named map[uint64][]namedAs) {
	f, err := fileutil.OpenRegular(p)
	if err != nil {
		return
	}
	defer f.Close()
	dev, ino, err := fileutil.DevIno(f)
	st, serr := f.Stat()
	bt := birthTime(f)
	if err != nil || serr != nil || st.Size() == 0 || bt.IsZero() || !bt.After(low) || !bt.Before(upBorn) || !st.ModTime().Before(upMod) {
		return
	}
	if !(gapFile{mod: st.ModTime(), born: bt}).inWindow(low, upMod, genRef, genBorn) {
		// A later generation the path's source reads (after the copy of
		// its file cut while stopped: born before the path's new file;
		// review 24d E — it was read twice).
		return
	}
	k := pointer.FileKey(dev, ino)
	for _, r := range named[k] {
		// A line names this file only if written after its birth (else
		// another file on the inode: review 18c D; a counted .gz's "lost"
		// line, review 23b C).
		if !r.contentOnly && r.at.After(bt) && (r.FPLen == 0 || (r.FPLen <= uint64(st.Size()) && headIs(f, int(r.FPLen), r.FP))) {
			return // read (or adopted) by a stream before
		}
	}
	for _, r := range recs {
		// The whole fingerprint, or the whole file: a shorter match is a
		// shared header, not a copy (review 18c A).
		if (r.FPLen == pointer.MaxFingerprint || r.FPLen == uint64(st.Size())) && headIs(f, int(r.FPLen), r.FP) {
			return // a copy of a pointer's file
		}
	}
	if g.queueBeside(p, first, k, st) {
		g.log.Warn("a generation beside a glob path that no pointer or epochs line names was born after a pointer's file (and before the next one's, if any): read from its start",
			"path", p, "first", first, "size", st.Size())
	}
}

// countGzGap counts the .gz at p as a gap generation of first that nobody
// reads (readGaps) when it is one: compressed after its rotation
// (logrotate's compress without delaycompress) before the start that would
// have read it as a plain file. A glob stream reads no .gz from its start
// (only a source's later generations, through gzip: DESIGN §4), so its lines
// are counted — lostTails + 1, lostBytes its decompressed size, named in
// detail — instead of lost silently (review 18c C; §4 Nothing green over a
// loss). Its birth time is the compression's, so it is told by its last
// write instead (gzip keeps the file's mtime): after the earliest file taken
// beside the path (low) and before the path's file was last written (upMod).
// Not a gap: a later generation the path's source reads (genRef, genBorn:
// its scan's window after its pointer's file rotated away, or after the copy
// of its file cut while stopped; review 23a D, 23b D, 23c B, D); that copy
// itself (cutCopy: read from the pointer; review 23b B, 23c A); a .gz whose
// plain twin is beside it (gzTwin: readGaps looks at the twin instead, by
// readGap's rules or gapTwin's; review 24a C, 24c B, C); one that does not
// end cleanly (still being written); one the epochs file names under its
// own key (counted at an earlier start: below; review 23a C — a line
// written before its birth names another file on its inode, review 23b C);
// and one whose decompressed bytes
// are a file some stream read, by a pointer's or an epochs line's whole
// fingerprint or the whole file: a shorter match is a shared header (a CSV
// header, a banner), not that file (review 23a A, B; readGap's rule, review
// 18c A; another counted .gz's line names no read content, review 23b F).
// Once the ledger holds the loss, an epochs line "lost" names the .gz (its
// key and decompressed first bytes, under an epoch no pointer holds), so
// that the next start does not count it again; a kill -9 in between counts
// it twice, never not at all. Manager goroutine, at the start.
func (g *Glob) countGzGap(p, first string, low, upMod, genRef, genBorn time.Time, recs []pointer.Record, named map[uint64][]namedAs) {
	f, err := fileutil.OpenRegular(p)
	if err != nil {
		return
	}
	dev, ino, kerr := fileutil.DevIno(f)
	st, serr := f.Stat()
	born := birthTime(f)
	f.Close()
	if kerr != nil || serr != nil {
		return
	}
	gf := gapFile{p: p, k: pointer.FileKey(dev, ino), mod: st.ModTime(), born: born, gz: true}
	if !gf.inWindow(low, upMod, genRef, genBorn) {
		return
	}
	head, dsize, ok := inspectGz(p)
	if !ok {
		return
	}
	gf.head, gf.size = head, dsize
	if from, ok := gf.unread(recs, named); ok {
		g.countGap(gf, first, from, named)
	}
}

// gapFile is a generation beside a glob path looked at as a gap
// (countGzGap, gapTwin): its key, last write, birth (zero: not known),
// first bytes and size — a .gz's decompressed ones.
type gapFile struct {
	p         string
	k         uint64
	mod, born time.Time
	head      []byte
	size      int64
	gz        bool
}

// inWindow: last written after the earliest file taken beside the path
// (low) and before the path's file was (upMod), and not a later generation
// the path's source reads (genRef, genBorn: its scan's rule; review 23a D,
// 23b D, 23c B, D).
func (f gapFile) inWindow(low, upMod, genRef, genBorn time.Time) bool {
	m := f.mod
	if !m.After(low) || !m.Before(upMod) {
		return false
	}
	return !f.sourceReads(genRef, genBorn)
}

// sourceReads: f is a later generation the path's source reads, by its
// scan's window (genRef, genBorn: scanGenerations' ref and born; a zero
// genRef: the source reads none).
func (f gapFile) sourceReads(genRef, genBorn time.Time) bool {
	m := f.mod
	return !genRef.IsZero() && !m.Before(genRef.Add(-mtimeSlack)) &&
		(genBorn.IsZero() || f.born.IsZero() || !f.born.Before(genBorn) || !m.Before(genRef))
}

// gzInSourceWindow: the .gz at p is in the path's source's window
// (gapFile.sourceReads, by the .gz's own times).
func gzInSourceWindow(p string, genRef, genBorn time.Time) bool {
	f, err := fileutil.OpenRegular(p)
	if err != nil {
		return false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false
	}
	return gapFile{mod: st.ModTime(), born: birthTime(f)}.sourceReads(genRef, genBorn)
}

// unread: f holds bytes no stream read — from offset from on (-1: all of
// them) — unless the epochs file names it under its own key (counted at an
// earlier start, or read; a line written before its birth names another
// file on its inode, review 23b C) or its bytes are a file some stream
// read, by a pointer's or an epochs line's whole fingerprint or the whole
// file (a shorter match is a shared header: review 18c A, 23a A, B; another
// counted file's line names no read content, review 23b F). A file read to
// its end and let go as such ("forgotten": nothing pending), grown since:
// what it holds past that end (review 23e A).
func (f gapFile) unread(recs []pointer.Record, named map[uint64][]namedAs) (int64, bool) {
	if f.size == 0 {
		return 0, false
	}
	for _, r := range named[f.k] {
		if !r.contentOnly && (f.born.IsZero() || r.at.After(f.born)) && headMatches(f.head, r.FPLen, r.FP) {
			return 0, false // counted at an earlier start (or read under this key)
		}
	}
	whole := func(fpLen, fp uint64) bool {
		return (fpLen == pointer.MaxFingerprint || fpLen == uint64(f.size)) && headMatches(f.head, fpLen, fp)
	}
	from := int64(-1)
	for _, ns := range named {
		for _, r := range ns {
			if r.counted || !whole(r.FPLen, r.FP) {
				continue
			}
			if r.readTo >= 0 && f.size > r.readTo {
				from = max(from, r.readTo)
				continue
			}
			return 0, false // its content was read (or adopted) by a stream before
		}
	}
	for _, r := range recs {
		if whole(r.FPLen, r.FP) {
			return 0, false // a copy of a pointer's file
		}
	}
	return from, true
}

// countGap counts the gap f of first lost — lostTails + 1, lostBytes its
// size from from (all of it when from < 0), named in detail — and, once the
// ledger holds it, appends an epochs line "lost" naming it (its key and
// first bytes, under an epoch no pointer holds) so that the next start does
// not count it again (a kill -9 in between counts it twice, never not at
// all).
func (g *Glob) countGap(f gapFile, first string, from int64, named map[uint64][]namedAs, also ...uint64) {
	n := f.size
	d := fmt.Sprintf("glob file %s, a generation rotated out beside %s after a pointer's file and compressed before any stream read it, is not read (a glob reads no .gz from its start): its %d decompressed bytes are lost",
		f.p, first, n)
	if from >= 0 {
		n = f.size - from
		how, what := "compressed while stopped (a glob reads no .gz from its start)", "decompressed bytes"
		if !f.gz {
			how, what = "being compressed (its .gz beside it)", "bytes"
		}
		d = fmt.Sprintf("glob file %s, beside %s, holds a file read to offset %d and let go, grown since and %s: its %d %s from offset %d are lost",
			f.p, first, from, how, n, what, from)
	}
	g.mu.Lock()
	g.countLossLocked(1, uint64(n), 0, d)
	g.mu.Unlock()
	g.flushLosses() // the ledger entry, before the line that says it is counted
	fpLen, fp, now := uint64(len(f.head)), pointer.Fingerprint(f.head), time.Now()
	var ls []pointer.EpochLine
	for _, k := range append([]uint64{f.k}, also...) {
		ls = append(ls, pointer.EpochLine{Epoch: pointer.NewEpoch(), FileKey: k, FPLen: fpLen, FP: fp,
			Path: f.p, Time: now, Reason: "lost"})
	}
	if g.cfg.EpochsPath == "" {
		return
	}
	if err := appendEpochs(g.cfg.EpochsPath, ls); err != nil {
		g.log.Warn("cannot note the counted generation in the epochs file; the next start may count it again", "path", f.p, "error", err)
		return
	}
	for _, l := range ls {
		named[l.FileKey] = append(named[l.FileKey], namedAs{FPLen: fpLen, FP: fp, at: now, counted: true, readTo: -1})
	}
}

// gapTwin looks at the plain twin p (gzTwin) of a .gz beside first — its
// compressor still running, or keeping it — where readGaps tells only
// compressed gaps (gzOnly: the path's pointer's file compressed, no birth
// bound): the twin is the .gz's content, told by the .gz's rules from its
// own last write, birth and bytes — the .gz may still be torn (review 24b
// B). A gap is read from its start (queued as readGap queues one; review
// 24a C); one read to an end before and grown since is counted from there,
// under the .gz's key too (review 24c A). Gone when looked at (gzip
// unlinked it: review 24b A), the .gz is looked at instead.
func (g *Glob) gapTwin(p, first string, low, upMod, genRef, genBorn time.Time, recs []pointer.Record, named map[uint64][]namedAs) {
	f, err := fileutil.OpenRegular(p)
	if err != nil {
		g.countGzGap(p+".gz", first, low, upMod, genRef, genBorn, recs, named)
		return
	}
	defer f.Close()
	dev, ino, kerr := fileutil.DevIno(f)
	st, serr := f.Stat()
	if kerr != nil || serr != nil {
		return
	}
	gf := gapFile{p: p, k: pointer.FileKey(dev, ino), mod: st.ModTime(), born: birthTime(f), size: st.Size()}
	if !gf.inWindow(low, upMod, genRef, genBorn) {
		return
	}
	head := make([]byte, min(st.Size(), pointer.MaxFingerprint))
	if n, err := f.ReadAt(head, 0); n != len(head) && !errors.Is(err, io.EOF) {
		return
	}
	gf.head = head
	from, ok := gf.unread(recs, named)
	if !ok {
		return
	}
	if from >= 0 {
		// Counted under the .gz's key too: once gzip unlinks the twin,
		// the .gz names the same bytes (review 24c A).
		var also []uint64
		if dev, ino, err := fileutil.DevInoPath(p + ".gz"); err == nil {
			also = append(also, pointer.FileKey(dev, ino))
		}
		g.countGap(gf, first, from, named, also...)
		return
	}
	if g.queueBeside(p, first, gf.k, st) {
		g.log.Warn("a generation beside a glob path that no pointer or epochs line names, written after a pointer's file and being compressed (its .gz beside it), is read from its start",
			"path", p, "first", first, "size", st.Size())
	}
}

// eachRotated calls fn for every regular file of places (directory, base
// name) named as a generation of that base name (rotatedNames) and
// beginning with its stem, not one of tailfeed's own files, in directory
// order.
func (g *Glob) eachRotated(places [][2]string, fn func(p, name string)) {
	g.eachRotatedName(places, true, fn)
}

// eachRotatedName is eachRotated; with stem false, any rotatedNames match
// (as the source's scanGenerations lists them).
func (g *Glob) eachRotatedName(places [][2]string, stem bool, fn func(p, name string)) {
	for _, pl := range places {
		dir, base := pl[0], pl[1]
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			name := e.Name()
			p := filepath.Join(dir, name)
			if e.Type().IsRegular() && (!stem || sameStem(name, base)) && isRotatedName(g.cfg.Stream.RotatedNames, name, base) && !g.own(p) {
				fn(p, name)
			}
		}
	}
}

// plainCopyOf: a plain copy of rec's file is beside the path, as findCopy
// finds one (any regular file of the places' directories but the glob's
// own, tailfeed's outputs and the file at the path, key atKey, holding at
// least rec's offset and its first bytes); the last written one's mtime.
func (g *Glob) plainCopyOf(places [][2]string, rec pointer.Record, atKey uint64) (time.Time, bool) {
	var best time.Time
	found := false
	now := time.Now()
	for _, pl := range places {
		dir := pl[0]
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			if !e.Type().IsRegular() || g.matched(p) || g.own(p) {
				continue
			}
			info, err := e.Info()
			if err != nil || info.Size() < max(rec.Offset, int64(rec.FPLen)) || info.ModTime().After(now) ||
				(found && !info.ModTime().After(best)) {
				continue
			}
			if dev, ino, err := fileutil.DevInoPath(p); err != nil || pointer.FileKey(dev, ino) == atKey || !globHeadMatches(p, rec) {
				continue
			}
			best, found = info.ModTime(), true
		}
	}
	return best, found
}

// gzCopyOf is the compressed copy of rec's file a source finds beside the
// path (findGzCopy, through scanGenerations: any rotatedNames match, not
// only one of the path's stem, a file once under the first of its names,
// and none left for a plain twin read instead, twinRead — review 24e A, B,
// 24f A, 24d B, D): of the
// .gz generations in places whose decompressed first bytes are rec's and
// that hold at least its offset, the last written; "" when none. Its mtime
// with it.
func (g *Glob) gzCopyOf(places [][2]string, rec pointer.Record) (string, time.Time) {
	var best string
	var bestMod time.Time
	if rec.FPLen == 0 {
		return "", time.Time{}
	}
	seen := map[[2]uint64]bool{}
	g.eachRotatedName(places, false, func(p, name string) {
		dev, ino, err := fileutil.DevInoPath(p)
		if err != nil || seen[[2]uint64{dev, ino}] {
			return
		}
		seen[[2]uint64{dev, ino}] = true
		if !strings.HasSuffix(name, ".gz") {
			return
		}
		if twinRead(p, g.cfg.Stream.RotatedNames, places, g.matched, func(dev, ino uint64) bool { return pointer.FileKey(dev, ino) == rec.FileKey }) {
			return // the source reads its plain twin instead
		}
		if head, ok := gzHead(p); !ok || !headMatches(head, rec.FPLen, rec.FP) {
			return
		}
		st, err := os.Stat(p)
		if err != nil || (best != "" && st.ModTime().Before(bestMod)) {
			return
		}
		if _, dsize, ok := inspectGz(p); !ok || dsize < max(rec.Offset, int64(rec.FPLen)) {
			return
		}
		best, bestMod = p, st.ModTime()
	})
	return best, bestMod
}

// takenBeside is a previous run's pointer besideAtStart took beside its
// first path, and when it found nothing at that path (zero: a file with a
// pointer was there).
type takenBeside struct {
	loaded
	alone time.Time
}

// noFileAt: nothing is at path (no file, no symlink).
func noFileAt(path string) bool {
	_, err := os.Lstat(path)
	return errors.Is(err, fs.ErrNotExist)
}

// queueBeside tracks the file at p (key k, stat st), beside the glob path
// first and named by no pointer, as a new stream gone from the glob, queued
// to be read from its start (its Delivery.Path first's); false when a
// stream or a pointer has that key already.
func (g *Glob) queueBeside(p, first string, k uint64, st os.FileInfo) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.queueBesideLocked(p, first, k, st) != nil
}

// queueBesideLocked is queueBeside under mu; the stream, nil when none.
func (g *Glob) queueBesideLocked(p, first string, k uint64, st os.FileInfo) *gstream {
	now := time.Now()
	if g.byKey[k] != nil || g.ptrKeys[k] {
		return nil
	}
	s := &gstream{path: p, first: first, key: k, size: st.Size(), mod: st.ModTime().UnixNano(), activeAt: now, seenAt: now,
		startSize: st.Size(), gone: true, goneAt: now}
	g.byKey[k] = s
	g.enqueue(s)
	return s
}

// heldDone: l's held mark names its record, and its file is gone, or
// found beside its path (where the start does not read it: no file at
// the path) with nothing past the mark's end.
func (g *Glob) heldDone(l loaded) bool {
	m := l.s.heldMark
	if !m.Found {
		return m.names(l.rec)
	}
	m.Found = false
	if !m.names(l.rec) || l.s.first == "" {
		return false
	}
	f := g.keyBesideBefore(l.s.first, l.rec, m.At) // (not another file on its inode: review 19c A)
	if f == nil {
		// Gone since the mark was read: what it held then (review 19b E).
		return l.s.heldMark.FoundSize == m.End
	}
	defer f.Close()
	st, err := f.Stat()
	return err == nil && endsAfterLine(st.Size(), m.End, fileTail(f, st.Size()))
}

// readNext, at the start, reads the empty file a held mark names
// (heldMark.Next) when it is beside its path under a name the glob does not
// match, and its pointer's own file is gone with no file at the path to
// take the pointer (countGone): logrotate's "nocreate" moved it there
// after the application wrote to it while tailfeed was down. Empty when
// the mark was written, every byte it holds is unread: read from its
// start as a stream of its own (review 19a E). (A file at the path takes
// the pointer instead, and its source reads the generations beside it.)
func (g *Glob) readNext(l loaded) {
	m := l.s.heldMark
	if m.Next == 0 || l.s.first == "" {
		return
	}
	f := g.keyBesideBefore(l.s.first, pointer.Record{FileKey: m.Next}, m.At)
	if f == nil {
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 || g.matched(f.Name()) {
		return
	}
	if g.queueBeside(f.Name(), l.s.first, m.Next, st) {
		g.log.Info("the empty new file a kept pointer was held for was written to and rotated out of the glob while tailfeed was down: read from its start",
			"path", f.Name(), "first", l.s.first, "size", st.Size())
	}
}

// namedAs is a file as an epochs line names it: its first bytes, and when.
type namedAs struct {
	FPLen, FP uint64
	at        time.Time
	// counted: a "lost" line naming a compressed generation counted lost
	// (countGzGap), not a file any stream read.
	counted bool
	// contentOnly: a line written at this start (countGone's resets), or
	// a "lost" line's previous record (a file gone when it was written):
	// its first bytes name content a stream read, its key no file on disk
	// now — on a reused inode another file (review 23c F, 23d A, C).
	contentOnly bool
	// readTo, on a "forgotten" line's previous record: the offset its
	// file was read and committed to (nothing pending then); -1 otherwise.
	readTo int64
}

// epochsNamed maps each file key the epochs file names (a line's file, or
// the one it moved a pointer off) to the first bytes named with it.
func (g *Glob) epochsNamed() map[uint64][]namedAs {
	out := map[uint64][]namedAs{}
	if g.cfg.EpochsPath == "" {
		return out
	}
	lines, _ := pointer.ReadEpochs(g.cfg.EpochsPath) // what parsed; adoptedEpochs warns
	for _, l := range lines {
		now := !l.Time.Before(g.startAt) // (countGone's "lost" and "forgotten" resets)
		if l.FileKey != 0 && !markLine(l) {
			out[l.FileKey] = append(out[l.FileKey], namedAs{FPLen: l.FPLen, FP: l.FP, at: l.Time,
				counted: l.Reason == "lost" && l.PrevEpoch == 0, contentOnly: now, readTo: -1})
		}
		if l.PrevFileKey != 0 {
			to := int64(-1)
			if l.Reason == "forgotten" {
				to = l.PrevOffset
			}
			out[l.PrevFileKey] = append(out[l.PrevFileKey], namedAs{FPLen: l.PrevFPLen, FP: l.PrevFP, at: l.Time,
				contentOnly: now || l.Reason == "lost", readTo: to})
		}
	}
	return out
}

// unmatchedBeside: l's pointer's file (its key and first bytes, born
// before the pointer took it) is beside the path its stream was first
// matched under, at a name the config does not match, and that first path
// is no longer matched either (the path narrowed, an exclude added, after
// the file was renamed within the glob): its path and size. A first path
// still matched says nothing of why the file left it (renamed out while
// stopped: generations rotated away unseen may follow it), so there it is
// not taken. Manager goroutine, at the start.
func (g *Glob) unmatchedBeside(l loaded, taken func(loaded) time.Time) (string, int64, bool) {
	if l.s.first == "" || l.rec.FPLen == 0 || g.matched(l.s.first) {
		return "", 0, false
	}
	f := g.keyBeside(l.s.first, l.rec)
	if f == nil {
		return "", 0, false
	}
	p := f.Name()
	st, err := f.Stat()
	born := birthTime(f)
	f.Close()
	if err != nil || (g.matched(p) && g.keys[l.rec.FileKey] == p) {
		return "", 0, false
	}
	if at := taken(l); !born.IsZero() && !at.IsZero() && born.After(at) {
		return "", 0, false // its inode reused by a new file
	}
	return p, st.Size(), true
}

// takenAt maps (epoch, file key) to the time of the epochs file's last
// line naming that key under that epoch ("adopted", "reset", "replaced",
// "truncated"): written once the pointer's stream had that file open, so
// the file existed then (the line is written ahead of the record, DESIGN
// §4). Empty without an epochs file.
func (g *Glob) takenAt() map[[2]uint64]time.Time {
	out := map[[2]uint64]time.Time{}
	if g.cfg.EpochsPath == "" {
		return out
	}
	lines, _ := pointer.ReadEpochs(g.cfg.EpochsPath) // what parsed; adoptedEpochs warns
	for _, l := range lines {
		if l.FileKey != 0 && !markLine(l) {
			out[[2]uint64{l.Epoch, l.FileKey}] = l.Time
		}
	}
	return out
}

// markLine: l is a held mark or its void (pointer.ReasonHeld, ReasonUnheld),
// written after the file it names was taken (when it was kept, when a start
// found the mark): its time says nothing of when the file was known, and a
// file born on a reused inode before it is not the one it names.
func markLine(l pointer.EpochLine) bool {
	return l.Reason == pointer.ReasonHeld || l.Reason == pointer.ReasonUnheld
}

// takenOr is the instant l's pointer is known to have held its record's
// file open: its line in taken (takenAt), else — no line names the key
// under the epoch (no epochs file, or a copy bound under the epoch, whose
// key only a commit records) — the pointer file's mtime, its last write,
// made while its stream had that file open (zero when it cannot be read:
// no file is refused then).
func takenOr(taken map[[2]uint64]time.Time, l loaded) time.Time {
	if t, ok := taken[[2]uint64{l.rec.Epoch, l.rec.FileKey}]; ok {
		return t
	}
	if st, err := os.Stat(l.s.ptrPath); err == nil {
		return st.ModTime()
	}
	return time.Time{}
}

type loaded struct {
	s   *gstream
	rec pointer.Record
}

// ptrFor finds a previous run's pointer for a new key: its key and first
// bytes (identity at a restart is key + fingerprint alone, DESIGN §10),
// the path its stream was first matched under ("": unknown) and the
// pointer's offset.
func (g *Glob) ptrFor(k uint64, f found) (string, string, int64) {
	if g.retired[k] {
		return "", "", 0
	}
	for i, l := range g.loaded {
		if l.rec.FileKey == k && globHeadMatches(f.path, l.rec) && !(l.rec.FPLen == 0 && bornAfterPtr(f.path, l.s.ptrPath)) {
			g.loaded = append(g.loaded[:i], g.loaded[i+1:]...)
			return l.s.ptrPath, l.s.first, l.rec.Offset
		}
	}
	return "", "", 0
}

// bornAfterPtr: the file at path was born after the pointer file at ptr
// was last written (both known). A pointer's file existed before the
// pointer took it, so such a file has its key by inode reuse: with no
// first bytes recorded (a file bound while empty), the key is all a
// restart has, and birth time tells the two apart (adoptByPath then gives
// the pointer to the new file at its path, whose source counts the gone
// file and reads the new one under a new epoch).
func bornAfterPtr(path, ptr string) bool {
	st, err := os.Stat(ptr)
	if err != nil {
		return false
	}
	b := birthTimeTarget(path)
	return !b.IsZero() && b.After(st.ModTime())
}

// adoptByPath, at the start, gives a previous run's pointer that no
// matched file took (ptrFor: its file key with its first bytes) to the file
// new at this start at the path its stream was first matched under, so that
// the stream's source finds the pointer's file beside that path and reads
// its unread tail before the new file (DESIGN §4 "Restart after rotation",
// which §10 applies to each file): a copytruncate while stopped (the copy
// beside the path holds the tail, the file at the path has its key and
// other first bytes), a stop or a kill while the stream read its file's
// copy (the pointer holds the copy's key, readCopy's Bind), a rename out
// of the glob while stopped, also of a file its stream bound while it was
// empty (a record at offset 0 with no key: the epochs line gave it, and the
// source reads that file from its start). The source counts the tail lost
// when that file is not beside the path (resumeRotated), as countGone did.
// Several pointers naming one path: the one written last is taken (the
// others go to countGone). Left out (countGone decides, as before): a
// pointer whose bytes a file new at this start holds (a copy in the glob,
// read from its start). Under mu, on the manager's goroutine.
func (g *Glob) adoptByPath(made []*gstream) {
	if len(g.loaded) == 0 {
		return
	}
	for _, s := range made {
		if s.ptrPath != "" || s.first != s.path {
			continue
		}
		best, byFile, allFound := -1, -1, true
		var bestMod, bestFileMod time.Time
		for i, l := range g.loaded {
			if l.rec.FileKey == 0 || l.s.first != s.path {
				continue
			}
			st, err := os.Stat(l.s.ptrPath)
			if err != nil || g.copyMade(l.rec, l.s.first, made) {
				continue
			}
			if best < 0 || st.ModTime().After(bestMod) {
				best, bestMod = i, st.ModTime()
			}
			var mod time.Time
			if f := g.keyBeside(s.path, l.rec); f != nil {
				if fst, err := f.Stat(); err == nil {
					mod = fst.ModTime()
				}
				f.Close()
			}
			if mod.IsZero() {
				allFound = false
			} else if byFile < 0 || mod.After(bestFileMod) {
				byFile, bestFileMod = i, mod
			}
		}
		if best < 0 {
			continue
		}
		if allFound && byFile >= 0 {
			// Every candidate's file is beside the path: the one written
			// last is the latest generation — the new file's source takes
			// the files written after it for the later ones (by mtime). The
			// pointer written last may name an older file, read after its
			// stream was stopped and started again (besideAtStart,
			// readGaps): given to the new file, its source would read the
			// later generations again (review 18c F). Not the one born last
			// either: a file born earlier may be written later (renamed
			// within the glob, written on through its descriptor: review
			// 18d A).
			best = byFile
		}
		l := g.loaded[best]
		g.loaded = append(g.loaded[:best], g.loaded[best+1:]...)
		s.ptrPath = l.s.ptrPath
		s.genOwn, s.goneKey, s.goneEp = true, l.rec.FileKey, l.rec.Epoch
		s.heldMark = l.s.heldMark
		g.log.Info("a previous run's pointer names no matched file; the file at its path takes it (its source looks for the pointer's file beside the path)",
			"path", s.path, "pointer", l.s.ptrPath, "offset", l.rec.Offset, "fileKey", hex16(l.rec.FileKey))
	}
}

// adoptCopies, at the start, gives a previous run's pointer that no
// matched file took (ptrFor) to its copy: DESIGN §10 "At a start, a new key
// whose first bytes match a stream whose file is now shorter than its
// offset is that stream's copy at once" — a copytruncate while stopped
// whose copy the glob matches (logrotate dateext with "extension .log").
// The pointer's own file must still be matched, under its key, and be
// shorter than the pointer's offset or hold other first bytes (cut, and
// written to again past the offset before the start); the copy is a file
// new at this start, at least that offset long, with the pointer's first
// bytes, that copyName allows (a one-line head, a header, is no proof: a
// file of another name sharing it is not taken). It is
// read on from the offset under the old stream and epoch (keeping its
// Delivery.Path), not again from its start. The first such file in path
// order takes it. A pointer whose file is gone (deleted, cp + rm) is left
// to adoptByPath and countGone: a file sharing only its first bytes would
// otherwise have its first lines skipped. Under mu.
func (g *Glob) adoptCopies(made []*gstream) {
	for i := 0; i < len(g.loaded); i++ {
		l := g.loaded[i]
		if l.rec.FileKey == 0 || l.rec.FPLen == 0 {
			// (Offset 0 with first bytes: never committed, its lines
			// perhaps published under its epoch — the copy is read from
			// 0 under it, an exactlyOnce sink skipping what it applied;
			// read as a file gone while stopped it was read again under
			// a new epoch, review 29a.)
			continue
		}
		p, ok := g.keys[l.rec.FileKey]
		if !ok {
			continue // gone or renamed out: not the rule's case
		}
		if size, _, err := statSizeMod(p); err != nil || (size >= l.rec.Offset && globHeadMatches(p, l.rec)) {
			continue // not cut below the offset, nor rewritten
		}
		for _, s := range made {
			if s.ptrPath != "" || s.done || s.key == l.rec.FileKey || s.size < l.rec.Offset ||
				!globHeadMatches(s.path, l.rec) || !g.copyName(p, s.path, l.rec) {
				continue
			}
			if l.rec.Offset == 0 && (filepath.Dir(s.path) != filepath.Dir(p) || !copyNamedStrict(filepath.Base(s.path), filepath.Base(p))) {
				// At offset 0 no file is shorter than the offset: only one
				// named as logrotate names p's copies by default, beside
				// it, is taken (another file sharing a header line is a new
				// stream: review 29c; custom rotatedNames match by stem,
				// app-api-1.log for app.log: review 29d).
				continue
			}
			g.loaded = append(g.loaded[:i], g.loaded[i+1:]...)
			i--
			s.ptrPath, s.copyFor = l.s.ptrPath, p
			if l.s.first != "" {
				s.first = l.s.first
			}
			g.log.Info("a file was copied and cut while tailfeed was stopped; its copy takes its pointer and is read on from its offset",
				"path", s.path, "cut", p, "pointer", l.s.ptrPath, "offset", l.rec.Offset)
			g.rebind(s, l.rec.Offset)
			break
		}
	}
}

// rebind commits s's pointer, at offset, under s's key: the copy adoptCopies
// gave it is its file from now on, also when its stream reads nothing of
// it (the copy ends at the offset) and never commits — else a stop then
// leaves the pointer naming the cut file, the next start takes the copy
// for a new file (read again from its start) and its deletion for a loss.
// A failure is counted in commitFailures; the stream's first commit binds
// it then. Under mu, at the start.
func (g *Glob) rebind(s *gstream, offset int64) {
	err := func() error {
		f, err := os.Open(s.path)
		if err != nil {
			return err
		}
		defer f.Close()
		dev, ino, err := fileutil.DevIno(f)
		if err != nil {
			return err
		}
		if pointer.FileKey(dev, ino) != s.key {
			return fmt.Errorf("%s is another file now", s.path)
		}
		p, err := pointer.Open(s.ptrPath, pointer.Options{Logger: g.log, EpochsPath: g.cfg.EpochsPath})
		if err != nil {
			return err
		}
		p.Bind(f, s.key)
		err = p.Commit(offset)
		if cerr := p.Close(); err == nil {
			err = cerr
		}
		return err
	}()
	if err != nil {
		g.acc.commitFailures++
		g.log.Error("pointer: committing a copy's key failed; its stream's first commit binds it", "pointer", s.ptrPath, "path", s.path, "error", err)
	}
}

// copyName: path may be a copy of the file at (or first matched at) first
// ("" when unknown: any other path), whose pointer's record is rec. When
// rec's fingerprint covers at least two lines, a file holding them is taken
// for a copy wherever it is and whatever its name (cp + rm while stopped).
// A fingerprint over one line only (a file committed holding nothing but a
// CSV header) is no proof: the file must then sit beside first and be
// named as logrotate names copies — one of its rotated names carrying its
// stem (rotatedNames; by default app.log.1, app.log-20261202,
// app.log.1.gz), or dateext with the extension kept (app-20261202.log,
// app-1.log); another application's file sharing the header
// (app-error.log) is not taken, nor the file at first itself: its bytes
// would hide the gone file's unread tail (found beside the path by the
// source, or counted lost).
func (g *Glob) copyName(first, path string, rec pointer.Record) bool {
	if first == "" {
		return true
	}
	if path == first {
		return false
	}
	if filepath.Dir(path) == filepath.Dir(first) && g.copyNamed(filepath.Base(path), filepath.Base(first)) {
		return true
	}
	return headLines(path, rec.FPLen) >= 2
}

// copyNamed: name is one of base's rotated names carrying its stem (a
// custom rotatedNames glob like "*.log.[0-9]*" names no stem), or base with
// a dateext or number before its extension.
func (g *Glob) copyNamed(name, base string) bool {
	if isRotatedName(g.cfg.Stream.RotatedNames, name, base) && sameStem(name, base) {
		return true
	}
	return extKeptNamed(name, base)
}

// extKeptNamed: name is base's stem, a default rotated suffix (a number, a
// date) and base's extension (app-20261206.log, app.1.log: dateext with
// the extension kept).
func extKeptNamed(name, base string) bool {
	ext := filepath.Ext(base)
	stem := strings.TrimSuffix(base, ext)
	if ext == "" || stem == "" || !strings.HasPrefix(name, stem) || !strings.HasSuffix(name, ext) || len(name) <= len(base) {
		return false
	}
	return defaultSuffix.MatchString(name[len(stem) : len(name)-len(ext)])
}

// copyNamedStrict: name is base followed by a default rotated suffix
// (app.log.1, app.log-20261206, app.log.1.gz), or base's stem, such a
// suffix and its extension (app-20261206.log, app.1.log) — the names
// logrotate gives base's copies, whatever rotatedNames says.
func copyNamedStrict(name, base string) bool {
	return strings.HasPrefix(name, base) && defaultSuffix.MatchString(name[len(base):]) || extKeptNamed(name, base)
}

// headLines counts the line terminators in path's first n bytes.
func headLines(path string, n uint64) int {
	if n == 0 {
		return 0
	}
	f, err := fileutil.OpenRegular(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	b := make([]byte, min(n, pointer.MaxFingerprint))
	k, _ := f.ReadAt(b, 0)
	return bytes.Count(b[:k], []byte{'\n'})
}

// copyMade: a file made at this start with no pointer of its own holds
// rec's bytes (countGone's copy: at least its offset long, its first bytes).
func (g *Glob) copyMade(rec pointer.Record, first string, made []*gstream) bool {
	if rec.FPLen == 0 {
		return false
	}
	for _, s := range made {
		if s.ptrPath != "" {
			continue
		}
		// s.size: the walk's look (no stat per pair: thousands of files
		// copytruncated while stopped meet thousands of new ones); a file
		// is opened only when its size and place allow it.
		if s.size >= rec.Offset && globHeadMatches(s.path, rec) && g.copyName(first, s.path, rec) {
			return true
		}
	}
	return false
}

func (g *Glob) logStart() {
	g.mu.Lock()
	defer g.mu.Unlock()
	behind := 0
	for _, s := range g.byKey {
		// Queued (or started) for a turn: it has unread bytes when its
		// file is longer than where that turn reads from.
		from := s.ptrOff
		switch {
		case s.fromEnd:
			from = s.endAt
		case s.resume != nil:
			from = max(s.resume.Offset, s.resume.Size)
		}
		if (s.st == stQueued || s.st == stOpen) && s.size > from {
			behind++
		}
	}
	// Pointers of a previous run that matched no file: tracked as gone.
	for _, l := range g.loaded {
		g.byKey[l.s.key] = l.s
	}
	g.loaded = nil
	g.ready = true
	g.log.Info("glob feed started", "pattern", g.pat.String(), "filesTracked", len(g.byKey), "filesWithUnreadBytes", behind)
}

// stopAll cancels every running source (the feed stops).
func (g *Glob) stopAll() {
	g.mu.Lock()
	var run []*gstream
	for _, s := range g.byKey {
		if s.st == stOpen || s.st == stStopping {
			run = append(run, s)
		}
	}
	g.mu.Unlock()
	for _, s := range run {
		s.cancel()
		<-s.runDone
	}
	if g.watcher != nil {
		g.watcher.Close()
	}
}

// Drain waits until every published line is acknowledged (every open
// stream's final commit then covers it) or ctx is done.
func (g *Glob) Drain(ctx context.Context) {
	g.mu.Lock()
	var run []*gstream
	for _, s := range g.byKey {
		if s.st == stOpen {
			run = append(run, s)
		}
	}
	g.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range run {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.src.Drain(ctx)
		}()
	}
	wg.Wait()
}

// Resumes is, for a glob without pointers, what it knows of each tracked
// file (not gone) by key: a feed restarted by a reload starts its streams
// from it (GlobConfig.Resumes). nil with pointers. Read after Close.
func (g *Glob) Resumes() map[uint64]GlobResume {
	if g.cfg.PointerDir != "" {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[uint64]GlobResume, len(g.byKey))
	for k, s := range g.byKey {
		if s.gone || k != s.key || s.copyOf != nil {
			continue // gone, another file's ghost, or held back as a possible copy (read from its start)
		}
		r := s.resume
		if o := s.owe; r != nil && o != nil && o.sp != nil && o.sp.Pending() > 0 {
			// Closed with lines not every holding subscriber finished (a
			// drain cut short): read again from the last line they all
			// finished in this file, or from where its source began (a
			// duplicate at worst, never a gap; each subscriber skips by
			// place what it finished).
			c := *r
			g.mux.mu.Lock()
			a := o.sp.ack
			g.mux.mu.Unlock()
			back := c.From
			if a.Epoch == c.Epoch && a.Position >= c.From {
				back = a.Position
			}
			if back < c.Offset {
				c.Offset, c.InLong = back, false
			}
			r = &c
		}
		out[k] = GlobResume{First: s.first, Resume: r, StartSize: s.startSize,
			FromEnd: s.fromEnd, EndAt: s.endAt, EndHeadLen: s.endHeadLen, EndHead: s.endHead, Copy: s.isCopy}
	}
	return out
}

// EpochOf is the epoch under which the glob's stream of the file of key
// last read it (its last source's, at its close) and the fingerprint of
// that file's first bytes as it read them: a reload that changes the
// feed's path to that file's own path reads it again from its start
// (internal/daemon readAgainAt) — when it still begins with those bytes.
// false: no stream of this run has that file (gone, another file's ghost,
// held back as a copy, or not opened in this run), or its first bytes
// under that epoch are not known (truncated or rewritten since: the
// content read under it is not the file's any more). Read after Close.
func (g *Glob) EpochOf(key uint64) (epoch uint64, headLen int, head uint64, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.byKey[key]
	if s == nil || s.gone || s.key != key || s.copyOf != nil || s.epoch == 0 || (s.st != stClosed && s.st != stQueued) {
		return 0, 0, 0, false
	}
	if s.readHeadLen == 0 {
		return 0, 0, 0, false
	}
	return s.epoch, s.readHeadLen, s.readHead, true
}

// Close makes every open stream's final commit and closes its files.
func (g *Glob) Close() error {
	// Past the shutdown bound (Drain came first): streams still stopping
	// make their final commit of what is acknowledged now.
	g.endLife()
	g.mu.Lock()
	g.closing = true
	g.mu.Unlock()
	// An append of created lines ahead still running (its streams gave up
	// waiting for it) ends before the feed does.
	g.aheadWG.Wait()
	// Streams still stopping finish on their own goroutines.
	for {
		g.mu.Lock()
		stopping := 0
		for _, s := range g.byKey {
			if s.st == stStopping {
				stopping++
			}
		}
		g.mu.Unlock()
		if stopping == 0 {
			break
		}
		g.closed(<-g.stopped)
	}
	g.mu.Lock()
	var run []*gstream
	for _, s := range g.byKey {
		if s.st == stOpen && s.src != nil {
			run = append(run, s)
		}
	}
	g.mu.Unlock()
	var first error
	for _, s := range run {
		if err := s.src.Close(); err != nil && first == nil {
			first = fmt.Errorf("%s: %w", s.path, err)
		}
		g.closed(s)
	}
	g.finalScan()
	g.mu.Lock()
	for _, s := range g.queue {
		if s.gone && g.ownAfterGone(s) && !exists(s.path, s.key) {
			// Given a gone file's pointer at the start, its own file
			// left the path before its source reached it (queued): a
			// restart finds it only as a generation of its path, under a
			// rotated name beside it (the pointer names another file);
			// under any other name, no restart knows it (review 21a C).
			// Beside the path, it is named in the unread list (ownOut),
			// and the next start reads it as a later generation or counts
			// it, as it is then: written to while stopped, an older file
			// becomes one (review 22b G: counted here, then read).
			if p := g.findBeside(s); p == "" {
				g.ownGone(s)
			} else {
				s.ownAt = p
			}
			continue
		}
		if s.gone && g.leftBeside(s) {
			if ok, back := g.followBeside(s); ok || back {
				continue // the unread list names it (waitingAtStop), or it is back in the glob: the next start reads it
			}
		}
		if s.gone && !g.matched(s.path) && g.unread(s) && !g.readAsGeneration(s) {
			// Found out of the glob beside its path, never read, and no
			// pointer names it: a restart will not know it.
			if from, n := g.unreadSeen(s); n > 0 {
				g.countLossLocked(1, uint64(n), s.epoch, fmt.Sprintf("glob file %s, out of the glob, was not read before the stop: its %d bytes from offset %d", s.path, n, from))
			}
		}
	}
	g.final = true
	for _, s := range g.byKey {
		if s.owe != nil && s.src == nil {
			g.settleOwed(s) // acknowledged during the shutdown's drain
		}
	}
	g.forgetHeld() // the new files' final commits are made
	// Files out of the glob closed for a waiting one, their last lines
	// committed by the settles above: quiet for rotateWaitMillis, their
	// pointers go as they would have while running (a restart after their
	// deletion counted them gone: review 16a B); sooner, they stay and
	// the next start reads on beside their path.
	g.lookWatched(time.Now())
	waiting := g.waitingAtStop()
	moved := g.movedAtStop()
	g.mu.Unlock()
	g.flushLosses() // counted above and by the last settles
	g.writeUnreadList(waiting)
	g.writeMovedList(moved)
	g.mux.close()
	return first
}

// unreadListName is, in a glob feed's pointer directory, the list of the
// files a stop left tracked in the glob and never read — waiting for their
// first turn (every slot taken under maxOpenFiles, or a paused feed): no
// pointer names them yet, so without it a restart would not know they
// existed, and one deleted while stopped would be lost silently (DESIGN §4
// "Nothing green over a loss"). The next start counts those it does not
// find (countUnreadGone) and removes it. A kill -9 writes none.
const unreadListName = "unread.list"

// readUnreadList reads the unread list at path: its entries in order, a
// line that does not parse or names no key left out. The start reads it
// three times: for the keys its walk must find (keysAtStart), for the
// files to read beside their paths (readListedBesideAll) and, after the
// first scan wrote this run's entries into it, for those gone while
// stopped (countUnreadGone).
func readUnreadList(path string) ([]unreadEntry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var ws []unreadEntry
	for _, line := range bytes.Split(data, []byte{'\n'}) {
		var w unreadEntry
		if len(line) == 0 || json.Unmarshal(line, &w) != nil || w.Key == 0 {
			continue
		}
		ws = append(ws, w)
	}
	return ws, nil
}

// unreadEntry is one file of the unread list: its key, first bytes (as at
// the stop), the size the glob last saw and its path.
type unreadEntry struct {
	Key   uint64 `json:"key"`
	FPLen int    `json:"fpLen"`
	FP    uint64 `json:"fp"`
	Size  int64  `json:"size"`
	Path  string `json:"path"`
	Gone  bool   `json:"gone,omitempty"` // already gone at the stop: counted at the next start whatever it finds
	// Out: a stream's own file that left the glob for this name beside
	// its path before its source reached it (the stream was given the
	// previous run's pointer of the path at a start: ownAt), listed while
	// running for a kill -9 — the next start neither reads it (no pointer
	// names it, and it is no later generation of that pointer's file) nor,
	// without the list, knows it (review 21c D, E).
	Out bool `json:"out,omitempty"`
	// First, Ptr, with Out: the path the stream was first matched under
	// and its pointer file — the next start reads the file as a later
	// generation of the pointer's file when it is one then
	// (laterGeneration), and counts it only when it is not: written to
	// while tailfeed was down, an older own file becomes one (review 22b
	// A, G).
	First string `json:"first,omitempty"`
	Ptr   string `json:"ptr,omitempty"`

	s *gstream // the stream it was taken from (the running list: a key reused by another file is another entry)
	// HandedAt, HandedKey: a file handed to its path's stream
	// (handed.go): when it was first handed over (unix ns), and the key
	// of the file that stream reads when not its own (its .gz). A start
	// takes it for read and committed only on an epochs "reset" line
	// written since, moving a pointer off one of those keys
	// (listedPassed; review 40c: a line of an older file on a reused
	// inode hid a file never read).
	HandedAt  int64  `json:"handedAt,omitempty"`
	HandedKey uint64 `json:"handedKey,omitempty"`
	// handed: the entry of a handed file not passed yet, listed as the
	// hand-over left it.
	handed bool
	// head: where the file is now when that is not Path (a file that left
	// the glob while waiting, listed under the path it left: leftFrom);
	// its first bytes are read there.
	head string
}

// headPath is where w's first bytes are read: the file's name now.
func (w unreadEntry) headPath() string {
	if w.head != "" {
		return w.head
	}
	return w.Path
}

// waitingAtStop is, at Close, every tracked file in the glob never read
// with no pointer of its own and bytes seen (the unread list's entries
// before their first bytes are read). Under mu.
func (g *Glob) waitingAtStop() []unreadEntry {
	if g.cfg.PointerDir == "" {
		return nil
	}
	var out []unreadEntry
	for k, s := range g.byKey {
		started := s.ptrPath != "" || s.st == stOpen || s.st == stStopping
		if k == s.key && s.listed != nil && !s.touched && (s.src == nil || unadopted(s)) && !g.leftBeside(s) && g.unread(s) && g.readAsGeneration(s) {
			// The previous run's listed file a stream of its first path
			// reads as a later generation (not counted by Close): listed
			// as the running list names it (waitingNow), so that the next
			// start counts it when it is deleted meanwhile (review 32b
			// F: neither listed nor counted, a silent loss).
			if ok, _ := g.followBeside(s); ok {
				e := *s.listed
				e.head, e.s = s.path, nil
				out = append(out, e)
			}
			continue
		}
		if k != s.key || (s.gone && !g.leftBeside(s)) || (started && !unadopted(s)) || !g.unread(s) {
			// (A stream whose new pointer names no file yet is listed:
			// stopped before its source adopted its file, nothing else
			// on disk names it — startUnread.)
			continue
		}
		if n := g.seenEnd(s); n > 0 {
			if s.gone {
				// Left the glob for s.path beside the path it left, never
				// read: listed under that path while it is there (Close
				// counted it otherwise).
				if ok, _ := g.followBeside(s); ok {
					out = append(out, unreadEntry{Key: s.key, Size: n, Path: besidePath(s), head: s.path})
				}
				continue
			}
			if !exists(s.path, s.key) {
				if started {
					// Its stream's close counts it (as before such a
					// stream was listed: CI, TestRevS7bWaitingFileDeleted…
					// counted it twice).
					continue
				}
				// Deleted since the last look, none of it read: no
				// restart would know it, so it counts now.
				g.countLossLocked(1, uint64(n), s.epoch, fmt.Sprintf("glob file %s, waiting for its first turn, was deleted before the stop: its %d bytes were never read", s.path, n))
				continue
			}
			out = append(out, unreadEntry{Key: s.key, Size: n, Path: s.path})
		}
	}
	// Own files out of the glob beside the path (ownOut): the next start
	// decides (countUnreadGone) — also those of streams owing a commit,
	// which no queue holds (review 22b I). And the listed files handed to
	// their path's stream and not passed yet (handed.go): the next start
	// hands them over again, reads them, or counts them.
	for _, h := range g.handed {
		if passed, skipped := g.handedPassed(h); !h.passed && passed && !skipped {
			h.passed = true
		}
		// (Skipped — its stream's source reached its own file without
		// reading it: listed, the next start reads it beside its path as
		// a stream of its own, or counts it gone; review 40 finding 2.)
	}
	out = append(out, g.handedEntries()...)
	return append(out, g.ownOutEntries()...)
}

// writeUnreadList stores the unread list (none: removes an old one).
// Without mu.
func (g *Glob) writeUnreadList(ws []unreadEntry) {
	if g.cfg.PointerDir == "" {
		return
	}
	for i := range ws {
		w := &ws[i]
		if w.handed {
			// As the previous run listed it: the next start looks for it
			// beside its path (or its .gz) and decides (handed.go).
			continue
		}
		if exists(w.headPath(), w.Key) {
			w.FPLen, w.FP = headOfPath(w.headPath())
			if st, err := os.Stat(w.headPath()); err == nil && w.head != "" && st.Size() > w.Size && !g.bounded() {
				// A file beside its path, grown since the glob last
				// looked: its size now (review 32b E).
				w.Size = st.Size()
			}
		} else {
			w.Gone = true // deleted since waitingAtStop looked: the next start counts it
		}
	}
	g.storeUnreadList(ws)
}

// storeUnreadList writes ws as the unread list, atomically (none: removes
// an old one); false when that failed (logged). Without mu.
func (g *Glob) storeUnreadList(ws []unreadEntry) bool {
	path := filepath.Join(g.cfg.PointerDir, unreadListName)
	var b bytes.Buffer
	for _, w := range ws {
		line, err := json.Marshal(w)
		if err != nil {
			continue
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := storeList(path, b.Bytes()); err != nil {
		g.log.Error("cannot write the glob's unread list: a file never read and deleted while stopped will not be counted",
			"path", path, "error", err)
		return false
	}
	return true
}

// storeList writes one of the glob's lists (JSON lines) at path,
// atomically; an empty one removes the file.
func storeList(path string, data []byte) error {
	if len(data) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	return fileutil.WriteAtomic(path, data)
}

// readListedBeside: w, a file of the previous run's unread list the first
// scan did not find in the glob, is beside its path under a name the glob
// does not match (its key and first bytes: renamed out by a rotation while
// tailfeed was down — a kill -9 as soon as the start was ready, the file's
// stream not opened yet) or copied there (a copytruncate while tailfeed was
// down: a logrotate name of it, not matched by the glob, holding its first
// bytes and at least the size listed): tracked as a stream gone from the
// glob and read from its start, as a file renamed out of the glob while
// running is (DESIGN §10 "A file renamed out of the glob is read to its
// end"), not counted lost; the new file at its path (a stream new at this
// start) is published after it (DESIGN §10 Order). A compressed one (a
// .gz) is not read: countUnreadGone counts it. At the first scan, before
// it schedules; under mu.
func (g *Glob) readListedBeside(w unreadEntry, rec pointer.Record, listAt time.Time) *gstream {
	f, k := g.keyBeside(w.Path, rec), w.Key
	byKey := f != nil
	if f == nil {
		f, k = g.listedCopyBeside(w, rec, listAt)
	}
	if f == nil {
		// Compressed beside its path while tailfeed was down: read by
		// the path's stream as a later generation (handed.go), or not
		// read (a glob reads no .gz from its start): countUnreadGone
		// counts it.
		g.handOverListed(w, nil)
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || g.matched(f.Name()) {
		return nil
	}
	if f.Name() == w.Path {
		// Still at its path, which the config no longer matches (an
		// exclude, a narrowed path): countUnreadGone's rule, the
		// operator's choice not to read it (review 32b D).
		return nil
	}
	if byKey && g.handOverListed(w, f) {
		return nil // read by its path's stream, in the path's order (handed.go)
	}
	b := g.queueBesideLocked(f.Name(), w.Path, k, st)
	if b == nil {
		return nil
	}
	if cut := w.Size - st.Size(); cut > 0 {
		// Shorter than listed, its first bytes the same: cut while
		// tailfeed was down, its bytes from its size on to the listed
		// size were never read (review 32b B).
		g.countLossLocked(1, uint64(cut), 0, fmt.Sprintf("glob file %s (listed unread as %s) is %d bytes shorter than when tailfeed stopped: bytes %d to %d were never read",
			f.Name(), w.Path, cut, st.Size(), w.Size))
	}
	e := w
	e.Key, e.s = k, b // a copy by its own key: the original's may be the path's stream's (review 31c)
	b.listed = &e
	if g.listedRead == nil {
		g.listedRead = map[uint64]bool{}
	}
	g.listedRead[w.Key], g.listedRead[k] = true, true // (k: a copy's, as the start's list names it)
	g.log.Info("glob file tracked and never read when tailfeed stopped was renamed out of the glob, or copied, while it was down: read from its start where it is",
		"path", f.Name(), "first", w.Path, "size", st.Size())
	return b
}

// listedOrder keeps the order per path (DESIGN §10 "Order") of the files
// readListedBeside and listedGapsLocked queued, by the path their list
// entries name: oldest first by mtime, ties by rotation rank (review 32b
// A) — two generations of one path listed across two kills (review 31c) —,
// then the file at
// that path, when it waits for nothing
// else and has no pointer (a pointer's source reads the generations beside
// its path itself). Under mu.
func (g *Glob) listedOrder(by map[string][]*gstream) {
	for p, bs := range by {
		base, tbase := filepath.Base(p), ""
		if t, link := resolveLink(p); link {
			tbase = filepath.Base(t) // generations beside a symlinked path's target are named after it (§4 Symlinks)
		}
		rankIn := func(s *gstream) rank {
			name := filepath.Base(s.path)
			if tbase != "" && strings.HasPrefix(name, tbase) && !strings.HasPrefix(name, base) {
				return rankOf(name, tbase)
			}
			return rankOf(name, base)
		}
		// By last write: a copy (copytruncate) is born after the file it
		// was cut from, whose new bytes are later (review 34b C: birth
		// order put them first); a late write to a rotated file moves it
		// after the next generation (review 34a C, kept open).
		slices.SortStableFunc(bs, func(a, b *gstream) int {
			if c := cmp.Compare(a.mod, b.mod); c != 0 {
				return c
			}
			// The same mtime (a rotation's renames keep it, copies
			// take it): by rotation rank, as generations are (§4).
			ra, rb := rankIn(a), rankIn(b)
			switch {
			case ra.before(rb):
				return -1
			case rb.before(ra):
				return 1
			}
			return 0
		})
		for i := 1; i < len(bs); i++ {
			if bs[i].after == nil && !waitsFor(bs[i-1], bs[i]) {
				bs[i].after = bs[i-1]
			}
		}
		last := bs[len(bs)-1]
		if at := g.byPath[p]; at != nil && !slices.Contains(bs, at) && at.after == nil && at.ptrPath == "" && at.st != stOpen && !waitsFor(last, at) {
			at.after = last
		}
	}
}

// readListedBesideAll, at the first scan before it schedules (under mu),
// reads the previous run's unread list and gives each file of it the scan
// did not find in the glob, and that no pointer names, to
// readListedBeside; countUnreadGone decides about the rest after the scan.
func (g *Glob) readListedBesideAll() {
	if g.cfg.PointerDir == "" {
		return
	}
	path := filepath.Join(g.cfg.PointerDir, unreadListName)
	st, err := os.Stat(path)
	if err != nil {
		return
	}
	ws, err := readUnreadList(path)
	if err != nil {
		return
	}
	var by map[string][]*gstream   // the entries' paths → the files queued beside them
	var copyOf map[*gstream]uint64 // those found as copies → the listed file's own key
	for _, w := range ws {
		if w.Gone || w.Out || w.FPLen == 0 || g.ptrKeys[w.Key] || g.listedRead[w.Key] {
			continue
		}
		if g.listedPassed(w) {
			// Read and committed by the stream it was handed to
			// (handed.go): neither read again nor counted.
			if g.listedRead == nil {
				g.listedRead = map[uint64]bool{}
			}
			g.listedRead[w.Key] = true
			continue
		}
		rec := pointer.Record{FileKey: w.Key, FPLen: uint64(w.FPLen), FP: w.FP}
		if p, ok := g.keys[w.Key]; ok && (globHeadMatches(p, rec) || (!exists(p, w.Key) && g.bornAtStart[w.Key] != 0 && g.bornAtStart[w.Key] <= st.ModTime().UnixNano())) {
			// Still in the glob: read now. Or found there by this scan
			// and gone from its path since (deleted, renamed): its
			// stream follows it or counts it when the glob sees it go
			// (neverRead), so countUnreadGone must not count it too
			// (CI, TestRev32AOKDeletedAfterFirstScan: counted twice; a
			// rename out of the glob counted lost and read) — when the
			// file the scan found was born before the list was written:
			// born after, it is another file on the listed one's inode,
			// which is gone (review 36 D); with no birth time to tell,
			// countUnreadGone counts it as before (a real loss never
			// uncounted: review 36b 5 — counted twice, or lost and read,
			// instead).
			if g.listedInGlob == nil {
				g.listedInGlob = map[uint64]bool{}
			}
			g.listedInGlob[w.Key] = true
			continue
		}
		if b := g.readListedBeside(w, rec, st.ModTime()); b != nil {
			if by == nil {
				by = map[string][]*gstream{}
			}
			by[w.Path] = append(by[w.Path], b)
			if b.key != w.Key {
				if copyOf == nil {
					copyOf = map[*gstream]uint64{}
				}
				copyOf[b] = w.Key // a copy (copytruncate while down): the listed file's key
			}
		}
	}
	g.listedGapsLocked(by, copyOf)
	g.listedOrder(by)
}

// listedGapsLocked, after readListedBesideAll found the previous run's
// listed files beside their paths (by: path → those streams), reads the
// generations born at such a path while tailfeed was down after them: a
// path whose file waited for its first turn has no pointer, so no source
// reads the generations after it (DESIGN §4 reads them after a pointer's
// file), and two rotations while down left one beside the path that no
// list names — read by nobody, counted by nobody (the gap kept open in the
// thirty-third session). Each plain file named as a generation of the path
// (rotatedNames), not in the glob (an excluded one included, as the listed
// file beside is: review 34a E), born after the earliest listed file and
// before the file at the path (any time, with nothing there or when that
// file is older: cut in place by copytruncate, the listed ones its
// copies) is read from its start as a file of its own beside the path —
// whatever its last write (its writer may write on through its descriptor
// after the rotation: review 34a A) and its size (an empty one may be
// written still: 34a F) — and the listed file's own inode when the start
// read a copy of it for it (cut in place, written again, then rotated:
// 34b B) — unless it is a second exact copy of a listed file read as a
// copy (same size, same bytes; a shared header is no copy, nor the same
// lines in a file found beside by its own key: 34a B, 34b A), a key a
// previous run's pointer names (its source's, or another file on a deleted
// pointer file's inode: not read, review 34a D kept open), or read before
// (the epochs file). It goes in by[path], so that listedOrder chains it before the
// file at the path (§10 Order). Only where the file system tells birth
// times, as readGaps; a path whose file has a pointer is left to that
// pointer's source and to readGaps; a .gz of such a generation is not
// read (a glob reads no .gz from its start) — the stated limit. Under mu.
func (g *Glob) listedGapsLocked(by map[string][]*gstream, copyOf map[*gstream]uint64) {
	var named map[uint64][]namedAs
	for first, bs := range by {
		if at := g.byPath[first]; at != nil && at.ptrPath != "" {
			continue
		}
		var low time.Time
		for _, b := range bs {
			bt := birthTimePath(b.path)
			if bt.IsZero() {
				low = time.Time{}
				break
			}
			if low.IsZero() || bt.Before(low) {
				low = bt
			}
		}
		if low.IsZero() {
			continue
		}
		upBorn := time.Now() // nothing at the path: any generation after low
		if _, err := os.Stat(first); err == nil {
			upBorn = birthTimeTarget(first)
			if upBorn.IsZero() {
				continue
			}
			if !upBorn.After(low) {
				// The file at the path is older than the listed files
				// beside it: they are copies (copytruncate while down),
				// it was cut in place — the generations copied after
				// them, any birth.
				upBorn = time.Now()
			}
		}
		places := [][2]string{{filepath.Dir(first), filepath.Base(first)}}
		if t, link := resolveLink(first); link {
			places = append(places, [2]string{filepath.Dir(t), filepath.Base(t)})
		}
		g.eachRotated(places, func(p, name string) {
			if g.matched(p) || strings.HasSuffix(name, ".gz") {
				return
			}
			f, err := fileutil.OpenRegular(p)
			if err != nil {
				return
			}
			defer f.Close()
			dev, ino, kerr := fileutil.DevIno(f)
			st, serr := f.Stat()
			bt := birthTime(f)
			if kerr != nil || serr != nil {
				return
			}
			k := pointer.FileKey(dev, ino)
			if g.byKey[k] != nil || g.ptrKeys[k] {
				return // tracked, or a previous run's pointer's key (queueBesideLocked takes neither)
			}
			cut := false // the listed file's own inode, its copy read for it: cut in place, written again, rotated (review 34b B)
			for _, b := range bs {
				cut = cut || copyOf[b] == k
			}
			if !cut && (bt.IsZero() || !bt.After(low) || !bt.Before(upBorn)) {
				return
			}
			for _, b := range bs {
				if copyOf[b] != 0 && sameBytes(f, st.Size(), b.path) {
					return // a second copy of a listed file read as its copy (the same bytes, review 34b A)
				}
			}
			if named == nil {
				named = g.epochsNamed()
			}
			for _, r := range named[k] {
				if !cut && !r.contentOnly && r.at.After(bt) && (r.FPLen == 0 || (r.FPLen <= uint64(st.Size()) && headIs(f, int(r.FPLen), r.FP))) {
					return // read (or adopted) by a stream before
				}
			}
			if b := g.queueBesideLocked(p, first, k, st); b != nil {
				by[first] = append(by[first], b)
				g.log.Info("a generation born beside a glob path while tailfeed was down, after the path's file that waited for its first turn: read from its start",
					"path", p, "first", first, "size", st.Size())
			}
		})
	}
}

// sameBytes: f (size bytes) holds exactly the bytes of the file at path.
func sameBytes(f *os.File, size int64, path string) bool {
	o, err := os.Open(path)
	if err != nil {
		return false
	}
	defer o.Close()
	if st, err := o.Stat(); err != nil || st.Size() != size {
		return false
	}
	a, b := make([]byte, 64<<10), make([]byte, 64<<10)
	for off := int64(0); off < size; {
		n, err := f.ReadAt(a, off)
		m, _ := o.ReadAt(b[:n], off)
		if n == 0 || m != n || !bytes.Equal(a[:n], b[:n]) {
			return false
		}
		off += int64(n)
		if err != nil && off < size {
			return false
		}
	}
	return true
}

// listedCopyBeside opens a copy of the unread list's file w beside its
// path (readListedBeside), with its key; nil when there is none. A copy is
// born after the list was last written (listAt; birth times known): an
// older file of a logrotate name that shares the listed first bytes (a
// banner every file starts with, the listed file holding no more) is
// another generation, read before or never the list's (review 31b: read
// again whole, the listed file's deletion not counted).
func (g *Glob) listedCopyBeside(w unreadEntry, rec pointer.Record, listAt time.Time) (*os.File, uint64) {
	if f, k := g.listedCopyIn(filepath.Dir(w.Path), filepath.Base(w.Path), w, rec, listAt); f != nil {
		return f, k
	}
	if t, link := resolveLink(w.Path); link {
		// Beside a symlinked path's final target (DESIGN §4), review 31c.
		return g.listedCopyIn(filepath.Dir(t), filepath.Base(t), w, rec, listAt)
	}
	return nil, 0
}

// listedCopyIn is listedCopyBeside in dir, for copies of base.
func (g *Glob) listedCopyIn(dir, base string, w unreadEntry, rec pointer.Record, listAt time.Time) (*os.File, uint64) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, 0
	}
	for _, e := range ents {
		name := e.Name()
		if !e.Type().IsRegular() || strings.HasSuffix(name, ".gz") || !copyNamedStrict(name, base) {
			continue
		}
		p := filepath.Join(dir, name)
		if g.matched(p) || g.own(p) {
			continue
		}
		f, err := fileutil.OpenRegular(p)
		if err != nil {
			continue
		}
		st, serr := f.Stat()
		dev, ino, derr := fileutil.DevIno(f)
		if b := birthTime(f); b.IsZero() || !b.After(listAt) || serr != nil || derr != nil || st.Size() < w.Size || !globHeadMatches(p, rec) {
			f.Close()
			continue
		}
		return f, pointer.FileKey(dev, ino)
	}
	return nil, 0
}

// countUnreadGone, at the start, counts every file of the unread list a
// stop left that the first scan did not find in the glob (its key with its
// first bytes): deleted or moved away while stopped, none of it ever read
// (lostTails 1, lostBytes the size last seen), then removes the list.
// Manager goroutine, after the first scan.
func (g *Glob) countUnreadGone() {
	path := filepath.Join(g.cfg.PointerDir, unreadListName)
	ws, err := readUnreadList(path)
	if err != nil {
		return
	}
	// This run's own entries (startUnreadLocked wrote them after the
	// previous run's): their streams decide about their files. A file
	// renamed out or deleted between the first scan and this look is not
	// "gone while stopped" (review 32: a waiting file renamed out of the
	// glob at once after the start was counted here and read beside its
	// path too).
	g.mu.Lock()
	own := maps.Clone(g.live.written)
	g.mu.Unlock()
	for _, w := range ws {
		if o, ok := own[w.Key]; ok && !w.Gone && !w.Out && o.FPLen == w.FPLen && o.FP == w.FP && o.Path == w.Path {
			continue
		}
		rec := pointer.Record{FileKey: w.Key, FPLen: uint64(w.FPLen), FP: w.FP}
		if p, ok := g.keys[w.Key]; !w.Gone && ok && (w.FPLen == 0 || g.listedInGlob[w.Key] || globHeadMatches(p, rec)) {
			// Still in the glob: read now; or found in it by the first
			// scan (readListedBesideAll) and gone from its path since:
			// its stream decides. (Not told apart: a file on the listed
			// one's inode, made while tailfeed was down and gone right
			// after the start — its stream counts its own bytes, the
			// listed file's go uncounted; the feed is lossy all the same.)
			continue
		}
		if !w.Gone && g.ptrKeys[w.Key] {
			// Listed while running, then given its pointer before a
			// kill -9 (the list not written again yet): the pointer
			// tells where it went and what of it is unread (countGone).
			continue
		}
		size := uint64(w.Size)
		if w.Out && !w.Gone {
			if w.Ptr != "" && g.laterGeneration(&gstream{first: w.First, ptrPath: w.Ptr}, w.Path) && !g.ptrFileAt(w.Ptr, w.First) {
				// The own file of a stream given the previous run's
				// pointer of its path, beside that path: the stream's
				// source reads it as a later generation of the pointer's
				// file at this start (resumeRotated) — unless that file is
				// back at the path, where its source reads it on and
				// looks for no generation (review 22c C).
				continue
			}
			if exists(w.Path, w.Key) && (w.FPLen == 0 || globHeadMatches(w.Path, rec)) {
				if st, err := os.Stat(w.Path); err == nil && st.Size() > w.Size {
					size = uint64(st.Size()) // grown while down (review 22b H)
				}
			}
		}
		if g.listedRead[w.Key] {
			continue // found beside its path by the first scan and read there (readListedBeside)
		}
		if excl, _ := g.unmatchedAt(w.Path, rec); !w.Gone && !w.Out && w.FPLen > 0 && excl {
			// Still at its path, which the config no longer matches
			// (an exclude, a changed or narrowed path): the operator's
			// choice not to read it (as countGone), no loss.
			g.log.Warn("glob file no longer matched by the config (path or exclude), never read; not read any more (not counted lost)",
				"path", w.Path, "unreadBytes", w.Size)
			continue
		}
		detail := fmt.Sprintf("glob file %s, tracked and never read when tailfeed stopped, is gone: its %d bytes were never read", w.Path, size)
		if w.Out {
			detail = fmt.Sprintf("glob file %s, renamed out of the glob before its stream read it (it was to read the previous run's file of its path first), was not read before tailfeed stopped and is no later generation of that file: its %d bytes were never read",
				w.Path, size)
		}
		g.mu.Lock()
		g.countLossLocked(1, size, 0, detail)
		g.mu.Unlock()
	}
	g.flushLosses()
	g.mu.Lock()
	var live []unreadEntry
	for _, w := range g.live.written {
		live = append(live, w)
	}
	g.mu.Unlock()
	if len(live) > 0 {
		// The start's list (startUnreadLocked) without the previous run's
		// entries, at once: left until the first housekeeping pass, a
		// kill -9 meanwhile had the next start count those counted here
		// again (review 31a). (A kill between the count and this write
		// counts them again, never not at all.)
		if g.storeUnreadList(live) {
			g.mu.Lock()
			g.live.stale = false
			g.mu.Unlock()
		}
		return
	}
	if err := os.Remove(path); err != nil {
		g.log.Warn("cannot remove the glob's unread list; the next start may count its files again", "path", path, "error", err)
	}
}

// forgetOrHold forgets s's pointer (forgetClosed: its file read to its
// end, gone from the glob), unless the file now at the path s's file left
// is empty with no pointer yet (a live rotation's new file): s's pointer
// is then the only record of the path's generations, and a restart after
// that new file was written to and rotated away while tailfeed was down
// finds it through this one (adoptByPath gives it to the file then at the
// path, whose source reads the later generations beside it; audit 7 D).
// Also when s's file is deleted (logrotate's compress with no
// delaycompress: its source kept the record, Config.holdDeleted; audit
// 11a): the held line tells a restart that it was read to its end. Kept
// until forgetHeld lets it go.
func (g *Glob) forgetOrHold(s *gstream) {
	if !s.held {
		if ok, next := g.emptySuccessor(s); ok {
			if i := slices.IndexFunc(g.heldForget, func(h *gstream) bool { return h != s && h.first == s.first }); i >= 0 {
				// One record of a path's generations is enough: the
				// newer one (its file left the path later) stays, unless
				// nothing of the newer one was committed — an idle
				// application's empty files rotated in turn (review 30b:
				// one pointer kept per rotation, without bound).
				h := g.heldForget[i]
				if s.offset == 0 || !s.goneAt.After(h.goneAt) {
					g.forgetClosed(s, false)
					return
				}
				g.heldForget = slices.Delete(g.heldForget, i, i+1)
				h.held = false
				g.forgetClosed(h, false)
			}
			s.held = true
			g.heldForget = append(g.heldForget, s)
			g.markHeld(s, next)
			return
		}
	}
	g.forgetClosed(s, false)
}

// markHeld writes s's "held" epochs line (pointer.ReasonHeld): its file,
// read to its end and closed with every line committed, is kept named by
// its pointer only as the record of the path's generations; a restart that
// finds it gone (deleted while stopped: logrotate's "rotate 1") or its key
// on a shorter file (the inode given to another file) loses nothing of it
// — DESIGN §4 "a file that was read to its end, committed and then deleted
// is not a lost tail" — which the record alone, naming it at an offset,
// cannot tell (review 13b B). It also names the empty file the pointer is
// kept for (next, its key): nothing else on disk does until that file gets
// a pointer of its own, and a restart that finds no file of that key beside
// the path counts it gone (countNextGone: written to while tailfeed was
// down and deleted, its lines are lost — review 14a G). Only when the
// pointer file holds that record (not a commit still to be stored), or
// the empty record its stream bound to an empty file (the epochs file names
// the file: this line is the one a start completes the record from); a
// failure leaves no line: a restart then counts the kept file gone, as
// before (an overcount), and the empty file unnamed (as before).
func (g *Glob) markHeld(s *gstream, next uint64) {
	if g.cfg.EpochsPath == "" || s.ptrPath == "" || s.owe != nil {
		return
	}
	rec, err := pointer.Inspect(s.ptrPath)
	if err != nil || rec.Offset != s.lineEnd() {
		return
	}
	l, ok := heldLine(rec, s.key, s.first, next)
	if !ok {
		return
	}
	if h := s.hookHeld.Swap(nil); h != nil && sameHeld(*h, l) {
		l = *h // written by the stream's source already (holdDeleted)
	} else if err := appendEpoch(g.cfg.EpochsPath, l); err != nil {
		g.log.Warn("cannot mark a held pointer's file as read to its end; a restart that finds it gone counts it lost",
			"pointer", s.ptrPath, "error", err)
		return
	}
	s.heldMark = heldMark{Epoch: rec.Epoch, Key: rec.FileKey, End: rec.Offset, FPLen: rec.FPLen, FP: rec.FP, Next: next, At: l.Time}
	s.heldLive = true
}

// heldLine is the "held" epochs line of rec, the pointer of the stream
// of key first matched at first, kept for the empty file next at that
// path (markHeld); false when rec names another file.
func heldLine(rec pointer.Record, key uint64, first string, next uint64) (pointer.EpochLine, bool) {
	switch {
	case rec.FileKey == 0 && rec.FPLen == 0 && rec.Offset == 0 && key != 0:
		rec.FileKey, rec.FP = key, pointer.Fingerprint(nil) // bound while empty, never committed
	case rec.FileKey == 0 || rec.FileKey != key:
		return pointer.EpochLine{}, false
	}
	return pointer.EpochLine{Epoch: rec.Epoch, FileKey: rec.FileKey, FPLen: rec.FPLen, FP: rec.FP,
		Path: first, Time: time.Now(), Reason: pointer.ReasonHeld, End: rec.Offset, NextKey: next}, true
}

// holdDeleted is a glob stream's Config.holdDeleted (its source's
// goroutine, no lock): the stream of key, first matched at first, whose
// file is deleted, read to its end and committed (rec), keeps its record
// when the file now at first is another, empty one — a live rotation's new
// file (logrotate's compress deleted the renamed one at once). Its "held"
// line is written now: a stop or a kill -9 before the glob books the
// stream closed (forgetOrHold, which marks it again) finds the record
// named as read to its end, not a file gone with its tail (audit 11a).
func (g *Glob) holdDeleted(s *gstream, first string, key uint64, rec pointer.Record) bool {
	size, _, err := statSizeMod(first)
	if err != nil || size != 0 {
		return false
	}
	dev, ino, err := fileutil.DevInoPath(first)
	if err != nil {
		return false
	}
	next := pointer.FileKey(dev, ino)
	if next == key {
		return false
	}
	if l, ok := heldLine(rec, key, first, next); ok && g.cfg.EpochsPath != "" {
		if err := appendEpoch(g.cfg.EpochsPath, l); err != nil {
			g.log.Warn("cannot mark a kept pointer's deleted file as read to its end; a restart that finds it gone counts it lost",
				"path", first, "error", err)
		} else {
			s.hookHeld.Store(&l) // markHeld takes it instead of writing it again
		}
	}
	return true
}

// sameHeld: a and b mark the same record read to the same end for the
// same empty file.
func sameHeld(a, b pointer.EpochLine) bool {
	return a.Epoch == b.Epoch && a.FileKey == b.FileKey && a.FPLen == b.FPLen && a.FP == b.FP &&
		a.End == b.End && a.NextKey == b.NextKey && a.Path == b.Path
}

// voidHeld appends an "unheld" line for s's held mark written in this run:
// its stream starts again and may read its file on under the epoch, so a
// later loss of it counts. A failure keeps the stream from starting
// (the caller retries): read on under a live mark, a kill and a deletion
// while stopped would lose lines unsaid.
func (g *Glob) voidHeld(s *gstream) error {
	if h := s.hookHeld.Load(); h != nil && !s.heldLive {
		// Written by its source (holdDeleted) and never taken as the
		// stream's mark: voided as well.
		s.heldMark = heldMark{Epoch: h.Epoch, Key: h.FileKey, FPLen: h.FPLen, FP: h.FP}
		s.heldLive = true
	}
	if !s.heldLive {
		return nil
	}
	m := s.heldMark
	l := pointer.EpochLine{Epoch: m.Epoch, FileKey: m.Key, FPLen: m.FPLen, FP: m.FP,
		Path: s.first, Time: time.Now(), Reason: pointer.ReasonUnheld}
	if err := appendEpoch(g.cfg.EpochsPath, l); err != nil {
		return fmt.Errorf("epochs file %s: voiding the held line of epoch %s: %w", g.cfg.EpochsPath, hex16(m.Epoch), err)
	}
	s.heldMark, s.heldLive = heldMark{}, false
	s.hookHeld.Store(nil)
	return nil
}

// appendEpoch is pointer.AppendEpoch (a test makes it fail).
var appendEpoch = pointer.AppendEpoch

// emptySuccessor: the file at the path s's file left is another one,
// empty, with no pointer: tracked so (admit), or not seen by a scan yet
// (created just after the rename).
func (g *Glob) emptySuccessor(s *gstream) (bool, uint64) {
	if n := g.byPath[s.first]; n != nil && n != s {
		return n.empty && n.ptrPath == "" && !n.gone, n.key
	}
	size, _, err := statSizeMod(s.first)
	if err != nil || size != 0 || exists(s.first, s.key) {
		return false, 0
	}
	dev, ino, err := fileutil.DevInoPath(s.first)
	if err != nil {
		return true, 0
	}
	return true, pointer.FileKey(dev, ino)
}

// forgetHeld forgets (forgetClosed) the pointers forgetOrHold kept: once
// the file at the path their file left has a pointer holding a commit (it
// records the path's generations from there), once that path is empty, or
// when the stream is not closed any more (started again: its next close
// decides). Not when the kept file is deleted or rotated on: read to its
// end, it is no loss (its held line), and the record is still the path's
// (audit 11a: forgotten then, the empty file's lines were lost uncounted
// across a kill -9 and rotations while tailfeed was down). Under mu.
func (g *Glob) forgetHeld() {
	keep := g.heldForget[:0]
	for _, s := range g.heldForget {
		switch n := g.byPath[s.first]; {
		case s.st != stClosed:
			s.held = false
			continue
		case (n == nil || n == s || n.gone) && !anyFileAt(s.first):
			// The empty new file it was kept for is gone (deleted while
			// empty): nothing at the path to follow.
		case n != nil && n != s && n.ptrPath != "":
			if rec, err := pointer.Inspect(n.ptrPath); err != nil || rec.Offset == 0 || rec.FileKey != n.key {
				keep = append(keep, s)
				continue
			}
		default:
			g.remarkHeld(s)
			keep = append(keep, s)
			continue
		}
		s.held = false
		g.forgetClosed(s, false)
	}
	clear(g.heldForget[len(keep):])
	g.heldForget = keep
}

// remarkHeld moves s's held line on to the file now at its path when the
// empty file the line names is neither there nor beside it any more
// (deleted while tailfeed runs, another file made at the path): a start
// would count that file gone while stopped (review 19a F). Deleted while
// tailfeed ran, it was the running glob's to count (empty, or read by a
// stream of its own). The file now at the path is the one a start must
// find. Under mu.
func (g *Glob) remarkHeld(s *gstream) {
	m := s.heldMark
	if !s.heldLive || m.Next == 0 {
		return
	}
	dev, ino, err := fileutil.DevInoPath(s.first)
	k := pointer.FileKey(dev, ino)
	if err != nil || k == s.key {
		return
	}
	// (A file on the empty file's inode born after the line is another
	// one: the inode is given again at once when a file is deleted and
	// one made.)
	if k == m.Next {
		// (Through a symlinked path to its target: review 19b C.)
		if b := birthTimeTarget(s.first); b.IsZero() || !b.After(m.At) {
			return
		}
	} else if f := g.keyBesideBefore(s.first, pointer.Record{FileKey: m.Next}, m.At); f != nil {
		f.Close()
		return // rotated beside the path: still the one to look for
	}
	g.markHeld(s, k)
}

// anyFileAt: something is at path (a file to follow).
func anyFileAt(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
