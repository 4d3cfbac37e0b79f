package feed

// window is the acknowledgement window: one entry per published batch, in
// sequence order, each remembering how far every queue's producer position
// had reached before and after it. A head entry is acknowledged (fully or in
// part) once every pointer-holding queue that received it has its ack point
// past its lines. It is owned by the publisher (the source goroutine).
type window struct {
	nq      int
	entries []entry  // ring
	bounds  []uint64 // ring of 2*nq per entry: start and end producer position per queue
	head, n int

	ends []int64 // ring of line end positions indexed by sequence % len
	// pending is the number of lines published and not yet acknowledged.
	pending int

	// acked is, per epoch, the end of its last line acknowledged (and
	// gone from the window): what a stop that re-reads from per-stream
	// pointers must know of each epoch (Publisher.Marks). Two generations
	// bound it: once cur holds ackedKeep epochs it becomes old and a new
	// cur starts, so it holds the epochs acknowledged lately, not every
	// one a long-running glob ever read.
	acked, ackedOld map[uint64]int64
}

// ackedKeep bounds each generation of window.acked.
const ackedKeep = 1024

// noteAcked records the end of epoch's last acknowledged line.
func (w *window) noteAcked(epoch uint64, pos int64) {
	if w.acked == nil {
		w.acked = map[uint64]int64{}
	}
	if _, ok := w.acked[epoch]; !ok && len(w.acked) >= ackedKeep {
		w.ackedOld, w.acked = w.acked, map[uint64]int64{}
	}
	w.acked[epoch] = pos
}

type entry struct {
	firstSeq   uint64
	lines      int
	epoch      uint64
	positioned bool
}

func newWindow(nq, maxLines int) *window {
	w := &window{nq: nq}
	w.grow(64)
	w.ends = make([]int64, maxLines)
	return w
}

func (w *window) grow(c int) {
	ne := make([]entry, c)
	nb := make([]uint64, c*2*w.nq)
	for i := 0; i < w.n; i++ {
		j := (w.head + i) % len(w.entries)
		ne[i] = w.entries[j]
		copy(nb[i*2*w.nq:(i+1)*2*w.nq], w.bounds[j*2*w.nq:(j+1)*2*w.nq])
	}
	w.entries, w.bounds, w.head = ne, nb, 0
}

// growEnds makes the ring of end positions hold c lines (past the window
// only for awaited epochs: Publisher.Want).
func (w *window) growEnds(c int) {
	ne := make([]int64, c)
	for i := 0; i < w.n; i++ {
		e := w.entries[(w.head+i)%len(w.entries)]
		for k := 0; k < e.lines; k++ {
			seq := e.firstSeq + uint64(k)
			ne[seq%uint64(c)] = w.ends[seq%uint64(len(w.ends))]
		}
	}
	w.ends = ne
}

// push records a published batch; start/end give, per queue, its producer
// position before and after the batch (equal when the queue did not get it).
func (w *window) push(b *Batch, start, end []uint64) {
	if w.n == len(w.entries) {
		w.grow(2 * len(w.entries))
	}
	if w.pending+b.Len() > len(w.ends) {
		w.growEnds(2 * (w.pending + b.Len()))
	}
	i := (w.head + w.n) % len(w.entries)
	w.entries[i] = entry{firstSeq: b.FirstSeq, lines: b.Len(), epoch: b.Epoch, positioned: b.Positioned}
	bb := w.bounds[i*2*w.nq : (i+1)*2*w.nq]
	copy(bb[:w.nq], start)
	copy(bb[w.nq:], end)
	w.n++
	w.pending += b.Len()
	for k, e := range b.Ends {
		w.ends[(b.FirstSeq+uint64(k))%uint64(len(w.ends))] = e
	}
}

// ack is the result of a poll: the highest sequence every holding queue has
// finished, and the position to commit (if any line with a position was
// acknowledged in this poll).
type ack struct {
	seq        uint64
	pos        int64
	epoch      uint64
	positioned bool
	moved      bool
}

// poll acknowledges head entries given each queue's ack point (ackPts[q];
// holds[q] false for queues that do not hold the pointer).
func (w *window) poll(ackPts []uint64, holds []bool) ack {
	var a ack
	for w.n > 0 {
		e := &w.entries[w.head]
		bb := w.bounds[w.head*2*w.nq : (w.head+1)*2*w.nq]
		k := e.lines
		for q := 0; q < w.nq; q++ {
			if !holds[q] {
				continue
			}
			start, end := bb[q], bb[w.nq+q]
			if end == start {
				continue // this queue did not get the batch
			}
			done := 0
			if ackPts[q] > start {
				done = int(min(ackPts[q]-start, end-start))
			}
			k = min(k, done)
		}
		if k == 0 {
			break
		}
		last := e.firstSeq + uint64(k) - 1
		a.seq, a.moved = last, true
		if e.positioned {
			if a.positioned && a.epoch != e.epoch {
				w.noteAcked(a.epoch, a.pos) // the epoch before this one in the poll
			}
			a.pos = w.ends[last%uint64(len(w.ends))]
			a.epoch, a.positioned = e.epoch, true
		}
		w.pending -= k
		if k < e.lines {
			// Partly acknowledged: consume its acknowledged lines and stop here.
			e.firstSeq += uint64(k)
			e.lines -= k
			for q := 0; q < w.nq; q++ {
				if bb[w.nq+q] > bb[q] {
					bb[q] += uint64(k)
				}
			}
			break
		}
		w.head = (w.head + 1) % len(w.entries)
		w.n--
	}
	if a.positioned {
		w.noteAcked(a.epoch, a.pos)
	}
	return a
}
