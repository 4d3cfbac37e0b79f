//go:build !unix

package fileutil

import "os"

// DevIno returns zeros where the OS has no device and inode numbers.
func DevIno(f *os.File) (dev, ino uint64, err error) { return 0, 0, nil }

// DevInoPath returns zeros where the OS has no device and inode numbers.
func DevInoPath(path string) (dev, ino uint64, err error) { return 0, 0, nil }
