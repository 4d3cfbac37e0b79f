//go:build unix

package fileutil

import (
	"os"

	"golang.org/x/sys/unix"
)

// DevIno returns the device and inode of the open file f (fstat).
func DevIno(f *os.File) (dev, ino uint64, err error) {
	var st unix.Stat_t
	err = withFd(f, func(fd int) error { return unix.Fstat(fd, &st) })
	if err != nil {
		return 0, 0, &os.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	return uint64(st.Dev), uint64(st.Ino), nil
}

// DevInoPath returns the device and inode of the file path names now,
// following symlinks (stat).
func DevInoPath(path string) (dev, ino uint64, err error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, 0, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	return uint64(st.Dev), uint64(st.Ino), nil
}
