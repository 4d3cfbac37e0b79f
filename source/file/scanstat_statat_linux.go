//go:build linux

package file

import (
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// statAt is one stat of the entry name of the open directory dir
// (statx, following symlinks, as os.Stat does): a rescan's only system
// call per matched file — its kind, identity, size, mtime and birth time
// (UnixNano, 0 where the file system reports none) at once, all of the
// one inode the name led to (a birth time asked in a second call could be
// another file's: renamed and replaced in between). Where statx is
// refused (a kernel before 4.11, an old container seccomp profile) it
// falls back to fstatat, with no birth time.
func statAt(dir *os.File, name string, st *statScratch) (regular, isDir bool, dev, ino uint64, size, mod, born int64, err error) {
	if !st.noStatx {
		x := &st.x
		err := unix.Statx(int(dir.Fd()), name, 0, unix.STATX_BASIC_STATS|unix.STATX_BTIME, x)
		if err == nil {
			kind := uint32(x.Mode) & unix.S_IFMT
			if bt := bornOf(x, func(fs *unix.Statfs_t) error { return statfsAt(dir, name, fs) }); !bt.IsZero() {
				born = bt.UnixNano()
			}
			return kind == unix.S_IFREG, kind == unix.S_IFDIR, unix.Mkdev(x.Dev_major, x.Dev_minor), x.Ino, int64(x.Size),
				x.Mtime.Sec*1e9 + int64(x.Mtime.Nsec), born, nil
		}
		if !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EPERM) {
			return false, false, 0, 0, 0, 0, 0, err
		}
		st.noStatx = true
	}
	s := &st.st
	if err := unix.Fstatat(int(dir.Fd()), name, s, 0); err != nil {
		return false, false, 0, 0, 0, 0, 0, err
	}
	kind := s.Mode & unix.S_IFMT
	return kind == unix.S_IFREG, kind == unix.S_IFDIR, uint64(s.Dev), uint64(s.Ino), int64(s.Size),
		int64(s.Mtim.Sec)*1e9 + int64(s.Mtim.Nsec), 0, nil
}

// statfsAt is statfs of the entry name of the open directory dir (once
// per device: bornOf's cache).
func statfsAt(dir *os.File, name string, fs *unix.Statfs_t) error {
	return unix.Statfs(filepath.Join(dir.Name(), name), fs)
}

// statScratch is statAt's buffers, reused across a walk.
type statScratch struct {
	x       unix.Statx_t
	st      unix.Stat_t
	noStatx bool // statx refused once: fstatat for the rest of the walk
}
