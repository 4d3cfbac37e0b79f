// Package pointer owns the on-disk pointer file of a COMMITTED feed: how far
// the input file has been delivered and acknowledged, and which file that
// was. It lays out the bytes, opens and validates them, stores and msyncs
// commits, and resets the file under a new epoch. It imports nothing from
// source/.
//
// # Layout (version 1)
//
// A pointer file is Size (1,024) bytes: two slots, A at byte 0 and B at byte
// 512, so that they sit in different 512-byte disk sectors and a torn write
// damages at most one. All integers are little-endian. Each slot:
//
//	off  size  field
//	  0     5  magic "TFPTR"
//	  5     1  zero
//	  6     2  layout version (uint16) = 1
//	  8     8  offset (int64): byte offset just after the last committed line
//	 16     8  epoch (uint64): random, never 0; new for every new input file
//	 24     8  file key (uint64): FNV-1a 64 over the device then the inode,
//	           each as 8 little-endian bytes; 0 where the OS has none
//	 32     8  fingerprint length (uint64): bytes covered, ≤ 4096
//	 40     8  fingerprint (uint64): FNV-1a 64 of the input's first `length` bytes
//	 48     8  commit counter (uint64): +1 per stored record
//	 56     4  CRC-32C (Castagnoli, uint32) over bytes 0..55
//	 60     4  zero
//	 64   448  zero (rest of the half)
//
// A slot is valid when, in this order, its magic and zero byte are right
// (else ErrInvalid), its layout is 1 (else ErrVersionMismatch), its CRC
// matches (else ErrChecksum), and its offset ≥ 0, epoch ≠ 0 and fingerprint
// length ≤ 4096 (else ErrInvalid). The padding is written as zeros but not
// checked on read.
//
// The framing (magic, layout, counter, CRC-32C, which slot is in force) is
// internal/slotrec's, shared with the exactlyOnce and webhook records; this
// package adds the fields at 8..47 and their ranges.
//
// # Recovery rule
//
// Decode takes the valid slot with the higher commit counter, compared as
// serial numbers (RFC 1982: a is newer than b when int64(a-b) > 0), so that
// a counter that wrapped past 2^64-1 still orders; on a tie, A. A torn or
// corrupt slot is ignored (a WARN at Open) and the other one used: that is
// the older record, so a crash can move the pointer back, never ahead. A
// file shorter than 1,024 bytes, empty, or with no valid slot is a WARN and
// a fresh start at offset 0 under a new epoch: lines are re-read, never
// skipped.
//
// # Version rule
//
// This package reads and writes layout 1 only. A slot with another layout
// is invalid (ErrVersionMismatch), as if torn; a file with no layout-1 slot
// starts fresh. A future layout that cannot stay readable as version 1 must
// therefore come with a new reader, and a downgrade re-reads the input from
// the start (duplicates, never gaps).
//
// # Slot rule
//
// Store writes the slot that does not hold the newest synced record. Several
// Stores between two Syncs keep rewriting that same slot, so the last synced
// record is never overwritten before the next successful msync: a power loss
// at any moment leaves at least that record intact. The first Store after a
// successful Sync goes to the other slot. A failed msync keeps the same
// slot as target; the next Store or Sync rewrites it whole before flushing
// again, because after a failed msync the kernel may have dropped the dirty
// page, and flushing again without writing would report success for bytes
// that never reached the disk.
//
// Reset writes its record (new epoch, offset 0, file key, fingerprint) into
// the slot not holding the newest synced record, msyncs, then into the other
// slot, msyncs. A crash between the two msyncs finds (new epoch, 0) by the
// higher counter; after both, no valid slot of an older epoch is left.
//
// Rewind (rewind.go) is the one backward commit (DESIGN §3, §11): at start,
// before the source reads, a restored sink's catch-up puts the record back
// to an earlier offset of its epoch, or to an older epoch's file identity,
// written into both slots as a Reset is, so that no slot ahead of it
// remains.
//
// # Durability
//
// Store alone survives kill -9 (the page cache outlives the process) but not
// a power loss; Sync (msync MS_SYNC) makes it durable; Commit is both. The
// source decides how often to Sync. The file is rewritten in place, never
// renamed, and held with flock(LOCK_EX|LOCK_NB) while open; Inspect reads
// it without the lock.
//
// # Identity of the input
//
// The pointer knows only bytes: which input file is the same one (DESIGN
// §3: appended, replaced, truncated, the same bytes under a new key) is
// decided by the source (source/file identity.go), which then binds the
// file (Bind), adopts it for a record with no identity yet (Adopt) or
// starts a new epoch (Reset, ResetAs). The fingerprint is read from the
// descriptor the source bound, never from the path, and grows at each Store
// while it covers fewer than 4,096 bytes and the file is longer, as long as
// the bytes it already covers are unchanged.
//
// # Epochs file
//
// With Options.EpochsPath set (the daemon: dataDir/feeds/<feed>.epochs),
// the pointer's creation (or fresh start), each Reset (the source's
// replaced and truncated, its epoch switch, and the empty record that
// forgets a deleted file) and the adoption of a first input file append one JSON line
// (epoch, file key, fingerprint, path, time, reason), fsynced, mode 0600,
// before the pointer file holds the epoch. ReadEpochs reads it back. The
// format is described in epochs.go.
package pointer
