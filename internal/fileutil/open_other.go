//go:build !unix

package fileutil

import (
	"errors"
	"io/fs"
	"os"
)

// StatPath returns zeros for the identity where the OS has none, and the
// type of the file path names now.
func StatPath(path string) (dev, ino uint64, typ fs.FileMode, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, 0, 0, err
	}
	return 0, 0, fi.Mode().Type(), nil
}

// OpenRegular opens path for reading only if it is a regular file.
func OpenRegular(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = ErrNotRegular
		}
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return f, nil
}

// OpenFile is os.OpenFile.
func OpenFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(path, flag, perm)
}

// OpenAppend is os.OpenFile write-only and append, with flag added.
func OpenAppend(path string, flag int, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(path, flag|os.O_WRONLY|os.O_APPEND, perm)
}

// ErrNoReader is OpenAppend's error for a FIFO that no process has open
// for reading (never returned here: the open is os.OpenFile's).
var ErrNoReader = errors.New("a FIFO that no process reads (the file sink opens it without waiting and retries until a reader has it open)")
