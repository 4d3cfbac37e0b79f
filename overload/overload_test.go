package overload

import (
	"testing"
	"time"
)

// waiter counts the waits a gate asks for and answers with room.
type waiter struct {
	calls int
	room  bool
	last  time.Duration
}

func (w *waiter) wait(deadline time.Time) bool {
	w.calls++
	w.last = time.Until(deadline)
	return w.room
}

func TestGateDropAfterSpinWaitsOncePerFullEpisode(t *testing.T) {
	g := Gate{Policy: Policy{Kind: DropAfterSpin, Spin: time.Hour}}
	var w waiter
	steps := []struct {
		room  bool
		want  Decision
		waits int
	}{
		{true, Accept, 0},
		{false, Drop, 1}, // full: spin once, still full: drop
		{false, Drop, 1}, // same episode: drop at once
		{false, Drop, 1},
		{true, Accept, 1}, // room ends the episode
		{false, Drop, 2},  // a new episode spins again
	}
	for i, s := range steps {
		if got := g.Admit(s.room, w.wait); got != s.want || w.calls != s.waits {
			t.Fatalf("step %d: Admit(room=%v) = %v after %d waits, want %v after %d", i, s.room, got, w.calls, s.want, s.waits)
		}
	}
	if w.last < 59*time.Minute {
		t.Fatalf("spin deadline %v ahead, want the spin bound (1h)", w.last)
	}
}

func TestGateDropAfterSpinAcceptsWhenRoomFreesDuringSpin(t *testing.T) {
	g := Gate{Policy: Policy{Kind: DropAfterSpin, Spin: time.Millisecond}}
	w := waiter{room: true}
	if d := g.Admit(false, w.wait); d != Accept {
		t.Fatalf("room freed during the spin: %v, want Accept", d)
	}
	w.room = false
	if d := g.Admit(false, w.wait); d != Drop || w.calls != 2 {
		t.Fatalf("no drop episode had started: %v after %d waits, want Drop after a second spin", d, w.calls)
	}
}

func TestGateBlockWithDeadlineWaitsEveryBatch(t *testing.T) {
	g := Gate{Policy: Policy{Kind: BlockWithDeadline, Deadline: time.Minute}}
	var w waiter
	for i := 1; i <= 3; i++ {
		if d := g.Admit(false, w.wait); d != Skip || w.calls != i {
			t.Fatalf("batch %d: %v after %d waits, want Skip after %d", i, d, w.calls, i)
		}
	}
	if w.last < 59*time.Second {
		t.Fatalf("deadline %v ahead, want about 1m", w.last)
	}
	w.room = true
	if d := g.Admit(false, w.wait); d != Accept {
		t.Fatalf("room within the deadline: %v, want Accept", d)
	}
}

func TestGatePauseRefusesWithoutWaiting(t *testing.T) {
	g := Gate{Policy: Policy{Kind: Pause}}
	var w waiter
	if d := g.Admit(false, w.wait); d != Refuse || w.calls != 0 {
		t.Fatalf("PAUSE on a full queue: %v after %d waits, want Refuse without waiting", d, w.calls)
	}
	if d := g.Admit(true, w.wait); d != Accept {
		t.Fatalf("PAUSE with room: %v", d)
	}
}

func TestParseAndBestEffort(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Kind
		best bool
	}{
		{"", Pause, false},
		{"PAUSE", Pause, false},
		{"DROP_AFTER_SPIN", DropAfterSpin, true},
		{"BLOCK_WITH_DEADLINE", BlockWithDeadline, false},
	} {
		k, err := Parse(c.in)
		if err != nil || k != c.want || (Policy{Kind: k}).BestEffort() != c.best {
			t.Fatalf("Parse(%q) = %v, %v; best-effort %v", c.in, k, err, (Policy{Kind: k}).BestEffort())
		}
		if c.in != "" && k.String() != c.in {
			t.Fatalf("%v.String() = %q", k, k.String())
		}
	}
	if _, err := Parse("pause"); err == nil {
		t.Fatal("Parse accepted a lowercase policy")
	}
}
