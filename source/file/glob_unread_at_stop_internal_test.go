package file

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// COMMITTED, glob *.log, maxOpenFiles 2 (one stream at a time): a.log
// (10,000 lines, nobody acknowledging them) holds the slot; b.log waits for
// its first turn, never read, no pointer naming it. The daemon stops
// (SIGTERM) and b.log is deleted while it is down. Nothing but the stop can
// tell the restart that b.log existed unread: the unread list it leaves in
// the pointer directory. The restart counts b.log (lostTails 1, lostBytes
// its size; DESIGN §4 "Nothing green over a loss", §10 "A file that
// disappears with an unread tail counts in lostTails"), removes the list,
// and a further restart counts nothing again. Before, nothing recorded it:
// b.log's lines were lost with the feed lossless.
func TestGlobWaitingFileDeletedWhileStoppedIsCounted(t *testing.T) {
	t.Parallel()
	dir, data, a := aLogIn(t, numbered("a", 10000))
	b := filepath.Join(dir, "b.log")
	bLines := numbered("b", 3)
	if err := os.WriteFile(b, []byte(bLines), 0o600); err != nil {
		t.Fatal(err)
	}
	pattern := filepath.Join(dir, "*.log")
	one := func(c *GlobConfig) { c.MaxOpenFiles = 2 }
	ig, stop := runGlobCfg(t, pattern, data, 200*time.Millisecond, one)
	ig.waitFor(t, "a.log open, b.log waiting for its first turn", func() bool {
		sa, sb := ig.g.byPath[a], ig.g.byPath[b]
		return sa != nil && sa.st == stOpen && sb != nil && sb.st == stQueued && sb.ptrPath == ""
	})
	stop()
	if _, err := os.Stat(filepath.Join(ig.ptrDir, unreadListName)); err != nil {
		t.Fatalf("no unread list after the stop: %v", err)
	}
	if err := os.Remove(b); err != nil {
		t.Fatal(err)
	}
	ig2, stop2 := runGlobCfg(t, pattern, data, 200*time.Millisecond, one)
	ig2.popEpochs(time.Second, true)
	tails, bytes, detail := ig2.lost()
	stop2()
	if tails != 1 || bytes != uint64(len(bLines)) {
		t.Fatalf("b.log, tracked and never read at the stop, deleted while stopped: lostTails %d lostBytes %d (%q); want 1 and %d",
			tails, bytes, detail, len(bLines))
	}
	ig3, stop3 := runGlobCfg(t, pattern, data, 200*time.Millisecond, one)
	ig3.popEpochs(500*time.Millisecond, true)
	tails, bytes, detail = ig3.lost()
	stop3()
	if tails != 0 {
		t.Errorf("a further restart counts again: lostTails %d lostBytes %d (%q); want 0", tails, bytes, detail)
	}
}
