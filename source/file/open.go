package file

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"tailfeed/internal/fileutil"
	"tailfeed/pointer"
)

// CatchUp tells a source, before Run, that the daemon committed its
// pointer back to an older epoch's file for a restored sink (DESIGN §11 "A
// restored sink is caught up from the input"; internal/catchup decides):
// the restart path reads the rest of that generation, every later one, then
// the file at the path. Should that generation be gone, its tail is counted
// with Detail (naming the sink and the generation) and LostBytes (the
// epoch's bytes known to be missing from the sink), and the later
// generations are those modified since Since (when the pointer started
// that epoch) less the usual slack — not since the pointer file's mtime,
// which is the backward commit's.
//
// Known are the epochs file's lines: a file read after that generation
// whose identity (file key and first bytes, DESIGN §4) a line names is read
// under that line's epoch again, not a new one, so that the sinks that
// hold its lines skip them (AlreadyApplied) instead of receiving them as
// new ones — the current file is read again "up to the pointer" under the
// pointer's epoch. The latest line naming a file wins; an epoch is taken
// once per run. A .gz or copytruncate copy (a new key) is mapped by its
// (decompressed) first bytes to an epoch the pointer left (knownEpoch). A
// file read again under a pointer epoch stops that epoch where it ended
// when its late lines were downgraded (the epochs file's "downgraded"
// line) and delivers them under the epoch they had, without a position
// (splitDowngraded), so every (epoch, position) is the first delivery's.
//
// Later are the generations after the catch-up's own up to the pointer's
// file (the pointer's record before the backward commit last), Who the
// catch-up for the detail: one that is not on disk any more, or was
// truncated or rewritten while stopped, is counted lost (checkLater).
type CatchUp struct {
	Epoch     uint64
	Since     time.Time
	Detail    string
	LostBytes uint64
	Known     []pointer.EpochLine
	Later     []LaterGen
	Who       string

	used         map[uint64]bool
	laterChecked bool
	laterFound   map[uint64]bool // Later epochs checkLater found on disk, whole (at least End bytes, first bytes matching)
}

// SetCatchUp records c for the open at Run (call before Run).
func (s *Source) SetCatchUp(c CatchUp) {
	c.used = map[uint64]bool{c.Epoch: true}
	s.catchUp = &c
}

// knownEpoch is the epoch a catch-up reads r under again (see CatchUp),
// 0 for a new one.
//
// A file the epochs file names by its key and first bytes is that line's
// epoch (the latest line naming it, not taken yet). Otherwise a file whose
// first bytes alone match an epoch that the pointer was moved off (those
// the line naming it recorded, and the longer ones the record had grown to
// when the pointer left it, the moving line's previousFingerprint) — a
// logrotate `compress` generation (a new file key; its decompressed bytes
// are the fingerprint's, DESIGN §4) or a copytruncate copy (a new key, the
// old epoch's content) — and that holds at least that epoch's bytes (its
// end, the moving line's previousOffset) is that epoch's file: its lines
// were first delivered under that epoch, and are read under it again, so
// that (epoch, position) names the same line for every sink (a postgres
// inbox keeps one row). Only epochs first named after the catch-up's own
// generation are candidates (generations are read oldest first), and an
// epoch is taken once per run; first bytes shared by two generations (a
// fixed header longer than the recorded fingerprint) can map a file to the
// wrong one of them — the README names this.
func (s *Source) knownEpoch(r *reader) uint64 {
	c := s.catchUp
	if c == nil || r.f == nil || !r.positioned {
		return 0
	}
	matches := func(n, fp uint64) bool {
		if r.gz != nil {
			return headMatches(r.head, n, fp)
		}
		return n > 0 && fingerprintMatches(r.f, pointer.Record{FPLen: n, FP: fp})
	}
	if r.gz == nil {
		for i := len(c.Known) - 1; i >= 0; i-- {
			l := c.Known[i]
			if l.FileKey != r.key || (l.FileKey == 0 && l.FPLen == 0) || c.used[l.Epoch] {
				continue
			}
			if !fingerprintMatches(r.f, pointer.Record{FPLen: l.FPLen, FP: l.FP}) {
				continue
			}
			c.used[l.Epoch] = true
			return l.Epoch
		}
	}
	first := -1                             // the catch-up generation's first line
	moved := map[uint64]pointer.EpochLine{} // epoch → the first line moving the pointer off it
	for i, l := range c.Known {
		if first < 0 && l.Epoch == c.Epoch {
			first = i
		}
		if _, ok := moved[l.PrevEpoch]; !ok && l.PrevEpoch != 0 && l.PrevEpoch != l.Epoch {
			moved[l.PrevEpoch] = l
		}
	}
	if first < 0 {
		return 0
	}
	size := r.limit
	if r.gz == nil {
		st, err := r.f.Stat()
		if err != nil {
			return 0
		}
		size = st.Size()
	}
	seen := map[uint64]bool{}
	for i := len(c.Known) - 1; i > first; i-- {
		l := c.Known[i]
		if seen[l.Epoch] {
			continue // an older line of an epoch: the latest names its file
		}
		seen[l.Epoch] = true
		m, ok := moved[l.Epoch]
		if c.used[l.Epoch] || !ok || l.FPLen == 0 || size < m.PrevOffset || !matches(l.FPLen, l.FP) {
			continue
		}
		if m.PrevFPLen > l.FPLen && !matches(m.PrevFPLen, m.PrevFP) {
			continue // the record's longer fingerprint when it left the epoch differs
		}
		if o := slices.IndexFunc(c.Known, func(k pointer.EpochLine) bool { return k.Epoch == l.Epoch }); o <= first {
			continue // named before the catch-up's generation: an earlier file
		}
		c.used[l.Epoch] = true
		return l.Epoch
	}
	return 0
}

// lostTailDetail is the feed's detail after a restart that found the rotated
// file of the pointer gone.
const lostTailDetail = "rotated file gone; its unread tail is lost"

// open opens the input at start, per the read strategy.
func (s *Source) open() error {
	if s.ptr != nil {
		s.ptrEpoch = s.ptr.Record().Epoch
		s.epoch.Store(s.ptrEpoch)
		if s.ptr.Fresh() && s.ptr.FreshReason() != "new pointer file" {
			s.setDetail("pointer file reset: " + s.ptr.FreshReason())
		}
	} else {
		s.epoch.Store(pointer.NewEpoch())
	}
	at := s.cfg.Path
	if s.cfg.ownAt != "" {
		at = s.cfg.ownAt // its own file, renamed out beside the path before its turn
	}
	f, dev, ino, err := openStable(at, s.cfg.OpenHook)
	if err == nil && s.cfg.Pinned && (s.cfg.ownGone || (s.cfg.PinKey != 0 && pointer.FileKey(dev, ino) != s.cfg.PinKey)) {
		// Another file took the path: a stream of its own reads it.
		f.Close()
		f, err = nil, fs.ErrNotExist
	}
	if !s.cfg.Strategy.Bounded() && err != nil && !errors.Is(err, fs.ErrNotExist) {
		// Not a regular file, one that cannot be opened (FAILED until a
		// readable regular file is there), or a path that kept changing
		// while it was opened: retried at every look, no file open, never
		// a reason to stop for good.
		if !s.pathErr(err) {
			s.log.Warn("input path kept changing while it was opened; trying again", "path", s.cfg.Path, "error", err)
		}
		f, err = nil, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("open %s: %w", s.cfg.Path, err)
	}
	if !s.cfg.Strategy.Bounded() {
		defer s.noteSeen() // the generations present at open are never read while running
	}
	if s.ptr != nil && s.cfg.Strategy == Committed && s.resumeRotated(f, dev, ino) {
		if f != nil {
			s.queueNext(f, dev, ino)
			s.rotatedBeforeOpen()
		}
		return nil
	}
	if s.resumeMoved(f, dev, ino) {
		if f != nil {
			s.queueNext(f, dev, ino)
		}
		return nil
	}
	if f == nil {
		s.notFound = s.cfg.Pinned && !s.lostTail && !s.heldGone
		s.missing, s.missingSince = true, time.Now()
		if s.cfg.Strategy.Bounded() {
			return fmt.Errorf("open %s: %w", s.cfg.Path, fs.ErrNotExist)
		}
		s.setState(WaitingForFile)
		return nil
	}
	return s.startFile(f, dev, ino)
}

