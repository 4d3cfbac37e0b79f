//go:build unix

package fileutil

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// StatPath returns the device, inode and type (the fs.ModeType bits; 0 for
// a regular file) of the file path names now, following symlinks (one
// stat).
func StatPath(path string) (dev, ino uint64, typ fs.FileMode, err error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, 0, 0, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	return uint64(st.Dev), uint64(st.Ino), modeType(uint32(st.Mode)), nil
}

func modeType(m uint32) fs.FileMode {
	switch m & unix.S_IFMT {
	case unix.S_IFREG:
		return 0
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	case unix.S_IFLNK:
		return fs.ModeSymlink
	}
	return fs.ModeIrregular
}

// OpenRegular opens path for reading only if it is a regular file. The open
// is non-blocking, so a FIFO or a device put at the path after a caller's
// stat can never block it; what was opened is checked (fstat) and anything
// but a regular file is closed at once (ErrNotRegular). The descriptor of
// a regular file is returned in blocking mode, outside the runtime's poller
// (see OpenFile).
func OpenRegular(path string) (*os.File, error) {
	fd, err := rawOpen(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	err = unix.Fstat(fd, &st)
	if err == nil && st.Mode&unix.S_IFMT != unix.S_IFREG {
		err = ErrNotRegular
	}
	if err == nil {
		err = unix.SetNonblock(fd, false)
	}
	if err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// OpenFile is os.OpenFile (O_CLOEXEC added) for regular files and
// directories, without the runtime poller: os.OpenFile offers every
// descriptor to epoll (two fcntl pairs and an epoll_ctl that fails for a
// file on disk); a glob feed opening thousands of inputs and pointers paid
// 4-5 wasted syscalls per open. Not for FIFOs, sockets or devices.
func OpenFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	fd, err := rawOpen(path, flag, unixMode(perm))
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

// unixMode is os.OpenFile's mode for perm: the permission bits and the
// setuid, setgid and sticky bits.
func unixMode(perm os.FileMode) uint32 {
	m := uint32(perm.Perm())
	if perm&os.ModeSetuid != 0 {
		m |= unix.S_ISUID
	}
	if perm&os.ModeSetgid != 0 {
		m |= unix.S_ISGID
	}
	if perm&os.ModeSticky != 0 {
		m |= unix.S_ISVTX
	}
	return m
}

// rawOpen is open(2) with O_CLOEXEC, retried on EINTR; errors are
// *os.PathError as os.OpenFile's.
func rawOpen(path string, flag int, perm uint32) (int, error) {
	for {
		fd, err := unix.Open(path, flag|unix.O_CLOEXEC, perm)
		if err == nil {
			return fd, nil
		}
		if err != unix.EINTR {
			return -1, &os.PathError{Op: "open", Path: path, Err: err}
		}
	}
}

// ErrNoReader is OpenAppend's error for a FIFO that no process has open
// for reading.
var ErrNoReader = errors.New("a FIFO that no process reads (the file sink opens it without waiting and retries until a reader has it open)")

// OpenAppend opens path write-only and append, creating it with perm, as
// os.OpenFile does, but never blocks in the open: a FIFO nobody reads
// would block open(2) for ever (before the daemon serves or handles a
// signal), so the open is non-blocking and such a FIFO is ErrNoReader. A
// FIFO with a reader stays non-blocking and goes to the runtime's poller
// (a full pipe parks a goroutine, not a thread); anything else (a regular
// file, /dev/null, /dev/full, a terminal) is put back in blocking mode.
func OpenAppend(path string, flag int, perm os.FileMode) (*os.File, error) {
	fd, err := rawOpen(path, flag|unix.O_WRONLY|unix.O_APPEND|unix.O_NONBLOCK|unix.O_NOCTTY, unixMode(perm))
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) && pe.Err == unix.ENXIO {
			if _, _, typ, serr := StatPath(path); serr == nil && typ == fs.ModeNamedPipe {
				pe.Err = ErrNoReader
			}
		}
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFIFO {
		if err := unix.SetNonblock(fd, false); err != nil {
			unix.Close(fd)
			return nil, &os.PathError{Op: "open", Path: path, Err: err}
		}
	}
	return os.NewFile(uintptr(fd), path), nil
}
