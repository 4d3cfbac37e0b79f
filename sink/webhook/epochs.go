package webhook

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sort"
	"time"

	"github.com/hashicorp/go-hclog"

	"tailfeed/internal/slotrec"
)

// The record per epoch (DESIGN §10 "Sinks and streams"). A glob feed's
// files (epochs) interleave, so the webhook keeps, for every epoch, the
// position just after its last line a 2xx acknowledged and the request it
// recorded before its first POST (one pending range per epoch): a restart
// skips each file's applied lines by its own epoch's entry and rebuilds
// each recorded request under its key, whatever lines of other files come
// between its parts. A single-file feed keeps layout 1 (record.go), whose
// one applied position and one request are the same table held to the
// latest of each.
//
// # Layout 2 (little-endian)
//
// Two copies of the same size S (131072 bytes, or a power of two times
// that once the table outgrew it), A at byte 0 and B at byte S; a store
// writes the copy that does not hold the newest valid record and fsyncs
// it, so a torn write damages only the record being written. Each copy:
//
//	off    size  field
//	  0       5  magic "TFWHK"
//	  5       1  zero
//	  6       2  layout version (uint16) = 2
//	  8       8  counter (uint64): +1 per store; the higher valid copy wins
//	 16       4  n (uint32): entries; 32+32n+4 <= S
//	 20       4  S (uint32): the copy size (0: 131072, as first written)
//	 24       8  zero
//	 32    32×n  entries, least recently stored first: epoch (uint64),
//	             applied position (int64, 0 = none), recorded request's
//	             first and last positions (int64, 0 = none)
//	 32+32n   4  CRC-32C (Castagnoli) over bytes 0 .. 32+32n
//
// A store writes only those 32+32n+4 bytes. A table that no longer fits
// its copy grows: the store writes it as copy B of the next size S' (the
// smallest power-of-two multiple of S that holds it, at byte S', past both
// copies in force), then stores alternate between A (byte 0) and B (byte
// S'). A reader tries A and every B candidate (131072 × 2^k below the
// file's end) whose S is its own offset, and takes the valid copy with the
// highest counter (a stale copy of a smaller S left behind has a lower
// one).
//
// A layout 1 record (a feed that became a glob) is read and its applied
// position and request taken over; the first store writes copy B, past the
// layout 1 bytes, so a crash during the conversion leaves one of them. A
// file with neither is no record (WARN when it held bytes): lines may be
// sent again, under new keys — duplicates, never a gap. A layout 2 record
// is not read by a single-file feed (the feed stopped being a glob): it
// starts without a record, as after a damaged one.
//
// # Bound
//
// An entry matters only while its stream can deliver again a line it
// covers: after a restart a stream re-reads from its pointer. So the entry
// of an epoch is dropped once that epoch's stream pointer holds an offset
// at or past both its applied position and its recorded request's end
// (committed past: those lines never come again), or once no stream
// pointer holds the epoch any more (the stream was forgotten, reset, or
// moved to another epoch) — never the entry being stored, and never an
// entry whose stream pointer is behind it, however many there are: such a
// stream re-reads those lines after a restart, and only the entry keeps
// them applied once at a deduping receiver. The table is therefore bounded
// by the streams tracked (one current epoch each; its pointer holds it),
// not by a constant: it grows its copies instead (above). The table is
// swept at a store when it reached twice its size after the last sweep (at
// least 64 entries), and, while it holds more than 64, at the first store
// after a start and at most every 5 s, at a cost of one read per entry's
// pointer per sweep. While the pointer directory cannot be read nothing is
// dropped (WARN once per distinct error). A glob feed without stream
// pointers (not COMMITTED) opens every file under a new epoch at every
// start, so no restart needs an entry: each sweep keeps only the entry
// being stored. A pointer commit that was not synced when a power loss
// struck may be lost after its entry was dropped: those lines go out again
// under new keys (duplicates, never a gap; kill -9 loses nothing of the
// kind); so does a restored sink's catch-up (DESIGN §11), which re-reads
// lines a dropped entry covered and gives every subscriber duplicates
// anyway.

const (
	wh2Copy     = 128 << 10 // the first copy size
	wh2MaxCopy  = 1 << 30   // the largest copy a reader looks for
	wh2Header   = 32
	wh2EntryLen = 32
	wh2Sweep    = 64 // smallest table size that triggers a sweep
	wh2Every    = 5 * time.Second
)

