//go:build !unix

package file

import (
	"os"
	"path/filepath"

	"tailfeed/internal/fileutil"
)

// statAt stats the entry name of the directory dir (see the unix one).
func statAt(dir *os.File, name string, _ *statScratch) (regular, isDir bool, dev, ino uint64, size, mod, born int64, err error) {
	p := filepath.Join(dir.Name(), name)
	st, err := os.Stat(p)
	if err != nil {
		return false, false, 0, 0, 0, 0, 0, err
	}
	dev, ino, _ = fileutil.DevInoPath(p)
	return st.Mode().IsRegular(), st.IsDir(), dev, ino, st.Size(), st.ModTime().UnixNano(), 0, nil
}

type statScratch struct{}

// fstatSizeMod is the open file's size and mtime (UnixNano).
func fstatSizeMod(f *os.File) (size, mod int64, err error) {
	st, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	return st.Size(), st.ModTime().UnixNano(), nil
}

// statSizeMod is the size and mtime (UnixNano) of the file path names now.
func statSizeMod(path string) (size, mod int64, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, 0, err
	}
	return st.Size(), st.ModTime().UnixNano(), nil
}
