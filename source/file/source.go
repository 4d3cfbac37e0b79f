package file

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/hashicorp/go-hclog"

	"tailfeed/feed"
	"tailfeed/pointer"
)

// Config configures a Source.
type Config struct {
	Feed       string
	Path       string // absolute
	Strategy   Strategy
	MaxLine    int           // maxLineBytes
	BatchLines int           // at most this many lines per batch
	BatchBytes int           // and this many line bytes (one longer line excepted)
	Poll       time.Duration // pollIntervalMillis
	RotateWait time.Duration // rotateWaitMillis
	CommitSync time.Duration // commitSyncMillis
	Pointer    *pointer.Pointer
	Logger     hclog.Logger
	// NoNotify disables fsnotify (poll only).
	NoNotify bool
	// OpenHook runs between the stat and the open of the input (tests inject
	// the open race through it).
	OpenHook func()
	// StartHook runs at the start-up open (tests cut or copy the file
	// there): "stat" right after each fstat of the input's first bytes and
	// size (headStat), "opened" after them, before the position is taken.
	StartHook func(at string)
	// PassHook runs at the top of each pass of the run's loop, after its
	// check of the context (tests cancel the run there: that pass still
	// polls and reads, and the run ends before the split).
	PassHook func()
	// CloseHook runs right after a descriptor the source read through is
	// closed, with its file's key (tests: a new file may be given that
	// inode from here on).
	CloseHook func(key uint64)
	// Outputs are the paths the daemon writes itself (file-sink outputs,
	// dataDir): a file at one of them, or under one that is a directory, is
	// never taken for a rotated file or a copytruncate copy (DESIGN §4). A
	// directory holding the input is ignored.
	Outputs []string
	// OutputFiles are outputs the daemon writes known by identity only
	// (its standard output when a stdout sink writes it and it is a
	// regular file): like Outputs, never matched by a glob and never taken
	// for a rotated file or a copy.
	OutputFiles []FileID
	// resolvedOuts, when not nil, is Outputs as resolveOutputs made it (a
	// glob feed's streams share one resolution, Glob.outputsNow).
	resolvedOuts []outPath
	// prevHead, with Pinned: the first bytes (length, fingerprint) the
	// stream's previous source in this process read from its file (0:
	// none, its first source here): what its epoch was adopted for when
	// its pointer names no file yet (checkPointer).
	prevHeadLen, prevHead uint64
	prevSource            bool
	// prevCopies, with Pinned: the keys of the copies the stream's earlier
	// sources in this process took (copytruncate): read already, never
	// later generations of its file (resumeRotated).
	prevCopies []CopyTaken
	// prevGens, with Pinned: the files the stream's earlier sources in this
	// process switched away from (GensDone): a later generation that is
	// one of them, no longer than where its lines ended, is read already
	// (resumeRotated; review 15a A: a source preempted on a generation
	// read the ones before it again when its pointer's file was gone).
	prevGens []GenDone
	// cutSeen, with Pinned: the glob saw the stream's file cut or
	// rewritten in place while the stream was closed, in this run (a live
	// truncation, DESIGN §4), cutUnread bytes past its pointer seen before
	// (resumeRotated counts those, not a tail of unknown size).
	cutSeen   bool
	cutUnread int64
	// genTail, with Pinned: the generation of its pointer (not the
	// stream's own file) an earlier source of the stream was reading when
	// it closed, and that file's size then: found gone, the bytes past the
	// pointer's offset up to that size are known lost (loseTail).
	genTail genTail
	// held, with Pinned: the pointer's epochs line at this start said its
	// file was read to its end and closed with every line committed in an
	// earlier run (pointer.ReasonHeld: a glob pointer kept for the path's
	// empty new file). While the record still names that file at that
	// end, its file found gone, or its key on a file shorter than the end,
	// is no loss (loseTail, checkPointer).
	held heldMark
	// ownGone, with Pinned and GoneKey: the stream's own file left the
	// glob before an earlier source reached it and was counted lost (the
	// glob's ownLost): the source reads its pointer's file beside the
	// path (and the later generations) only — no file at the path is its
	// own, whatever its key (the own file's inode may be another file's).
	ownGone bool
	// ownAt, with Pinned and GoneKey: the stream's own file left its path
	// for this name beside it before an earlier source reached it (renamed
	// out of the glob): opened there, it is read after the pointer's file
	// and the later generations beside the path (named after the path).
	ownAt string
	// otherKeys, with GoneKey: the keys of the files the glob tracks as
	// other streams when the source started (followed out of the glob
	// beside the path, say): never read here as later generations.
	otherKeys map[uint64]bool
	// globFiles, for every glob stream: does the glob read the file at
	// this path as a stream of its own? A .gz whose plain twin it reads is
	// no generation of this source (twinReadInstead; review 25b G: an
	// ordinary stream read it again as a later generation).
	globFiles func(path string) bool
	// holdDeleted, for every glob stream: is the file now at the stream's
	// path another one, empty (a live rotation's new file)? Then the
	// pointer's file, deleted, read to its end and committed (the record),
	// is not forgotten here (forgetStep): the glob keeps the record as the
	// path's (Glob.holdDeleted marks it held).
	holdDeleted func(rec pointer.Record) bool
	// RotatedNames are globs over base names (filepath.Match) that the
	// input's rotated generations match, beside the path and beside a
	// symlinked path's final target. Empty: the input's base name, then '.'
	// or '-', then digits, a date, or both, optionally ".gz" (DESIGN §4).
	RotatedNames []string
	// OnLoss, when set, is called (on the source's goroutine) for every loss
	// the source counts, after the counter moved: the daemon appends it to
	// the losses ledger (DESIGN §7 "Losses outlive the run").
	OnLoss func(Loss)
	// DeliveryPath, when set, is the Delivery.Path of every line instead of
	// Path (a glob feed's stream keeps the path it was first matched under
	// after a rename, DESIGN §10).
	DeliveryPath string
	// Pinned: the source reads the one file it opened and never another
	// one at the path (a glob feed's stream, DESIGN §10): a different file
	// at the path counts as the path missing.
	Pinned bool
	// PinKey, with Pinned, is the file key of the one file the source is
	// for (the glob's stream's): a file of another key at the path is not
	// its file, as if the path were missing.
	PinKey uint64
	// PinGone, with Pinned: the glob found the file nowhere in the glob
	// (renamed out or deleted). Only then does a source that finds its
	// file neither at its path nor beside it count it lost; otherwise it
	// reads nothing and reports NotFound (the glob looks again).
	PinGone bool
	// GlobMatched, with Pinned, for a stream given a gone file's pointer at
	// a glob's start (the file at its path): does the glob read the file at
	// this path as a stream of its own? When this source looks beside its
	// path for the pointer's file (resumeRotated), a copy or a later
	// generation the glob matches is not taken (read twice otherwise).
	// nil: none is skipped.
	GlobMatched func(path string) bool
	// GoneKey, with GlobMatched: the file key of the gone file whose
	// pointer the stream was given. The rules for such a stream hold only
	// while its pointer still names that key (until it first moves on to a
	// file of its own): then the ordinary rules apply again.
	GoneKey uint64
	// GoneEpoch, with GoneKey: the epoch of that pointer's record then. A
	// record naming no file (its file bound while empty) is that file's
	// only while it keeps this epoch: once the source counted the file
	// lost and moved the pointer to a new epoch, a later start of the
	// stream does not count it again.
	GoneEpoch uint64
	// Adoptable, with Pinned: may the source go on reading, under its
	// epoch and position, a file of this key that replaced its deleted
	// file at its path with the same content (a rename into place,
	// DESIGN §3/§10)? Only a file no other stream reads; nil: never.
	Adoptable func(key uint64) bool
	// Resume, for EARLIEST without a pointer (a glob stream opened again
	// after closeInactiveMillis or its turn): where its last source
	// stopped (Source.ResumePoint); used when the file's first bytes are
	// still the ones read, else the file is read from its start. A feed
	// restarted by a reload passes it for every strategy but COMMITTED
	// (its in-memory pointer): EARLIEST, ONCE_EARLIEST and LATEST resume
	// there when the file at the path is still the one read (its key, when
	// Resume has one, and its first bytes); else they start per the
	// strategy.
	Resume *Resume
	// ResumeUnread is how many bytes past Resume's position the glob saw
	// in the file while its first bytes were Resume's (never read): lost,
	// and counted, when the file turns out rewritten or cut below the
	// resume point at the open (nobody saw it happen).
	ResumeUnread int64
	// EndAt, for LATEST, is the size the end is taken at when the file
	// has grown since (a glob file present at start whose first turn came
	// later): what was written after the start is delivered.
	EndAt    int64
	HasEndAt bool // EndAt is set (0: the file was empty, or truncated, since)
	// OnceLimit, for ONCE_EARLIEST (a glob's file), is its size when the
	// glob matched it at start: what is read of it at most (0: its size
	// at open).
	OnceLimit int64
	// EndHeadLen, EndHead: the fingerprint of the file's first bytes when
	// EndAt was taken; other first bytes now: rewritten since, all of it
	// written after the start (read from its start).
	EndHeadLen int
	EndHead    uint64
	// IdlePoll, when longer than Poll, is the poll interval while the file
	// is at its path and no rotation is in progress (a glob stream: the
	// glob's watcher wakes it on every change).
	IdlePoll time.Duration
	// BusySync, when longer than CommitSync, is how often a stored commit
	// is msynced while the source reads behind its file's end (BEHIND) or
	// lines it published are unacknowledged; a glob stream's (DESIGN §10:
	// hundreds of pointers at once). Otherwise, at an epoch switch and at
	// close it syncs as CommitSync says.
	BusySync time.Duration
	// OnRest, when set, is called on the source's goroutine whenever its
	// state moves to CAUGHT_UP, WAITING_FOR_FILE, END_OF_STREAM or FAILED
	// from another one (a glob stream: the glob then hands its slot to a
	// waiting file at once). It must not block.
	OnRest func()
	// IOSlots, when set, bounds the pointer I/O that waits for the disk
	// (the open of the input and pointer, each msync of a commit) that
	// runs at once across the sources sharing it (a glob's streams): each
	// blocked call holds an OS thread, and a Go process keeps every
	// thread it made.
	IOSlots chan struct{}
}

