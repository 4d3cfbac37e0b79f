package pointer

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

const (
	// Size is the length of a pointer file in bytes.
	Size = 1024
	// MaxFingerprint is the most bytes a fingerprint covers.
	MaxFingerprint = 4096
	// Layout is the only layout version this package reads and writes.
	Layout = 1

	magic    = "TFPTR"
	slotSize = 64  // bytes of a slot that carry a record
	slotB    = 512 // slot B starts here (slot A at 0): another disk sector
	crcEnd   = 56  // the CRC covers bytes [0, crcEnd) of a slot
)

// Field offsets within a slot (see the table in doc.go).
const (
	offMagic   = 0
	offLayout  = 6
	offOffset  = 8
	offEpoch   = 16
	offFileKey = 24
	offFPLen   = 32
	offFP      = 40
	offCommits = 48
	offCRC     = 56
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Record is one slot's content: the committed position in the input file and
// the identity of that file.
type Record struct {
	Offset  int64  // byte offset just after the last committed line
	Epoch   uint64 // random, never 0; changes whenever the input file does
	FileKey uint64 // FileKey(dev, ino) of the input; 0 where the OS has none
	FPLen   uint64 // bytes the fingerprint covers, ≤ MaxFingerprint
	FP      uint64 // Fingerprint of the input's first FPLen bytes
	Commits uint64 // +1 per stored record; the higher valid slot wins
	Slot    byte   // 'A' or 'B': where the record was read or last written
	Layout  uint16 // layout version, 1
}

// slotName maps a slot index (0, 1) to its name.
func slotName(i int) byte { return 'A' + byte(i) }

// slotBytes returns the 64 record bytes of slot i in buf.
func slotBytes(buf []byte, i int) []byte {
	at := i * slotB
	return buf[at : at+slotSize : at+slotSize]
}

// encodeSlot writes r into the 64 bytes of b, checksum and zero padding
// included.
func encodeSlot(b []byte, r *Record) {
	le := binary.LittleEndian
	copy(b[offMagic:], magic)
	b[5] = 0
	le.PutUint16(b[offLayout:], Layout)
	le.PutUint64(b[offOffset:], uint64(r.Offset))
	le.PutUint64(b[offEpoch:], r.Epoch)
	le.PutUint64(b[offFileKey:], r.FileKey)
	le.PutUint64(b[offFPLen:], r.FPLen)
	le.PutUint64(b[offFP:], r.FP)
	le.PutUint64(b[offCommits:], r.Commits)
	le.PutUint32(b[offCRC:], crc32.Checksum(b[:crcEnd], castagnoli))
	le.PutUint32(b[offCRC+4:], 0)
}

// decodeSlot validates the 64 bytes of a slot in bbolt's order (magic, then
// version, then checksum, then field ranges) and returns its record.
func decodeSlot(b []byte, slot byte) (Record, error) {
	le := binary.LittleEndian
	if string(b[offMagic:offMagic+len(magic)]) != magic || b[5] != 0 {
		return Record{}, fmt.Errorf("%w: bad magic %q", ErrInvalid, b[:6])
	}
	if v := le.Uint16(b[offLayout:]); v != Layout {
		return Record{}, fmt.Errorf("%w: layout %d, want %d", ErrVersionMismatch, v, Layout)
	}
	if sum, want := crc32.Checksum(b[:crcEnd], castagnoli), le.Uint32(b[offCRC:]); sum != want {
		return Record{}, fmt.Errorf("%w: crc %08x, stored %08x", ErrChecksum, sum, want)
	}
	r := Record{
		Offset:  int64(le.Uint64(b[offOffset:])),
		Epoch:   le.Uint64(b[offEpoch:]),
		FileKey: le.Uint64(b[offFileKey:]),
		FPLen:   le.Uint64(b[offFPLen:]),
		FP:      le.Uint64(b[offFP:]),
		Commits: le.Uint64(b[offCommits:]),
		Slot:    slot,
		Layout:  Layout,
	}
	return r, checkRange(&r)
}

// checkRange rejects values no writer produces, even under a valid checksum.
func checkRange(r *Record) error {
	switch {
	case r.Offset < 0:
		return fmt.Errorf("%w: negative offset %d", ErrInvalid, r.Offset)
	case r.Epoch == 0:
		return fmt.Errorf("%w: epoch 0", ErrInvalid)
	case r.FPLen > MaxFingerprint:
		return fmt.Errorf("%w: fingerprint length %d > %d", ErrInvalid, r.FPLen, MaxFingerprint)
	}
	return nil
}

// newer reports whether commit counter a follows b in serial-number order
// (RFC 1982), so that a counter that wrapped past 2^64-1 still wins.
func newer(a, b uint64) bool { return int64(a-b) > 0 }

// Decode returns the newest valid record of a pointer file's bytes: the
// valid slot with the higher commit counter (A on a tie), the other slot
// when one is torn or corrupt. Errors: ErrShort when buf is shorter than
// Size; ErrNoValidSlot wrapping each slot's reason (ErrInvalid,
// ErrVersionMismatch, ErrChecksum) when neither slot is valid.
func Decode(buf []byte) (Record, error) {
	r, _, err := decode(buf)
	return r, err
}

// decode is Decode that also returns why each slot was rejected (nil for a
// valid one), so that Open can warn about a single bad slot.
func decode(buf []byte) (Record, [2]error, error) {
	var errs [2]error
	if len(buf) < Size {
		return Record{}, errs, fmt.Errorf("%w: %d bytes", ErrShort, len(buf))
	}
	a, errA := decodeSlot(slotBytes(buf, 0), 'A')
	b, errB := decodeSlot(slotBytes(buf, 1), 'B')
	errs = [2]error{errA, errB}
	switch {
	case errA == nil && errB == nil && newer(b.Commits, a.Commits):
		return b, errs, nil
	case errA == nil:
		return a, errs, nil
	case errB == nil:
		return b, errs, nil
	}
	return Record{}, errs, fmt.Errorf("%w (A: %w; B: %w)", ErrNoValidSlot, errA, errB)
}
