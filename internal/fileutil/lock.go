package fileutil

import (
	"fmt"
	"os"
	"syscall"
)

// LockedError reports that another open file description holds the lock on
// Path. Pid is the holder's process id as read from /proc/locks, or 0 when it
// could not be found.
type LockedError struct {
	Path string
	Pid  int
}

// Error names the holder: "<path>: locked by pid N", or "<path>: locked by
// another process" when the pid is unknown.
func (e *LockedError) Error() string {
	if e.Pid > 0 {
		return fmt.Sprintf("%s: locked by pid %d", e.Path, e.Pid)
	}
	return e.Path + ": locked by another process"
}

// Unwrap returns EWOULDBLOCK, the errno flock reported.
func (e *LockedError) Unwrap() error { return syscall.EWOULDBLOCK }

// Lock takes an exclusive, non-blocking flock on f. If another open file
// description holds it, the error is a *LockedError naming the holder's pid
// when /proc/locks shows it. The lock lasts until Unlock or until every
// descriptor (and mapping) of f's open file description is gone.
func Lock(f *os.File) error {
	err := flock(f, true)
	if err == nil {
		return nil
	}
	if err != syscall.EWOULDBLOCK {
		return &os.PathError{Op: "flock", Path: f.Name(), Err: err}
	}
	pid, _ := HolderPid(f)
	return &LockedError{Path: f.Name(), Pid: pid}
}

// Unlock releases a lock taken by Lock.
func Unlock(f *os.File) error {
	if err := flock(f, false); err != nil {
		return &os.PathError{Op: "flock", Path: f.Name(), Err: err}
	}
	return nil
}

// HolderPid returns the pid of the process that holds a flock on f's file,
// matched in /proc/locks by device (major:minor) and inode. It reports false
// where /proc/locks is missing, unreadable, or shows no such lock.
func HolderPid(f *os.File) (int, bool) {
	dev, ino, err := DevIno(f)
	if err != nil {
		return 0, false
	}
	return holderPid(dev, ino)
}
