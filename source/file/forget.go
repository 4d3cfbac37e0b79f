package file

import (
	"fmt"

	"tailfeed/pointer"
)

// Forgetting a deleted file (DESIGN §4, issue 11 item 5). A file that was
// read to its end, committed and then deleted is not a lost tail: once it
// is closed with every line acknowledged, the pointer is Reset to an empty
// record (file key 0, fingerprint length 0, offset 0, new epoch), and a
// restart that cannot find the file loses nothing. Only a deleted file
// (st_nlink 0 on the open descriptor) is forgotten: a file renamed away
// with no new file at the path keeps the pointer, so that a restart finds
// it by its key and reads what was appended to it meanwhile, positioned.
//
// "Closed" is one of:
//   - rotateWait after the path went missing, the file is closed as the
//     current file (atEnd); the Reset waits until every line published is
//     acknowledged and the pointer covers the file's last line;
//   - the daemon stops (Close) with the deleted file open, its every byte
//     committed.
//
// A file whose last bytes are a partial line, or with a line never
// acknowledged, is not forgotten: a restart counts its tail lost. Until the
// Reset happened the feed is not settled (CommitOK false), so a launcher
// that waits for settled before a kill -9 never sees the tail counted.

// forget is a deleted file that left cur and is to be forgotten once the
// pointer covers it.
type forget struct {
	epoch, key uint64 // the pointer's record while it names the file
	offset     int64  // the offset after its last line
	next       uint64 // the empty record's epoch, once a Reset was tried
}

// noteDeleted records, as r leaves cur for good, that r is a deleted file
// read to its last line under the pointer's epoch: forgetDeleted empties the
// pointer once every line of it is committed.
func (s *Source) noteDeleted(r *reader) {
	if s.ptr == nil || r.epoch != s.ptrEpoch || r.unterminated() != 0 || !deleted(r.f) {
		return
	}
	s.forget = &forget{epoch: r.epoch, key: r.key, offset: r.consumed()}
	s.forgetDue.Store(true)
}

// forgetDeleted resets the pointer to an empty record once every line
// published is acknowledged and the pointer covers the deleted file's last
// line. Lines still unacknowledged: later (the source is woken when they
// are). The pointer short of the file's end with nothing pending, or moved
// to another record: give up, the pointer keeps naming the file.
func (s *Source) forgetDeleted() {
	fg := s.forget
	if fg == nil {
		return
	}
	if s.pub.Pending() > 0 || s.commit.inFlight || s.commit.pend {
		return
	}
	s.commitStep(true) // sync what is stored
	rec := s.ptr.Record()
	retry := fg.next != 0 && rec.Epoch == fg.next // a failed Reset is finished under its epoch
	if !retry && (rec.Epoch != fg.epoch || rec.FileKey != fg.key || rec.Offset != fg.offset) {
		s.log.Warn("deleted input file not forgotten: the pointer does not cover its last line",
			"path", s.cfg.Path, "offset", rec.Offset, "end", fg.offset)
		s.forget = nil
		s.forgetDue.Store(false)
		return
	}
	if fg.next == 0 {
		fg.next = pointer.NewEpoch()
	}
	if s.resetEmpty(fg.next, fg.offset) {
		s.forget = nil
		s.forgetDue.Store(false)
	}
}

// forgetAtClose forgets a deleted file at the stop: one that left cur and
// waits to be forgotten, or the current file, deleted, with every byte of it
// committed. Called by Close after the final commit.
func (s *Source) forgetAtClose() {
	if s.forget != nil {
		s.forgetDeleted()
		return
	}
	r := s.cur
	if r == nil || s.barrier || r.epoch != s.ptrEpoch || !s.ptr.Synced() || !deleted(r.f) {
		return
	}
	st, err := r.f.Stat()
	if err != nil {
		return
	}
	if rec := s.ptr.Record(); rec.Epoch == r.epoch && rec.FileKey == r.key && rec.Offset == st.Size() {
		s.resetEmpty(pointer.NewEpoch(), rec.Offset)
	}
}

// resetEmpty resets the pointer to an empty record under a new epoch.
func (s *Source) resetEmpty(epoch uint64, end int64) bool {
	if err := s.ptr.Reset(epoch, nil, 0); err != nil {
		s.commitFailures.Add(1)
		s.commitOK.Store(false)
		s.log.Error("pointer reset after a deleted file failed; retrying", "error", err)
		return false
	}
	s.log.Info("input file deleted after every line of it was committed; the pointer records that nothing of it is pending",
		"path", s.cfg.Path, "end", end, "epoch", fmt.Sprintf("%016x", epoch))
	s.ptrEpoch = epoch
	s.epoch.Store(epoch)
	s.syncedSeq.Store(s.ackSeq)
	s.commitOK.Store(true)
	s.commit.stored = false
	s.dirty.Store(false)
	return true
}
