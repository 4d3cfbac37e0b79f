package feed

import (
	"testing"
	"time"

	"tailfeed/overload"
)

// A batch refused to a BLOCK_WITH_DEADLINE queue is recorded through its
// OnRefuse with the epoch, the end of the line before the batch and the
// end of its last line — before the publish returns, so before the pointer
// can pass the lines (audit 9A: a refused tail, left out of the sink's
// done-through mark, was read again by every subscriber at the next start).
// An accepted batch records nothing; neither does an unpositioned one.
func TestRefusedBatchRecordedThroughOnRefuse(t *testing.T) {
	a := pauseQ("a", 100)
	blk := NewQueue("blk", 2, 1<<20, overload.Policy{Kind: overload.BlockWithDeadline, Deadline: 5 * time.Millisecond})
	type rng struct {
		epoch          uint64
		after, through int64
	}
	var got []rng
	blk.SetOnRefuse(func(e uint64, after, through int64) { got = append(got, rng{e, after, through}) })
	p := NewPublisher("f", []*Queue{a, blk}, 1000, 10)
	var src lineSrc
	positioned := func(n int) *Batch {
		start := src.pos
		b := src.batch(n)
		b.Positioned, b.Start = true, start
		return b
	}
	mustPublish(t, p, positioned(2))
	if len(got) != 0 {
		t.Fatalf("accepted batch recorded: %+v", got)
	}
	mustPublish(t, p, positioned(3)) // blk full: refused
	want := rng{7, src.end(2), src.end(5)}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("OnRefuse calls %+v, want [%+v]", got, want)
	}
	b := src.batch(1) // not positioned: nothing to record
	b.Start = -1
	mustPublish(t, p, b)
	if blk.Counters.Refused.Load() != 4 || len(got) != 1 {
		t.Fatalf("refused %d, OnRefuse calls %+v; want 4 refused, one call", blk.Counters.Refused.Load(), got)
	}
}

// A batch given to a queue is reported through its OnAccept from the end of
// the last line its group skips (SetPublishSkip), and not at all when the
// group skips every line of it (review 27a RA: a range given up for the
// sink that the lines it is given again overlap is dropped).
func TestAcceptedBatchReportedThroughOnAccept(t *testing.T) {
	q := pauseQ("q", 100)
	type rng struct {
		epoch          uint64
		after, through int64
	}
	var got []rng
	q.SetOnAccept(func(e uint64, after, through int64) { got = append(got, rng{e, after, through}) })
	var src lineSrc
	positioned := func(n int) *Batch {
		start := src.pos
		b := src.batch(n)
		b.Positioned, b.Start = true, start
		return b
	}
	first := positioned(3)
	q.SetPublishSkip([]Mark{{Epoch: 7, Position: src.end(2), OK: true}})
	p := NewPublisher("f", []*Queue{q}, 1000, 10)
	mustPublish(t, p, first)
	want := []rng{{7, src.end(2), src.end(3)}}
	if len(got) != 1 || got[0] != want[0] {
		t.Fatalf("OnAccept calls %+v, want %+v (from the last skipped line's end)", got, want)
	}
	q2 := pauseQ("q2", 100)
	q2.SetOnAccept(func(e uint64, after, through int64) { got = append(got, rng{e, after, through}) })
	var src2 lineSrc
	b := src2.batch(2)
	b.Positioned, b.Start = true, 0
	q2.SetPublishSkip([]Mark{{Epoch: 7, Position: src2.end(2), OK: true}})
	mustPublish(t, NewPublisher("f", []*Queue{q2}, 1000, 10), b)
	if len(got) != 1 {
		t.Fatalf("a batch its group skips whole was reported: %+v", got)
	}
}
