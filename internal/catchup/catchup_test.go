package catchup

import (
	"path/filepath"
	"testing"
	"time"

	"tailfeed/pointer"
	"tailfeed/processor"
)

const (
	e1 uint64 = 0x1111111111111111
	e2 uint64 = 0x2222222222222222
	e3 uint64 = 0x3333333333333333 // the pointer's
	eX uint64 = 0x9999999999999999 // in no epochs file
)

// chainLines is an epochs file as the pointer writes it: created (e1,
// adopted app.log.2's file), reset to e2 when e1 ended at 1000, reset to
// e3 when e2 ended at 2000. Written and read back through the real file
// format.
func chainLines(t *testing.T) []pointer.EpochLine {
	t.Helper()
	path := filepath.Join(t.TempDir(), "app.epochs")
	now := time.Now()
	for _, l := range []pointer.EpochLine{
		{Epoch: e1, Path: "", Time: now, Reason: "created"},
		{Epoch: e1, FileKey: 11, FPLen: 100, FP: 0x11, Path: "/log/app.log", Time: now, Reason: "adopted"},
		{Epoch: e2, FileKey: 22, FPLen: 200, FP: 0x22, Path: "/log/app.log", Time: now, Reason: "reset", PrevEpoch: e1, PrevOffset: 1000, PrevFileKey: 11, PrevFPLen: 100, PrevFP: 0x11},
		{Epoch: e3, FileKey: 33, FPLen: 300, FP: 0x33, Path: "/log/app.log", Time: now, Reason: "reset", PrevEpoch: e2, PrevOffset: 2000, PrevFileKey: 22, PrevFPLen: 200, PrevFP: 0x22},
	} {
		if err := pointer.AppendEpoch(path, l); err != nil {
			t.Fatal(err)
		}
	}
	lines, err := pointer.ReadEpochs(path)
	if err != nil || len(lines) != 4 {
		t.Fatalf("ReadEpochs: %d lines, %v", len(lines), err)
	}
	return lines
}

func TestDecide(t *testing.T) {
	lines := chainLines(t)
	ptr := pointer.Record{Epoch: e3, Offset: 500, FileKey: 33, FPLen: 300, FP: 0x33, Commits: 9}
	sink := func(name string, marks ...processor.Mark) Sink { return Sink{Name: name, Marks: marks} }
	m := func(e uint64, p int64) processor.Mark { return processor.Mark{Epoch: e, Position: p} }
	tests := []struct {
		name    string
		fresh   bool
		sinks   []Sink
		want    bool
		epoch   uint64
		pos     int64
		current bool
		who     string
	}{
		{name: "no record", sinks: []Sink{sink("a")}},
		{name: "same epoch behind", sinks: []Sink{sink("a", m(e3, 120))}, want: true, epoch: e3, pos: 120, current: true, who: "a"},
		{name: "same epoch equal", sinks: []Sink{sink("a", m(e3, 500))}},
		{name: "same epoch ahead", sinks: []Sink{sink("a", m(e3, 900))}},
		{name: "same epoch at 0", sinks: []Sink{sink("a", m(e3, 0))}, want: true, epoch: e3, pos: 0, current: true, who: "a"},
		{name: "older epoch complete via previousOffset", sinks: []Sink{sink("a", m(e2, 2000))}, want: true, epoch: e3, pos: 0, current: true, who: "a"},
		{name: "two older epochs complete", sinks: []Sink{sink("a", m(e1, 1000))}, want: true, epoch: e2, pos: 0, who: "a"},
		{name: "older epoch partial", sinks: []Sink{sink("a", m(e2, 700))}, want: true, epoch: e2, pos: 700, who: "a"},
		{name: "oldest epoch partial", sinks: []Sink{sink("a", m(e1, 10))}, want: true, epoch: e1, pos: 10, who: "a"},
		{name: "unknown epoch", sinks: []Sink{sink("a", m(eX, 10))}},
		{name: "fresh pointer", fresh: true, sinks: []Sink{sink("a", m(e3, 1))}},
		{name: "latest epoch of a sink counts", sinks: []Sink{sink("a", m(e1, 5), m(e3, 500), m(e2, 10))}},
		{name: "latest epoch of a sink counts, behind", sinks: []Sink{sink("a", m(e1, 5), m(e3, 400))}, want: true, epoch: e3, pos: 400, current: true, who: "a"},
		{name: "several sinks: minimum in one epoch", sinks: []Sink{sink("a", m(e3, 400)), sink("b", m(e3, 100)), sink("c")}, want: true, epoch: e3, pos: 100, current: true, who: "b"},
		{name: "several sinks: the older epoch wins", sinks: []Sink{sink("a", m(e3, 10)), sink("b", m(e2, 1500)), sink("c", m(e3, 500))}, want: true, epoch: e2, pos: 1500, who: "b"},
		{name: "several sinks: none behind", sinks: []Sink{sink("a", m(e3, 500)), sink("b", m(e3, 800)), sink("c", m(eX, 1))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ok := Decide(ptr, tt.fresh, lines, tt.sinks)
			if ok != tt.want {
				t.Fatalf("Decide = %+v, %v; want %v", p, ok, tt.want)
			}
			if !ok {
				return
			}
			if p.Epoch != tt.epoch || p.Position != tt.pos || p.Current != tt.current || p.Sink != tt.who {
				t.Fatalf("Decide = %+v; want epoch %016x pos %d current %v sink %s", p, tt.epoch, tt.pos, tt.current, tt.who)
			}
			rec := p.Record(ptr)
			if p.Current {
				if rec.Epoch != e3 || rec.FileKey != 33 || rec.FP != 0x33 || rec.Offset != tt.pos {
					t.Fatalf("Record = %+v", rec)
				}
				return
			}
			want := map[uint64]pointer.Record{
				e1: {Epoch: e1, FileKey: 11, FPLen: 100, FP: 0x11, Offset: tt.pos},
				e2: {Epoch: e2, FileKey: 22, FPLen: 200, FP: 0x22, Offset: tt.pos},
			}[tt.epoch]
			if rec != want {
				t.Fatalf("Record = %+v, want %+v", rec, want)
			}
			if end := map[uint64]int64{e1: 1000, e2: 2000}[tt.epoch]; p.End != end {
				t.Fatalf("End = %d, want %d", p.End, end)
			}
		})
	}
}

