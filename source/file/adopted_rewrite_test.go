package file_test

import (
	"os"
	"path/filepath"
	"testing"

	"tailfeed/pointer"
	"tailfeed/source/file"
)

// TestAdoptedEpochNotKeptForOtherFirstBytes: review 9b's XReloadSkip…
// (e2e TestRev9BXReloadSkipSwallowsRewrittenLines). A pointer whose epoch E
// was adopted for app.log ("a", "b" published under E) and never committed
// (a subscriber held them) names no file; app.log is then rewritten in
// place ("n1"). The next start read it under E from offset 0, so (E, 3)
// named n1 although a subscriber had finished (E, 2) "a" and (E, 4) "b":
// a reload's skip of what a subscriber finished passed over n1 unseen —
// lost, lossless true. The file with other first bytes than its epoch's
// epochs line names is now read under a new epoch.
func TestAdoptedEpochNotKeptForOtherFirstBytes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := filepath.Join(dir, "app.log")
	if err := os.WriteFile(in, []byte("a\nb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := pointer.Open(filepath.Join(dir, "app.ptr"), pointer.Options{EpochsPath: filepath.Join(dir, "app.epochs"), Input: in})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	id := identity(t, in)
	if err := p.Adopt(f, pointer.FileKey(id[0], id[1])); err != nil {
		t.Fatal(err)
	}
	f.Close()
	adopted := p.Record().Epoch
	if err := p.Sync(); err != nil {
		t.Fatal(err)
	}
	p.Close()
	if err := os.WriteFile(in, []byte("n1\n"), 0o644); err != nil { // in place: the same inode
		t.Fatal(err)
	}
	r := newRig(t, dir, rigOpts{strategy: file.Committed}).start()
	gs := r.waitLines(1)
	r.waitSettled()
	if gs[0].Line != "n1" || gs[0].Epoch == adopted {
		t.Fatalf("the rewritten app.log delivered %q under epoch %x; want n1 under another epoch than the adopted %x (its lines were a, b)", gs[0].Line, gs[0].Epoch, adopted)
	}
}
