package pointer

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
)

// Store writes a record for offset into the mapping without msync: it
// survives kill -9 (the page cache outlives the process), not a power loss,
// until Sync. The record carries the bound file key, the commit counter + 1,
// and a fingerprint grown from the bound input while it covers fewer than
// MaxFingerprint bytes and the input has more.
//
// It goes to the slot that does not hold the newest synced record; Stores
// between two Syncs rewrite that same slot. Moving backwards under the same
// epoch fails with ErrBackwards and writes nothing. A Store that changes
// nothing is a no-op, unless the last Sync failed: then the slot is
// rewritten.
func (p *Pointer) Store(offset int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	return p.store(offset)
}

func (p *Pointer) store(offset int64) error {
	if offset < p.cur.Offset {
		return fmt.Errorf("%w: %d after %d under epoch %016x", ErrBackwards, offset, p.cur.Offset, p.cur.Epoch)
	}
	next := p.cur
	next.Offset, next.FileKey = offset, p.key
	p.growFingerprint(&next)
	if sameRecord(&next, &p.cur) && !p.rewrite {
		return nil
	}
	next.Commits++
	p.cur = next
	if len(p.owedLines) > 0 {
		// The epoch's line is not written yet: no slot may hold it; the
		// Sync that writes the line writes both slots (resetLeft).
		p.dirty = true
		return nil
	}
	p.put(1 - p.syncedSlot)
	return nil
}

// Sync flushes the mapping (msync) so that the newest stored record reaches
// the disk. A failure is returned wrapped with ErrSync and the errno
// (errors.Is matches both, e.g. syscall.EIO), Synced stays false, and the
// next Store or Sync rewrites the whole slot before flushing again: a failed
// msync is never retried alone. A Sync with nothing new is a no-op.
func (p *Pointer) Sync() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	return p.sync()
}

func (p *Pointer) sync() error {
	if len(p.owedLines) > 0 {
		if err := p.flushOwedLines(); err != nil {
			return err
		}
	}
	if err := p.payDir(); err != nil {
		return err
	}
	if p.resetLeft > 0 {
		return p.syncBoth()
	}
	if !p.dirty {
		return nil
	}
	slot := 1 - p.syncedSlot
	if p.rewrite {
		p.put(slot)
	}
	return p.flush(slot)
}

// Commit is Store then Sync.
func (p *Pointer) Commit(offset int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	if err := p.store(offset); err != nil {
		return err
	}
	return p.sync()
}

// Synced reports whether the newest stored record has been msync'ed
// successfully.
func (p *Pointer) Synced() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.dirty && p.resetLeft == 0 && !p.dirOwed
}

// Reset starts epoch at offset 0 for the input f (nil: none) with fileKey:
// the fingerprint covers f's first bytes (up to MaxFingerprint). It writes
// the slot that does not hold the newest synced record, msyncs, then writes
// the same record into the other slot and msyncs, so that afterwards no
// valid slot of an older epoch remains, and a crash between the two msyncs
// still finds (epoch, 0). f is bound, as by Bind. If a flush fails the error
// is returned and the next Sync or Commit finishes both slots.
func (p *Pointer) Reset(epoch uint64, f io.ReaderAt, fileKey uint64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	why := "reset"
	if f == nil && fileKey == 0 {
		why = "forgotten"
	}
	return p.reset(epoch, f, fileKey, why)
}

// ResetAs is Reset with reason as the epochs file's reason for the new
// epoch: "replaced" or "truncated" when the source found another file, or
// this one cut, at open; "lost" when it empties the record of a file whose
// unread tail it counted lost at open.
func (p *Pointer) ResetAs(reason string, epoch uint64, f io.ReaderAt, fileKey uint64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	return p.reset(epoch, f, fileKey, reason)
}

// reset is Reset; why names it in the epochs file.
func (p *Pointer) reset(epoch uint64, f io.ReaderAt, fileKey uint64, why string) error {
	if epoch == 0 {
		return ErrZeroEpoch
	}
	head := getHead()
	defer headBufs.Put(head)
	n, err := p.readHead(f, head)
	if err != nil {
		return fmt.Errorf("pointer: reset: read input: %w", err)
	}
	bound := p.key
	p.src, p.key = f, fileKey
	prev := p.cur
	if bound != 0 && prev.Epoch != 0 {
		// The epochs line names, as the record left, the file bound to
		// the epoch now: a copytruncate copy the source reads on in
		// (Bind) holds the epoch's bytes, the cut original no longer.
		prev.FileKey = bound
	}
	p.cur = Record{
		Epoch: epoch, FileKey: fileKey, FPLen: uint64(n), FP: Fingerprint(head[:n]),
		Commits: p.cur.Commits + 1, Slot: p.cur.Slot, Layout: Layout,
	}
	p.resetLeft, p.dirty = 2, true
	// Write-ahead: the line is fsynced before either slot holds the
	// epoch. A failure returns the error with no slot written; the next
	// Sync or Commit writes the line, then both slots. A new file's
	// "created" line written ahead (Options.CreatedLogged) is on disk
	// already.
	if why == "created" && p.createdLogged && epoch == p.newEpoch {
		p.createdLogged = false
	} else if err := p.logEpoch(p.cur, why, prev); err != nil {
		return err
	}
	if why == "created" {
		return p.syncNew()
	}
	return p.syncBoth()
}

