package file_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"tailfeed/pointer"
	"tailfeed/source/file"
)

// Review (issue 13, DESIGN §10 "Status": a glob feed's `commits` is summed
// over its files' pointer commit counters; metrics export it as the counter
// tailfeed_feed_commits_total).
//
// (a) A closed stream's owed commit (closefix: settleOwed -> commitOwed)
// and a closed, gone file's reset to the empty record (forgetClosed) move
// the pointer's commit counter, but the glob reports the counter it saw at
// the close (gstream.commits is never updated): status lags the pointers.
// (b) A forgotten file's pointer is deleted and its commits leave the sum:
// the _total counter goes down (Prometheus reads that as a reset).
func TestGlobCommitsCounterFollowsOwedAndNeverGoesBack(t *testing.T) {
	defer file.SetStopDrainBound(200 * time.Millisecond)()
	dir, data := t.TempDir(), t.TempDir()
	r := newGlobRig(t, dir, data, filepath.Join(dir, "*.log"), 16)
	defer r.stop()
	r.hold.Store(true) // taken, not acknowledged
	for _, tag := range []string{"a", "b"} {
		writeLines(t, filepath.Join(dir, tag+".log"), tag, 5)
	}
	r.waitLines(10, 10*time.Second)
	waitFor(t, "both files closed (inactive) with their lines unacknowledged", 10*time.Second, func() bool {
		c := r.g.Counts()
		return c.Tracked == 2 && c.Open == 0
	})
	r.hold.Store(false)
	waitFor(t, "settled", 10*time.Second, func() bool {
		return r.pub.Pending() == 0 && r.pub.Acknowledged() >= 10 && r.g.CommitOK() && r.g.SyncedSeq() >= r.pub.Acknowledged()
	})
	ptrSum := func() (uint64, int) {
		var n uint64
		l, _ := filepath.Glob(filepath.Join(data, "feeds", "f", "*.ptr"))
		for _, p := range l {
			if rec, err := pointer.Inspect(p); err == nil {
				n += rec.Commits
			}
		}
		return n, len(l)
	}
	sum, n := ptrSum()
	if got := r.g.Commits(); got != sum {
		t.Errorf("settled: status commits %d, the %d stream pointers' commit counters sum to %d (owed commits not counted)", got, n, sum)
	}
	before := r.g.Commits()
	if err := os.Remove(filepath.Join(dir, "b.log")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "b.log's pointer forgotten", 10*time.Second, func() bool {
		_, n := ptrSum()
		return n == 1
	})
	if after := r.g.Commits(); after < before {
		t.Errorf("commits (a _total counter) went from %d to %d when a file was forgotten", before, after)
	}
}
