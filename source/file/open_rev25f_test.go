//go:build openfindings

package file_test

// Review 25f, findings B and B2: parked in the twenty-fifth session (go
// test -tags openfindings -run 'TestRev25FRB' ./source/file): at a restart,
// a torn .gz beside the pointer's own file (found by its key: read from
// there) whose compressor was killed keeps the feed BEHIND for the torn
// wait (max(rotateWaitMillis, 10 s)) before it is let go uncounted — no
// line lost or doubled, a late settle. (awaitTornPointerGen no longer
// waits for it too: that halved the wait.)

import (
	"testing"
)

// B (new with this change — at 5ffd3a3 the flushed prefix told the twin,
// the pointer's own file found by its key, and the .gz was not waited for;
// the feed kept not settled for no reason): rotatedNames "app.log.*.gz".
// A run reads A (header + a0..a9) to its end and stops; logrotate renames
// A to app.log.1 (A still there: the pointer's file, found by its key)
// and its gzip begins app.log.1.gz — the first lines flushed, shorter than
// A — then stalls (killed, or slow on a loaded host). The restart's
// awaitTornPointerGen asks twinReadInstead with held = the pointer's key:
// the prefix is shorter than A and the .gz not whole, so untold now; the
// .gz's head is shorter than the pointer's fingerprint and fresh, so the
// source waits in STARTING for max(rotateWait, tornWait) = 10 s before
// opening — though the pointer's file, holding every line, is right there.
// Then the scan notes the .gz torn beside it (heldTwin = A) until its
// stall ends. Settled within 3 s expected (as at 5ffd3a3).
func TestRev25FRBRestartWaitsForATornGzOfThePointersOwnFile(t *testing.T) {
	t.Parallel()
	rev25fRestartBesideTornGz(t, false)
}

// B2 (B with the .gz empty — gzip killed before its first write, or a real
// gzip of a small file still running: older, fails at 5ffd3a3 too): the
// same 20 s not settled. The change widens it to a flushed prefix.
func TestRev25FRB2RestartWaitsForAnEmptyGzOfThePointersOwnFile(t *testing.T) {
	t.Parallel()
	rev25fRestartBesideTornGz(t, true)
}
