//go:build unix

package fileutil

import (
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
// a regular file is returned in blocking mode.
func OpenRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	err = withFd(f, func(fd int) error {
		if err := unix.Fstat(fd, &st); err != nil {
			return err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			return ErrNotRegular
		}
		return unix.SetNonblock(fd, false)
	})
	if err != nil {
		f.Close()
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return f, nil
}
