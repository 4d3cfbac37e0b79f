package processor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// The webhook's record, dataDir/state/<processor>.rec (version 1, 1,024
// bytes, little-endian): the batch being sent and the last position the
// receiver acknowledged. Two 64-byte slots, A at byte 0 and B at byte 512;
// a store writes the slot that does not hold the newest valid record and
// fsyncs it, so a torn write damages only the record being written and the
// other slot is used at open.
//
//	off  size  field
//	  0     5  magic "TFWHK"
//	  5     1  zero
//	  6     2  layout version (uint16) = 1
//	  8     8  applied epoch (uint64): of the last line a 2xx acknowledged; 0 = none
//	 16     8  applied position (int64): just after that line's terminator
//	 24     8  batch epoch (uint64): of the batch recorded before its first POST; 0 = none
//	 32     8  batch first position (int64): end of its first line
//	 40     8  batch last position (int64): end of its last line
//	 48     8  counter (uint64): +1 per store; the higher valid slot wins
//	 56     4  CRC-32C (Castagnoli) over bytes 0..55
//	 60     4  zero

const (
	whMagic  = "TFWHK"
	whLayout = 1
)

// whState is the record's content.
type whState struct {
	AppliedEpoch uint64
	AppliedPos   int64
	BatchEpoch   uint64
	BatchFirst   int64
	BatchLast    int64
	Counter      uint64
}

// pending reports whether a recorded batch was not acknowledged yet.
func (s whState) pending() bool {
	return s.BatchEpoch != 0 && !(s.BatchEpoch == s.AppliedEpoch && s.BatchLast <= s.AppliedPos)
}

func encodeWH(b []byte, s whState) {
	clear(b)
	le := binary.LittleEndian
	copy(b, whMagic)
	le.PutUint16(b[6:], whLayout)
	le.PutUint64(b[8:], s.AppliedEpoch)
	le.PutUint64(b[16:], uint64(s.AppliedPos))
	le.PutUint64(b[24:], s.BatchEpoch)
	le.PutUint64(b[32:], uint64(s.BatchFirst))
	le.PutUint64(b[40:], uint64(s.BatchLast))
	le.PutUint64(b[48:], s.Counter)
	le.PutUint32(b[56:], crc32.Checksum(b[:56], recCastagnoli))
}

func decodeWH(b []byte) (whState, error) {
	le := binary.LittleEndian
	switch {
	case string(b[:5]) != whMagic || b[5] != 0:
		return whState{}, errors.New("bad magic")
	case le.Uint16(b[6:]) != whLayout:
		return whState{}, fmt.Errorf("layout %d", le.Uint16(b[6:]))
	case crc32.Checksum(b[:56], recCastagnoli) != le.Uint32(b[56:]):
		return whState{}, errors.New("bad checksum")
	}
	s := whState{
		AppliedEpoch: le.Uint64(b[8:]),
		AppliedPos:   int64(le.Uint64(b[16:])),
		BatchEpoch:   le.Uint64(b[24:]),
		BatchFirst:   int64(le.Uint64(b[32:])),
		BatchLast:    int64(le.Uint64(b[40:])),
		Counter:      le.Uint64(b[48:]),
	}
	if s.AppliedPos < 0 || s.BatchFirst < 0 || s.BatchLast < s.BatchFirst {
		return whState{}, errors.New("bad positions")
	}
	return s, nil
}

// whRecord is the open record file.
type whRecord struct {
	path    string
	f       RecordFile
	damaged bool    // the file held bytes but no valid slot
	newest  int     // slot holding the newest valid record; stores go to the other
	disk    whState // the newest valid record on disk
	buf     [recSlotLen]byte
}

// loadWH opens the record (creating it empty) and reads the newest valid
// slot; ok is false when there is none.
func loadWH(path string, open func(string) (RecordFile, error)) (r *whRecord, ok bool, err error) {
	if open == nil {
		open = openRecordFile
	}
	f, err := open(path)
	if err != nil {
		return nil, false, fmt.Errorf("open webhook record %s: %w", path, err)
	}
	r = &whRecord{path: path, f: f, newest: 1}
	buf := make([]byte, recSize)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		f.Close()
		return nil, false, fmt.Errorf("read webhook record %s: %w", path, err)
	}
	var slots [2]*whState
	for i := range 2 {
		at := i * recSlotB
		if n < at+recSlotLen {
			continue
		}
		if s, err := decodeWH(buf[at : at+recSlotLen]); err == nil {
			slots[i] = &s
		}
	}
	switch a, b := slots[0], slots[1]; {
	case a != nil && (b == nil || int64(a.Counter-b.Counter) >= 0):
		r.newest, r.disk, ok = 0, *a, true
	case b != nil:
		r.newest, r.disk, ok = 1, *b, true
	}
	r.damaged = !ok && n > 0
	return r, ok, nil
}

// store writes s (with the next counter) into the older slot and fsyncs.
// On failure the slot in force is unchanged: the next store rewrites the
// same slot.
func (r *whRecord) store(s whState) error {
	s.Counter = r.disk.Counter + 1
	slot := 1 - r.newest
	encodeWH(r.buf[:], s)
	if _, err := r.f.WriteAt(r.buf[:], int64(slot*recSlotB)); err != nil {
		return fmt.Errorf("write webhook record %s: %w", r.path, err)
	}
	if err := r.f.Sync(); err != nil {
		return fmt.Errorf("fsync webhook record %s: %w", r.path, err)
	}
	r.disk, r.newest = s, slot
	return nil
}
