package pointer

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// feed is an input file and its pointer, as a source would hold them.
type feed struct {
	t             *testing.T
	dir, in, path string
	log           *logBuf
}

func newFeed(t *testing.T) *feed {
	dir := t.TempDir()
	return &feed{t: t, dir: dir, in: filepath.Join(dir, "app.log"), path: filepath.Join(dir, "app.ptr"), log: newLog()}
}

// run opens the pointer and the input, checks, and closes the pointer
// again, as one daemon run; commit > 0 commits that offset before closing.
func (fd *feed) run(commit int64) (Verdict, Record, Record) {
	fd.t.Helper()
	p, err := Open(fd.path, Options{Logger: fd.log})
	if err != nil {
		fd.t.Fatal(err)
	}
	defer p.Close()
	before := p.Record()
	f, key, size := openInput(fd.t, fd.in)
	v, err := p.Check(f, key, size)
	if err != nil {
		fd.t.Fatalf("Check: %v", err)
	}
	if commit > 0 {
		if err := p.Commit(commit); err != nil {
			fd.t.Fatal(err)
		}
	}
	return v, before, p.Record()
}

func (fd *feed) write(b []byte) {
	fd.t.Helper()
	if err := os.WriteFile(fd.in, b, 0o644); err != nil {
		fd.t.Fatal(err)
	}
}

var (
	lines  = []byte("one\ntwo\nthree\n")                    // 14 bytes
	others = []byte("ONE\nTWO\nTHREE\nFOUR\n")              // other first bytes, longer
	big    = bytes.Repeat([]byte("0123456789abcde\n"), 512) // 8 KiB
)

// start commits lines under a first epoch and returns that record.
func (fd *feed) start(content []byte, offset int64) Record {
	fd.t.Helper()
	fd.write(content)
	v, _, r := fd.run(offset)
	if v != Adopted {
		fd.t.Fatalf("first run: %v, want adopted", v)
	}
	return r
}

func TestCheckVerdicts(t *testing.T) {
	tests := []struct {
		name    string
		content []byte
		offset  int64
		change  func(fd *feed)
		want    Verdict
		warn    string
	}{
		{"append", lines, 14, func(fd *feed) { appendTo(t, fd.in, []byte("four\n")) }, Kept, ""},
		{"new mtime", lines, 14, func(fd *feed) {
			future := time.Now().Add(time.Hour)
			os.Chtimes(fd.in, future, future)
		}, Kept, ""},
		{"rewrite with other first bytes", lines, 14, func(fd *feed) { fd.write(others) }, Replaced, "first 14 bytes differ"},
		{"truncation", lines, 14, func(fd *feed) { os.Truncate(fd.in, 4) }, Truncated, "size 4 < offset 14"},
		{"copytruncate then regrowth", lines, 14, func(fd *feed) {
			os.Truncate(fd.in, 0)
			appendTo(t, fd.in, others)
		}, Replaced, "differ"},
		{"delete and recreate with other content", lines, 14, func(fd *feed) {
			os.Remove(fd.in)
			fd.write(others)
		}, Replaced, "differ"},
		{"cp and rename of the same bytes plus more", lines, 14, func(fd *feed) {
			tmp := filepath.Join(fd.dir, "app.log.tmp")
			os.WriteFile(tmp, append(bytes.Clone(lines), "four\n"...), 0o644)
			os.Rename(tmp, fd.in)
		}, KeptNewKey, "new file key"},
		{"cp and rename of fewer bytes than the fingerprint", lines, 14, func(fd *feed) {
			tmp := filepath.Join(fd.dir, "app.log.tmp")
			os.WriteFile(tmp, lines[:8], 0o644)
			os.Rename(tmp, fd.in)
		}, Replaced, "new file key and first 14 bytes differ"},
		{"cp and rename of the fingerprinted bytes, short of the offset", big, 8192, func(fd *feed) {
			tmp := filepath.Join(fd.dir, "app.log.tmp")
			os.WriteFile(tmp, big[:5000], 0o644)
			os.Rename(tmp, fd.in)
		}, Truncated, "new file key and size 5000 < offset 8192"},
		{"header grew, then rewritten with the same header", []byte("HDR\n"), 4, func(fd *feed) {
			appendTo(t, fd.in, big)
			if v, _, r := fd.run(4 + 16); v != Kept || r.FPLen != MaxFingerprint {
				t.Fatalf("after growth: %v %+v, want kept with a 4 KiB fingerprint", v, r)
			}
			fd.write(append([]byte("HDR\n"), bytes.ToUpper(big)...))
		}, Replaced, "first 4096 bytes differ"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fd := newFeed(t)
			first := fd.start(tt.content, tt.offset)
			tt.change(fd)
			fd.log.Reset()
			v, before, after := fd.run(0)
			if v != tt.want {
				t.Fatalf("verdict %v, want %v; log:\n%s", v, tt.want, fd.log.String())
			}
			if tt.warn != "" && !fd.log.warned(tt.warn) {
				t.Errorf("no WARN with %q; log:\n%s", tt.warn, fd.log.String())
			}
			if tt.warn == "" && fd.log.anyWarn() {
				t.Errorf("unexpected WARN:\n%s", fd.log.String())
			}
			switch v {
			case Kept, KeptNewKey:
				if after.Epoch != first.Epoch || after.Offset != before.Offset {
					t.Fatalf("%v moved the pointer: %+v -> %+v", v, before, after)
				}
			case Replaced, Truncated:
				f, key, _ := openInput(t, fd.in)
				n := min(sizeOf(t, f), MaxFingerprint)
				head := make([]byte, n)
				f.ReadAt(head, 0)
				if after.Epoch == first.Epoch || after.Offset != 0 || after.FileKey != key ||
					after.FPLen != uint64(n) || after.FP != Fingerprint(head) {
					t.Fatalf("%v: %+v, want offset 0 under a new epoch bound to the file", v, after)
				}
				if on, _ := Inspect(fd.path); on != after {
					t.Fatalf("reset not on disk: %+v", on)
				}
			}
		})
	}
}