// Loss is one counted loss: a rotated or truncated file's unread tail
// (Counter "lostTails", Amount files) or bytes known to be gone (Counter
// "lostBytes").
type Loss struct {
	Counter string
	Amount  uint64
	Epoch   uint64
	Detail  string
}

// Source reads one feed's file and publishes its lines. Run, Drain and
// Close are called one after the other by one goroutine at a time; the
// getters may be called from anywhere.
type Source struct {
	cfg  Config
	pub  Publisher
	ptr  *pointer.Pointer
	log  hclog.Logger
	outs outputs // the daemon's own outputs: never a rotated file or a copy

	// slotHeld: Run starts holding one of cfg.IOSlots (a glob stream that
	// just created its pointer in it); its open releases it.
	slotHeld bool

	deliveryPath string // Delivery.Path of the lines

	// Only accessed from the goroutine running the source.
	cur          *reader
	next         []*reader // files found at the path after a rotation, in order
	old          []*reader // switched-away files, watched for rotateWait
	barrier      bool      // cur's epoch waits for every line of the previous one
	pending      *feed.Batch
	found        Found
	commit       committer
	ptrEpoch     uint64 // the pointer's epoch (read without its mutex)
	ackSeq       uint64
	missing      bool      // the path named no file at the last check
	missingSince time.Time // when the path was first seen missing
	lastPoll     time.Time // the last check of the path and the old files
	kick         bool      // an fsnotify event arrived: check at once
	checked      bool      // check ran in this duty cycle
	lostTail     bool      // the detail says a rotated file's tail is lost: keep it
	heldGone     bool      // the pointer's file, held (Config.held), was not found as it was: nothing lost, nothing pending
	cutNoted     bool      // a cut the glob saw while closed was handled (cutSeen): checkPointer counts nothing more
	notFound     bool      // Pinned: its file was not where it was looked for at open (NotFound)
	closeHeadLen int       // HeadAtClose
	closeHead    uint64
	resume       *Resume // ResumePoint
	resumeOf     *reader // the reader resume was taken from (moveResume)
	// head is the current file's first-bytes fingerprint as read, for a
	// glob stream (copyCandidate reads it from another goroutine).
	head atomic.Pointer[headFP]
	fds  openKeys // descriptors held, by key (holds)
	// adopted: the key of the file a Pinned source switched to as the
	// same content under a new key (Config.Adoptable); 0: none.
	adopted atomic.Uint64
	// adoptedAt: when it switched to that file (UnixNano; AdoptedAt).
	adoptedAt atomic.Int64
	adoptQ    uint64 // the key of the file adoptRenamedOver queued (switchTo)
	// copiesRead counts the copies (copytruncate) this source went on
	// reading its file's tail from (CopiesRead).
	copiesRead atomic.Uint64
	// copiesTaken: the copies of its file it took (readCopy: one it read
	// on from, or one holding nothing unread), and when, oldest first
	// (trimCopies; a source open across several copytruncates takes one
	// per truncation).
	copiesTaken atomic.Pointer[[]CopyTaken]
	// gensDone: the files the source switched away from (retire), with
	// where their lines ended (GensDone).
	gensDone atomic.Pointer[[]GenDone]
	badPath  string // why the path is not read (regular.go); "" while it is fine
	// detailBeforeBad is the detail the path's failure replaced.
	detailBeforeBad *string
	// genSeen: the generations (and files) the source saw while running,
	// by identity: a scan while running never reads them again.
	genSeen    map[[2]uint64]seenGen
	torn       []genFile // .gz generations that did not end cleanly: looked at again
	forget     *forget   // the pointer's file, deleted and closed: empty the pointer once it is all committed
	forgetOwed bool      // a Reset to the empty record failed its msync: Sync finishes it
	dropped    bool      // Drain released a batch that was never published
	// pendingFrom is where pending's first line starts; droppedFrom, that
	// of the batch Drain released.
	pendingFrom, droppedFrom int64
	// pendingLong, droppedLong: the splitter was inside an oversized line
	// at pendingFrom, droppedFrom.
	pendingLong, droppedLong bool
	// closeSize and closeEnd: a glob stream's file, by its descriptor,
	// at Close, and the end of what the stream published of it (both 0:
	// nothing unread). Bytes between them were never delivered: the glob
	// counts them lost when the file turns out gone from the glob
	// (Glob.loseTailLocked).
	closeSize, closeEnd int64
	// closeUntaken: its run ended between a read and the split, a line
	// read and never taken (not published): the glob gives it another turn
	// from closeTaken, the end of the last line taken.
	closeUntaken bool
	closeTaken   int64
	// closeNL: at Close, its file read to ReadPos and every line of it
	// taken, the last byte the '\n' of a "\r\n" whose line was taken at
	// its '\r' (reader.nlTaken): that line ends one byte before ReadPos.
	closeNL bool
	// exitUntaken: closeUntaken as its run ended (the glob's report of a
	// stopping stream reads it while the drain runs).
	exitUntaken atomic.Bool
	// closeGen: the generation the source was reading at Close, not its
	// own file (noteTail): the glob hands it to the stream's next source
	// (Config.genTail).
	closeGen genTail
	closing  bool   // Close runs
	headDone uint64 // the pointer epoch headFirst last made sure of (0: none)
	headOwed uint64 // the epoch whose first-bytes record is stored but not yet msynced (0: none)
	// grownEpoch, grownTo: under grownEpoch the record's first bytes cover
	// the file up to grownTo (headGrow; MaxInt64: the whole fingerprint).
	grownEpoch uint64
	grownTo    int64
	resuming   bool // in resumeRotated: copies the glob matches are not looked at (Config.GlobMatched)
	// noGlobCopies: likewise, for a never-committed glob stream's file cut
	// between the glob's look and its open (resumeRotated).
	noGlobCopies bool
	catchUp      *CatchUp // the daemon put the pointer back to an older epoch (SetCatchUp)

	watchDirs   []watchDir
	watchWarned bool
	waitT       *time.Timer // wait's, reused

	// Shared with the fsnotify goroutine.
	events    chan struct{}
	watcher   *fsnotify.Watcher
	watchDone chan struct{}
	watchAll  atomic.Bool // wake on any event in the directory, not only the path's

	tornN    atomic.Int32 // len(torn), for the report (TornPending)
	seenLook uint64       // noteSeen calls, for the age of genSeen's entries

	state          atomic.Int32
	opened         atomic.Bool // latched: the state was once past STARTING and not FAILED (Opened)
	epoch          atomic.Uint64
	forgot         atomic.Pointer[[2]uint64] // forgetStep: {the epoch forgotten, the empty record's} (ReadEpoch)
	forgotKey      atomic.Uint64             // forgetStep: the file key of the file forgotten (ForgotKey)
	detail         atomic.Pointer[string]
	oversized      atomic.Uint64
	unterminated   atomic.Int64
	downgraded     atomic.Uint64
	lostTails      atomic.Uint64
	lostBytes      atomic.Uint64
	commitFailures atomic.Uint64
	syncedSeq      atomic.Uint64 // acknowledged sequence the last synced commit covers
	commitOK       atomic.Bool   // the last commit attempt succeeded and is synced
	dirty          atomic.Bool   // a stored record waits for its msync
	forgetDue      atomic.Bool   // the pointer still names a deleted file that is to be forgotten
	keptDeleted    bool          // forgetStep kept the record of the deleted file (Config.holdDeleted); read by the glob once the source ended
	queuedAtRest   atomic.Bool   // CAUGHT_UP with files queued behind the open one (their switch waits for rotateWait)
	linesRead      atomic.Uint64
	bytesRead      atomic.Uint64
	readPos        atomic.Int64 // offset read up to in the current file
	fileDev        atomic.Uint64
	fileIno        atomic.Uint64
	fileOpen       atomic.Bool
	curFile        atomic.Pointer[os.File] // the open file's descriptor, for the report's fstat (OpenFileGrown)
	fileEnded      atomic.Bool             // the open file is read to its end and the path is missing
	verifiedMod    atomic.Int64            // the open file's mtime (UnixNano) at its last content check
	pathFailed     atomic.Bool             // the path names no regular file: State is FAILED

	// crHeld: at its last look at the end of its file, the source held a
	// last line ended by a lone '\r' (a "\r\n"'s possible first half,
	// waiting for the next byte). finalCR: the glob asks it to take that
	// '\r' as the line's end at its next look (the file is left: a new
	// file waits at its path, or it is out of the glob and quiet) —
	// review 36 F.
	crHeld, finalCR atomic.Bool
}

