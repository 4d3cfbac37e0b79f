package feed

import "testing"

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
