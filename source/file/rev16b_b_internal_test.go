// Review 16b, finding B: found and fixed in the sixteenth session.

// Review 16b, finding B (9b68b88: a watched stream out of the glob holds no
// descriptor; a line appended and the file deleted between two looks is
// neither read nor counted).

package file

import (
	"os"
	"testing"
	"time"
)

// Scenario: a stream watched out of the glob (watchedOut, rotateWaitMillis
// 3 s: w.log renamed to w.log.1, read there, its stream closed within
// rotateWait of its last growth to give a.log the only slot). The writer
// appends w-5 to w.log.1 and the file is deleted (a cleanup job, logrotate
// `rotate 1`'s next run) before housekeeping's next look, 1 s apart at
// most — 5 ms later here, well within rotateWait. lookWatched finds
// nothing at s.path nor beside it and stops watching (glob.go:2912-2922):
// w-5 is never read and nothing is counted (lostTails 0, lossless); the
// pointer keeps naming the file until forgetAfterMillis, when it is
// deleted and a restart no longer counts it either. Before 9b68b88 the
// caught-up gone stream kept its slot (and its descriptor) until quiet for
// rotateWait: w-5 was read through the descriptor, deleted or not.
// DESIGN §10 "A file renamed out of the glob is read to its end
// (rotateWaitMillis after its last growth), then closed"; §4 "Nothing green
// over a loss": lossless only while tailfeed can show no line was skipped;
// "A file that disappears with an unread tail counts in lostTails".
// README's row "a file renamed away, closed, then deleted" counts such a
// file only at the next restart, and only while its pointer is kept: here
// the stream is not done with the file (rotateWait has not passed), and a
// run that lasts past forgetAfterMillis never counts it.
// Expected: w-5 delivered, or lostTails 1. Observed: w-5 not delivered,
// lostTails 0, CAUGHT_UP: 5 of 5 (skips if housekeeping looked within the
// 5 ms between the append and the deletion).
func TestRev16BBWatchedFileGrownThenDeletedIsLostUncounted(t *testing.T) {
	t.Parallel()
	ig, s, _, moved, stop := watchedOut(t, 3*time.Second)
	defer stop()
	appendTo(t, moved, "w-5\n")
	time.Sleep(5 * time.Millisecond)
	ig.g.mu.Lock()
	watching := s.watching && s.st == stClosed
	ig.g.mu.Unlock()
	if err := os.Remove(moved); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for k, v := range ig.popLines(3 * time.Second) {
		got[k] += v
	}
	tails, bytes, detail := ig.lost()
	st, c := ig.g.StateCounts()
	t.Logf("still watched at the deletion: %v; delivered %v; lostTails %d lostBytes %d (%q); state %v filesBehind %d", watching, got, tails, bytes, detail, st, c.Behind)
	if !watching {
		t.Skip("housekeeping looked between the append and the deletion")
	}
	if got["w-5"] == 0 && tails == 0 {
		t.Errorf("w-5 appended to w.log.1 (renamed out of the glob, watched within rotateWait of its last growth) 5 ms before the file was deleted: not delivered, and lostTails %d lostBytes %d (%q), state %v; want it read (the file is read to its end rotateWait after its last growth) or counted lost",
			tails, bytes, detail, st)
	}
}
