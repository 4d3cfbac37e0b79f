package file

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The output gets exactly its mode: a new one despite the umask, an
// existing one whose bits differ (a changed `mode` applies at the next
// start); the default is 0640.
func TestFileSinkMode(t *testing.T) {
	old := syscall.Umask(0o027)
	defer syscall.Umask(old)
	dir := t.TempDir()
	existing := filepath.Join(dir, "old.log")
	if err := os.WriteFile(existing, []byte("a\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	os.Chmod(existing, 0o666)
	for _, tc := range []struct {
		path string
		mode os.FileMode
		want os.FileMode
	}{
		{filepath.Join(dir, "default.log"), 0, 0o640},
		{filepath.Join(dir, "wide.log"), 0o644, 0o644}, // umask 027 would have made it 0640
		{existing, 0o600, 0o600},
	} {
		s, err := Open(Config{Path: tc.path, Mode: tc.mode})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		fi, err := os.Stat(tc.path)
		if err != nil || fi.Mode().Perm() != tc.want {
			t.Errorf("%s: %v, mode %v, want %04o", tc.path, err, fi.Mode(), tc.want)
		}
	}
}
