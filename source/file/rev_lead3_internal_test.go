package file

import (
	"os"
	"path/filepath"
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
