package file

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"tailfeed/internal/fileutil"
	"tailfeed/pointer"
)

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
	f, dev, ino, err := openStable(s.cfg.Path, s.cfg.OpenHook)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("open %s: %w", s.cfg.Path, err)
	}
	if s.ptr != nil && s.cfg.Strategy == Committed && s.resumeRotated(f, dev, ino) {
		if f != nil {
			s.queueNext(f, dev, ino)
		}
		return nil
	}
	if f == nil {
		s.missing, s.missingSince = true, time.Now()
		if s.cfg.Strategy.Bounded() {
			return fmt.Errorf("open %s: %w", s.cfg.Path, fs.ErrNotExist)
		}
		s.setState(WaitingForFile)
		return nil
	}
	return s.startFile(f, dev, ino)
}

// startFile makes f, opened at start-up, the current file, positioned per
// the read strategy.
func (s *Source) startFile(f *os.File, dev, ino uint64) error {
	r := newReader(f, dev, ino, s.bufSize(), s.cfg.MaxLine)
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	size := st.Size()
	r.lastSize, r.lastMod = size, st.ModTime()
	switch s.cfg.Strategy {
	case Committed:
		if err := s.checkPointer(r, size); err != nil {
			f.Close()
			return err
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
	s.setFile(r)
	s.missing = false
	return nil
}

// checkPointer validates the pointer against the file at the path (DESIGN
// §3) and positions r at the committed offset.
//
// The pointer's own file truncated or rewritten while stopped (its copy, if
// any, was looked for before: resumeRotated) with the pointer past 0 counts
// one lost tail, even after a clean stop: lines written after the stop may
// have been in the part that was cut (DESIGN §4 "Nothing green over a
// loss"). How many bytes is not known: lostBytes stays.
func (s *Source) checkPointer(r *reader, size int64) error {
	before := s.ptr.Record()
	v, err := s.ptr.Check(r.f, r.key, size)
	if err != nil {
		return err
	}
	rec := s.ptr.Record()
	r.epoch, s.ptrEpoch = rec.Epoch, rec.Epoch
	r.seek(rec.Offset)
	switch v {
	case pointer.Replaced, pointer.Truncated:
		if before.Offset > 0 && (v == pointer.Truncated || r.key == before.FileKey) && !s.lostTail {
			d := fmt.Sprintf("input %s was truncated or rewritten while stopped (%s, size %d, pointer offset %d) and no copy was found: "+
				"lines written after the last commit may be lost; reading it from its start under a new epoch",
				s.cfg.Path, v, size, before.Offset)
			s.lose(1, 0, before.Epoch, d)
			s.log.Warn(d, "path", s.cfg.Path, "epoch", fmt.Sprintf("%016x", before.Epoch))
			s.setDetail(d)
			s.lostTail = true
			break
		}
		s.setDetail(fmt.Sprintf("input %s at start: %s; reading it from its start under a new epoch", v, s.cfg.Path))
	case pointer.KeptNewKey:
		s.log.Warn("input has a new file key but the same content; keeping the pointer", "path", s.cfg.Path)
	}
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

// resumeRotated handles a restart after a rotation: the pointer names a
// file other than the one at the path (f, nil when the path is missing). It
// looks in the path's directory for the file with the pointer's key and
// fingerprint and, when found, makes it current at the pointer's offset
// (true); the caller queues f behind it. Found nowhere: a WARN, the
// lost-tail detail and lostTails + 1; false lets the ordinary open-time
// check decide about f.
func (s *Source) resumeRotated(f *os.File, dev, ino uint64) bool {
	rec := s.ptr.Record()
	if rec.FileKey == 0 && rec.FPLen == 0 {
		return false // no identity yet
	}
	if f != nil && pointer.FileKey(dev, ino) == rec.FileKey {
		// The same file; truncated or rewritten while stopped, it may have
		// left a copy holding the unread tail (copytruncate).
		if st, err := f.Stat(); err == nil && (st.Size() < rec.Offset || !fingerprintMatches(f, rec)) {
			if c, cdev, cino := s.findCopy(int(rec.FPLen), rec.FP, rec.Offset, time.Now(), func(d, i uint64) bool {
				return d == dev && i == ino
			}); c != nil {
				s.log.Warn("input was truncated or rewritten while stopped; reading its copy from the pointer first",
					"path", s.cfg.Path, "copy", c.Name(), "offset", rec.Offset)
				if !s.resumeFrom(c, cdev, cino, rec) {
					return false
				}
				s.cur.snapshot(s.cur.lastSize)
				return true
			}
		}
		return false // the ordinary open-time check applies
	}
	old, odev, oino := findByKey(filepath.Dir(s.cfg.Path), rec, &s.outs)
	if old != nil {
		if s.resumeFrom(old, odev, oino, rec) {
			return true
		}
	} else if f != nil && rec.FPLen > 0 && fingerprintMatches(f, rec) {
		return false // the same content under a new key: the check keeps it
	}
	s.lose(1, 0, rec.Epoch, lostTailDetail)
	s.log.Warn(lostTailDetail, "path", s.cfg.Path, "offset", rec.Offset, "fileKey", fmt.Sprintf("%016x", rec.FileKey))
	s.setDetail(lostTailDetail)
	s.lostTail = true
	return false
}

// resumeFrom makes the rotated file old current at the pointer's offset.
func (s *Source) resumeFrom(old *os.File, dev, ino uint64, rec pointer.Record) bool {
	st, err := old.Stat()
	if err != nil || st.Size() < rec.Offset {
		old.Close()
		return false
	}
	r := newReader(old, dev, ino, s.bufSize(), s.cfg.MaxLine)
	r.epoch, s.ptrEpoch = rec.Epoch, rec.Epoch
	r.seek(rec.Offset)
	r.lastSize, r.lastMod = st.Size(), st.ModTime()
	r.refreshFingerprint(st.Size())
	s.ptr.Bind(old, r.key)
	s.log.Info("input was rotated while stopped; reading the rotated file first", "file", old.Name(), "offset", rec.Offset)
	s.cur = r
	s.epoch.Store(r.epoch)
	s.setFile(r)
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

// findByKey looks in dir for the regular file with rec's file key and
// fingerprint (an inode number reused by another file does not match), not
// one of the daemon's own outputs.
func findByKey(dir string, rec pointer.Record, outs *outputs) (*os.File, uint64, uint64) {
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
		if err != nil || pointer.FileKey(dev, ino) != rec.FileKey || own.has(dir, e.Name(), dev, ino) {
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

// openAtPath tries to open a file that appeared at the path while none is
// open. It is new: a new epoch from 0, published once the previous epoch is
// acknowledged.
func (s *Source) openAtPath() bool {
	f, dev, ino, err := openStable(s.cfg.Path, s.cfg.OpenHook)
	if err != nil {
		if !s.missing {
			s.missing, s.missingSince = true, time.Now()
		}
		return false
	}
	if s.resumeKept(f, dev, ino) {
		return true
	}
	r := newReader(f, dev, ino, s.bufSize(), s.cfg.MaxLine)
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
	return true
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

// findCopy looks in the path's directory for the copy that copytruncate (or
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
	dir := filepath.Dir(s.cfg.Path)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, 0, 0
	}
	own := s.outs.scan(dir)
	rec := pointer.Record{FPLen: uint64(fpLen), FP: fp}
	var best *os.File
	var bdev, bino uint64
	var bmod time.Time
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil || info.Size() < max(size, int64(fpLen)) || info.ModTime().After(notAfter) ||
			(best != nil && !info.ModTime().After(bmod)) {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		dev, ino, err := fileutil.DevIno(f)
		if err != nil || skip(dev, ino) || own.has(dir, e.Name(), dev, ino) || !fingerprintMatches(f, rec) {
			f.Close()
			continue
		}
		if best != nil {
			best.Close()
		}
		best, bdev, bino, bmod = f, dev, ino, info.ModTime()
	}
	return best, bdev, bino
}
