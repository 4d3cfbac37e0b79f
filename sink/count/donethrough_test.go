package count

import (
	"context"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"tailfeed/internal/grouptest"
	"tailfeed/processor"
)

// TestCountDoneThrough (DESIGN §11): the marks are the saved state's for
// the count's feed, as loaded at open; the applied position advances over
// lines the group finished without the count (an exclude at a batch's
// end, a batch the filters emptied); a replayed line (no position) never
// moves it; no state: no mark.
func TestCountDoneThrough(t *testing.T) {
	path := filepath.Join(t.TempDir(), "counter.json")
	r := grouptest.New(t, processor.GroupConfig{Name: "counter", Exclude: regexp.MustCompile(`^skip`)})
	open := func(cp processor.Checkpoint) *Count {
		c, err := OpenCount(CountConfig{Name: "counter", Path: path, Interval: time.Millisecond, Checkpoint: cp, Feed: "app"})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := open(r.G)
	if m, err := c.DoneThrough(context.Background()); err != nil || len(m) != 0 {
		t.Fatalf("no state: marks %+v %v", m, err)
	}
	r.G.SetBatchProcessor(c)
	r.Run()
	r.Publish("a", "b", "skip-1")
	r.Publish("skip-2")
	r.WaitAck(4, 10*time.Second)
	end := r.Pos
	r.Cancel()
	<-r.G.Done()
	// A replayed line carries no position: the state stays.
	b := grouptest.Batch(r.Epoch, end+100, "replayed")
	b.Positioned = false
	if _, err := c.ProcessBatch(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	m, err := open(&eoCheckpoint{}).DoneThrough(context.Background())
	if err != nil || len(m) != 1 || m[0].Epoch != r.Epoch || m[0].Position != end {
		t.Fatalf("marks %+v %v, want epoch %x through %d", m, err, r.Epoch, end)
	}
}
