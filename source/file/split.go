package file

import (
	"bytes"
	"math"
	"sync"
)

// Line splitting.
//
// A line ends at a terminator: the byte '\n', the byte '\r', or the pair "\r\n", which is one
// terminator. "a\n\nb\n" is three lines (the second empty); "a\n\r" is two once the stream is
// known to end, and one line plus a pending '\r' while tailing, because a '\r' that is the last
// byte read may be the first half of "\r\n". Lines are raw bytes: NUL and invalid UTF-8 pass
// through exactly.
//
// A line longer than MaxLine bytes is cut into pieces, each delivered as a line of its own with
// its own end position: MaxLine bytes each, the last one shorter or equal, none empty. A piece
// is cut as soon as more than MaxLine bytes of the line are known (MaxLine+1 bytes available
// with no terminator among them, or more than MaxLine bytes before the terminator), so pieces
// never wait for the terminator and a line of exactly MaxLine bytes is not oversized. The last
// piece carries the terminator. Because a piece is cut only when at least one more byte of its
// line follows it, the output is the same however the input is chunked.
//
// Bytes after the last terminator are never taken whole, even when the stream ends: only full
// pieces of a line that has not ended are (while tailing, a long line is delivered in pieces as
// it is written, DESIGN §4). The caller counts the bytes after the last terminator as
// unterminated, pieces already delivered included (reader.unterminated: the Splitter remembers
// where such a line began). A once-read never gives Split bytes after its last terminator: it
// reads only up to just after it (reader.onceEnd), so none of them is delivered, not even as a
// piece (DESIGN §4: "A once-read's bytes after the last terminator are not delivered").

// Found receives lines found by Split. The caller resets it (Reset) between batches; its slices
// are reused, so a steady caller allocates nothing per line.
type Found struct {
	Starts []int32 // index in buf where each line begins
	Lens   []int32 // line length (terminator excluded)
	// Ends holds the absolute file position just after each line's terminator (base + index
	// after the terminator), or just after the piece for a piece of an oversized line.
	Ends      []int64
	Bytes     int // sum of Lens
	Oversized int // oversized lines whose LAST piece was appended (lines, not pieces)
}

// foundPool holds the Found of closed glob streams: each new stream's
// batches of up to BatchLines lines grew one from nothing (a dozen
// allocations, ~40 KiB of garbage per stream; a 1,000-file start made
// the GC run for it).
var foundPool sync.Pool

// takeFound returns an empty Found with room for n lines.
func takeFound(n int) Found {
	if f, ok := foundPool.Get().(*Found); ok && cap(f.Starts) >= n {
		f.Reset()
		return *f
	}
	n = max(n, 1)
	return Found{Starts: make([]int32, 0, n), Lens: make([]int32, 0, n), Ends: make([]int64, 0, n)}
}

// giveFound puts f's storage back for takeFound and empties f; f must not
// be used again by its owner until it takes another.
func giveFound(f *Found) {
	if f.Starts == nil {
		return
	}
	c := *f
	*f = Found{}
	foundPool.Put(&c)
}

// Reset empties f, keeping its storage.
func (f *Found) Reset() {
	f.Starts = f.Starts[:0]
	f.Lens = f.Lens[:0]
	f.Ends = f.Ends[:0]
	f.Bytes = 0
	f.Oversized = 0
}

// Len reports how many lines (pieces included) f holds.
func (f *Found) Len() int { return len(f.Starts) }

// add appends one line (or piece) of l bytes starting at buf index start.
func (f *Found) add(start, l int, end int64) {
	f.Starts = append(f.Starts, int32(start))
	f.Lens = append(f.Lens, int32(l))
	f.Ends = append(f.Ends, end)
	f.Bytes += l
}

// Splitter carries state across calls to Split: whether the bytes at the next call's off
// continue an oversized line after a piece. A new file (or a reopen) needs a fresh Splitter,
// e.g. s = Splitter{MaxLine: n}, so that no partial line is glued to other bytes.
type Splitter struct {
	MaxLine int // maxLineBytes (>0)

	inLong bool // a piece of the current line was emitted; its last piece is still to come
	// mid: the bytes at the next call's off continue a line that began before them, at the
	// file offset lineFrom (-1: not known yet, see reader.lineStart) — pieces of it were
	// emitted (inLong), or the reader was positioned inside it (reader.seek). inLong implies
	// mid. In Split only a piece sets it and only a line's end clears it: a line costs the one
	// test it cost when it was inLong's alone.
	mid      bool
	lineFrom int64
	// longBefore: the reader was positioned at a committed offset inside
	// the current line (reader.committedMid): pieces of it were delivered
	// before, so its end counts it in Oversized — for the count only (not
	// inLong: a line continued so is delivered as if read from its start).
	longBefore bool
}

