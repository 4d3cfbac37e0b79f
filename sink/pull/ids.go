package pull

import "encoding/binary"

// idTable finds the entry a deliveryId names: a hash table without a hash
// function. Its key, the id's random part, is uniformly random and
// unknown to clients, so its first 8 bytes pick the slot directly; open
// addressing with linear probing, at most half full, and backward-shift
// deletion (no tombstones: with an id per delivery the table sees as many
// deletions as insertions, which made Go's map probe long chains).
type idTable struct {
	slots []idSlot
	n     int
}

type idSlot struct {
	h uint64 // the first 8 bytes of the key (0 with e nil)
	e *pullEntry
}

func keyHash(k *deliveryKey) uint64 { return binary.LittleEndian.Uint64(k[:8]) }

// get returns the entry whose id is k (nil: none).
func (t *idTable) get(k *deliveryKey) *pullEntry {
	if t.n == 0 {
		return nil
	}
	h := keyHash(k)
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.e == nil {
			return nil
		}
		if s.h == h && s.e.id == *k {
			return s.e
		}
	}
}

// put adds e under e.id (not in the table).
func (t *idTable) put(e *pullEntry) {
	if 2*(t.n+1) > len(t.slots) {
		t.resize(max(64, 2*len(t.slots)))
	}
	t.insert(keyHash(&e.id), e)
	t.n++
}

func (t *idTable) insert(h uint64, e *pullEntry) {
	mask := uint64(len(t.slots) - 1)
	i := h & mask
	for t.slots[i].e != nil {
		i = (i + 1) & mask
	}
	t.slots[i] = idSlot{h, e}
}

func (t *idTable) resize(size int) {
	old := t.slots
	t.slots = make([]idSlot, size)
	for _, s := range old {
		if s.e != nil {
			t.insert(s.h, s.e)
		}
	}
}

// take removes and returns the entry whose id is k (nil: none).
func (t *idTable) take(k *deliveryKey) *pullEntry {
	if t.n == 0 {
		return nil
	}
	h := keyHash(k)
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.e == nil {
			return nil
		}
		if s.h == h && s.e.id == *k {
			e := s.e
			t.remove(i)
			return e
		}
	}
}

// del removes e (under e.id; a no-op when it is not there).
func (t *idTable) del(e *pullEntry) {
	if t.n == 0 {
		return
	}
	h := keyHash(&e.id)
	mask := uint64(len(t.slots) - 1)
	i := h & mask
	for t.slots[i].e != e {
		if t.slots[i].e == nil {
			return
		}
		i = (i + 1) & mask
	}
	t.remove(i)
}

// remove empties slot i.
func (t *idTable) remove(i uint64) {
	mask := uint64(len(t.slots) - 1)
	// Backward shift: move up every later slot of the run that may sit in
	// the hole (its home is not cyclically in (i, j]).
	for j := (i + 1) & mask; t.slots[j].e != nil; j = (j + 1) & mask {
		home := t.slots[j].h & mask
		if (j-home)&mask >= (j-i)&mask {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = idSlot{}
	t.n--
	if t.n == 0 && len(t.slots) > 1<<16 {
		t.slots = nil // idle after a burst: give the memory back
	}
}
