//go:build unix

package status

import (
	"errors"
	"syscall"
)

// fdLimit is the soft RLIMIT_NOFILE; ok is false when unknown or
// unlimited for practical purposes.
func fdLimit() (int, bool) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur >= 1<<30 {
		return 0, false
	}
	return int(rl.Cur), true
}

// outOfFDs reports whether an accept failed for want of descriptors.
func outOfFDs(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}
