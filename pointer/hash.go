package pointer

import (
	"crypto/rand"
	"encoding/binary"
)

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// Fingerprint returns the FNV-1a 64 hash of b: the fingerprint of a file's
// first len(b) bytes.
func Fingerprint(b []byte) uint64 {
	h := uint64(fnvOffset)
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime
	}
	return h
}

// FileKey returns the file key of a device and inode: FNV-1a 64 over the
// device then the inode, each as 8 little-endian bytes.
func FileKey(dev, ino uint64) uint64 {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[0:8], dev)
	binary.LittleEndian.PutUint64(b[8:16], ino)
	return Fingerprint(b[:])
}

// NewEpoch returns a random epoch from crypto/rand, never 0.
func NewEpoch() uint64 {
	var b [8]byte
	for {
		rand.Read(b[:]) // never fails: crypto/rand aborts the program instead
		if e := binary.LittleEndian.Uint64(b[:]); e != 0 {
			return e
		}
	}
}
