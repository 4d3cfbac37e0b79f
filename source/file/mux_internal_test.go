package file

import (
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/overload"
)

// The feed's wake-ups (a batch left a queue, a group finished work) wake
// only the streams they concern: one whose batch was acknowledged, one
// whose last publish was refused. A stream read to its end with nothing to
// commit sleeps through the others' traffic: the mux used to wake every
// open stream at each of them, and with hundreds of streams open (bench 7a)
// each woke for every batch any of them published, to read its file's end
// again.
func TestMuxWakesOnlyTheStreamsConcerned(t *testing.T) {
	t.Parallel()
	q := feed.NewQueue("q", 4, 1<<20, overload.Policy{Kind: overload.Pause})
	pub := feed.NewPublisher("f", []*feed.Queue{q}, 65536, 4)
	m := newMux(pub)
	defer m.close()
	busy, idle, refused := m.add(), m.add(), m.add()
	batch := func(i int) *feed.Batch {
		b := feed.NewBatch()
		b.AppendLine([]byte("x"), int64(i+1)*2)
		b.Epoch, b.Positioned = 1, true
		return b
	}
	take := func() {
		b := q.TryPop()
		if b == nil {
			t.Fatal("queue empty")
		}
		n := b.Len()
		b.Release()
		q.AddDispatched(uint64(n))
		pub.Poke() // as a group does when it finished work
	}
	for i := range 20 {
		if !busy.TryPublish(batch(i)) {
			t.Fatalf("publish %d refused", i)
		}
		take()
		time.Sleep(2 * time.Millisecond) // the pump runs
	}
	if a := busy.PollAcks(); !a.Moved || a.Position != 40 {
		t.Fatalf("busy stream's acks %+v, want position 40", a)
	}
	select {
	case <-idle.wake:
		t.Fatal("an idle stream was woken by another stream's traffic")
	default:
	}
	// A stream refused for want of room is woken once room frees.
	for i := range 4 {
		if !busy.TryPublish(batch(20 + i)) {
			t.Fatalf("publish %d refused", 20+i)
		}
	}
	if refused.TryPublish(batch(0)) {
		t.Fatal("publish into a full queue accepted")
	}
	select {
	case <-refused.wake:
	default:
	}
	take()
	select {
	case <-refused.wake:
	case <-time.After(2 * time.Second):
		t.Fatal("a refused stream was not woken when room freed")
	}
	select {
	case <-idle.wake:
		t.Fatal("an idle stream was woken by another stream's traffic")
	default:
	}
}
