package fileutil

import "errors"

// ErrNotRegular is OpenRegular's error for a path that named something
// other than a regular file when it was opened.
var ErrNotRegular = errors.New("not a regular file")
