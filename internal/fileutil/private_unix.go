//go:build unix

package fileutil

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// OpenNoFollow is os.OpenFile that refuses to follow a symlink in the last
// component (O_NOFOLLOW): the error then wraps ELOOP (see IsSymlinkErr).
func OpenNoFollow(path string, flag int, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(path, flag|unix.O_NOFOLLOW, perm)
}

// IsSymlinkErr reports whether err is OpenNoFollow's refusal of a symlink.
func IsSymlinkErr(err error) bool {
	return errors.Is(err, syscall.ELOOP)
}

// Owner returns the user id owning the file fi describes; ok is false where
// the platform has none.
func Owner(fi os.FileInfo) (uid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
