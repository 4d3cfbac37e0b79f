package pull

import (
	"math/rand/v2"
	"testing"
)

// TestIDTableAgreesWithAMap: random puts and deletions (clustered keys too,
// so runs wrap around the table and deletions shift them back) find
// exactly the entries a map holds.
func TestIDTableAgreesWithAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, clustered := range []bool{false, true} {
		var tab idTable
		ref := map[deliveryKey]*pullEntry{}
		var live []*pullEntry
		most := 5000
		if clustered {
			most = 300
		}
		for step := range 40000 {
			if len(live) == 0 || (rng.IntN(100) < 55 && len(live) < most) {
				e := &pullEntry{}
				for i := range e.id {
					e.id[i] = byte(rng.Uint32())
				}
				if clustered { // few homes: long runs that wrap
					e.id[0], e.id[1] = byte(rng.IntN(4))*16+0xf0, 0
					for i := 2; i < 8; i++ {
						e.id[i] = 0
					}
				}
				if ref[e.id] != nil {
					continue
				}
				tab.put(e)
				ref[e.id] = e
				live = append(live, e)
			} else {
				k := rng.IntN(len(live))
				e := live[k]
				live[k] = live[len(live)-1]
				live = live[:len(live)-1]
				if step%2 == 0 {
					tab.del(e)
				} else if got := tab.take(&e.id); got != e {
					t.Fatalf("step %d: take(%x) = %p, want %p", step, e.id, got, e)
				}
				delete(ref, e.id)
				tab.del(e) // a second deletion changes nothing
				if tab.take(&e.id) != nil {
					t.Fatalf("step %d: take found a removed entry", step)
				}
			}
			if tab.n != len(ref) {
				t.Fatalf("step %d: table holds %d, map %d", step, tab.n, len(ref))
			}
			if step%997 == 0 {
				for k, e := range ref {
					if got := tab.get(&k); got != e {
						t.Fatalf("step %d: get(%x) = %p, want %p", step, k, got, e)
					}
				}
				var missing deliveryKey
				missing[15] = byte(step)
				if ref[missing] == nil && tab.get(&missing) != nil {
					t.Fatalf("step %d: get of an unknown key found an entry", step)
				}
			}
		}
	}
}
