package pointer

import (
	"os"
	"path/filepath"
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