var wh2CRC = crc32.MakeTable(crc32.Castagnoli)

// whEntry is one epoch's part of the record.
type whEntry struct {
	Applied     int64 // just after the last line a 2xx acknowledged (0: none)
	First, Last int64 // the request recorded before its first POST (Last 0: none)
	used        uint64
}

// pending reports whether the recorded request was not acknowledged yet.
func (e *whEntry) pending() bool { return e != nil && e.Last > 0 && e.Applied < e.Last }

// whBook is the record in memory and on disk: layout 1 (one applied
// position, one request: a single-file feed) or layout 2 (per epoch).
type whBook struct {
	perEpoch  bool
	ent       map[uint64]*whEntry
	seq       uint64
	v1        *whRecord
	v2        *whRecord2
	committed func([]uint64) (map[uint64]int64, error)
	sweepAt   int
	swept     time.Time // the last sweep (zero: none yet this run)
	warned    string    // the last pointer-reading error logged at WARN
	log       hclog.Logger
}

// entry returns epoch's entry (nil: none).
func (k *whBook) entry(epoch uint64) *whEntry { return k.ent[epoch] }

// pendingOf returns the entry of epoch when its request is pending.
func (k *whBook) pendingOf(epoch uint64) *whEntry {
	if e := k.ent[epoch]; e.pending() {
		return e
	}
	return nil
}

