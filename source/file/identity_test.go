package file

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"tailfeed/internal/fileutil"
	"tailfeed/pointer"
)

// idFeed is an input file and its pointer, as a source holds them.
type idFeed struct {
	t             *testing.T
	dir, in, path string
	log           *idLog
}

func newIDFeed(t *testing.T) *idFeed {
	dir := t.TempDir()
	return &idFeed{t: t, dir: dir, in: filepath.Join(dir, "app.log"), path: filepath.Join(dir, "app.ptr"), log: newIDLog()}
}

// open opens the pointer, closing it at the end of the test.
func (fd *idFeed) open(opts pointer.Options) *pointer.Pointer {
	fd.t.Helper()
	opts.Logger = fd.log
	p, err := pointer.Open(fd.path, opts)
	if err != nil {
		fd.t.Fatal(err)
	}
	fd.t.Cleanup(func() { p.Close() })
	return p
}

// run opens the pointer and the input, checks, and closes the pointer
// again, as one daemon run; commit > 0 commits that offset before closing.
func (fd *idFeed) run(commit int64) (Verdict, pointer.Record, pointer.Record) {
	fd.t.Helper()
	p, err := pointer.Open(fd.path, pointer.Options{Logger: fd.log})
	if err != nil {
		fd.t.Fatal(err)
	}
	defer p.Close()
	before := p.Record()
	f, key, size := idOpenInput(fd.t, fd.in)
	v, err := checkIdentity(p, f, key, size, fd.log, nil)
	if err != nil {
		fd.t.Fatalf("checkIdentity: %v", err)
	}
	if commit > 0 {
		if err := p.Commit(commit); err != nil {
			fd.t.Fatal(err)
		}
	}
	return v, before, p.Record()
}

func (fd *idFeed) write(b []byte) {
	fd.t.Helper()
	if err := os.WriteFile(fd.in, b, 0o644); err != nil {
		fd.t.Fatal(err)
	}
}

var (
	idLines  = []byte("one\ntwo\nthree\n")                    // 14 bytes
	idOthers = []byte("ONE\nTWO\nTHREE\nFOUR\n")              // other first bytes, longer
	idBig    = bytes.Repeat([]byte("0123456789abcde\n"), 512) // 8 KiB
)

// start commits content under a first epoch and returns that record.
func (fd *idFeed) start(content []byte, offset int64) pointer.Record {
	fd.t.Helper()
	fd.write(content)
	v, _, r := fd.run(offset)
	if v != Adopted {
		fd.t.Fatalf("first run: %v, want adopted", v)
	}
	return r
}

