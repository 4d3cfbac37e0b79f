package pointer

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"strings"
	"testing"
)

func TestFNVVectors(t *testing.T) {
	// FNV-1a 64 reference values.
	for in, want := range map[string]uint64{
		"":       0xcbf29ce484222325,
		"a":      0xaf63dc4c8601ec8c,
		"foobar": 0x85944171f73967e8,
	} {
		if got := Fingerprint([]byte(in)); got != want {
			t.Errorf("Fingerprint(%q) = %016x, want %016x", in, got, want)
		}
	}
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], 0xfe00)
	binary.LittleEndian.PutUint64(b[8:], 9977978)
	if got, want := FileKey(0xfe00, 9977978), Fingerprint(b[:]); got != want {
		t.Errorf("FileKey = %016x, want %016x", got, want)
	}
	if FileKey(1, 2) == FileKey(2, 1) {
		t.Error("FileKey ignores the order of device and inode")
	}
}

func TestNewEpochIsRandomAndNonZero(t *testing.T) {
	seen := map[uint64]bool{}
	for range 1000 {
		e := NewEpoch()
		if e == 0 || seen[e] {
			t.Fatalf("NewEpoch = %016x (repeat: %v)", e, seen[e])
		}
		seen[e] = true
	}
}

// TestSlotBytes pins the layout of DESIGN §3 byte by byte.
func TestSlotBytes(t *testing.T) {
	r := Record{Offset: 0x0102030405060708, Epoch: 0x1112131415161718, FileKey: 0x2122232425262728,
		FPLen: 4096, FP: 0x4142434445464748, Commits: 0x5152535455565758}
	buf := build(&r, &r)
	le := binary.LittleEndian
	for _, base := range []int{0, 512} {
		s := buf[base : base+64]
		if string(s[:6]) != "TFPTR\x00" || le.Uint16(s[6:]) != 1 {
			t.Fatalf("slot at %d: header % x", base, s[:8])
		}
		for off, want := range map[int]uint64{8: uint64(r.Offset), 16: r.Epoch, 24: r.FileKey,
			32: r.FPLen, 40: r.FP, 48: r.Commits} {
			if got := le.Uint64(s[off:]); got != want {
				t.Errorf("slot at %d, field %d = %x, want %x", base, off, got, want)
			}
		}
		if got, want := le.Uint32(s[56:]), crc32.Checksum(s[:56], crc32.MakeTable(crc32.Castagnoli)); got != want {
			t.Errorf("slot at %d: crc %08x, want %08x", base, got, want)
		}
	}
	zero := func(from, to int) {
		if !bytes.Equal(buf[from:to], make([]byte, to-from)) {
			t.Errorf("bytes %d..%d not zero", from, to-1)
		}
	}
	zero(60, 512)
	zero(572, 1024)
}

