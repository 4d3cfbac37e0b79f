package processor_test

import (
	"strings"
	"testing"

	"tailfeed/feed"
	"tailfeed/processor"
)

// Skip (a feed restarted by a reload) finishes unseen the lines of its
// epoch at or before its position, and only those: the rest of the batch
// and later batches are processed, and a re-read under another epoch
// (the file was truncated) skips nothing.
func TestGroupSkipIsByEpochAndPosition(t *testing.T) {
	p := &lineProc{}
	r := startGroup(t, processor.GroupConfig{Processor: p, Retry: quickRetry(3),
		Skip: feed.Mark{Epoch: 42, Position: 6, OK: true}}) // through l2 (ends 3, 6, 9, ...)
	r.publish("l1", "l2", "l3")
	r.publish("l4", "l5")
	r.waitDispatched(5)
	if got := strings.Join(p.lines(), ","); got != "l3,l4,l5" {
		t.Fatalf("processed %s, want l3,l4,l5", got)
	}

	q := &lineProc{}
	r = startGroup(t, processor.GroupConfig{Processor: q, Retry: quickRetry(3),
		Skip: feed.Mark{Epoch: 7, Position: 1 << 20, OK: true}}) // another epoch than the rig's 42
	r.publish("n1", "n2")
	r.waitDispatched(2)
	if got := strings.Join(q.lines(), ","); got != "n1,n2" {
		t.Fatalf("processed %s under another epoch, want n1,n2", got)
	}
}
