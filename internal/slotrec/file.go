package slotrec

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"tailfeed/internal/fileutil"
)

// RecordFile is a record's file: the seam for fault injection.
type RecordFile interface {
	io.ReaderAt
	io.WriterAt
	Sync() error
	Close() error
}

// OpenFile opens path read-write (an *os.File). A file it creates (mode
// 0600) has its directory fsynced, so that its entry survives a power loss.
func OpenFile(path string) (RecordFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
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

// slot is one slot as last read or written.
type slot struct {
	b       [SlotLen]byte
	counter uint64
	err     error // why it is not valid; nil when it is
}

// File is an open record.
type File struct {
	path    string
	format  Format
	f       RecordFile
	slots   [2]slot
	held    bool   // the file held bytes at open
	ok      bool   // some slot holds a valid record
	newest  int    // the slot holding the record in force; stores go to the other
	counter uint64 // the counter of the newest valid record; the next store's is one more
}

// Open opens the record at path with open (nil: OpenFile) and reads both
// slots.
func Open(path string, format Format, open func(string) (RecordFile, error)) (*File, error) {
	if !format.valid() {
		panic(fmt.Sprintf("slotrec: bad format %+v", format))
	}
	if open == nil {
		open = OpenFile
	}
	f, err := open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s %s: %w", format.Name, path, err)
	}
	buf := make([]byte, Size)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		f.Close()
		return nil, fmt.Errorf("read %s %s: %w", format.Name, path, err)
	}
	r := &File{path: path, format: format, f: f, held: n > 0}
	for i := range r.slots {
		s := &r.slots[i]
		b := At(buf[:n], i)
		if b == nil {
			s.err = ErrShort
			continue
		}
		copy(s.b[:], b)
		s.counter, s.err = format.Decode(s.b[:])
	}
	r.pick()
	return r, nil
}

// pick makes the newest valid slot the record in force (see Pick); with
// none valid, the first store goes to A.
func (r *File) pick() {
	a, b := &r.slots[0], &r.slots[1]
	i, ok := Pick([2]uint64{a.counter, b.counter}, [2]error{a.err, b.err})
	if !ok {
		r.newest, r.counter, r.ok = 1, 0, false
		return
	}
	r.newest, r.counter, r.ok = i, r.slots[i].counter, true
}

// Path is the record's path.
func (r *File) Path() string { return r.path }

// Newest returns the slot (0 = A, 1 = B) holding the record in force; ok
// is false when no slot is valid.
func (r *File) Newest() (slot int, ok bool) { return r.newest, r.ok }

// Slot returns slot i's bytes as last read or written, and why it is not
// valid (nil when it is). The bytes belong to the File.
func (r *File) Slot(i int) ([]byte, error) { return r.slots[i].b[:], r.slots[i].err }

// Counter is the highest counter stored (0 with no valid slot).
func (r *File) Counter() uint64 { return r.counter }

// Damaged reports whether the file held bytes at open but no valid slot.
func (r *File) Damaged() bool { return r.held && !r.ok }

// Fallback makes the other slot the record in force, keeping the counter,
// so that the next store overwrites the slot in force now with a counter
// above both. It reports false, changing nothing, when the other slot is
// not valid.
func (r *File) Fallback() bool {
	if !r.ok || r.slots[1-r.newest].err != nil {
		return false
	}
	r.newest = 1 - r.newest
	return true
}

// Store completes the slot b (SlotLen bytes, its payload written by the
// caller: see Format.Encode) with the next counter, writes it into the slot
// not holding the record in force and syncs it when sync is set. On failure
// the record in force and the counter are unchanged.
func (r *File) Store(b []byte, sync bool) error {
	counter, i := r.counter+1, 1-r.newest
	r.format.Encode(b, counter)
	if _, err := r.f.WriteAt(b[:SlotLen], int64(i*SlotB)); err != nil {
		return fmt.Errorf("write %s %s: %w", r.format.Name, r.path, err)
	}
	if sync {
		if err := r.f.Sync(); err != nil {
			return fmt.Errorf("fsync %s %s: %w", r.format.Name, r.path, err)
		}
	}
	s := &r.slots[i]
	copy(s.b[:], b)
	s.counter, s.err = counter, nil
	r.newest, r.counter, r.ok = i, counter, true
	return nil
}

// Close closes the file.
func (r *File) Close() error { return r.f.Close() }
