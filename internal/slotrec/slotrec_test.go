package slotrec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// testFormat stores one uint64 value at 8 (any value but 666); the counter
// sits at at (the exactlyOnce record has it at 32, the webhook's at 48).
func testFormat(at int) Format {
	return Format{Name: "test record", Magic: "TFTST", Layout: 3, CounterAt: at,
		Check: func(b []byte) error {
			if binary.LittleEndian.Uint64(b[8:]) == 666 {
				return errBadValue
			}
			return nil
		}}
}

var errBadValue = errors.New("bad value")

// slotBytes is a complete slot holding value v under counter c.
func slotBytes(f Format, v, c uint64) []byte {
	b := make([]byte, SlotLen)
	binary.LittleEndian.PutUint64(b[8:], v)
	f.Encode(b, c)
	return b
}

// fileBytes is a record file with slot A (value 100 + c) and slot B
// (200 + c) under counters ca and cb, the way stores leave it (576 bytes).
func fileBytes(f Format, ca, cb uint64) []byte {
	b := make([]byte, SlotB+SlotLen)
	copy(b, slotBytes(f, 100+ca, ca))
	copy(b[SlotB:], slotBytes(f, 200+cb, cb))
	return b
}

func value(t *testing.T, r *File, i int) uint64 {
	t.Helper()
	b, err := r.Slot(i)
	if err != nil {
		t.Fatalf("slot %d: %v", i, err)
	}
	return binary.LittleEndian.Uint64(b[8:])
}

