//go:build unix

package fileutil

import (
	"os"
	"path/filepath"
	"testing"
)

// OpenFile is documented as os.OpenFile (O_CLOEXEC added), and on non-unix
// builds it is os.OpenFile; a file it creates must get the permission bits
// os.OpenFile gives, the setuid, setgid and sticky bits of perm included
// (os.OpenFile passes them to open(2): syscallMode; perm.Perm() drops them).
func TestOpenFileCreatesWithOSOpenFilePermBits(t *testing.T) {
	dir := t.TempDir()
	perm := os.FileMode(0o600) | os.ModeSetuid | os.ModeSetgid | os.ModeSticky
	want := filepath.Join(dir, "os")
	f, err := os.OpenFile(want, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	got := filepath.Join(dir, "fileutil")
	f, err = OpenFile(got, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	wst, err := os.Stat(want)
	if err != nil {
		t.Fatal(err)
	}
	gst, err := os.Stat(got)
	if err != nil {
		t.Fatal(err)
	}
	if gst.Mode() != wst.Mode() {
		t.Fatalf("OpenFile(O_CREATE, %v) made a file of mode %v; os.OpenFile makes %v", perm, gst.Mode(), wst.Mode())
	}
}
