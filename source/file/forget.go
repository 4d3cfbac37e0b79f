package file

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"tailfeed/pointer"
)

// Forgetting a deleted file (DESIGN §4). A file that was
// read to its end, committed and then deleted is not a lost tail: the
// pointer is Reset to an empty record (file key 0, fingerprint length 0,
// offset 0, new epoch), and a restart that cannot find the file loses
// nothing. Only a deleted file (st_nlink 0 on the open descriptor) is
// forgotten: a file renamed away keeps the pointer, so that a restart finds
// it by its key and reads what was appended to it meanwhile, positioned.
//
// The pointer's file is the reader whose lines move the pointer (ptrFile):
// the current file, or, once the path stayed missing for rotateWait, the
// same file kept watched in the old list under the pointer's epoch. It is
// forgotten as soon as it is deleted, read to its end with no partial line,
// every line published is acknowledged and the synced record is at its end
// (forgetStep, at the end of the file before CAUGHT_UP, while no file is
// open, and at the stop) — not only once rotateWait closed it: from the
// moment the deletion is seen until the Reset the feed is not settled
// (CommitOK false), and once it is settled a kill -9 finds the empty
// record. A pointer's file closed (rotateWait after its last growth) while
// lines of it were still unacknowledged leaves a snapshot (epoch, end) that
// is forgotten once they are.
//
// The file stays open after the Reset (a writer may still append to it): the
// lines read from it afterwards carry an epoch of their own and no position
// (downgraded), like the late lines of a rotated file. A kill -9 before
// they are acknowledged loses them uncounted (README, "What can be lost").
//
// Matching is on the epoch and the offset only, never the file key: a
// record kept under a new key (same content, DESIGN §3) records that key at
// its next Store, which may never come.
//
// Crash windows. The epochs file line ("forgotten", naming the forgotten
// epoch and its end) is written before either slot; a kill -9 after it and
// before the first slot leaves the old record: the restart counts a lost
// tail (conservative; the feed was not settled). The Reset writes the older
// slot, msyncs, then the other: a kill -9 between the two finds the new
// record in the first (its commit counter is higher). A failed msync leaves
// the Reset owed: ptrEpoch is already the empty record's, CommitOK stays
// false, and the next step finishes it with Sync.
//
// A file whose last bytes are a partial line, or with a line that is never
// acknowledged, is not forgotten: its tail is lost with it, and a restart
// counts it.

// forget is the snapshot of the pointer's file, deleted and closed while
// some of its lines were unacknowledged.
type forget struct {
	epoch  uint64 // the pointer's epoch while it names the file
	offset int64  // the offset after its last line
}

// ptrFile returns the open reader whose lines move the pointer: cur, or a
// file kept in old under the pointer's epoch (nil: none).
func (s *Source) ptrFile() *reader {
	if s.ptr == nil {
		return nil
	}
	if r := s.cur; r != nil && r.positioned && r.epoch == s.ptrEpoch {
		return r
	}
	for _, o := range s.old {
		if o.positioned && o.epoch == s.ptrEpoch {
			return o
		}
	}
	return nil
}

// forgettable reports whether r, the pointer's file, is deleted and read
// to its end with no partial line (its end is r.consumed()); wait tells
// that it is deleted and not read to its end yet.
func forgettable(r *reader) (ok, wait bool) {
	if r.gone != "" || r.copy || r.noForget || r.f == nil {
		return false, false
	}
	st, err := r.f.Stat()
	if err != nil || !deletedInfo(st) {
		return false, false
	}
	switch {
	case r.end > r.start:
		return false, false // a partial line: lost with the file
	case st.Size() > r.readPos():
		return false, true
	}
	return true, false
}

