// Package catchup decides, at a feed's start, where a restored sink is
// caught up from the input (DESIGN §11 "A restored sink is caught up from
// the input"): from the done-through marks of every pointer-holding
// subscriber with a stored record (processor.DoneThrougher), the pointer's
// record and the feed's epochs file (DESIGN §4), it returns the earliest
// point any sink still needs, or nothing. It decides only; the daemon asks
// the sinks, commits the pointer back (pointer.Rewind) and starts the
// source, whose restart path reads from there (source/file).
//
// The rule, per sink:
//
//   - A sink with no mark is never behind (a new sink, a new table).
//   - Epochs are ordered by their place in the generation chain: the
//     number of Resets (the last epochs line moving the pointer off each)
//     from an epoch to the pointer's — not by the order the epochs file
//     first names them (a catch-up that read a generation under a new
//     epoch, e.g. a .gz, names it after the current file's epoch, which
//     still comes after it). A mark of an epoch the pointer reached from its
//     own (it was put back before, or the mark is of a run the pointer
//     never committed) makes the sink ahead: nothing, AlreadyApplied skips.
//   - Its mark in the latest epoch on the way to the pointer's counts (a
//     sink applies epochs in order).
//   - The pointer's epoch: behind when the position is smaller than the
//     pointer's offset → the point (that epoch, that position); End is the
//     pointer's offset (the gap's size, should the input no longer hold it).
//   - An older epoch E: the epochs file's last line that moved the pointer
//     off E gives E's end (previousOffset). A position at or past it means
//     the sink holds all of E: it goes on with the next epoch (the line's)
//     at position 0, nothing of it held, and the same rule applies there —
//     so a sink that is complete is never behind. A position before it →
//     the point (E, position), with E's file identity (the last line naming
//     E) and Later, every generation after E up to the pointer's own file
//     with its identity and end: the source reads the rest of that
//     generation if it is still on disk, every later generation, then the
//     current file; a generation that is gone (E's, a later one, or the
//     pointer's file cut while stopped) is counted lost there.
//   - A sink with no mark on the way, but one of an epoch named with its
//     file before the pointer's chain began (a fresh pointer started it
//     again; or the epochs file lost the Reset off that epoch, torn, so
//     that it does not name the pointer's): the point (that epoch, that
//     position), End unknown (−1), Later the pointer's own file: re-read
//     from there rather than ignored. A mark of an epoch named after the
//     chain began that does not lead to the pointer's (a generation read
//     again under a new epoch) is nothing.
//   - Unplaced: a sink whose every mark is of an epoch the epochs file does
//     not name while the pointer is at another, the epochs file not whole
//     (deleted, torn, cut), cannot be placed: the daemon counts it as a
//     possible loss (DESIGN §4 "Nothing green over a loss"), never takes
//     it for a new sink.
//
// The earliest point over all sinks wins. A fresh pointer (a new pointer
// file, or one with no valid slot) is not a gap: no decision at that start.
package catchup

import (
	"fmt"
	"time"

	"tailfeed/pointer"
	"tailfeed/processor"
)

// Sink is one subscriber's done-through marks.
type Sink struct {
	Name  string
	Marks []processor.Mark
}

// Point is where the feed re-reads from.
type Point struct {
	Sink     string // the sink that needs it (the first of equal ones)
	Epoch    uint64
	Position int64
	// Current: Epoch is the pointer's (a backward commit under its own
	// epoch); else an older epoch, whose file File names.
	Current bool
	File    pointer.EpochLine // the epochs line naming the older epoch's file (Time: the first such line's)
	// End is the epoch's end: an older epoch's, the previousOffset of the
	// line that moved the pointer off it (−1: not known — the sink's epoch
	// ended before the pointer's chain began afresh); the pointer's own,
	// its offset. End − Position bytes of it are known to be missing from
	// the sink should its file be gone.
	End int64
	// Later (an older epoch only) are the generations after Epoch's, the
	// pointer's own last: the source counts one it does not find lost.
	Later []Gen
	// Mark is the sink's own mark the point came from (its epoch may be
	// older still: the sink held all of it).
	Mark processor.Mark

	order int // Resets from the epoch to the pointer's (more: earlier)
}

