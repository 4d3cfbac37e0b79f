//go:build !linux

package file

import (
	"os"
	"time"
)

// birthTime is zero where statx is not available: no file is excluded by it.
func birthTime(*os.File) time.Time { return time.Time{} }

func birthTimePath(string) time.Time { return time.Time{} }

func birthTimeTarget(string) time.Time { return time.Time{} }