// forgetStep forgets the pointer's file when it is deleted and every line
// of it is committed (see above). Not during the epoch barrier: its Reset
// moves the pointer off the file anyway.
func (s *Source) forgetStep() {
	if s.ptr == nil || s.barrier {
		return
	}
	if s.forgetOwed {
		s.finishForget()
		return
	}
	var r *reader
	var epoch uint64
	var end int64
	switch r = s.ptrFile(); {
	case r != nil && r == s.cur && !s.missing && len(s.next) == 0 && !s.closing:
		// The path named it at the check just before: not deleted (no
		// fstat at every end of the file).
		s.forgetDue.Store(false)
		return
	case r != nil:
		ok, wait := forgettable(r)
		if !ok {
			s.forgetDue.Store(wait)
			return
		}
		epoch, end = r.epoch, r.lineEnd()
	case s.forget != nil && s.forget.epoch == s.ptrEpoch:
		epoch, end = s.forget.epoch, s.forget.offset
	default:
		s.forget = nil
		s.forgetDue.Store(false)
		return
	}
	s.forgetDue.Store(true)
	if s.pending != nil || s.pub.Pending() > 0 || s.commit.inFlight || s.commit.pend {
		return // later: the source is woken when they are acknowledged
	}
	s.commitStep(true) // sync what is stored
	if !s.commitOK.Load() || !s.ptr.Synced() {
		return // the next commit rewrites and syncs it; then again
	}
	rec := s.ptr.Record()
	if rec.Epoch != epoch || rec.Offset != end {
		s.log.Warn("deleted input file not forgotten: the pointer does not cover its last line",
			"path", s.cfg.Path, "offset", rec.Offset, "end", end)
		if r != nil {
			r.noForget = true
		}
		s.forget = nil
		s.forgetDue.Store(false)
		return
	}
	if s.cfg.holdDeleted != nil && s.cfg.holdDeleted(rec) {
		// A glob stream whose path now holds a live rotation's empty new
		// file: the record is kept as the only one of that path's
		// generations (the glob's forgetOrHold marks it held or forgets
		// it as the stream closes). Reset here, a kill -9 before that
		// file gets a pointer of its own, then lines written to it and
		// rotated away while tailfeed is down, lost them uncounted (audit
		// 11a: logrotate's compress deletes the renamed file at once).
		// Lines the application still appends to the deleted file through
		// its descriptor are read downgraded, as after the Reset: the
		// record stays at the end the held line names (its first bytes
		// those a .gz made of the file holds; review 30b: read on
		// positioned, the record outgrew the .gz, which a restart then
		// read again as a later generation).
		if r != nil {
			r.noForget = true
			r.epoch, r.positioned = pointer.NewEpoch(), false
		}
		s.keptDeleted = true
		s.forget = nil
		s.forgetDue.Store(false)
		s.log.Info("input file deleted after every line of it was committed; its pointer is kept for the empty new file at its path",
			"path", s.cfg.Path, "end", end)
		return
	}
	s.forget = nil
	s.forgotKey.Store(rec.FileKey)
	next := pointer.NewEpoch()
	err := s.ptr.Reset(next, nil, 0)
	// Done or owed, the mapping holds the empty record: the deleted file's
	// later lines must not move it.
	s.ptrEpoch = next
	s.forgot.Store(&[2]uint64{epoch, next}) // before the epoch: ReadEpoch
	s.epoch.Store(next)
	s.commit.stored = false
	if r != nil {
		r.epoch, r.positioned = pointer.NewEpoch(), false
	}
	s.log.Info("input file deleted after every line of it was committed; the pointer records that nothing of it is pending",
		"path", s.cfg.Path, "end", end, "epoch", fmt.Sprintf("%016x", next))
	if err != nil {
		s.forgetOwed = true
		s.commitFailures.Add(1)
		s.commitOK.Store(false)
		s.log.Error("pointer reset after a deleted file failed; retrying", "error", err)
		return
	}
	s.forgotten()
}

// finishForget finishes a Reset to the empty record whose msync failed.
func (s *Source) finishForget() {
	if err := s.ptr.Sync(); err != nil {
		s.commitFailures.Add(1)
		s.commitOK.Store(false)
		s.log.Error("pointer reset after a deleted file failed; retrying", "error", err)
		return
	}
	s.forgotten()
}

// forgotten records that the empty record is synced in both slots.
func (s *Source) forgotten() {
	s.forgetOwed = false
	s.syncedSeq.Store(s.ackSeq)
	s.commitOK.Store(true)
	s.dirty.Store(false)
	s.forgetDue.Store(false)
}

// noteClosed records, as the pointer's file r is closed for good, whether
// it is to be forgotten once its lines are acknowledged.
func (s *Source) noteClosed(r *reader) {
	if s.ptr == nil || !r.positioned || r.epoch != s.ptrEpoch {
		return
	}
	// The descriptor is closed: the fingerprint cannot be read from it
	// any more. A commit of lines read from it and acknowledged after the
	// close (DESIGN §3: the fingerprint grows at commit while it covers
	// < 4 KiB and the file is longer) grows it over the first bytes the
	// descriptor holds now, read before the close; nothing later.
	s.ptr.Bind(closedHead(r, s.ptr.Record().FPLen), r.key)
	if ok, _ := forgettable(r); ok {
		s.forget = &forget{epoch: r.epoch, offset: r.lineEnd()}
		s.forgetDue.Store(true)
	}
}

// closedHead is a copy of the first bytes (up to pointer.MaxFingerprint)
// r's descriptor holds, for the pointer to grow a fingerprint of fpLen
// bytes from once r is closed; nil when the fingerprint is whole or they
// cannot be read.
func closedHead(r *reader, fpLen uint64) io.ReaderAt {
	src := r.headSrc()
	if fpLen >= pointer.MaxFingerprint || src == nil || r.f == nil {
		return nil
	}
	b := make([]byte, pointer.MaxFingerprint)
	n, err := src.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil
	}
	return bytes.NewReader(b[:n])
}
