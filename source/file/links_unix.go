//go:build unix

package file

import (
	"os"
	"syscall"
)

// deleted reports whether the open file f has no name left (st_nlink 0):
// it was deleted, not renamed. An fstat error says no.
func deleted(f *os.File) bool {
	st, err := f.Stat()
	if err != nil {
		return false
	}
	return deletedInfo(st)
}

// deletedInfo reports whether st, from an fstat, has a link count of 0.
func deletedInfo(st os.FileInfo) bool {
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && sys.Nlink == 0
}
