//go:build unix

package file

import (
	"os"

	"golang.org/x/sys/unix"
)

// fstatSizeMod is the open file's size and mtime (UnixNano) from one fstat
// that allocates nothing (f.Stat makes a FileInfo each time: a check of
// the open file runs at every look, hundreds of streams looking at once).
func fstatSizeMod(f *os.File) (size, mod int64, err error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return 0, 0, &os.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	return int64(st.Size), int64(st.Mtim.Sec)*1e9 + int64(st.Mtim.Nsec), nil
}

// statSizeMod is the size and mtime (UnixNano) of the file path names now
// (stat, following symlinks) without an allocation: a status report looks
// at every closed file of a glob feed (DESIGN §7 "state").
func statSizeMod(path string) (size, mod int64, err error) {
	var st unix.Stat_t
	for {
		err := unix.Stat(path, &st)
		if err == nil {
			break
		}
		if err != unix.EINTR { // retried as os.Stat does (FUSE, CIFS)
			return 0, 0, &os.PathError{Op: "stat", Path: path, Err: err}
		}
	}
	return int64(st.Size), int64(st.Mtim.Sec)*1e9 + int64(st.Mtim.Nsec), nil
}