// New makes a source publishing to pub.
func New(cfg Config, pub Publisher) *Source {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.BatchLines < 1 {
		cfg.BatchLines = 512
	}
	if cfg.BatchBytes < 1 {
		cfg.BatchBytes = 2 << 20
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 250 * time.Millisecond
	}
	if cfg.RotateWait < 0 {
		cfg.RotateWait = 0
	}
	if cfg.MaxLine < 1 {
		cfg.MaxLine = 1 << 20
	}
	s := &Source{cfg: cfg, pub: pub, ptr: cfg.Pointer, log: cfg.Logger, events: make(chan struct{}, 1)}
	s.fds.closed = cfg.CloseHook
	if cfg.resolvedOuts != nil {
		s.outs = keepOutputs(cfg.resolvedOuts, cfg.Path)
	} else {
		s.outs = newOutputs(cfg.Outputs, cfg.Path)
	}
	s.outs.files = cfg.OutputFiles
	s.deliveryPath = cfg.Path
	if cfg.DeliveryPath != "" {
		s.deliveryPath = cfg.DeliveryPath
	}
	s.commit.done = make(chan error, 1)
	s.commitOK.Store(true)
	s.state.Store(int32(Starting))
	return s
}

// bufSize is the read buffer's size. A glob stream's (negative: see
// newReader) starts small and grows to it.
func (s *Source) bufSize() int {
	n := max(1<<20, s.cfg.MaxLine+64<<10)
	if s.cfg.Pinned {
		return -n
	}
	return n
}