// pendingAny returns the pending entries, by epoch.
func (k *whBook) pendingAny() []uint64 {
	var out []uint64
	for ep, e := range k.ent {
		if e.pending() {
			out = append(out, ep)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func (k *whBook) touch(epoch uint64) *whEntry {
	e := k.ent[epoch]
	if e == nil {
		e = &whEntry{}
		k.ent[epoch] = e
	}
	k.seq++
	e.used = k.seq
	return e
}

// snapshot returns what restores the table as it is now, should a store
// fail (layout 1: the whole table, at most two entries; layout 2: epoch's
// entry, the only one an update changes).
func (k *whBook) snapshot(epoch uint64) func() {
	if !k.perEpoch {
		old := make(map[uint64]whEntry, len(k.ent))
		for ep, e := range k.ent {
			old[ep] = *e
		}
		return func() {
			clear(k.ent)
			for ep, e := range old {
				k.ent[ep] = &e
			}
		}
	}
	e, had := k.ent[epoch]
	var old whEntry
	if had {
		old = *e
	}
	return func() {
		if !had {
			delete(k.ent, epoch)
			return
		}
		*k.ent[epoch] = old
	}
}

// recordRange stores (epoch, first, last) as the request before its first
// POST; on failure the table is as it was.
func (k *whBook) recordRange(epoch uint64, first, last int64) error {
	undo := k.snapshot(epoch)
	if !k.perEpoch {
		for ep, e := range k.ent {
			if ep != epoch {
				e.First, e.Last = 0, 0
			}
		}
		k.dropEmpty()
	}
	e := k.touch(epoch)
	e.First, e.Last = first, last
	if err := k.save(); err != nil {
		undo()
		return err
	}
	return nil
}

// markApplied stores epoch's applied position. A failed store keeps the
// table updated (the request was acknowledged: a resend after a restart
// carries the same key) and returns the error.
func (k *whBook) markApplied(epoch uint64, pos int64) error {
	if !k.perEpoch {
		for ep, e := range k.ent {
			if ep != epoch {
				e.Applied = 0
			}
		}
		k.dropEmpty()
	}
	k.touch(epoch).Applied = pos
	return k.save()
}

func (k *whBook) dropEmpty() {
	for ep, e := range k.ent {
		if e.Applied == 0 && e.Last == 0 {
			delete(k.ent, ep)
		}
	}
}

// save writes the table.
func (k *whBook) save() error {
	if !k.perEpoch {
		var s whState
		for ep, e := range k.ent {
			if e.Applied > 0 {
				s.AppliedEpoch, s.AppliedPos = ep, e.Applied
			}
			if e.Last > 0 {
				s.BatchEpoch, s.BatchFirst, s.BatchLast = ep, e.First, e.Last
			}
		}
		return k.v1.store(s)
	}
	if n := len(k.ent); n >= k.sweepAt || (n > wh2Sweep && time.Since(k.swept) >= wh2Every) {
		k.sweep()
	}
	return k.v2.store(k.ent)
}

// sweep drops the entries no restart needs (see Bound above): never one
// whose stream pointer is behind it.
func (k *whBook) sweep() {
	before := len(k.ent)
	if k.committed != nil {
		epochs := make([]uint64, 0, len(k.ent))
		for ep := range k.ent {
			epochs = append(epochs, ep)
		}
		at, err := k.committed(epochs)
		if err != nil {
			if msg := err.Error(); msg != k.warned {
				k.warned = msg
				k.log.Warn("webhook record: stream pointers not read; keeping every epoch's entry", "error", err)
			}
		} else {
			k.warned = ""
			for ep, e := range k.ent {
				off, ok := at[ep]
				if e.used != k.seq && (!ok || off >= max(e.Applied, e.Last)) { // never the entry this store is for
					delete(k.ent, ep)
				}
			}
		}
	}
	k.sweepAt = max(wh2Sweep, 2*len(k.ent))
	k.swept = time.Now()
	if d := before - len(k.ent); d > 0 {
		k.log.Debug("webhook record: epochs no restart needs dropped", "dropped", d, "kept", len(k.ent))
	}
}

// close closes the record file.
func (k *whBook) close() error {
	if k.perEpoch {
		return k.v2.f.Close()
	}
	return k.v1.f.Close()
}

// openBook opens the record: layout 1 for a single-file feed, layout 2
// (taking a layout 1 record over) for a glob.
func openBook(cfg WebhookConfig, log hclog.Logger) (*whBook, error) {
	k := &whBook{perEpoch: cfg.PerEpoch, ent: map[uint64]*whEntry{}, committed: cfg.Committed, sweepAt: wh2Sweep, log: log}
	if !cfg.PerEpoch {
		if err := dropWH2(cfg.Record, cfg.OpenRecord, log); err != nil {
			return nil, err
		}
		rec, ok, err := loadWH(cfg.Record, cfg.OpenRecord)
		if err != nil {
			return nil, err
		}
		k.v1 = rec
		if !ok && rec.damaged {
			log.Warn("webhook record has no valid slot; starting without one (lines may be sent again, under new keys)",
				"record", cfg.Record)
		}
		if ok {
			k.take(rec.disk)
		}
		return k, nil
	}
	rec, img, v1, damaged, err := loadWH2(cfg.Record, cfg.OpenRecord)
	if err != nil {
		return nil, err
	}
	k.v2 = rec
	switch {
	case img != nil:
		for _, e := range img {
			k.seq++
			k.ent[e.epoch] = &whEntry{Applied: e.Applied, First: e.First, Last: e.Last, used: k.seq}
		}
	case v1 != nil:
		log.Info("webhook record of layout 1 taken over (the feed is a glob)", "record", cfg.Record)
		k.take(*v1)
	case damaged:
		log.Warn("webhook record has no valid copy; starting without one (lines may be sent again, under new keys)",
			"record", cfg.Record)
	}
	k.sweepAt = max(wh2Sweep, 2*len(k.ent))
	return k, nil
}

// take fills the table from a layout 1 record.
func (k *whBook) take(s whState) {
	if s.AppliedEpoch != 0 && s.AppliedPos > 0 {
		k.touch(s.AppliedEpoch).Applied = s.AppliedPos
	}
	if s.BatchEpoch != 0 && s.BatchLast > 0 {
		e := k.touch(s.BatchEpoch)
		e.First, e.Last = s.BatchFirst, s.BatchLast
	}
}

// whRecord2 is an open layout 2 record.
type whRecord2 struct {
	f       slotrec.RecordFile
	path    string
	counter uint64
	size    int64 // the copy size S
	newest  int64 // the offset of the copy holding the record in force (-1: none); stores go to the other
	buf     []byte
}

type wh2Entry struct {
	epoch                uint64
	Applied, First, Last int64
}

// wh2Head checks a copy's header and returns its entry count and copy size.
func wh2Head(b []byte) (n int, size int64, err error) {
	if len(b) < wh2Header || string(b[:5]) != "TFWHK" || b[5] != 0 {
		return 0, 0, errors.New("no layout 2 record")
	}
	le := binary.LittleEndian
	if l := le.Uint16(b[6:]); l != 2 {
		return 0, 0, fmt.Errorf("layout %d", l)
	}
	n, size = int(le.Uint32(b[16:])), int64(le.Uint32(b[20:]))
	if size == 0 {
		size = wh2Copy
	}
	if size < wh2Copy || size > wh2MaxCopy || size&(size-1) != 0 {
		return 0, 0, fmt.Errorf("copy size %d", size)
	}
	if int64(wh2Header+wh2EntryLen*n+4) > size {
		return 0, 0, fmt.Errorf("%d entries", n)
	}
	return n, size, nil
}

// decodeWH2 reads one copy, b holding at least its used bytes (nil, error:
// not a valid layout 2 copy).
func decodeWH2(b []byte) ([]wh2Entry, uint64, error) {
	n, _, err := wh2Head(b)
	if err != nil {
		return nil, 0, err
	}
	le := binary.LittleEndian
	end := wh2Header + wh2EntryLen*n
	if end+4 > len(b) {
		return nil, 0, fmt.Errorf("%d entries", n)
	}
	if crc32.Checksum(b[:end], wh2CRC) != le.Uint32(b[end:]) {
		return nil, 0, errors.New("checksum mismatch")
	}
	out := make([]wh2Entry, n)
	for i := range out {
		p := b[wh2Header+wh2EntryLen*i:]
		e := wh2Entry{epoch: le.Uint64(p), Applied: int64(le.Uint64(p[8:])), First: int64(le.Uint64(p[16:])), Last: int64(le.Uint64(p[24:]))}
		if e.Applied < 0 || e.First < 0 || e.Last < e.First {
			return nil, 0, errors.New("bad positions")
		}
		out[i] = e
	}
	return out, le.Uint64(b[8:]), nil
}

// readCopy reads the copy at off: its entries, counter and copy size; held
// reports whether the file has bytes there.
func (r *whRecord2) readCopy(off int64) (img []wh2Entry, counter uint64, size int64, held bool, err error) {
	var head [wh2Header]byte
	n, rerr := r.f.ReadAt(head[:], off)
	if rerr != nil && !errors.Is(rerr, io.EOF) {
		return nil, 0, 0, n > 0, fmt.Errorf("read webhook record %s: %w", r.path, rerr)
	}
	if n == 0 {
		return nil, 0, 0, false, nil
	}
	cnt, size, herr := wh2Head(head[:n])
	if herr != nil {
		return nil, 0, 0, true, nil
	}
	b := make([]byte, wh2Header+wh2EntryLen*cnt+4)
	m, rerr := r.f.ReadAt(b, off)
	if rerr != nil && !errors.Is(rerr, io.EOF) {
		return nil, 0, 0, true, fmt.Errorf("read webhook record %s: %w", r.path, rerr)
	}
	img, counter, derr := decodeWH2(b[:m])
	if derr != nil {
		return nil, 0, 0, true, nil
	}
	return img, counter, size, true, nil
}

// loadWH2 opens the record (creating it empty) and reads its copies: img
// is the newest valid layout 2 copy, else v1 the newest valid layout 1
// slot; damaged when the file held bytes but neither.
func loadWH2(path string, open func(string) (slotrec.RecordFile, error)) (r *whRecord2, img []wh2Entry, v1 *whState, damaged bool, err error) {
	if open == nil {
		open = slotrec.OpenFile
	}
	f, err := open(path)
	if err != nil {
		return nil, nil, nil, false, fmt.Errorf("open webhook record %s: %w", path, err)
	}
	r = &whRecord2{f: f, path: path, newest: -1, size: wh2Copy}
	held, found := false, false
	for off := int64(0); off <= wh2MaxCopy; off = max(wh2Copy, 2*off) {
		ents, counter, size, there, rerr := r.readCopy(off)
		if rerr != nil {
			f.Close()
			return nil, nil, nil, false, rerr
		}
		if !there && off > 0 {
			break // past the file's end
		}
		held = held || there
		if size == 0 || off != 0 && size != off {
			continue // no valid copy, or bytes inside a larger copy A
		}
		if !found || counter > r.counter {
			found, img, r.counter, r.size, r.newest = true, ents, counter, size, off
		}
	}
	if found {
		return r, img, nil, false, nil
	}
	// No layout 2 copy: a layout 1 record, taken over.
	head := make([]byte, slotrec.Size)
	n, rerr := f.ReadAt(head, 0)
	if rerr != nil && !errors.Is(rerr, io.EOF) {
		f.Close()
		return nil, nil, nil, false, fmt.Errorf("read webhook record %s: %w", path, rerr)
	}
	head = head[:n]
	var c1 [2]uint64
	var e1 [2]error
	for i := range c1 {
		if s := slotrec.At(head, i); s != nil {
			c1[i], e1[i] = whFormat.Decode(s)
		} else {
			e1[i] = slotrec.ErrShort
		}
	}
	if i, ok := slotrec.Pick(c1, e1); ok {
		s, _ := decodeWH(slotrec.At(head, i))
		r.newest, r.counter = 0, c1[i] // the first store goes to copy B
		return r, nil, &s, false, nil
	}
	return r, nil, nil, held, nil
}

// store writes the table (least recently stored entries first) into the
// copy not holding the record in force, growing the copies when it does
// not fit, and fsyncs it. On failure the copy in force is unchanged: the
// next store rewrites the same copy.
func (r *whRecord2) store(ent map[uint64]*whEntry) error {
	epochs := make([]uint64, 0, len(ent))
	for ep := range ent {
		epochs = append(epochs, ep)
	}
	sort.Slice(epochs, func(i, j int) bool { return ent[epochs[i]].used < ent[epochs[j]].used })
	le := binary.LittleEndian
	end := wh2Header + wh2EntryLen*len(epochs)
	size, to := r.size, int64(0)
	if r.newest == 0 {
		to = size
	}
	if int64(end+4) > size {
		for int64(end+4) > size {
			size *= 2
		}
		if size > wh2MaxCopy {
			return fmt.Errorf("webhook record %s: %d epochs do not fit %d bytes", r.path, len(epochs), wh2MaxCopy)
		}
		to = size // copy B of the new size: past both copies in force
	}
	if cap(r.buf) < end+4 {
		r.buf = make([]byte, end+4, max(end+4, 2*cap(r.buf)))
	}
	b := r.buf[:end+4]
	clear(b[:wh2Header])
	copy(b, "TFWHK")
	le.PutUint16(b[6:], 2)
	le.PutUint64(b[8:], r.counter+1)
	le.PutUint32(b[16:], uint32(len(epochs)))
	le.PutUint32(b[20:], uint32(size))
	for i, ep := range epochs {
		e, p := ent[ep], b[wh2Header+wh2EntryLen*i:]
		le.PutUint64(p, ep)
		le.PutUint64(p[8:], uint64(e.Applied))
		le.PutUint64(p[16:], uint64(e.First))
		le.PutUint64(p[24:], uint64(e.Last))
	}
	le.PutUint32(b[end:], crc32.Checksum(b[:end], wh2CRC))
	if _, err := r.f.WriteAt(b, to); err != nil {
		return fmt.Errorf("write webhook record %s: %w", r.path, err)
	}
	if err := r.f.Sync(); err != nil {
		return fmt.Errorf("fsync webhook record %s: %w", r.path, err)
	}
	r.newest, r.counter, r.size = to, r.counter+1, size
	return nil
}

// dropWH2 clears, for a single-file feed, a record a glob feed wrote
// (layout 2) before it is read: a single-file feed does not read layout 2
// (docs/formats.md), and a layout 1 slot left under it (slot B, past copy
// A's used bytes) is older than it (audit 10A, found on the exactlyOnce
// file sink's record of the same design). Every valid copy's header and
// both layout 1 slots are zeroed and synced: the sink starts without a
// record (lines may be sent again, under new keys — never a gap).
func dropWH2(path string, open func(string) (slotrec.RecordFile, error), log hclog.Logger) error {
	r, img, _, _, err := loadWH2(path, open)
	if err != nil {
		return err
	}
	defer r.f.Close()
	if img == nil { // no layout 2 copy (a layout 1 record, or none)
		return nil
	}
	log.Warn("webhook record was written for a glob feed (layout 2): a single-file feed starts without one (lines may be sent again, under new keys)",
		"record", path)
	zero := make([]byte, slotrec.SlotB+slotrec.SlotLen)
	if _, err := r.f.WriteAt(zero, 0); err != nil {
		return fmt.Errorf("clear layout 2 webhook record %s: %w", path, err)
	}
	for off := int64(wh2Copy); off <= wh2MaxCopy; off *= 2 {
		_, _, size, there, err := r.readCopy(off)
		if err != nil {
			return err
		}
		if !there {
			break
		}
		if size != off {
			continue
		}
		if _, err := r.f.WriteAt(zero[:wh2Header], off); err != nil {
			return fmt.Errorf("clear layout 2 webhook record %s: %w", path, err)
		}
	}
	if err := r.f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	return nil
}
