// Package fileutil holds the few file-system calls tailfeed needs beyond the
// os package: an exclusive, non-blocking flock that names its holder, the
// device and inode of an open file, and an fsync of a directory.
//
// Each platform call lives in its own small file with a build tag
// (lock_unix.go, locks_linux.go, stat_unix.go); the other files are portable.
//
// flock locks belong to the open file description, not to the process: they
// are released when the last descriptor sharing it is closed (or unmapped:
// a memory mapping keeps the description alive). They do not fence across
// hosts on NFS, so the files locked here must live on a local file system.
package fileutil