func open(t *testing.T, path string, f Format) *File {
	t.Helper()
	r, err := Open(path, f, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestOpenDamage: a table of damaged files. Each picks the right slot (or
// none), says why each slot is not valid, and the next store goes to the
// other slot with a counter above the newest and wins at the next open.
// This is the damage table of every two-slot format, the pointer file's
// included (it decodes through Format and Pick); package pointer tests only
// what it adds (its size rule, field ranges, fresh start, WARNs).
func TestOpenDamage(t *testing.T) {
	for _, at := range []int{32, 48} {
		f := testFormat(at)
		for _, tc := range []struct {
			name    string
			file    func() []byte
			ok      bool
			newest  int
			counter uint64
			errs    [2]error
			damaged bool
		}{
			{"intact", func() []byte { return fileBytes(f, 1, 2) }, true, 1, 2, [2]error{}, false},
			{"torn A", func() []byte { b := fileBytes(f, 3, 2); copy(b[20:], "garbage"); return b }, true, 1, 2, [2]error{ErrChecksum, nil}, false},
			{"torn B", func() []byte { b := fileBytes(f, 1, 2); copy(b[SlotB+20:], "garbage"); return b }, true, 0, 1, [2]error{nil, ErrChecksum}, false},
			{"torn counter", func() []byte { b := fileBytes(f, 1, 2); b[SlotB+at] ^= 0x80; return b }, true, 0, 1, [2]error{nil, ErrChecksum}, false},
			{"both bad", func() []byte {
				b := fileBytes(f, 1, 2)
				b[CRCAt] ^= 1
				b[SlotB+CRCAt] ^= 1
				return b
			}, false, 1, 0, [2]error{ErrChecksum, ErrChecksum}, true},
			{"zeroed", func() []byte { return make([]byte, Size) }, false, 1, 0, [2]error{ErrMagic, ErrMagic}, true},
			{"empty", func() []byte { return nil }, false, 1, 0, [2]error{ErrShort, ErrShort}, false},
			{"short: A only", func() []byte { return fileBytes(f, 1, 2)[:SlotLen] }, true, 0, 1, [2]error{nil, ErrShort}, false},
			{"short: B cut", func() []byte { return fileBytes(f, 1, 2)[:SlotB+SlotLen-1] }, true, 0, 1, [2]error{nil, ErrShort}, false},
			{"short: A cut", func() []byte { return fileBytes(f, 1, 2)[:40] }, false, 1, 0, [2]error{ErrShort, ErrShort}, true},
			{"wrong magic", func() []byte { b := fileBytes(f, 1, 2); b[SlotB] = 'X'; return b }, true, 0, 1, [2]error{nil, ErrMagic}, false},
			{"other format's magic", func() []byte {
				b := fileBytes(f, 1, 2)
				g := f
				g.Magic = "TFREC"
				copy(b[SlotB:], slotBytes(g, 202, 2))
				return b
			}, true, 0, 1, [2]error{nil, ErrMagic}, false},
			{"byte 5 not zero", func() []byte { b := fileBytes(f, 1, 2); b[5] = 1; return b }, true, 1, 2, [2]error{ErrMagic, nil}, false},
			{"future layout", func() []byte {
				b := fileBytes(f, 1, 2)
				g := f
				g.Layout = f.Layout + 1 // a well-formed record of a later version
				copy(b[SlotB:], slotBytes(g, 202, 2))
				return b
			}, true, 0, 1, [2]error{nil, ErrLayout}, false},
			{"payload rejected", func() []byte {
				b := fileBytes(f, 1, 2)
				copy(b[SlotB:], slotBytes(f, 666, 2))
				return b
			}, true, 0, 1, [2]error{nil, errBadValue}, false},
			{"wrapped counter: B", func() []byte { return fileBytes(f, math.MaxUint64, 0) }, true, 1, 0, [2]error{}, false},
			{"wrapped counter: A", func() []byte { return fileBytes(f, 1, math.MaxUint64) }, true, 0, 1, [2]error{}, false},
			{"equal counters", func() []byte { return fileBytes(f, 5, 5) }, true, 0, 5, [2]error{}, false},
			{"counters 2^63 apart: no order, A", func() []byte { return fileBytes(f, 1, 1+1<<63) }, true, 0, 1, [2]error{}, false},
			{"longer than Size", func() []byte {
				b := make([]byte, Size, Size+4)
				copy(b, fileBytes(f, 1, 2))
				return append(b, "tail"...)
			}, true, 1, 2, [2]error{}, false},
		} {
			t.Run(fmt.Sprintf("%s/counter at %d", tc.name, at), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "x.rec")
				if err := os.WriteFile(path, tc.file(), 0o644); err != nil {
					t.Fatal(err)
				}
				r := open(t, path, f)
				newest, ok := r.Newest()
				if ok != tc.ok || newest != tc.newest || r.Counter() != tc.counter || r.Damaged() != tc.damaged {
					t.Fatalf("newest %d ok %v counter %d damaged %v; want %d %v %d %v",
						newest, ok, r.Counter(), r.Damaged(), tc.newest, tc.ok, tc.counter, tc.damaged)
				}
				for i := range 2 {
					if _, err := r.Slot(i); !errors.Is(err, tc.errs[i]) || (err == nil) != (tc.errs[i] == nil) {
						t.Fatalf("slot %d: %v, want %v", i, err, tc.errs[i])
					}
				}
				if ok && value(t, r, newest) != uint64(100*(newest+1))+tc.counter {
					t.Fatalf("slot %d holds %d", newest, value(t, r, newest))
				}
				b := make([]byte, SlotLen)
				binary.LittleEndian.PutUint64(b[8:], 999)
				if err := r.Store(b, true); err != nil {
					t.Fatal(err)
				}
				r.Close()
				r = open(t, path, f)
				if got, ok := r.Newest(); !ok || got != 1-tc.newest || r.Counter() != tc.counter+1 || value(t, r, got) != 999 {
					t.Fatalf("after a store: newest %d ok %v counter %d; want %d, %d, value 999",
						got, ok, r.Counter(), 1-tc.newest, tc.counter+1)
				}
			})
		}
	}
}

// TestEncodeLayout: the bytes of a slot, field by field.
func TestEncodeLayout(t *testing.T) {
	for _, at := range []int{8, 32, 48} {
		f := testFormat(at)
		b := make([]byte, SlotLen)
		for i := range b {
			b[i] = 0xee // the caller's payload bytes stay; the framing overwrites the rest
		}
		f.Encode(b, 0x0102030405060708)
		le := binary.LittleEndian
		if string(b[:6]) != "TFTST\x00" || le.Uint16(b[6:]) != 3 || le.Uint64(b[at:]) != 0x0102030405060708 {
			t.Fatalf("counter at %d: header or counter wrong: % x", at, b)
		}
		if le.Uint32(b[56:]) != crc32.Checksum(b[:56], crc32.MakeTable(crc32.Castagnoli)) || le.Uint32(b[60:]) != 0 {
			t.Fatalf("counter at %d: checksum or tail wrong: % x", at, b[56:])
		}
		for i := 8; i < 56; i++ {
			if (i < at || i >= at+8) && b[i] != 0xee {
				t.Fatalf("counter at %d: payload byte %d changed", at, i)
			}
		}
		if c, err := f.Decode(b); err != nil || c != 0x0102030405060708 {
			t.Fatalf("decode: %d, %v", c, err)
		}
	}
}

// TestStoreAlternates: stores go A, B, A, … each with the next counter; the
// file holds 64 bytes after the first and 576 after the second.
func TestStoreAlternates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.rec")
	f := testFormat(48)
	r := open(t, path, f)
	if _, ok := r.Newest(); ok || r.Damaged() {
		t.Fatal("a new record has a record or is damaged")
	}
	for i, size := range []int64{64, 576, 576, 576} {
		b := make([]byte, SlotLen)
		binary.LittleEndian.PutUint64(b[8:], uint64(i))
		if err := r.Store(b, i%2 == 0); err != nil {
			t.Fatal(err)
		}
		if n, _ := r.Newest(); n != i%2 || r.Counter() != uint64(i+1) {
			t.Fatalf("store %d: slot %d counter %d", i, n, r.Counter())
		}
		if st, err := os.Stat(path); err != nil || st.Size() != size {
			t.Fatalf("store %d: size %v, want %d", i, st.Size(), size)
		}
	}
}

