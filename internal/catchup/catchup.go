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
//   - A sink with no mark, or with marks only of epochs the epochs file
//     does not know, is never behind (a new sink, a new table).
//   - Its mark in the latest epoch it holds one for counts (a sink applies
//     epochs in order). An epoch later than the pointer's (the pointer was
//     put back before, or the mark is of a run the pointer never
//     committed): nothing, AlreadyApplied skips.
//   - The pointer's epoch: behind when the position is smaller than the
//     pointer's offset → the point (that epoch, that position).
//   - An older epoch E: the epochs file's last line that moved the pointer
//     off E gives E's end (previousOffset). A position at or past it means
//     the sink holds all of E: it goes on with the next epoch (the line's)
//     at position 0, nothing of it held, and the same rule applies there —
//     so a sink that is complete is never behind. A position before it →
//     the point (E, position), with E's file identity (the last line naming
//     E): the source reads the rest of that generation if it is still on
//     disk, every later generation, then the current file; a generation
//     that is gone is counted lost there.
//
// The earliest point over all sinks wins (epochs ordered as the epochs file
// first names them, the pointer's last). A fresh pointer (a new pointer
// file, or one with no valid slot) is not a gap: no decision.
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
	// End is the older epoch's end (the previousOffset of the line that
	// moved the pointer off it): End − Position bytes of it are known to
	// be missing from the sink should its file be gone.
	End int64
	// Mark is the sink's own mark the point came from (its epoch may be
	// older still: the sink held all of it).
	Mark processor.Mark

	order int // epoch's place in the chain (the pointer's: last)
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
		if !found || p.order < best.order || (p.order == best.order && p.Position < best.Position) {
			best, found = p, true
		}
	}
	return best, found
}

// chain is the epochs file read for decisions.
type chain struct {
	ptr     pointer.Record
	order   map[uint64]int               // epoch → first line naming it
	file    map[uint64]pointer.EpochLine // epoch → last line naming it
	movedBy map[uint64]pointer.EpochLine // epoch → last line moving the pointer off it
	since   map[uint64]time.Time         // epoch → time of the first line naming it
	last    int                          // the pointer's epoch's order
}

func newChain(ptr pointer.Record, lines []pointer.EpochLine) *chain {
	c := &chain{ptr: ptr, order: map[uint64]int{}, file: map[uint64]pointer.EpochLine{},
		movedBy: map[uint64]pointer.EpochLine{}, since: map[uint64]time.Time{}}
	for i, l := range lines {
		if _, ok := c.order[l.Epoch]; !ok {
			c.order[l.Epoch] = i
			c.since[l.Epoch] = l.Time
		}
		c.file[l.Epoch] = l
		if l.PrevEpoch != 0 && l.PrevEpoch != l.Epoch {
			c.movedBy[l.PrevEpoch] = l
		}
	}
	c.last = len(lines)
	if o, ok := c.order[ptr.Epoch]; ok {
		c.last = o
	}
	return c
}

// orderOf is e's place: known (ok) and not later than the pointer's epoch.
func (c *chain) orderOf(e uint64) (int, bool) {
	if e == c.ptr.Epoch {
		return c.last, true
	}
	o, ok := c.order[e]
	if !ok || o > c.last {
		return 0, false
	}
	return o, true
}

// point is where sink s needs the feed re-read from, false: nowhere.
func (c *chain) point(s Sink) (Point, bool) {
	var m processor.Mark
	mo, have := -1, false
	for _, k := range s.Marks {
		o, ok := c.orderOf(k.Epoch)
		if !ok {
			if _, known := c.order[k.Epoch]; known {
				return Point{}, false // a mark of an epoch later than the pointer's: ahead
			}
			continue // unknown epoch: nothing
		}
		if !have || o > mo || (o == mo && k.Position > m.Position) {
			m, mo, have = k, o, true
		}
	}
	if !have {
		return Point{}, false
	}
	e, pos := m.Epoch, m.Position
	for range len(c.order) + 2 { // every step moves to a later epoch
		if e == c.ptr.Epoch {
			if pos < c.ptr.Offset {
				return Point{Sink: s.Name, Epoch: e, Position: pos, Current: true, Mark: m, order: c.last}, true
			}
			return Point{}, false
		}
		next, ok := c.movedBy[e]
		if !ok {
			return Point{}, false // not on the way to the pointer's epoch
		}
		if pos >= next.PrevOffset {
			e, pos = next.Epoch, 0 // all of e held: nothing of the next yet
			if _, ok := c.orderOf(e); !ok {
				return Point{}, false
			}
			continue
		}
		o, _ := c.orderOf(e)
		file := c.file[e]
		file.Time = c.since[e] // when the pointer first started it (a catch-up may have named it again since)
		return Point{Sink: s.Name, Epoch: e, Position: pos, File: file, End: next.PrevOffset, Mark: m, order: o}, true
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
