package file

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/hashicorp/go-hclog"

	"tailfeed/feed"
	"tailfeed/internal/fileutil"
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
}

// Source reads one feed's file and publishes its lines. Run, Drain and
// Close are called one after the other by one goroutine at a time; the
// getters may be called from anywhere.
type Source struct {
	cfg Config
	pub *feed.Publisher
	ptr *pointer.Pointer
	log hclog.Logger

	// Only accessed from the goroutine running the source.
	cur       *reader
	next      []*reader // files found at the path after a rotation, in order
	old       []*reader // switched-away files, watched for rotateWait
	barrier   bool      // cur's epoch waits for every line of the previous one
	pending   *feed.Batch
	found     Found
	events    chan struct{}
	watcher   *fsnotify.Watcher
	stored    bool // a record was stored and not yet synced
	storedSeq uint64
	storedPos int64
	lastSync  time.Time
	ackSeq    uint64
	missing   bool // the path named no file at the last check

	state          atomic.Int32
	epoch          atomic.Uint64
	detail         atomic.Pointer[string]
	oversized      atomic.Uint64
	unterminated   atomic.Int64
	downgraded     atomic.Uint64
	lostTails      atomic.Uint64
	commitFailures atomic.Uint64
	syncedSeq      atomic.Uint64 // acknowledged sequence the last synced commit covers
	commitOK       atomic.Bool   // the last commit attempt succeeded and is synced
	dirty          atomic.Bool   // a stored record waits for its msync
	linesRead      atomic.Uint64
	bytesRead      atomic.Uint64
	readPos        atomic.Int64 // offset read up to in the current file
	fileDev        atomic.Uint64
	fileIno        atomic.Uint64
	fileOpen       atomic.Bool
	fileEnded      atomic.Bool // the open file is read to its end and the path is missing
}

// New makes a source publishing to pub.
func New(cfg Config, pub *feed.Publisher) *Source {
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
	s := &Source{cfg: cfg, pub: pub, ptr: cfg.Pointer, log: cfg.Logger, events: make(chan struct{}, 1)}
	s.commitOK.Store(true)
	s.state.Store(int32(Starting))
	return s
}

func (s *Source) bufSize() int { return max(1<<20, s.cfg.MaxLine+64<<10) }

// Run reads until ctx is done or the source fails.
func (s *Source) Run(ctx context.Context) error {
	s.startWatch()
	defer s.stopWatch()
	if err := s.open(); err != nil {
		s.fail(err)
		return err
	}
	for ctx.Err() == nil {
		s.commitStep(false)
		if s.pending != nil {
			if !s.pub.TryPublish(s.pending) {
				s.check()
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
			s.setState(WaitingForFile)
			if !s.openAtPath() {
				s.wait(ctx)
			}
			continue
		}
		if s.fillFrom(s.cur, false) {
			continue
		}
		n, err := s.cur.read()
		if err != nil {
			s.fail(fmt.Errorf("read %s: %w", s.cfg.Path, err))
			return err
		}
		if n > 0 {
			// Behind before the read position moves: a report that sees the
			// new position also sees that the lines are not published yet.
			s.setState(Behind)
			s.bytesRead.Add(uint64(n))
			s.readPos.Store(s.cur.readPos())
			continue
		}
		if s.atEnd() {
			continue
		}
		s.wait(ctx)
	}
	return nil
}

// atEnd handles the end of the current file; true when there is more to do
// at once.
func (s *Source) atEnd() bool {
	r := s.cur
	if s.cfg.Strategy == OnceEarliest {
		if s.fillFrom(r, true) {
			return true
		}
		s.unterminated.Store(r.unterminated())
		s.setState(EndOfStream)
		return false
	}
	if s.cfg.Strategy == OnceLatest {
		s.setState(EndOfStream)
		return false
	}
	if s.check() {
		return true
	}
	s.unterminated.Store(r.unterminated())
	if s.cur == r && len(s.next) > 0 {
		nx := s.next[0]
		st, err := nx.f.Stat()
		if (err == nil && st.Size() > 0) || time.Since(r.grewAt) >= s.cfg.RotateWait {
			s.switchTo(nx, "rotated")
			return true
		}
	}
	if s.missing && s.cur == r && time.Since(r.grewAt) >= s.cfg.RotateWait {
		s.log.Warn("input path is gone and the open file is read to its end; closing it", "path", s.cfg.Path)
		s.retire(r)
		s.cur = nil
		s.fileOpen.Store(false)
		return true
	}
	s.fileEnded.Store(s.missing)
	s.setState(CaughtUp)
	return false
}

// fillFrom makes the next batch from r's buffered bytes into s.pending.
func (s *Source) fillFrom(r *reader, final bool) bool {
	if r.start == r.end {
		return false
	}
	b, over := fillBatch(r, &s.found, final, s.cfg.BatchLines, s.cfg.BatchBytes, s.cfg.Feed, s.cfg.Path)
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
	s.pending = b
	return true
}

// open opens the input at start, per the read strategy.
func (s *Source) open() error {
	if s.ptr != nil {
		s.epoch.Store(s.ptr.Record().Epoch)
		if s.ptr.Fresh() && s.ptr.FreshReason() != "new pointer file" {
			s.setDetail("pointer file reset: " + s.ptr.FreshReason())
		}
	} else {
		s.epoch.Store(pointer.NewEpoch())
	}
	f, dev, ino, err := openStable(s.cfg.Path, s.cfg.OpenHook)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("open %s: %w", s.cfg.Path, err)
	}
	if s.ptr != nil && s.resumeRotated(f, dev, ino) {
		if f != nil {
			s.queueNext(f, dev, ino)
		}
		return nil
	}
	if f == nil {
		s.missing = true
		if s.cfg.Strategy == OnceEarliest || s.cfg.Strategy == OnceLatest {
			return fmt.Errorf("open %s: %w", s.cfg.Path, fs.ErrNotExist)
		}
		s.setState(WaitingForFile)
		return nil
	}
	return s.startFile(f, dev, ino, true)
}