// faultyFile fails WriteAt (after writing half the slot: a torn write) or
// Sync.
type faultyFile struct {
	*os.File
	failWrite, failSync bool
}

func (f *faultyFile) WriteAt(p []byte, off int64) (int, error) {
	if f.failWrite {
		n, _ := f.File.WriteAt(p[:len(p)/2], off)
		return n, &fs.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return f.File.WriteAt(p, off)
}

func (f *faultyFile) Sync() error {
	if f.failSync {
		return &fs.PathError{Op: "fsync", Path: f.Name(), Err: syscall.EIO}
	}
	return f.File.Sync()
}

// TestStoreFailure: a failed write or sync leaves the record in force and
// the counter as they were; the next store rewrites the same slot, and a
// torn slot is ignored at the next open.
func TestStoreFailure(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write bool
		errno error
		msg   string
	}{
		{"write", true, syscall.ENOSPC, "write test record "},
		{"fsync", false, syscall.EIO, "fsync test record "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.rec")
			var ff *faultyFile
			f := testFormat(32)
			r, err := Open(path, f, func(p string) (RecordFile, error) {
				of, err := OpenFile(p)
				if err != nil {
					return nil, err
				}
				ff = &faultyFile{File: of.(*os.File)}
				return ff, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			for v := range uint64(2) {
				if err := r.Store(slotBytes(f, v, 0), true); err != nil {
					t.Fatal(err)
				}
			}
			ff.failWrite, ff.failSync = tc.write, !tc.write
			err = r.Store(slotBytes(f, 7, 0), true)
			if !errors.Is(err, tc.errno) || !strings.HasPrefix(err.Error(), tc.msg+path+": ") {
				t.Fatalf("Store = %v, want %q… wrapping %v", err, tc.msg, tc.errno)
			}
			if n, _ := r.Newest(); n != 1 || r.Counter() != 2 || value(t, r, 1) != 1 {
				t.Fatalf("after a failed store: slot %d counter %d", n, r.Counter())
			}
			if tc.write { // slot A is torn on disk now
				r2 := open(t, path, f)
				if n, ok := r2.Newest(); !ok || n != 1 || r2.Counter() != 2 {
					t.Fatalf("reopened after a torn store: slot %d ok %v counter %d", n, ok, r2.Counter())
				}
				r2.Close()
			}
			ff.failWrite, ff.failSync = false, false
			if err := r.Store(slotBytes(f, 8, 0), true); err != nil {
				t.Fatal(err)
			}
			if n, _ := r.Newest(); n != 0 || r.Counter() != 3 || value(t, r, 0) != 8 {
				t.Fatalf("after the retried store: slot %d counter %d", n, r.Counter())
			}
		})
	}
}

// TestFallback: giving up the newest slot makes the other one the record
// in force; the next store goes over the slot given up with a counter
// above both, so it wins at the next open and the given-up value is gone.
func TestFallback(t *testing.T) {
	f := testFormat(32)
	path := filepath.Join(t.TempDir(), "x.rec")
	if err := os.WriteFile(path, fileBytes(f, 4, 5), 0o644); err != nil {
		t.Fatal(err)
	}
	r := open(t, path, f)
	if !r.Fallback() {
		t.Fatal("Fallback with a valid other slot = false")
	}
	if n, ok := r.Newest(); !ok || n != 0 || r.Counter() != 5 || value(t, r, 0) != 104 {
		t.Fatalf("after Fallback: slot %d counter %d", n, r.Counter())
	}
	if err := r.Store(slotBytes(f, 42, 0), false); err != nil {
		t.Fatal(err)
	}
	r.Close()
	r = open(t, path, f)
	if n, _ := r.Newest(); n != 1 || r.Counter() != 6 || value(t, r, 1) != 42 || value(t, r, 0) != 104 {
		t.Fatalf("reopened: slot %d counter %d", n, r.Counter())
	}

	// With no valid other slot there is nothing to fall back to.
	b := fileBytes(f, 4, 5)
	b[CRCAt] ^= 1
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r = open(t, path, f)
	if r.Fallback() {
		t.Fatal("Fallback to a torn slot = true")
	}
	if n, _ := r.Newest(); n != 1 || r.Counter() != 5 {
		t.Fatalf("after a refused Fallback: slot %d counter %d", n, r.Counter())
	}
}

func TestNewer(t *testing.T) {
	for _, tc := range []struct {
		a, b uint64
		want bool
	}{
		{2, 1, true}, {1, 2, false}, {1, 1, false},
		{0, math.MaxUint64, true}, {math.MaxUint64, 0, false},
		{5, math.MaxUint64 - 5, true},
	} {
		if got := Newer(tc.a, tc.b); got != tc.want {
			t.Errorf("Newer(%d, %d) = %v", tc.a, tc.b, got)
		}
	}
}

// TestOpenErrors: open and read failures name the record and wrap the cause.
func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := Open(filepath.Join(dir, "no", "x.rec"), testFormat(48), nil)
	if !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), "open test record "+dir) {
		t.Fatalf("open in a missing directory: %v", err)
	}
	_, err = Open(dir, testFormat(48), func(p string) (RecordFile, error) { return os.Open(p) })
	if !errors.Is(err, syscall.EISDIR) || !strings.HasPrefix(err.Error(), "read test record "+dir+": ") {
		t.Fatalf("read of a directory: %v", err)
	}
}

// TestOpenFile: a new file is created (mode 0644 at most) and empty; an
// existing one is opened as it is.
func TestOpenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.rec")
	f, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("abc"), 0)
	f.Close()
	if st, err := os.Stat(path); err != nil || st.Mode().Perm()&^0o644 != 0 {
		t.Fatalf("created file: %v, %v", st.Mode(), err)
	}
	f, err = OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 3)
	if _, err := f.ReadAt(b, 0); err != nil || string(b) != "abc" {
		t.Fatalf("reopened: %q, %v", b, err)
	}
}
