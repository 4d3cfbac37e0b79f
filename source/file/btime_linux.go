//go:build linux

package file

import (
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Birth times are not used on overlayfs: a file of a lower layer copied up
// to the upper one (at its first write, a touch, a chmod) keeps its inode
// number under the overlay but takes a new birth time, which would make a
// file tailfeed read look born after it was first seen — a new file, read
// again from its start or counted lost. There every birth time is "not
// known", as on a file system that reports none.
const overlayfsMagic = 0x794c7630

// overlayDevs caches, per device (statx's major and minor), whether it is
// an overlayfs mount: one statfs per device, not per file.
var overlayDevs struct {
	sync.Mutex
	m map[uint64]bool
}

// onOverlay: the device of x (path on it, for the statfs) is overlayfs.
func onOverlay(x *unix.Statx_t, statfs func(*unix.Statfs_t) error) bool {
	dev := unix.Mkdev(x.Dev_major, x.Dev_minor)
	overlayDevs.Lock()
	v, ok := overlayDevs.m[dev]
	overlayDevs.Unlock()
	if ok {
		return v
	}
	var fs unix.Statfs_t
	if statfs(&fs) != nil {
		return false // asked again next time
	}
	ov := int64(fs.Type) == overlayfsMagic
	overlayDevs.Lock()
	if overlayDevs.m == nil {
		overlayDevs.m = map[uint64]bool{}
	}
	overlayDevs.m[dev] = ov
	overlayDevs.Unlock()
	return ov
}

// bornOf is x's birth time, zero when the file system reports none or is
// overlayfs.
func bornOf(x *unix.Statx_t, statfs func(*unix.Statfs_t) error) time.Time {
	if x.Mask&unix.STATX_BTIME == 0 || onOverlay(x, statfs) {
		return time.Time{}
	}
	return time.Unix(x.Btime.Sec, int64(x.Btime.Nsec))
}

// birthTime is the file's creation time (statx STATX_BTIME), zero where
// the file system does not report one (or is overlayfs).
func birthTime(f *os.File) time.Time {
	var st unix.Statx_t
	var err error
	rc, cerr := f.SyscallConn()
	if cerr != nil {
		return time.Time{}
	}
	var bt time.Time
	if cerr := rc.Control(func(fd uintptr) {
		err = unix.Statx(int(fd), "", unix.AT_EMPTY_PATH, unix.STATX_BTIME, &st)
		if err == nil {
			bt = bornOf(&st, func(fs *unix.Statfs_t) error { return unix.Fstatfs(int(fd), fs) })
		}
	}); cerr != nil || err != nil {
		return time.Time{}
	}
	return bt
}

// birthTimePath is birthTime of the file at path (not following a final
// symlink), zero when unknown.
func birthTimePath(path string) time.Time {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BTIME, &st); err != nil {
		return time.Time{}
	}
	return bornOf(&st, func(fs *unix.Statfs_t) error { return unix.Statfs(path, fs) })
}

// birthTimeTarget is birthTime of the file path names, a final symlink
// followed (a glob's matched link reads its target), zero when unknown.
func birthTimeTarget(path string) time.Time {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, 0, unix.STATX_BTIME, &st); err != nil {
		return time.Time{}
	}
	return bornOf(&st, func(fs *unix.Statfs_t) error { return unix.Statfs(path, fs) })
}
