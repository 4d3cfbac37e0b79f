package file_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"tailfeed/pointer"
	"tailfeed/source/file"
)

// A glob stream (Pinned) reopened on a pointer that exists but holds the
// empty record (it was closed before its first commit, e.g. preempted
// while its pointer was being created) reads its own file only: a file
// beside it with a rotated name is another stream of the glob (or not
// matched at all), never a "later generation" read first under this
// stream. Before, the reopen listed the directory, read app.log.1 first
// (a duplicate of that file's own stream) and, to leave out a forgotten
// file, parsed the whole epochs file (10,000 lines for 10,000 streams, per
// reopen).
func TestPinnedEmptyPointerReadsOnlyItsFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ptrPath := filepath.Join(dir, "app.ptr")
	p, err := pointer.Open(ptrPath, pointer.Options{EpochsPath: filepath.Join(dir, "app.epochs")})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "app.log.1"), []byte("other-1\nother-2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "app.log"), []byte("own-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := newRig(t, dir, rigOpts{strategy: file.Committed, pinned: true}).start()
	r.waitLines(1)
	r.waitSettled()
	time.Sleep(100 * time.Millisecond)
	all := r.rec.all()
	if len(all) != 1 || all[0].Line != "own-1" {
		var lines []string
		for _, g := range all {
			lines = append(lines, g.Line)
		}
		t.Fatalf("a pinned stream delivered %q, want only its own file's [own-1]", lines)
	}
}