// rotatedBeforeOpen runs when the source opened on the pointer's file
// beside the path with the path's file queued behind it (rotated while
// stopped, or while a glob stream waited for its turn): the writer went on
// to the new file before this open, so rotateWait — the time it gets to
// finish with a rotated file before an empty next file is switched to —
// runs from each file's last write (its mtime when opened), not from the
// open. Counted from the open, a glob stream started again for each turn
// and stopped within rotateWait (two such streams taking turns in one
// slot) never switched to its empty new file: BEHIND for good, never
// settled (audit 7 C, eighteenth session).
func (s *Source) rotatedBeforeOpen() {
	var last time.Time
	for _, r := range append([]*reader{s.cur}, s.next[:len(s.next)-1]...) {
		if r == nil || r.lastMod.IsZero() {
			continue
		}
		if r.lastMod.Before(r.grewAt) {
			r.grewAt = r.lastMod
		}
		if r.lastMod.After(last) {
			last = r.lastMod
		}
	}
	if nx := s.next[len(s.next)-1]; !last.IsZero() && last.Before(nx.queuedAt) {
		nx.queuedAt = last
	}
}

// startFile makes f, opened at start-up, the current file, positioned per
// the read strategy.
func (s *Source) startFile(f *os.File, dev, ino uint64) error {
	r := s.newReader(f, dev, ino)
	// The first bytes and the size of one content; a cut after them is
	// seen at the first read (openCheck) and its copy read from where the
	// position below stands in the content they describe.
	head, st, err := r.headStat(s.cfg.StartHook)
	if err != nil {
		r.close()
		return err
	}
	size := st.Size()
	if s.cfg.StartHook != nil {
		s.cfg.StartHook("opened")
	}
	resumed := false // LATEST on from a reload's resume point
	switch s.cfg.Strategy {
	case Committed:
		if err := s.checkPointer(r, size, head); err != nil {
			r.close()
			return err
		}
	case Earliest, OnceEarliest:
		r.epoch = pointer.NewEpoch()
		if s.cfg.Strategy == OnceEarliest {
			r.limit = size
			if s.cfg.OnceLimit > 0 && s.cfg.OnceLimit < size {
				r.limit = s.cfg.OnceLimit
			}
		}
		if c := s.cfg.Resume; s.resumes(c, r, size, head) {
			// A glob stream reopened without a pointer: on from where
			// its last source stopped (the same content), in its epoch.
			r.epoch = c.Epoch
			r.seek(c.Offset)
			r.split.setLong(c.InLong)
			if s.cfg.Strategy == OnceEarliest && (c.Limit > 0 || c.HeadLen == 0) {
				r.limit = c.Limit // its size when first opened (0: it was empty)
				if c.Past > 0 {
					r.onceTerm = c.Limit - c.Past
				}
			}
		} else if c != nil && s.cfg.ResumeUnread > 0 {
			// Rewritten or cut while its stream waited, after the glob
			// saw bytes past where its last source stopped: those bytes
			// are gone unread (DESIGN §4 Nothing green over a loss).
			d := fmt.Sprintf("glob file %s was rewritten or truncated while its stream waited: its %d bytes from offset %d were never read",
				s.cfg.Path, s.cfg.ResumeUnread, c.Offset)
			s.lose(1, uint64(s.cfg.ResumeUnread), c.Epoch, d)
			s.log.Warn(d, "path", s.cfg.Path)
			s.setDetail(d)
		}
		if s.cfg.Strategy == OnceEarliest {
			r.onceEnd() // read only to just after the last terminator (§4)
		}
	case Latest:
		if c := s.cfg.Resume; s.resumes(c, r, size, head) {
			resumed = true
			// A feed restarted by a reload: on from where its previous
			// instance stopped in the same file, in its epoch (the lines
			// appended meanwhile are delivered).
			r.epoch = c.Epoch
			r.seek(c.Offset)
			r.split.setLong(c.InLong)
			break
		}
		r.epoch = pointer.NewEpoch()
		if c := s.cfg.Resume; c != nil && c.Waiting {
			// Its previous instance waited for the file: it appeared
			// meanwhile, read from its start (as openAtPath would).
			s.log.Info("input file appeared while the feed restarted; reading it from its start under a new epoch", "path", s.cfg.Path)
			r.seek(0)
			break
		}
		end := size
		if s.cfg.HasEndAt && s.cfg.EndAt <= size {
			end = s.cfg.EndAt // the end as the glob found it at its start
			if s.cfg.EndHeadLen > 0 && !headOf(head, f, s.cfg.EndHeadLen, s.cfg.EndHead) {
				end = 0 // rewritten since the start: all of it is new
			}
		}
		at, long := lastLineStart(f, end, s.cfg.MaxLine)
		r.seek(at)
		r.split.setLong(long)
	case OnceLatest:
		r.epoch = pointer.NewEpoch()
		r.limit = size
		r.seek(size)
	}
	r.from = r.consumed()
	if s.cfg.Strategy != Committed && s.cfg.Strategy != Earliest && !(s.cfg.Strategy == Latest && resumed) {
		// LATEST's position is found by reading the file's last bytes
		// (unless resumed), a once-read's end likewise: a cut since
		// headStat is not told apart there, and its copy would be read
		// from a position taken in the new content (review 42 R2-1, R2-6).
		// Their first bytes are taken after the position, as before
		// headStat.
		r.fpLen, r.fp, r.openCheck = 0, 0, false
		if _, err := r.refreshFingerprint(size); err != nil {
			s.log.Warn("reading the fingerprint failed", "error", err)
		}
	}
	s.cur = r
	s.epoch.Store(r.epoch)
	s.setFile(r)
	s.missing = false
	return nil
}

// resumes: c (Config.Resume) is where a source stopped in the file r
// opened, of size now: the same file (its key, when c has one) holding at
// least c.Offset bytes whose first bytes are still those read. A file that
// was empty when it was left (no first bytes to tell it by) is the same
// only by its key, at offset 0 (LATEST: what was appended since its
// previous instance let it go is delivered).
func (s *Source) resumes(c *Resume, r *reader, size int64, head []byte) bool {
	if c == nil || c.Offset > size || (c.Key != 0 && c.Key != r.key) {
		return false
	}
	if c.HeadLen == 0 {
		// ONCE_EARLIEST: a once-read of a file empty at open (Limit 0)
		// stays finished at 0.
		return c.Key != 0 && c.Offset == 0 && (s.cfg.Strategy == Latest || (s.cfg.Strategy == OnceEarliest && c.Limit == 0))
	}
	return headOf(head, r.f, c.HeadLen, c.Head)
}

// headOf is headIs judged by head, the file's first bytes as headStat took
// them, where it holds n bytes (f read otherwise).
func headOf(head []byte, f *os.File, n int, fp uint64) bool {
	if len(head) >= n {
		return pointer.Fingerprint(head[:n]) == fp
	}
	return headIs(f, n, fp)
}

// resumeMoved handles the open of a feed restarted by a reload without a
// pointer (EARLIEST, LATEST; not a glob stream) whose resume point
// (Config.Resume) names a file other than the one at the path (f, nil when
// the path is missing; or one with its key that is not its content: a
// reused inode, a cut or rewritten file): the file was rotated (or
// replaced) while the previous instance read it. As a restart finds a pointer's generation (resumeRotated), the
// file with the resume point's key and first bytes is looked for beside
// the path: found, it is read first from the resume point, in its epoch,
// and true (the caller queues f behind it, read from its start). Not found,
// its bytes past the resume point that the previous instance saw (End) are
// counted lost (DESIGN §4 Nothing green over a loss), and false: the
// strategy's normal start. (Generations rotated in between are not looked
// for: the previous instance had queued at most the path's file.)
func (s *Source) resumeMoved(f *os.File, dev, ino uint64) bool {
	c := s.cfg.Resume
	if s.ptr != nil || s.cfg.Pinned || c == nil || c.Key == 0 || (s.cfg.Strategy != Earliest && s.cfg.Strategy != Latest) {
		return false
	}
	if f != nil && pointer.FileKey(dev, ino) == c.Key {
		st, err := f.Stat()
		if err != nil || c.HeadLen == 0 || (st.Size() >= c.Offset && headIs(f, c.HeadLen, c.Head)) {
			return false // the same file: startFile resumes it
		}
		// Its key reused by another file, or the file cut or rewritten:
		// what was unread in it is gone (counted below).
	}
	rec := pointer.Record{Epoch: c.Epoch, Offset: c.Offset, FileKey: c.Key, FPLen: uint64(c.HeadLen), FP: c.Head}
	atPath := func(d, i uint64) bool { return f != nil && d == dev && i == ino }
	if old, odev, oino := s.findByKey(rec, atPath); old != nil {
		if g := s.resumeAt(old, odev, oino, rec); g != nil {
			g.split.setLong(c.InLong)
			g.from = g.consumed()
			s.log.Info("input was rotated while the feed restarted; reading its previous file first from where it stopped",
				"file", g.f.Name(), "offset", c.Offset)
			s.cur = g
			s.epoch.Store(g.epoch)
			s.setFile(g)
			return true
		}
	}
	if c.End > c.Offset {
		d := fmt.Sprintf("input %s was rotated or replaced while the feed restarted and its previous file was not found beside it: its %d bytes from offset %d were never read",
			s.cfg.Path, c.End-c.Offset, c.Offset)
		s.lose(1, uint64(c.End-c.Offset), c.Epoch, d)
		s.log.Warn(d, "path", s.cfg.Path)
		s.setDetail(d)
		s.lostTail = true
	}
	return false
}

