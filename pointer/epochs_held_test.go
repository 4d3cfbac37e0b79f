package pointer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A "held" line carries its end; HeldMarks names an epoch only while its
// last line is "held" (an "unheld" or any later line of the epoch voids
// it); a held line without an end does not parse (it would read as end 0
// and match an empty record).
func TestHeldMarks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.epochs")
	now := time.Now()
	a, b, c := NewEpoch(), NewEpoch(), NewEpoch()
	lines := []EpochLine{
		{Epoch: a, FileKey: 1, FPLen: 4, FP: 9, Path: "/l/w.log", Time: now, Reason: "created"},
		{Epoch: a, FileKey: 1, FPLen: 4, FP: 9, Path: "/l/w.log", Time: now, Reason: ReasonHeld, End: 52, NextKey: 0xabc},
		{Epoch: b, FileKey: 2, FPLen: 4, FP: 8, Path: "/l/x.log", Time: now, Reason: ReasonHeld, End: 7},
		{Epoch: b, FileKey: 2, FPLen: 4, FP: 8, Path: "/l/x.log", Time: now, Reason: ReasonUnheld},
		{Epoch: c, FileKey: 3, FPLen: 4, FP: 7, Path: "/l/y.log", Time: now, Reason: ReasonHeld, End: 0},
		{Epoch: c, FileKey: 0, Time: now, Reason: "forgotten", PrevEpoch: a, PrevOffset: 3},
	}
	if err := AppendEpochs(path, lines); err != nil {
		t.Fatal(err)
	}
	got, err := ReadEpochs(path)
	if err != nil || len(got) != len(lines) {
		t.Fatalf("ReadEpochs = %d lines, %v; want %d", len(got), err, len(lines))
	}
	m := HeldMarks(got)
	if len(m) != 1 || m[a].End != 52 || m[a].FileKey != 1 || m[a].Path != "/l/w.log" || m[a].NextKey != 0xabc {
		t.Fatalf("HeldMarks = %+v, want only epoch a's, end 52", m)
	}
	raw, _ := os.ReadFile(path)
	if n := strings.Count(string(raw), `"end":`); n != 3 {
		t.Errorf("%d lines carry an end, want the 3 held ones:\n%s", n, raw)
	}
	bad := strings.Replace(strings.SplitN(string(raw), "\n", 3)[1], `"end":52`, `"x":1`, 1)
	if _, err := parseEpochLine([]byte(bad)); err == nil {
		t.Errorf("a held line without an end parsed: %s", bad)
	}
}
