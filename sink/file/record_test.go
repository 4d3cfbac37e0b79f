package file

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// testdata/golden-eo.rec was written by the record's first implementation
// (before the framing moved to internal/slotrec), storing goldenApplied in
// order: slot A holds the third store (counter 3), slot B the second
// (counter 2). The webhook record's golden file is in sink/webhook.

var goldenApplied = []applied{
	{Epoch: 0x00c3a1d2e4f50617, Position: 11, Length: 12},
	{Epoch: 0x00c3a1d2e4f50617, Position: 4096, Length: 5000},
	{Epoch: 0x1122334455667788, Position: 7, Length: 5008},
}

func readGolden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRecordLayoutsUnchanged: the same stores write the same bytes as the
// first implementations did, and their files open to the same values
// (counters included), for the exactlyOnce record.
func TestRecordLayoutsUnchanged(t *testing.T) {
	dir := t.TempDir()
	eo := filepath.Join(dir, "eo.rec")
	r, err := loadRecord(eo, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range goldenApplied {
		if err := r.store(a, true); err != nil {
			t.Fatal(err)
		}
	}
	r.f.Close()
	for _, name := range []string{"eo.rec"} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if want := readGolden(t, "golden-"+name); !bytes.Equal(got, want) {
			t.Fatalf("%s differs from the first implementation's:\n got % x\nwant % x", name, got, want)
		}
	}

	// The first implementation's files open to what was stored.
	gold := filepath.Join(dir, "gold-eo.rec")
	os.WriteFile(gold, readGolden(t, "golden-eo.rec"), 0o644)
	r, err = loadRecord(gold, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.f.Close()
	if n, ok := r.f.Newest(); !ok || n != 0 || r.f.Counter() != 3 || *r.slots[0] != goldenApplied[2] || *r.slots[1] != goldenApplied[1] {
		t.Fatalf("exactlyOnce record: slot %d counter %d, A %+v B %+v", n, r.f.Counter(), r.slots[0], r.slots[1])
	}
}

// TestExactlyOnceFallbackStoresOverTheLongSlot: after a fallback to the
// other slot, the first store goes over the slot that was too long, never
// over the one in force: a torn write there would leave no record that
// fits (the counter alone could not save it).
func TestExactlyOnceFallbackStoresOverTheLongSlot(t *testing.T) {
	for _, tc := range []struct {
		name    string
		batches [][]string // each batch from where the previous ended
		long    int        // the slot that ends up too long
		keep    int64      // the output length the other slot covers
	}{
		// The open of a new output stores its first record (slot A), so
		// the batches' records go B, A, B, …
		{"long slot A", [][]string{{"aa", "bb"}, {"cc", "dd", "ee"}}, 0, 6},
		{"long slot B", [][]string{{"aa", "bb"}, {"cc"}, {"dd", "ee"}}, 1, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEOSink(t, FsyncNever)
			s := e.openSink()
			var pos int64
			for _, lines := range tc.batches {
				mustProcess(t, s, eoBatch(1, pos, lines...))
				for _, l := range lines {
					pos += int64(len(l) + 1)
				}
			}
			s.Close()
			// Keep what the slot in force after the fallback covers.
			good := readSlots(t, e.rec)[1-tc.long]
			if err := os.Truncate(e.out, tc.keep); err != nil {
				t.Fatal(err)
			}
			// Open stores the record it fell back to (a copy of the slot in
			// force, counter above both) over the long slot.
			s = e.openSink()
			after := readSlots(t, e.rec)
			if !bytes.Equal(after[1-tc.long], good) {
				t.Fatal("the store after the fallback overwrote the slot in force")
			}
			if !bytes.Equal(after[tc.long][8:32], good[8:32]) {
				t.Fatal("open did not store the record it fell back to over the long slot")
			}
			mustProcess(t, s, eoBatch(2, 0, "x"))
			s.Close()
			// Tear the slot just stored: the record stored at open is used.
			tear(t, e.rec, 1-tc.long)
			s = e.openSink()
			defer s.Close()
			if s.applied.Length != tc.keep || s.applied.Epoch != 1 {
				t.Fatalf("after a torn store: applied %+v, want the kept slot (length %d)", s.applied, tc.keep)
			}
		})
	}
}

// readSlots returns the two 64-byte slots of a record file.
func readSlots(t *testing.T, path string) [2][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || len(b) < recSlotB+64 {
		t.Fatalf("record %d bytes, %v", len(b), err)
	}
	return [2][]byte{bytes.Clone(b[:64]), bytes.Clone(b[recSlotB : recSlotB+64])}
}

// tear garbles the middle of slot i.
func tear(t *testing.T, path string, i int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte("garbage"), int64(i*recSlotB+20)); err != nil {
		t.Fatal(err)
	}
}

// A new output's first record is stored at open, so a crash before the
// first store (fsync interval: the store waits for the flush) leaves a
// record the reopen truncates the output back to: the re-delivered lines
// are written once, not after a copy of themselves (audit 9C: every line
// of the first second twice after a kill -9).
func TestExactlyOnceNewOutputRecordStoredAtOpen(t *testing.T) {
	e := newEOSink(t, FsyncInterval)
	s := e.openSink()
	mustProcess(t, s, eoBatch(1, 0, "aa", "bb"))
	// A kill -9 now: the output holds the lines, no store happened since
	// the open. (s is left unclosed, as the process would be.)
	s2 := e.openSink()
	defer s2.Close()
	if s2.size != 0 {
		t.Fatalf("reopened after a crash before the first flush: output size %d, want it truncated to 0", s2.size)
	}
	mustProcess(t, s2, eoBatch(1, 0, "aa", "bb"))
	s2.Close()
	if got, _ := os.ReadFile(e.out); string(got) != "aa\nbb\n" {
		t.Fatalf("output %q, want each line once", got)
	}
}
