// Package slotrec is the two-slot checksummed record that processors keep
// in dataDir/state (the exactlyOnce file sink's side record, the webhook's
// record): one small value, stored so that a torn write damages only the
// copy being written and the previous one is used at open.
//
// # Layout (1,024 bytes, little-endian)
//
// Two 64-byte slots, A at byte 0 and B at byte 512 (different disk
// sectors). Each slot:
//
//	off  size  field
//	  0     5  magic (Format.Magic)
//	  5     1  zero
//	  6     2  layout version (uint16, Format.Layout)
//	  8    48  payload: 8-byte fields the format defines; the one at
//	           Format.CounterAt is the commit counter (uint64)
//	 56     4  CRC-32C (Castagnoli) over bytes 0..55
//	 60     4  zero
//
// The rest of each half is never written: a file holds 64 bytes after its
// first store and 576 after its second, the missing bytes reading as zero.
//
// # Rules
//
//   - A slot is valid when its magic, zero byte, layout and checksum are
//     right (checked in that order) and the format's Check accepts its
//     payload; a slot past the end of the file is not valid.
//   - At open the valid slot with the higher counter is the record in force
//     (serial-number order, so a counter that wrapped past 2^64-1 still
//     wins): B when it is valid and A is not or B's counter is newer, else
//     A (so A on a tie, and on counters 2^63 apart, which have no order).
//     With no valid slot there is no record, and the counter starts at 0.
//     Pick applies this rule; the pointer file (package pointer) uses it
//     and Format for its own slots, kept in a mapping rather than a File.
//   - A store writes the slot that does not hold the record in force, with
//     the counter + 1, then syncs (when asked). Only after that succeeds is
//     it the record in force; a failed store leaves everything as it was and
//     the next store rewrites the same slot.
//   - Fallback: when the caller cannot use the record in force (an
//     exactlyOnce record longer than its output), the other valid slot
//     becomes the record in force while the counter stays the higher one,
//     so the next store goes over the slot given up with a counter above
//     both, and that slot can never win again at a later open.
package slotrec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Sizes and offsets of the layout.
const (
	Size    = 1024 // bytes of a whole record file
	SlotLen = 64   // bytes of one slot
	SlotB   = 512  // offset of slot B (slot A is at 0)
	CRCAt   = 56   // offset of the CRC-32C, which covers bytes 0..55
)

var (
	// ErrShort is a slot past the end of the file.
	ErrShort = errors.New("slotrec: slot past the end of the file")
	// ErrMagic is a slot that does not start with the format's magic and a
	// zero byte.
	ErrMagic = errors.New("slotrec: bad magic")
	// ErrLayout is a slot of a layout version this build does not know.
	ErrLayout = errors.New("slotrec: unknown layout")
	// ErrChecksum is a slot whose CRC-32C does not match its bytes.
	ErrChecksum = errors.New("slotrec: bad checksum")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Format is one kind of record.
type Format struct {
	Name      string                  // in error messages: "open <Name> <path>: …"
	Magic     string                  // 5 bytes
	Layout    uint16                  // the one layout version accepted
	CounterAt int                     // offset of the counter: 8..48, a multiple of 8
	Check     func(slot []byte) error // optional: rejects a payload (after the checksum)
}

// Encode completes the slot b (SlotLen bytes) whose payload the caller has
// written at 8..55, all but the counter: it sets the magic, the layout, the
// counter, the checksum and the zero bytes around them.
func (f Format) Encode(b []byte, counter uint64) {
	b = b[:SlotLen]
	le := binary.LittleEndian
	copy(b, f.Magic)
	b[5] = 0
	le.PutUint16(b[6:], f.Layout)
	le.PutUint64(b[f.CounterAt:], counter)
	le.PutUint32(b[CRCAt:], Sum(b))
	clear(b[CRCAt+4:])
}

// Decode checks the slot b (SlotLen bytes) and returns its counter.
func (f Format) Decode(b []byte) (uint64, error) {
	b = b[:SlotLen]
	le := binary.LittleEndian
	switch {
	case string(b[:5]) != f.Magic || b[5] != 0:
		return 0, ErrMagic
	case le.Uint16(b[6:]) != f.Layout:
		return 0, fmt.Errorf("%w %d", ErrLayout, le.Uint16(b[6:]))
	case Sum(b) != le.Uint32(b[CRCAt:]):
		return 0, ErrChecksum
	}
	if f.Check != nil {
		if err := f.Check(b); err != nil {
			return 0, err
		}
	}
	return le.Uint64(b[f.CounterAt:]), nil
}

// Sum is the CRC-32C (Castagnoli) of the slot b's bytes 0..55: the
// checksum a valid slot stores at CRCAt.
func Sum(b []byte) uint32 { return crc32.Checksum(b[:CRCAt], castagnoli) }

// At returns slot i (0 = A, 1 = B) of a record file's bytes buf, or nil
// when buf ends before the slot does.
func At(buf []byte, i int) []byte {
	at := i * SlotB
	if len(buf) < at+SlotLen {
		return nil
	}
	return buf[at : at+SlotLen : at+SlotLen]
}

// Pick returns the slot holding the record in force, given each slot's
// counter and why it is not valid (nil when it is): B when it is valid and
// A is not, or both are and B's counter is Newer; else A when it is valid.
// ok is false when neither is valid.
func Pick(counters [2]uint64, errs [2]error) (newest int, ok bool) {
	switch {
	case errs[1] == nil && (errs[0] != nil || Newer(counters[1], counters[0])):
		return 1, true
	case errs[0] == nil:
		return 0, true
	}
	return 0, false
}

// Newer reports whether counter a was stored after counter b, in
// serial-number order: a counter that wrapped to 0 is newer than 2^64-1.
func Newer(a, b uint64) bool {
	return int64(a-b) > 0
}

func (f Format) valid() bool {
	return len(f.Magic) == 5 && f.CounterAt >= 8 && f.CounterAt <= CRCAt-8 && f.CounterAt%8 == 0
}
