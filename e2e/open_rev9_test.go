//go:build openfindings

// Open findings of the ninth session's reviews (issue 13 closing note):
// each test here fails on the product as it is, kept out of the default
// build until fixed (go test -tags openfindings ./e2e -run TestRev9);
// a fixed finding moves back to review9b_test.go or review9c_test.go.

package e2e

import (
	"testing"
)

// TestRev9CXARenamedWithinGlobThenNarrowed: DESIGN §10 "A rename within the
// glob keeps the stream"; §12 "if its path changed … the new path starts as
// a new feed" (README: a changed path "stops reading the old one: no loss
// is counted"); §7/§4 "Nothing green over a loss": lossless false only for
// a counted loss — and a loss counted must have happened. The glob ./in/*
// reads a.txt (5 lines) and a.log (5 lines); while running both are renamed
// within the glob (a.txt -> b.txt, a.log -> z.txt), read to their end,
// committed, settled. The path is then narrowed to ./in/*.log (by a
// reload, or at a stopped restart): b.txt and z.txt, still on disk, read
// to their end, are no longer matched — exactly the case this change
// stopped counting (TestAud4GXReloadGlobNarrowed), except that the file
// is not at the path its stream was first matched under. unmatchedAt
// looks only at that first path (l.s.first), finds no file there, and the
// file is counted "glob file gone while stopped".
// Expected: lostTails 0, lossless true, no losses.jsonl entry.
// Observed: lostTails 2, lossless false, two losses.jsonl entries "glob
// file gone while stopped" in every mode, every run (also by an exclude;
// also at 762ac0c, before this change: the fix covers only a file still at
// its first path). Tenth session: b.txt (its first path a.txt no longer
// matched either) is no longer counted (TestRev9CFixedARenamedOutOfFirst-
// PathThenNarrowed); z.txt, whose first path a.log the narrowed glob still
// matches, is: at a start nothing tells a rename within the glob before the
// stop from a rename out while stopped, after which generations rotated
// away unseen may follow it (besideAtStart) — lostTails 1, every run.
func TestRev9CXARenamedWithinGlobThenNarrowed(t *testing.T) {
	for _, mode := range []string{"reload", "restart", "exclude-restart"} {
		t.Run(mode, func(t *testing.T) {
			r, led, got := rev9cRenameThenNarrow(t, mode, map[string]string{"a.txt": "a", "a.log": "l"},
				[][2]string{{"a.txt", "b.txt"}, {"a.log", "z.txt"}})
			if f := r.Feeds[0]; f.LostTails != 0 || !f.Lossless || len(led) != 0 {
				t.Errorf("%s narrowing ./in/* to ./in/*.log after a.txt->b.txt and a.log->z.txt were renamed within the glob (both read to their end, committed, still on disk): lostTails %d lostBytes %d lossless %v; want 0, 0, true (no line skipped; the same narrowing without the rename counts nothing)\nlosses.jsonl: %s",
					mode, f.LostTails, f.LostBytes, f.Lossless, led)
			}
			if len(got["a"]) != 5 || len(got["l"]) != 5 {
				t.Errorf("lines a %d l %d, want 5 5", len(got["a"]), len(got["l"]))
			}
		})
	}
}
