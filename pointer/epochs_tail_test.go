package pointer

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// The last line of the epochs file (read at every adoption: every new glob
// stream's first read) comes from a small window: 10,000 streams starting
// read 8 KiB each before, the largest allocation of such a start. A last
// line longer than the small window (a long path) is still read whole.
func TestLastEpochLineSmallWindow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.epochs")
	for i := range 50 {
		if err := AppendEpoch(path, EpochLine{Epoch: uint64(i + 1), FileKey: 7, Path: "/var/log/app/a.log", Time: time.Now(), Reason: "created"}); err != nil {
			t.Fatal(err)
		}
	}
	l, ok := lastEpochLine(path)
	if !ok || l.Epoch != 50 {
		t.Fatalf("last line %+v, %v", l, ok)
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	const calls = 100
	for range calls {
		lastEpochLine(path)
	}
	runtime.ReadMemStats(&m1)
	if per := (m1.TotalAlloc - m0.TotalAlloc) / calls; per > 4<<10 {
		t.Fatalf("reading the last line allocated %d bytes a call, want at most 4 KiB", per)
	}

	long := "/var/log/" + strings.Repeat("d", 3000) + "/a.log"
	if err := AppendEpoch(path, EpochLine{Epoch: 51, FileKey: 7, Path: long, Time: time.Now(), Reason: "adopted"}); err != nil {
		t.Fatal(err)
	}
	if l, ok := lastEpochLine(path); !ok || l.Epoch != 51 || l.Path != long {
		t.Fatalf("a last line longer than 1 KiB: epoch %x, path of %d bytes, %v", l.Epoch, len(l.Path), ok)
	}
}

// A Pointer holds no 4 KiB fingerprint scratch of its own (pooled): a glob
// feed holds hundreds open and creates thousands. Committing still grows
// the fingerprint without allocating.
func TestPointerHoldsNoHeadScratch(t *testing.T) {
	if n := unsafe.Sizeof(Pointer{}); n > 1024 {
		t.Fatalf("a Pointer is %d bytes", n)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "app.log")
	if err := os.WriteFile(in, []byte(strings.Repeat("line\n", 2000)), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := Open(filepath.Join(dir, "app.ptr"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Adopt(f, 7); err != nil {
		t.Fatal(err)
	}
	if err := p.Store(5); err != nil {
		t.Fatal(err)
	}
	if r := p.Record(); r.FPLen != MaxFingerprint {
		t.Fatalf("fingerprint covers %d bytes after a commit, want %d", r.FPLen, MaxFingerprint)
	}
	off := int64(5)
	if a := testing.AllocsPerRun(50, func() { off += 5; p.Store(off) }); a != 0 {
		t.Fatalf("a store allocates %.1f times", a)
	}
}