// checkPointer validates the pointer against the file at the path (DESIGN
// §3) and positions r at the committed offset.
//
// The pointer's own file truncated or rewritten while stopped (its copy, if
// any, was looked for before: resumeRotated) with the pointer past 0 counts
// one lost tail, even after a clean stop: lines written after the stop may
// have been in the part that was cut (DESIGN §4 "Nothing green over a
// loss"). How many bytes is not known: lostBytes stays.
func (s *Source) checkPointer(r *reader, size int64, head []byte) error {
	counted := false
	if rec := s.ptr.Record(); s.adoptedGone(rec) && rec.FileKey != r.key {
		// A glob stream given a gone file's pointer at the start, its file
		// not found beside the path (resumeRotated counted it): the file at
		// the path is a new key, a new stream read from its start (DESIGN
		// §10), even with the same first bytes (a shared header).
		epoch := pointer.NewEpoch()
		s.log.Info("a new file at the path of a file gone while stopped: reading it from its start under a new epoch",
			"path", s.cfg.Path, "old_epoch", hex16(rec.Epoch), "new_epoch", hex16(epoch))
		if err := s.ptr.ResetAs("replaced", epoch, r.f, r.key); err != nil {
			return err
		}
	}
	if rec := s.ptr.Record(); s.catchUp != nil && s.catchUp.Epoch == rec.Epoch && rec.FileKey != r.key {
		// A catch-up from an older epoch whose file is gone (counted by
		// resumeRotated) and no later generation beside the path: the
		// file at the path is the one the epochs file names for a later
		// epoch (the pointer's own, say). It is read again from its start
		// under that epoch, not a new one, so that (epoch, position) names
		// the same line for every sink (DESIGN §11: the others skip what
		// they hold through AlreadyApplied; a postgres inbox keeps one row).
		// Only a generation checkLater found whole by the first bytes the
		// pointer grew and with at least the bytes the sinks lack: a file
		// truncated or rewritten in place keeps its key and may share the
		// epochs line's short fingerprint (an empty file's, or a header's),
		// and read under the old epoch its new lines would be skipped as
		// held — a loss; a new epoch costs duplicates at most.
		if e := s.knownEpoch(r); e != 0 && e != rec.Epoch && s.catchUp.laterFound[e] {
			s.log.Info("catch-up: the older generation is gone; reading the file at the path under the epoch it was read under before",
				"path", s.cfg.Path, "epoch", hex16(e))
			if err := s.ptr.Reset(e, r.f, r.key); err != nil {
				return err
			}
			r.epoch = e
			s.splitDowngraded(r)
		}
	}
	if rec := s.ptr.Record(); rec.FileKey == 0 && rec.FPLen == 0 && rec.Offset == 0 && rec.Epoch != 0 && !s.ptr.Fresh() {
		// Never committed, its epoch adopted before (the epochs file names
		// the file its lines were published from): a file at the path
		// with other first bytes (rewritten in place, or another file)
		// is not read under that epoch — (epoch, position) would name
		// other lines than the ones published, and a subscriber's skip of
		// what it finished (a reload, a processor added back) would pass
		// over the new ones unseen. A glob stream started again in this
		// process asks its previous source's first bytes, not the epochs
		// file (one read of it per reopened stream would make a glob of
		// thousands of files quadratic).
		var n, fp uint64
		if s.cfg.Pinned && s.cfg.prevSource {
			n, fp = s.cfg.prevHeadLen, s.cfg.prevHead
		} else if l, ok := s.ptr.Named(rec.Epoch); ok {
			n, fp = l.FPLen, l.FP
		}
		if n > 0 && (size < int64(n) || !headIs(r.f, int(n), fp)) {
			epoch := pointer.NewEpoch()
			s.log.Info("the file at the path is not the one the pointer's epoch was adopted for (other first bytes, nothing committed): reading it from its start under a new epoch",
				"path", s.cfg.Path, "old_epoch", hex16(rec.Epoch), "new_epoch", hex16(epoch))
			if err := s.ptr.ResetAs("replaced", epoch, r.f, r.key); err != nil {
				return err
			}
		}
	}
	v, err := checkIdentityHead(s.ptr, r.f, head, r.key, size, s.log, func(v Verdict, before pointer.Record) {
		// Counted before the Reset (S3): the ledger entry is fsynced while
		// the pointer still names the cut file.
		if before.Offset > 0 && (v == Truncated || r.key == before.FileKey) && !s.lostTail && !s.cutNoted && !s.heldGone {
			d := fmt.Sprintf("input %s was truncated or rewritten while stopped (%s, size %d, pointer offset %d) and no copy was found: "+
				"lines written after the last commit may be lost; reading it from its start under a new epoch",
				s.cfg.Path, v, size, before.Offset)
			s.lose(1, 0, before.Epoch, d)
			s.log.Warn(d, "path", s.cfg.Path, "epoch", fmt.Sprintf("%016x", before.Epoch))
			s.setDetail(d)
			s.lostTail = true
			counted = true
		}
	})
	if err != nil {
		return err
	}
	rec := s.ptr.Record()
	r.epoch, s.ptrEpoch = rec.Epoch, rec.Epoch
	r.seek(rec.Offset)
	r.committedMid()
	switch v {
	case Replaced, Truncated:
		if !counted {
			s.setDetail(fmt.Sprintf("input %s at start: %s; reading it from its start under a new epoch", v, s.cfg.Path))
		}
	case KeptNewKey:
		s.log.Warn("input has a new file key but the same content; keeping the pointer", "path", s.cfg.Path)
		// Stored under the new key at once (the same offset) and msynced
		// by the commit loop, retried like any commit until it holds, so
		// the feed is not settled before: else a stop before the next
		// commit leaves the record naming the old key — a copy a glob's
		// start gave the pointer, with nothing new to read, would be taken
		// for a new file at the next start and read again.
		s.store(rec.Offset, s.syncedSeq.Load())
		s.dirty.Store(true)
	}
	return nil
}

// latestScan bounds lastLineStart's scan for the start of the line being
// written (a file without a terminator in its last 64 MiB, or maxLineBytes
// + 1 when that is more: see there).
const latestScan = 64 << 20

// lastLineStart is where LATEST starts: at the start of the line being
// written at size (just after the last terminator before it), so that line
// is delivered whole; when it is already longer than maxLine, at the start
// of its last piece (inLong: a reader from the line's start would have
// delivered the pieces before it), so what follows is the pieces a reader
// from its start would deliver, never a piece cut elsewhere or an empty
// one. A '\r' as the last byte may be the first half of "\r\n": not taken
// as a terminator. A line begun more than latestScan (or maxLine + 1)
// bytes back, so longer than maxLine, is taken up at its last known byte,
// as a piece: what follows is delivered as that line's last pieces, none
// empty (their cuts are not where a reader from its start would make them).
func lastLineStart(f *os.File, size int64, maxLine int) (at int64, inLong bool) {
	hi := size
	if hi == 0 {
		return 0, false
	}
	var b [1]byte
	if _, err := f.ReadAt(b[:], hi-1); err != nil {
		return size, false
	}
	if b[0] == '\r' {
		hi--
	}
	if hi == 0 {
		return 0, false
	}
	lo := max(0, hi-max(latestScan, int64(maxLine)+1))
	ls, err := lastTermEnd(f, lo, hi)
	if err != nil {
		return size, false
	}
	if ls == lo && lo > 0 {
		if _, err := f.ReadAt(b[:], lo-1); err != nil || (b[0] != '\n' && b[0] != '\r') {
			return hi - 1, true
		}
	}
	m := int64(max(maxLine, 1))
	if hi-ls <= m {
		return ls, false
	}
	// The line's known bytes are more than one piece: a reader from ls
	// cuts a piece each time more than m bytes lie unterminated after
	// the last cut, so the last cut is at the largest ls+j·m below hi.
	at = ls + (hi-ls-1)/m*m
	return at, at > ls
}

// adoptedGone: the source's stream was given a gone file's pointer at a
// glob's start (Config.GlobMatched) and rec still names that file.
func (s *Source) adoptedGone(rec pointer.Record) bool {
	return s.cfg.GlobMatched != nil && rec.FileKey != 0 && rec.FileKey == s.cfg.GoneKey
}

