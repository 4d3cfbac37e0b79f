//go:build unix

package fileutil

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// StatDevIno stats path once (following symlinks) and returns what it
// found with that file's device and inode: the two cannot belong to two
// files a rename swapped in between.
func StatDevIno(path string) (os.FileInfo, uint64, uint64, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, 0, 0, err
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return info, uint64(st.Dev), uint64(st.Ino), nil
	}
	dev, ino, err := DevInoPath(path)
	return info, dev, ino, err
}

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