// After a catch-up put the pointer back to an older epoch, the epochs the
// pointer had reached since are ahead of it: a mark there is nothing.
func TestDecideAfterRewind(t *testing.T) {
	lines := chainLines(t)
	ptr := pointer.Record{Epoch: e2, Offset: 700, FileKey: 22, FPLen: 200, FP: 0x22}
	for _, marks := range [][]processor.Mark{
		{{Epoch: e3, Position: 500}},                              // a sink that had more
		{{Epoch: e2, Position: 700}},                              // the restored sink, at the pointer
		{{Epoch: e2, Position: 900}, {Epoch: e3, Position: 10}},   // per epoch, ahead
		{{Epoch: e2, Position: 100}, {Epoch: e3, Position: 2000}}, // holds later lines: its latest epoch counts
	} {
		if p, ok := Decide(ptr, false, lines, []Sink{{Name: "a", Marks: marks}}); ok {
			t.Fatalf("marks %+v: Decide = %+v, want nothing", marks, p)
		}
	}
	if p, ok := Decide(ptr, false, lines, []Sink{{Name: "a", Marks: []processor.Mark{{Epoch: e2, Position: 300}}}}); !ok || !p.Current || p.Position != 300 {
		t.Fatalf("behind the rewound pointer: %+v %v", p, ok)
	}
}

// No epochs file (or one that lost its lines): only the pointer's own
// epoch can be decided.
func TestDecideWithoutEpochsFile(t *testing.T) {
	ptr := pointer.Record{Epoch: e3, Offset: 500}
	if p, ok := Decide(ptr, false, nil, []Sink{{Name: "a", Marks: []processor.Mark{{Epoch: e3, Position: 20}}}}); !ok || p.Position != 20 || !p.Current {
		t.Fatalf("Decide = %+v %v", p, ok)
	}
	if p, ok := Decide(ptr, false, nil, []Sink{{Name: "a", Marks: []processor.Mark{{Epoch: e2, Position: 20}}}}); ok {
		t.Fatalf("an epoch no file names: %+v", p)
	}
}

// Left: the pointer on an epoch it had left (a catch-up put it back) names
// that epoch's file and end; on the newest epoch, nothing.
func TestLeft(t *testing.T) {
	lines := chainLines(t)
	if _, _, ok := Left(pointer.Record{Epoch: e3, Offset: 500}, lines); ok {
		t.Fatal("the newest epoch is not one the pointer left")
	}
	f, end, ok := Left(pointer.Record{Epoch: e2, Offset: 700}, lines)
	if !ok || f.Epoch != e2 || f.FileKey != 22 || f.FP != 0x22 || end != 2000 {
		t.Fatalf("Left(e2) = %+v %d %v", f, end, ok)
	}
	f, end, ok = Left(pointer.Record{Epoch: e1, Offset: 10}, lines)
	if !ok || f.FileKey != 11 || end != 1000 || !f.Time.Equal(lines[0].Time) {
		t.Fatalf("Left(e1) = %+v %d %v (time: the first line's)", f, end, ok)
	}
	if _, _, ok := Left(pointer.Record{Epoch: eX}, lines); ok {
		t.Fatal("an epoch no line names")
	}
}