// Run reads until ctx is done or the source fails. One pass of the loop is
// one duty cycle (see doc.go for the steps).
func (s *Source) Run(ctx context.Context) error {
	s.startWatch()
	defer s.stopWatch()
	defer s.settleSync()
	held := s.slotHeld
	s.slotHeld = false
	s.awaitTornPointerGen(ctx) // returns at once for a fresh pointer (the only one held)
	if !held && !s.ioBegin(ctx) {
		return nil
	}
	err := s.open()
	s.ioEnd()
	if err != nil {
		s.fail(err)
		return err
	}
	s.lastPoll = time.Now()
	for ctx.Err() == nil {
		if s.cfg.PassHook != nil {
			s.cfg.PassHook()
		}
		s.checked = false
		s.commitStep(false)
		s.pollIfDue()
		if s.pending != nil {
			if !s.headFirst() {
				s.wait(ctx)
				continue
			}
			if !s.pub.TryPublish(s.pending) {
				s.wait(ctx)
				continue
			}
			s.pending = nil
		}
		if s.barrier {
			if !s.crossBarrier() {
				s.wait(ctx)
			}
			continue
		}
		if s.cur == nil {
			if len(s.torn) > 0 {
				s.retryTorn()
			}
			if s.pollOld() {
				continue // a completed .gz (retryTorn) is read while no file is open
			}
			if len(s.torn) > 0 {
				s.setState(Behind) // a generation is unread: not WAITING_FOR_FILE (settled)
			} else {
				s.setState(WaitingForFile)
			}
			s.forgetStep()
			if s.cfg.Pinned || !s.openAtPath() {
				s.wait(ctx)
			}
			continue
		}
		if s.fillFrom(s.cur, false) {
			continue
		}
		n, err := s.readCur()
		if err != nil {
			s.fail(fmt.Errorf("read %s: %w", s.cfg.Path, err))
			return err
		}
		if n > 0 && s.unverifiedRead(n) {
			continue
		}
		if n > 0 || s.atEnd() {
			continue
		}
		if s.cfg.Pinned {
			s.cur.releaseBuf() // a glob stream waits without its buffer
		}
		s.wait(ctx)
	}
	s.exitUntaken.Store(s.cur != nil && s.cur.lineUntaken())
	return nil
}

