package file

// Review 25e, internal probes (pass; they report what the file systems
// here give the copy rules: birthTime on ext4 and tmpfs, and whether a
// deleted file's inode number is reused at once). go test -count=1 -v
// -run 'TestRev25ERProbe' ./source/file

import (
	"os"
	"path/filepath"
	"testing"

	"tailfeed/internal/fileutil"
)

// Probe (no finding): tookIt decides by birth time where the file system
// has one (s.heldBorn for a held file; admit's tookForCopy, not held,
// falls to birthTimePath(s.path) <= the take's At) and otherwise by the
// one-minute window. Here ext4 and tmpfs both report birth times (tmpfs
// since Linux 6.x), so admit's windowless closed-stream check is decided
// by birth on both: a later file on a reused inode, born after the take,
// is not taken for the copy. Where none is reported (overlayfs, where
// bornOf returns zero on purpose; older tmpfs; NFS), a new file on a copy's
// reused inode within a minute of the take, whose key was never retired
// by the glob (the copy's name outside the glob), is taken for the copy
// and never read — as at 79154bc for a live stream's take (older), now
// for closed streams' takes too. Not testable here without such a file
// system.
func TestRev25ERProbeBirthTimesAndInodeReuse(t *testing.T) {
	for _, dir := range []string{t.TempDir(), "/dev/shm"} {
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		d, err := os.MkdirTemp(dir, "rev25e")
		if err != nil {
			t.Logf("%s: %v", dir, err)
			continue
		}
		defer os.RemoveAll(d)
		a := filepath.Join(d, "a")
		os.WriteFile(a, []byte("x\n"), 0o600)
		_, ino1, _ := fileutil.DevInoPath(a)
		b1 := birthTimePath(a)
		os.Remove(a)
		b := filepath.Join(d, "b")
		os.WriteFile(b, []byte("y\n"), 0o600)
		_, ino2, _ := fileutil.DevInoPath(b)
		t.Logf("%s: birth time known %v (%v); inode reused at once: %v (%d, %d)", dir, !b1.IsZero(), b1, ino1 == ino2, ino1, ino2)
	}
}
