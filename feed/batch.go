package feed

import (
	"sync"
	"sync/atomic"
)

// Batch is the unit that travels from a source to its subscribers: the
// complete lines of one read, in file order, with the file position just after
// each line's terminator.
//
// Ownership. The source fills a Batch it got from NewBatch and hands it to
// Publisher.TryPublish. Until TryPublish returns true the source owns it and
// may offer it again. From then on the batch is read-only: every queue that
// received it holds one reference, and the group that reads it calls Release
// exactly once when it no longer looks at Lines. The last Release returns the
// batch (and its buffer) to the pool, so nobody may keep a Line slice past
// Release: copy what you keep.
type Batch struct {
	Feed       string
	Path       string
	Epoch      uint64
	Positioned bool     // false for lines delivered without a position (downgraded, replayed)
	FirstSeq   uint64   // sequence of Lines[0]; the rest follow one by one
	Lines      [][]byte // raw line bytes without terminator; views into the batch buffer
	Ends       []int64  // Ends[i]: byte offset just after line i's terminator

	buf  []byte
	refs atomic.Int32
}

var batchPool = sync.Pool{New: func() any { return new(Batch) }}

// NewBatch returns an empty batch from the pool.
func NewBatch() *Batch {
	b := batchPool.Get().(*Batch)
	b.Lines = b.Lines[:0]
	b.Ends = b.Ends[:0]
	b.buf = b.buf[:0]
	b.Positioned = true
	b.FirstSeq = 0
	b.refs.Store(0)
	return b
}

// Len is the number of lines.
func (b *Batch) Len() int { return len(b.Lines) }

// Bytes is the number of line bytes (terminators excluded).
func (b *Batch) Bytes() int { return len(b.buf) }

// SetLines copies data (a span of the file holding the lines and their
// terminators) into the batch's own buffer and records each line as
// data[starts[i]:starts[i]+lens[i]] ending at file position ends[i]. It is the
// only copy a line's bytes make on their way to the subscribers.
func (b *Batch) SetLines(data []byte, starts, lens []int32, ends []int64) {
	n := 0
	for _, l := range lens {
		n += int(l)
	}
	if cap(b.buf) < n {
		b.buf = make([]byte, 0, n+n/4)
	}
	b.buf = b.buf[:0]
	b.Lines = b.Lines[:0]
	for i, s := range starts {
		at := len(b.buf)
		b.buf = append(b.buf, data[s:s+lens[i]]...)
		b.Lines = append(b.Lines, b.buf[at:len(b.buf):len(b.buf)])
	}
	b.Ends = append(b.Ends[:0], ends...)
}

// AppendLine adds one line (copied) ending at position end. For tests and
// replays; the source uses SetLines.
func (b *Batch) AppendLine(line []byte, end int64) {
	if cap(b.buf)-len(b.buf) < len(line) {
		// Growing would move earlier lines: rebuild the views.
		nb := make([]byte, len(b.buf), 2*cap(b.buf)+len(line))
		copy(nb, b.buf)
		off := 0
		for i, l := range b.Lines {
			b.Lines[i] = nb[off : off+len(l) : off+len(l)]
			off += len(l)
		}
		b.buf = nb
	}
	at := len(b.buf)
	b.buf = append(b.buf, line...)
	b.Lines = append(b.Lines, b.buf[at:len(b.buf):len(b.buf)])
	b.Ends = append(b.Ends, end)
}

// LastEnd is the position after the last line (0 for an empty batch).
func (b *Batch) LastEnd() int64 {
	if len(b.Ends) == 0 {
		return 0
	}
	return b.Ends[len(b.Ends)-1]
}

// Retain adds n references; the publisher calls it once per receiving queue.
func (b *Batch) Retain(n int32) { b.refs.Add(n) }

// Release drops one reference; the last one recycles the batch.
func (b *Batch) Release() {
	if b.refs.Add(-1) == 0 {
		if cap(b.buf) > 8<<20 || cap(b.Lines) > 1<<16 {
			return // do not pin outsized buffers in the pool
		}
		batchPool.Put(b)
	}
}

// AlreadyApplied reports whether line i was already applied by a sink whose
// stored state says it applied everything up to (epoch, pos).
func (b *Batch) AlreadyApplied(i int, epoch uint64, pos int64) bool {
	return b.Positioned && epoch == b.Epoch && b.Ends[i] <= pos
}
