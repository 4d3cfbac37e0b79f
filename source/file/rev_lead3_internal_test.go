package file

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestRevLead3CopyWithPartialLastLineReadAgainAfterCleanRestart: COMMITTED
// glob "*.log"; a.log holds a-0..a-5 and a partial "a-6" (no terminator
// yet). logrotate copytruncate with the copy matched by the glob (dateext,
// "extension .log": a-1.log); a.log's source reads on in the copy, switches
// to the cut a.log (b-1 delivered); every line acknowledged; clean stop.
// ab1b916's readBeforeStart takes a copy as read only when it is "no longer
// than previousOffset" — a copy ending in a partial line is longer than the
// committed end. DESIGN §10 / issue 13 acceptance 1 "every line once";
// README: "a glob does not read a copy its stream read and left (reset)
// again". Observed: after the clean restart a-1.log is read again from its
// start. Expected: nothing delivered again.
func TestRevLead3CopyWithPartialLastLineReadAgainAfterCleanRestart(t *testing.T) {
	t.Parallel()
	dir, data, a := aLogIn(t, numbered("a", 6)+"a-6")
	ig, stop := runGlobQuiet(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond)
	first, _ := ig.popEpochs(time.Second, true)
	src := ownOpenStream(t, ig, a)
	old, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a-1.log"), old, 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if err := os.Truncate(a, 0); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(5 * time.Second); src.CopyKey() == nil; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("a.log's source did not take a-1.log for its copy")
		}
	}
	appendTo(t, a, "b-1\n")
	got, _ := ig.popEpochs(2*time.Second, true)
	t.Logf("first run: %q then %q", first, got)
	stop()
	ig2, _ := runGlobQuiet(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond)
	again, _ := ig2.popEpochs(1500*time.Millisecond, true)
	if tails, _, detail := ig2.lost(); len(again) != 0 || tails != 0 {
		t.Fatalf("clean restart, every line acknowledged, a-1.log taken for a.log's copy: delivered %q again, lostTails %d (%q); want nothing, 0",
			again, tails, detail)
	}
}

// TestRevLead3CopytruncateWhileStoppedCopyInGlobReadFromStart: COMMITTED
// glob "*.log"; a.log's a-0..a-4 delivered and committed; clean stop.
// While stopped a-5 is appended, then logrotate copytruncate with the copy
// matched by the glob (dateext, "extension .log": a-1.log holds a-0..a-5),
// and b-1 is written to the cut a.log. DESIGN §10 "Identity": "At a start,
// a new key whose first bytes match a stream whose file is now shorter than
// its offset is that stream's copy at once" (read "from the old offset
// under the old stream"); §2: after a clean stop nothing is delivered
// again. Was: a-0..a-4 delivered a second time. Expected: a-5, b-1 only.
func TestRevLead3CopytruncateWhileStoppedCopyInGlobReadFromStart(t *testing.T) {
	t.Parallel()
	dir, data, a := aLogIn(t, numbered("a", 5))
	ig, stop := runGlobQuiet(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond)
	if first, _ := ig.popEpochs(time.Second, true); len(first) != 5 {
		t.Fatalf("first turn delivered %d lines, want 5", len(first))
	}
	time.Sleep(300 * time.Millisecond)
	stop()
	appendTo(t, a, "a-5\n")
	old, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a-1.log"), old, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(a, 0); err != nil {
		t.Fatal(err)
	}
	appendTo(t, a, "b-1\n")
	ig2, _ := runGlobQuiet(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond)
	got, _ := ig2.popEpochs(2*time.Second, true)
	// In order: the cut file's new line after the copy's tail (DESIGN §10
	// "Order", per path).
	if tails, bytes, detail := ig2.lost(); strings.Join(got, ",") != "a-5,b-1" || tails != 0 {
		t.Fatalf("copytruncate while stopped, copy in the glob: delivered %q, lostTails %d lostBytes %d (%q); want a-5 then b-1, once, 0",
			got, tails, bytes, detail)
	}
}

// TestRevLead3DeletedFileSharingFirstBytesIsNotACopy: the rule above is for
// a file cut below its pointer's offset, not one that is gone. a.log's
// h-0..h-4 are committed; clean stop; an unrelated b.log starting with the
// same bytes (a shared header), longer than the pointer's offset, appears
// and a.log is deleted. b.log must be read from its start:
// taking a.log's pointer would skip its first lines uncounted (review of
// the withdrawn adoptCopies, rev_lead4).
func TestRevLead3DeletedFileSharingFirstBytesIsNotACopy(t *testing.T) {
	t.Parallel()
	dir, data, a := aLogIn(t, numbered("h", 5))
	ig, stop := runGlobQuiet(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond)
	if first, _ := ig.popEpochs(time.Second, true); len(first) != 5 {
		t.Fatalf("first turn delivered %d lines, want 5", len(first))
	}
	time.Sleep(300 * time.Millisecond)
	stop()
	// b.log is made before a.log goes, so it cannot reuse a.log's inode
	// (same key and first bytes: the case identity cannot tell, README).
	if err := os.WriteFile(filepath.Join(dir, "b.log"), []byte(numbered("h", 7)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	ig2, _ := runGlobQuiet(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond)
	got, _ := ig2.popEpochs(2*time.Second, true)
	sort.Strings(got)
	if want := numbered("h", 7); strings.Join(got, "\n")+"\n" != want {
		t.Fatalf("a new file sharing a deleted file's first bytes: delivered %q; want all of %q", got, want)
	}
}