// KeptNewKey keeps offset and epoch and the next store records the new key;
// the run after that sees the same key again.
func TestCheckNewKeyIsRecordedAtNextStore(t *testing.T) {
	fd := newFeed(t)
	first := fd.start(lines, 14)
	tmp := filepath.Join(fd.dir, "copy")
	os.WriteFile(tmp, append(bytes.Clone(lines), "four\n"...), 0o644)
	os.Rename(tmp, fd.in)

	v, _, after := fd.run(19)
	f, key, _ := openInput(t, fd.in)
	if v != KeptNewKey || after.FileKey != key || after.FileKey == first.FileKey || after.Epoch != first.Epoch || after.Offset != 19 {
		t.Fatalf("%v, %+v; want the new key %016x recorded under epoch %016x", v, after, key, first.Epoch)
	}
	f.Close()
	if v, _, _ := fd.run(0); v != Kept {
		t.Fatalf("next run: %v, want kept", v)
	}
}

// Check reads the fingerprint from the descriptor it is given, never from
// the path: a file renamed away and replaced is still the same open file.
func TestCheckReadsTheDescriptorNotThePath(t *testing.T) {
	fd := newFeed(t)
	fd.start(lines, 14)
	f, key, size := openInput(t, fd.in)
	os.Rename(fd.in, fd.in+".1")
	fd.write(others)

	p := mustOpen(t, fd.path, Options{Logger: fd.log})
	if v, err := p.Check(f, key, size); v != Kept || err != nil {
		t.Fatalf("Check(old descriptor) = %v, %v; want kept", v, err)
	}
}

// With a fingerprint of 0 bytes (empty file at the time), only the key and
// size decide.
func TestCheckEmptyFingerprint(t *testing.T) {
	fd := newFeed(t)
	fd.write(nil)
	p := mustOpen(t, fd.path, Options{Logger: fd.log})
	f, key, _ := openInput(t, fd.in)
	if v, _ := p.Check(f, key, 0); v != Adopted {
		t.Fatalf("Check = %v", v)
	}
	if err := p.Store(0); err != nil { // records the key, not the offset
		t.Fatal(err)
	}
	p.Bind(nil, key) // no descriptor: the fingerprint cannot grow
	appendTo(t, fd.in, lines)
	if err := p.Commit(14); err != nil {
		t.Fatal(err)
	}
	if r := p.Record(); r.FPLen != 0 || r.FileKey != key || r.Offset != 14 {
		t.Fatalf("Record = %+v", r)
	}
	if v, err := p.Check(f, key, 20); v != Kept || err != nil {
		t.Fatalf("same key, FPLen 0: %v %v", v, err)
	}
	g, gkey, gsize := input(t, filepath.Join(fd.dir, "other"), lines)
	if v, err := p.Check(g, gkey, gsize); v != Replaced || err != nil || !fd.log.warned("no fingerprint to match") {
		t.Fatalf("other key, FPLen 0: %v %v\n%s", v, err, fd.log.String())
	}
}

func TestVerdictString(t *testing.T) {
	for v, want := range map[Verdict]string{Kept: "kept", KeptNewKey: "rekeyed", Replaced: "replaced",
		Truncated: "truncated", Adopted: "adopted", 0: "verdict(0)"} {
		if v.String() != want {
			t.Errorf("%d.String() = %q, want %q", int(v), v.String(), want)
		}
	}
}
