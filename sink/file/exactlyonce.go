package file

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/hashicorp/go-hclog"

	"tailfeed/feed"
	"tailfeed/internal/slotrec"
	"tailfeed/processor"
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
//     a power loss under fsync: never, or the output put back to an
//     earlier copy alone): WARN, take the other slot if its length fits
//     (and truncate to it), else keep only the record's epoch, at position
//     0 — the catch-up (DESIGN §11) re-reads that epoch from its start,
//     duplicates of what the output kept of it, never a gap within it —
//     and report the doubt (DoneThroughDoubt): lines of earlier epochs the
//     output lost cannot be told apart, so the daemon counts a possible
//     loss.
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
// torn write damages only the record being written. The framing (magic,
// layout, counter, checksum, the choice of slot) is internal/slotrec's:
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

// RecordFile is a record's file (the exactlyOnce side record, the
// webhook's record): the seam for fault injection.
type RecordFile = slotrec.RecordFile

// openRecordFile opens a record file, fsyncing the directory of one it
// creates.
func openRecordFile(path string) (RecordFile, error) { return slotrec.OpenFile(path) }

// recSlotB is the offset of a record's slot B.
const recSlotB = slotrec.SlotB

// recFormat is the side record's slot format (the table above).
var recFormat = slotrec.Format{Name: "record", Magic: "TFREC", Layout: 1, CounterAt: 32,
	Check: func(b []byte) error { _, err := decodeApplied(b); return err }}

// applied is one side-record value (its counter is the record file's).
type applied struct {
	Epoch    uint64
	Position int64
	Length   int64
}

// encodeApplied writes a's payload into the slot b; the record file adds
// the header, the counter and the checksum.
func encodeApplied(b []byte, a applied) {
	clear(b)
	le := binary.LittleEndian
	le.PutUint64(b[8:], a.Epoch)
	le.PutUint64(b[16:], uint64(a.Position))
	le.PutUint64(b[24:], uint64(a.Length))
}

func decodeApplied(b []byte) (applied, error) {
	le := binary.LittleEndian
	a := applied{
		Epoch:    le.Uint64(b[8:]),
		Position: int64(le.Uint64(b[16:])),
		Length:   int64(le.Uint64(b[24:])),
	}
	if a.Position < 0 || a.Length < 0 {
		return applied{}, errors.New("negative position or length")
	}
	return a, nil
}

// sideRecord is an open side record.
type sideRecord struct {
	f     *slotrec.File
	slots [2]*applied // valid slot contents as read at open (nil: none)
	cur   applied     // the record in force
	buf   [slotrec.SlotLen]byte
	lost  int64 // reconcile gave the record up: the output bytes it had seen that are gone
}

// loadRecord opens the record and reads both slots.
func loadRecord(path string, open func(string) (RecordFile, error)) (*sideRecord, error) {
	f, err := slotrec.Open(path, recFormat, open)
	if err != nil {
		return nil, err
	}
	r := &sideRecord{f: f}
	for i := range r.slots {
		if b, err := f.Slot(i); err == nil {
			a, _ := decodeApplied(b) // valid: recFormat.Check accepted it
			r.slots[i] = &a
		}
	}
	return r, nil
}

// reconcile picks the record that fits an output of size bytes and returns
// the length the output must be truncated to (-1: leave it), and whether
// it gave up the newest slot (the other slot, or no record): the caller
// must then store the record it chose before any delivery (openRecord).
func (r *sideRecord) reconcile(size int64, log hclog.Logger) (int64, bool) {
	newest, ok := r.f.Newest()
	if !ok {
		return -1, false // no record yet: nothing was applied under exactlyOnce
	}
	first, other := r.slots[newest], r.slots[1-newest]
	r.cur = *first
	if first.Length <= size {
		if first.Length < size {
			return first.Length, false
		}
		return -1, false
	}
	log.Warn("exactlyOnce record is longer than the output; the output lost bytes it had seen",
		"record", r.f.Path(), "recordLength", first.Length, "outputLength", size)
	if other != nil && other.Length <= size && r.f.Fallback() {
		log.Warn("using the record's other slot", "recordLength", other.Length)
		// The other slot is now the one in force: the next store goes over
		// the slot that is too long, with a counter above it, so the stale
		// slot can never win again at a later open.
		r.cur = *other
		if other.Length < size {
			return other.Length, true
		}
		return -1, true
	}
	// Where in its epoch the output now ends is not known: the record
	// keeps the epoch at position 0, so the catch-up re-reads that epoch
	// from its start (duplicates of the lines the output kept of it, never
	// a gap), and the sink reports the doubt (DoneThroughDoubt): lines of
	// earlier epochs the output lost cannot be re-read that way.
	log.Warn("no usable exactlyOnce record; the epoch of its last line is re-read from its start (duplicates, never a gap within it)",
		"epoch", fmt.Sprintf("%016x", first.Epoch))
	r.lost = first.Length - size
	r.cur = applied{Epoch: first.Epoch, Length: size}
	return -1, true
}

