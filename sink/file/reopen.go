package file

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"tailfeed/internal/fileutil"
)

// reopenEvery is how often a plain output's path is looked at (a stat per
// batch at most this often).
const reopenEvery = time.Second

// followFile marks a plain output (not exactlyOnce) that is a regular
// file: a cut of it by another program is noticed (noticeCut); opened by
// the default Open, it is also followed — an output renamed away
// (logrotate's `create`) or removed is not written on for ever: the next
// batch after the path is seen naming another file, or none, goes to the
// file at the path, created with the sink's mode. An exactlyOnce output is
// neither: its record is about the file it opened (README: never rename or
// truncate it).
func (s *Sink) followFile() {
	f, ok := s.f.(interface{ Stat() (os.FileInfo, error) })
	if !ok {
		return
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return
	}
	s.plain = true
	of, ok := s.f.(*os.File)
	if !ok || s.cfg.Open != nil {
		return
	}
	if s.dev, s.ino, err = fileutil.DevIno(of); err != nil {
		return
	}
	s.follow, s.checkedAt = true, time.Now()
}

// noticeCut takes a plain output found shorter than the sink wrote it
// (copytruncate, or another program's truncation) as it is now: its
// lengths are the file's, and bytes written but not synced yet are not
// written again (the cut took them; they are in the copy). Without it, a
// failed write's or fsync's clean-up would truncate the file up to the old
// length (NUL bytes) and write lines a second time.
func (s *Sink) noticeCut() {
	if !s.plain {
		return
	}
	f, ok := s.f.(interface{ Stat() (os.FileInfo, error) })
	if !ok {
		return
	}
	st, err := f.Stat()
	if err != nil || st.Size() >= s.size {
		return
	}
	if s.cfg.Logger != nil {
		s.cfg.Logger.Info("the output was truncated by another program (copytruncate?); writing on at its new end",
			"path", s.cfg.Path, "size", st.Size(), "written", s.size)
	}
	s.size, s.synced = st.Size(), st.Size()
	s.unsynced = s.unsynced[:0]
	s.broken = false
}

// reopenIfMoved reopens the output when its path no longer names the open
// file (at most one look per reopenEvery). Bytes written to the old file
// stay there, synced first under fsync always/interval; a failure keeps the
// old file (a WARN) and is tried again at the next look.
func (s *Sink) reopenIfMoved(ctx context.Context) {
	if !s.follow || time.Since(s.checkedAt) < reopenEvery {
		return
	}
	s.checkedAt = time.Now()
	dev, ino, err := fileutil.DevInoPath(s.cfg.Path)
	if err == nil && dev == s.dev && ino == s.ino {
		return
	}
	if err != nil && !os.IsNotExist(err) {
		return // cannot tell: write on
	}
	if s.cfg.Fsync == FsyncInterval {
		if err := s.Flush(ctx); err != nil {
			s.warn("the output was renamed or removed; its last lines are not synced yet, so it is written on until they are", err)
			return
		}
	}
	syncDir := s.cfg.SyncDir // set by Open
	if err := makeParents(s.cfg.Path, s.cfg.Fsync != FsyncNever, syncDir); err != nil {
		s.warn("the output was renamed or removed; cannot create its directory, writing on to the old file", err)
		return
	}
	nf, size, err := s.cfg.fifoOutput(openOutput(s.cfg.Path, s.cfg.Mode, s.cfg.Logger))
	_, fifo := nf.(*fifoOutput)
	if err == nil && s.cfg.Fsync != FsyncNever && !fifo {
		err = syncDir(filepath.Dir(s.cfg.Path))
	}
	var ndev, nino uint64
	if err == nil && !fifo {
		if f, ok := nf.(*os.File); ok {
			ndev, nino, err = fileutil.DevIno(f)
		}
	}
	if err != nil {
		if nf != nil {
			nf.Close()
		}
		s.warn("the output was renamed or removed; cannot open a new one at its path, writing on to the old file", err)
		return
	}
	// Under fsync always every line written is synced, under interval
	// the Flush above synced them: the old file has nothing pending.
	s.f.Close()
	s.f, s.size, s.synced, s.dev, s.ino = nf, size, size, ndev, nino
	if fifo {
		// Written like any FIFO output from now on (fifo.go): no sync,
		// no truncation, not followed.
		s.plain, s.follow = false, false
	}
	if s.cfg.Logger != nil {
		s.cfg.Logger.Info("the output was renamed or removed; writing to a new file at its path", "path", s.cfg.Path)
	}
}

func (s *Sink) warn(msg string, err error) {
	if s.cfg.Logger != nil {
		s.cfg.Logger.Warn(msg, "path", s.cfg.Path, "error", err)
	}
}
