package pointer

import "errors"

var (
	// ErrShort means the pointer file holds fewer than Size bytes.
	ErrShort = errors.New("pointer: file shorter than 1024 bytes")
	// ErrNoValidSlot means neither slot holds a valid record; it wraps the
	// reason of each slot.
	ErrNoValidSlot = errors.New("pointer: no valid slot")
	// ErrInvalid means a slot lacks the magic, or holds a field out of range
	// under a valid checksum.
	ErrInvalid = errors.New("pointer: invalid slot")
	// ErrVersionMismatch means a slot carries a layout version other than 1.
	ErrVersionMismatch = errors.New("pointer: layout version mismatch")
	// ErrChecksum means a slot's CRC-32C does not match its bytes: torn or
	// corrupt.
	ErrChecksum = errors.New("pointer: checksum mismatch")
	// ErrBackwards means a Store asked to move the offset backwards under
	// the same epoch; nothing was written.
	ErrBackwards = errors.New("pointer: offset moves backwards")
	// ErrSync means the msync of the mapping failed: the newest record may
	// not be on disk. It is wrapped together with the errno.
	ErrSync = errors.New("pointer: sync failed")
	// ErrClosed means the Pointer was used after Close.
	ErrClosed = errors.New("pointer: closed")
	// ErrZeroEpoch means Reset was given epoch 0, which no record may carry.
	ErrZeroEpoch = errors.New("pointer: epoch 0")
)