func TestCheckVerdicts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		content []byte
		offset  int64
		change  func(fd *idFeed)
		want    Verdict
		warn    string
	}{
		{"append", idLines, 14, func(fd *idFeed) { idAppend(t, fd.in, []byte("four\n")) }, Kept, ""},
		{"new mtime", idLines, 14, func(fd *idFeed) {
			future := time.Now().Add(time.Hour)
			os.Chtimes(fd.in, future, future)
		}, Kept, ""},
		{"rewrite with other first bytes", idLines, 14, func(fd *idFeed) { fd.write(idOthers) }, Replaced, "first 14 bytes differ"},
		{"truncation", idLines, 14, func(fd *idFeed) { os.Truncate(fd.in, 4) }, Truncated, "size 4 < offset 14"},
		{"copytruncate then regrowth", idLines, 14, func(fd *idFeed) {
			os.Truncate(fd.in, 0)
			idAppend(t, fd.in, idOthers)
		}, Replaced, "differ"},
		{"delete and recreate with other content", idLines, 14, func(fd *idFeed) {
			os.Remove(fd.in)
			fd.write(idOthers)
		}, Replaced, "differ"},
		{"cp and rename of the same bytes plus more", idLines, 14, func(fd *idFeed) {
			tmp := filepath.Join(fd.dir, "app.log.tmp")
			os.WriteFile(tmp, append(bytes.Clone(idLines), "four\n"...), 0o644)
			os.Rename(tmp, fd.in)
		}, KeptNewKey, "new file key"},
		{"cp and rename of fewer bytes than the fingerprint", idLines, 14, func(fd *idFeed) {
			tmp := filepath.Join(fd.dir, "app.log.tmp")
			os.WriteFile(tmp, idLines[:8], 0o644)
			os.Rename(tmp, fd.in)
		}, Replaced, "new file key and first 14 bytes differ"},
		{"cp and rename of the fingerprinted bytes, short of the offset", idBig, 8192, func(fd *idFeed) {
			tmp := filepath.Join(fd.dir, "app.log.tmp")
			os.WriteFile(tmp, idBig[:5000], 0o644)
			os.Rename(tmp, fd.in)
		}, Truncated, "new file key and size 5000 < offset 8192"},
		{"header grew, then rewritten with the same header", []byte("HDR\n"), 4, func(fd *idFeed) {
			idAppend(t, fd.in, idBig)
			if v, _, r := fd.run(4 + 16); v != Kept || r.FPLen != pointer.MaxFingerprint {
				t.Fatalf("after growth: %v %+v, want kept with a 4 KiB fingerprint", v, r)
			}
			fd.write(append([]byte("HDR\n"), bytes.ToUpper(idBig)...))
		}, Replaced, "first 4096 bytes differ"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fd := newIDFeed(t)
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
				f, key, size := idOpenInput(t, fd.in)
				n := min(size, pointer.MaxFingerprint)
				head := make([]byte, n)
				f.ReadAt(head, 0)
				if after.Epoch == first.Epoch || after.Offset != 0 || after.FileKey != key ||
					after.FPLen != uint64(n) || after.FP != pointer.Fingerprint(head) {
					t.Fatalf("%v: %+v, want offset 0 under a new epoch bound to the file", v, after)
				}
				if on, _ := pointer.Inspect(fd.path); on != after {
					t.Fatalf("reset not on disk: %+v", on)
				}
			}
		})
	}
}

// KeptNewKey keeps offset and epoch and the next store records the new key;
// the run after that sees the same key again.
func TestCheckNewKeyIsRecordedAtNextStore(t *testing.T) {
	t.Parallel()
	fd := newIDFeed(t)
	first := fd.start(idLines, 14)
	tmp := filepath.Join(fd.dir, "copy")
	os.WriteFile(tmp, append(bytes.Clone(idLines), "four\n"...), 0o644)
	os.Rename(tmp, fd.in)

	v, _, after := fd.run(19)
	f, key, _ := idOpenInput(t, fd.in)
	if v != KeptNewKey || after.FileKey != key || after.FileKey == first.FileKey || after.Epoch != first.Epoch || after.Offset != 19 {
		t.Fatalf("%v, %+v; want the new key %016x recorded under epoch %016x", v, after, key, first.Epoch)
	}
	f.Close()
	if v, _, _ := fd.run(0); v != Kept {
		t.Fatalf("next run: %v, want kept", v)
	}
}

// The check reads the fingerprint from the descriptor it is given, never
// from the path: a file renamed away and replaced is still the same open
// file.
func TestCheckReadsTheDescriptorNotThePath(t *testing.T) {
	t.Parallel()
	fd := newIDFeed(t)
	fd.start(idLines, 14)
	f, key, size := idOpenInput(t, fd.in)
	os.Rename(fd.in, fd.in+".1")
	fd.write(idOthers)

	p := fd.open(pointer.Options{})
	if v, err := checkIdentity(p, f, key, size, fd.log, nil); v != Kept || err != nil {
		t.Fatalf("checkIdentity(old descriptor) = %v, %v; want kept", v, err)
	}
}