// resumeRotated handles a restart after a rotation: the pointer names a
// file other than the one at the path (f, nil when the path is missing), or
// the path's file was truncated or rewritten while stopped. It finds the
// pointer's generation (DESIGN §4): the file with the pointer's key and
// fingerprint, else a copy or a .gz matching the fingerprint alone, beside
// the path and beside a symlink's final target, and makes it current at the
// pointer's offset. Then every later generation modified since (the
// reference: the pointer's generation's mtime, or the pointer file's when it
// is gone) is queued, oldest first, each to be read from its start under a
// new epoch; true then, and the caller queues f behind them. Not found: a
// WARN, the lost-tail detail and lostTails + 1. False when there is nothing
// to read before f: the ordinary open-time check decides about f.
func (s *Source) resumeRotated(f *os.File, dev, ino uint64) bool {
	rec := s.ptr.Record()
	var unnamed pointer.Record // the record as read, when completed from an epochs line without first bytes
	var named pointer.Record   // that record completed
	deferLost := false         // its file not found by key: lost only if no generation is beside the path
	if rec.FileKey == 0 && rec.FPLen == 0 && rec.Epoch != 0 && !s.ptr.Fresh() && !s.cfg.Pinned {
		// (Not a glob stream's: its empty record reopened reads no epochs
		// file — one per stream made a glob of 1,000 new files quadratic.
		// A single-file feed reads it once per start, with or without a
		// file at the path: its input may be rotated with no new file yet.)
		// An epoch and no file: killed after the file was adopted (its
		// epochs line written, lines published under the epoch) and before
		// the first commit stored the identity. The epochs file names the
		// file: it is the pointer's generation (read from the offset under
		// the epoch, so exactlyOnce sinks skip what they hold), not a later
		// generation read again under a new epoch.
		if l, ok := s.ptr.Named(rec.Epoch); ok {
			if l.FPLen == 0 {
				unnamed = rec // adopted while empty: no first bytes to find a copy or a .gz by
			}
			rec.FileKey, rec.FPLen, rec.FP = l.FileKey, l.FPLen, l.FP
			s.log.Info("pointer names no file yet; its epoch's file from the epochs file", "epoch", hex16(rec.Epoch), "fileKey", hex16(rec.FileKey))
		}
	}
	var bornBy time.Time // a file found by the key born after it is another (inode reuse)
	gone0 := false       // a glob pointer bound while its file was empty, given at the start
	if rec.FileKey == 0 && rec.FPLen == 0 && rec.Offset == 0 && rec.Epoch != 0 && s.cfg.Pinned &&
		s.cfg.GlobMatched != nil && s.cfg.GoneKey != 0 && rec.Epoch == s.cfg.GoneEpoch && !s.ptr.Fresh() {
		// A glob stream given, at the start, the pointer of a gone file
		// its stream bound while nothing of it was committed
		// (adoptByPath): the record names no file; the glob took the key
		// from the epochs line, which holds its first bytes if it had
		// any. That file found beside the path (renamed, or a copy or a
		// .gz of it by its first bytes) is read from the pointer's offset
		// under its epoch (exactlyOnce sinks skip what they hold of it),
		// not counted gone (DESIGN §4 "Restart after rotation"). Not
		// found, it is counted lost as before and the file at the path is
		// read under a new epoch.
		rec.FileKey = s.cfg.GoneKey
		if l, ok := s.ptr.Named(rec.Epoch); ok && l.FileKey == rec.FileKey {
			rec.FPLen, rec.FP = l.FPLen, l.FP
		}
		gone0 = true
	}
	if rec.FileKey == 0 && rec.FPLen == 0 && rec.Offset == 0 && rec.Epoch != 0 && s.cfg.Pinned && !gone0 &&
		s.cfg.globFiles != nil && !s.cfg.prevSource && f != nil && !s.ptr.Fresh() {
		// A glob stream at the start given, by its file's key and first
		// bytes, the pointer of its previous run that published lines
		// and never committed (killed first): its file cut or rewritten
		// in place between the glob's look and this open (copytruncate
		// while tailfeed starts). Its epochs line names the file's first
		// bytes: a copy holding them is the pointer's file, read from its
		// start under the epoch (the sinks skip what they hold of it);
		// none, the lines never read are lost, counted (below, as for a
		// single-file feed: audit 10E). Before, checkPointer took the file
		// at the path for another one and read it under a new epoch, and
		// the copy's unread lines were lost uncounted (stop 46's CI,
		// TestRev39NeverCommittedCopyTruncatedReadsTheCopy). Only when
		// the first bytes differ: an unchanged file keeps the ordinary
		// path (the epochs file is read once more for such a record, at
		// the start only).
		if l, ok := s.ptr.Named(rec.Epoch); ok && l.FPLen > 0 && l.FileKey == pointer.FileKey(dev, ino) && !s.globCopyHolds(l, pointer.FileKey(dev, ino)) {
			if st, err := f.Stat(); err == nil && (st.Size() < int64(l.FPLen) || !headIs(f, int(l.FPLen), l.FP)) {
				rec.FileKey, rec.FPLen, rec.FP = l.FileKey, l.FPLen, l.FP
				// Its copy is not a file the glob matches: one sharing
				// only a header with it (the first bytes the epochs line
				// names may be no more) is a stream of its own (review
				// 39 finding 3; adoptCopies' rule, review 29c).
				s.noGlobCopies = true
				defer func() { s.noGlobCopies = false }()
			}
		}
	}
	if s.adoptedGone(rec) && rec.FPLen == 0 {
		// No first bytes to tell the pointer's file from another on its
		// inode: it existed before its pointer took it, so one born after
		// the pointer file was last written is another file.
		bornBy = s.ptrModTime()
		if m := s.cfg.held; m.Found && m.Epoch == rec.Epoch && m.Key == rec.FileKey && m.End == rec.Offset && m.At.After(bornBy) {
			// Unless the glob's held mark for the record, written later,
			// found it (voidLoadedHeld: a file of its key beside the path
			// born before the mark — the mark moved on to the files its
			// key named, remarkHeld) and so names nothing: bounded by the
			// pointer file, that file was taken for another and the
			// record's tail counted lost over nothing lost (an idle
			// application's empty files rotated in turn on reused inodes:
			// CI's TestRev30BOKManyHeldRestart). Read from the record's
			// offset — 0, no first bytes — it loses nothing either way.
			bornBy = m.At
		}
	}
	adopted := s.adoptedGone(rec)
	s.resuming = adopted
	defer func() { s.resuming = false }()
	atPath := func(d, i uint64) bool { return f != nil && d == dev && i == ino }
	var g *reader // the pointer's generation, positioned at the offset
	var ref time.Time
	byKey := false // g is the pointer's own file (not a copy of it)
	lost := false  // the pointer's unread tail was counted lost here
	switch {
	case rec.FileKey == 0 && rec.FPLen == 0:
		// No identity: nothing of a file is pending. A pointer that was
		// used before (not fresh) still has later generations to read —
		// except a glob stream's (Pinned): it reads its own file only, the
		// files beside it are the glob's (streams of their own, or not
		// matched), and its empty record was never committed (closed
		// before its first commit) or names a forgotten file.
		if s.ptr.Fresh() || rec.Offset != 0 || s.cfg.Pinned {
			return false
		}
	case f != nil && pointer.FileKey(dev, ino) == rec.FileKey && !bornLater(f, bornBy):
		st, err := f.Stat()
		if err != nil || (st.Size() >= rec.Offset && fingerprintMatches(f, rec)) {
			s.checkLater(rec, f, dev, ino, nil, nil)
			return false // the pointer's file, unchanged: the ordinary check
		}
		// Truncated or rewritten while stopped: a copy may hold the unread
		// tail (copytruncate), plain or compressed.
		g = s.copyAt(rec, atPath)
		if g != nil {
			s.log.Warn("input was truncated or rewritten while stopped; reading its copy from the pointer first",
				"path", s.cfg.Path, "copy", g.f.Name(), "offset", rec.Offset)
		} else if rec.Offset > 0 && s.cfg.cutSeen {
			// A glob stream's file the glob saw cut or rewritten while the
			// stream was closed, in this run: a live truncation (DESIGN
			// §4), whose loss is what the glob had seen past the pointer
			// (cutUnread); lines written and cut between two looks are
			// not known.
			s.cutNoted = true
			if n := s.cfg.cutUnread; n > 0 {
				d := fmt.Sprintf("glob file %s was truncated or rewritten while its stream was closed and no copy was found: its %d bytes from offset %d were never read",
					s.cfg.Path, n, rec.Offset)
				s.lose(1, uint64(n), rec.Epoch, d)
				s.log.Warn(d, "path", s.cfg.Path)
				s.setDetail(d)
				s.lostTail = true
			} else {
				s.log.Info("glob file truncated or rewritten while its stream was closed, read to where it was seen last; reading it from its start under a new epoch",
					"path", s.cfg.Path, "offset", rec.Offset)
			}
		} else if rec.Offset > 0 || rec.FPLen > 0 {
			// (Offset 0 with first bytes: never committed, its file
			// adopted with content or its first bytes stored before its
			// first line — those bytes and what followed them were never
			// acknowledged, and no copy holds them: audit 10E. Also for a
			// glob stream's later source in the run, the cut seen live or
			// not: what the glob saw past its read position does not tell
			// a batch read and dropped unpublished at its stop, review
			// 29b.)
			s.loseTail(rec, fmt.Sprintf("input %s was truncated or rewritten while stopped (pointer offset %d) and no copy was found: "+
				"lines written after the last commit may be lost; reading it from its start under a new epoch", s.cfg.Path, rec.Offset))
		}
	default:
		if old, odev, oino := s.findByKey(rec, atPath); old != nil && !bornAfter(old, bornBy) {
			g = s.resumeAt(old, odev, oino, rec)
			byKey = g != nil
		} else if f != nil && !adopted && rec.FPLen > 0 && fingerprintMatches(f, rec) {
			// (Not for a glob stream given a gone file's pointer at the
			// start: the file at its path is a new key, so a new stream,
			// read from its start — DESIGN §10 "any other new key is a new
			// stream" — however its first bytes look.)
			if st, err := f.Stat(); err == nil && st.Size() >= rec.Offset {
				s.checkLater(rec, f, dev, ino, nil, nil)
				return false // the same content under a new key: the check keeps it
			}
		}
		if g == nil {
			// No file with its key: a copy holding its bytes (moved across
			// file systems, cp + rm), plain or compressed.
			g = s.copyAt(rec, atPath)
		}
		if g == nil && s.cfg.Pinned && !s.cfg.PinGone && f == nil {
			// Not beside its path: the glob looks for it in the whole
			// glob (NotFound) before anything is counted. With the
			// stream's own file at its path (f, PinKey) the pointer names
			// another file — the copy its last source read (readCopy's
			// Bind), or the file a previous run's stream read there
			// (adoptByPath) — that is not beside the path: gone with its
			// unread tail, counted below (the glob tracks no other file
			// of this pointer to look for).
			return false
		}
		if g == nil && unnamed.Epoch != 0 {
			// Its file was adopted while empty and is not found by its key:
			// compressed (a .gz has another key) or copied, nothing tells
			// which generation it is. Read the generations beside the path
			// as the record without a file would (duplicates, never a gap);
			// a lost tail only when there is none.
			named = rec
			rec, deferLost = unnamed, true
		} else if g == nil {
			s.loseTail(rec, lostTailDetail)
			lost = true
		}
	}
	if lost && (gone0 || !bornBy.IsZero()) && !s.heldGone {
		// A glob pointer with no first bytes whose file is not beside the
		// path: counted (as countGone did before the file at the path took
		// it) and moved to a new epoch, so the file at the path is read
		// under its own — not adopted into the lost file's epoch, where an
		// exactlyOnce sink holding that file's lines would skip its first
		// bytes. The files beside the path are not read: nothing tells a
		// later generation from an older file or a copy of it read before.
		s.forgetLost(rec)
		return false
	}
	// (Held, heldGone: the pointer's file was read to its end and closed
	// before the stop, the files beside the path written since are its
	// later generations — the empty file it was kept for, written to
	// while tailfeed was down and rotated: read, by the pointer file's
	// mtime, review 19a D.)
	var born time.Time
	if g != nil {
		s.log.Info("input was rotated while stopped; reading the pointer's file first", "file", g.f.Name(), "offset", rec.Offset)
		g.epoch, s.ptrEpoch = rec.Epoch, rec.Epoch
		s.splitDowngraded(g)
		ref = g.lastMod
		if g.gz == nil {
			if st, err := g.f.Stat(); err == nil {
				ref = st.ModTime()
			}
		}
		if byKey {
			// A later generation was created after the pointer's own file.
			// (A copy or a .gz of it is created later than the generations
			// after it may be: no such bound then.)
			born = birthTime(g.f)
		}
	} else {
		ref = s.ptrModTime()
		if c := s.catchUp; c != nil && c.Epoch == rec.Epoch && !c.Since.IsZero() {
			ref = c.Since // the pointer file's mtime is the catch-up's backward commit
		}
	}
	gens := s.scanGenerations(ref, born, func(d, i uint64) bool {
		return atPath(d, i) || (g != nil && d == g.dev && i == g.ino)
	}, func(head []byte) bool {
		// The pointer's generation compressed while its plain file is read.
		return g != nil && g.gz == nil && int64(g.fpLen) == int64(len(head)) && headMatches(head, uint64(g.fpLen), g.fp)
	})
	if len(s.cfg.prevCopies) > 0 && len(gens) > 0 {
		// A copy an earlier source of this glob stream read (its key and
		// first bytes), or its compressed twin (logrotate's compress of a
		// copytruncate copy: a new key, its first bytes and size): read
		// already, no later generation.
		gens = slices.DeleteFunc(gens, func(gf genFile) bool {
			if gf.gz {
				return s.prevCopyGz(gf.head, gf.dsize)
			}
			return s.prevCopy(gf)
		})
	}
	if len(s.cfg.prevGens) > 0 && len(gens) > 0 {
		// A file an earlier source of this glob stream switched away from
		// (read to its end, then another after it), not grown since: read
		// already, no later generation.
		gens = slices.DeleteFunc(gens, func(gf genFile) bool { return !gf.gz && s.prevGen(gf) })
	}
	if m := s.cfg.GlobMatched; adopted && len(gens) > 0 {
		// The glob reads them as streams of their own (restartOrder
		// publishes them before this one): not here too.
		// Nor a file it tracks as another stream out of the glob (a
		// stream followed beside the path: review 21b J).
		gens = slices.DeleteFunc(gens, func(gf genFile) bool {
			return m(gf.path) || (!gf.gz && s.cfg.otherKeys[pointer.FileKey(gf.dev, gf.ino)])
		})
	}
	if len(gens) > 0 {
		// (Only with a generation to drop: it reads the whole epochs file.)
		// Also for a record naming a file: the file the pointer moved off
		// to it is no later generation of it (review 22b F: the older
		// generation, within mtimeSlack, was read again from its start).
		gens = s.dropForgotten(rec, gens)
		if g != nil {
			gens = s.dropLeftGzOlder(rec, g.f.Name(), gens)
		} else if s.heldGone {
			gens = s.dropLeftGzOlder(rec, s.heldNextAt(), gens)
		}
	}
	if deferLost && len(gens) == 0 {
		// No generation beside the path: the adopted file is gone.
		rec = named
		s.loseTail(rec, lostTailDetail)
		lost = true
	}
	s.checkLater(rec, f, dev, ino, g, gens)
	if g == nil && len(gens) == 0 {
		if lost && (f == nil || unnamed.Epoch != 0) {
			// (A file at the path with a record that names no file would
			// be adopted into the lost file's epoch: an exactlyOnce sink
			// holding that file's lines would skip its first bytes.)
			s.forgetLost(rec)
		}
		return false
	}
	if g == nil {
		// The first later generation starts a new epoch, behind the barrier
		// (the pointer is Reset before its first line is published).
		for len(gens) > 0 && g == nil {
			if g = s.openGen(gens[0]); g == nil {
				s.genUnread(gens[0])
			}
			gens = gens[1:]
		}
		if g == nil {
			return false
		}
		g.epoch = pointer.NewEpoch()
		s.barrier = true
		s.log.Info("reading a later generation of the input first", "file", g.f.Name())
	} else if !g.evidence {
		s.ptr.Bind(g.headSrc(), g.key)
	}
	s.cur = g
	s.epoch.Store(g.epoch)
	s.setFile(g)
	s.queueGens(gens)
	return true
}

