package fileutil

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDevInoMatchesPathUntilReplaced(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.log")
	f := openFile(t, path)
	dev, ino, err := DevIno(f)
	if err != nil {
		t.Fatal(err)
	}
	pdev, pino, err := DevInoPath(path)
	if err != nil {
		t.Fatal(err)
	}
	if dev != pdev || ino != pino || ino == 0 {
		t.Fatalf("DevIno = %d/%d, DevInoPath = %d/%d", dev, ino, pdev, pino)
	}

	link := filepath.Join(dir, "link")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if ldev, lino, err := DevInoPath(link); err != nil || ldev != dev || lino != ino {
		t.Fatalf("DevInoPath(symlink) = %d/%d, %v; want the target's %d/%d", ldev, lino, err, dev, ino)
	}

	tmp := filepath.Join(dir, "app.log.tmp")
	if err := os.WriteFile(tmp, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if _, nino, err := DevInoPath(path); err != nil || nino == ino {
		t.Fatalf("after rename the path still names inode %d (%v)", nino, err)
	}
	if _, oino, err := DevIno(f); err != nil || oino != ino {
		t.Fatalf("the open file changed inode: %d (%v)", oino, err)
	}
}

func TestDevInoPathMissing(t *testing.T) {
	_, _, err := DevInoPath(filepath.Join(t.TempDir(), "nope"))
	if !os.IsNotExist(err) {
		t.Fatalf("DevInoPath(missing) = %v, want not-exist", err)
	}
}

func TestSyncDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	if err := SyncDir(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Fatalf("SyncDir(missing) = %v", err)
	}
}
