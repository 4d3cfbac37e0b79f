package file

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// A sink's mode applies to its regular file only (review D3). `path:
// /dev/null` (a sink to throw lines away while testing) or `/dev/stdout`
// is a device or a pipe, not the sink's file: as root the daemon would
// make /dev/null 0640 for the whole host. A copy of /dev/null's device
// node (1,3) in a temp dir stands for it here.
func TestFileSinkModeLeavesDevicesAlone(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mknod needs root")
	}
	dev := filepath.Join(t.TempDir(), "null")
	if err := unix.Mknod(dev, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
		t.Skipf("mknod: %v", err)
	}
	os.Chmod(dev, 0o666)
	s, err := Open(Config{Path: dev})
	if err == nil {
		s.Close()
	}
	fi, _ := os.Stat(dev)
	if fi.Mode().Perm() != 0o666 {
		t.Fatalf("a character device at the output path: mode %04o after Open (err %v), was 0666", fi.Mode().Perm(), err)
	}
}

// A regular output file of another user keeps its mode too (a root daemon
// appending to an application's log does not change who may read it).
func TestFileSinkModeLeavesAnotherUsersFileAlone(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown needs root")
	}
	p := filepath.Join(t.TempDir(), "app.log")
	os.WriteFile(p, nil, 0o644)
	os.Chmod(p, 0o644)
	if err := os.Chown(p, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	s, err := Open(Config{Path: p, Mode: 0o600})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o644 {
		t.Fatalf("another user's output file: mode %04o after Open, was 0644", fi.Mode().Perm())
	}
}