// startFile makes f the current file at start-up (first=true) or when it
// appears at the path while no file is open.
func (s *Source) startFile(f *os.File, dev, ino uint64, first bool) error {
	r := newReader(f, dev, ino, s.bufSize(), s.cfg.MaxLine)
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	size := st.Size()
	r.lastSize, r.lastMod = size, st.ModTime()
	if !first {
		// A file that appears while running is new: a new epoch from 0,
		// published once the previous epoch is acknowledged.
		r.epoch = pointer.NewEpoch()
		s.cur, s.barrier, s.missing = r, true, false
		s.setFileIdentity(r)
		return nil
	}
	switch s.cfg.Strategy {
	case Committed:
		v, err := s.ptr.Check(f, r.key, size)
		if err != nil {
			f.Close()
			return err
		}
		rec := s.ptr.Record()
		r.epoch = rec.Epoch
		r.seek(rec.Offset)
		switch v {
		case pointer.Replaced, pointer.Truncated:
			s.setDetail(fmt.Sprintf("input %s at start: %s; reading it from 0 under a new epoch", v, s.cfg.Path))
		case pointer.KeptNewKey:
			s.log.Warn("input has a new file key but the same content; keeping the pointer", "path", s.cfg.Path)
		}
	case Earliest, OnceEarliest:
		r.epoch = pointer.NewEpoch()
		if s.cfg.Strategy == OnceEarliest {
			r.limit = size
		}
	case Latest:
		r.epoch = pointer.NewEpoch()
		r.seek(lastLineStart(f, size, s.cfg.MaxLine))
	case OnceLatest:
		r.epoch = pointer.NewEpoch()
		r.limit = size
		r.seek(size)
	}
	if _, err := r.refreshFingerprint(size); err != nil {
		s.log.Warn("reading the fingerprint failed", "error", err)
	}
	s.cur = r
	s.epoch.Store(r.epoch)
	s.setFileIdentity(r)
	s.readPos.Store(r.readPos())
	s.missing = false
	return nil
}

// lastLineStart is where LATEST starts: just after the last terminator
// before size (so a line being written is delivered whole), or size.
func lastLineStart(f *os.File, size int64, maxLine int) int64 {
	n := min(size, int64(min(maxLine, 64<<10)))
	if n == 0 {
		return size
	}
	b := make([]byte, n)
	if _, err := f.ReadAt(b, size-n); err != nil {
		return size
	}
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' || b[i] == '\r' {
			if b[i] == '\r' && i == len(b)-1 {
				continue // may be the first half of "\r\n"
			}
			return size - n + int64(i) + 1
		}
	}
	return size
}

func (s *Source) setFileIdentity(r *reader) {
	s.fileDev.Store(r.dev)
	s.fileIno.Store(r.ino)
	s.fileOpen.Store(true)
	s.fileEnded.Store(false)
}