// Record is the pointer record that makes the source read from p: the
// pointer's own with the offset moved back, or the older epoch's file
// identity at the position.
func (p Point) Record(cur pointer.Record) pointer.Record {
	if p.Current {
		r := cur
		r.Offset = p.Position
		return r
	}
	return pointer.Record{Epoch: p.Epoch, Offset: p.Position, FileKey: p.File.FileKey, FPLen: p.File.FPLen, FP: p.File.FP}
}

func (p Point) String() string {
	if p.Current {
		return fmt.Sprintf("epoch %016x position %d (the pointer's epoch)", p.Epoch, p.Position)
	}
	return fmt.Sprintf("epoch %016x position %d (an older generation, %s)", p.Epoch, p.Position, p.File.Path)
}

// Decide returns the earliest point a sink needs re-read, false when none.
// ptr is the pointer's record, fresh whether Open started it fresh, lines
// the epochs file (pointer.ReadEpochs; what parsed).
func Decide(ptr pointer.Record, fresh bool, lines []pointer.EpochLine, sinks []Sink) (Point, bool) {
	if fresh || ptr.Epoch == 0 {
		return Point{}, false
	}
	c := newChain(ptr, lines)
	var best Point
	found := false
	for _, s := range sinks {
		p, ok := c.point(s)
		if !ok {
			continue
		}
		if !found || p.order > best.order || (p.order == best.order && p.Position < best.Position) {
			best, found = p, true
		}
	}
	if found && !best.Current {
		best.Later = c.later(best.Epoch, best.End >= 0)
	}
	return best, found
}

// Unplaced returns the sinks whose every mark is of an epoch the epochs
// file does not name while the pointer holds another and the epochs file
// is not whole (readOK false: a line did not parse; no lines — deleted;
// the first line not the pointer's creation — cut; the pointer's epoch not
// named — torn): such a sink may be behind and nothing tells by how much —
// the caller counts it as a possible loss (DESIGN §4 "Nothing green over a
// loss"), never takes it for a new sink. With a whole epochs file, an
// epoch it does not name was never this pointer's (a previous path's
// pointer moved aside by a reload, a downgraded late line's): no decision.
// None for a fresh pointer (not a gap), or on a glob feed's stream (other
// streams' epochs are not its own).
func Unplaced(ptr pointer.Record, fresh bool, lines []pointer.EpochLine, readOK bool, sinks []Sink) []Sink {
	if fresh || ptr.Epoch == 0 {
		return nil
	}
	named := map[uint64]bool{}
	for _, l := range lines {
		named[l.Epoch] = true
	}
	if readOK && len(lines) > 0 && lines[0].PrevEpoch == 0 && named[ptr.Epoch] {
		return nil // whole
	}
	named[ptr.Epoch] = true
	var out []Sink
	for _, s := range sinks {
		placed, any := false, false
		for _, m := range s.Marks {
			if m.Epoch == 0 {
				continue
			}
			any = true
			if named[m.Epoch] {
				placed = true
			}
		}
		if any && !placed {
			out = append(out, s)
		}
	}
	return out
}

// Gen is a generation a catch-up from an older epoch goes through after its
// own (Point.Later): the epoch, its file's identity when the pointer left
// it (or, for the pointer's own epoch, the pointer's), and End, the bytes
// of it the sinks that lacked it need (the offset the pointer left it at,
// or the pointer's offset). The source counts one that is not among the
// files it reads (deleted, or truncated, or rewritten while stopped) as
// lost: DESIGN §11 "a generation that is gone is counted".
type Gen struct {
	Epoch   uint64
	FileKey uint64
	FPLen   uint64
	FP      uint64
	End     int64
	Path    string
}

