package pointer

import "fmt"

// Rewind is the one backward commit DESIGN §3 allows (§11 "A restored
// sink is caught up from the input"): at start, before the source reads a
// line, a sink with a stored record is behind the pointer, so the pointer
// goes back to rec — under the pointer's own epoch an earlier offset, or
// an older epoch of the epochs file with that epoch's file identity (key,
// fingerprint) — and the whole feed re-reads from it.
//
// Like Reset, the record is written into both slots, each msynced before
// the next (the older slot first, with the higher counter), so that no
// slot of the record left remains: a torn slot can fall back only to the
// rewound record, never ahead of it again (the sink would keep its gap).
// A crash before the first flush leaves the old record, and the next start
// decides the same again. The epochs file is not written: the rewound
// epoch's lines are already there (a later Reset names it as the record
// left). The bound input is dropped (the source binds the file it opens).
//
// rec.Offset must be ≥ 0 and rec.Epoch ≠ 0; the other fields of rec
// (Commits, Slot, Layout) are ignored.
func (p *Pointer) Rewind(rec Record) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	if rec.Epoch == 0 {
		return ErrZeroEpoch
	}
	if rec.Offset < 0 || rec.FPLen > MaxFingerprint {
		return fmt.Errorf("%w: rewind to offset %d, fingerprint length %d", ErrInvalid, rec.Offset, rec.FPLen)
	}
	p.src, p.key = nil, rec.FileKey
	p.cur = Record{
		Offset: rec.Offset, Epoch: rec.Epoch, FileKey: rec.FileKey, FPLen: rec.FPLen, FP: rec.FP,
		Commits: p.cur.Commits + 1, Slot: p.cur.Slot, Layout: Layout,
	}
	p.resetLeft, p.dirty = 2, true
	return p.syncBoth()
}
