package file_test

import (
	"testing"
	"time"
)

// DESIGN §2: duplicates happen after a crash — the lines
// acknowledged since the last commit — or in a restored sink's catch-up,
// never otherwise). A glob stream closed with lines unacknowledged (owed,
// closefix) and reopened because its file grew drops its obligation
// (start: settleOwed, then owe = nil) and its new source reads from the
// pointer, which is behind the lines still in flight: they are published
// a second time, with no crash, while their first copies still wait for
// their acknowledgement.
func TestGlobOwedStreamReopenedWithoutRedelivery(t *testing.T) {
	r, a := closedOwing(t)
	defer r.stop()
	writeLines(t, a, "b", 2) // grows: reopened
	// Fixed by holding the reopen until the owed lines are acknowledged
	// and committed: nothing new is published while they are in flight.
	time.Sleep(time.Second)
	if n := r.count(); n != 5 {
		t.Errorf("%d lines taken while a.log's first 5 were unacknowledged, want 5", n)
	}
	r.hold.Store(false)
	r.waitLines(7, 10*time.Second)
	time.Sleep(500 * time.Millisecond)
	r.mu.Lock()
	got := append([]string(nil), r.lines[a]...)
	r.mu.Unlock()
	if len(got) != 7 {
		t.Errorf("no crash, no restore: %d lines delivered for a.log's 7 (%q)", len(got), got)
	}
}