// resumeRotated handles a restart after a rotation: the pointer names a
// file other than the one at the path. It looks for that file in the path's
// directory and, when found, reads it from the pointer first (true).
func (s *Source) resumeRotated(f *os.File, dev, ino uint64) bool {
	rec := s.ptr.Record()
	if rec.FileKey == 0 && rec.FPLen == 0 {
		return false // no identity yet
	}
	if f != nil {
		if pointer.FileKey(dev, ino) == rec.FileKey {
			return false // same file: the ordinary open-time check applies
		}
		if fingerprintMatches(f, rec) {
			return false // same content under a new key: the check keeps it
		}
	}
	old, odev, oino := findByKey(filepath.Dir(s.cfg.Path), rec)
	if old == nil {
		s.lostTails.Add(1)
		s.log.Warn("rotated file gone; its unread tail is lost", "path", s.cfg.Path, "offset", rec.Offset)
		s.setDetail("rotated file gone; its unread tail is lost")
		return false
	}
	st, err := old.Stat()
	if err != nil || st.Size() < rec.Offset {
		old.Close()
		s.lostTails.Add(1)
		s.setDetail("rotated file gone; its unread tail is lost")
		return false
	}
	r := newReader(old, odev, oino, s.bufSize(), s.cfg.MaxLine)
	r.epoch = rec.Epoch
	r.seek(rec.Offset)
	r.lastSize, r.lastMod = st.Size(), st.ModTime()
	r.refreshFingerprint(st.Size())
	s.ptr.Bind(old, r.key)
	s.log.Info("resuming the rotated file first", "file", old.Name(), "offset", rec.Offset)
	s.cur = r
	s.epoch.Store(r.epoch)
	s.setFileIdentity(r)
	return true
}

func fingerprintMatches(f *os.File, rec pointer.Record) bool {
	if rec.FPLen == 0 {
		return true
	}
	b := make([]byte, rec.FPLen)
	n, _ := f.ReadAt(b, 0)
	return uint64(n) == rec.FPLen && pointer.Fingerprint(b) == rec.FP
}

// findByKey looks in dir for the file with rec's file key and fingerprint.
func findByKey(dir string, rec pointer.Record) (*os.File, uint64, uint64) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, 0, 0
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		dev, ino, err := fileutil.DevInoPath(p)
		if err != nil || pointer.FileKey(dev, ino) != rec.FileKey {
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		if d2, i2, err := fileutil.DevIno(f); err != nil || d2 != dev || i2 != ino || !fingerprintMatches(f, rec) {
			f.Close()
			continue
		}
		return f, dev, ino
	}
	return nil, 0, 0
}

// openAtPath tries to open a file that appeared at the path while none is open.
func (s *Source) openAtPath() bool {
	f, dev, ino, err := openStable(s.cfg.Path, s.cfg.OpenHook)
	if err != nil {
		s.missing = true
		return false
	}
	s.log.Info("input file appeared", "path", s.cfg.Path)
	if err := s.startFile(f, dev, ino, false); err != nil {
		s.log.Warn("opening the input failed", "error", err)
		return false
	}
	return true
}

// check verifies, at the end of the open file and at every poll, that the
// path still names it and that it was not truncated or rewritten. It
// returns true when it switched files (there is more to do at once).
func (s *Source) check() bool {
	r := s.cur
	if r == nil || s.cfg.Strategy.Bounded() {
		return false
	}
	st, err := r.f.Stat()
	if err == nil {
		size := st.Size()
		if size < r.readPos() {
			s.reopen(r, fmt.Sprintf("input %s truncated (size %d < read %d)", s.cfg.Path, size, r.readPos()))
			return true
		}
		if size != r.lastSize || !st.ModTime().Equal(r.lastMod) {
			same, ferr := r.refreshFingerprint(size)
			if ferr == nil && !same {
				s.reopen(r, fmt.Sprintf("input %s replaced in place (first bytes changed)", s.cfg.Path))
				return true
			}
			r.lastSize, r.lastMod = size, st.ModTime()
		}
	}
	dev, ino, err := fileutil.DevInoPath(s.cfg.Path)
	if err != nil {
		s.missing = true
		return false
	}
	s.missing = false
	if dev == r.dev && ino == r.ino {
		return false
	}
	for _, n := range s.next {
		if n.dev == dev && n.ino == ino {
			return false
		}
	}
	f, fdev, fino, err := openStable(s.cfg.Path, s.cfg.OpenHook)
	if err != nil {
		return false
	}
	s.queueNext(f, fdev, fino)
	return false
}

