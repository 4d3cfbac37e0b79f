package pointer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// DESIGN §4: the pointer's creation and each Reset append a line to the
// epochs file (epoch, file key, fingerprint, path, time), fsynced, 0600,
// before the pointer holds the epoch; an adoption names the first file of
// an epoch created without one. ReadEpochs reads them back in order.
func TestEpochsFileRecordsEveryEpoch(t *testing.T) {
	dir, epochs, input, in := epochsInput(t, "first line\nsecond line\n")
	before := time.Now()
	p := mustOpen(t, filepath.Join(dir, "app.ptr"), Options{EpochsPath: epochs, Input: input})
	e0 := p.Record().Epoch
	if err := p.Adopt(in, 0x1111); err != nil {
		t.Fatalf("Adopt = %v", err)
	}
	if err := p.Commit(23); err != nil {
		t.Fatal(err)
	}
	e1 := NewEpoch()
	if err := p.Reset(e1, in, 0x2222); err != nil {
		t.Fatal(err)
	}
	e2 := NewEpoch()
	if err := p.Reset(e2, nil, 0); err != nil {
		t.Fatal(err)
	}

	st, err := os.Stat(epochs)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("epochs file mode %v, want 0600", st.Mode().Perm())
	}
	got, err := ReadEpochs(epochs)
	if err != nil {
		t.Fatal(err)
	}
	fp := Fingerprint([]byte("first line\nsecond line\n"))
	want := []EpochLine{
		{Epoch: e0, Reason: "created", FP: Fingerprint(nil)},
		{Epoch: e0, FileKey: 0x1111, FPLen: 23, FP: fp, Path: input, Reason: "adopted"},
		{Epoch: e1, FileKey: 0x2222, FPLen: 23, FP: fp, Path: input, Reason: "reset", PrevEpoch: e0, PrevOffset: 23,
			PrevFileKey: 0x1111, PrevFPLen: 23, PrevFP: fp},
		{Epoch: e2, Reason: "forgotten", FP: Fingerprint(nil), PrevEpoch: e1,
			PrevFileKey: 0x2222, PrevFPLen: 23, PrevFP: fp},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d lines, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Time.Before(before.Add(-time.Second)) || g.Time.After(time.Now()) {
			t.Errorf("line %d: time %v out of range", i, g.Time)
		}
		g.Time = time.Time{}
		if g != w {
			t.Errorf("line %d: %+v, want %+v", i, g, w)
		}
	}
	raw := readFile(t, epochs)
	if !strings.Contains(string(raw), `"epoch":"`+hex(e1)+`"`) ||
		!strings.Contains(string(raw), `"fileKey":"0000000000002222"`) ||
		!strings.Contains(string(raw), `"previousEpoch":"`+hex(e0)+`","previousOffset":23,"previousFileKey":"0000000000001111","previousFingerprintLength":23,"previousFingerprint":"`+hex(fp)+`"}`) {
		t.Fatalf("epochs file does not carry 16-hex epochs and keys:\n%s", raw)
	}

	// The line that emptied the record names the file it left (D1: a
	// restart does not read that file again as a later generation).
	if l, ok := p.Left(e2); !ok || l.Reason != "forgotten" || l.PrevFileKey != 0x2222 || l.PrevFPLen != 23 || l.PrevFP != fp {
		t.Fatalf("Left(forgotten epoch) = %+v, %v; want the identity of the file left", l, ok)
	}
	if _, ok := p.Left(e0); ok {
		t.Fatalf("Left(created epoch) found a line; want none")
	}

	// A torn last line (a crash mid-append) is ignored; a damaged line in
	// the middle is skipped and named.
	if err := os.WriteFile(epochs, append(append(raw, "not json\n"...), raw[:20]...), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := AppendEpoch(epochs+".2", EpochLine{Epoch: 1, Time: time.Now()}); err != nil {
		t.Fatal(err)
	}
	got, err = ReadEpochs(epochs)
	if len(got) != 4 || err == nil || !strings.Contains(err.Error(), epochs+":5:") {
		t.Fatalf("damaged file: %d lines, error %v; want 4 lines and an error naming line 5", len(got), err)
	}
	if got, err := ReadEpochs(filepath.Join(dir, "missing.epochs")); got != nil || err != nil {
		t.Fatalf("missing file: %v, %v", got, err)
	}
}