// globCopyHolds: beside the path, a file the glob matches under a name
// logrotate gives the path's copies (copyNamedStrict: app.log.1 for a
// pattern app.log*), not the stream's own (key own), begins with the first
// bytes l names: the copy is a glob stream of its own, read from its start
// there — not this source's copy (review 39b finding 3: excluded from the
// copy search, the cut was counted lost and the copy read twice). Only for
// a never-committed record's cut file at the start (resumeRotated).
func (s *Source) globCopyHolds(l pointer.EpochLine, own uint64) bool {
	if s.cfg.globFiles == nil {
		return false
	}
	for _, gd := range s.genDirs() {
		ents, err := os.ReadDir(gd.dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			p := filepath.Join(gd.dir, e.Name())
			if !e.Type().IsRegular() || !copyNamedStrict(e.Name(), gd.base) || !s.cfg.globFiles(p) {
				continue
			}
			f, err := fileutil.OpenRegular(p)
			if err != nil {
				continue
			}
			dev, ino, derr := fileutil.DevIno(f)
			held := derr == nil && pointer.FileKey(dev, ino) != own && headIs(f, int(l.FPLen), l.FP)
			f.Close()
			if held {
				return true
			}
		}
	}
	return false
}

// copyAt is a copy of rec's file (findCopy, else a compressed one:
// findGzCopy) positioned at rec's offset, recorded as taken (tookCopy);
// nil when there is none. skip rejects identities (the file at the path).
func (s *Source) copyAt(rec pointer.Record, skip func(dev, ino uint64) bool) *reader {
	if c, dev, ino := s.findCopy(int(rec.FPLen), rec.FP, rec.Offset, time.Now(), skip); c != nil {
		if g := s.resumeAt(c, dev, ino, rec); g != nil {
			g.snapshot(g.lastSize)
			s.tookCopy(g.key, rec.Epoch, g.fpLen, g.fp, g.lastSize, birthTime(g.f))
			return g
		}
	}
	if g := s.findGzCopy(rec, skip); g != nil {
		s.tookCopy(g.key, rec.Epoch, g.fpLen, g.fp, g.limit, birthTime(g.f))
		return g
	}
	return nil
}

