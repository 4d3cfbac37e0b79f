package file

import (
	"errors"
	"io/fs"
	"os"
	"syscall"

	"tailfeed/internal/fileutil"
)

// A path that is, or becomes, anything but a regular file (a directory, a
// FIFO, a socket, a device, a symlink loop) is never opened for reading
// (DESIGN §12 "Validation"): it is looked at with stat first, and opened
// only non-blocking, so a FIFO can never block the source (nor its stop).
// The source is then FAILED with the reason in its detail, logged once per
// reason; it keeps reading a file it has open (a rotation may have left it
// there) and leaves FAILED by itself once the path names a regular file, or
// nothing (then it waits for one, WAITING_FOR_FILE).

// badPathError says why the path is not read.
type badPathError struct {
	path, why string
}

func (e *badPathError) Error() string {
	return "input path " + e.path + " " + e.why + "; it is not read until a regular file is there"
}

// statInput stats the path, following symlinks: the identity of the
// regular file it names; an error matching fs.ErrNotExist when it names
// nothing; otherwise a *badPathError.
func statInput(path string) (dev, ino uint64, err error) {
	dev, ino, typ, err := fileutil.StatPath(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, 0, err
		}
		var errno syscall.Errno
		switch {
		case errors.As(err, &errno) && errno == syscall.ELOOP:
			return 0, 0, &badPathError{path, "cannot be resolved: too many levels of symbolic links (a symlink loop)"}
		case errors.As(err, &errno):
			return 0, 0, &badPathError{path, "cannot be looked at: " + errno.Error()}
		}
		return 0, 0, &badPathError{path, "cannot be looked at: " + err.Error()}
	}
	if typ.IsRegular() {
		return dev, ino, nil
	}
	return 0, 0, &badPathError{path, "is " + kindOf(typ) + ", not a regular file"}
}

// kindOf names a non-regular file type.
func kindOf(t fs.FileMode) string {
	switch {
	case t&fs.ModeDir != 0:
		return "a directory"
	case t&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeCharDevice != 0:
		return "a character device"
	case t&fs.ModeDevice != 0:
		return "a block device"
	}
	return "of another kind (" + t.String() + ")"
}

// pathBad records that the path names no regular file: FAILED with the
// reason in the detail (over any other), logged once per reason.
func (s *Source) pathBad(err error) {
	msg := err.Error()
	if s.badPath == msg {
		return
	}
	if s.badPath == "" {
		s.detailBeforeBad = s.detail.Load()
	}
	s.badPath = msg
	s.log.Error(msg, "path", s.cfg.Path)
	s.detail.Store(&msg)
	s.pathFailed.Store(true)
}

// pathFine records that the path names a regular file (now says so, in
// the log) or nothing: no longer FAILED. The failure's reason leaves the
// detail: what the detail held before it comes back (null, or a lost
// tail's), and a detail set since (a loss) stays. (What the path names now
// was kept in the detail before: it stayed there, false, once the file that
// appeared was read or the path changed again.)
func (s *Source) pathFine(now string) {
	if s.badPath == "" {
		return
	}
	bad := s.badPath
	s.badPath = ""
	s.pathFailed.Store(false)
	msg := "input path " + s.cfg.Path + " " + now
	s.log.Info(msg, "path", s.cfg.Path)
	if d := s.detail.Load(); d != nil && *d == bad {
		s.detail.Store(s.detailBeforeBad)
	}
	s.detailBeforeBad = nil
}

// What pathFine says the path names now.
const (
	pathRegular  = "names a regular file again; reading it"
	pathGone     = "names nothing now; waiting for a file"
	pathGoneRead = "names nothing now; the file open from before is read on"
)

// pathErr classifies an error of statInput or openStable: a bad path is
// recorded as such (true: the path is there but not read); anything else
// (the path names nothing, a race) leaves the failure as it is only when
// the path still exists.
func (s *Source) pathErr(err error) bool {
	var bad *badPathError
	if errors.As(err, &bad) {
		s.pathBad(bad)
		return true
	}
	if errors.Is(err, fileutil.ErrNotRegular) {
		// A regular file when stat'ed, something else when opened (the
		// path flips type): not read, FAILED until it settles (S2).
		s.pathBad(&badPathError{s.cfg.Path, "is not a regular file when opened (its type keeps changing)"})
		return true
	}
	var perr *os.PathError
	if !errors.Is(err, fs.ErrNotExist) && errors.As(err, &perr) {
		// A regular file that cannot be opened (EACCES): FAILED with the
		// reason, logged once, until it can be (S3).
		s.pathBad(&badPathError{s.cfg.Path, "cannot be opened: " + perr.Err.Error()})
		return true
	}
	if errors.Is(err, fs.ErrNotExist) {
		if s.cur != nil {
			s.pathFine(pathGoneRead) // a file left open (a rotation) is read on
		} else {
			s.pathFine(pathGone) // nothing there: WAITING_FOR_FILE, not FAILED
		}
	}
	return false
}
