package pointer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Review of "created lines ahead" (pre-existing in appendSync, reached by
// the change on a clean stop too: Glob.Close no longer waits for the
// append of the created lines ahead, see
// source/file TestGlobCloseWaitsForCreatedLinesAhead). An epochs file whose
// last append was cut (a torn last line, which readers are documented to
// ignore) swallows the next append's first line: appendSync writes after
// the torn bytes, the two read as one line that does not parse, and
// ReadEpochs skips it. Here that line is a new pointer's "created" line
// written ahead; the pointer is then opened with CreatedLogged and holds
// its epoch in both slots while the epochs file has no line of it — the
// write-ahead rule's "never a pointer epoch without a line" broken, and a
// kill -9 before the stream's "adopted" line leaves it so.
func TestCreatedAheadAfterTornTailKeepsItsLine(t *testing.T) {
	dir := t.TempDir()
	epochs := filepath.Join(dir, "f.epochs")
	if err := AppendEpoch(epochs, EpochLine{Epoch: 0x11, FileKey: 7, FPLen: 3, FP: 9, Path: "/in/old.log", Time: time.Now(), Reason: "adopted"}); err != nil {
		t.Fatal(err)
	}
	// The previous run was stopped in the middle of an append.
	f, err := os.OpenFile(epochs, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"v":1,"epoch":"0000000000000022","fileKey":"00000000`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if lines, err := ReadEpochs(epochs); err != nil || len(lines) != 1 {
		t.Fatalf("torn tail: %d lines, %v (want the one whole line, no error)", len(lines), err)
	}

	const e = uint64(0x33)
	if err := AppendCreated(epochs, []uint64{e}); err != nil {
		t.Fatal(err)
	}
	p, err := Open(filepath.Join(dir, "0000000000000033.ptr"), Options{EpochsPath: epochs, Input: "/in/a.log", Epoch: e, CreatedLogged: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := p.Record().Epoch; got != e {
		t.Fatalf("pointer epoch %016x, want %016x", got, e)
	}
	lines, rerr := ReadEpochs(epochs)
	for _, l := range lines {
		if l.Epoch == e {
			return
		}
	}
	t.Errorf("the pointer holds epoch %016x (synced) and the epochs file has no line of it (%d lines parse, read error: %v)", e, len(lines), rerr)
}

// Any torn tail is cut before the next append, however long (more than the
// 4 KiB read back at a time), also when the file holds no whole line; a
// file ending in a newline is left as it is.
func TestAppendCutsAnyTornTail(t *testing.T) {
	whole := `{"v":1,"epoch":"0000000000000011","fileKey":"0000000000000000","fingerprintLength":0,"fingerprint":"cbf29ce484222325","path":"","time":"2026-12-01T00:00:00Z","reason":"created"}` + "\n"
	long := `{"v":1,"epoch":"0000000000000022","path":"` + strings.Repeat("x", 9000)
	for _, c := range []struct {
		name, before string
		keep         int // lines of before that parse
	}{
		{"clean", whole, 1},
		{"empty", "", 0},
		{"short torn tail", whole + `{"v":1,"ep`, 1},
		{"torn tail over 4 KiB", whole + whole + long, 2},
		{"only a torn line", long, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			epochs := filepath.Join(t.TempDir(), "f.epochs")
			if err := os.WriteFile(epochs, []byte(c.before), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := AppendCreated(epochs, []uint64{0x33, 0x44}); err != nil {
				t.Fatal(err)
			}
			lines, err := ReadEpochs(epochs)
			if err != nil || len(lines) != c.keep+2 || lines[c.keep].Epoch != 0x33 || lines[c.keep+1].Epoch != 0x44 {
				t.Fatalf("after the append: %+v, %v; want %d whole lines then 33, 44", lines, err, c.keep)
			}
			b, _ := os.ReadFile(epochs)
			if !strings.HasPrefix(string(b), strings.Repeat(whole, c.keep)) || strings.Count(string(b), "\n") != c.keep+2 {
				t.Fatalf("file after the append:\n%s", b)
			}
		})
	}
}
