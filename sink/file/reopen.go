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

// followFile turns on the reopen of a plain output (not exactlyOnce, the
// default Open) that is a regular file: an output renamed away (logrotate's
// `create`) or removed is not written on for ever — the next batch after
// the path is seen naming another file, or none, goes to the file at the
// path, created with the sink's mode. An exactlyOnce output is not: its
// record is about the file it opened (README: never rename it).
func (s *Sink) followFile() {
	f, ok := s.f.(*os.File)
	if !ok {
		return
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return
	}
	if s.dev, s.ino, err = fileutil.DevIno(f); err != nil {
		return
	}
	s.follow, s.checkedAt = true, time.Now()
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
	syncDir := s.cfg.SyncDir
	if syncDir == nil {
		syncDir = fileutil.SyncDir
	}
	if err := makeParents(s.cfg.Path, s.cfg.Fsync != FsyncNever, syncDir); err != nil {
		s.warn("the output was renamed or removed; cannot create its directory, writing on to the old file", err)
		return
	}
	nf, size, err := openOutput(s.cfg.Path, s.cfg.Mode, s.cfg.Logger)
	if err == nil && s.cfg.Fsync != FsyncNever {
		err = syncDir(filepath.Dir(s.cfg.Path))
	}
	var ndev, nino uint64
	if err == nil {
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
	if s.cfg.Logger != nil {
		s.cfg.Logger.Info("the output was renamed or removed; writing to a new file at its path", "path", s.cfg.Path)
	}
}

func (s *Sink) warn(msg string, err error) {
	if s.cfg.Logger != nil {
		s.cfg.Logger.Warn(msg, "path", s.cfg.Path, "error", err)
	}
}
