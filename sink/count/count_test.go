package count

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"tailfeed/internal/grouptest"
	"tailfeed/processor"
)

func openCountT(t *testing.T, path, match string, cp processor.Checkpoint) *Count {
	t.Helper()
	var re *regexp.Regexp
	if match != "" {
		re = regexp.MustCompile(match)
	}
	c, err := OpenCount(CountConfig{Name: "counter", Path: path, Match: re, Interval: time.Hour, Checkpoint: cp})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func counts(c *Count) map[string]uint64 { return c.State().(CountState).Counts }

// TestCountKeys: the named group `key` picks the key; without one the whole
// line is the key; lines the regexp does not match are not counted; invalid
// UTF-8 bytes become U+FFFD.
func TestCountKeys(t *testing.T) {
	dir := t.TempDir()
	lines := []string{"level=info a", "level=warn b", "level=info c", "nothing", "level=\xffx"}
	for _, tc := range []struct {
		match string
		want  map[string]uint64
	}{
		{`level=(?P<key>\w+)`, map[string]uint64{"info": 2, "warn": 1}},
		{`level=(?P<key>\S+)`, map[string]uint64{"info": 2, "warn": 1, "\ufffdx": 1}},
		{`^level=info`, map[string]uint64{"level=info a": 1, "level=info c": 1}},
		{``, map[string]uint64{"level=info a": 1, "level=warn b": 1, "level=info c": 1, "nothing": 1, "level=\ufffdx": 1}},
	} {
		c := openCountT(t, filepath.Join(dir, "c.json"), tc.match, &eoCheckpoint{})
		if _, err := c.ProcessBatch(context.Background(), grouptest.Batch(1, 0, lines...)); err != nil {
			t.Fatal(err)
		}
		if got := counts(c); !maps.Equal(got, tc.want) {
			t.Errorf("match %q: counts %v, want %v", tc.match, got, tc.want)
		}
	}
}

// TestCountSkipsReDeliveriesAfterCrash: counts and the applied position are
// saved together; after a crash the restart loads the last save, and the
// re-delivery from an older pointer counts only what the save lacks — the
// final counts equal a clean run's. Without the skip they would exceed it.
func TestCountSkipsReDeliveriesAfterCrash(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "counter.json")
	all := []string{"k=a", "k=b", "k=a", "k=c", "k=a", "k=b"}
	const match = `k=(?P<key>\w)`
	cp := &eoCheckpoint{}
	c := openCountT(t, path, match, cp)
	if !cp.held {
		t.Fatal("count did not take the checkpoint hold")
	}
	b1 := grouptest.Batch(3, 0, all[:2]...)
	cp.mark = 2
	c.ProcessBatch(context.Background(), b1)
	if err := c.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if cp.durable != 2 {
		t.Fatalf("durable %d after the save, want 2", cp.durable)
	}
	cp.mark = 4
	c.ProcessBatch(context.Background(), grouptest.Batch(3, b1.LastEnd(), all[2:4]...))
	if cp.durable != 2 {
		t.Fatalf("durable %d before the save, want 2", cp.durable)
	}
	// Crash: the second batch was counted in memory only. The pointer is at
	// most at the save (durable 2); the restart re-reads from 0.
	c = openCountT(t, path, match, &eoCheckpoint{})
	if got := counts(c); !maps.Equal(got, map[string]uint64{"a": 1, "b": 1}) {
		t.Fatalf("counts after the restart %v, want the saved ones", got)
	}
	c.ProcessBatch(context.Background(), grouptest.Batch(3, 0, all...))
	want := map[string]uint64{"a": 3, "b": 2, "c": 1}
	if got := counts(c); !maps.Equal(got, want) {
		t.Fatalf("counts %v, want %v", got, want)
	}
	// A replayed line (no position) is counted although its position is
	// covered.
	replay := grouptest.Batch(3, 0, "k=c")
	replay.Positioned = false
	c.ProcessBatch(context.Background(), replay)
	if got := counts(c)["c"]; got != 2 {
		t.Fatalf("replayed line not counted: c=%d", got)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	var st CountState
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	if st.Feeds["app"].Epoch != "0000000000000003" || st.Feeds["app"].Position != grouptest.Batch(3, 0, all...).LastEnd() {
		t.Fatalf("saved applied position %+v", st.Feeds)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("temp file left: %v", err)
	}
}

// TestCountHoldsTheAckPoint: in a group, the count's lines are dispatched at
// once but the queue's ack point waits for the save.
func TestCountHoldsTheAckPoint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "counter.json")
	r := grouptest.New(t, processor.GroupConfig{Name: "counter", Retry: grouptest.FastRetry(1)})
	c := openCountT(t, path, "", r.G) // interval: an hour
	r.G.SetBatchProcessor(c)
	r.Run()
	r.Publish("a", "b")
	deadline := time.Now().Add(10 * time.Second)
	for r.Q.Dispatched() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("not dispatched")
		}
		time.Sleep(time.Millisecond)
	}
	if r.Q.AckPoint() != 0 {
		t.Fatalf("ack point %d before the save, want 0", r.Q.AckPoint())
	}
	r.Cancel()
	<-r.G.Done()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if r.Q.AckPoint() != 2 {
		t.Fatalf("ack point %d after the save, want 2", r.Q.AckPoint())
	}
}

// TestCountSkipsWholeAppliedBatch: a batch the save covers entirely changes
// nothing and moves the durable mark at once (no save needed).
func TestCountSkipsWholeAppliedBatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "counter.json")
	cp := &eoCheckpoint{}
	c := openCountT(t, path, "", cp)
	b := grouptest.Batch(1, 0, "x", "y")
	cp.mark = 2
	c.ProcessBatch(context.Background(), b)
	c.Flush(context.Background())
	cp2 := &eoCheckpoint{mark: 2}
	c = openCountT(t, path, "", cp2)
	c.ProcessBatch(context.Background(), b)
	if cp2.durable != 2 {
		t.Fatalf("durable %d after an applied batch, want 2", cp2.durable)
	}
	if _, due := c.FlushDue(); due {
		t.Fatal("a save is due after a batch that changed nothing")
	}
}

var _ processor.BatchProcessor = (*Count)(nil)
var _ processor.Flusher = (*Count)(nil)

// A glob feed's files interleave: re-deliveries are skipped per epoch,
// whatever epoch was applied last (DESIGN §10 "Sinks and streams").
func TestCountPerEpoch(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "counter.json")
	open := func() *Count {
		c, err := OpenCount(CountConfig{Name: "counter", Path: path, Checkpoint: &eoCheckpoint{}, Glob: map[string]bool{"app": true}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := open()
	a, b := grouptest.Batch(1, 0, "x", "y"), grouptest.Batch(2, 0, "x")
	c.ProcessBatch(context.Background(), a)
	c.ProcessBatch(context.Background(), b)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c = open()
	// Re-delivered in another order, then a new line of epoch 1.
	c.ProcessBatch(context.Background(), b)
	c.ProcessBatch(context.Background(), a)
	c.ProcessBatch(context.Background(), grouptest.Batch(1, a.LastEnd(), "z"))
	if got, want := counts(c), map[string]uint64{"x": 2, "y": 1, "z": 1}; !maps.Equal(got, want) {
		t.Fatalf("counts %v, want %v", got, want)
	}
}