// readCur reads more of the current file and accounts for it.
func (s *Source) readCur() (int, error) {
	n, err := s.cur.read()
	s.countGzLost(s.cur)
	if n > 0 {
		// Behind before the read position moves: a report that sees the
		// new position also sees that the lines are not published yet.
		s.setState(Behind)
		s.bytesRead.Add(uint64(n))
		s.readPos.Store(s.cur.readPos())
	}
	return n, err
}

// fillFrom makes the next batch from r's buffered bytes into s.pending.
func (s *Source) fillFrom(r *reader, final bool) bool {
	if r.start == r.end {
		return false
	}
	if s.found.Starts == nil {
		s.found = takeFound(s.cfg.BatchLines)
	}
	from, long := r.consumed(), r.split.inLong
	b, over := fillBatch(r, &s.found, final, s.cfg.BatchLines, s.cfg.BatchBytes, s.cfg.Feed, s.deliveryPath)
	if b == nil {
		return false
	}
	s.oversized.Add(uint64(over))
	s.linesRead.Add(uint64(b.Len()))
	if !r.positioned {
		s.downgraded.Add(uint64(b.Len()))
	}
	if s.state.Load() != int32(Behind) {
		s.setState(Behind)
	}
	s.pending, s.pendingFrom, s.pendingLong = b, from, long
	return true
}

// Drain keeps acknowledging and committing until every published line is
// acknowledged or ctx is done (the shutdown bound).
func (s *Source) Drain(ctx context.Context) {
	if s.pending != nil {
		s.pending.Release()
		s.pending = nil
		s.dropped = true
		s.droppedFrom, s.droppedLong = s.pendingFrom, s.pendingLong
	}
	for {
		s.commitStep(false)
		if s.pub.Pending() == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-s.pub.Wake():
		case <-time.After(s.cfg.CommitSync):
		}
	}
}

// Close makes the final commit of exactly what the holding queues finished,
// syncs it, and closes the files and the pointer.
func (s *Source) Close() error {
	s.commitStep(true)
	var err error
	s.closing = true
	s.switchAtClose()
	s.noteTail()
	if s.ptr != nil {
		if s.barrier {
			s.barrierAtClose()
		} else {
			s.forgetStep()
		}
		s.growAtClose()
		if !s.commitOK.Load() {
			err = errors.New("final pointer commit failed")
		}
		if cerr := s.ptr.Close(); err == nil {
			err = cerr
		}
	}
	if s.ptr == nil && !s.cfg.Pinned && s.cur == nil {
		// Waiting for its file (ResumePoint's Waiting).
		if s.resume == nil {
			s.resume = &Resume{}
		}
		s.resume.Waiting = true
	}
	if r := s.ptrFile(); r != nil {
		s.closeNL = r.nlTaken && r.consumed() == r.readPos() && r.readPos() == s.readPos.Load()
	}
	if r := s.cur; r != nil {
		if s.closeUntaken = r.lineUntaken(); s.closeUntaken {
			s.closeTaken = r.consumed()
		}
		s.noteHead(r)
		r.close()
	}
	for _, r := range s.next {
		r.close()
	}
	for _, r := range s.old {
		s.moveResume(r)
		s.noteDone(r, true)
		r.close()
	}
	return err
}

// growAtClose grows the pointer's fingerprint over its file's first bytes
// as they are now (up to pointer.MaxFingerprint), as any commit does
// (DESIGN §3), when no commit did since the file grew: a pointer a
// subscriber that finished nothing kept in place covers only the bytes
// its file had at its last commit. Not grown, a rewrite in place while
// tailfeed is down that keeps those few bytes is the same file at the
// next start, and a subscriber that had finished more than the pointer
// (a clean stop's kept marks: it skips by place what it finished) would
// skip the new lines — a gap. Grown, the rewrite is a replaced file, read
// from its start. Nothing is written when the fingerprint covers all it
// can; a failed msync leaves the record on disk as it was, counted in
// commitFailures, and Close reports the final commit failed.
func (s *Source) growAtClose() {
	rec := s.ptr.Record()
	if rec.FileKey == 0 || rec.FPLen >= pointer.MaxFingerprint || !s.commitOK.Load() {
		return
	}
	if err := s.ptr.Store(rec.Offset); err != nil {
		return
	}
	if err := s.ptr.Sync(); err != nil {
		// A failed msync is counted (DESIGN §3), and the stop's commit
		// reported failed: the record on disk is the one before (valid,
		// its fingerprint shorter).
		s.commitFailures.Add(1)
		s.commitOK.Store(false)
		s.log.Error("pointer msync failed at the stop (its fingerprint not grown: a rewrite of the file past its first bytes while stopped is not seen)", "path", s.cfg.Path, "error", err)
	}
}

