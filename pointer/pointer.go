package pointer

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/hashicorp/go-hclog"

	"tailfeed/internal/fileutil"
)

// Options tune Open. The zero value is ready to use.
type Options struct {
	// Logger receives the WARNs about damaged slots, fresh starts and input
	// changes. nil: hclog.NewNullLogger().
	Logger hclog.Logger
	// Map maps the pointer file. nil: a shared read-write mmap of its first
	// Size bytes (mmap-go); Flush is msync(MS_SYNC).
	Map func(f *os.File) (Mapping, error)
	// EpochsPath, when set, is the epochs file (dataDir/feeds/<feed>.epochs,
	// see epochs.go): the pointer's creation, each Reset and an adoption
	// append a line to it before the pointer file is written. "": none.
	EpochsPath string
	// Input is the input path the epochs lines name.
	Input string
	// Epoch, when not 0, is the epoch of the record a new file (one Open
	// creates) starts with: a glob feed names each stream's pointer file
	// after its first epoch (DESIGN §10). 0: a random one.
	Epoch uint64
	// DeferSync leaves a new file's directory entry and first record
	// unsynced: Open writes them (and the epochs line, synced as always,
	// before either slot holds the epoch) and returns with Synced false;
	// the first Sync fsyncs the directory, then msyncs. The caller syncs
	// right after Open, off its critical path (a glob feed opening
	// hundreds of streams at once: the msync on each stream's way to its
	// first line was 0.15 s of a 1,000-file start). Until then the file
	// survives kill -9 (page cache), not a power loss. An existing file is
	// opened as without it.
	DeferSync bool
	// CreatedLogged says the epochs file already holds the "created" line
	// of Epoch, fsynced: the caller wrote it ahead with AppendCreated,
	// many new pointers' lines with one write and one fsync (a glob feed
	// starting hundreds of streams at once; one fsync each, serialised,
	// held back every stream's first line). A new file Open creates under
	// Epoch then writes no line of its own; the write-ahead order holds,
	// the line was on disk before the file existed. Ignored without Epoch,
	// and for a file that starts fresh for another reason (new epoch).
	CreatedLogged bool
}

// Pointer is an open, locked pointer file. Its methods are safe for
// concurrent use, but the design has one writer per pointer: the source.
type Pointer struct {
	mu   sync.Mutex
	path string
	f    *os.File
	m    Mapping
	buf  []byte // m.Bytes()[:Size]
	log  hclog.Logger

	epochs string // the epochs file ("" = none)
	// createdLogged: Options.CreatedLogged (with newEpoch set).
	createdLogged bool
	dirOwed       bool   // the file's directory entry may not be on disk yet (payDir)
	newEpoch      uint64 // Options.Epoch
	input         string // the input path its lines name

	// unadopted: Open created the file and no Adopt ran yet (the epochs
	// file holds no adopted line of its epoch).
	unadopted bool
	// namedLen: how many first bytes of the record's file the epochs file
	// names (Adopt wrote or found such a line for the epoch): a record with
	// no identity yet is told from another file by them (MaxFingerprint
	// without an epochs file; 0: none).
	namedLen uint64

	cur Record      // newest stored record (maybe not yet synced)
	key uint64      // file key the next record carries
	src io.ReaderAt // the input the fingerprint is read from; nil: none bound

	// syncedSlot holds the newest record that reached the disk; stores go
	// to the other slot (1-syncedSlot) until a flush succeeds.
	syncedSlot int
	dirty      bool // a stored record has not been flushed successfully
	rewrite    bool // the last flush failed: rewrite the slot before the next one
	resetLeft  int  // slots a Reset still has to write and flush (0, 1, 2)

	// owedLines are epochs lines a Reset could not write (write-ahead):
	// while any is owed no slot is written; Sync writes them first.
	owedLines []EpochLine

	fresh       bool
	freshReason string
	closed      bool
}

// Open opens the pointer file at path, creating it (mode 0600, Size bytes)
// if missing, takes an exclusive flock on it (a holder makes Open fail with a
// *fileutil.LockedError), maps it and decodes the newest valid slot.
//
// A file that is new, short, empty or has no valid slot starts fresh: offset
// 0 under a new epoch, written durably to both slots (Reset) before Open
// returns (a new file with DeferSync: at the first Sync); Fresh and
// FreshReason report it, and every case but a new file is a WARN. Otherwise
// the decoded record is flushed once and the directory fsynced, so Synced
// is true.
func Open(path string, opts Options) (*Pointer, error) {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.Map == nil {
		opts.Map = mapFile
	}
	f, created, err := openFile(path, opts.DeferSync)
	if err != nil {
		return nil, err
	}
	p := &Pointer{path: path, f: f, log: opts.Logger, epochs: opts.EpochsPath, input: opts.Input, newEpoch: opts.Epoch,
		dirOwed: created && opts.DeferSync, unadopted: created, createdLogged: opts.CreatedLogged && opts.Epoch != 0}
	if err := p.init(created, opts.Map); err != nil {
		if p.m != nil {
			p.m.Close()
		}
		if created {
			// Nothing was published under it: the next Open creates it
			// again (with the same Options.Epoch) rather than finding a
			// file with no valid slot.
			os.Remove(path)
		}
		f.Close()
		return nil, err
	}
	return p, nil
}

