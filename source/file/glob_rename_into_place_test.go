package file_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"tailfeed/pointer"
)

// A rename into place over a glob file whose stream is closed (inactive:
// CloseInactive 300 ms in the rig) of a copy of its bytes plus an appended
// line (cp a.log a.tmp; echo >> a.tmp; mv a.tmp a.log) is the same content
// under a new key (DESIGN §3, §10: a copy of a file that disappeared is
// read from the old offset under the old stream): only the appended line
// is delivered, not the old ones again.
func TestGlobRenameIntoPlaceOverClosedStream(t *testing.T) {
	t.Parallel()
	dir, data, tmpDir := t.TempDir(), t.TempDir(), t.TempDir()
	a := filepath.Join(dir, "a.log")
	writeLines(t, a, "a", 2)
	r := newGlobRig(t, dir, data, filepath.Join(dir, "*.log"), 16)
	r.waitLines(2, 10*time.Second)
	r.waitCommitted(2, 10*time.Second)
	time.Sleep(time.Second) // its stream closes (inactive)
	old, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(tmpDir, "a.tmp")
	if err := os.WriteFile(tmp, append(old, "a 2\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, a); err != nil {
		t.Fatal(err)
	}
	r.waitLines(3, 10*time.Second)
	time.Sleep(1500 * time.Millisecond) // rotateWait, rescans
	r.stop()
	if got := r.lines[a]; len(got) != 3 || got[2] != "a 2" {
		t.Fatalf("a.log delivered %q, want [a 0 a 1 a 2]: the file renamed into place was read from its start", got)
	}
}

// A glob file renamed within the glob (b.log → c.log) is closed by its
// stream as gone from its path; a line appended right then is read from
// the descriptor kept under the pointer's epoch, which closes before the
// line is acknowledged. Its commit still grows the pointer's fingerprint
// over the file's first bytes as the descriptor held them (DESIGN §3: the
// fingerprint grows at commit while it covers < 4 KiB and the file is
// longer).
func TestGlobFingerprintGrowsAfterTheFileIsClosed(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	b, c := filepath.Join(dir, "b.log"), filepath.Join(dir, "c.log")
	writeLines(t, b, "b", 2) // 8 bytes
	r := newGlobRig(t, dir, data, filepath.Join(dir, "*.log"), 16)
	defer r.stop()
	r.waitLines(2, 10*time.Second)
	r.waitCommitted(2, 10*time.Second)
	r.hold.Store(true) // taken, not acknowledged
	if err := os.Rename(b, c); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // rotateWait: its stream leaves the file
	f, err := os.OpenFile(c, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("b 2\n")
	f.Close()
	r.waitLines(3, 10*time.Second)
	time.Sleep(500 * time.Millisecond) // the descriptor is closed (rotateWait after its growth)
	r.hold.Store(false)
	waitFor(t, "the pointer covering c.log's 12 bytes, fingerprint included", 10*time.Second, func() bool {
		l, _ := filepath.Glob(filepath.Join(data, "feeds", "f", "*.ptr"))
		for _, p := range l {
			if rec, err := pointer.Inspect(p); err == nil && rec.Offset == 12 && rec.FPLen == 12 {
				return true
			}
		}
		return false
	})
}
