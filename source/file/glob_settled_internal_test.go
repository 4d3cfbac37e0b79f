package file

import (
	"testing"
	"time"
)

// Issue 13, DESIGN §3 "msync ... before the feed reports settled",
// §10 "settled when ... every file's last commit is synced and covers that
// file's acknowledged position").
//
// A glob feed's SyncedSeq is the publisher's acknowledged sequence whenever
// CommitOK holds, and CommitOK only asks each open stream whether its
// last commit attempt is synced (Source.CommitOK: !dirty). Between the
// mux's poll that moves the feed's acknowledged sequence (and pending to 0)
// and the stream's own commitStep that takes that acknowledgement, the
// stream has stored nothing (dirty false): the feed's report reads
// CAUGHT_UP, pendingAcks 0, CommitOK true, SyncedSeq == acknowledged, i.e.
// settled, while the stream's pointer still records offset 0. A kill -9
// then re-delivers every line of the file although status said settled.
//
// The window is the stream goroutine's wake-up latency after the poke (a
// loaded machine with hundreds of streams: milliseconds); the test makes it
// deterministic by doing the mux's poll itself under the mux's mutex, which
// keeps the stream's PollAcks (the start of its commitStep) waiting, exactly
// as a not-yet-scheduled stream goroutine would be.
func TestGlobSettledOnlyAfterStreamTookItsAck(t *testing.T) {
	t.Parallel()
	ig := startInternalGlob(t, time.Minute, 0)
	g, q, pub := ig.g, ig.q, ig.pub
	taken := ig.take(t) // the five lines, not acknowledged
	for end := time.Now().Add(10 * time.Second); g.State() != CaughtUp || pub.Pending() != 5; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("not CAUGHT_UP with 5 lines pending in 10 s (state %v, pending %d)", g.State(), pub.Pending())
		}
	}
	time.Sleep(50 * time.Millisecond) // the stream sleeps, nothing stored (no ack yet)

	// The subscriber finishes the lines; the mux's poll hands the
	// acknowledgement to the stream (poked), which has not run yet.
	g.mux.mu.Lock()
	q.AddDispatched(taken)
	g.mux.pollLocked()
	state, pending, acked := g.State(), pub.Pending(), pub.Acknowledged()
	commitOK, synced := g.CommitOK(), g.SyncedSeq()
	rec, ptrs, recErr := ig.pointer()
	g.mux.mu.Unlock()

	if len(ptrs) != 1 || recErr != nil {
		t.Fatalf("stream pointers %v (%v), want one", ptrs, recErr)
	}
	// status.Build: settled = SourceDone && pendingAcks 0 && CommitOK &&
	// SyncedSeq >= acknowledged (&& queues drained, sequence unchanged).
	settled := state == CaughtUp && pending == 0 && commitOK && synced >= acked
	if settled && rec.Offset < ig.size {
		t.Errorf("feed reports settled (state %v, pendingAcks %d, acknowledged %d, CommitOK %v, SyncedSeq %d) while the stream's pointer records offset %d of the %d acknowledged bytes (a kill -9 now re-delivers them)",
			state, pending, acked, commitOK, synced, rec.Offset, ig.size)
	}
}