// store writes a into the slot not holding the newest record and syncs it
// when sync is set. On failure the newest slot is unchanged (the next store
// rewrites the same slot) and the record in force stays as it was.
func (r *sideRecord) store(a applied, sync bool) error {
	encodeApplied(r.buf[:], a)
	if err := r.f.Store(r.buf[:], sync); err != nil {
		return err
	}
	r.cur = a
	return nil
}

// openRecord loads the side record and makes the output agree with it.
func (s *Sink) openRecord() error {
	if s.cfg.PerEpoch {
		return s.openRecord2()
	}
	if err := s.dropLayout2(); err != nil {
		return err
	}
	rec, err := loadRecord(s.cfg.Record, s.cfg.OpenRecord)
	if err != nil {
		return err
	}
	log := s.cfg.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	if rec.f.Damaged() {
		log.Warn("exactlyOnce record has no valid slot; starting without one (lines may be written again, never a gap)",
			"record", s.cfg.Record)
	}
	to, fellBack := rec.reconcile(s.size, log)
	if to >= 0 {
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
	if _, ok := rec.f.Newest(); !ok {
		// No record yet: store one for the output as it is (its length,
		// no epoch: no mark, never "behind"), synced, before any delivery.
		// Else what this run writes before its first store (an interval's
		// first flush) looked, after a kill -9, like output that was there
		// before, and the re-delivered lines went after it: every one of
		// them twice (audit 9C). With it, the open truncates back to it.
		if err := rec.store(applied{Length: s.size}, true); err != nil {
			rec.f.Close()
			return fmt.Errorf("store %s: %w", rec.f.Path(), err)
		}
	}
	if fellBack {
		// Store the record chosen (synced, whatever the fsync policy)
		// before any delivery: left on disk, the stale newest slot would
		// fit again once re-deliveries were written, and a crash before the
		// next store would truncate to it and skip lines — a gap.
		a := rec.cur
		a.Length = s.size
		if err := rec.store(a, true); err != nil {
			rec.f.Close()
			return fmt.Errorf("store %s after giving up its newest record: %w", rec.f.Path(), err)
		}
	}
	s.rec = rec
	s.applied = rec.cur
	s.noteLost(rec.lost)
	return nil
}

// noteLost records, for DoneThroughDoubt, that the output was found n > 0
// bytes shorter than every record slot.
func (s *Sink) noteLost(n int64) {
	if n > 0 {
		s.doubt = fmt.Sprintf("its exactlyOnce output %s is %d bytes shorter than its record (put back to an earlier copy, or cut, while its record stayed newer): "+
			"the epoch of its last recorded line is re-read from its start, but lines of earlier epochs the output lost cannot be told apart", s.cfg.Path, n)
	}
}

// DoneThroughDoubt implements processor.DoneThroughDoubter: what the sink
// found at open that it cannot tell (its output shorter than its record).
func (s *Sink) DoneThroughDoubt() string { return s.doubt }

// processOnce is ProcessBatch under exactlyOnce: skip the lines already
// applied, write the rest, and store the record before they count as done.
func (s *Sink) processOnce(ctx context.Context, b *feed.Batch) (int, error) {
	skip := 0
	for skip < len(b.Lines) && (b.AlreadyApplied(skip, s.applied.Epoch, s.applied.Position) ||
		(b.Positioned && s.held.Covers(s.applied.Epoch, b.Epoch, b.Ends[skip]))) {
		skip++
	}
	if skip > 0 {
		v := &s.view
		*v = feed.Batch{Feed: b.Feed, Path: b.Path, Epoch: b.Epoch, Positioned: b.Positioned,
			FirstSeq: b.FirstSeq + uint64(skip), Lines: b.Lines[skip:], Ends: b.Ends[skip:], Through: b.Done()}
		b = v
	}
	if len(b.Lines) == 0 {
		if !b.Positioned || !s.held.Covers(s.applied.Epoch, b.Epoch, b.Done()) {
			s.passOver(b) // not over an older epoch held whole: the record stays
		}
		s.processBatch(ctx, b) // moves an interval's durable mark over the batch
		return skip, nil
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
			return skip, fmt.Errorf("%w (truncate back failed: %v): %w", err, terr, processor.ErrFatal)
		}
		return skip, err
	}
	s.applied = s.rec.cur
	return skip + n, nil
}

