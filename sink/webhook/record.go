package webhook

import (
	"encoding/binary"
	"errors"

	"tailfeed/internal/slotrec"
)

// The webhook's record, dataDir/state/<processor>.rec, of a single-file
// feed (a glob feed's, per epoch, is layout 2: epochs.go) (version 1, 1,024
// bytes, little-endian): the batch being sent and the last position the
// receiver acknowledged. Two 64-byte slots, A at byte 0 and B at byte 512;
// a store writes the slot that does not hold the newest valid record and
// fsyncs it, so a torn write damages only the record being written and the
// other slot is used at open. The framing is internal/slotrec's, as for the
// exactlyOnce record (whose counter sits at 32, not 48).
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

// whFormat is the webhook record's slot format (the table above).
var whFormat = slotrec.Format{Name: "webhook record", Magic: "TFWHK", Layout: 1, CounterAt: 48,
	Check: func(b []byte) error { _, err := decodeWH(b); return err }}

// whState is the record's content.
type whState struct {
	AppliedEpoch uint64
	AppliedPos   int64
	BatchEpoch   uint64
	BatchFirst   int64
	BatchLast    int64
	Counter      uint64 // the record file's counter when read or stored
}

// pending reports whether a recorded batch was not acknowledged yet.
func (s whState) pending() bool {
	return s.BatchEpoch != 0 && !(s.BatchEpoch == s.AppliedEpoch && s.BatchLast <= s.AppliedPos)
}

// encodeWH writes s's payload into the slot b; the record file adds the
// header, the counter and the checksum.
func encodeWH(b []byte, s whState) {
	clear(b)
	le := binary.LittleEndian
	le.PutUint64(b[8:], s.AppliedEpoch)
	le.PutUint64(b[16:], uint64(s.AppliedPos))
	le.PutUint64(b[24:], s.BatchEpoch)
	le.PutUint64(b[32:], uint64(s.BatchFirst))
	le.PutUint64(b[40:], uint64(s.BatchLast))
}

// decodeWH reads a slot's payload (Counter is left 0).
func decodeWH(b []byte) (whState, error) {
	le := binary.LittleEndian
	s := whState{
		AppliedEpoch: le.Uint64(b[8:]),
		AppliedPos:   int64(le.Uint64(b[16:])),
		BatchEpoch:   le.Uint64(b[24:]),
		BatchFirst:   int64(le.Uint64(b[32:])),
		BatchLast:    int64(le.Uint64(b[40:])),
	}
	if s.AppliedPos < 0 || s.BatchFirst < 0 || s.BatchLast < s.BatchFirst {
		return whState{}, errors.New("bad positions")
	}
	return s, nil
}

// whRecord is the open record file.
type whRecord struct {
	f       *slotrec.File
	damaged bool    // the file held bytes but no valid slot
	disk    whState // the newest valid record on disk
	buf     [slotrec.SlotLen]byte
}

// loadWH opens the record (creating it empty) and reads the newest valid
// slot; ok is false when there is none.
func loadWH(path string, open func(string) (slotrec.RecordFile, error)) (r *whRecord, ok bool, err error) {
	f, err := slotrec.Open(path, whFormat, open)
	if err != nil {
		return nil, false, err
	}
	r = &whRecord{f: f, damaged: f.Damaged()}
	i, ok := f.Newest()
	if ok {
		b, _ := f.Slot(i)
		r.disk, _ = decodeWH(b) // valid: whFormat.Check accepted it
		r.disk.Counter = f.Counter()
	}
	return r, ok, nil
}

// store writes s (with the next counter) into the older slot and fsyncs.
// On failure the slot in force is unchanged: the next store rewrites the
// same slot.
func (r *whRecord) store(s whState) error {
	encodeWH(r.buf[:], s)
	if err := r.f.Store(r.buf[:], true); err != nil {
		return err
	}
	s.Counter = r.f.Counter()
	r.disk = s
	return nil
}