// chain is the epochs file read for decisions.
//
// The epochs' order is their place in the generation chain, not the order
// the file names them in (a catch-up that reads a generation under a new
// epoch names it after the epochs that follow it): dist is the number of
// Resets (the last line moving the pointer off each) from an epoch to the
// pointer's; ahead are the epochs the pointer reached from its own (it was
// put back before); an epoch that does not reach the pointer's is "off the
// way" — a generation read again (the chain went on through a newer line),
// or, when it was named before the pointer's chain began afresh (a fresh
// pointer; the epochs file torn or cut so that it does not name the
// pointer's epoch), one the sink may still lack (before).
type chain struct {
	ptr     pointer.Record
	file    map[uint64]pointer.EpochLine // epoch → last line naming it
	movedBy map[uint64]pointer.EpochLine // epoch → last line moving the pointer off it
	since   map[uint64]time.Time         // epoch → time of the first line naming it
	lastAt  map[uint64]int               // epoch → index of the last line naming it
	dist    map[uint64]int               // epoch → Resets to the pointer's epoch
	ahead   map[uint64]bool
	root    int // the index where the pointer's chain began (len(lines): not named)
}

func newChain(ptr pointer.Record, lines []pointer.EpochLine) *chain {
	c := &chain{ptr: ptr, file: map[uint64]pointer.EpochLine{}, movedBy: map[uint64]pointer.EpochLine{},
		since: map[uint64]time.Time{}, lastAt: map[uint64]int{}, dist: map[uint64]int{ptr.Epoch: 0}, ahead: map[uint64]bool{}}
	arrived := map[uint64]pointer.EpochLine{} // epoch → last line moving the pointer onto it
	first := map[uint64]int{}
	for i, l := range lines {
		if _, ok := c.since[l.Epoch]; !ok {
			c.since[l.Epoch] = l.Time
			first[l.Epoch] = i
		}
		c.file[l.Epoch] = l
		c.lastAt[l.Epoch] = i
		if l.PrevEpoch != 0 && l.PrevEpoch != l.Epoch {
			c.movedBy[l.PrevEpoch] = l
			arrived[l.Epoch] = l
		}
	}
	for e := range c.lastAt {
		x, d := e, 0
		for range len(lines) + 1 {
			if x == ptr.Epoch {
				c.dist[e] = d
				break
			}
			n, ok := c.movedBy[x]
			if !ok {
				break
			}
			x, d = n.Epoch, d+1
		}
	}
	for x, n := ptr.Epoch, 0; n <= len(lines); n++ {
		m, ok := c.movedBy[x]
		if !ok || m.Epoch == ptr.Epoch || c.ahead[m.Epoch] {
			break
		}
		x = m.Epoch
		c.ahead[x] = true
		delete(c.dist, x)
	}
	// Where the pointer's chain began: back from its epoch through the
	// lines that moved the pointer onto each, to an epoch no line moved it
	// onto (its creation, or a fresh start).
	c.root = len(lines)
	if _, ok := c.lastAt[ptr.Epoch]; ok {
		x, seen := ptr.Epoch, map[uint64]bool{}
		for !seen[x] {
			seen[x] = true
			a, ok := arrived[x]
			if !ok {
				break
			}
			x = a.PrevEpoch
		}
		if i, ok := first[x]; ok {
			c.root = i
		}
	}
	return c
}

// later is the chain of generations after e up to the pointer's own, each
// with its identity and end (onWay: e reaches the pointer's epoch; else
// only the pointer's own is known).
func (c *chain) later(e uint64, onWay bool) []Gen {
	var out []Gen
	if onWay {
		for x, n := e, 0; n <= len(c.movedBy); n++ {
			m, ok := c.movedBy[x]
			if !ok || m.Epoch == c.ptr.Epoch {
				break
			}
			x = m.Epoch
			nx, ok := c.movedBy[x]
			if !ok {
				break
			}
			out = append(out, Gen{Epoch: x, FileKey: nx.PrevFileKey, FPLen: nx.PrevFPLen, FP: nx.PrevFP, End: nx.PrevOffset, Path: c.file[x].Path})
		}
	}
	return append(out, Gen{Epoch: c.ptr.Epoch, FileKey: c.ptr.FileKey, FPLen: c.ptr.FPLen, FP: c.ptr.FP, End: c.ptr.Offset,
		Path: c.file[c.ptr.Epoch].Path})
}

