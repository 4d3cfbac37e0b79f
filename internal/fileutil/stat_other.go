//go:build !unix

package fileutil

import "os"

// StatDevIno stats path (no device and inode numbers here).
func StatDevIno(path string) (os.FileInfo, uint64, uint64, error) {
	info, err := os.Stat(path)
	return info, 0, 0, err
}

// DevIno returns zeros where the OS has no device and inode numbers.
func DevIno(f *os.File) (dev, ino uint64, err error) { return 0, 0, nil }

// DevInoPath returns zeros where the OS has no device and inode numbers.
func DevInoPath(path string) (dev, ino uint64, err error) { return 0, 0, nil }