// A pointer file with no valid slot starts fresh: that epoch is recorded
// too, before the pointer holds it.
func TestEpochsFileRecordsFreshStart(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.ptr")
	if err := os.WriteFile(path, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	epochs := filepath.Join(dir, "app.epochs")
	p := mustOpen(t, path, Options{EpochsPath: epochs, Input: "/in"})
	got, err := ReadEpochs(epochs)
	if err != nil || len(got) != 1 || got[0].Epoch != p.Record().Epoch || got[0].Reason != "fresh" {
		t.Fatalf("epochs %+v, %v; want one fresh line for %016x", got, err, p.Record().Epoch)
	}
}

// A ResetAs (the source's replaced, truncated) is recorded with its reason
// and the new file's identity.
func TestEpochsFileRecordsResetReason(t *testing.T) {
	dir, epochs, input, in := epochsInput(t, "abc\n")
	p := mustOpen(t, filepath.Join(dir, "app.ptr"), Options{EpochsPath: epochs, Input: input})
	if err := p.Adopt(in, 7); err != nil {
		t.Fatal(err)
	}
	if err := p.Commit(4); err != nil {
		t.Fatal(err)
	}
	if err := p.ResetAs("truncated", NewEpoch(), in, 7); err != nil {
		t.Fatalf("ResetAs = %v", err)
	}
	got, err := ReadEpochs(epochs)
	if err != nil || len(got) != 3 {
		t.Fatalf("epochs %+v, %v; want created, adopted, truncated", got, err)
	}
	if l := got[2]; l.Reason != "truncated" || l.Epoch != p.Record().Epoch || l.FileKey != 7 || l.Path != input ||
		l.PrevEpoch != got[1].Epoch || l.PrevOffset != 4 {
		t.Fatalf("truncation line %+v", l)
	}
}

// A record that stays empty (nothing committed: an empty input, a partial
// line) is adopted again at every start: the epochs file gets one adopted
// line for it, not one per start, while the input is the same file (its
// first bytes unchanged, grown or not). Another file is recorded.
func TestEpochsFileAdoptionLoggedOnce(t *testing.T) {
	dir := t.TempDir()
	epochs := filepath.Join(dir, "app.epochs")
	input := filepath.Join(dir, "app.log")
	if err := os.WriteFile(input, []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	adoptions := func() int { return countReason(t, epochs, "adopted") }
	start := func(key uint64) {
		t.Helper()
		in, err := os.Open(input)
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close()
		p, err := Open(filepath.Join(dir, "app.ptr"), Options{EpochsPath: epochs, Input: input})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		if err := p.Adopt(in, key); err != nil {
			t.Fatalf("Adopt = %v", err)
		}
	}
	start(7)
	start(7)
	if err := os.WriteFile(input, []byte("partial line goes on"), 0o644); err != nil {
		t.Fatal(err)
	}
	start(7)
	if n := adoptions(); n != 1 {
		t.Fatalf("%d adopted lines after three starts on the same file, want 1", n)
	}
	start(8) // another file key
	if err := os.WriteFile(input, []byte("other"), 0o644); err != nil {
		t.Fatal(err)
	}
	start(8) // other first bytes
	if n := adoptions(); n != 3 {
		t.Fatalf("%d adopted lines, want 3 (a new key, then new first bytes)", n)
	}
}

// Named gives the file an epoch's latest epochs line names — the adopted
// one after a kill -9 before the first commit stored it in the record —
// and nothing once that epoch's latest line names no file.
func TestNamedEpochFile(t *testing.T) {
	dir, epochs, input, in := epochsInput(t, "first line\n")
	p, err := Open(filepath.Join(dir, "app.ptr"), Options{EpochsPath: epochs, Input: input})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Adopt(in, 42); err != nil {
		t.Fatal(err)
	}
	e := p.Record().Epoch
	if r := p.Record(); r.FileKey != 0 || r.FPLen != 0 {
		t.Fatalf("record after Adopt names a file before any commit: %+v (the case Named is for)", r)
	}
	l, ok := p.Named(e)
	if !ok || l.FileKey != 42 || l.FPLen != uint64(len("first line\n")) || l.FP != Fingerprint([]byte("first line\n")) {
		t.Fatalf("Named(%x) = %+v, %v; want the adopted file", e, l, ok)
	}
	if _, ok := p.Named(e + 1); ok {
		t.Fatal("Named of an epoch the file does not name found one")
	}
}

// epochsInput writes content to dir/app.log in a fresh dir and returns dir,
// the epochs file's path there, the input's path and the input opened
// (closed when the test ends).
func epochsInput(t *testing.T, content string) (dir, epochs, input string, in *os.File) {
	t.Helper()
	dir = t.TempDir()
	epochs = filepath.Join(dir, "app.epochs")
	input = filepath.Join(dir, "app.log")
	if err := os.WriteFile(input, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(input)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	return dir, epochs, input, in
}