// queueNext queues a file found at the path after a rotation.
func (s *Source) queueNext(f *os.File, dev, ino uint64) {
	r := newReader(f, dev, ino, s.bufSize(), s.cfg.MaxLine)
	s.log.Info("input rotated; new file queued", "path", s.cfg.Path)
	s.next = append(s.next, r)
}

// switchTo makes the first queued file current. A file with the same first
// bytes and no shorter than the read position is the same file under a new
// key (copy-up): it keeps the epoch and position. Anything else starts a new
// epoch at 0 behind the barrier.
func (s *Source) switchTo(nx *reader, why string) {
	old := s.cur
	s.next = s.next[1:]
	st, err := nx.f.Stat()
	if err == nil && old.fpLen > 0 && st.Size() >= old.consumed() {
		b := make([]byte, old.fpLen)
		if n, _ := nx.f.ReadAt(b, 0); n == old.fpLen && pointer.Fingerprint(b) == old.fp {
			s.log.Warn("input has a new file key but the same content; continuing at the same position", "path", s.cfg.Path)
			nx.epoch = old.epoch
			nx.seek(old.consumed())
			nx.fpLen, nx.fp = old.fpLen, old.fp
			nx.lastSize, nx.lastMod = st.Size(), st.ModTime()
			old.close()
			s.cur = nx
			s.setFileIdentity(nx)
			if s.ptr != nil {
				s.ptr.Bind(nx.f, nx.key)
			}
			return
		}
	}
	s.retire(old)
	nx.epoch = pointer.NewEpoch()
	if err == nil {
		nx.lastSize, nx.lastMod = st.Size(), st.ModTime()
	}
	s.cur, s.barrier = nx, true
	s.setFileIdentity(nx)
	s.log.Info("switching to the new file", "reason", why, "path", s.cfg.Path)
}

// reopen restarts reading the path from 0 under a new epoch after a
// truncation or an in-place replacement.
func (s *Source) reopen(r *reader, why string) {
	s.log.Warn(why + "; reading it from 0 under a new epoch")
	s.setDetail(why)
	f, dev, ino, err := openStable(s.cfg.Path, s.cfg.OpenHook)
	r.close()
	s.cur = nil
	s.fileOpen.Store(false)
	if err != nil {
		s.missing = true
		return
	}
	nr := newReader(f, dev, ino, s.bufSize(), s.cfg.MaxLine)
	nr.epoch = pointer.NewEpoch()
	if st, err := f.Stat(); err == nil {
		nr.lastSize, nr.lastMod = st.Size(), st.ModTime()
	}
	s.cur, s.barrier = nr, true
	s.setFileIdentity(nr)
}

// retire keeps a switched-away file watched for rotateWait: lines appended
// to it are delivered without a position (downgraded).
func (s *Source) retire(r *reader) {
	r.positioned = false
	r.closeAt = time.Now().Add(s.cfg.RotateWait)
	s.old = append(s.old, r)
}

// crossBarrier starts the current file's epoch once every line of the
// previous epoch is acknowledged: commit, then Reset the pointer.
func (s *Source) crossBarrier() bool {
	s.pub.SetPaused(false, "")
	if s.pub.Pending() > 0 {
		s.commitStep(false)
		if s.pub.Pending() > 0 {
			return false
		}
	}
	s.commitStep(true)
	r := s.cur
	if s.ptr != nil {
		if err := s.ptr.Reset(r.epoch, r.f, r.key); err != nil {
			s.commitFailures.Add(1)
			s.commitOK.Store(false)
			s.log.Error("pointer reset failed; retrying", "error", err)
			return false
		}
		s.syncedSeq.Store(s.ackSeq)
		s.commitOK.Store(true)
		s.stored = false
		s.dirty.Store(false)
	}
	st, err := r.f.Stat()
	if err == nil {
		r.refreshFingerprint(st.Size())
	}
	s.barrier = false
	s.epoch.Store(r.epoch)
	s.readPos.Store(r.readPos())
	return true
}