// HeadRead is the fingerprint of the first bytes of the file the source
// read under epoch, as it read them, when it closed: the pointer's epoch's
// file (HeadAtClose), or, without a pointer, the resume point's. false:
// not known (another epoch, nothing read, or content it saw replaced).
// Read after Close.
func (s *Source) HeadRead(epoch uint64) (int, uint64, bool) {
	if s.ptr != nil && s.ptrEpoch == epoch && s.closeHeadLen > 0 {
		return s.closeHeadLen, s.closeHead, true
	}
	if r := s.resume; s.ptr == nil && r != nil && r.Epoch == epoch && r.HeadLen > 0 {
		return r.HeadLen, r.Head, true
	}
	return 0, 0, false
}

// HeadAtClose is the fingerprint of the first bytes of the file the source
// read under the pointer's epoch when it closed, as it read them (0, 0 when
// none is open, or when it saw the content replaced: nothing to tell the
// file by). Read after Close.
func (s *Source) HeadAtClose() (int, uint64) { return s.closeHeadLen, s.closeHead }

// Resume is where a source without a pointer stopped reading a file: the
// position after the last line it published, under epoch, and the
// fingerprint of the file's first bytes as read.
type Resume struct {
	Epoch   uint64
	Offset  int64
	HeadLen int
	Head    uint64
	// Size is how far the source had read the file when it let go of it:
	// the bytes past Offset up to it were read, an unterminated last line
	// (a loss only if the file grew past it since: the line was ended).
	Size int64
	// Limit is ONCE_EARLIEST's end (its size when first opened), 0: none;
	// Past the bytes of it after its last line's end (not delivered).
	Limit, Past int64
	// InLong: Offset is inside a line longer than maxLineBytes whose
	// first pieces were delivered (the rest ends that line: oversized
	// counts it then).
	InLong bool
	// Key is the file's key (0: not checked), From where the source
	// began reading it under Epoch (its start per the strategy, or the
	// resume point it opened at): a reload resumes a pointer-less feed
	// only in the same file, and from From when the lines past it were
	// not all acknowledged.
	Key  uint64
	From int64
	// End is the file's size when the source let go of it: a reload that
	// finds the file neither at the path nor beside it (by Key) counts
	// the bytes from Offset to it lost.
	End int64
	// Waiting: the source had no file open when it closed (it waited for
	// its path): a file at the path now appeared meanwhile and is read
	// from its start, as the waiting source would have (LATEST too).
	Waiting bool
}

// ResumePoint is where this source (without a pointer) stopped in its file
// when it closed; nil when it read none. Read after Close.
func (s *Source) ResumePoint() *Resume { return s.resume }

// NotFound: a glob stream's source found its file neither at its path nor
// (its pointer naming it) beside it when it opened, and counted nothing:
// the file moved as the stream started (PinGone unset). Read once Run
// returned.
func (s *Source) NotFound() bool { return s.notFound }

// heldMark is a "held" epochs line: the record (Epoch, Key, End) names a
// file of which nothing is pending.
type heldMark struct {
	Epoch, Key uint64
	End        int64
	FPLen, FP  uint64 // the record's first bytes then
	// The glob's: the key of the empty file at the path the record was
	// kept for (0: unknown) and when the mark was written; Counted: not a
	// held line but the record of that empty file, whose loss the start
	// counted already (countNextGone).
	Next    uint64
	At      time.Time
	Counted bool
	// Found: the file it names was found beside its path by its key and
	// first bytes when the start read the mark: read on, it may hold
	// bytes past End by now, so the mark names nothing (review 19a A).
	Found bool
	// FoundSize: the size it was found with (Found); its End when it was
	// read to its end there all the same (endsAfterLine).
	FoundSize int64
}

// names: rec is the record the mark was written for.
func (m heldMark) names(rec pointer.Record) bool {
	return m.Epoch != 0 && !m.Found && m.Epoch == rec.Epoch && m.Key == rec.FileKey && m.End == rec.Offset
}

// genTail is a generation a glob stream's source was reading when it closed
// (its key, the epoch it was read under) and its size then.
type genTail struct {
	Key, Epoch uint64
	Size       int64
}

// noteTail records closeSize and closeEnd for a glob stream (Pinned): its
// source no longer reads, but the file may have grown since its last read
// — renamed out of the glob or deleted while the stream was closing (its
// drain waiting for acknowledgements), a line its writer appended is read
// by nobody once the descriptor is closed.
func (s *Source) noteTail() {
	r := s.cur
	if !s.cfg.Pinned || r == nil || r.gz != nil || !r.positioned || r.gone != "" {
		return
	}
	if s.cfg.PinKey != 0 && r.key != s.cfg.PinKey && !r.copy && r.key != s.adopted.Load() {
		// A generation of the pointer's read before the stream's own
		// file (a glob stream given a gone file's pointer at a start):
		// the pointer names it, and the stream's next source reads on
		// from there (or counts it lost when it is gone). The glob's
		// noted tail is its own file's; this file's, counted by the glob
		// when its own file leaves the glob, was a false loss (review
		// 14b A: 0.5–1.5 MB, every line delivered). Its size is kept for
		// the next source: found gone, those bytes are known lost.
		if size, _, err := fstatSizeMod(r.f); err == nil {
			s.closeGen = genTail{Key: r.key, Epoch: r.epoch, Size: size}
		}
		return
	}
	size, _, err := fstatSizeMod(r.f)
	if err != nil || (size <= r.readPos() && !s.dropped && !r.lineUntaken()) {
		// Every byte read, at most a partial last line not published:
		// no line of it is lost (an unterminated line never is, §4). A
		// line read and never taken (the run ended between the read and
		// the split, the thirty-sixth session's CI3) is unread.
		return
	}
	end := r.consumed()
	if s.dropped {
		end = s.droppedFrom
	}
	s.closeSize, s.closeEnd = size, end
}