// With a fingerprint of 0 bytes (empty file at the time), only the key and
// size decide.
func TestCheckEmptyFingerprint(t *testing.T) {
	t.Parallel()
	fd := newIDFeed(t)
	fd.write(nil)
	p := fd.open(pointer.Options{})
	f, key, _ := idOpenInput(t, fd.in)
	if v, _ := checkIdentity(p, f, key, 0, fd.log, nil); v != Adopted {
		t.Fatalf("checkIdentity = %v", v)
	}
	if err := p.Store(0); err != nil { // records the key, not the offset
		t.Fatal(err)
	}
	p.Bind(nil, key) // no descriptor: the fingerprint cannot grow
	idAppend(t, fd.in, idLines)
	if err := p.Commit(14); err != nil {
		t.Fatal(err)
	}
	if r := p.Record(); r.FPLen != 0 || r.FileKey != key || r.Offset != 14 {
		t.Fatalf("Record = %+v", r)
	}
	if v, err := checkIdentity(p, f, key, 20, fd.log, nil); v != Kept || err != nil {
		t.Fatalf("same key, FPLen 0: %v %v", v, err)
	}
	other := filepath.Join(fd.dir, "other")
	if err := os.WriteFile(other, idLines, 0o644); err != nil {
		t.Fatal(err)
	}
	g, gkey, gsize := idOpenInput(t, other)
	if v, err := checkIdentity(p, g, gkey, gsize, fd.log, nil); v != Replaced || err != nil || !fd.log.warned("no fingerprint to match") {
		t.Fatalf("other key, FPLen 0: %v %v\n%s", v, err, fd.log.String())
	}
}

// The resets the check decides (replaced, truncated) are recorded in the
// epochs file with their reason and the new file's identity.
func TestCheckResetsAreInTheEpochsFile(t *testing.T) {
	t.Parallel()
	fd := newIDFeed(t)
	epochs := filepath.Join(fd.dir, "app.epochs")
	fd.write([]byte("abc\n"))
	p := fd.open(pointer.Options{EpochsPath: epochs, Input: fd.in})
	in, key, _ := idOpenInput(t, fd.in)
	if v, err := checkIdentity(p, in, key, 4, fd.log, nil); err != nil || v != Adopted {
		t.Fatalf("checkIdentity = %v, %v; want adopted", v, err)
	}
	if err := p.Commit(4); err != nil {
		t.Fatal(err)
	}
	if v, err := checkIdentity(p, in, key, 2, fd.log, nil); err != nil || v != Truncated {
		t.Fatalf("checkIdentity = %v, %v; want truncated", v, err)
	}
	got, err := pointer.ReadEpochs(epochs)
	if err != nil || len(got) != 3 {
		t.Fatalf("epochs %+v, %v; want created, adopted, truncated", got, err)
	}
	if l := got[2]; l.Reason != "truncated" || l.Epoch != p.Record().Epoch || l.FileKey != key || l.Path != fd.in ||
		l.PrevEpoch != got[1].Epoch || l.PrevOffset != 4 {
		t.Fatalf("truncation line %+v", l)
	}
}

func TestVerdictString(t *testing.T) {
	t.Parallel()
	for v, want := range map[Verdict]string{Kept: "kept", KeptNewKey: "rekeyed", Replaced: "replaced",
		Truncated: "truncated", Adopted: "adopted", 0: "verdict(0)"} {
		if v.String() != want {
			t.Errorf("%d.String() = %q, want %q", int(v), v.String(), want)
		}
	}
}

// idLog is an hclog logger that keeps its output for assertions.
type idLog struct {
	bytes.Buffer
	hclog.Logger
}

func newIDLog() *idLog {
	l := &idLog{}
	l.Logger = hclog.New(&hclog.LoggerOptions{Output: &l.Buffer, Level: hclog.Debug})
	return l
}

// warned reports whether a WARN line containing substr was logged.
func (l *idLog) warned(substr string) bool {
	for _, line := range strings.Split(l.String(), "\n") {
		if strings.Contains(line, "[WARN]") && strings.Contains(line, substr) {
			return true
		}
	}
	return false
}

func (l *idLog) anyWarn() bool { return strings.Contains(l.String(), "[WARN]") }

// idOpenInput opens the file at path as the source does, with its file key
// and size.
func idOpenInput(t *testing.T, path string) (*os.File, uint64, int64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	dev, ino, err := fileutil.DevIno(f)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return f, pointer.FileKey(dev, ino), fi.Size()
}

func idAppend(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}
