package pointer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// seeds are the damage cases FuzzDecode starts from; the same bytes are
// committed in testdata/fuzz/FuzzDecode (regenerate with
// POINTER_WRITE_CORPUS=1 go test -run TestWriteFuzzCorpus ./pointer).
func seeds() map[string][]byte {
	rec := func(off int64, commits uint64) *Record {
		return &Record{Offset: off, Epoch: 0x00c3a1d2e4f50617, FileKey: 0x1234, FPLen: 4096, FP: 0xfeed, Commits: commits}
	}
	valid := build(rec(1048576, 411), rec(1049000, 412))
	torn := build(rec(1048576, 411), rec(1049000, 412))
	copy(torn[slotB+32:slotB+64], make([]byte, 32))
	future := build(rec(10, 1), rec(20, 2))
	binary.LittleEndian.PutUint16(future[slotB+offLayout:], 2)
	binary.LittleEndian.PutUint32(future[slotB+offCRC:], crc32.Checksum(future[slotB:slotB+crcEnd], crc32.MakeTable(crc32.Castagnoli)))
	return map[string][]byte{
		"valid":          valid,
		"torn_newest":    torn,
		"wrapped":        build(rec(100, math.MaxUint64), rec(200, 0)),
		"one_slot":       build(nil, rec(5, 1)),
		"future_version": future,
		"short":          valid[:600],
		"zeros":          make([]byte, Size),
	}
}

func TestWriteFuzzCorpus(t *testing.T) {
	if os.Getenv("POINTER_WRITE_CORPUS") == "" {
		t.Skip("set POINTER_WRITE_CORPUS=1 to rewrite testdata/fuzz/FuzzDecode")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzDecode")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range seeds() {
		data := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// FuzzDecode: any bytes decode without panic; a returned record comes from a
// slot whose magic, layout and CRC are valid and whose fields it equals.
func FuzzDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, buf []byte) {
		r, err := Decode(buf)
		if err != nil {
			if !errors.Is(err, ErrShort) && !errors.Is(err, ErrNoValidSlot) {
				t.Fatalf("Decode error %v is neither ErrShort nor ErrNoValidSlot", err)
			}
			if len(buf) < Size != errors.Is(err, ErrShort) {
				t.Fatalf("ErrShort for %d bytes: %v", len(buf), err)
			}
			return
		}
		at := map[byte]int{'A': 0, 'B': slotB}[r.Slot]
		s := buf[at : at+slotSize]
		le := binary.LittleEndian
		if crc32.Checksum(s[:crcEnd], crc32.MakeTable(crc32.Castagnoli)) != le.Uint32(s[offCRC:]) {
			t.Fatalf("slot %c returned with a bad CRC", r.Slot)
		}
		if string(s[:6]) != "TFPTR\x00" || le.Uint16(s[offLayout:]) != 1 || r.Layout != 1 {
			t.Fatalf("slot %c returned with header % x", r.Slot, s[:8])
		}
		if int64(le.Uint64(s[offOffset:])) != r.Offset || le.Uint64(s[offCommits:]) != r.Commits ||
			r.Epoch == 0 || r.Offset < 0 || r.FPLen > MaxFingerprint {
			t.Fatalf("record %+v does not match slot %c", r, r.Slot)
		}
	})
}

// FuzzOpen: whatever the pointer file holds, Open gives either the record
// Decode finds or a fresh start at 0 under a new epoch, never a panic.
func FuzzOpen(f *testing.F) {
	for _, b := range seeds() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, buf []byte) {
		path := filepath.Join(t.TempDir(), "p")
		if err := os.WriteFile(path, buf, 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		got := p.Record()
		want, derr := Decode(buf)
		switch {
		case derr == nil && (p.Fresh() || got != want):
			t.Fatalf("Open = %+v (fresh %v), Decode = %+v", got, p.Fresh(), want)
		case derr != nil && (!p.Fresh() || got.Offset != 0 || got.Epoch == 0):
			t.Fatalf("Open of undecodable bytes = %+v (fresh %v)", got, p.Fresh())
		}
	})
}
