//go:build openfindings

package file

// Review 26d, finding A: parked in the twenty-sixth session (go test -tags
// openfindings -count=1 -run 'TestRev26DRA' ./source/file). A forgotten
// pointer's GONE row is named, after a restart, by the path its file was
// first matched under (the epochs file's first line for the pointer), not
// the one it was last tracked under (a rename within the glob since): the
// epochs file records no later path. Status only, no line lost or doubled;
// before the twenty-sixth session such a row had no path at all.

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A (status: a ghost's GONE row names another path after a restart). A
// glob "dir/a.log*" (rotated generations in the glob, as logrotate's
// "rotate N" leaves them): a.log (3 lines) read and committed; rotated —
// renamed to a.log.1 (within the glob: its stream follows it, DESIGN §10
// "A rename within the glob keeps the stream") and a new a.log made (1
// line); later a.log.1 is deleted (logrotate's rotate count): its stream
// is GONE, its pointer reset to the empty record. Files shows the GONE row
// at a.log.1 — where the file was — with its key, epoch and end. Stopped
// and started again: loadPointers (part 2) names the ghost by the path of
// its pointer's first epochs line — a.log, where the file was first
// matched — so the restart's GONE row moves to a.log, beside a.log's live
// row (two rows at a.log, none at a.log.1; with rotate N every rotated
// generation's ghost lands on a.log). DESIGN §10 "Status": `files` lists
// "every tracked file" with its path, GONE = "deleted or renamed out of
// the glob"; the change's purpose: "its GONE row in feed.status?files=1
// names the file after a restart". Expected: the same row (path a.log.1,
// key, epoch, offset) in both runs. Observed: run 2's GONE row has path
// a.log (glob.go loadPointers ~3636: s.path = firsts[name], the first
// path, not the last one it was tracked under; the runtime row uses
// s.path, which follows renames).
func TestRev26DRAGhostRowMovesToItsFirstPathAtRestart(t *testing.T) {
	dir, data := t.TempDir(), t.TempDir()
	a := filepath.Join(dir, "a.log")
	if err := os.WriteFile(a, []byte("o-1\no-2\no-3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	set := func(c *GlobConfig) { c.ScanInterval = 200 * time.Millisecond; c.Stream.Logger = rev25bLog(t) }
	ig, stop := runGlobWith(t, filepath.Join(dir, "a.log*"), data, 5*time.Second, set, nil)
	c := ig.consumeAll()
	time.Sleep(time.Second)
	if err := os.Rename(a, a+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a, []byte("n-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	if err := os.Remove(a + ".1"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	var gone1 []FileStatus
	for _, f := range ig.g.Files() {
		if f.State == "GONE" {
			gone1 = append(gone1, f)
		}
	}
	got := c()
	stop()
	ig2, stop2 := runGlobWith(t, filepath.Join(dir, "a.log*"), data, 5*time.Second, set, nil)
	time.Sleep(time.Second)
	var gone2 []FileStatus
	for _, f := range ig2.g.Files() {
		if f.State == "GONE" {
			gone2 = append(gone2, f)
		}
	}
	stop2()
	t.Logf("delivered %v; run 1 GONE %+v; run 2 GONE %+v", got, gone1, gone2)
	if len(gone1) != 1 || gone1[0].Path != a+".1" {
		t.Fatalf("run 1: GONE rows %+v, want one at a.log.1", gone1)
	}
	if len(gone2) != 1 || gone2[0].Path != gone1[0].Path || gone2[0].FileKey != gone1[0].FileKey || gone2[0].Offset != gone1[0].Offset ||
		gone2[0].Epoch == nil || *gone2[0].Epoch != *gone1[0].Epoch {
		p := ""
		if len(gone2) == 1 {
			p = gone2[0].Path
		}
		t.Errorf("run 2: the ghost's GONE row is at %q, was at %q before the restart (%+v vs %+v)", p, gone1[0].Path, gone2, gone1)
	}
}
