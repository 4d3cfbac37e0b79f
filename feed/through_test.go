package feed

import (
	"fmt"
	"testing"
)

// Through maps a queue's count of lines to the place in the file of the
// last of them: inside the window from its entries (also a partly
// acknowledged one), below it the last acknowledged place; i < 0 is the
// last line published.
func TestPublisherThroughMapsCountsToPlaces(t *testing.T) {
	var s lineSrc
	a, b := pauseQ("a", 100), pauseQ("b", 100)
	p := NewPublisher("f", []*Queue{a, b}, 100, 100)
	mustPublish(t, p, s.batch(3)) // 1..3
	mustPublish(t, p, s.batch(4)) // 4..7
	want := func(m Mark, pos int64) {
		t.Helper()
		if !m.OK || m.Epoch != 7 || m.Position != pos {
			t.Fatalf("mark %+v, want epoch 7 position %d", m, pos)
		}
	}
	if m := p.Through(0, 0); m.OK {
		t.Fatalf("count 0 gave %+v, want none", m)
	}
	want(p.Through(-1, 0), s.end(7))
	want(p.Through(0, 2), s.end(2))
	want(p.Through(1, 5), s.end(5))
	// a and b finish 5 lines: 1..5 acknowledged, the second entry in part.
	consume(a)
	consume(b)
	a.dispatched.Store(5)
	b.dispatched.Store(5)
	p.PollAcks()
	want(p.Through(0, 3), s.end(5)) // below the window: the last acknowledged
	want(p.Through(0, 6), s.end(6))
	want(p.Through(1, 7), s.end(7))
}

// Marks is Through per epoch: a glob feed's streams interleave in the
// window, and each stream's last line given to a queue (or published) is
// its own mark; lines acknowledged and gone from the window keep theirs.
func TestPublisherMarksPerEpoch(t *testing.T) {
	a, b := pauseQ("a", 100), pauseQ("b", 100)
	p := NewPublisher("f", []*Queue{a, b}, 100, 100)
	pub := func(epoch uint64, ends ...int64) {
		t.Helper()
		bt := NewBatch()
		bt.Feed, bt.Epoch = "f", epoch
		for _, e := range ends {
			bt.AppendLine([]byte("l"), e)
		}
		mustPublish(t, p, bt)
	}
	pub(1, 2, 4) // 1, 2
	pub(2, 2, 4) // 3, 4
	pub(1, 6)    // 5
	pub(2, 6)    // 6
	str := func(ms []Mark) string {
		s := ""
		for _, m := range ms {
			s += fmt.Sprintf("%d:%d ", m.Epoch, m.Position)
		}
		return s
	}
	if got := str(p.Marks(-1, 0)); got != "1:6 2:6 " {
		t.Fatalf("all published: %s", got)
	}
	if got := str(p.Marks(0, 4)); got != "1:4 2:4 " {
		t.Fatalf("queue a through 4 lines: %s", got)
	}
	if got := str(p.Marks(1, 3)); got != "1:4 2:2 " {
		t.Fatalf("queue b through 3 lines: %s", got)
	}
	if m := p.Marks(0, 0); len(m) != 0 {
		t.Fatalf("count 0: %v", m)
	}
	// Both finish 5 lines: the first three entries leave the window.
	consume(a)
	consume(b)
	a.dispatched.Store(5)
	b.dispatched.Store(5)
	p.PollAcks()
	if got := str(p.Marks(0, 5)); got != "1:6 2:4 " {
		t.Fatalf("queue a through 5 lines, 5 acknowledged: %s", got)
	}
	if got := str(p.Marks(1, 6)); got != "1:6 2:6 " {
		t.Fatalf("queue b through 6 lines: %s", got)
	}
}
