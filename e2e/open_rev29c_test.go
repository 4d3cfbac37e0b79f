//go:build openfindings

package e2e

// Review 29c's judgement call kept open (run with -tags openfindings):
// pointer.commits moves for a first-bytes store (headFirst, headGrow) that
// commits no position. Kept: every record stored must move the counter
// (DESIGN §3: the newer slot is the one with the higher counter); README
// says what commits counts.

import (
	"testing"
	"time"
)

// TestRev29CXCommitsMoveWithoutCommit — judgement call. DESIGN §3 "commit
// counter (uint64, +1 per commit)" and "Commit. When the acknowledged
// position moves, the source stores the new record"; §7 status
// `pointer.commits`. headGrow (source/file/commit.go:321 s.ptr.Store) stores
// the record again at its offset before a batch goes out; pointer.store
// (pointer/commit.go:41 next.Commits++) counts it as a commit, and status
// (internal/daemon/report.go:111) and `pointer show` report rec.Commits.
//
// Observed: a pull consumer that never acknowledges (acknowledged 0, offset
// 0), a second line published: `pointer.commits` 1→2 (the 1 is the
// pointer's creation), pointer show after kill -9: commits 2, offset 0.
// Expected 1: nothing was acknowledged, nothing committed. Lesser finding.
func TestRev29CXCommitsMoveWithoutCommit(t *testing.T) {
	t.Parallel()
	e, d := rev29CStart(t, rev29CSingleTmpl, "=== start ===\n")
	r := d.waitFor("first line published", 30*time.Second, func(r *report) bool { return r.feed(t, "app").Sequence >= 1 })
	c0 := r.feed(t, "app").Pointer.Commits
	appendTo(t, e.path("logs/app.log"), "payload-1\n")
	r = d.waitFor("second line published", 30*time.Second, func(r *report) bool { return r.feed(t, "app").Sequence >= 2 })
	f := r.feed(t, "app")
	d.kill()
	rec, _ := showPointer(t, e.path("state/feeds/app.ptr"))
	t.Logf("status: acknowledged %d offset %d commits %d→%d; pointer show: offset %d commits %d fpLen %d",
		f.Acknowledged, f.Pointer.Offset, c0, f.Pointer.Commits, rec.Offset, rec.Commits, rec.FingerprintLength)
	if f.Acknowledged == 0 && f.Pointer.Commits != c0 {
		t.Errorf("pointer.commits moved %d→%d with nothing acknowledged (offset %d): a store that is no commit counted as one", c0, f.Pointer.Commits, f.Pointer.Offset)
	}
	if rec.Offset == 0 && rec.Commits > c0 {
		t.Errorf("pointer show: commits %d at offset 0 after a kill -9 with nothing acknowledged (want %d)", rec.Commits, c0)
	}
}
