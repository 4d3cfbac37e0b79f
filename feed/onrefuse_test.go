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
