package e2e

// Review of the catch-up (DESIGN §11 "A restored sink is caught up from the
// input", issue 14 acceptance 4): failing tests for defects found. They do
// not fix anything; each names the contract sentence it holds the code to.

import (
	"bytes"
	"os"
	"testing"
	"time"
)

// TestReviewCatchUpOlderEpochOtherExactlyOnceNoDuplicates (DESIGN §2
// "Built-in sinks with exactlyOnce: true store the last applied (epoch,
// position) ... and skip re-deliveries"; brief: "delivered twice to an
// exactlyOnce sink"): one exactlyOnce file sink ("exact") is restored to a
// copy whose record is in an epoch the pointer left (the input rotated
// since); the catch-up re-reads the rest of the rotated file and the current
// file. The OTHER exactlyOnce file sink ("other"), never restored, already
// holds every one of those lines — it must skip them. Its record (layout 1)
// holds only the newest epoch, so AlreadyApplied is false for the rotated
// file's lines and, once it wrote them, for the current file's too: it
// writes both again. Its output must still be byte-identical to the input.
func TestReviewCatchUpOlderEpochOtherExactlyOnceNoDuplicates(t *testing.T) {
	e, in, _, rot, cur, _ := rotatedCatchUp(t)
	before, err := os.ReadFile(e.path("other.log"))
	if err != nil {
		t.Fatal(err)
	}
	want := append(bytes.Clone(rot), cur...)
	if !bytes.Equal(before, want) {
		t.Fatalf("precondition: the other exactlyOnce sink holds %d bytes before the catch-up, want %d", len(before), len(want))
	}
	d := e.start()
	d.waitSettled(60 * time.Second)
	d.stop()
	n := countIdx(parseOutput(t, in, e.path("other.log")))
	dups := 0
	for i := range in.texts {
		if n[i] > 1 {
			dups += n[i] - 1
		}
	}
	if dups > 0 {
		t.Errorf("the exactlyOnce sink that was NOT restored received %d lines twice during another sink's catch-up", dups)
	}
	sameBytes(t, "other (exactlyOnce, not restored) after another sink's catch-up", e.path("other.log"), want)
}