// setLong sets inLong (a resume point inside an oversized line whose first pieces were
// delivered), keeping inLong ⇒ mid.
func (s *Splitter) setLong(long bool) {
	s.inLong = long
	if long && !s.mid {
		s.mid, s.lineFrom = true, -1
	}
}

// Split scans buf[off:], where buf[0] is at file offset base and buf[off] begins a line (or
// continues an oversized line after a piece). It appends complete lines (and pieces) to out until
// out holds maxLines lines, or the next line would make out.Bytes exceed maxBytes (a line longer
// than maxBytes is still taken when out is empty, so progress is always possible), or no
// complete line remains. It returns the index just after the last line taken (== off when none).
//
// final=true means no byte will follow buf (the end of a once-read): a trailing lone '\r' then
// terminates its line; otherwise a '\r' as the last byte of buf waits for the next byte. Bytes
// after the last terminator are never taken, even when final, except as full pieces of an
// oversized line (see the notes at the top of this file: a once-read never passes them).
//
// buf must be shorter than 2 GiB (positions in out are int32). The caller that keeps the
// unconsumed tail moves it to the front of its buffer, appends more bytes, and calls again with
// the same Splitter.
func (s *Splitter) Split(buf []byte, off int, base int64, final bool, maxLines, maxBytes int, out *Found) (next int) {
	limit := s.MaxLine
	if limit <= 0 {
		panic("file: Splitter.MaxLine must be > 0")
	}
	if len(buf) > math.MaxInt32 {
		panic("file: Split buffer exceeds 2 GiB")
	}
	n := len(buf)
	p := off
	// nl and cr remember, for '\n' and '\r', the index of the next one at or after p, or the end
	// of a scan window that holds none. Each byte is scanned at most once per terminator byte
	// (a file without '\r' is not rescanned once per line). Scans are bounded by windows (wnl,
	// wcr: minScan, doubling after each scan that finds nothing, up to maxScan), so a call scans
	// at most one window past the last line it takes: a caller that takes a large buffer a few
	// lines at a time does not rescan the rest of the buffer at every call.
	nl, cr := -1, -1
	wnl, wcr := minScan, minScan
	for out.Len() < maxLines {
		if nl < p { // scanFor, by hand: this one runs once per line
			to := min(n, p+wnl)
			if i := bytes.IndexByte(buf[p:to], '\n'); i >= 0 {
				nl = p + i
			} else {
				nl, wnl = to, min(2*wnl, maxScan)
			}
		}
		if cr < p {
			cr, wcr = scanFor(buf, p, '\r', wcr)
		}
		// No terminator lies in buf[p:t]; t is the first one unless buf[t] is neither byte (t
		// then ends a scan window) or t == n (none in buf).
		t := min(nl, cr)
		l := t - p
		end := 0
		piece := false
		switch {
		case l > limit: // more than MaxLine bytes known, no terminator among them
			l, end, piece = limit, p+limit, true
		case t == n: // no terminator: the line is incomplete
			return p
		case buf[t] == '\n':
			end = t + 1
		case buf[t] != '\r': // the end of a scan window: scan on
			if nl == t {
				nl, wnl = scanFor(buf, t, '\n', wnl)
			}
			if cr == t {
				cr, wcr = scanFor(buf, t, '\r', wcr)
			}
			continue
		case t+1 < n: // '\r', next byte known
			end = t + 1
			if buf[end] == '\n' {
				end++
			}
		case final: // lone '\r' at the very end of the stream
			end = t + 1
		default: // '\r' as last byte while tailing: may be the first half of "\r\n"
			return p
		}
		if out.Len() > 0 && out.Bytes+l > maxBytes {
			return p
		}
		out.add(p, l, base+int64(end))
		if piece {
			if !s.mid {
				s.mid, s.lineFrom = true, base+int64(p)
			}
			s.inLong = true
		} else if s.mid {
			s.mid = false
			if s.inLong || s.longBefore {
				s.inLong, s.longBefore = false, false
				out.Oversized++
			}
		}
		p = end
	}
	return p
}

// Scan windows: the first scan for a terminator byte in a call covers minScan bytes, each scan
// that finds none doubles the next one, up to maxScan (larger caps measured slower: the second
// byte's scan then no longer finds the bytes in L1).
const (
	minScan = 256
	maxScan = 4 << 10
)

// scanFor returns the index of the first c in buf[from:from+w], or the end of that window (at
// most len(buf)) when there is none, and the window for the next scan for c.
func scanFor(buf []byte, from int, c byte, w int) (int, int) {
	to := min(len(buf), from+w)
	if i := bytes.IndexByte(buf[from:to], c); i >= 0 {
		return from + i, w
	}
	return to, min(2*w, maxScan)
}
