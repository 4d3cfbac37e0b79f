package file

import (
	"context"
	"errors"
	"math"
	"time"

	"tailfeed/feed"
	"tailfeed/pointer"
)

// Commits (DESIGN §3). The source stores the acknowledged position into the
// pointer's mapping at most once per duty cycle (that alone survives kill
// -9) and msyncs it at most every commitSyncMillis. The msync runs on a
// goroutine of its own, one at a time, so that a slow disk does not delay
// the reading of the next line; while it runs the source does not touch the
// pointer (whose mutex the msync holds): positions acknowledged meanwhile
// wait in pend and are stored once it returned. An epoch switch and Close
// wait for it and sync at once.

// committer is the commit state; only accessed from the source goroutine.
type committer struct {
	stored    bool // a record was stored and not yet handed to an msync
	storedSeq uint64
	storedPos int64

	inFlight  bool // an msync runs; done receives its result
	flightSeq uint64
	flightPos int64
	done      chan error

	pend    bool // a position acknowledged while the msync runs, not stored yet
	pendSeq uint64
	pendPos int64

	lastSync time.Time
}

// commitStep acknowledges what every holding queue finished, stores the new
// position, and starts an msync when one is due (force: at once, and waits
// for it).
func (s *Source) commitStep(force bool) {
	s.collectSync(force)
	a := s.pub.PollAcks()
	if a.Moved {
		s.ackSeq = a.Seq
		s.acked(a)
	}
	c := &s.commit
	if s.ptr == nil || !c.stored {
		s.dirty.Store(c.stored || c.inFlight || c.pend)
		return
	}
	if force {
		c.lastSync = time.Now()
		c.flightSeq, c.flightPos, c.stored = c.storedSeq, c.storedPos, false
		s.ioBegin(nil)
		err := s.ptr.Sync()
		s.ioEnd()
		s.synced(err)
		return
	}
	if !c.inFlight && time.Since(c.lastSync) >= s.syncEvery() {
		s.startSync()
	}
	s.dirty.Store(true)
}

// syncEvery is how often a stored commit is msynced: commitSyncMillis, or
// BusySync while the source reads behind its file's end or lines it
// published are still unacknowledged. Once the file is read to its end and
// the last line is acknowledged, only the msync stands between the feed
// and settled (DESIGN §3: it msyncs "at once ... before the feed reports
// settled"): then at most settleSyncGap after the last msync, however long
// commitSyncMillis is (a file appended to line by line is not msynced more
// than 1/settleSyncGap times a second).
func (s *Source) syncEvery() time.Duration {
	st := State(s.state.Load())
	if s.cfg.BusySync > s.cfg.CommitSync && (st == Behind || s.pub.Pending() > 0) {
		return s.cfg.BusySync
	}
	if st != Behind && st != Starting && s.pub.Pending() == 0 {
		return min(s.cfg.CommitSync, settleSyncGap)
	}
	return s.cfg.CommitSync
}

// settleSyncGap bounds the wait for the msync that settles a feed.
const settleSyncGap = 10 * time.Millisecond

// acked records an acknowledgement that moved.
func (s *Source) acked(a feed.Acked) {
	c := &s.commit
	switch {
	case s.ptr == nil:
		s.syncedSeq.Store(a.Seq) // nothing to commit
	case a.Positioned && a.Epoch == s.ptrEpoch && c.inFlight:
		c.pend, c.pendSeq, c.pendPos = true, a.Seq, a.Position
	case a.Positioned && a.Epoch == s.ptrEpoch:
		s.store(a.Position, a.Seq)
	case c.pend:
		c.pendSeq = a.Seq // lines without a position ride with the waiting store
	case c.stored:
		c.storedSeq = a.Seq
	case c.inFlight:
		c.flightSeq = a.Seq
	default:
		// Only lines without a position (or of a finished epoch): nothing
		// new to store; the synced record still covers them.
		s.syncedSeq.Store(a.Seq)
	}
}