// An older-epoch point lists every later generation with the identity and
// end the epochs file gives it, then the pointer's own file (the source
// counts one it does not find: a middle generation deleted, the current
// file cut while stopped).
func TestDecideLater(t *testing.T) {
	lines := chainLines(t)
	ptr := pointer.Record{Epoch: e3, Offset: 500, FileKey: 33, FPLen: 300, FP: 0x33}
	p, ok := Decide(ptr, false, lines, []Sink{{Name: "a", Marks: []processor.Mark{{Epoch: e1, Position: 10}}}})
	if !ok || p.Epoch != e1 {
		t.Fatalf("Decide = %+v %v", p, ok)
	}
	want := []Gen{
		{Epoch: e2, FileKey: 22, FPLen: 200, FP: 0x22, End: 2000, Path: "/log/app.log"},
		{Epoch: e3, FileKey: 33, FPLen: 300, FP: 0x33, End: 500, Path: "/log/app.log"},
	}
	if len(p.Later) != len(want) || p.Later[0] != want[0] || p.Later[1] != want[1] {
		t.Fatalf("Later = %+v, want %+v", p.Later, want)
	}
	p, _ = Decide(ptr, false, lines, []Sink{{Name: "a", Marks: []processor.Mark{{Epoch: e2, Position: 10}}}})
	if len(p.Later) != 1 || p.Later[0] != want[1] {
		t.Fatalf("Later from e2 = %+v", p.Later)
	}
	p, _ = Decide(ptr, false, lines, []Sink{{Name: "a", Marks: []processor.Mark{{Epoch: e3, Position: 10}}}})
	if !p.Current || p.Later != nil || p.End != 500 {
		t.Fatalf("current point %+v", p)
	}
}

// A catch-up that read a generation under a new epoch (eG, e.g. a .gz)
// names it after the pointer's epoch was first named, and the pointer
// returned to its epoch (a line eG → e3). The epochs' order is the
// generation chain's: e3 is after eG, so a sink holding both, behind in e3,
// is behind — not "ahead".
func TestDecideChainOrderNotLineOrder(t *testing.T) {
	const eG uint64 = 0x4444444444444444
	lines := chainLines(t)
	now := time.Now()
	lines = append(lines,
		pointer.EpochLine{Epoch: eG, FileKey: 44, FPLen: 200, FP: 0x22, Path: "/log/app.log.1.gz", Time: now, Reason: "reset", PrevEpoch: e1, PrevOffset: 1000},
		pointer.EpochLine{Epoch: e3, FileKey: 33, FPLen: 300, FP: 0x33, Path: "/log/app.log", Time: now, Reason: "reset", PrevEpoch: eG, PrevOffset: 2000},
	)
	ptr := pointer.Record{Epoch: e3, Offset: 900, FileKey: 33, FPLen: 300, FP: 0x33}
	marks := []processor.Mark{{Epoch: e1, Position: 1000}, {Epoch: e2, Position: 2000}, {Epoch: eG, Position: 2000}, {Epoch: e3, Position: 400}}
	p, ok := Decide(ptr, false, lines, []Sink{{Name: "pg", Marks: marks}})
	if !ok || !p.Current || p.Position != 400 {
		t.Fatalf("Decide = %+v %v; want the pointer's epoch at 400", p, ok)
	}
	// Complete in e3: nothing.
	marks[3].Position = 900
	if p, ok := Decide(ptr, false, lines, []Sink{{Name: "pg", Marks: marks}}); ok {
		t.Fatalf("complete sink: %+v", p)
	}
}

