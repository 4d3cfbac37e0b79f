package e2e

// The pointer file of DESIGN §3 decoded from its bytes, independently of
// the daemon's code.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"os"
	"syscall"
	"testing"
)

// ptrSlot is one decoded 64-byte slot of a pointer file.
type ptrSlot struct {
	why                          string // why it is not valid; "" when it is
	offset                       int64
	epoch, key, fpLen, fp, count uint64
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// decodeSlot decodes the slot at the start of half (512 bytes) by the
// table of §3 and checks the zero bytes after it.
func decodeSlot(half []byte) ptrSlot {
	b := half[:64]
	le := binary.LittleEndian
	s := ptrSlot{offset: int64(le.Uint64(b[8:])), epoch: le.Uint64(b[16:]), key: le.Uint64(b[24:]),
		fpLen: le.Uint64(b[32:]), fp: le.Uint64(b[40:]), count: le.Uint64(b[48:])}
	switch {
	case string(b[:5]) != "TFPTR":
		s.why = fmt.Sprintf("magic %q", b[:5])
	case b[5] != 0:
		s.why = "byte 5 not zero"
	case le.Uint16(b[6:]) != 1:
		s.why = fmt.Sprintf("layout %d", le.Uint16(b[6:]))
	case crc32.Checksum(b[:56], castagnoli) != le.Uint32(b[56:]):
		s.why = "CRC-32C mismatch"
	case !bytes.Equal(half[60:], make([]byte, len(half)-60)):
		s.why = "bytes 60..511 of the half are not zero"
	}
	return s
}

// readSlots reads the raw pointer file and its two slots.
func readSlots(t testing.TB, path string) (data []byte, a, b ptrSlot) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != 1024 {
		t.Fatalf("pointer file is %d bytes, want exactly 1,024", len(data))
	}
	return data, decodeSlot(data[:512]), decodeSlot(data[512:])
}

// newestSlot returns the valid slot with the higher commit counter and its
// letter.
func newestSlot(t testing.TB, a, b ptrSlot) (ptrSlot, string, ptrSlot) {
	t.Helper()
	switch {
	case a.why != "" && b.why != "":
		t.Fatalf("no valid slot: A %s, B %s", a.why, b.why)
	case b.why != "" || (a.why == "" && a.count > b.count):
		return a, "A", b
	}
	return b, "B", a
}

// fileKeyOf is FNV-1a 64 over the device then the inode, each 8
// little-endian bytes (§3), from os.Stat.
func fileKeyOf(t testing.TB, path string) uint64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	sys := st.Sys().(*syscall.Stat_t)
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], uint64(sys.Dev))
	binary.LittleEndian.PutUint64(b[8:], uint64(sys.Ino))
	h := fnv.New64a()
	h.Write(b[:])
	return h.Sum64()
}

// fingerprintOf is FNV-1a 64 of the first n bytes of path.
func fingerprintOf(t testing.TB, path string, n uint64) uint64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if uint64(len(data)) < n {
		t.Fatalf("%s has %d bytes, fingerprint covers %d", path, len(data), n)
	}
	h := fnv.New64a()
	h.Write(data[:n])
	return h.Sum64()
}