// prevCopy: the plain generation gf is a copy an earlier source of this
// glob stream took — its key, and its first bytes where they were
// recorded: a later file given the inode of a taken copy since deleted
// (logrotate's compress) is not that copy, and is read.
func (s *Source) prevCopy(gf genFile) bool {
	key := pointer.FileKey(gf.dev, gf.ino)
	var head []byte
	return slices.ContainsFunc(s.cfg.prevCopies, func(c CopyTaken) bool {
		if c.Key != key {
			return false
		}
		if c.HeadLen == 0 {
			return true
		}
		if head == nil {
			h, err := readHead(gf.path)
			if err != nil {
				return true // unreadable: it is not read as a generation either
			}
			head = h
		}
		return headMatches(head, uint64(c.HeadLen), c.Head)
	})
}

// prevGen: the plain generation gf is a file an earlier source of this glob
// stream switched away from — its key and first bytes — no longer now than
// where its lines ended then.
func (s *Source) prevGen(gf genFile) bool {
	key := pointer.FileKey(gf.dev, gf.ino)
	var head []byte
	return slices.ContainsFunc(s.cfg.prevGens, func(g GenDone) bool {
		if g.Key != key || gf.found > g.End {
			return false
		}
		if head == nil {
			h, err := readHead(gf.path)
			if err != nil {
				return false // unreadable: the scan's own rules decide
			}
			head = h
		}
		return headMatches(head, uint64(g.FPLen), g.FP)
	})
}

// prevCopyGz: a compressed file whose decompressed first bytes are head
// and size dsize holds a copy an earlier source of this glob stream took.
func (s *Source) prevCopyGz(head []byte, dsize int64) bool {
	return slices.ContainsFunc(s.cfg.prevCopies, func(c CopyTaken) bool {
		return c.HeadLen > 0 && c.Size > 0 && c.Size == dsize && headMatches(head, uint64(c.HeadLen), c.Head)
	})
}

// loseTail counts the pointer's unread tail as lost (DESIGN §4): WARN, the
// detail (kept until the next restart) and lostTails + 1.
func (s *Source) loseTail(rec pointer.Record, detail string) {
	if s.cfg.held.names(rec) {
		// Read to its end and closed with every line committed in an
		// earlier run, nothing of it pending since (DESIGN §4: not a
		// lost tail), or counted at this start already (heldMark.Counted);
		// forgetLost moves the pointer off it as forgotten.
		s.heldGone = true
		s.log.Info("the pointer's file is not found as it was; nothing of it was pending, or its loss was counted at this start",
			"path", s.cfg.Path, "offset", rec.Offset, "fileKey", hex16(rec.FileKey))
		return
	}
	var bytes uint64
	if c := s.catchUp; c != nil && c.Epoch == rec.Epoch {
		detail, bytes = c.Detail, c.LostBytes
	} else if s.cfg.cutSeen && s.cfg.cutUnread > 0 {
		// A glob stream's file the glob saw cut in place, then gone: what
		// its looks saw unread before the cut is known lost.
		bytes = uint64(s.cfg.cutUnread)
	} else if t := s.cfg.genTail; t.Key != 0 && t.Key == rec.FileKey && t.Epoch == rec.Epoch && t.Size > rec.Offset {
		// The generation an earlier source of this glob stream was
		// reading when it closed (preempted), gone since: its size then
		// is known (review 15a A).
		bytes = uint64(t.Size - rec.Offset)
	}
	s.lose(1, bytes, rec.Epoch, detail)
	s.dropTornOf(rec)
	s.log.Warn(detail, "path", s.cfg.Path, "offset", rec.Offset, "fileKey", fmt.Sprintf("%016x", rec.FileKey))
	s.setDetail(detail)
	s.lostTail = true
}

// dropForgotten leaves out of gens, found at start, the file the record's
// epoch moved the pointer off (its epochs line names it): for an empty
// record (ref: the pointer file's mtime, the moment it was emptied) the
// file it was emptied for; for a record naming a file, the file read and
// committed to its end before it (a Reset at the epoch barrier), which is
// older, never a later generation of it, though within mtimeSlack (review
// 22b F) — that file by its key only (a later generation may share its
// first bytes: review 22c A, B). For an empty record: a file forgotten once every line of it was
// committed (or one whose tail was counted lost) that was compressed or
// copied under a generation's name within mtimeSlack of the Reset is not a
// later generation (D1: read again from its start after a clean stop). It
// is recognised by the epochs file's line for the record's epoch, which
// names the file left (its first bytes' fingerprint and its end): a
// generation whose (decompressed) first bytes match that fingerprint and
// whose size is at most that end is that file, or a prefix of it. One that
// is longer (lines appended after it was forgotten, delivered downgraded)
// is read again from its start: duplicates, never a gap. No epochs file, or
// no such line: every generation is read (duplicates).
func (s *Source) dropForgotten(rec pointer.Record, gens []genFile) []genFile {
	left, ok := s.ptr.Left(rec.Epoch)
	if !ok || left.PrevFPLen == 0 {
		return gens
	}
	empty := rec.FileKey == 0 && rec.FPLen == 0
	if !empty && left.PrevFileKey == 0 {
		return gens
	}
	return slices.DeleteFunc(gens, func(g genFile) bool {
		if !empty && (g.gz || pointer.FileKey(g.dev, g.ino) != left.PrevFileKey) {
			// A record naming a file: only the file left itself (its
			// key, renamed on), never another generation that shares
			// its first bytes (review 22c A, B: a later file with the
			// same first 4 KiB, or the same content, was dropped unread).
			return false
		}
		head, size, tail := g.head, g.dsize, knownTail(g.last)
		if !g.gz {
			f, err := fileutil.OpenRegular(g.path)
			if err != nil {
				return false
			}
			defer f.Close()
			if dev, ino, err := fileutil.DevIno(f); err != nil || dev != g.dev || ino != g.ino {
				return false // another file at its name by now: kept (read; at worst a duplicate)
			}
			st, serr := f.Stat()
			b, herr := readHeadAt(f)
			if serr != nil || herr != nil {
				return false
			}
			head, size, tail = b, st.Size(), fileTail(f, st.Size())
		}
		if (size > left.PrevOffset && !endsAfterLine(size, left.PrevOffset, tail)) || !headMatches(head, left.PrevFPLen, left.PrevFP) {
			return false
		}
		s.log.Info("a generation is the file the pointer forgot (every line of it committed); not read again",
			"file", g.path, "end", left.PrevOffset)
		return true
	})
}

