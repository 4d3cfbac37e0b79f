package pointer

import (
	"encoding/binary"
	"errors"
	"fmt"

	"tailfeed/internal/slotrec"
)

const (
	// Size is the length of a pointer file in bytes.
	Size = slotrec.Size
	// MaxFingerprint is the most bytes a fingerprint covers.
	MaxFingerprint = 4096
	// Layout is the only layout version this package reads and writes.
	Layout = 1

	slotSize = slotrec.SlotLen // bytes of a slot that carry a record
	slotB    = slotrec.SlotB   // slot B starts here (slot A at 0): another disk sector
	crcEnd   = slotrec.CRCAt   // the CRC covers bytes [0, crcEnd) of a slot
)

// Field offsets within a slot (see the table in doc.go).
const (
	offLayout  = 6
	offOffset  = 8
	offEpoch   = 16
	offFileKey = 24
	offFPLen   = 32
	offFP      = 40
	offCommits = 48
	offCRC     = slotrec.CRCAt
)

// format frames a slot: magic, layout, the commit counter at 48 and the
// CRC-32C at 56 (package slotrec); checkSlot rejects out-of-range fields.
var format = slotrec.Format{Name: "pointer", Magic: "TFPTR", Layout: Layout, CounterAt: offCommits,
	Check: checkSlot}

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

// slotBytes returns the 64 record bytes of slot i in buf (Size bytes).
func slotBytes(buf []byte, i int) []byte { return slotrec.At(buf, i) }

// encodeSlot writes r into the 64 bytes of b, checksum and zero padding
// included.
func encodeSlot(b []byte, r *Record) {
	le := binary.LittleEndian
	le.PutUint64(b[offOffset:], uint64(r.Offset))
	le.PutUint64(b[offEpoch:], r.Epoch)
	le.PutUint64(b[offFileKey:], r.FileKey)
	le.PutUint64(b[offFPLen:], r.FPLen)
	le.PutUint64(b[offFP:], r.FP)
	format.Encode(b, r.Commits)
}

// fields reads the record fields of the slot b.
func fields(b []byte) Record {
	le := binary.LittleEndian
	return Record{
		Offset:  int64(le.Uint64(b[offOffset:])),
		Epoch:   le.Uint64(b[offEpoch:]),
		FileKey: le.Uint64(b[offFileKey:]),
		FPLen:   le.Uint64(b[offFPLen:]),
		FP:      le.Uint64(b[offFP:]),
		Commits: le.Uint64(b[offCommits:]),
		Layout:  Layout,
	}
}

// decodeSlot validates the 64 bytes of a slot in bbolt's order (magic, then
// version, then checksum, then field ranges) and returns its record.
func decodeSlot(b []byte, slot byte) (Record, error) {
	if _, err := format.Decode(b); err != nil {
		return Record{}, slotError(b, err)
	}
	r := fields(b)
	r.Slot = slot
	return r, nil
}

// slotError names slotrec's reason with this package's sentinel.
func slotError(b []byte, err error) error {
	le := binary.LittleEndian
	switch {
	case errors.Is(err, slotrec.ErrMagic):
		return fmt.Errorf("%w: bad magic %q", ErrInvalid, b[:6])
	case errors.Is(err, slotrec.ErrLayout):
		return fmt.Errorf("%w: layout %d, want %d", ErrVersionMismatch, le.Uint16(b[offLayout:]), Layout)
	case errors.Is(err, slotrec.ErrChecksum):
		return fmt.Errorf("%w: crc %08x, stored %08x", ErrChecksum, slotrec.Sum(b), le.Uint32(b[offCRC:]))
	}
	return err // checkSlot's
}

// checkSlot rejects values no writer produces, even under a valid checksum.
func checkSlot(b []byte) error {
	r := fields(b)
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

// Decode returns the newest valid record of a pointer file's bytes: the
// valid slot with the higher commit counter (A on a tie), the other slot
// when one is torn or corrupt (slotrec.Pick). Errors: ErrShort when buf is
// shorter than Size; ErrNoValidSlot wrapping each slot's reason
// (ErrInvalid, ErrVersionMismatch, ErrChecksum) when neither slot is valid.
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
	var recs [2]Record
	for i := range recs {
		recs[i], errs[i] = decodeSlot(slotBytes(buf, i), slotName(i))
	}
	i, ok := slotrec.Pick([2]uint64{recs[0].Commits, recs[1].Commits}, errs)
	if !ok {
		return Record{}, errs, fmt.Errorf("%w (A: %w; B: %w)", ErrNoValidSlot, errs[0], errs[1])
	}
	return recs[i], errs, nil
}
