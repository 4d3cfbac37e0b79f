package file

import (
	"testing"
	"time"
)

// closefix: "a glob stream closed with unacknowledged lines keeps a
// commit obligation"). closed() decides the obligation from sp.Pending()
// and the source's CommitOK. A stream's drain gives up after drainBound
// with lines unacknowledged, its Close syncs what it had, and the stopped
// stream waits in g.stopped for the manager. If the acknowledgements of the
// remaining lines reach the mux in between (the pump hands them to the
// streamPub: pending 0, sp.ack set), closed() sees pending 0 and CommitOK
// true: no obligation is kept, the streamPub leaves the mux with its
// acknowledgement unpolled, and the pointer stays behind lines every
// subscriber acknowledged, for good, while the feed reports CommitOK and
// SyncedSeq == acknowledged (settled). A kill -9 re-delivers them.
//
// The manager being busy (holding g.mu) is simulated by the test holding
// g.mu between the close and the acknowledgement.
func TestGlobLateAckBeforeClosedIsCommitted(t *testing.T) {
	t.Parallel()
	ig := startInternalGlob(t, 300*time.Millisecond, 200*time.Millisecond)
	g, q, pub := ig.g, ig.q, ig.pub
	taken := ig.take(t)
	// Wait for the inactive close to begin, then keep the manager busy.
	stopping := func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		for _, s := range g.byKey {
			if s.st == stStopping {
				return true
			}
		}
		return false
	}
	for end := time.Now().Add(10 * time.Second); !stopping(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the stream was not closed for inactivity in 10 s")
		}
	}
	g.mu.Lock()
	time.Sleep(600 * time.Millisecond) // the drain gives up (200 ms), Close syncs, the stream waits in g.stopped
	q.AddDispatched(taken)             // the subscriber finishes the lines
	pub.Poke()
	for end := time.Now().Add(5 * time.Second); pub.Pending() != 0; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(end) {
			g.mu.Unlock()
			t.Fatalf("acknowledgement not polled in 5 s (pending %d)", pub.Pending())
		}
	}
	g.mu.Unlock()

	time.Sleep(1500 * time.Millisecond) // several housekeeping ticks: an owed commit would be made by now
	rec, ptrs, err := ig.pointer()
	if len(ptrs) != 1 {
		t.Fatalf("stream pointers %v, want one", ptrs)
	}
	if err != nil {
		t.Fatal(err)
	}
	ok, synced, acked := g.CommitOK(), g.SyncedSeq(), pub.Acknowledged()
	if rec.Offset < ig.size {
		t.Errorf("every line acknowledged (acknowledged %d, pending %d) 1.5 s ago, the stream closed: its pointer records offset %d of %d bytes; status CommitOK %v, SyncedSeq %d (settled: %v)",
			acked, pub.Pending(), rec.Offset, ig.size, ok, synced, ok && synced >= acked)
	}
}
