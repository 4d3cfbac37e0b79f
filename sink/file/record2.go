package file

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/hashicorp/go-hclog"

	"tailfeed/feed"
	"tailfeed/internal/slotrec"
)

// The exactlyOnce record per epoch (layout 2, DESIGN §10 "Sinks and
// streams"), used when the feed is a glob: lines of many files (epochs)
// interleave, so the record keeps, for every epoch, the position just after
// its last applied line, and AlreadyApplied(e, p) is answered from that
// epoch's entry (records of other epochs untouched).
//
// # Layout 2 (little-endian)
//
// Two copies of 64 KiB, A at byte 0 and B at byte 65536; a store writes the
// copy that does not hold the newest valid record, so a torn write damages
// only the record being written. Each copy:
//
//	off  size  field
//	  0     5  magic "TFREC"
//	  5     1  zero
//	  6     2  layout version (uint16) = 2
//	  8     8  counter (uint64): +1 per store; the higher valid copy wins
//	 16     8  length (int64): output bytes after the last applied line
//	 24     4  n (uint32): entries, at most 4,000
//	 28     4  zero
//	 32  16×n  entries: epoch (uint64), position (int64)
//	 32+16n 4  CRC-32C (Castagnoli) over bytes 0 .. 32+16n
//
// At most 4,000 epochs are kept: the least recently applied is dropped
// first (its re-deliveries, should any come, would be written again: a
// duplicate, never a gap). A layout 1 record (one epoch, 1,024 bytes) is
// read and its epoch taken over; the first store writes copy B (past the
// layout 1 bytes), so a crash during the conversion leaves one of them.

const (
	rec2Copy    = 64 << 10
	rec2Max     = 4000
	rec2Header  = 32
	rec2Layout  = 2
	rec2Version = "TFREC"
)

var rec2CRC = crc32.MakeTable(crc32.Castagnoli)

// epochRecord is an open layout 2 record.
type epochRecord struct {
	f       RecordFile
	path    string
	pos     map[uint64]int64  // epoch → position after its last applied line
	touched map[uint64]uint64 // epoch → store sequence of its last update (eviction order)
	seq     uint64
	length  int64
	counter uint64
	newest  int // the copy holding the record in force (-1: none)
	buf     []byte

	copies [2]*rec2Image
	lost   int64 // reconcile gave the record up: the output bytes it had seen that are gone
}

type rec2Image struct {
	counter uint64
	length  int64
	pos     map[uint64]int64
	order   []uint64 // epochs in stored order
}

func decodeRec2(b []byte) (*rec2Image, error) {
	if len(b) < rec2Header+4 || string(b[:5]) != rec2Version || b[5] != 0 {
		return nil, errors.New("no layout 2 record")
	}
	le := binary.LittleEndian
	if le.Uint16(b[6:]) != rec2Layout {
		return nil, fmt.Errorf("layout %d", le.Uint16(b[6:]))
	}
	n := int(le.Uint32(b[24:]))
	end := rec2Header + 16*n
	if n > rec2Max || end+4 > len(b) {
		return nil, fmt.Errorf("%d entries", n)
	}
	if crc32.Checksum(b[:end], rec2CRC) != le.Uint32(b[end:]) {
		return nil, errors.New("checksum mismatch")
	}
	c := &rec2Image{counter: le.Uint64(b[8:]), length: int64(le.Uint64(b[16:])), pos: make(map[uint64]int64, n)}
	if c.length < 0 {
		return nil, errors.New("negative length")
	}
	for i := 0; i < n; i++ {
		e, p := le.Uint64(b[rec2Header+16*i:]), int64(le.Uint64(b[rec2Header+16*i+8:]))
		if p < 0 {
			return nil, errors.New("negative position")
		}
		c.pos[e] = p
		c.order = append(c.order, e)
	}
	return c, nil
}

// loadRecord2 opens the record at path: layout 2 copies first, else a
// layout 1 record taken over.
func loadRecord2(path string, open func(string) (RecordFile, error)) (*epochRecord, error) {
	if open == nil {
		open = openRecordFile
	}
	f, err := open(path)
	if err != nil {
		return nil, err
	}
	r := &epochRecord{f: f, path: path, pos: map[uint64]int64{}, touched: map[uint64]uint64{}, newest: -1,
		buf: make([]byte, rec2Copy)}
	for i := range r.copies {
		n, _ := f.ReadAt(r.buf, int64(i*rec2Copy))
		if c, err := decodeRec2(r.buf[:n]); err == nil {
			r.copies[i] = c
		}
	}
	return r, nil
}