func (s *Source) fail(err error) {
	s.log.Error("source failed", "error", err)
	s.setDetail(err.Error())
	s.setState(Failed)
}

func (s *Source) setState(st State) {
	if st != Starting && st != Failed {
		s.opened.Store(true)
	}
	if old := State(s.state.Swap(int32(st))); old != st && s.cfg.OnRest != nil && st.resting() {
		s.cfg.OnRest()
	}
}

// setDetail records the latest notable event. A lost tail stays in the
// detail until the next restart (DESIGN §4).
func (s *Source) setDetail(d string) {
	if s.lostTail {
		return
	}
	if s.badPath != "" {
		s.detailBeforeBad = &d // the path's failure keeps the detail until it ends
		return
	}
	s.detail.Store(&d)
}

// setFile publishes r as the open file. Behind first, then the read
// position, then the identity: a report reads the identity, the position,
// then the state, so one that sees CAUGHT_UP saw a matching pair.
func (s *Source) setFile(r *reader) {
	s.setState(Behind)
	s.readPos.Store(r.readPos())
	s.fileDev.Store(r.dev)
	s.fileIno.Store(r.ino)
	s.fileOpen.Store(true)
	s.fileEnded.Store(false)
	s.curFile.Store(r.f)
	s.publishHead(r)
}