// store writes the record for pos (acknowledged through seq) into the
// mapping.
func (s *Source) store(pos int64, seq uint64) {
	c := &s.commit
	if err := s.ptr.Store(pos); err != nil {
		s.commitFailures.Add(1)
		s.commitOK.Store(false)
		s.log.Error("pointer store failed", "error", err)
		return
	}
	c.stored, c.storedSeq, c.storedPos = true, seq, pos
}

// startSync hands the stored record to an msync on its own goroutine.
func (s *Source) startSync() {
	c := &s.commit
	c.lastSync = time.Now()
	c.inFlight, c.flightSeq, c.flightPos, c.stored = true, c.storedSeq, c.storedPos, false
	go func(p *pointer.Pointer, done chan<- error) {
		s.ioBegin(nil)
		err := p.Sync()
		s.ioEnd()
		done <- err
		s.pub.Poke()
	}(s.ptr, c.done)
}

// ioBegin takes one of Config.IOSlots (none set: at once); false when ctx
// (nil: none) ended first.
func (s *Source) ioBegin(ctx context.Context) bool {
	if s.cfg.IOSlots == nil {
		return true
	}
	if ctx == nil {
		s.cfg.IOSlots <- struct{}{}
		return true
	}
	select {
	case s.cfg.IOSlots <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// ioEnd gives the slot ioBegin took back.
func (s *Source) ioEnd() {
	if s.cfg.IOSlots != nil {
		<-s.cfg.IOSlots
	}
}

// collectSync takes the result of a running msync (waiting for it when
// wait is set) and stores what was acknowledged meanwhile.
func (s *Source) collectSync(wait bool) {
	c := &s.commit
	if !c.inFlight {
		return
	}
	var err error
	if wait {
		err = <-c.done
	} else {
		select {
		case err = <-c.done:
		default:
			return
		}
	}
	c.inFlight = false
	s.synced(err)
	if c.pend {
		c.pend = false
		s.store(c.pendPos, c.pendSeq)
	}
}

// synced records the result of an msync of the record for flightPos.
func (s *Source) synced(err error) {
	c := &s.commit
	if err != nil {
		s.commitFailures.Add(1)
		s.commitOK.Store(false)
		s.log.Error("pointer msync failed; the lines stay unacknowledged on disk", "error", err)
		// Never retried alone: the next attempt rewrites the slot.
		if serr := s.ptr.Store(c.flightPos); serr != nil && !errors.Is(serr, pointer.ErrBackwards) {
			s.log.Error("pointer store failed", "error", serr)
		}
		if !c.stored {
			c.stored, c.storedSeq, c.storedPos = true, c.flightSeq, c.flightPos
		}
		s.dirty.Store(true)
		return
	}
	s.commitOK.Store(true)
	s.syncedSeq.Store(c.flightSeq)
	s.dirty.Store(c.stored || c.pend)
}

// settleSync waits for a running msync (the end of Run).
func (s *Source) settleSync() {
	s.collectSync(true)
}

// headFirst makes sure, before the first line of the pointer's epoch is
// published, that the pointer's record holds the file's first bytes. A
// Reset onto an empty file (a new file at the path after a rotation, a
// copytruncate's cut file) records a fingerprint of nothing: a restart
// could not tell the bytes published under that epoch from others written
// over them while tailfeed was
// stopped (a copytruncate before the epoch's first commit), and would read
// the new bytes under the same epoch and positions — an exactlyOnce sink
// that applied the old ones skips them. So the record is stored at offset 0
// with the fingerprint grown over what the file holds now, and msynced,
// before the batch goes out (one msync per such epoch). False when that
// failed (counted in commitFailures; the batch waits, the next cycle
// retries).
func (s *Source) headFirst() bool {
	b := s.pending
	if s.ptr == nil || !b.Positioned || b.Epoch != s.ptrEpoch {
		return true
	}
	if s.headDone == b.Epoch {
		return s.headGrow(b)
	}
	owed := s.headOwed == b.Epoch // stored by an earlier try whose msync failed
	if rec := s.ptr.Record(); !owed && (rec.Epoch != b.Epoch || rec.FPLen > 0 || rec.Offset > 0 || rec.FileKey == 0 && s.ptr.HeadNamed()) {
		// A record naming no file yet (a new pointer, never committed):
		// the epochs file's line written ahead names its file and first
		// bytes (adopted), and its first commit binds it (a glob stream
		// may close owing it: settleOwed). Not when that line names no
		// first bytes (adopted while empty): a copytruncate before the
		// first commit then read the new lines under the old epoch and
		// positions, skipped by an exactlyOnce sink as applied (audit
		// 10E) — the record is stored with them first, as after a Reset.
		// A glob stream's too: its restart takes the pointer by key and
		// first bytes, and a record naming none matched the rewritten
		// file (TestGlobAdoptedEmptyKill9CopytruncateNewEpoch). The first
		// bytes named go with the first batch too: it may end past them
		// (the file grew between its adoption and the read).
		s.headDone = b.Epoch
		return s.headGrow(b)
	}
	s.collectSync(true)
	// Stored again on a retry too: after a failed msync the pages may be
	// clean with their bytes not on disk, so the retry rewrites the slot
	// (a new commit count) before it msyncs (DESIGN §3 "never retried
	// alone").
	err := s.ptr.Store(0)
	if err == nil {
		// The record in memory now holds the first bytes: a retry after a
		// failed msync must not take that for done.
		s.headOwed = b.Epoch
		s.ioBegin(nil)
		err = s.ptr.Sync()
		s.ioEnd()
	}
	if err != nil {
		s.commitFailures.Add(1)
		s.commitOK.Store(false)
		s.log.Error("pointer: recording the first bytes of the file before its first line failed; retrying", "error", err)
		return false
	}
	s.commitOK.Store(true)
	s.headOwed = 0
	s.headDone = b.Epoch
	return true
}

// headGrow keeps the record's first bytes ahead of what is published under
// its epoch: a batch ending past them, while they are fewer than the file's
// first pointer.MaxFingerprint bytes, has the record stored again at its
// offset with the fingerprint grown over what the file holds now, before it
// goes out. Otherwise a short first batch (a banner line) left a record
// whose few first bytes a file rewritten while tailfeed was stopped (kill
// -9, then a copytruncate, the banner written again) still matched: the
// restart took it for the pointer's file and read its new lines under the
// old epoch and positions — an exactlyOnce sink skipped them as applied,
// and the copy holding the old lines was never read (reviews 29a, 29b).
// The store goes into the shared mapping, which a kill -9 leaves in the
// page cache; the next commit's msync makes it durable. Not while an msync
// runs (reading never waits for one: the next batch grows them), nor after
// a failed store (counted; the commit path reports it).
func (s *Source) headGrow(b *feed.Batch) bool {
	if len(b.Ends) == 0 {
		return true
	}
	end := b.Ends[len(b.Ends)-1]
	if s.grownEpoch == b.Epoch && end <= s.grownTo {
		return true // covered (cheap: most batches, most files)
	}
	// (Before the pointer is touched: a running msync holds its lock.)
	if s.collectSync(false); s.commit.inFlight {
		return true
	}
	rec := s.ptr.Record()
	have := rec.FPLen
	if rec.FileKey == 0 {
		// No identity yet: the epochs file's adopted line names the first
		// bytes (a file adopted with content); the store binds it.
		have = s.ptr.HeadNamedLen()
	}
	if rec.Epoch != b.Epoch {
		return true
	}
	if have < pointer.MaxFingerprint && end > int64(have) {
		if err := s.ptr.Store(rec.Offset); err != nil {
			s.commitFailures.Add(1)
			s.commitOK.Store(false)
			s.log.Error("pointer: recording the file's first bytes before its next lines failed", "error", err)
			return true
		}
		if rec = s.ptr.Record(); rec.FileKey != 0 {
			have = rec.FPLen
		}
	}
	s.grownEpoch, s.grownTo = b.Epoch, int64(have)
	if have >= pointer.MaxFingerprint {
		s.grownTo = math.MaxInt64
	}
	return true
}