// dropLeftGzOlder drops from gens a compressed generation that holds
// exactly the file the pointer's epoch moved it off (its first bytes, its
// size the committed end: every line of it committed), last modified no
// later than the pointer moved off it (the epochs line's time: no byte of
// it was written after — its late lines read, the switch made) and made
// after it (its compression; birth times known), and named
// older than name: the pointer's generation found beside the path
// (logrotate's numbers — app.log.2.gz before app.log.1 — or dates,
// compared only between names of one kind), or, the record's file gone
// and held (nothing of it pending), where the empty file its glob kept it
// for is now (heldNextAt; at the path, every rotated name is older); name
// "" (that file gone too): no later generation was written before the
// pointer left the file. That .gz is the file read already, compressed with
// its mtime kept after the pointer left it (delaycompress): read again
// whole, as a later generation within DESIGN §4's 2 s of the reference or
// after it (a late line written to it after its successor was made, review
// 31b), it delivered every line of it twice, exactlyOnce sinks too (its
// epoch was new), at a restart whose pointer still named a file after it —
// a kill or a stop within rotateWait of a single-file feed's rotation, or a
// glob's held record (thirty-first session). One modified after the
// pointer left that file (a later generation with the same lines, review
// 31a: a job's log written again, a scheme where a higher number is newer,
// a copytruncate's copy of lines written while tailfeed was down; or a
// compressor that gives the .gz a new mtime: a duplicate) is read.
func (s *Source) dropLeftGzOlder(rec pointer.Record, name string, gens []genFile) []genFile {
	left, ok := s.ptr.Left(rec.Epoch)
	if !ok || left.PrevFPLen == 0 || left.PrevOffset <= 0 || left.Time.IsZero() {
		return gens
	}
	var gr rank
	ranked, atPath := false, name == ""
	for _, gd := range s.genDirs() {
		if name == "" {
			break
		}
		switch {
		case filepath.Dir(name) != gd.dir:
			continue
		case filepath.Base(name) == gd.base:
			atPath = true
		case s.rotatedName(filepath.Base(name), gd.base):
			gr, ranked = rankOf(filepath.Base(name), gd.base), true
		default:
			continue
		}
		break
	}
	if !ranked && !atPath {
		return gens
	}
	return slices.DeleteFunc(gens, func(x genFile) bool {
		if !x.gz || x.mod.After(left.Time) || x.dsize != left.PrevOffset || !headMatches(x.head, left.PrevFPLen, left.PrevFP) {
			return false
		}
		if b := birthTimePath(x.path); b.IsZero() || !b.After(left.Time) {
			// Made before the pointer moved off that file (or not
			// known): not its compression after the move — a later
			// generation written while tailfeed was down, the move made
			// at a start (review 31c: dropped unread under a scheme
			// where a higher number is newer).
			return false
		}
		if ranked && ((x.rank.date == "") != (gr.date == "") || !x.rank.before(gr)) {
			return false
		}
		s.log.Info("a compressed generation named before the pointer's file holds the file the pointer moved off it, unchanged since (every line of it committed); not read again",
			"file", x.path, "before", name, "end", left.PrevOffset)
		return true
	})
}

// heldNextAt names where the empty file the glob's held mark for the
// record was kept for (heldMark.Next) is now — at the path or beside it,
// found by its key and born before the mark (one born after it is another
// file on its inode); "" when it is not found.
func (s *Source) heldNextAt() string {
	m := s.cfg.held
	if m.Next == 0 {
		return ""
	}
	f, _, _ := s.findByKey(pointer.Record{FileKey: m.Next}, func(uint64, uint64) bool { return false })
	if f == nil {
		return ""
	}
	defer f.Close()
	if bornLater(f, m.At) {
		return ""
	}
	return f.Name()
}

// awaitTornPointerGen runs before open: when the pointer's generation is,
// by its decompressed first bytes, a .gz that does not end cleanly and has
// no plain twin (a compressor still writing it, the plain file already
// unlinked), the source waits for it (state STARTING: not settled) until it
// ends cleanly, is gone, stops growing for max(rotateWait, tornWait), or
// the run is stopped. Opening at once would count the pointer's unread tail
// lost although it is about to be on disk (S1: a false alarm, then the
// .gz read anyway), and moving the pointer on before it is read would leave
// it to no restart.
func (s *Source) awaitTornPointerGen(ctx context.Context) {
	if s.ptr == nil || s.cfg.Strategy != Committed {
		return
	}
	rec := s.ptr.Record()
	if rec.FPLen == 0 || s.ptr.Fresh() {
		return
	}
	if dev, ino, err := fileutil.DevInoPath(s.cfg.Path); err == nil && pointer.FileKey(dev, ino) == rec.FileKey {
		if st, err := os.Stat(s.cfg.Path); err == nil && st.Size() >= rec.Offset {
			return // the pointer's file is at the path (open checks its first bytes)
		}
	}
	torn := func() (string, int64) {
		for _, gd := range s.genDirs() {
			ents, err := os.ReadDir(gd.dir)
			if err != nil {
				continue
			}
			for _, e := range ents {
				name := e.Name()
				if !e.Type().IsRegular() || !strings.HasSuffix(name, ".gz") || !s.rotatedName(name, gd.base) {
					continue
				}
				p := filepath.Join(gd.dir, name)
				if s.twinReadInstead(p, nil) {
					continue // its plain twin is read
				}
				if dev, ino, err := fileutil.DevInoPath(strings.TrimSuffix(p, ".gz")); err == nil && pointer.FileKey(dev, ino) == rec.FileKey {
					// The pointer's own file beside it (found by its key):
					// read from there, whatever the .gz turns out to be
					// (review 25f B: waited for as if the tail were only in
					// it).
					continue
				}
				st, err := os.Stat(p)
				if err != nil {
					continue
				}
				// Its first bytes are the pointer's, or too few of them are
				// written yet to tell (then only while it is fresh: a torn
				// .gz left for long is not waited for).
				head, ok := gzHead(p)
				short := !ok || uint64(len(head)) < rec.FPLen
				if short && time.Since(st.ModTime()) >= max(s.cfg.RotateWait, tornWait) {
					continue
				}
				if !short && !headMatches(head, rec.FPLen, rec.FP) {
					continue
				}
				if _, _, ok := inspectGz(p); ok {
					continue
				}
				return p, st.Size()
			}
		}
		return "", 0
	}
	p, size := torn()
	if p == "" {
		return
	}
	s.log.Info("the pointer's file is a compressed generation still being written; waiting for it before opening", "file", p)
	grew := time.Now()
	poll := s.cfg.Poll
	if poll <= 0 {
		poll = 250 * time.Millisecond
	}
	for time.Since(grew) < max(s.cfg.RotateWait, tornWait) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(poll):
		}
		np, nsize := torn()
		if np == "" {
			return
		}
		if np != p || nsize != size {
			p, size, grew = np, nsize, time.Now()
		}
	}
	s.log.Warn("the pointer's compressed generation stayed torn; opening without it", "file", p)
}

// dropTornOf forgets the torn .gz generations whose decompressed first
// bytes are rec's: the pointer's generation whose tail was just counted
// lost (loseTail) is not counted a second time once it stays torn.
func (s *Source) dropTornOf(rec pointer.Record) {
	s.torn = slices.DeleteFunc(s.torn, func(g genFile) bool {
		head, ok := gzHead(g.path)
		return ok && headMatches(head, rec.FPLen, rec.FP)
	})
	s.tornN.Store(int32(len(s.torn)))
}

// forgetLost moves the pointer off a file whose unread tail was just
// counted lost (loseTail) when nothing else is opened at start (no file at
// the path, no generation to read): a Reset to the empty record under a new
// epoch, its epochs line "lost" naming the record left. Otherwise the next
// restart finds the same record, cannot find its file either, and counts the
// same tail again (a second ledger entry; a loss the operator acknowledged
// coming back). The loss is counted first (OnLoss returns once the ledger
// entry is fsynced): a kill -9 between the two counts it again at the next
// start, never not at all. A file opened instead moves the pointer off by
// its own Reset (checkIdentity's "replaced", or the barrier's).
func (s *Source) forgetLost(rec pointer.Record) {
	next := pointer.NewEpoch()
	reason := "lost"
	if s.heldGone {
		reason = "forgotten" // nothing of it was pending (Config.held)
	}
	if err := s.ptr.ResetAs(reason, next, nil, 0); err != nil {
		s.commitFailures.Add(1)
		s.log.Error("pointer reset after a lost tail failed; the next restart may count it again", "error", err)
	}
	s.ptrEpoch = next
	s.epoch.Store(next)
	s.log.Info("the pointer records that nothing of the lost file is pending", "path", s.cfg.Path,
		"lostEpoch", fmt.Sprintf("%016x", rec.Epoch), "epoch", fmt.Sprintf("%016x", next))
}

// bornLater: f was born after t (both known).
func bornLater(f *os.File, t time.Time) bool {
	if t.IsZero() {
		return false
	}
	b := birthTime(f)
	return !b.IsZero() && b.After(t)
}

// bornAfter is bornLater, f closed when true.
func bornAfter(f *os.File, t time.Time) bool {
	if bornLater(f, t) {
		f.Close()
		return true
	}
	return false
}

// resumeAt makes a reader of the rotated file old at the pointer's offset,
// under the pointer's epoch; nil (old closed) when it is shorter.
func (s *Source) resumeAt(old *os.File, dev, ino uint64, rec pointer.Record) *reader {
	st, err := old.Stat()
	if err != nil || st.Size() < rec.Offset {
		old.Close()
		return nil
	}
	r := s.newReader(old, dev, ino)
	r.epoch, s.ptrEpoch = rec.Epoch, rec.Epoch
	r.seek(rec.Offset)
	r.committedMid()
	r.lastSize, r.lastMod = st.Size(), st.ModTime()
	r.refreshFingerprint(st.Size())
	return r
}

