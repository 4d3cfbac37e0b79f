//go:build unix && !linux

package file

import (
	"os"

	"golang.org/x/sys/unix"
)

// statAt is one stat of the entry name of the open directory dir
// (fstatat, following symlinks, as os.Stat does): a rescan's only system
// call per matched file — its kind, identity, size and mtime at once; no
// birth time here (born 0).
func statAt(dir *os.File, name string, st *statScratch) (regular, isDir bool, dev, ino uint64, size, mod, born int64, err error) {
	if err := unix.Fstatat(int(dir.Fd()), name, st, 0); err != nil {
		return false, false, 0, 0, 0, 0, 0, err
	}
	kind := st.Mode & unix.S_IFMT
	return kind == unix.S_IFREG, kind == unix.S_IFDIR, uint64(st.Dev), uint64(st.Ino), int64(st.Size),
		int64(st.Mtim.Sec)*1e9 + int64(st.Mtim.Nsec), 0, nil
}

// statScratch is statAt's buffer, reused across a walk.
type statScratch = unix.Stat_t