// Damage cases (STYLE §5): a valid file with A = offset 100 (counter 5) and
// B = offset 200 (counter 6), each row damages it and names the outcome.
// Slot damage as such (torn, bad magic, other layout, counter order) is
// tested once in internal/slotrec's TestOpenDamage; these rows are what the
// pointer adds: the WARN for one bad slot, its 1,024-byte size rule, field
// ranges under a valid checksum, and the fresh start with its reason.
func TestOpenDamage(t *testing.T) {
	const epoch, key = 0xe1, 0xabc
	rec := func(off int64, commits uint64) *Record {
		return &Record{Offset: off, Epoch: epoch, FileKey: key, FPLen: 3, FP: Fingerprint([]byte("abc")), Commits: commits}
	}
	base := func() []byte { return build(rec(100, 5), rec(200, 6)) }
	tear := func(buf []byte, slot int) []byte { // the write reached the offset field only
		binary.LittleEndian.PutUint64(slotBytes(buf, slot)[offOffset:], 999)
		return buf
	}
	relayout := func(buf []byte, slot int, v uint16) []byte { // a valid slot of another layout
		s := slotBytes(buf, slot)
		binary.LittleEndian.PutUint16(s[offLayout:], v)
		binary.LittleEndian.PutUint32(s[offCRC:], crc32.Checksum(s[:crcEnd], crc32.MakeTable(crc32.Castagnoli)))
		return buf
	}
	tests := []struct {
		name   string
		file   func() []byte
		offset int64  // expected offset; -1: fresh start
		slot   byte   // expected slot when not fresh
		warn   string // substring of the expected WARN; "" none
	}{
		{"intact", base, 200, 'B', ""},
		{"torn B (newest)", func() []byte { return tear(base(), 1) }, 100, 'A', "checksum mismatch"},
		{"both torn", func() []byte { return tear(tear(base(), 0), 1) }, -1, 0, "no valid slot"},
		{"short", func() []byte { return base()[:700] }, -1, 0, "shorter than 1024"},
		{"one byte", func() []byte { return []byte{'T'} }, -1, 0, "1 bytes"},
		{"empty", func() []byte { return nil }, -1, 0, "empty pointer file"},
		{"all zero", func() []byte { return make([]byte, Size) }, -1, 0, "bad magic"},
		{"future version", func() []byte { return relayout(relayout(base(), 0, 2), 1, 2) }, -1, 0, "layout 2"},
		{"valid crc, epoch 0", func() []byte { r := rec(200, 6); r.Epoch = 0; return build(rec(100, 5), r) }, 100, 'A', "epoch 0"},
		{"valid crc, fingerprint too long", func() []byte { r := rec(200, 6); r.FPLen = 4097; return build(rec(100, 5), r) }, 100, 'A', "4097"},
		{"valid crc, negative offset", func() []byte { return build(rec(100, 5), rec(-1, 6)) }, 100, 'A', "negative offset"},
		{"longer than 1024 bytes", func() []byte { return append(base(), "tail"...) }, 200, 'B', ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := ptrPath(t)
			if err := os.WriteFile(path, tt.file(), 0o644); err != nil {
				t.Fatal(err)
			}
			log := newLog()
			p := mustOpen(t, path, Options{Logger: log})
			got := p.Record()
			if tt.warn != "" && !log.warned(tt.warn) {
				t.Errorf("no WARN with %q; log:\n%s", tt.warn, log.String())
			}
			if tt.warn == "" && log.anyWarn() {
				t.Errorf("unexpected WARN:\n%s", log.String())
			}
			if !p.Synced() {
				t.Error("Synced() = false after Open")
			}
			if tt.offset >= 0 {
				if p.Fresh() || got.Offset != tt.offset || got.Slot != tt.slot || got.Epoch != epoch || got.FileKey != key {
					t.Fatalf("Record = %+v (fresh %v), want offset %d from slot %c", got, p.Fresh(), tt.offset, tt.slot)
				}
				return
			}
			if !p.Fresh() || got.Offset != 0 || got.Epoch == epoch || got.Epoch == 0 || got.FileKey != 0 || got.FPLen != 0 {
				t.Fatalf("Record = %+v (fresh %v), want a fresh start at 0 under a new epoch", got, p.Fresh())
			}
			if !strings.Contains(p.FreshReason(), tt.warn) {
				t.Errorf("FreshReason = %q, want it to contain %q", p.FreshReason(), tt.warn)
			}
			checkFreshFile(t, path, got.Epoch)
		})
	}
}

// checkFreshFile asserts both slots hold (epoch, offset 0) and the rest is zero.
func checkFreshFile(t *testing.T, path string, epoch uint64) {
	t.Helper()
	buf := readFile(t, path)
	if len(buf) < Size {
		t.Fatalf("pointer file has %d bytes", len(buf))
	}
	a, b, errA, errB := slots(buf)
	if errA != nil || errB != nil || a.Epoch != epoch || b.Epoch != epoch || a.Offset != 0 || b.Offset != 0 {
		t.Fatalf("slots after a fresh start: %+v %v / %+v %v", a, errA, b, errB)
	}
	if !bytes.Equal(buf[64:512], make([]byte, 448)) || !bytes.Equal(buf[576:Size], make([]byte, 448)) {
		t.Fatal("padding not zeroed by the fresh start")
	}
}

