package daemon

import (
	"slices"
	"testing"

	"github.com/hashicorp/go-hclog"

	"tailfeed/pointer"
	"tailfeed/processor"
)

// The released ranges survive a reopen; a range going on from the last
// one joins it; a mark moves over a range only when it reaches the line
// before it (a sink restored to an earlier point keeps its own mark and
// is caught up from there), and ranges chain in the order recorded.
func TestReleasedStore(t *testing.T) {
	dir := t.TempDir()
	s, err := openReleased(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range [][2]int64{{100, 120}, {120, 150}, {200, 260}} {
		if err := s.add("app", "pg", 0xe1, r[0], r[1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.add("app", "other", 0xe1, 0, 999); err != nil {
		t.Fatal(err)
	}
	s, err = openReleased(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(s.entries); n != 3 {
		t.Fatalf("%d entries after the reopen, want 3 (100-120 and 120-150 joined): %+v", n, s.entries)
	}
	for _, c := range []struct {
		in, want []processor.Mark
	}{
		{[]processor.Mark{{Epoch: 0xe1, Position: 100}}, []processor.Mark{{Epoch: 0xe1, Position: 150}}}, // at the line before: passed
		{[]processor.Mark{{Epoch: 0xe1, Position: 90}}, []processor.Mark{{Epoch: 0xe1, Position: 90}}},   // restored earlier: kept
		{[]processor.Mark{{Epoch: 0xe1, Position: 200}}, []processor.Mark{{Epoch: 0xe1, Position: 260}}},
		{[]processor.Mark{{Epoch: 0xe1, Position: 170}}, []processor.Mark{{Epoch: 0xe1, Position: 170}}}, // lacks 150-200
		{[]processor.Mark{{Epoch: 0xe2, Position: 100}}, []processor.Mark{{Epoch: 0xe2, Position: 100}}}, // another epoch
		{[]processor.Mark{{Epoch: 0xe1, Position: 300}}, []processor.Mark{{Epoch: 0xe1, Position: 300}}},
	} {
		in := slices.Clone(c.in)
		if got := s.apply("app", "pg", in, nil); !slices.Equal(got, c.want) {
			t.Errorf("apply(%v) = %v, want %v", c.in, got, c.want)
		}
		if !slices.Equal(in, c.in) {
			t.Errorf("apply changed its argument: %v", in)
		}
	}
	// An epoch's first lines released, the sink with no mark of it: they
	// count when the sink holds all of the epoch the pointer moved on
	// from (its mark at that epoch's end), not when it lacks some of it.
	if err := s.add("app", "pg", 0xe2, 0, 50); err != nil {
		t.Fatal(err)
	}
	lines := []pointer.EpochLine{{Epoch: 0xe1}, {Epoch: 0xe2, PrevEpoch: 0xe1, PrevOffset: 400}}
	if got, want := s.apply("app", "pg", []processor.Mark{{Epoch: 0xe1, Position: 400}}, lines),
		[]processor.Mark{{Epoch: 0xe1, Position: 400}, {Epoch: 0xe2, Position: 50}}; !slices.Equal(got, want) {
		t.Errorf("whole previous epoch: %v, want %v", got, want)
	}
	if got, want := s.apply("app", "pg", []processor.Mark{{Epoch: 0xe1, Position: 390}}, lines),
		[]processor.Mark{{Epoch: 0xe1, Position: 390}}; !slices.Equal(got, want) {
		t.Errorf("previous epoch not whole (restored): %v, want %v", got, want)
	}
	for i := range releasedKeep + 10 {
		if err := s.add("app", "many", 0xe1, int64(10*i), int64(10*i+5)); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for _, e := range s.entries {
		if e.Subscriber == "many" {
			n++
		}
	}
	if n != releasedKeep {
		t.Fatalf("%d ranges kept, want %d", n, releasedKeep)
	}
}

// withdrawLocked removes exactly the entries given (a reload rolled back
// withdraws the released entry it wrote ahead), keeps the others, and the
// feed's count follows.
func TestLossLedgerWithdraw(t *testing.T) {
	dir := t.TempDir()
	l, err := openLossLedger(dir, hclog.NewNullLogger(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	a := LossEntry{V: lossFormat, Feed: "app", Counter: "released", Amount: 1, Time: "t1", Detail: "aside"}
	b := LossEntry{V: lossFormat, Feed: "app", Counter: "lostTails", Amount: 1, Time: "t2", Detail: "other"}
	c := LossEntry{V: lossFormat, Feed: "web", Counter: "released", Amount: 2, Time: "t1", Detail: "aside"}
	l.mu.Lock()
	l.appendLocked([]LossEntry{a, b, c})
	if err := l.withdrawLocked([]LossEntry{a, c}); err != nil {
		t.Fatal(err)
	}
	l.mu.Unlock()
	got, bad, err := l.read()
	if err != nil || bad != 0 || len(got) != 1 || got[0] != b {
		t.Fatalf("ledger after the withdrawal: %+v (bad %d, %v), want only %+v", got, bad, err, b)
	}
	if !l.has("app") || l.has("web") {
		t.Fatalf("has(app) %v has(web) %v, want true false", l.has("app"), l.has("web"))
	}
}
