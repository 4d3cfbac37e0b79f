package file_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"tailfeed/source/file"
)

// TestRevS7aLatestLongLineUnderMaxLine: rule (DESIGN §4 maxLineBytes, up to
// 1 GiB; README "LATEST starts at the start of the line being written … so
// that line is delivered whole … Never a fragment"; `oversized` counts lines
// longer than maxLineBytes). Change under review: lastLineStart scans back
// at most 64 MiB and, finding no terminator there, starts at the line's
// last byte as a piece of an oversized line (inLong) — whatever maxLineBytes
// is. Expected, with maxLineBytes 128 MiB and a 64 MiB+10 line being
// written at the LATEST start: the line is not oversized, so it is delivered
// whole when it ends (or at least not counted oversized). Observed: a
// 3-byte fragment "xyz" is delivered as the line and `oversized` is 1 for a
// line shorter than maxLineBytes.
func TestRevS7aLatestLongLineUnderMaxLine(t *testing.T) {
	t.Parallel()
	line := strings.Repeat("x", 64<<20+10)
	r := newRig(t, "", rigOpts{strategy: file.Latest, maxLine: 128 << 20})
	if err := os.WriteFile(r.path, []byte("old\n"+line), 0o644); err != nil {
		t.Fatal(err)
	}
	r.start()
	r.waitFor("caught up", 30*time.Second, func() bool { return r.src.State() == file.CaughtUp })
	appendString(t, r.path, "yz\nnext\n")
	r.waitLines(2)
	time.Sleep(200 * time.Millisecond)
	g := r.rec.all()
	if len(g) != 2 {
		t.Fatalf("%d lines delivered, want 2: %v", len(g), shortLines(g))
	}
	if want := line + "yz"; g[0].Line != want {
		t.Errorf("the line being written at the start was delivered as %d bytes %q…, want it whole (%d bytes): it is not longer than maxLineBytes", len(g[0].Line), truncLine(g[0].Line), len(want))
	}
	if got := r.src.Oversized(); got != 0 {
		t.Errorf("oversized = %d, want 0 (the line is shorter than maxLineBytes 128 MiB)", got)
	}
}
