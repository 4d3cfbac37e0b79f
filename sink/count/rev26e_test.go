package count

// Review 26e (independent review of c522651: re-deliveries skipped per
// epoch on single-file feeds too). Each TestRev26ER<letter>… test here
// fails on the reviewed code for the reason its comment states.

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"tailfeed/internal/grouptest"
)

// B (lines doubled; the sink reported behind). A single-file feed "app"
// whose count state was written by the previous tailfeed (no "epochs":
// single-file feeds kept only the feed record): feeds.app = E2 through
// the end of its 5 lines (E2 follows E1 in the chain, so every line of E1
// and E2's first 5 are applied). After the upgrade another sink is caught
// up from E1 (DESIGN §11: "other sinks skip what they hold through
// AlreadyApplied or receive duplicates"): the count receives E1's 5 lines
// again, then E2's 5 lines again. DESIGN §6 count: "re-deliveries are
// skipped"; the change's own rule: a single-file feed's re-delivered line
// is skipped by its own epoch's entry, else by the feed's last applied
// line. E1's lines are counted again (no record names them: the documented
// overcount). But the E1 batch moves the feed record BACK to E1 (b.Epoch !=
// the record's epoch) without keeping E2's position anywhere (no E2 entry),
// so E2's re-delivered lines, which the loaded state held as applied, are
// then counted again too. Expected: each e2-* line counted once; after a
// save and a reopen (a restart in the middle of the catch-up), a
// done-through mark of E2 at its 5th line. Observed: e2-* counted twice,
// and the reopened state's only marks are E1 — E2's progress is gone, so
// catchup.Decide takes the sink for behind in E2 from 0 and the restart
// re-reads E2 for every sink (counted a third time). Cause:
// sink/count/count.go ProcessBatch ~163-190: the fallback to the feed
// record is not kept as the record's epoch's entry before the record moves
// (loadEpochs / noteEpoch never seed an entry from a loaded feed record).
func TestRev26ERBPreviousStateCatchUpMovesRecordBackAndCountsTwice(t *testing.T) {
	path := filepath.Join(t.TempDir(), "counter.json")
	const e1, e2 = uint64(0x1111), uint64(0x2222)
	e1Lines := []string{"e1-1", "e1-2", "e1-3", "e1-4", "e1-5"}
	e2Lines := []string{"e2-1", "e2-2", "e2-3", "e2-4", "e2-5"}
	e2End := grouptest.Batch(e2, 0, e2Lines...).LastEnd()
	// The previous version's state: counts of e1 and e2's lines, the feed
	// record at e2's last line, no per-epoch entries.
	old := `{"v":1,"processor":"counter","type":"count","counts":{"e1-1":1,"e1-2":1,"e1-3":1,"e1-4":1,"e1-5":1,"e2-1":1,"e2-2":1,"e2-3":1,"e2-4":1,"e2-5":1},` +
		`"feeds":{"app":{"epoch":"0000000000002222","position":` + strconv.FormatInt(e2End, 10) + `}}}`
	if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	open := func() *Count {
		c, err := OpenCount(CountConfig{Name: "counter", Path: path, Interval: time.Millisecond, Checkpoint: &eoCheckpoint{}, Feed: "app"})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := open()
	if m, _ := c.DoneThrough(context.Background()); len(m) != 1 || m[0].Epoch != e2 || m[0].Position != e2End {
		t.Fatalf("loaded marks %+v, want e2 through %d", m, e2End)
	}
	ctx := context.Background()
	// The catch-up of another sink: E1 again (a whole generation).
	if _, err := c.ProcessBatch(ctx, grouptest.Batch(e1, 0, e1Lines...)); err != nil {
		t.Fatal(err)
	}
	// A restart here (the catch-up's E1 done, E2 not yet re-read).
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	marks, _ := open().DoneThrough(ctx)
	hasE2 := false
	for _, m := range marks {
		if m.Epoch == e2 && m.Position >= e2End {
			hasE2 = true
		}
	}
	if !hasE2 {
		t.Errorf("after E1's re-delivery the saved state's marks are %+v: E2 through %d (applied, in the loaded state) is gone — the daemon takes the sink for behind in E2", marks, e2End)
	}
	// The catch-up goes on: E2's lines up to the pointer again.
	if _, err := c.ProcessBatch(ctx, grouptest.Batch(e2, 0, e2Lines...)); err != nil {
		t.Fatal(err)
	}
	got := counts(c)
	for _, l := range e2Lines {
		if got[l] != 1 {
			t.Errorf("%s counted %d times, want 1 (the loaded state's feed record held it as applied)", l, got[l])
		}
	}
}

// Probe (passes): with a state this version wrote (an entry per epoch), a
// catch-up of another sink from an older epoch E1 is skipped line by line
// (E1's entry), then E2's re-delivered lines too; the feed record is not
// moved back, and a reopened state's marks still name E2 at its end (the
// daemon does not take the sink for behind).
func TestRev26ERProbeCatchUpWithEntriesSkipsAndKeepsTheMark(t *testing.T) {
	path := filepath.Join(t.TempDir(), "counter.json")
	const e1, e2 = uint64(0x1111), uint64(0x2222)
	e1Lines := []string{"e1-1", "e1-2", "e1-3"}
	e2Lines := []string{"e2-1", "e2-2", "e2-3"}
	open := func() *Count {
		c, err := OpenCount(CountConfig{Name: "counter", Path: path, Interval: time.Millisecond, Checkpoint: &eoCheckpoint{}, Feed: "app"})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ctx := context.Background()
	c := open()
	for _, b := range []struct {
		e uint64
		l []string
	}{{e1, e1Lines}, {e2, e2Lines}} {
		if _, err := c.ProcessBatch(ctx, grouptest.Batch(b.e, 0, b.l...)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	c = open()
	for _, b := range []struct {
		e uint64
		l []string
	}{{e1, e1Lines[1:]}, {e2, e2Lines}} { // the catch-up: E1 from its 2nd line, then E2
		start := int64(0)
		if b.e == e1 {
			start = 5
		}
		if _, err := c.ProcessBatch(ctx, grouptest.Batch(b.e, start, b.l...)); err != nil {
			t.Fatal(err)
		}
		if err := c.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		marks, _ := open().DoneThrough(ctx)
		ok := false
		for _, m := range marks {
			ok = ok || (m.Epoch == e2 && m.Position == 15)
		}
		if !ok {
			t.Errorf("marks %+v after the E%x batch lack e2 through 15", marks, b.e)
		}
	}
	for k, n := range counts(c) {
		if n != 1 {
			t.Errorf("%s counted %d times", k, n)
		}
	}
}