// openFile opens path read-write, creating it if missing; created tells
// which happened. A new file's directory entry is fsynced, unless
// deferDir (then the first Sync does it).
func openFile(path string, deferDir bool) (f *os.File, created bool, err error) {
	f, err = fileutil.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		f, err = fileutil.OpenFile(path, os.O_RDWR, 0)
		return f, false, err
	}
	if err != nil {
		return nil, false, err
	}
	if deferDir {
		return f, true, nil
	}
	if err := syncDirGrouped(filepath.Dir(path)); err != nil {
		f.Close()
		return nil, false, fmt.Errorf("pointer: sync directory of %s: %w", path, err)
	}
	return f, true, nil
}

// init locks, sizes and maps the file, then decodes it or starts fresh.
func (p *Pointer) init(created bool, mapFn func(*os.File) (Mapping, error)) error {
	if err := fileutil.Lock(p.f); err != nil {
		return err
	}
	short, err := p.ensureSize(created)
	if err != nil {
		return err
	}
	if p.m, err = mapFn(p.f); err != nil {
		return fmt.Errorf("pointer: map %s: %w", p.path, err)
	}
	if b := p.m.Bytes(); len(b) < Size {
		return fmt.Errorf("pointer: map %s: %d bytes, want %d", p.path, len(b), Size)
	}
	p.buf = p.m.Bytes()[:Size:Size]
	switch {
	case created:
		return p.startFresh("new pointer file", false)
	case short != "":
		return p.startFresh(short, true)
	}
	return p.load()
}

// ensureSize extends a file shorter than Size with zeros and returns why
// it was short ("" when it was not).
func (p *Pointer) ensureSize(created bool) (string, error) {
	fi, err := p.f.Stat()
	if err != nil {
		return "", err
	}
	if fi.Size() >= Size {
		return "", nil
	}
	if err := p.f.Truncate(Size); err != nil {
		return "", err
	}
	switch {
	case created:
		return "", nil
	case fi.Size() == 0:
		return "empty pointer file", nil
	}
	return fmt.Sprintf("%v: %d bytes", ErrShort, fi.Size()), nil
}

// load decodes the mapping; no valid slot means a fresh start.
func (p *Pointer) load() error {
	rec, slotErrs, err := decode(p.buf)
	if err != nil {
		return p.startFresh(err.Error(), true)
	}
	for i, serr := range slotErrs {
		if serr != nil {
			p.log.Warn("pointer slot ignored", "path", p.path, "slot", string(slotName(i)), "reason", serr,
				"using", string(rec.Slot), "offset", rec.Offset, "epoch", hex(rec.Epoch))
		}
	}
	p.cur, p.key = rec, rec.FileKey
	p.syncedSlot = int(rec.Slot - 'A')
	if err := p.m.Flush(); err != nil {
		return fmt.Errorf("%w: %s at open: %w", ErrSync, p.path, err)
	}
	// Its directory entry too: a file created with DeferSync and left
	// before its first Sync (kill -9, a failed directory fsync) may hold
	// a record whose entry never reached the disk.
	p.dirOwed = true
	if err := p.payDir(); err != nil {
		return fmt.Errorf("%s at open: %w", p.path, err)
	}
	return nil
}

// startFresh clears the file and resets it to offset 0 under a new epoch.
func (p *Pointer) startFresh(reason string, warn bool) error {
	p.fresh, p.freshReason = true, reason
	epoch := NewEpoch()
	if !warn && p.newEpoch != 0 {
		epoch = p.newEpoch
	}
	if warn {
		p.log.Warn("pointer unusable, starting fresh at offset 0 (lines are re-read, never skipped)",
			"path", p.path, "reason", reason, "epoch", hex(epoch))
	} else {
		p.log.Info("pointer created", "path", p.path, "epoch", hex(epoch))
	}
	clear(p.buf)
	why := "fresh"
	if !warn {
		why = "created"
	}
	return p.reset(epoch, nil, 0, why)
}

// Record returns the newest stored record (see Synced for whether it has
// reached the disk).
func (p *Pointer) Record() Record {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cur
}

// Fresh reports whether Open started this pointer fresh (offset 0, new
// epoch) instead of resuming from a record; FreshReason says why.
func (p *Pointer) Fresh() bool { return p.fresh }

// FreshReason is why Open started fresh ("new pointer file", "empty pointer
// file", a short length, or the decode error), or "".
func (p *Pointer) FreshReason() string { return p.freshReason }

// Path returns the pointer file's path.
func (p *Pointer) Path() string { return p.path }

// Close unmaps, unlocks and closes the pointer file. It does not msync:
// call Sync or Commit first for a durable last record. Close is idempotent:
// later calls return nil; every other method then returns ErrClosed (Record
// keeps answering from memory).
func (p *Pointer) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	p.buf = nil
	err := p.m.Close()
	if uerr := fileutil.Unlock(p.f); err == nil {
		err = uerr
	}
	if cerr := p.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// hex formats an epoch, key or fingerprint as 16 lowercase hex digits.
func hex(v uint64) string { return fmt.Sprintf("%016x", v) }

// HeadNamed reports whether the epochs file names the file of the record's
// epoch with some of its first bytes (Adopt wrote or found such a line in
// this process). A record with no identity whose file was adopted while
// empty is not: the source stores the record with the first bytes before
// its first line goes out (audit 10E: a copytruncate before the first
// commit gave the new lines the old epoch's positions).
func (p *Pointer) HeadNamed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.namedLen > 0
}

// HeadNamedLen is how many first bytes of the record's file the epochs
// file names for a record with no identity yet (HeadNamed; 0: none, or no
// Adopt in this process; MaxFingerprint without an epochs file).
func (p *Pointer) HeadNamedLen() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.namedLen
}
