package pull

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"tailfeed/internal/grouptest"
	"tailfeed/processor"
)

// checkInvariants checks the bookkeeping under p.mu (see the test).
func (p *Pull) checkInvariants() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	out, ids, held := 0, 0, 0
	inReady := map[*pullEntry]bool{}
	for i, e := range p.ready {
		if int(e.ridx) != i || e.state != pullReady {
			return fmt.Errorf("ready[%d] ridx %d state %d", i, e.ridx, e.state)
		}
		inReady[e] = true
	}
	for i, e := range p.timers {
		if int(e.tidx) != i || e.state != pullDelayed {
			return fmt.Errorf("timers[%d] tidx %d state %d", i, e.tidx, e.state)
		}
	}
	liveSlots := map[*pullEntry]int{}
	for _, s := range p.outq[p.outHead:] {
		if s.e != nil && s.live() {
			liveSlots[s.e]++
		}
	}
	inFresh := map[*pullEntry]bool{}
	for _, e := range p.fresh[p.freshHead:] {
		inFresh[e] = true
	}
	all := append([]*pullEntry(nil), p.order[p.head:]...)
	for _, e := range p.replaying {
		all = append(all, e)
	}
	for k, e := range all {
		if k == 0 && p.head < len(p.order) && e.state == pullDone {
			return fmt.Errorf("order head is done")
		}
		if e.state == pullOut {
			out++
			if liveSlots[e] != 1 {
				return fmt.Errorf("out entry with %d live slots", liveSlots[e])
			}
		}
		if e.slot {
			// A timed-out delivery waiting its backoff step keeps its slot.
			out++
			if e.state != pullDelayed {
				return fmt.Errorf("entry in state %d keeps an in-flight slot", e.state)
			}
		}
		if e.hasID {
			ids++
			if p.byID.get(&e.id) != e {
				return fmt.Errorf("entry with id not found")
			}
		}
		if e.held {
			held++
		}
		if e.state == pullReady && !inReady[e] && !inFresh[e] {
			return fmt.Errorf("ready entry nowhere")
		}
		if e.state == pullDone && e.hasID {
			return fmt.Errorf("done entry with id")
		}
	}
	if k := p.head; k < len(p.order) && p.durable >= p.order[k].through {
		return fmt.Errorf("durable %d at/after first undone through %d", p.durable, p.order[k].through)
	}
	ub := 0
	for _, e := range p.order[p.head:] {
		if e.state != pullDone {
			ub += len(e.line)
		}
	}
	if ub != p.ubytes {
		return fmt.Errorf("bytes of the lines not done %d, counted %d", ub, p.ubytes)
	}
	if out != p.out || ids != p.byID.n || held != p.held {
		return fmt.Errorf("out %d/%d ids %d/%d held %d/%d", out, p.out, ids, p.byID.n, held, p.held)
	}
	return nil
}

// TestPullBookkeepingInvariants (review of issue 14's fast path):
// random pulls, ACKs, NACKs, ACK timeouts, late ACKs, releases, and (with
// deadLetter) replays and purges on a real group; after every step the
// FIFOs, heaps, id table and counters agree: out (InFlight) is the number
// of deliveries out with exactly one live deadline slot each, plus the
// timed-out ones waiting their backoff step (they keep their slot), the id table
// holds exactly the entries with a valid id and finds each, held counts the
// held lines, no done entry keeps an id, and the durable mark is before the
// first line not done. Passes.
func TestPullBookkeepingInvariants(t *testing.T) {
	for _, dl := range []bool{false, true} {
		cfg := processor.GroupConfig{Retry: processor.Retry{Initial: 5 * time.Millisecond, Max: 10 * time.Millisecond, Attempts: 3}}
		if dl {
			cfg.OnFailure = processor.DeadLetter
		}
		r := newPullRig(t, cfg, 30*time.Millisecond, 50)
		rng := rand.New(rand.NewPCG(11, 12))
		const total = 3000
		published := 0
		var held []Event
		acked := map[uint64]bool{}
		for step := 0; step < 2500 && len(acked) < total; step++ {
			if published < total && rng.IntN(3) == 0 {
				n := min(1+rng.IntN(40), total-published)
				if r.tryPublish(grouptest.Lines("s", published, n)) {
					published += n
				}
			}
			evs := r.p.Pull(context.Background(), 1+rng.IntN(30), time.Duration(rng.IntN(3))*time.Millisecond, false)
			evs = append(evs, held...)
			held = nil
			var ack, nack []string
			for _, ev := range evs {
				switch x := rng.IntN(10); {
				case x < 5:
					ack = append(ack, ev.DeliveryID)
				case x < 7:
					nack = append(nack, ev.DeliveryID)
				case x < 8:
					held = append(held, ev)
				}
			}
			r.p.NackAll(nack)
			n, _ := r.p.AckAll(ack)
			_ = n
			if rng.IntN(50) == 0 {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
				r.G.Release(ctx)
				cancel()
			}
			if dl && rng.IntN(10) == 0 {
				r.p.QueueReplay(1 + rng.IntN(5))
			}
			if dl && rng.IntN(60) == 0 {
				r.p.PurgeDeadLetters(1 + rng.IntN(3))
			}
			if rng.IntN(20) == 0 {
				time.Sleep(time.Duration(rng.IntN(40)) * time.Millisecond)
			}
			if err := r.p.checkInvariants(); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
		}
	}
}