// commitStep acknowledges what every holding queue finished, stores the new
// position into the pointer mapping (once per duty cycle) and msyncs it at
// most every CommitSync, or at once when force is set.
func (s *Source) commitStep(force bool) {
	a := s.pub.PollAcks()
	if a.Moved {
		s.ackSeq = a.Seq
		switch {
		case s.ptr == nil:
			s.syncedSeq.Store(a.Seq) // nothing to commit
		case a.Positioned && a.Epoch == s.ptr.Record().Epoch:
			if err := s.ptr.Store(a.Position); err != nil {
				s.commitFailures.Add(1)
				s.commitOK.Store(false)
				s.log.Error("pointer store failed", "error", err)
			} else {
				s.stored, s.storedSeq, s.storedPos = true, a.Seq, a.Position
				s.dirty.Store(true)
			}
		case s.stored:
			s.storedSeq = a.Seq // the store waiting for its msync covers these too
		default:
			// Only lines without a position (or of a finished epoch):
			// nothing new to store; the synced record still covers them.
			s.syncedSeq.Store(a.Seq)
		}
	}
	if s.ptr == nil || !s.stored {
		return
	}
	now := time.Now()
	if !force && now.Sub(s.lastSync) < s.cfg.CommitSync {
		return
	}
	s.lastSync = now
	if err := s.ptr.Sync(); err != nil {
		s.commitFailures.Add(1)
		s.commitOK.Store(false)
		s.log.Error("pointer msync failed; the lines stay unacknowledged on disk", "error", err)
		// Never retried alone: the next attempt rewrites the slot.
		if serr := s.ptr.Store(s.storedPos); serr != nil && !errors.Is(serr, pointer.ErrBackwards) {
			s.log.Error("pointer store failed", "error", serr)
		}
		return
	}
	s.stored = false
	s.commitOK.Store(true)
	s.syncedSeq.Store(s.storedSeq)
	s.dirty.Store(false)
}

// wait sleeps until something may have changed: a group finished work, the
// file changed (fsnotify), the poll interval, a due msync, or the stop.
func (s *Source) wait(ctx context.Context) {
	d := s.cfg.Poll
	if s.stored {
		d = min(d, max(time.Millisecond, s.cfg.CommitSync-time.Since(s.lastSync)))
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-s.pub.Wake():
	case <-s.events:
	case <-t.C:
		s.pollOld()
		s.check()
	}
}

// pollOld reads lines appended to switched-away files and closes those
// watched long enough.
func (s *Source) pollOld() {
	if s.pending != nil {
		return
	}
	keep := s.old[:0]
	for _, r := range s.old {
		if s.pending == nil {
			if n, _ := r.read(); n > 0 {
				s.fillFrom(r, false)
			}
		}
		if time.Now().After(r.closeAt) && r.start == r.end {
			r.close()
			continue
		}
		keep = append(keep, r)
	}
	s.old = keep
}

// Drain keeps acknowledging and committing until every published line is
// acknowledged or ctx is done (the shutdown bound).
func (s *Source) Drain(ctx context.Context) {
	if s.pending != nil {
		s.pending.Release()
		s.pending = nil
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
	if s.ptr != nil {
		if !s.commitOK.Load() {
			err = errors.New("final pointer commit failed")
		}
		if cerr := s.ptr.Close(); err == nil {
			err = cerr
		}
	}
	if s.cur != nil {
		s.cur.close()
	}
	for _, r := range append(s.next, s.old...) {
		r.close()
	}
	return err
}

func (s *Source) fail(err error) {
	s.log.Error("source failed", "error", err)
	s.setDetail(err.Error())
	s.setState(Failed)
}

func (s *Source) setState(st State) { s.state.Store(int32(st)) }

func (s *Source) setDetail(d string) { s.detail.Store(&d) }

func (s *Source) startWatch() {
	if s.cfg.NoNotify || s.cfg.Strategy.Bounded() {
		return
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		s.log.Warn("fsnotify unavailable; polling only", "error", err)
		return
	}
	if err := w.Add(filepath.Dir(s.cfg.Path)); err != nil {
		s.log.Warn("fsnotify watch failed; polling only", "error", err)
		w.Close()
		return
	}
	s.watcher = w
	name := filepath.Clean(s.cfg.Path)
	go func() {
		for {
			select {
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if filepath.Clean(ev.Name) == name {
					poke(s.events)
				}
			case _, ok := <-w.Errors:
				if !ok {
					return
				}
				poke(s.events) // events may have been lost: look
			}
		}
	}()
}

func (s *Source) stopWatch() {
	if s.watcher != nil {
		s.watcher.Close()
	}
}

func poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
