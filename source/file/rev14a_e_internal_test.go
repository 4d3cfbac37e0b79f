// Review 14a, finding E: found and fixed in the fourteenth session.

package file

import (
	"os"
	"testing"
	"time"
)

// The empty w.log's pointer (offset 0, no key in the record: the key in
// the epochs line) is left by a kill. While tailfeed is down the
// application writes 3 lines into w.log and it is deleted; logrotate's
// "create" puts a new, EMPTY w.log at the path (another inode). The
// restart gives the pointer to the new w.log (adoptByPath), whose source
// does not find the old file, counts its tail lost (lostTails 1, right)
// and Resets the pointer to the empty record under a new epoch
// (forgetLost). The new w.log stays empty, its stream is closed
// (closeInactive); when the application writes to it, the stream is
// started again with the same Config — GoneKey still set ("also when
// started again (preempted)") — and the record is again "no key, no first
// bytes, offset 0, not fresh": resumeRotated's new block takes it for the
// gone file's pointer once more, looks for the old key, does not find it
// and counts the same loss a second time (and Resets again). Breaks
// DESIGN §4 "forgetLost … Otherwise the next restart … counts the same
// tail again (a second ledger entry; a loss the operator acknowledged
// coming back)" — here within one run, with no restart at all — and §7
// (lostTails is the count of files whose tail is lost: 1 file, counted 2).
// Observed: lostTails 2 after the new w.log's first write; 3 of 3 runs.
func TestRev14EGoneKeyKeptCountsTheLossAgainWhenTheEmptyNewFileIsWritten(t *testing.T) {
	t.Parallel()
	pattern, data, w, _, _ := emptyFileKilled(t, "")
	appendTo(t, w, numbered("first", 3))
	if err := os.WriteFile(w+".new", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(w); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(w+".new", w); err != nil {
		t.Fatal(err)
	}
	ig2, _, _ := runGlobOn(t, pattern, data)
	lines, _ := ig2.popEpochs(time.Second, true)
	tails, _, detail := ig2.lost()
	if len(lines) != 0 || tails != 1 {
		t.Fatalf("restart: delivered %q, lostTails %d (%q); want nothing and lostTails 1", lines, tails, detail)
	}
	ig2.waitFor(t, "the empty new w.log's stream closed", func() bool {
		s := ig2.g.byPath[w]
		return s != nil && s.st == stClosed && s.src == nil
	})
	time.Sleep(200 * time.Millisecond)
	appendTo(t, w, numbered("second", 2))
	lines, _ = ig2.popEpochs(2*time.Second, true)
	tails, nb, detail := ig2.lost()
	if len(lines) != 2 || tails != 1 {
		t.Errorf("after the new w.log was written: delivered %q; lostTails %d lostBytes %d (%q), want its 2 lines and lostTails still 1 (one file's tail lost, counted once)", lines, tails, nb, detail)
	}
}
