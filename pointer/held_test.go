package pointer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A "downgraded" line (DESIGN §4 epoch barrier: a file's late lines under
// an epoch of their own) round-trips through the epochs file, is left out
// of ReadEpochs (it moves no pointer: internal/catchup's chain must not
// take it for a move off its pointer epoch) and is found by Downgraded.
func TestEpochsDowngradedLine(t *testing.T) {
	dir := t.TempDir()
	epochs := filepath.Join(dir, "app.epochs")
	input := filepath.Join(dir, "app.log")
	if err := os.WriteFile(input, []byte("a\nb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := mustOpen(t, filepath.Join(dir, "app.ptr"), Options{EpochsPath: epochs, Input: input})
	e0 := p.Record().Epoch
	d := NewEpoch()
	p.LogDowngraded(d, e0, 4, 0x77, 2, 0x99, input)
	raw, _ := os.ReadFile(epochs)
	if !strings.Contains(string(raw), `"reason":"downgraded"`) || !strings.Contains(string(raw), `"downgradedAt":4`) {
		t.Fatalf("epochs file:\n%s", raw)
	}
	lines, err := ReadEpochs(epochs)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		if l.Epoch == d || l.Reason == ReasonDowngraded {
			t.Fatalf("ReadEpochs returned the downgraded line %+v", l)
		}
	}
	l, ok := p.Downgraded(e0)
	if !ok || l.Epoch != d || l.DownFrom != e0 || l.DownAt != 4 || l.FileKey != 0x77 || l.FPLen != 2 || l.FP != 0x99 || l.Path != input {
		t.Fatalf("Downgraded(%x) = %+v, %v", e0, l, ok)
	}
	if _, ok := p.Downgraded(d); ok {
		t.Fatal("Downgraded of an epoch nothing was downgraded from")
	}
}

// HeldBefore: a sink whose record is of epoch rec holds every epoch the
// pointer left at or before rec's first line, through the offset it left
// it at (the first move off it), and nothing of rec itself or of later
// epochs; a catch-up naming epochs again does not change it.
func TestHeldBefore(t *testing.T) {
	const e1, e2, e3 = 0x11, 0x22, 0x33
	lines := []EpochLine{
		{Epoch: e1, Reason: "created"},
		{Epoch: e2, Reason: "reset", PrevEpoch: e1, PrevOffset: 100},
		{Epoch: e3, Reason: "reset", PrevEpoch: e2, PrevOffset: 50},
		// A catch-up back into e1 and through again.
		{Epoch: e1, Reason: "reset", PrevEpoch: e3, PrevOffset: 70},
		{Epoch: e2, Reason: "reset", PrevEpoch: e1, PrevOffset: 100},
	}
	h := HeldBefore(lines, e3)
	if len(h) != 2 || h[e1] != 100 || h[e2] != 50 {
		t.Fatalf("HeldBefore(e3) = %v", h)
	}
	h = HeldBefore(lines, e2)
	if len(h) != 1 || h[e1] != 100 {
		t.Fatalf("HeldBefore(e2) = %v", h)
	}
	if h := HeldBefore(lines, e1); len(h) != 0 {
		t.Fatalf("HeldBefore(e1) = %v", h)
	}
	if h := HeldBefore(lines, 0x44); h != nil {
		t.Fatalf("HeldBefore(unknown) = %v", h)
	}
	path := filepath.Join(t.TempDir(), "x.epochs")
	for _, l := range lines {
		if err := AppendEpoch(path, l); err != nil {
			t.Fatal(err)
		}
	}
	held := Held{Path: path}
	for _, c := range []struct {
		rec, epoch uint64
		pos        int64
		want       bool
	}{
		{e3, e1, 100, true}, {e3, e1, 101, false}, {e3, e2, 50, true}, {e3, e3, 1, false},
		{e2, e1, 99, true}, {e2, e3, 1, false}, {e1, e2, 1, false}, {0, e1, 1, false},
	} {
		if got := held.Covers(c.rec, c.epoch, c.pos); got != c.want {
			t.Errorf("Covers(rec %x, epoch %x, %d) = %v, want %v", c.rec, c.epoch, c.pos, got, c.want)
		}
	}
}