func fingerprintMatches(f *os.File, rec pointer.Record) bool {
	if rec.FPLen == 0 {
		return true
	}
	b := make([]byte, rec.FPLen)
	n, _ := f.ReadAt(b, 0)
	return uint64(n) == rec.FPLen && pointer.Fingerprint(b) == rec.FP
}

// findByKey looks beside the input (and beside a symlink's final target)
// for the regular file with rec's file key and fingerprint (an inode number
// reused by another file does not match), not one of the daemon's own
// outputs nor rejected by skip.
func (s *Source) findByKey(rec pointer.Record, skip func(dev, ino uint64) bool) (*os.File, uint64, uint64) {
	for _, gd := range s.genDirs() {
		if f, dev, ino := findByKeyIn(gd.dir, rec, &s.outs, skip); f != nil {
			return f, dev, ino
		}
	}
	return nil, 0, 0
}

func findByKeyIn(dir string, rec pointer.Record, outs *outputs, skip func(dev, ino uint64) bool) (*os.File, uint64, uint64) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, 0, 0
	}
	own := outs.scan(dir)
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		dev, ino, err := fileutil.DevInoPath(p)
		if err != nil || pointer.FileKey(dev, ino) != rec.FileKey || own.has(dir, e.Name(), dev, ino) || skip(dev, ino) {
			continue
		}
		f, err := fileutil.OpenRegular(p)
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

// openAtPath tries to open a file that appeared at the path while none is
// open. It is new: a new epoch from 0, published once the previous epoch is
// acknowledged.
func (s *Source) openAtPath() bool {
	f, dev, ino, err := openStable(s.cfg.Path, s.cfg.OpenHook)
	if err != nil {
		s.pathErr(err)
		if !s.missing {
			s.missing, s.missingSince = true, time.Now()
		}
		return false
	}
	s.pathFine(pathRegular)
	if s.resumeKept(f, dev, ino) {
		return true
	}
	r := s.newReader(f, dev, ino)
	if st, err := f.Stat(); err == nil {
		r.lastSize, r.lastMod = st.Size(), st.ModTime()
	}
	r.epoch = pointer.NewEpoch()
	s.log.Info("input file appeared; reading it from its start under a new epoch", "path", s.cfg.Path)
	s.cur, s.barrier, s.missing = r, true, false
	s.forget = nil // the barrier's Reset moves the pointer off the deleted file
	s.forgetDue.Store(false)
	s.forgetOwed = false // and finishes an owed Reset to the empty record
	s.setFile(r)
	s.generationsBefore(r)
	return true
}

// generationsBefore runs when a file appeared at the path while none was
// open (cur is that file, just opened): generations the source never saw
// (written and rotated while it had no file open) are read first, each under
// a new epoch; the path's file is queued behind them.
func (s *Source) generationsBefore(r *reader) {
	if s.genSeen == nil {
		return
	}
	gens := s.scanGenerations(time.Time{}, time.Time{}, func(d, i uint64) bool {
		_, ok := s.genSeen[[2]uint64{d, i}]
		return ok || (d == r.dev && i == r.ino)
	}, func(head []byte) bool {
		for _, sg := range s.genSeen {
			if (sg.fpLen == uint64(len(head)) || sg.fpLen == pointer.MaxFingerprint) && headMatches(head, sg.fpLen, sg.fp) {
				return true
			}
		}
		return false
	})
	var first *reader
	for len(gens) > 0 && first == nil {
		if first = s.openGen(gens[0]); first == nil {
			s.genUnread(gens[0])
		}
		gens = gens[1:]
	}
	if first == nil {
		s.noteSeen()
		return
	}
	s.log.Warn("generations the source never saw are on disk; reading them before the file at the path",
		"path", s.cfg.Path, "first", first.f.Name())
	first.epoch = pointer.NewEpoch()
	s.cur = first
	s.setFile(first)
	s.queueGens(gens)
	r.queuedAt = time.Now()
	s.next = append(s.next, r)
	s.watchAll.Store(true)
	s.noteSeen()
}

// resumeKept makes the file that holds the pointer, left when the path
// stayed missing (leave) and still watched, current again when the path
// names it once more (renamed back): it goes on at its position under the
// pointer's epoch, instead of being read again from 0 under a new one.
func (s *Source) resumeKept(f *os.File, dev, ino uint64) bool {
	for i, o := range s.old {
		if o.dev != dev || o.ino != ino || !o.positioned || s.ptr == nil || o.epoch != s.ptrEpoch {
			continue
		}
		f.Close()
		s.old = slices.Delete(s.old, i, i+1)
		s.log.Info("input file is back at the path; going on at its position", "path", s.cfg.Path,
			"position", o.consumed())
		s.cur, s.missing = o, false
		s.epoch.Store(o.epoch)
		s.setFile(o)
		return true
	}
	return false
}

// findCopy looks beside the path (and beside a symlinked path's final
// target, DESIGN §4 "Symlinks") for the copy that copytruncate (or
// cp before a truncate) left of a file: a regular file with an identity skip
// does not reject, not one of the daemon's own outputs, at least size bytes
// long, modified no later than notAfter (when the truncation was noticed: a
// copy is complete before the truncate, so a file written after that is not
// a snapshot of the old content), whose first fpLen bytes hash to fp. The
// most recently modified one wins. fpLen 0 identifies nothing.
func (s *Source) findCopy(fpLen int, fp uint64, size int64, notAfter time.Time, skip func(dev, ino uint64) bool) (*os.File, uint64, uint64) {
	if fpLen <= 0 {
		return nil, 0, 0
	}
	rec := pointer.Record{FPLen: uint64(fpLen), FP: fp}
	return s.findCopyBy(notAfter, skip, func(n int64) bool { return n >= max(size, int64(fpLen)) },
		func(f *os.File, _ int64) bool { return fingerprintMatches(f, rec) })
}

// findShortCopy looks, as findCopy does, for a copy of r's file that holds
// nothing r's stream had not consumed: shorter than consumed (a snapshot
// taken before the source read on), at least as long as r's fingerprint
// and matching it. A file shorter than the fingerprint is never taken for
// a copy: a few first bytes (a header line) are no proof.
func (s *Source) findShortCopy(r *reader, consumed int64, notAfter time.Time) (key uint64, size int64, ok bool) {
	if r.fpLen <= 0 || consumed <= int64(r.fpLen) {
		return 0, 0, false
	}
	rec := pointer.Record{FPLen: uint64(r.fpLen), FP: r.fp}
	f, dev, ino := s.findCopyBy(notAfter, s.known, func(n int64) bool { return n >= int64(r.fpLen) && n < consumed },
		func(f *os.File, _ int64) bool { return fingerprintMatches(f, rec) })
	if f == nil {
		return 0, 0, false
	}
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	f.Close()
	return pointer.FileKey(dev, ino), size, true
}

// findCopyBy is findCopy's search: sizeOK and match say which files are
// copies; the most recently modified one wins.
func (s *Source) findCopyBy(notAfter time.Time, skip func(dev, ino uint64) bool, sizeOK func(int64) bool, match func(*os.File, int64) bool) (*os.File, uint64, uint64) {
	var best *os.File
	var bdev, bino uint64
	var bmod time.Time
	for _, gd := range s.genDirs() {
		dir := gd.dir
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		own := s.outs.scan(dir)
		for _, e := range ents {
			if !e.Type().IsRegular() {
				continue
			}
			info, err := e.Info()
			if err != nil || !sizeOK(info.Size()) || info.ModTime().After(notAfter) ||
				(best != nil && !info.ModTime().After(bmod)) {
				continue
			}
			if (s.resuming && s.cfg.GlobMatched(filepath.Join(dir, e.Name()))) || (s.noGlobCopies && s.cfg.globFiles(filepath.Join(dir, e.Name()))) {
				continue // a stream of the glob's own (read there, from its start or adopted)
			}
			f, err := fileutil.OpenRegular(filepath.Join(dir, e.Name()))
			if err != nil {
				continue
			}
			dev, ino, err := fileutil.DevIno(f)
			if err != nil || skip(dev, ino) || (best != nil && dev == bdev && ino == bino) ||
				own.has(dir, e.Name(), dev, ino) || !match(f, info.Size()) {
				f.Close()
				continue
			}
			if best != nil {
				best.Close()
			}
			best, bdev, bino, bmod = f, dev, ino, info.ModTime()
		}
	}
	return best, bdev, bino
}
