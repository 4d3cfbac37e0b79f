package processor

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"

	"tailfeed/feed"
	"tailfeed/internal/fileutil"
)

// Exactly-once file output (DESIGN §2, §6 `exactlyOnce`).
//
// Next to its output a file sink with exactlyOnce keeps a side record,
// dataDir/state/<processor>.rec: the (epoch, position) of the last line it
// applied and the output's length right after it. Per batch the sink writes
// the lines, syncs the output per its fsync policy, then stores the record
// (synced under the same policy); only then do the lines count as
// dispatched. With fsync: interval the record is stored at the flush, after
// the output's fsync, and the queue's ack point waits for both.
//
// At open the record is checked against the output:
//
//   - equal length: nothing to do;
//   - the record is shorter: the tail was written but never recorded, so it
//     was never acknowledged and will be delivered again: truncate the
//     output to the record;
//   - the record is longer (the output lost bytes the record had seen, e.g.
//     a power loss under fsync: never): WARN, take the other slot if its
//     length fits (and truncate to it), else run without a record —
//     duplicates, never a gap.
//
// Deliveries the record says were applied (same epoch, position ≤ the
// record's) are skipped. Lines without a position (downgraded lines of a
// rotated file, dead-letter replays) are always written; they move only the
// record's length.
//
// # Record layout (version 1, 1,024 bytes, little-endian)
//
// Two 64-byte slots, A at byte 0 and B at byte 512 (different disk sectors);
// a store writes the slot that does not hold the newest stored record, so a
// torn write damages only the record being written:
//
//	off  size  field
//	  0     5  magic "TFREC"
//	  5     1  zero
//	  6     2  layout version (uint16) = 1
//	  8     8  epoch (uint64): of the last applied line; 0 = none yet
//	 16     8  position (int64): just after the last applied line's terminator
//	 24     8  length (int64): output bytes right after that line (and any
//	           line without a position written since)
//	 32     8  counter (uint64): +1 per store; the higher valid slot wins
//	 40    16  zero
//	 56     4  CRC-32C (Castagnoli) over bytes 0..55
//	 60     4  zero

// RecordFile is the side record's file: the seam for fault injection.
type RecordFile interface {
	io.ReaderAt
	io.WriterAt
	Sync() error
	Close() error
}

const (
	recSize    = 1024
	recSlotB   = 512
	recSlotLen = 64
	recMagic   = "TFREC"
	recLayout  = 1
	recCRCEnd  = 56
)

var recCastagnoli = crc32.MakeTable(crc32.Castagnoli)

// applied is one side-record value.
type applied struct {
	Epoch    uint64
	Position int64
	Length   int64
	Counter  uint64
}

func encodeApplied(b []byte, a applied) {
	clear(b)
	le := binary.LittleEndian
	copy(b, recMagic)
	le.PutUint16(b[6:], recLayout)
	le.PutUint64(b[8:], a.Epoch)
	le.PutUint64(b[16:], uint64(a.Position))
	le.PutUint64(b[24:], uint64(a.Length))
	le.PutUint64(b[32:], a.Counter)
	le.PutUint32(b[recCRCEnd:], crc32.Checksum(b[:recCRCEnd], recCastagnoli))
}

func decodeApplied(b []byte) (applied, error) {
	le := binary.LittleEndian
	switch {
	case string(b[:5]) != recMagic || b[5] != 0:
		return applied{}, errors.New("bad magic")
	case le.Uint16(b[6:]) != recLayout:
		return applied{}, fmt.Errorf("layout %d", le.Uint16(b[6:]))
	case crc32.Checksum(b[:recCRCEnd], recCastagnoli) != le.Uint32(b[recCRCEnd:]):
		return applied{}, errors.New("bad checksum")
	}
	a := applied{
		Epoch:    le.Uint64(b[8:]),
		Position: int64(le.Uint64(b[16:])),
		Length:   int64(le.Uint64(b[24:])),
		Counter:  le.Uint64(b[32:]),
	}
	if a.Position < 0 || a.Length < 0 {
		return applied{}, errors.New("negative position or length")
	}
	return a, nil
}

// sideRecord is an open side record.
type sideRecord struct {
	path   string
	f      RecordFile
	slots  [2]*applied // valid slot contents (nil: none)
	newest int         // slot holding the newest stored record; stores go to the other
	cur    applied     // the record in force
	buf    [recSlotLen]byte
}

func openRecordFile(path string) (RecordFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err == nil {
		if err := fileutil.SyncDir(filepath.Dir(path)); err != nil {
			f.Close()
			return nil, err
		}
		return f, nil
	}
	if !errors.Is(err, os.ErrExist) {
		return nil, err
	}
	return os.OpenFile(path, os.O_RDWR, 0)
}

// loadRecord opens the record and reads both slots.
func loadRecord(path string, open func(string) (RecordFile, error)) (*sideRecord, error) {
	if open == nil {
		open = openRecordFile
	}
	f, err := open(path)
	if err != nil {
		return nil, fmt.Errorf("open record %s: %w", path, err)
	}
	r := &sideRecord{path: path, f: f, newest: 1}
	buf := make([]byte, recSize)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		f.Close()
		return nil, fmt.Errorf("read record %s: %w", path, err)
	}
	for i := range 2 {
		at := i * recSlotB
		if n < at+recSlotLen {
			continue
		}
		if a, err := decodeApplied(buf[at : at+recSlotLen]); err == nil {
			r.slots[i] = &a
		}
	}
	if a, b := r.slots[0], r.slots[1]; a != nil && (b == nil || int64(a.Counter-b.Counter) >= 0) {
		r.newest = 0
	}
	return r, nil
}

