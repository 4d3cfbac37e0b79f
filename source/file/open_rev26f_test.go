//go:build openfindings

package file_test

// Review 26f, finding B: parked in the twenty-sixth session (go test -tags
// openfindings -count=1 -run 'TestRev26FRB' ./source/file). A queued file
// cut short before it is read has its loss counted at once under a new
// epoch; when the switch then finds that it carries on the current file's
// content (a copy-up renamed over it), its lines carry the current file's
// epoch and the counted loss names an epoch no line carries. The loss is
// counted (lossless false, lostTails, lostBytes right); only its ledger
// entry's epoch is one no epochs-file line names.

import (
	"os"
	"strings"
	"testing"
	"time"

	"tailfeed/source/file"
)

// B (a loss named by an epoch no line and no pointer carries). A
// COMMITTED single-file feed reads app.log (3,000 lines, 24,000 bytes; the
// subscriber holds its 11th line, so the source stops short of the end). A
// copy-up replaces it: app.log.tmp holds the same 3,000 lines and 1,000
// more (x-…, 32,000 bytes) and is renamed over app.log (a new key, the
// same content: switchTo continues it under the old epoch at the same
// position). While it is queued it is cut to 28,000 bytes, its first bytes
// kept: the new branch of changed() gives the queued reader a fresh epoch
// X and counts the 4,000 bytes under X — then switchTo's same-content path
// sets nx.epoch = old.epoch, so the x lines are delivered under the old
// (pointer) epoch and X names nothing (no line, no pointer Reset, no line
// in feeds/app.epochs). DESIGN §4 (losses are mapped back to a file
// through the epochs file: "any epoch a pointer ever held can be mapped
// back to its file") and the change's own rule (7a83eb5, rotate.go ~256:
// "a queued file: its loss is named by the epoch its lines get"; review
// 26e A). Expected: every loss names the epoch the x lines are delivered
// under. Observed: the loss names X, the x lines carry the a lines' epoch.
// Cause: source/file/rotate.go changed() ~255-257 assigns the epoch
// before switchTo ~546 (nx.epoch = old.epoch) decides the file continues
// the old one.
func TestRev26FRBQueuedCopyUpCutShortCountsUnderAnEpochItsLinesNeverGet(t *testing.T) {
	hold := make(chan struct{})
	losses := &lossLog{}
	r := newRig(t, "", rigOpts{strategy: file.Committed, noNotify: true, onLoss: losses.add,
		hold: map[string]chan struct{}{"a-00010": hold}})
	appendTo(t, r.path, numbered("a", 0, 3000)...)
	r.start()
	r.waitLines(10)
	replaceWith(t, r.path, append(numbered("a", 0, 3000), numbered("x", 0, 1000)...)...) // 32,000 bytes, same first bytes
	r.waitFor("the new file queued", 5*time.Second, func() bool { return strings.Contains(r.logs.String(), "queued behind the open one") })
	time.Sleep(300 * time.Millisecond) // checked at its full size (polls every 50 ms)
	if err := os.Truncate(r.path, 28000); err != nil {
		t.Fatal(err)
	}
	r.waitFor("the loss counted", 5*time.Second, func() bool { return len(losses.all()) > 0 })
	close(hold)
	r.waitLines(3500)
	r.waitSettled()
	var aEpoch, xEpoch uint64
	for _, g := range r.rec.all() {
		if strings.HasPrefix(g.Line, "x-") {
			xEpoch = g.Epoch
		} else {
			aEpoch = g.Epoch
		}
	}
	t.Logf("a lines' epoch %016x, x lines' epoch %016x, losses %+v", aEpoch, xEpoch, losses.all())
	if xEpoch == 0 {
		t.Fatalf("no x line delivered")
	}
	for _, l := range losses.all() {
		if l.Epoch != xEpoch {
			t.Errorf("loss %s %d counted under epoch %016x, want the x lines' epoch %016x (the loss names an epoch no line carries)", l.Counter, l.Amount, l.Epoch, xEpoch)
		}
	}
}
