package pointer

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// AppendCreated writes, for each epoch, exactly the "created" line Open
// writes for a new pointer file under that epoch (the time aside), with one
// fsync for all of them; a pointer then opened with CreatedLogged writes
// no line of its own, and the rest of its epochs lines (adopted) are as
// without it.
func TestAppendCreatedIsOpensLineWrittenAhead(t *testing.T) {
	dir := t.TempDir()
	own := filepath.Join(dir, "own.epochs")
	ahead := filepath.Join(dir, "ahead.epochs")
	input := filepath.Join(dir, "a.log")
	if err := os.WriteFile(input, []byte("line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	epochs := []uint64{0xa1, 0xa2, 0xa3}

	files, _ := slowSyncs(t, 0)
	if err := AppendCreated(ahead, epochs); err != nil {
		t.Fatal(err)
	}
	if n := files.Load(); n != 1 {
		t.Fatalf("AppendCreated of %d lines: %d fsyncs, want 1", len(epochs), n)
	}
	for _, e := range epochs {
		for _, c := range []struct {
			name, epochs string
			logged       bool
		}{{"own", own, false}, {"ahead", ahead, true}} {
			p, err := Open(filepath.Join(dir, c.name+"-"+hex(e)+".ptr"),
				Options{EpochsPath: c.epochs, Input: input, Epoch: e, DeferSync: true, CreatedLogged: c.logged})
			if err != nil {
				t.Fatal(err)
			}
			in, key, _ := openInput(t, input)
			if err := p.Adopt(in, key); err != nil {
				t.Fatal(err)
			}
			if err := p.Sync(); err != nil {
				t.Fatal(err)
			}
			if rec := p.Record(); rec.Epoch != e {
				t.Fatalf("pointer epoch %x, want %x", rec.Epoch, e)
			}
			p.Close()
		}
	}
	a, b := linesSansTime(t, own), linesSansTime(t, ahead)
	if len(a) != 2*len(epochs) || len(b) != 2*len(epochs) {
		t.Fatalf("own: %d lines, ahead: %d lines; want %d each", len(a), len(b), 2*len(epochs))
	}
	// Ahead: the created lines first, then one adopted line per pointer;
	// one by one: created, adopted, created, ... The same lines either way.
	for i, e := range epochs {
		if !bytes.Equal(b[i], a[2*i]) || !bytes.Equal(b[len(epochs)+i], a[2*i+1]) {
			t.Fatalf("epoch %x: lines differ:\nahead %s / %s\nown   %s / %s", e, b[i], b[len(epochs)+i], a[2*i], a[2*i+1])
		}
	}
	if n := countReason(t, ahead, "created"); n != len(epochs) {
		t.Fatalf("%d created lines with CreatedLogged, want %d (none of the pointers' own)", n, len(epochs))
	}
}

// CreatedLogged covers only a new file under Options.Epoch: an existing
// pointer file, or one that starts fresh for another reason (no valid
// slot: a new epoch), writes its line as always.
func TestCreatedLoggedOnlyForTheNewFilesEpoch(t *testing.T) {
	dir := t.TempDir()
	epochs := filepath.Join(dir, "f.epochs")
	path := filepath.Join(dir, "00000000000000b1.ptr")
	if err := os.WriteFile(path, make([]byte, Size), 0o600); err != nil {
		t.Fatal(err) // all zeros: no valid slot
	}
	p, err := Open(path, Options{EpochsPath: epochs, Epoch: 0xb1, CreatedLogged: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if !p.Fresh() || p.Record().Epoch == 0xb1 {
		t.Fatalf("zeroed file: fresh %v, epoch %x; want fresh under a new epoch", p.Fresh(), p.Record().Epoch)
	}
	got, err := ReadEpochs(epochs)
	if err != nil || len(got) != 1 || got[0].Epoch != p.Record().Epoch || got[0].Reason != "fresh" {
		t.Fatalf("epochs lines %+v (%v); want one fresh line for epoch %x", got, err, p.Record().Epoch)
	}
}

// linesSansTime is the epochs file's lines with each "time" value blanked.
func linesSansTime(t *testing.T, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, l := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		i := bytes.Index(l, []byte(`"time":"`))
		if i < 0 {
			t.Fatalf("line without time: %s", l)
		}
		j := bytes.IndexByte(l[i+8:], '"')
		out = append(out, append(append([]byte{}, l[:i+8]...), l[i+8+j:]...))
	}
	return out
}
