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
		Skip: []feed.Mark{{Epoch: 42, Position: 6, OK: true}}}) // through l2 (ends 3, 6, 9, ...)
	r.publish("l1", "l2", "l3")
	r.publish("l4", "l5")
	r.waitDispatched(5)
	if got := strings.Join(p.lines(), ","); got != "l3,l4,l5" {
		t.Fatalf("processed %s, want l3,l4,l5", got)
	}

	q := &lineProc{}
	r = startGroup(t, processor.GroupConfig{Processor: q, Retry: quickRetry(3),
		Skip: []feed.Mark{{Epoch: 7, Position: 1 << 20, OK: true}}}) // another epoch than the rig's 42
	r.publish("n1", "n2")
	r.waitDispatched(2)
	if got := strings.Join(q.lines(), ","); got != "n1,n2" {
		t.Fatalf("processed %s under another epoch, want n1,n2", got)
	}
}

// A glob feed restarted by a reload re-reads each stream from its own
// pointer, and the streams' batches interleave: Skip holds one mark per
// epoch, and each epoch's skip ends only at a line of that epoch past its
// mark — a batch of another epoch ends nothing (with one mark for the
// whole feed, the lines of the other streams were delivered again).
func TestGroupSkipIsPerEpochAcrossInterleavedStreams(t *testing.T) {
	p := &lineProc{}
	r := startGroup(t, processor.GroupConfig{Processor: p, Retry: quickRetry(3),
		Skip: []feed.Mark{{Epoch: 1, Position: 4, OK: true}, {Epoch: 2, Position: 4, OK: true}}})
	publish := func(epoch uint64, from int64, lines ...string) {
		t.Helper()
		b := feed.NewBatch()
		b.Feed, b.Path, b.Epoch = "app", "/in/x.log", epoch
		pos := from
		for _, l := range lines {
			pos += int64(len(l)) + 1
			b.AppendLine([]byte(l), pos)
		}
		if !r.pub.TryPublish(b) {
			t.Fatalf("TryPublish refused (%s)", r.pub.PauseReason())
		}
	}
	publish(1, 0, "a", "b") // one.log: finished before the restart
	publish(2, 0, "x", "y") // two.log: likewise
	publish(1, 4, "c")      // one.log: new
	publish(2, 4, "z")      // two.log: new
	publish(3, 0, "n")      // a stream without a mark
	r.waitDispatched(7)
	if got := strings.Join(p.lines(), ","); got != "c,z,n" {
		t.Fatalf("processed %s, want c,z,n", got)
	}
}
