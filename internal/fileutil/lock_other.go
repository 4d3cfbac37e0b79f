//go:build !unix

package fileutil

import (
	"errors"
	"os"
)

var errNoFlock = errors.New("fileutil: flock is not supported on this platform")

func flock(*os.File, bool) error { return errNoFlock }
