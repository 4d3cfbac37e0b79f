//go:build !unix

package fileutil

import "os"

// OpenNoFollow is os.OpenFile where the platform has no O_NOFOLLOW.
func OpenNoFollow(path string, flag int, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(path, flag, perm)
}

// IsSymlinkErr is false where OpenNoFollow cannot refuse a symlink.
func IsSymlinkErr(err error) bool { return false }

// Owner has no user id to give where the platform has none.
func Owner(fi os.FileInfo) (uid int, ok bool) { return 0, false }