// reconcile picks the newest copy that fits an output of size bytes (as
// layout 1 does) and returns the length to truncate the output to (-1:
// leave it) and whether a store must come before any delivery.
func (r *epochRecord) reconcile(size int64, log hclog.Logger, v1 *sideRecord) (int64, bool) {
	a, b := r.copies[0], r.copies[1]
	first, second := 0, 1
	if a == nil || (b != nil && b.counter > a.counter) {
		first, second = 1, 0
	}
	pick := func(i int) bool {
		c := r.copies[i]
		if c == nil || c.length > size {
			return false
		}
		r.newest, r.counter, r.length = i, c.counter, c.length
		for _, e := range c.order {
			r.seq++
			r.pos[e], r.touched[e] = c.pos[e], r.seq
		}
		return true
	}
	switch {
	case r.copies[first] == nil && v1 != nil:
		// A layout 1 record: its one epoch, taken over.
		to, fellBack := v1.reconcile(size, log)
		if v1.cur.Epoch != 0 {
			r.seq++
			r.pos[v1.cur.Epoch], r.touched[v1.cur.Epoch] = v1.cur.Position, r.seq
		}
		r.length, r.newest = v1.cur.Length, 0 // the first store goes to copy B
		if to >= 0 {
			r.length = to
		}
		_ = fellBack
		r.lost = v1.lost
		return to, true
	case r.copies[first] == nil:
		r.length = size
		return -1, false // no record yet
	case pick(first):
		if r.length < size {
			return r.length, false
		}
		return -1, false
	}
	log.Warn("exactlyOnce record is longer than the output; the output lost bytes it had seen",
		"record", r.path, "recordLength", r.copies[first].length, "outputLength", size)
	if pick(second) {
		log.Warn("using the record's other copy", "recordLength", r.length)
		r.newest = first // the next store overwrites the copy that is too long
		r.counter = r.copies[first].counter
		if r.length < size {
			return r.length, true
		}
		return -1, true
	}
	// As layout 1: each epoch of the record in force is kept at position
	// 0 (re-read from its start by the catch-up) and the doubt reported.
	log.Warn("no usable exactlyOnce record; its epochs are re-read from their start (duplicates, never a gap within them)")
	r.length = size
	if c := r.copies[first]; c != nil {
		r.counter = c.counter
		r.lost = c.length - size
		for _, e := range c.order {
			r.seq++
			r.pos[e], r.touched[e] = 0, r.seq
		}
	}
	return -1, true
}

// applied is the position recorded for epoch (ok false: none).
func (r *epochRecord) applied(epoch uint64) (int64, bool) {
	p, ok := r.pos[epoch]
	return p, ok
}

// put records b's last position (b.Done(): past lines finished without the
// sink) under its epoch (in memory; store writes it). It returns what to
// restore should the store fail, and whether the entry moved: never
// backwards, and never for a batch without positions (a replayed dead
// letter).
func (r *epochRecord) put(b *feed.Batch) (undo func(), moved bool) {
	if !b.Positioned || b.Done() == 0 {
		return func() {}, false
	}
	e := b.Epoch
	old, had := r.pos[e]
	if had && old >= b.Done() {
		return func() {}, false // re-deliveries applied before
	}
	oldT := r.touched[e]
	r.seq++
	r.pos[e], r.touched[e] = b.Done(), r.seq
	return func() {
		if had {
			r.pos[e], r.touched[e] = old, oldT
		} else {
			delete(r.pos, e)
			delete(r.touched, e)
		}
	}, true
}

// store writes the table and length into the copy not holding the newest
// record, syncing it when sync is set.
func (r *epochRecord) store(length int64, sync bool) error {
	for len(r.pos) > rec2Max {
		var oldE, oldT uint64
		first := true
		for e, t := range r.touched {
			if first || t < oldT {
				oldE, oldT, first = e, t, false
			}
		}
		delete(r.pos, oldE)
		delete(r.touched, oldE)
	}
	le := binary.LittleEndian
	b := r.buf[:rec2Header+16*len(r.pos)+4]
	clear(b[:rec2Header])
	copy(b, rec2Version)
	le.PutUint16(b[6:], rec2Layout)
	le.PutUint64(b[8:], r.counter+1)
	le.PutUint64(b[16:], uint64(length))
	le.PutUint32(b[24:], uint32(len(r.pos)))
	i := 0
	for e, p := range r.pos {
		le.PutUint64(b[rec2Header+16*i:], e)
		le.PutUint64(b[rec2Header+16*i+8:], uint64(p))
		i++
	}
	end := rec2Header + 16*i
	le.PutUint32(b[end:], crc32.Checksum(b[:end], rec2CRC))
	to := 1 - r.newest
	if r.newest < 0 {
		to = 1
	}
	if _, err := r.f.WriteAt(b, int64(to*rec2Copy)); err != nil {
		return fmt.Errorf("store %s: %w", r.path, err)
	}
	if sync {
		if err := r.f.Sync(); err != nil {
			return fmt.Errorf("fsync %s: %w", r.path, err)
		}
	}
	r.newest, r.counter, r.length = to, r.counter+1, length
	return nil
}

// dropLayout2 clears, for a single-file feed, a record a glob feed wrote
// (layout 2) before it is read: a single-file feed does not read layout 2
// (docs/formats.md), and the layout 1 slots under it are older than it —
// the glob's first store goes to copy B and leaves slot B (byte 512)
// behind copy A's used bytes, so a later single-file open took that stale
// slot and cut acknowledged lines from the output (audit 10A). Both
// layouts' headers are zeroed and synced: the sink then has no record
// (duplicates, never a gap) and stores one for the output as it is before
// any delivery. A kill -9 in between leaves no record either.
func (s *Sink) dropLayout2() error {
	rec, err := loadRecord2(s.cfg.Record, s.cfg.OpenRecord)
	if err != nil {
		return err
	}
	defer rec.f.Close()
	if rec.copies[0] == nil && rec.copies[1] == nil {
		return nil
	}
	if s.cfg.Logger != nil {
		s.cfg.Logger.Warn("exactlyOnce record was written for a glob feed (layout 2): a single-file feed starts without one (lines may be written again, never a gap)",
			"record", s.cfg.Record)
	}
	zero := make([]byte, recSlotB+slotrec.SlotLen)
	if _, err := rec.f.WriteAt(zero, 0); err != nil {
		return fmt.Errorf("clear layout 2 record %s: %w", s.cfg.Record, err)
	}
	if rec.copies[1] != nil {
		if _, err := rec.f.WriteAt(zero[:rec2Header], rec2Copy); err != nil {
			return fmt.Errorf("clear layout 2 record %s: %w", s.cfg.Record, err)
		}
	}
	if err := rec.f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", s.cfg.Record, err)
	}
	return nil
}
