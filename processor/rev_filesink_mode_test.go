package processor

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// REVIEW: openOutput fchmods whatever the output path opens to. `path:
// /dev/null` (a sink to throw lines away while testing) or `/dev/stdout`
// is a device or a pipe, not the sink's file: as root the daemon would
// make /dev/null 0640 for the whole host. A copy of /dev/null's device
// node (1,3) in a temp dir stands for it here.
func TestRevFileSinkModeLeavesDevicesAlone(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mknod needs root")
	}
	dev := filepath.Join(t.TempDir(), "null")
	if err := unix.Mknod(dev, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
		t.Skipf("mknod: %v", err)
	}
	os.Chmod(dev, 0o666)
	s, err := OpenFileSink(FileSinkConfig{Path: dev})
	if err == nil {
		s.Close()
	}
	fi, _ := os.Stat(dev)
	if fi.Mode().Perm() != 0o666 {
		t.Fatalf("a character device at the output path: mode %04o after OpenFileSink (err %v), was 0666", fi.Mode().Perm(), err)
	}
}