// next is the applied state after writing b's lines: through b.Done(),
// past lines of the batch finished without the sink (DESIGN §11: the
// record advances over filtered, dead-lettered and released lines).
func (s *Sink) next(b *feed.Batch, prev applied) applied {
	if advances(b, prev.Epoch, prev.Position) {
		prev.Epoch, prev.Position = b.Epoch, b.Done()
	}
	return prev
}

// advances reports whether finishing b moves a record at (epoch, pos):
// a positioned batch that ends past it, or of another epoch. A replayed
// dead letter (not positioned) never moves it.
func advances(b *feed.Batch, epoch uint64, pos int64) bool {
	return b.Positioned && b.Done() > 0 && (b.Epoch != epoch || b.Done() > pos)
}

// passOver advances the record over b, a batch that writes nothing (lines
// the group's filters took out, dead-lettered or released, or re-deliveries
// applied before): stored under the fsync policy, or at the next flush
// when written lines wait for theirs. A failed store leaves the record
// behind (a catch-up would re-read those lines: duplicates, never a gap);
// an empty batch never fails.
func (s *Sink) passOver(b *feed.Batch) {
	next := s.next(b, s.applied)
	if next == s.applied {
		return
	}
	if s.cfg.Fsync == FsyncInterval && !s.firstDirty.IsZero() {
		s.applied = next // stored at the flush, with the lines before it
		return
	}
	next.Length = s.size
	if err := s.rec.store(next, s.cfg.Fsync == FsyncAlways); err != nil {
		if s.cfg.Logger != nil {
			s.cfg.Logger.Warn("exactlyOnce record not advanced over lines finished without the sink", "error", err)
		}
		return
	}
	s.applied = s.rec.cur
}

// storeFlushed stores the record after an interval flush synced the output
// (everything written so far, so the length is the output's).
func (s *Sink) storeFlushed() error {
	if s.rec2 != nil {
		return s.storeFlushed2()
	}
	if s.rec == nil {
		return nil
	}
	a := s.applied
	a.Length = s.size
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
func (s *Sink) closeRecord() error {
	if s.rec2 != nil {
		return s.rec2.f.Close()
	}
	if s.rec == nil {
		return nil
	}
	return s.rec.f.Close()
}

// recordMarks is the record's done-through marks (DESIGN §11): one per
// epoch it holds a position for (layout 1: the last applied line's; layout
// 2: every epoch's); none without a record (or after giving up one that
// did not fit the output: duplicates, never "behind").
func (s *Sink) recordMarks() []processor.Mark {
	var out []processor.Mark
	if s.rec2 != nil {
		for e, p := range s.rec2.pos {
			out = append(out, processor.Mark{Epoch: e, Position: p})
		}
		return out
	}
	if s.applied.Epoch != 0 {
		out = append(out, processor.Mark{Epoch: s.applied.Epoch, Position: s.applied.Position})
	}
	return out
}

// DoneThrough implements processor.DoneThrougher: the marks of the record
// as the sink found it at open (after making the output agree with it),
// before any delivery of this run.
func (s *Sink) DoneThrough(context.Context) ([]processor.Mark, error) {
	return slices.Clone(s.marks), nil
}
