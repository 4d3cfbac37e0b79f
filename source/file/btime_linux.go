//go:build linux

package file

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// birthTime is the file's creation time (statx STATX_BTIME), zero where
// the file system does not report one.
func birthTime(f *os.File) time.Time {
	var st unix.Statx_t
	var err error
	rc, cerr := f.SyscallConn()
	if cerr != nil {
		return time.Time{}
	}
	if cerr := rc.Control(func(fd uintptr) {
		err = unix.Statx(int(fd), "", unix.AT_EMPTY_PATH, unix.STATX_BTIME, &st)
	}); cerr != nil || err != nil || st.Mask&unix.STATX_BTIME == 0 {
		return time.Time{}
	}
	return time.Unix(st.Btime.Sec, int64(st.Btime.Nsec))
}

// birthTimePath is birthTime of the file at path (not following a final
// symlink), zero when unknown.
func birthTimePath(path string) time.Time {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BTIME, &st); err != nil || st.Mask&unix.STATX_BTIME == 0 {
		return time.Time{}
	}
	return time.Unix(st.Btime.Sec, int64(st.Btime.Nsec))
}

// birthTimeTarget is birthTime of the file path names, a final symlink
// followed (a glob's matched link reads its target), zero when unknown.
func birthTimeTarget(path string) time.Time {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, 0, unix.STATX_BTIME, &st); err != nil || st.Mask&unix.STATX_BTIME == 0 {
		return time.Time{}
	}
	return time.Unix(st.Btime.Sec, int64(st.Btime.Nsec))
}