// A fresh pointer (both slots lost once) starts its chain afresh: a sink
// whose record is of an epoch named before it (its file known) is caught
// up from that file at its position, its end unknown — never ignored. An
// epoch named after the chain began that does not lead to the pointer's
// (a generation read again) is still nothing.
func TestDecideBeforeFreshStart(t *testing.T) {
	const eF uint64 = 0x5555555555555555
	now := time.Now()
	lines := []pointer.EpochLine{
		{Epoch: e1, Time: now, Reason: "created"},
		{Epoch: e1, FileKey: 11, FPLen: 100, FP: 0x11, Path: "/log/app.log", Time: now, Reason: "adopted"},
		{Epoch: eF, Time: now.Add(time.Second), Reason: "created"},
		{Epoch: eF, FileKey: 11, FPLen: 100, FP: 0x11, Path: "/log/app.log", Time: now, Reason: "adopted"},
		{Epoch: e2, FileKey: 22, FPLen: 100, FP: 0x22, Path: "/log/app.log", Time: now, Reason: "reset", PrevEpoch: eF, PrevOffset: 700},
	}
	ptr := pointer.Record{Epoch: e2, Offset: 50, FileKey: 22, FPLen: 100, FP: 0x22}
	p, ok := Decide(ptr, false, lines, []Sink{{Name: "a", Marks: []processor.Mark{{Epoch: e1, Position: 300}}}})
	if !ok || p.Current || p.Epoch != e1 || p.Position != 300 || p.End != -1 || p.File.FileKey != 11 || !p.File.Time.Equal(now) {
		t.Fatalf("Decide = %+v %v", p, ok)
	}
	if len(p.Later) != 1 || p.Later[0].Epoch != e2 || p.Later[0].End != 50 {
		t.Fatalf("Later = %+v", p.Later)
	}
	if r := p.Record(ptr); r.Epoch != e1 || r.Offset != 300 || r.FileKey != 11 {
		t.Fatalf("Record = %+v", r)
	}
	// Its mark and a later one on the way: the later one decides.
	if p, ok := Decide(ptr, false, lines, []Sink{{Name: "a", Marks: []processor.Mark{{Epoch: e1, Position: 300}, {Epoch: e2, Position: 50}}}}); ok {
		t.Fatalf("a sink complete in the pointer's epoch: %+v", p)
	}
	// Without a fresh start (the chain begins at the first line), an epoch
	// off the way is nothing.
	chainLs := chainLines(t)
	const eR uint64 = 0x6666666666666666
	chainLs = append(chainLs, pointer.EpochLine{Epoch: eR, FileKey: 66, FPLen: 10, FP: 0x66, Path: "/log/app.log.1", Time: now, Reason: "reset", PrevEpoch: e1, PrevOffset: 1000})
	if p, ok := Decide(pointer.Record{Epoch: e3, Offset: 500}, false, chainLs, []Sink{{Name: "a", Marks: []processor.Mark{{Epoch: eR, Position: 5}}}}); ok {
		t.Fatalf("an epoch off the way: %+v", p)
	}
}

// The epochs file torn so that it does not name the pointer's epoch (the
// Reset that moved the pointer off the sink's epoch lost): the sink's
// epoch, named with its file, is caught up from there.
func TestDecideTornEpochsFile(t *testing.T) {
	lines := chainLines(t)[:2] // e1 only
	ptr := pointer.Record{Epoch: e3, Offset: 500, FileKey: 33, FPLen: 300, FP: 0x33}
	p, ok := Decide(ptr, false, lines, []Sink{{Name: "a", Marks: []processor.Mark{{Epoch: e1, Position: 10}}}})
	if !ok || p.Epoch != e1 || p.Position != 10 || p.End != -1 || p.File.FileKey != 11 {
		t.Fatalf("Decide = %+v %v", p, ok)
	}
}

// Unplaced: a sink whose every mark is of an epoch no line names (and not
// the pointer's) cannot be placed: the caller counts it.
func TestUnplaced(t *testing.T) {
	lines := chainLines(t)
	ptr := pointer.Record{Epoch: e3, Offset: 500}
	m := func(e uint64, p int64) processor.Mark { return processor.Mark{Epoch: e, Position: p} }
	sinks := []Sink{
		{Name: "new"},
		{Name: "lost", Marks: []processor.Mark{m(eX, 10)}},
		{Name: "mixed", Marks: []processor.Mark{m(eX, 10), m(e2, 5)}},
		{Name: "cur", Marks: []processor.Mark{m(e3, 5)}},
	}
	// A whole epochs file: an epoch it does not name was never this
	// pointer's (a previous path's, a downgraded line's).
	if got := Unplaced(ptr, false, lines, true, sinks); got != nil {
		t.Fatalf("whole epochs file: Unplaced = %+v", got)
	}
	for name, ls := range map[string][]pointer.EpochLine{
		"a line did not parse":                 lines,
		"cut (first line a Reset)":             lines[2:],
		"torn (the pointer's epoch not named)": lines[:3],
	} {
		ok := name != "a line did not parse"
		got := Unplaced(ptr, false, ls, ok, sinks)
		if len(got) != 1 || got[0].Name != "lost" {
			t.Fatalf("%s: Unplaced = %+v", name, got)
		}
	}
	if got := Unplaced(ptr, false, nil, true, []Sink{{Name: "x", Marks: []processor.Mark{m(e1, 1)}}}); len(got) != 1 {
		t.Fatalf("no epochs file: %+v", got)
	}
	if got := Unplaced(ptr, true, nil, true, sinks); got != nil {
		t.Fatalf("fresh pointer: %+v", got)
	}
}
