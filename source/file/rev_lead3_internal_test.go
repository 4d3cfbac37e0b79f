package file

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// Review of lead3 (switchAtClose, readBeforeStart, copyGrew, headFirst) and
// copykey (resumeRotated's count, adoptByPath).

// TestRevLead3AdoptByPathReadsGlobMatchedGenerationTwice: COMMITTED glob
// "dir/a.log*" (the rotated names matched too, as README advises). a.log's
// five lines are delivered and committed; clean stop. While stopped,
// logrotate (create, rotate 1) runs twice: a.log -> a.log.1 and a new
// a.log gets b-0..b-2; then a.log.1 is deleted (rotate count), a.log ->
// a.log.1 and a new a.log gets c-0, c-1. At the restart the pointer of the
// first a.log names no matched file; adoptByPath gives it to the stream of
// the new a.log, whose source (resumeRotated) queues the later generations
// beside the path — a.log.1, which the glob also reads as a stream of its
// own. DESIGN §10: "§3/§4 (pointer, identity, rotation, epochs) apply to
// each file" and every line once per file (acceptance 1: "every line
// once"); §4 rereads only after a crash ("a duplicate, never a gap" is for
// kill -9, this is a clean stop). Observed: b-0..b-2 delivered twice (once
// by a.log.1's own stream, once by a.log's stream as a later generation).
// Expected: each of b-0..b-2, c-0, c-1 once. (Without adoptByPath the
// pointer was counted gone and no generation was queued.)
func TestRevLead3AdoptByPathReadsGlobMatchedGenerationTwice(t *testing.T) {
	dir, data, a := aLogIn(t, numbered("a", 5))
	pattern := filepath.Join(dir, "a.log*")
	ig, stop := runGlobQuiet(t, pattern, data, 200*time.Millisecond)
	if first, _ := ig.popEpochs(time.Second, true); len(first) != 5 {
		t.Fatalf("first run delivered %d lines, want 5", len(first))
	}
	time.Sleep(300 * time.Millisecond)
	stop()
	time.Sleep(50 * time.Millisecond)
	one := a + ".1"
	if err := os.Rename(a, one); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a, []byte(numbered("b", 3)), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if err := os.Remove(one); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(a, one); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a, []byte(numbered("c", 2)), 0o600); err != nil {
		t.Fatal(err)
	}
	ig2, _ := runGlobQuiet(t, pattern, data, 200*time.Millisecond)
	got, _ := ig2.popEpochs(2*time.Second, true)
	sort.Strings(got)
	want := "b-0,b-1,b-2,c-0,c-1"
	if strings.Join(got, ",") != want {
		tails, _, detail := ig2.lost()
		t.Fatalf("clean restart after two rotations while stopped: delivered %q (lostTails %d %q); want each of %s once",
			got, tails, detail, want)
	}
}

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
// and b-1 is written to the cut a.log. At the restart a.log (the pointer's
// key, other first bytes, shorter than the pointer's offset) is not the
// pointer's file; a-1.log is. copykey's adoptByPath deliberately leaves
// such a pointer out ("a pointer whose bytes a file new at this start
// holds (a copy in the glob, read from its start)"), and a-1.log is read
// from its start. DESIGN §10 "Identity": "At a start, a new key whose
// first bytes match a stream whose file is now shorter than its offset is
// that stream's copy at once" (read "from the old offset under the old
// stream"); §2: after a clean stop nothing is delivered again. Observed:
// a-0..a-4 delivered a second time. Expected: a-5, b-1 only. (Fails the
// same before copykey: adoptByPath did not take this case up.)
func TestRevLead3CopytruncateWhileStoppedCopyInGlobReadFromStart(t *testing.T) {
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
	sort.Strings(got)
	if tails, bytes, detail := ig2.lost(); strings.Join(got, ",") != "a-5,b-1" || tails != 0 {
		t.Fatalf("copytruncate while stopped, copy in the glob: delivered %q, lostTails %d lostBytes %d (%q); want a-5 and b-1 once, 0",
			got, tails, bytes, detail)
	}
}
