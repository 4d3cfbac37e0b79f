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
// Release: copy what you keep. The same holds for the slice Joined returns
// (it is the batch's buffer) and for a view made with Share.
type Batch struct {
	Feed       string
	Path       string
	Epoch      uint64
	Positioned bool     // false for lines delivered without a position (downgraded, replayed)
	FirstSeq   uint64   // sequence of Lines[0]; the rest follow one by one
	Lines      [][]byte // raw line bytes without terminator; views into the batch buffer
	Ends       []int64  // Ends[i]: byte offset just after line i's terminator
	// Through, when > 0, is the position just after the last line of the
	// feed's batch that this view finishes: a group's view past lines its
	// filters took out (or an empty one, for lines filtered, dead-lettered
	// or released) sets it, so that a stored record advances over them
	// (DESIGN §11 done-through). 0: LastEnd. See Done.
	Through int64
	// Start is the file position where Lines[0] begins (the end of the
	// line before it), set by the source for positioned lines; -1: not
	// known. A release of the batch's first lines is recorded from it.
	Start int64

	buf    []byte // every line followed by '\n'; Lines are views into it
	whole  int    // lines in buf (Joined holds only while the batch shows them all)
	refs   atomic.Int32
	origin *Batch // the batch a Share view shows (nil: b is not a view)
}

// Placed reports whether Ends are the lines' real byte positions in their
// file: positioned lines, and downgraded ones (DESIGN §4: late lines of an
// old file keep "their real byte position in the old file" under an epoch
// of their own), which the feed published (FirstSeq set). Not a dead-letter
// replay's lines (published by no one). Positioned alone tells whether
// OnComplete and AlreadyApplied may use the position.
func (b *Batch) Placed() bool { return b.Positioned || b.FirstSeq != 0 }

var batchPool = sync.Pool{New: func() any { return new(Batch) }}

// NewBatch returns an empty batch from the pool.
func NewBatch() *Batch {
	b := batchPool.Get().(*Batch)
	b.Lines = b.Lines[:0]
	b.Ends = b.Ends[:0]
	b.buf = b.buf[:0]
	b.whole = 0
	b.Positioned = true
	b.FirstSeq = 0
	b.Through = 0
	b.Start = -1
	b.refs.Store(0)
	return b
}

// Len is the number of lines.
func (b *Batch) Len() int { return len(b.Lines) }

// Bytes is the number of line bytes (terminators excluded).
func (b *Batch) Bytes() int { return len(b.buf) - b.whole }

// Joined returns every line of b, each followed by '\n', as one slice, and
// true; false when b is a view (filtered, or a tail after a partial
// success) or was built without SetLines/AppendLine. It is the batch's own
// buffer, not a copy: read-only, and valid only until the batch is
// released. The file sink writes it with one write(2).
func (b *Batch) Joined() ([]byte, bool) {
	if len(b.Lines) == 0 || len(b.Lines) != b.whole {
		return nil, false
	}
	return b.buf, true
}

// Share makes b a read-only view of all of src's lines (a group's
// unfiltered view): the same header, lines, positions and buffer, so
// Joined works on it. b holds no reference: it is valid while src is, and
// is never released itself.
func (b *Batch) Share(src *Batch) {
	b.Feed, b.Path, b.Epoch, b.Positioned, b.FirstSeq = src.Feed, src.Path, src.Epoch, src.Positioned, src.FirstSeq
	b.Through, b.Start = src.Through, src.Start
	b.Lines, b.Ends, b.buf, b.whole = src.Lines, src.Ends, src.buf, src.whole
	b.origin = src
	if src.origin != nil {
		b.origin = src.origin
	}
}

// Keep takes b's buffer (for a Share view: its batch's) out of the pool for
// good: it is never recycled, and the garbage collector frees it once
// nothing refers to it. For a writer that may still read the buffer after
// the call that was given b returned (the stdout sink's write to a stuck
// pipe, given up at a stop): the lines it would write later are never
// another batch's. Call it while b is valid (before the call returns).
func (b *Batch) Keep() {
	if b.origin != nil {
		b.origin.refs.Add(1)
		return
	}
	b.refs.Add(1)
}

// SetLines copies data (a span of the file holding the lines and their
// terminators) into the batch's own buffer and records each line as
// data[starts[i]:starts[i]+lens[i]] ending at file position ends[i]. It is the
// only copy a line's bytes make on their way to the subscribers. In the
// buffer every line is followed by '\n' (whatever its terminator was), so
// that a file sink can write the buffer as it is (Joined).
//
// When every line is followed by a one-byte terminator and the next line
// (the common case) the span is copied with one memmove and the
// terminators rewritten to '\n'; otherwise line by line.
func (b *Batch) SetLines(data []byte, starts, lens []int32, ends []int64) {
	n, total, packed := len(starts), 0, true
	for i, l := range lens {
		total += int(l)
		if i+1 < n && starts[i+1] != starts[i]+l+1 {
			packed = false
		}
	}
	need := total + n
	if cap(b.buf) < need {
		b.buf = make([]byte, 0, need+need/4)
	}
	b.buf = b.buf[:need]
	b.Lines = b.Lines[:0]
	if n > 0 && packed {
		copy(b.buf, data[starts[0]:int(starts[n-1]+lens[n-1])])
	}
	at := 0
	for i, s := range starts {
		l := int(lens[i])
		if !packed {
			copy(b.buf[at:], data[s:int(s)+l])
		}
		b.buf[at+l] = '\n'
		b.Lines = append(b.Lines, b.buf[at:at+l:at+l])
		at += l + 1
	}
	b.whole = n
	b.Ends = append(b.Ends[:0], ends...)
}

// AppendLine adds one line (copied) ending at position end. For tests and
// replays; the source uses SetLines.
func (b *Batch) AppendLine(line []byte, end int64) {
	if cap(b.buf)-len(b.buf) < len(line)+1 {
		// Growing would move earlier lines: rebuild the views.
		nb := make([]byte, len(b.buf), 2*cap(b.buf)+len(line)+1)
		copy(nb, b.buf)
		off := 0
		for i, l := range b.Lines {
			b.Lines[i] = nb[off : off+len(l) : off+len(l)]
			off += len(l) + 1
		}
		b.buf = nb
	}
	at := len(b.buf)
	b.buf = append(b.buf, line...)
	b.Lines = append(b.Lines, b.buf[at:len(b.buf):len(b.buf)])
	b.buf = append(b.buf, '\n')
	b.whole++
	b.Ends = append(b.Ends, end)
}

// LastEnd is the position after the last line (0 for an empty batch).
func (b *Batch) LastEnd() int64 {
	if len(b.Ends) == 0 {
		return 0
	}
	return b.Ends[len(b.Ends)-1]
}

// Done is the position a stored record advances to once b is finished:
// Through when set (lines after the view's last one, or an empty view's,
// finished without the sink), else LastEnd. 0: b finishes no positioned
// line (an empty source batch). Meaningful only when Positioned.
func (b *Batch) Done() int64 {
	if b.Through > 0 {
		return b.Through
	}
	return b.LastEnd()
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
