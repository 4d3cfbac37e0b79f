//go:build unix

package fileutil

import (
	"os"

	"golang.org/x/sys/unix"
)

// flock takes LOCK_EX|LOCK_NB (lock) or LOCK_UN (!lock) on f, retrying EINTR.
// It returns the bare errno so that callers can compare it.
func flock(f *os.File, lock bool) error {
	how := unix.LOCK_UN
	if lock {
		how = unix.LOCK_EX | unix.LOCK_NB
	}
	return withFd(f, func(fd int) error {
		for {
			err := unix.Flock(fd, how)
			if err != unix.EINTR {
				return err
			}
		}
	})
}

// withFd runs fn with f's descriptor without switching f to blocking mode
// (which f.Fd() would do).
func withFd(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}