// syncNew writes the record of a file Open just created into both slots
// and flushes them with one msync: no slot holds an older record that a
// torn write could cost (a crash leaves each slot zero or valid, and a
// file with no valid slot starts fresh at the next Open; no line was
// published under the epoch before Open returned). A failed flush leaves
// both slots owed, as a Reset's.
func (p *Pointer) syncNew() error {
	p.put(0)
	p.put(1)
	if p.dirOwed {
		// Options.DeferSync (its directory entry is owed too): the first
		// Sync flushes both (the slot rule holds: the next Store goes to
		// B, A keeps this record).
		p.resetLeft, p.dirty = 0, true
		p.syncedSlot, p.cur.Slot = 0, 'A'
		return nil
	}
	if err := p.m.Flush(); err != nil {
		p.rewrite = true
		return fmt.Errorf("%w: msync %s: %w", ErrSync, p.path, err)
	}
	p.resetLeft, p.dirty = 0, false
	p.syncedSlot, p.cur.Slot = 0, 'A'
	return nil
}

// payDir fsyncs the pointer's directory while its entry may not be on disk
// (dirOwed): a file created with DeferSync before its first Sync, and every
// file Open finds (load), since a process killed before that first Sync,
// or one whose directory fsync failed, left no trace of the debt.
func (p *Pointer) payDir() error {
	if !p.dirOwed {
		return nil
	}
	if err := syncDirGrouped(filepath.Dir(p.path)); err != nil {
		return fmt.Errorf("%w: sync directory of %s: %w", ErrSync, p.path, err)
	}
	p.dirOwed = false
	return nil
}

// syncBoth writes the current record into the slots a Reset still owes,
// each one flushed before the next, starting with the older slot (the
// directory entry first, when owed).
func (p *Pointer) syncBoth() error {
	if err := p.payDir(); err != nil {
		return err
	}
	for p.resetLeft > 0 {
		slot := 1 - p.syncedSlot
		p.put(slot)
		if err := p.flush(slot); err != nil {
			return err
		}
		p.resetLeft--
	}
	// Both slots hold the record now; name it as Decode would (A on a tie).
	p.syncedSlot, p.cur.Slot = 0, 'A'
	return nil
}

// put encodes the current record into slot and marks it unsynced.
func (p *Pointer) put(slot int) {
	p.cur.Slot = slotName(slot)
	encodeSlot(slotBytes(p.buf, slot), &p.cur)
	p.dirty, p.rewrite = true, false
}

// flush msyncs after slot was written; success makes slot the synced one.
func (p *Pointer) flush(slot int) error {
	if err := p.m.Flush(); err != nil {
		p.rewrite = true
		return fmt.Errorf("%w: msync %s: %w", ErrSync, p.path, err)
	}
	p.syncedSlot, p.dirty = slot, false
	return nil
}

// growFingerprint extends r's fingerprint from the bound input while it
// covers fewer than MaxFingerprint bytes and the input has more, provided
// the bytes it covers now are unchanged. If they changed (the input was
// rewritten under the open descriptor) the old, shorter fingerprint is
// kept: the next open then sees the change and re-reads, never skips.
// Read errors leave the fingerprint as it is.
func (p *Pointer) growFingerprint(r *Record) {
	if p.src == nil || r.FPLen >= MaxFingerprint {
		return
	}
	head := getHead()
	defer headBufs.Put(head)
	n, err := p.readHead(p.src, head)
	if err != nil || uint64(n) <= r.FPLen {
		return
	}
	if Fingerprint(head[:r.FPLen]) != r.FP {
		return
	}
	r.FPLen, r.FP = uint64(n), Fingerprint(head[:n])
}

// headBufs are readHead's scratch buffers, pooled rather than one per
// Pointer: a glob feed holds hundreds of pointers open and creates
// thousands (4 KiB each was 2 MB live and ~47 MB of garbage over a start
// of 10,000 files). No allocation once the pool holds one.
var headBufs = sync.Pool{New: func() any { return new([MaxFingerprint]byte) }}

func getHead() *[MaxFingerprint]byte { return headBufs.Get().(*[MaxFingerprint]byte) }

// readHead reads up to MaxFingerprint bytes from the start of f into head
// and returns how many it got. A nil f reads nothing.
func (p *Pointer) readHead(f io.ReaderAt, head *[MaxFingerprint]byte) (int, error) {
	if f == nil {
		return 0, nil
	}
	n, err := f.ReadAt(head[:], 0)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}

// sameRecord compares what a Store would change.
func sameRecord(a, b *Record) bool {
	return a.Offset == b.Offset && a.Epoch == b.Epoch && a.FileKey == b.FileKey &&
		a.FPLen == b.FPLen && a.FP == b.FP
}
