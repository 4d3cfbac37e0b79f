//go:build openfindings

package file

// Review 24d, finding C: parked in the twenty-fourth session, older than
// that session's change (it fails at 083c653 too), not in readGaps (go
// test -tags openfindings -run 'TestRev24DRHeaderOnly' ./source/file).
// (B's source part and D were fixed in the twenty-fifth session:
// rev25a_internal_test.go.)
//   - C: a pointer whose file held only a header line at its last commit,
//     and a new file beginning with that header: DESIGN §3's same-content
//     rule continues at the same position — the new file's header line is
//     not delivered (a design question: the pointer's file was found
//     beside the path by its key, a rotation).

import (
	"testing"
	"time"
)

// C (probe, not readGaps: seen in A's run): P's file (w.log) held only the
// application's header when its pointer last committed (FPLen 15, offset
// 15). While stopped it is rotated to w.log.2 (found there by its key)
// and the application makes a new w.log beginning with the same header.
// The new w.log's header line is not delivered, and nothing is counted.
// Its log: "input has a new file key but the same content; continuing at
// the same position: position=15" (switchTo, DESIGN §3's same-content
// rule: the 15-byte fingerprint is the header) — though the pointer's
// file was found beside the path by its key (a rotation, not a copy-up).
// The same without readGaps (x.log left in the glob). Pre-existing (fails
// at 083c653), not from readGaps; kept as a probe for the design question.
func TestRev24DRHeaderOnlyPointerNewFileHeaderLineSilentlyLost(t *testing.T) {
	t.Parallel()
	r := rev24drRig(t, rev24drHdr, rev24drHdr)
	r.rename(r.x, r.w+".3")
	r.rename(r.w, r.w+".2") // P, plain
	time.Sleep(20 * time.Millisecond)
	r.write(r.w, rev24drHdr+numbered("gc", 3))
	got, tails, bytes, detail := r.run(2500*time.Millisecond, nil)
	t.Logf("third start: lostTails %d lostBytes %d %q (delivered %v)", tails, bytes, detail, got)
	// The gap w.log.1's lines (plain, not compressed here) are read by
	// readGaps: hdr + gap-0..2; the new w.log: hdr + gc-0..2.
	if got[rev24drHdr[:len(rev24drHdr)-1]] < 2 && tails == 0 {
		t.Errorf("the header line: delivered %d times (the gap's and the new w.log's: want 2), nothing counted (delivered %v)", got[rev24drHdr[:len(rev24drHdr)-1]], got)
	}
	if rev23bGapLines(got, "gc", 3) != 3 {
		t.Errorf("third start delivered %v, want gc-0..2 once", got)
	}
}
