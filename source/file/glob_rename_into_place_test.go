package file_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A rename into place over a glob file whose stream is closed (inactive:
// CloseInactive 300 ms in the rig) of a copy of its bytes plus an appended
// line (cp a.log a.tmp; echo >> a.tmp; mv a.tmp a.log) is the same content
// under a new key (DESIGN §3, §10: a copy of a file that disappeared is
// read from the old offset under the old stream): only the appended line
// is delivered, not the old ones again.
func TestGlobRenameIntoPlaceOverClosedStream(t *testing.T) {
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