// point is where sink s needs the feed re-read from, false: nowhere.
func (c *chain) point(s Sink) (Point, bool) {
	var m processor.Mark
	md, have := 0, false
	var off processor.Mark // the latest mark off the way, named before the chain began
	offAt, haveOff := -1, false
	for _, k := range s.Marks {
		if c.ahead[k.Epoch] {
			return Point{}, false // a mark of an epoch the pointer reached from its own: ahead
		}
		d, ok := c.dist[k.Epoch]
		if !ok {
			if at, named := c.lastAt[k.Epoch]; named && at < c.root && c.file[k.Epoch].FPLen+c.file[k.Epoch].FileKey != 0 &&
				(!haveOff || at > offAt || (at == offAt && k.Position > off.Position)) {
				off, offAt, haveOff = k, at, true
			}
			continue // unknown epoch, or one read again off the way: nothing
		}
		if !have || d < md || (d == md && k.Position > m.Position) {
			m, md, have = k, d, true
		}
	}
	if !have {
		if !haveOff {
			return Point{}, false
		}
		// The sink's epoch ended before the pointer's chain began: its end
		// is not known, its file is. Read on from there: the rest of that
		// file, every later generation, the current file.
		file := c.file[off.Epoch]
		file.Time = c.since[off.Epoch]
		return Point{Sink: s.Name, Epoch: off.Epoch, Position: off.Position, File: file, End: -1, Mark: off,
			order: len(c.lastAt) + 2}, true
	}
	e, pos := m.Epoch, m.Position
	for range len(c.lastAt) + 2 { // every step moves to a later epoch
		if e == c.ptr.Epoch {
			if pos < c.ptr.Offset {
				return Point{Sink: s.Name, Epoch: e, Position: pos, Current: true, Mark: m, End: c.ptr.Offset}, true
			}
			return Point{}, false
		}
		next, ok := c.movedBy[e]
		if !ok {
			return Point{}, false
		}
		if pos >= next.PrevOffset {
			e, pos = next.Epoch, 0 // all of e held: nothing of the next yet
			continue
		}
		file := c.file[e]
		file.Time = c.since[e] // when the pointer first started it (a catch-up may have named it again since)
		return Point{Sink: s.Name, Epoch: e, Position: pos, File: file, End: next.PrevOffset, Mark: m, order: c.dist[e]}, true
	}
	return Point{}, false
}

// Left is the epochs file's account of an epoch the pointer had left and
// holds again (put back to it by a catch-up, before or at this start):
// File names its file (Time: when the pointer first started it), End is
// where it ended (the previousOffset of the
// last line that moved the pointer off it). ok is false when no line moved
// the pointer off rec's epoch: it is the newest, as in every run without a
// catch-up. A start after a kill -9 in the middle of a catch-up finds the
// pointer there with no sink behind: the source must still read the rest
// of that generation and every later one, as the catch-up's start would.
func Left(rec pointer.Record, lines []pointer.EpochLine) (file pointer.EpochLine, end int64, ok bool) {
	if rec.Epoch == 0 {
		return pointer.EpochLine{}, 0, false
	}
	var moved *pointer.EpochLine
	var since time.Time
	for i := range lines {
		l := &lines[i]
		if l.Epoch == rec.Epoch {
			if file.Epoch == 0 {
				since = l.Time
			}
			file = *l
		}
		if l.PrevEpoch == rec.Epoch && l.Epoch != rec.Epoch {
			moved = l
		}
	}
	if moved == nil || file.Epoch == 0 {
		return pointer.EpochLine{}, 0, false
	}
	file.Time = since // when the pointer first started it
	return file, moved.PrevOffset, true
}
