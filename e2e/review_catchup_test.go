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

// reviewEpochsLoss runs the older-generation restore of rotatedCatchUp with
// the feed's epochs file damaged by mangle while tailfeed is stopped, and
// checks DESIGN §4/§11 "Nothing green over a loss": the restored sink
// holds a record of an epoch the pointer left; with the epochs file unable
// to map it, tailfeed cannot show that no line was skipped for that sink —
// it must either catch the sink up or count the gap (lossless false). It
// must not stay green with lines missing from the sink.
func reviewEpochsLoss(t *testing.T, mangle func(path string)) {
	e, in, _, rot, cur, _ := rotatedCatchUp(t)
	mangle(e.path("state/feeds/app.epochs"))
	d := e.start()
	r := d.waitSettled(60 * time.Second)
	f := r.feed(t, "app")
	d.stop()
	n := countIdx(parseOutput(t, in, e.path("exact.log")))
	missing := 0
	for i := range in.texts {
		if n[i] == 0 {
			missing++
		}
	}
	if missing > 0 && (f.Lossless || r.Lossless) {
		t.Errorf("the restored exactlyOnce sink lacks %d of %d lines, yet the feed reports lossless %v (top %v), lostTails %d, lostBytes %d, detail %v",
			missing, len(in.texts), f.Lossless, r.Lossless, f.LostTails, f.LostBytes, f.Detail)
	}
	if missing == 0 {
		sameBytes(t, "exactlyOnce output", e.path("exact.log"), append(bytes.Clone(rot), cur...))
	}
}

// TestReviewCatchUpEpochsFileMissingGreenOverLoss: the epochs file deleted
// (an operator cleaning dataDir, a restore of dataDir without it).
func TestReviewCatchUpEpochsFileMissingGreenOverLoss(t *testing.T) {
	reviewEpochsLoss(t, func(p string) {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	})
}

// TestReviewCatchUpEpochsFileTornGreenOverLoss: the epochs file's last line
// (the Reset that moved the pointer off the restored sink's epoch) torn, as
// a power loss during its append leaves it.
func TestReviewCatchUpEpochsFileTornGreenOverLoss(t *testing.T) {
	reviewEpochsLoss(t, func(p string) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.SplitAfter(data, []byte{'\n'})
		if len(lines) < 2 || len(bytes.TrimSpace(lines[len(lines)-1])) != 0 {
			t.Fatalf("epochs file: %q", data)
		}
		last := lines[len(lines)-2]
		torn := append(bytes.Join(lines[:len(lines)-2], nil), last[:len(last)/2]...)
		if err := os.WriteFile(p, torn, 0o600); err != nil {
			t.Fatal(err)
		}
	})
}