// OpenFileGrown reports whether an fstat of the open file's descriptor
// shows bytes past pos (DESIGN §7's report check, for a file whose path
// names it no more: written through a descriptor its writer kept); false
// when no file is open or it was closed meanwhile. Safe from any goroutine.
func (s *Source) OpenFileGrown(pos int64) bool {
	f := s.curFile.Load()
	if f == nil {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Size() > pos
}

// noteHead records, as the source lets go of r (its file read to its end
// and gone from its path, or the source closing), what HeadAtClose and
// ResumePoint report.
func (s *Source) noteHead(r *reader) {
	if r.gz != nil || r.gone != "" {
		return // its content is not what was read: nothing to tell it by
	}
	if s.ptr != nil && r.epoch == s.ptrEpoch {
		// Read under the pointer's epoch (not a new file waiting at its
		// barrier for the epoch before to be acknowledged).
		s.closeHeadLen, s.closeHead = r.fpLen, r.fp
	}
	if s.ptr == nil && r.positioned {
		at, long := r.consumed(), r.split.inLong
		if s.dropped {
			at, long = s.droppedFrom, s.droppedLong
		}
		s.resume = &Resume{Epoch: r.epoch, Offset: at, HeadLen: r.fpLen, Head: r.fp, Size: min(r.heldTo(), readerSize(r)), Limit: max(r.limit+r.past, 0), Past: r.past, InLong: long,
			Key: r.key, From: min(r.from, at), End: readerSize(r)}
		s.resumeOf = r
	}
}

// moveResume moves the resume point along r, a reader let go of (leave:
// watched for late lines, delivered without a position) that read on since
// noteHead, as it is closed.
func (s *Source) moveResume(r *reader) {
	if s.resume == nil || s.resumeOf != r || s.dropped {
		return
	}
	s.resume.Offset, s.resume.Size, s.resume.InLong = r.consumed(), min(r.heldTo(), readerSize(r)), r.split.inLong
	s.resume.End = readerSize(r)
}

// readerSize is r's file's size now, or the last one it saw.
func readerSize(r *reader) int64 {
	if r.f != nil {
		if size, _, err := fstatSizeMod(r.f); err == nil {
			return size
		}
	}
	return r.lastSize
}

// headFP is a fingerprint of a file's first n bytes.
type headFP struct {
	n  uint64
	fp uint64
}

// publishHead makes r's fingerprint the one Head reports (a glob stream:
// the glob tells copies of its file by it).
func (s *Source) publishHead(r *reader) {
	if s.cfg.Pinned && r.fpLen > 0 {
		s.head.Store(&headFP{n: uint64(r.fpLen), fp: r.fp})
	}
}

// CopiesRead is how many times the source found its file truncated and
// read its tail from a copy (readCopy); safe from any goroutine.
func (s *Source) CopiesRead() uint64 { return s.copiesRead.Load() }

// CopyTaken is a copy (copytruncate) of its file a source took at a
// truncation: read on from, or found holding nothing it had not consumed.
type CopyTaken struct {
	Key   uint64    // its file key
	At    time.Time // when it was taken
	Epoch uint64    // the epoch its bytes were read under (the feed's status shows it)
	// HeadLen, Head, Size: its first bytes' fingerprint and its size when
	// taken (0: not known); a compressed twin of it (logrotate's compress,
	// a new key) is told by them.
	HeadLen int
	Head    uint64
	Size    int64
	// Born: its birth time (zero: not known); a file on its inode born
	// otherwise is another (review 25c A: a held-back file deleted, its
	// inode given to the copy taken meanwhile).
	Born time.Time
}

// CopyKey is the file key of the last copy the source took and when (nil:
// none). Safe from any goroutine.
func (s *Source) CopyKey() *CopyTaken {
	cs := s.CopiesTaken()
	if len(cs) == 0 {
		return nil
	}
	t := cs[len(cs)-1]
	return &t
}

// CopiesTaken are the copies the source took (trimCopies), oldest first
// (nil: none); the slice is never changed after it is returned.
// Safe from any goroutine.
func (s *Source) CopiesTaken() []CopyTaken {
	if p := s.copiesTaken.Load(); p != nil {
		return *p
	}
	return nil
}

// Adopted is the key of the file the source reads on as its own file's
// same content under a new key (a rename into place, Config.Adoptable),
// or 0. Safe from any goroutine.
func (s *Source) Adopted() uint64 { return s.adopted.Load() }

// AdoptedAt is when the source switched to the file Adopted names, holding
// it open (it was born before; its inode was not reused yet); zero: none.
func (s *Source) AdoptedAt() time.Time {
	if t := s.adoptedAt.Load(); t != 0 {
		return time.Unix(0, t)
	}
	return time.Time{}
}

// GenDone is a file a source switched away from (a generation read to its
// end, then another file read after it: retire): its key, first bytes and
// where its lines ended (its late lines included, as far as the source
// read them), and when it was noted.
type GenDone struct {
	Key   uint64
	FPLen int
	FP    uint64
	End   int64
	At    time.Time
}

// GensDone are the files the source switched away from (oldest first;
// trimmed as copies are: trimGens); the slice is never changed after it is
// returned. Safe from any goroutine.
func (s *Source) GensDone() []GenDone {
	if p := s.gensDone.Load(); p != nil {
		return *p
	}
	return nil
}

// noteDone records r as switched away from (retire), or moves the end of
// its entry on (more of it read since: late lines). update: only an entry
// already there is moved (a retired file closed). Source goroutine.
func (s *Source) noteDone(r *reader, update bool) {
	if r == nil || r.key == 0 || r.fpLen == 0 {
		return
	}
	all := slices.Clone(s.GensDone())
	i := slices.IndexFunc(all, func(g GenDone) bool { return g.Key == r.key && g.FPLen == r.fpLen && g.FP == r.fp })
	switch {
	case i >= 0:
		all[i].End = max(all[i].End, r.consumed())
	case update:
		return
	default:
		all = trimGens(append(all, GenDone{Key: r.key, FPLen: r.fpLen, FP: r.fp, End: r.consumed(), At: time.Now()}))
	}
	s.gensDone.Store(&all)
}

// tookCopy records the copy of key the source took (headLen, head, size:
// its first bytes' fingerprint and its size, 0 when not known).
func (s *Source) tookCopy(key, epoch uint64, headLen int, head uint64, size int64, born time.Time) {
	t := CopyTaken{Key: key, At: time.Now(), Epoch: epoch, HeadLen: headLen, Head: head, Size: size, Born: born}
	all := trimCopies(append(slices.Clone(s.CopiesTaken()), t))
	s.copiesTaken.Store(&all)
}

// Head is the open file's first-bytes fingerprint as its source read it
// (publishHead; the glob asks it of a source without a pointer, or whose
// pointer names no file yet): safe from any goroutine; 0, 0 when none is
// known.
func (s *Source) Head() (uint64, uint64) {
	if h := s.head.Load(); h != nil {
		return h.n, h.fp
	}
	return 0, 0
}

// holds reports whether the source has a descriptor open on the file with
// key (its current file, one left or queued behind a copy it reads, the
// copy): the inode cannot be reused meanwhile. Safe from any goroutine.
func (s *Source) holds(key uint64) bool { return s.fds.has(key) }

// openKeys counts a source's open descriptors by file key: readers made
// by Source.newReader, until their close.
type openKeys struct {
	mu     sync.Mutex
	n      map[uint64]int
	closed func(key uint64) // Config.CloseHook
}

func (o *openKeys) add(r *reader) {
	o.mu.Lock()
	if o.n == nil {
		o.n = map[uint64]int{}
	}
	o.n[r.key]++
	o.mu.Unlock()
	r.keys = o
}

func (o *openKeys) done(key uint64) {
	o.mu.Lock()
	if o.n[key] <= 1 {
		delete(o.n, key)
	} else {
		o.n[key]--
	}
	o.mu.Unlock()
}

func (o *openKeys) has(key uint64) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n[key] > 0
}

// newReader makes a reader of f counted in s.open until its close.
func (s *Source) newReader(f *os.File, dev, ino uint64) *reader {
	r := newReader(f, dev, ino, s.bufSize(), s.cfg.MaxLine)
	s.fds.add(r)
	return r
}

// clearFile records that no file is open.
func (s *Source) clearFile() {
	if s.cur != nil {
		s.noteHead(s.cur)
	}
	s.cur = nil
	s.curFile.Store(nil)
	s.fileOpen.Store(false)
	s.fileEnded.Store(false)
	s.crHeld.Store(false)
}

// unverifiedRead checks the current file when a read went past the size
// its last check verified (once per read burst that crosses it, never per
// line), or is the first since its open (openCheck): a file truncated and
// written again longer than the read position since would otherwise be
// read on from the old position under the old epoch. True when the read was undone (never published) and the file
// handled as changed (its copy read first, or marked gone).
func (s *Source) unverifiedRead(n int) bool {
	r := s.cur
	if s.cfg.Strategy.Bounded() || r.gone != "" || r.copy || r.gz != nil || (r.readPos() <= r.lastSize && !r.openCheck) {
		return false
	}
	r.openCheck = false
	why := s.changed(r)
	if why == "" {
		return false
	}
	r.end -= n // not this file's continuation
	s.bytesRead.Add(^uint64(n - 1))
	s.readPos.Store(r.readPos())
	if !s.readCopy(r, why) {
		s.markGone(r, why)
	}
	s.checked = true
	return true
}
