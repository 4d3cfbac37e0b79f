package webhook

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// testdata/golden-wh.rec was written by the record's first implementation
// (before the framing moved to internal/slotrec), storing goldenWH in
// order: slot A holds the third store (counter 3), slot B the second
// (counter 2).
var goldenWH = []whState{
	{BatchEpoch: 0xe1, BatchFirst: 11, BatchLast: 44},
	{AppliedEpoch: 0xe1, AppliedPos: 44, BatchEpoch: 0xe1, BatchFirst: 11, BatchLast: 44},
	{AppliedEpoch: 0xe1, AppliedPos: 44, BatchEpoch: 0xe1, BatchFirst: 55, BatchLast: 88},
}

// TestRecordLayoutUnchanged: the same stores write the same bytes as the
// first implementation did, and its file opens to the same values (counter
// included). (The exactlyOnce half of this test is in sink/file.)
func TestRecordLayoutUnchanged(t *testing.T) {
	dir := t.TempDir()
	wh := filepath.Join(dir, "wh.rec")
	w, _, err := loadWH(wh, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range goldenWH {
		if err := w.store(s); err != nil {
			t.Fatal(err)
		}
	}
	w.f.Close()
	got, err := os.ReadFile(wh)
	if err != nil {
		t.Fatal(err)
	}
	gold := filepath.Join("testdata", "golden-wh.rec")
	want, err := os.ReadFile(gold)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("wh.rec differs from the first implementation's:\n got % x\nwant % x", got, want)
	}

	// The first implementation's file opens to what was stored.
	copyGold := filepath.Join(dir, "gold-wh.rec")
	os.WriteFile(copyGold, want, 0o644)
	w, ok, err := loadWH(copyGold, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.f.Close()
	last := goldenWH[2]
	last.Counter = 3
	if !ok || w.damaged || w.disk != last {
		t.Fatalf("webhook record: %+v ok %v damaged %v, want %+v", w.disk, ok, w.damaged, last)
	}
}