func TestOpenNewFile(t *testing.T) {
	path := ptrPath(t)
	log := newLog()
	p := mustOpen(t, path, Options{Logger: log})
	if !p.Fresh() || p.FreshReason() != "new pointer file" {
		t.Fatalf("Fresh = %v, %q", p.Fresh(), p.FreshReason())
	}
	if log.anyWarn() {
		t.Errorf("a new pointer file is not a WARN:\n%s", log.String())
	}
	r := p.Record()
	if r.Epoch == 0 || r.Offset != 0 || r.Layout != 1 || !p.Synced() {
		t.Fatalf("Record = %+v, synced %v", r, p.Synced())
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != Size || fi.Mode().Perm()&^0o644 != 0 {
		t.Fatalf("pointer file: size %d mode %v", fi.Size(), fi.Mode())
	}
	checkFreshFile(t, path, r.Epoch)

	p.Close()
	q := mustOpen(t, path, Options{Logger: log})
	if q.Fresh() || q.Record().Epoch != r.Epoch {
		t.Fatalf("reopen: fresh %v, record %+v, want epoch %016x", q.Fresh(), q.Record(), r.Epoch)
	}
}

// A torn newest slot falls back to the older record: never ahead of it.
func TestTornNewestSlotFallsBack(t *testing.T) {
	path := ptrPath(t)
	p := mustOpen(t, path, Options{})
	for _, off := range []int64{10, 20, 30} {
		if err := p.Commit(off); err != nil {
			t.Fatal(err)
		}
	}
	newest := p.Record()
	p.Close()

	buf := readFile(t, path)
	slot := int(newest.Slot - 'A')
	copy(slotBytes(buf, slot)[32:], make([]byte, 32)) // second half of the write lost
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Decode(buf)
	if err != nil {
		t.Fatal(err)
	}
	if r.Offset != 20 || r.Slot == newest.Slot || r.Commits != newest.Commits-1 {
		t.Fatalf("after tearing slot %c: %+v, want offset 20 from the other slot", newest.Slot, r)
	}
	q := mustOpen(t, path, Options{})
	if got := q.Record(); got.Offset != 20 || got.Epoch != newest.Epoch {
		t.Fatalf("Open after tear: %+v", got)
	}
	// The torn slot is the next one written.
	if err := q.Commit(40); err != nil {
		t.Fatal(err)
	}
	if got := q.Record(); got.Slot != newest.Slot {
		t.Fatalf("commit after tear went to slot %c, want the torn %c", got.Slot, newest.Slot)
	}
}

func TestDecodeErrors(t *testing.T) {
	if _, err := Decode(make([]byte, Size-1)); !errors.Is(err, ErrShort) {
		t.Errorf("Decode(1023 bytes) = %v, want ErrShort", err)
	}
	ok := &Record{Epoch: 1, Commits: 1}
	bad := build(ok, ok)
	copy(bad[0:], "XXXXX")                                  // A: bad magic
	binary.LittleEndian.PutUint16(bad[slotB+offLayout:], 9) // B: future layout
	_, err := Decode(bad)
	for _, want := range []error{ErrNoValidSlot, ErrInvalid, ErrVersionMismatch} {
		if !errors.Is(err, want) {
			t.Errorf("Decode = %v, want it to match %v", err, want)
		}
	}
	bad = build(ok, ok)
	bad[20] ^= 1
	bad[slotB+20] ^= 1
	if _, err := Decode(bad); !errors.Is(err, ErrChecksum) || !errors.Is(err, ErrNoValidSlot) {
		t.Errorf("Decode(both flipped) = %v, want ErrNoValidSlot + ErrChecksum", err)
	}
}

func TestInspect(t *testing.T) {
	path := ptrPath(t)
	p := mustOpen(t, path, Options{})
	if err := p.Store(77); err != nil { // stored, not synced: Inspect still sees it
		t.Fatal(err)
	}
	r, err := Inspect(path) // no lock taken while p holds it
	if err != nil || r != p.Record() {
		t.Fatalf("Inspect = %+v, %v; want %+v", r, err, p.Record())
	}
	short := ptrPath(t)
	os.WriteFile(short, []byte("TFPTR"), 0o644)
	if _, err := Inspect(short); !errors.Is(err, ErrShort) {
		t.Errorf("Inspect(short) = %v", err)
	}
	junk := ptrPath(t)
	os.WriteFile(junk, make([]byte, Size), 0o644)
	if _, err := Inspect(junk); !errors.Is(err, ErrNoValidSlot) || !strings.Contains(err.Error(), junk) {
		t.Errorf("Inspect(zeros) = %v", err)
	}
}