// reconcile picks the record that fits an output of size bytes and returns
// the length the output must be truncated to (-1: leave it).
func (r *sideRecord) reconcile(size int64, log hclog.Logger) int64 {
	first, other := r.slots[r.newest], r.slots[1-r.newest]
	if first == nil {
		first, other = other, nil
	}
	if first == nil {
		return -1 // no record yet: nothing was applied under exactlyOnce
	}
	r.cur = *first
	if first.Length <= size {
		if first.Length < size {
			return first.Length
		}
		return -1
	}
	log.Warn("exactlyOnce record is longer than the output; the output lost bytes it had seen",
		"record", r.path, "recordLength", first.Length, "outputLength", size)
	if other != nil && other.Length <= size {
		log.Warn("using the record's other slot", "recordLength", other.Length)
		// The other slot is now the one in force: the next store goes over
		// the slot that is too long, with a counter above it, so the stale
		// slot can never win again at a later open.
		r.cur = *other
		r.cur.Counter = first.Counter
		r.newest = 1 - r.newest
		if other.Length < size {
			return other.Length
		}
		return -1
	}
	log.Warn("no usable exactlyOnce record; re-deliveries will be written again (duplicates, never a gap)")
	r.cur = applied{Counter: first.Counter}
	return -1
}

// store writes a into the slot not holding the newest record and syncs it
// when sync is set. On failure the newest slot is unchanged (the next store
// rewrites the same slot) and the record in force stays as it was.
func (r *sideRecord) store(a applied, sync bool) error {
	a.Counter = r.cur.Counter + 1
	slot := 1 - r.newest
	encodeApplied(r.buf[:], a)
	if _, err := r.f.WriteAt(r.buf[:], int64(slot*recSlotB)); err != nil {
		return fmt.Errorf("write record %s: %w", r.path, err)
	}
	if sync {
		if err := r.f.Sync(); err != nil {
			return fmt.Errorf("fsync record %s: %w", r.path, err)
		}
	}
	r.cur, r.newest = a, slot
	r.slots[slot] = &a
	return nil
}

// openRecord loads the side record and makes the output agree with it.
func (s *FileSink) openRecord() error {
	rec, err := loadRecord(s.cfg.Record, s.cfg.OpenRecord)
	if err != nil {
		return err
	}
	log := s.cfg.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	if to := rec.reconcile(s.size, log); to >= 0 {
		log.Info("truncating the output to its exactlyOnce record (an unrecorded tail will be delivered again)",
			"path", s.cfg.Path, "from", s.size, "to", to)
		if err := s.f.Truncate(to); err != nil {
			rec.f.Close()
			return fmt.Errorf("truncate %s to its record: %w", s.cfg.Path, err)
		}
		if s.cfg.Fsync != FsyncNever {
			if err := s.f.Sync(); err != nil {
				rec.f.Close()
				return fmt.Errorf("fsync %s: %w", s.cfg.Path, err)
			}
		}
		s.size, s.synced = to, to
	}
	s.rec = rec
	s.applied = rec.cur
	return nil
}

// processOnce is ProcessBatch under exactlyOnce: skip the lines already
// applied, write the rest, and store the record before they count as done.
func (s *FileSink) processOnce(ctx context.Context, b *feed.Batch) (int, error) {
	skip := 0
	for skip < len(b.Lines) && b.AlreadyApplied(skip, s.applied.Epoch, s.applied.Position) {
		skip++
	}
	if skip > 0 {
		v := &s.view
		*v = feed.Batch{Feed: b.Feed, Path: b.Path, Epoch: b.Epoch, Positioned: b.Positioned,
			FirstSeq: b.FirstSeq + uint64(skip), Lines: b.Lines[skip:], Ends: b.Ends[skip:]}
		b = v
	}
	prev, before, beforeSynced := s.applied, s.size, s.synced
	if s.cfg.Fsync == FsyncInterval && len(b.Lines) > 0 {
		// Stored at the flush, after the output's fsync (which may happen
		// inside processBatch, once the lines are written).
		s.applied = s.next(b, prev)
	}
	n, err := s.processBatch(ctx, b)
	if err != nil || n == 0 {
		s.applied = prev
		return skip + n, err
	}
	if s.cfg.Fsync == FsyncInterval {
		return skip + n, nil
	}
	next := s.next(b, prev)
	next.Length = s.size
	if err := s.rec.store(next, s.cfg.Fsync == FsyncAlways); err != nil {
		// The lines must not count as done without their record: take them
		// back out of the output.
		s.size, s.synced = before, beforeSynced
		if terr := s.f.Truncate(before); terr != nil {
			s.broken = true
			return skip, fmt.Errorf("%w (truncate back failed: %v): %w", err, terr, ErrFatal)
		}
		return skip, err
	}
	s.applied = s.rec.cur
	return skip + n, nil
}

// next is the applied state after writing b's lines.
func (s *FileSink) next(b *feed.Batch, prev applied) applied {
	if b.Positioned && len(b.Lines) > 0 {
		prev.Epoch, prev.Position = b.Epoch, b.LastEnd()
	}
	return prev
}

// storeFlushed stores the record after an interval flush synced the output
// (everything written so far, so the length is the output's).
func (s *FileSink) storeFlushed() error {
	if s.rec == nil {
		return nil
	}
	a := s.applied
	a.Length, a.Counter = s.size, s.rec.cur.Counter
	if a == s.rec.cur {
		return nil
	}
	if err := s.rec.store(a, true); err != nil {
		return err
	}
	s.applied = s.rec.cur
	return nil
}

// closeRecord closes the side record.
func (s *FileSink) closeRecord() error {
	if s.rec == nil {
		return nil
	}
	return s.rec.f.Close()
}
