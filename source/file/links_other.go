//go:build !unix

package file

import "os"

// deleted cannot tell a deleted file where the OS has no link count.
func deleted(f *os.File) bool { return false }

// deletedInfo: see deleted.
func deletedInfo(st os.FileInfo) bool { return false }
