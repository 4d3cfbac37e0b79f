package file

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"tailfeed/pointer"
)

// atEnd handles the end of the current file; true when there is more to do
// at once. Before CAUGHT_UP it checks that the path still names the open
// file and that the file did not shrink or change its first bytes; a switch
// to the next file happens only here, once the current one is read to its
// end.
func (s *Source) atEnd() bool {
	r := s.cur
	switch s.cfg.Strategy {
	case OnceEarliest:
		if s.fillFrom(r, true) {
			return true
		}
		if r.gz == nil && r.limit >= 0 && (r.readPos() < r.limit || r.onceCut > 0) {
			// Its end came before the size it had at open (or a resumed
			// read's: onceCut): cut short while it was read (DESIGN §4
			// "Nothing green over a loss"; audit 8d, review 26e C) — the
			// bytes between are gone, counted once.
			lost := max(r.limit-r.readPos(), 0) + r.onceCut
			msg := fmt.Sprintf("input %s cut short while read once: it ended at %d of the %d bytes it had at open; the %d bytes past are lost",
				s.cfg.Path, r.readPos(), r.readPos()+lost, lost)
			s.log.Warn(msg, "path", s.cfg.Path, "read", r.readPos(), "atOpen", r.readPos()+lost, "lostBytes", lost)
			s.setDetail(msg)
			s.lose(1, uint64(lost), r.epoch, msg)
			r.limit, r.past, r.onceCut = r.readPos(), 0, 0
		}
		s.unterminated.Store(r.unterminated())
		s.setState(EndOfStream)
		s.closeOnceRead(r)
		return false
	case OnceLatest:
		s.setState(EndOfStream)
		s.closeOnceRead(r)
		return false
	}
	if !s.checked {
		s.check() // not yet in this cycle (a poll's check came before the read)
		if s.cur != r {
			return true // a copy of it became current (readCopy): read it first
		}
	}
	held := r.crHeld()
	if s.finalCR.Swap(false) && held && s.fillFrom(r, true) {
		return true // a last line ended by a lone '\r', taken as the glob asked
	}
	s.crHeld.Store(held)
	s.unterminated.Store(r.unterminated())
	switch {
	case len(s.next) > 0:
		switch s.switchDue(r, s.next[0]) {
		case switchNow:
			s.switchTo()
			return true
		case readMore:
			return true
		}
	case r.gone != "":
		// Its content changed and the path names nothing to reopen.
		if s.fillFrom(r, true) {
			return true // a last line ended by a lone '\r'
		}
		r.close()
		s.clearFile()
		return true
	case s.missing && time.Since(later(r.grewAt, s.missingSince)) >= s.cfg.RotateWait:
		if s.fillFrom(r, true) {
			return true // left for good: a last line ended by a lone '\r' is taken, positioned
		}
		if s.badPath != "" {
			s.log.Warn("input path names no regular file and the open file is read to its end; closing it", "path", s.cfg.Path)
		} else {
			s.log.Warn("input path is gone and the open file is read to its end; closing it", "path", s.cfg.Path)
		}
		s.noteHead(r) // before leave: without a pointer it retires r at once
		s.leave(r)
		s.clearFile()
		return true
	}
	if s.pollOld() {
		return true
	}
	s.forgetStep()
	s.fileEnded.Store(s.missing)
	if len(s.torn) > 0 {
		// A compressed generation is being written (or stays torn): its
		// lines are unread, so not CAUGHT_UP (D4); retryTorn looks again
		// at every poll and counts it lost past its bound.
		s.setState(Behind)
		return false
	}
	s.queuedAtRest.Store(len(s.next) > 0)
	s.setState(CaughtUp)
	return false
}

// check verifies, at the end of the open file and at every poll (even while
// paused), that the open file did not shrink below the read position or
// change its first bytes (then it is marked gone), and that the path still
// names it. It never switches files: a file the path names now is opened at
// once (the descriptor pins it) and queued; atEnd switches.
func (s *Source) check() {
	r := s.cur
	if r == nil || s.cfg.Strategy.Bounded() {
		return
	}
	s.checked = true
	if len(s.torn) > 0 {
		s.retryTorn()
	}
	odev, oino := r.dev, r.ino // the open file, before a copy of it may replace it (readCopy)
	if r.gone == "" {
		if why := s.changed(r); why != "" && !s.readCopy(r, why) {
			s.markGone(r, why)
		}
		r = s.cur
		if r.gone == "" {
			s.verifiedMod.Store(r.lastMod.UnixNano())
		}
	}
	s.checkQueued()
	dev, ino, err := statInput(s.cfg.Path)
	if err != nil {
		// Nothing there, or not a regular file (FAILED): either way the
		// path names no file to switch to; the open one is read on.
		s.pathErr(err)
		if !s.missing {
			s.missing, s.missingSince = true, time.Now()
		}
		s.watchAll.Store(true)
		return
	}
	if s.cfg.Pinned && (dev != r.dev || ino != r.ino) && !s.ownCutFile(r, dev, ino) {
		if s.adoptRenamedOver(r, dev, ino) {
			return
		}
		// A glob stream follows its file, not its path: another file at
		// the path is another stream (the glob source's), and this one is
		// read to its end as if the path were missing.
		if !s.missing {
			s.missing, s.missingSince = true, time.Now()
		}
		s.watchAll.Store(true)
		return
	}
	s.missing = false
	atPath := dev == r.dev && ino == r.ino
	s.watchAll.Store(!atPath || len(s.next) > 0 || len(s.old) > 0)
	if (atPath && r.gone == "") || s.queued(dev, ino) {
		s.pathFine(pathRegular)
		return
	}
	f, fdev, fino, err := openStable(s.cfg.Path, s.cfg.OpenHook)
	if err != nil {
		s.pathErr(err)
		return // gone again or replaced once more: the next check retries
	}
	s.pathFine(pathRegular) // only once it could be opened (S3)
	if s.queued(fdev, fino) || (fdev == r.dev && fino == r.ino && r.gone == "") {
		f.Close()
		return
	}
	if fdev != odev || fino != oino {
		// Not for the open file truncated or rewritten in place: that is
		// no rotation, and a copy of it (copytruncate) is no later
		// generation (readCopy reads it, or nothing of it is unread).
		s.queueLater(fdev, fino)
	}
	s.queueNext(f, fdev, fino)
	s.noteSeen()
}

// ownCutFile reports whether the path names a glob stream's own file
// (Config.PinKey) while the source reads that file's copy (readCopy: the
// file was truncated or rewritten in place, copytruncate). The file is
// still the stream's: queued behind the copy, it is read from its start
// under a new epoch once the copy is read to its end, and the barrier's
// Reset moves the pointer onto it, as for a single-file feed. Left as "the
// path missing", the source closed with the pointer still naming the
// file's old content, and the stream's next source, finding the file cut
// and the copy deleted meanwhile, counted a lost tail of a file whose
// every line was delivered.
func (s *Source) ownCutFile(r *reader, dev, ino uint64) bool {
	return r.copy && s.cfg.PinKey != 0 && pointer.FileKey(dev, ino) == s.cfg.PinKey
}

// adoptRenamedOver: a glob stream's open file was deleted and the path
// names a file with its content under a new key, no shorter than what was
// consumed (cp A A.tmp; echo more >> A.tmp; mv A.tmp A): that file is
// queued, and atEnd switches to it keeping the epoch and the position
// (switchTo's same-content path), as a single-file source does (DESIGN
// §3, §10: a copy of a file that disappeared is read from the old offset
// under the old stream). Only a file no other stream of the glob reads
// (Config.Adoptable); a file renamed away (not deleted) is still read by
// its stream, and the new file at the path is a stream of its own.
func (s *Source) adoptRenamedOver(r *reader, dev, ino uint64) bool {
	if s.cfg.Adoptable == nil || r.gone != "" || r.copy || r.gz != nil || !r.positioned || r.fpLen == 0 {
		return false
	}
	if s.adoptQ == pointer.FileKey(dev, ino) && s.queued(dev, ino) {
		return true // queued at an earlier look
	}
	if !deleted(r.f) || !s.cfg.Adoptable(pointer.FileKey(dev, ino)) {
		return false
	}
	f, fdev, fino, err := openStable(s.cfg.Path, s.cfg.OpenHook)
	if err != nil {
		return false
	}
	st, err := f.Stat()
	if err != nil || fdev != dev || fino != ino || !sameContent(r, &reader{f: f}, st.Size()) {
		f.Close()
		return false
	}
	s.missing = false
	s.queueNext(f, fdev, fino)
	s.adoptQ = pointer.FileKey(fdev, fino)
	return true
}

// changed reports why the open file's content is no longer what was read
// ("" when it still is): shorter than the read position, or first bytes
// that hash differently (re-verified whenever the size or mtime moved).
func (s *Source) changed(r *reader) string {
	if r.gz != nil {
		return "" // a compressed snapshot, checked to end cleanly when found
	}
	size, mod, err := fstatSizeMod(r.f)
	if err != nil {
		return ""
	}
	if size < r.readPos() {
		return fmt.Sprintf("truncated (size %d < read %d)", size, r.readPos())
	}
	if size == r.lastSize && mod == r.lastMod.UnixNano() {
		return ""
	}
	same, ferr := r.refreshFingerprint(size)
	if ferr != nil {
		return "" // not checked: lastSize and lastMod stay, the next look checks again
	}
	if same && r == s.cur {
		s.publishHead(r)
	}
	if !same {
		return "replaced in place (first bytes changed)"
	}
	if size < r.lastSize && r.gone == "" {
		// Cut short, still past what was read, its first bytes kept: the
		// same file read on, but the bytes seen past its new end are gone
		// (DESIGN §4 "Nothing green over a loss"; audit 8d).
		lost := r.lastSize - size
		msg := fmt.Sprintf("input %s cut short to %d bytes (last seen at %d, read to %d); the %d bytes seen past its new end are lost",
			s.cfg.Path, size, r.lastSize, r.readPos(), lost)
		s.log.Warn(msg, "path", s.cfg.Path, "size", size, "seen", r.lastSize, "read", r.readPos(), "lostBytes", lost)
		if r.epoch == 0 {
			// A queued file: its loss is named by the epoch its lines get
			// at the switch (as rewrittenUnread's; review 26e A) — unless
			// the switch finds it carries on the current file's content
			// (review 26f B, parked).
			r.epoch = pointer.NewEpoch()
		}
		s.setDetail(msg)
		s.lose(1, uint64(lost), r.epoch, msg)
	}
	r.lastSize, r.lastMod = size, time.Unix(0, mod)
	return ""
}

// markGone stops reading r: its lines already read are still published,
// then the source switches to the file the path names, from its start under
// a new epoch.
func (s *Source) markGone(r *reader, why string) {
	r.gone = why
	r.limit = r.readPos()
	if s.ptr != nil && r.epoch == s.ptrEpoch {
		// The descriptor no longer holds the epoch's bytes: commits of its
		// lines must not grow the fingerprint over the new content.
		s.ptr.Bind(nil, r.key)
	}
	msg := fmt.Sprintf("input %s %s; reading it from its start under a new epoch", s.cfg.Path, why)
	// No copy holds what the source saw past its read position: those
	// bytes are gone (DESIGN §4 "Nothing green over a loss").
	if lost := r.lastSize - r.readPos(); lost > 0 {
		msg = fmt.Sprintf("input %s %s with no copy found; %d bytes seen past the read position %d are lost; reading it from its start under a new epoch",
			s.cfg.Path, why, lost, r.readPos())
		s.log.Warn(msg, "path", s.cfg.Path, "reason", why, "read", r.readPos(), "seen", r.lastSize, "lostBytes", lost)
		s.setDetail(msg)
		s.lostTail = true
		s.lose(1, uint64(lost), r.epoch, msg)
		return
	}
	s.log.Warn(msg, "path", s.cfg.Path, "reason", why, "read", r.readPos())
	s.setDetail(msg)
}

// readCopy handles a truncation or an in-place rewrite that left a copy of
// the old content in the directory (copytruncate; cp then truncate): the
// copy is read from what was consumed of r, under r's epoch, before the
// file at the path is read from its start. r's unconsumed bytes are
// dropped: the copy holds them. False when no copy is found.
func (s *Source) readCopy(r *reader, why string) bool {
	var c *reader
	var size int64 // the copy's (decompressed) size
	if cf, dev, ino := s.findCopy(r.fpLen, r.fp, r.consumed(), time.Now(), s.known); cf != nil {
		c = s.newReader(cf, dev, ino)
		c.seek(r.lineEnd()) // (after a skipped '\n', before it: skipped again, nlTaken kept)
		st, err := cf.Stat()
		if err != nil {
			s.tookCopy(pointer.FileKey(dev, ino), r.epoch, 0, 0, 0, birthTime(cf))
			c.close()
			return false
		}
		size = st.Size()
		s.tookCopy(pointer.FileKey(dev, ino), r.epoch, r.fpLen, r.fp, size, birthTime(cf))
		c.lastSize, c.lastMod = st.Size(), st.ModTime()
		c.snapshot(st.Size())
	} else if c = s.findGzCopy(pointer.Record{FPLen: uint64(r.fpLen), FP: r.fp, Offset: r.consumed()}, s.known); c != nil {
		// copytruncate + compress: the copy is already app.log.1.gz.
		size = c.limit
		s.tookCopy(c.key, r.epoch, c.fpLen, c.fp, size, birthTime(c.f))
	} else {
		if key, size, ok := s.findShortCopy(r, r.consumed(), time.Now()); ok {
			// A copy taken before this source read on holds nothing it
			// had not consumed: nothing to read from it, but it is this
			// file's copy (the glob does not read it again: CopiesRead,
			// CopyKey).
			s.log.Info("input truncated; its copy holds nothing unread", "path", s.cfg.Path, "offset", r.consumed())
			s.tookCopy(key, r.epoch, r.fpLen, r.fp, size, time.Time{}) // its first bytes are r's
			s.copiesRead.Add(1)
		}
		return false
	}
	cf := c.f
	c.epoch, c.positioned, c.fpLen, c.fp = r.epoch, r.positioned, r.fpLen, r.fp
	msg := fmt.Sprintf("input %s %s; reading its copy %s from offset %d first, then the file from its start under a new epoch",
		s.cfg.Path, why, filepath.Base(cf.Name()), r.consumed())
	s.log.Warn(msg, "path", s.cfg.Path, "reason", why, "copy", cf.Name(), "offset", r.consumed())
	s.setDetail(msg)
	// The source saw the original longer than the copy turned out to be:
	// what was written between the copy and the truncate is in neither.
	if lost := max(r.lastSize, r.readPos()) - size; lost > 0 {
		lmsg := fmt.Sprintf("input %s: its copy %s holds %d bytes, but the file was seen at %d; the %d bytes written between the copy and the truncation are lost",
			s.cfg.Path, filepath.Base(cf.Name()), size, max(r.lastSize, r.readPos()), lost)
		s.log.Warn(lmsg, "path", s.cfg.Path, "copy", cf.Name(), "lostBytes", lost)
		s.setDetail(lmsg)
		s.lostTail = true
		s.lose(1, uint64(lost), r.epoch, lmsg)
	}
	r.close()
	s.cur = c
	s.setFile(c)
	s.copiesRead.Add(1)
	if s.ptr != nil && !s.barrier && r.positioned && r.epoch == s.ptrEpoch {
		s.ptr.Bind(c.headSrc(), c.key)
	}
	return true
}

// checkQueued looks at the files queued and not read yet. One truncated or
// rewritten meanwhile (a second copytruncate while the source still reads
// the first copy) may have left a copy of what it held: the copy is queued
// before it, to be read from 0 under an epoch of its own.
func (s *Source) checkQueued() {
	for i := 0; i < len(s.next); i++ {
		nx := s.next[i]
		why := s.changed(nx)
		if why == "" {
			continue
		}
		if c := s.rewrittenUnread(nx, why); c != nil {
			c.queuedAt = nx.queuedAt
			s.next = slices.Insert(s.next, i, c)
			i++
		}
	}
}

// rewrittenUnread handles a file of which nothing was read yet (queued, or
// current behind the barrier) that was truncated or rewritten since it was
// fingerprinted: its copy, when one is found, is returned (a snapshot, to be
// read from 0 before it); what was seen of it and is in no copy is counted
// lost. nx is fingerprinted afresh, to be read from 0. A queued file has no
// epoch yet: it gets the one it will be read under, so that the loss names
// it (never epoch 0).
func (s *Source) rewrittenUnread(nx *reader, why string) *reader {
	if nx.epoch == 0 {
		nx.epoch = pointer.NewEpoch()
	}
	fpLen, fp := nx.fpLen, nx.fp
	cf, dev, ino := s.findCopy(nx.fpLen, nx.fp, int64(nx.fpLen), time.Now(), s.known)
	// Nothing of it was read: all it held is in its copy or lost.
	seen := nx.lastSize
	nx.fpLen, nx.fp = 0, 0
	nx.headStat(nil)
	var c *reader
	var size int64 // the copy's (decompressed) size
	if cf != nil {
		c = s.newReader(cf, dev, ino)
		if st, err := cf.Stat(); err == nil {
			c.refreshFingerprint(st.Size())
			c.lastSize, c.lastMod = st.Size(), st.ModTime()
			c.snapshot(st.Size())
			size = st.Size()
		} else {
			size = seen // unknown: nothing counted
		}
	} else if fpLen > 0 {
		// copytruncate + compress: the copy is already a .gz (as readCopy).
		if c = s.findGzCopy(pointer.Record{FPLen: uint64(fpLen), FP: fp}, s.known); c != nil {
			size = c.limit
		}
	}
	if c == nil {
		msg := fmt.Sprintf("a queued input file was %s before it was read, and no copy of it was found; its %d bytes are lost", why, seen)
		s.log.Warn(msg, "path", s.cfg.Path, "file", nx.f.Name())
		if seen > 0 {
			s.setDetail(msg)
			s.lostTail = true
			s.lose(1, uint64(seen), nx.epoch, msg)
		}
		return nil
	}
	c.queuedAt = time.Now()
	if lost := seen - size; lost > 0 {
		msg := fmt.Sprintf("a queued input file was %s before it was read; its copy %s holds %d bytes of the %d seen, %d are lost",
			why, filepath.Base(c.f.Name()), size, seen, lost)
		s.log.Warn(msg, "path", s.cfg.Path, "copy", c.f.Name())
		s.setDetail(msg)
		s.lostTail = true
		s.lose(1, uint64(lost), nx.epoch, msg)
	}
	s.log.Warn("a queued input file was "+why+" before it was read; reading its copy first",
		"path", s.cfg.Path, "copy", c.f.Name())
	return c
}

// known reports whether the source holds a file with that identity.
func (s *Source) known(dev, ino uint64) bool {
	return (s.cur != nil && s.cur.dev == dev && s.cur.ino == ino) || s.queued(dev, ino) || s.retired(dev, ino)
}

// retired reports whether a switched-away file has that identity.
func (s *Source) retired(dev, ino uint64) bool {
	for _, o := range s.old {
		if o.dev == dev && o.ino == ino {
			return true
		}
	}
	return false
}

// queued reports whether a file with that identity is already queued.
func (s *Source) queued(dev, ino uint64) bool {
	for _, n := range s.next {
		if n.dev == dev && n.ino == ino {
			return true
		}
	}
	return false
}

// queueNext queues a file found at the path after a rotation.
func (s *Source) queueNext(f *os.File, dev, ino uint64) {
	r := s.newReader(f, dev, ino)
	r.queuedAt = time.Now()
	r.headStat(nil) // to notice a truncation before it is read, one made meanwhile too
	s.log.Info("input path names a new file; queued behind the open one", "path", s.cfg.Path, "queued", len(s.next)+1)
	s.next = append(s.next, r)
	s.watchAll.Store(true)
}

// Decisions of switchDue.
const (
	stay      = iota // keep the current file (wait)
	switchNow        // switch to the next file
	readMore         // the current file grew: read it first
)

// switchDue decides whether to leave r for nx: at once when r's content is
// gone; otherwise when nx has bytes or rotateWait passed since the rotation
// was noticed and r last grew. A last read of r comes after the look at nx:
// a writer that moved to nx finished with r first, so its lines are read
// here rather than downgraded. r is left for good, so its buffer is split
// as final first: a last line ended by a lone '\r' is published, under r's
// epoch with its position, before the switch.
func (s *Source) switchDue(r, nx *reader) int {
	if r.gone != "" {
		if s.fillFrom(r, true) {
			return readMore
		}
		return switchNow
	}
	if r.copy && r.gz == nil && copyGrew(r) {
		// Lines appended to the copy since it was taken (its snapshot's
		// size): read here, under its epoch, before the cut file — the
		// glob takes the copy as read to the size it sees.
		return readMore
	}
	st, err := nx.f.Stat()
	hasBytes := err == nil && st.Size() > 0
	if !hasBytes && time.Since(later(r.grewAt, nx.queuedAt)) < s.cfg.RotateWait {
		return stay
	}
	if n, err := s.readCur(); n > 0 || err != nil || s.fillFrom(r, true) {
		if n > 0 {
			s.unverifiedRead(n) // checked before published, as in Run
		}
		return readMore
	}
	return switchNow
}

// copyGrew: the copytruncate copy r grew past the size it was taken at
// (its snapshot): its limit moves to its size now.
func copyGrew(r *reader) bool {
	size, _, err := fstatSizeMod(r.f)
	if err != nil || size <= r.limit {
		return false
	}
	r.limit = size
	return true
}

// switchTo makes the first queued file current. A file with the same first
// bytes and no shorter than the position is the same file under a new key
// (copy-up): it keeps the epoch and position, and the old descriptor is
// retired like any other (an application may still append to it). Anything
// else starts a new epoch at 0 behind the barrier. A copytruncate copy is
// closed, never retired: it is a snapshot, and the file after it is the
// truncated one (new content, never "the same file").
func (s *Source) switchTo() {
	old, nx := s.cur, s.next[0]
	s.next[0] = nil
	s.next = s.next[1:]
	// nx's lastSize and lastMod stay those it was checked at (queued,
	// checkQueued): crossBarrier checks it before its first read.
	st, err := nx.f.Stat()
	if err == nil && old.gone == "" && !old.copy && old.positioned && nx.key != old.key && sameContent(old, nx, st.Size()) {
		s.log.Warn("input has a new file key but the same content; continuing at the same position",
			"path", s.cfg.Path, "position", old.consumed())
		nx.epoch = old.epoch
		nx.seek(old.lineEnd()) // (after a skipped '\n', before it: skipped again, nlTaken kept)
		nx.fpLen, nx.fp = old.fpLen, old.fp
		nx.crTaken = old.crTaken || old.nlTaken // a last line taken at a trailing '\r' before the switch
		s.retireKept(old, nx)
		s.cur = nx
		s.setFile(nx)
		if s.ptr != nil {
			s.ptr.Bind(nx.f, nx.key)
		}
		if s.cfg.Pinned && nx.key == s.adoptQ {
			s.adoptedAt.Store(time.Now().UnixNano())
			s.adopted.Store(nx.key) // the glob's stream follows the new key
		}
		return
	}
	if s.cfg.Pinned && nx.key == s.adoptQ {
		// Queued by adoptRenamedOver, no longer the same content: not
		// this stream's file (the glob reads it as a stream of its own).
		nx.close()
		s.missing, s.missingSince = true, time.Now()
		return
	}
	if old.gone != "" || old.copy {
		if old.gz != nil {
			// A compressed generation read to its end: noted as switched
			// away from, as a plain one is (the glob tells by it that a
			// listed file it handed to this stream was read: handed.go).
			s.noteDone(old, false)
		}
		old.close()
	} else {
		s.retire(old)
	}
	if nx.epoch == 0 { // else given when a loss of it was counted (rewrittenUnread)
		nx.epoch = pointer.NewEpoch()
	}
	s.cur, s.barrier = nx, true
	s.setFile(nx)
	s.log.Info("switching to the next file from its start under a new epoch", "path", s.cfg.Path,
		"previous", old.consumed())
}

// sameContent reports whether nx (size bytes) starts with the bytes old's
// fingerprint covers and is no shorter than what old consumed.
func sameContent(old, nx *reader, size int64) bool {
	if old.fpLen == 0 || size < old.consumed() {
		return false
	}
	b := make([]byte, old.fpLen)
	n, _ := nx.f.ReadAt(b, 0)
	return n == old.fpLen && pointer.Fingerprint(b) == old.fp
}

// retireKept retires old after a switch to nx, the same content under a
// new key. nx carries on old's epoch and positions, so old's later lines get
// an epoch of their own (their (epoch, position) must not name a line of
// nx). nx reads again from the start of the partial line old holds; old
// keeps its partial line too: the two files may end it differently (a
// copier's "echo >>" in nx, the application's own bytes in old). Once old
// ends it, the line is left to nx if nx holds it byte for byte at the same
// offset, else old delivers it whole (reader.leaveToTwin).
func (s *Source) retireKept(old, nx *reader) {
	if old.end > old.start {
		old.twin = nx.f
	}
	s.retire(old)
}

// retire keeps a switched-away file watched for rotateWait (longer while it
// grows): lines appended to it are delivered without a position
// (downgraded), under an epoch of their own (fresh, never in a pointer) and
// with their real byte position in the file, so that (feed, epoch,
// position) names one line for every sink (DESIGN §4 "Epoch barrier").
// Lines of r already published keep the epoch they were published under.
// A file already downgraded (forgotten) keeps its epoch of its own.
func (s *Source) retire(r *reader) {
	if r.positioned {
		from := r.epoch
		r.epoch = pointer.NewEpoch()
		r.positioned = false
		s.logDowngraded(r, from)
	}
	r.closeAt = time.Now().Add(s.cfg.RotateWait)
	s.old = append(s.old, r)
	s.watchAll.Store(true)
	s.noteDone(r, false)
}

// logDowngraded records in the epochs file that r's lines from where it
// was consumed on carry r's new epoch of its own instead of from (a
// pointer epoch; the lines of from published so far end there), so that a
// catch-up reading r's file again delivers them as they were delivered
// (splitDowngraded). Only for files named by a pointer epoch.
func (s *Source) logDowngraded(r *reader, from uint64) {
	if s.ptr == nil || from == 0 || r.f == nil {
		return
	}
	s.ptr.LogDowngraded(r.epoch, from, r.consumed(), r.key, uint64(r.fpLen), r.fp, r.f.Name())
}

// splitDowngraded makes r, read again under the pointer epoch r.epoch, stop
// that epoch where its late lines were delivered downgraded (the epochs
// file's "downgraded" line for it) and deliver them from there under the
// epoch they had, without a position (DESIGN §11: a catch-up keeps
// (epoch, position) as first delivered).
func (s *Source) splitDowngraded(r *reader) {
	if s.ptr == nil || !r.positioned {
		return
	}
	l, ok := s.ptr.Downgraded(r.epoch)
	if !ok || l.DownAt <= 0 {
		return
	}
	if r.consumed() >= l.DownAt {
		r.epoch, r.positioned = l.Epoch, false
		return
	}
	r.downAt, r.downEpoch = l.DownAt, l.Epoch
	s.log.Info("reading a file again: its lines past the epoch's end are delivered under the epoch they were delivered under (downgraded)",
		"file", r.f.Name(), "epochEnd", l.DownAt, "downgradedEpoch", fmt.Sprintf("%016x", l.Epoch))
}

// leave closes r as the current file when the path stayed missing for
// rotateWait. The pointer's file (renamed away, or deleted with lines not
// yet acknowledged) is kept watched under the pointer's epoch, its lines
// positioned: no other file took the pointer, so a restart would resume it
// at the pointer and read those lines again, under the same (epoch,
// position). Its lines get an epoch of their own only when another file
// takes the pointer (the barrier's Reset). Any other file is retired.
func (s *Source) leave(r *reader) {
	if s.ptr == nil || !r.positioned || r.epoch != s.ptrEpoch {
		s.retire(r)
		return
	}
	r.closeAt = time.Now().Add(s.cfg.RotateWait)
	s.old = append(s.old, r)
	s.watchAll.Store(true)
}

// pollOld reads lines appended to switched-away files into s.pending (one
// batch; true when it made one) and closes those watched long enough.
func (s *Source) pollOld() bool {
	if s.pending != nil || len(s.old) == 0 {
		return false
	}
	filled := false
	keep := s.old[:0]
	for _, r := range s.old {
		if !filled {
			filled = s.fillFrom(r, false)
			if !filled {
				n, _ := r.read()
				s.countGzLost(r)
				if n > 0 {
					r.closeAt = later(r.closeAt, r.grewAt.Add(s.cfg.RotateWait))
					filled = s.fillFrom(r, false)
				}
			}
		}
		if !filled && time.Now().After(r.closeAt) {
			// Watched long enough: a last line ended by a lone '\r' is
			// taken (closed at the next look); a partial line left in it
			// never ended.
			if filled = s.fillFrom(r, true); !filled {
				s.noteClosed(r)
				s.seenAtClose(r)
				s.moveResume(r)
				s.noteDone(r, true)
				r.close()
				continue
			}
		}
		keep = append(keep, r)
	}
	clear(s.old[len(keep):])
	s.old = keep
	if filled {
		s.kick = true // more may follow: look again next cycle
	}
	return filled
}

// crossBarrier starts the current file's epoch once every line of the
// previous epoch is acknowledged: commit, then Reset the pointer.
//
// While it waits the feed reports paused (it reads nothing), with the reason
// below; the pause ends once the barrier is crossed.
func (s *Source) crossBarrier() bool {
	if s.pub.Pending() > 0 {
		s.commitStep(false)
		if s.pub.Pending() > 0 {
			if !s.pub.Paused() || s.pub.PauseReason() != whyBarrier {
				s.pub.SetPaused(true, whyBarrier)
			}
			s.pub.SetBarrier(s.cur.epoch) // a webhook rebuilding a request of the old epoch stops waiting
			return false
		}
	}
	s.commitStep(true)
	s.checkBeforeBarrier()
	r := s.cur
	if s.ptr != nil && !s.resetToCur() {
		return false
	}
	s.barrier = false
	s.epoch.Store(r.epoch)
	s.pub.SetBarrier(0)
	s.pub.SetPaused(false, "")
	return true
}

// checkBeforeBarrier checks the current file, of which nothing was read,
// before its epoch starts: rewritten or truncated since it was queued (a
// poll-only file system, a rewrite less than one poll before the barrier is
// crossed), it is handled as checkQueued would have: its copy, if any,
// becomes current (under the new epoch, a snapshot) and the file is queued
// behind it, fingerprinted afresh; what was seen of it and is in no copy is
// counted lost. Never recorded as checked when it was not.
func (s *Source) checkBeforeBarrier() {
	r := s.cur
	if r == nil || r.gz != nil || r.copy || r.readPos() != 0 || s.cfg.Strategy.Bounded() {
		return
	}
	why := s.changed(r)
	if why == "" {
		// Unchanged: the fingerprint covers what the epoch starts with (a
		// file opened at the path was never fingerprinted; a same-content
		// copy of it is recognised by it).
		if st, err := r.f.Stat(); err == nil && int64(r.fpLen) < min(st.Size(), pointer.MaxFingerprint) {
			if same, err := r.refreshFingerprint(st.Size()); err == nil && same {
				r.lastSize, r.lastMod = st.Size(), st.ModTime()
			}
		}
		return
	}
	c := s.rewrittenUnread(r, why)
	if c == nil {
		return
	}
	c.epoch, r.epoch = r.epoch, 0
	r.queuedAt = time.Now()
	s.next = slices.Insert(s.next, 0, r)
	s.cur = c
	s.setFile(c)
	s.watchAll.Store(true)
}

// resetToCur Resets the pointer to the current file's epoch at 0 (the
// barrier). A file kept under the previous epoch (renamed away, leave)
// gets an epoch of its own from here on: its later lines are downgraded.
func (s *Source) resetToCur() bool {
	r := s.cur
	if e := s.knownEpoch(r); e != 0 && e != s.ptrEpoch && r.readPos() == 0 {
		// Nothing of r is published yet (the barrier): a catch-up reads it
		// again under the epoch it had.
		s.log.Info("catch-up: reading a file under the epoch it was read under before", "file", r.f.Name(),
			"epoch", fmt.Sprintf("%016x", e))
		r.epoch = e
		s.splitDowngraded(r)
	}
	if err := s.ptr.Reset(r.epoch, r.headSrc(), r.key); err != nil {
		s.commitFailures.Add(1)
		s.commitOK.Store(false)
		s.log.Error("pointer reset failed; retrying", "error", err)
		return false
	}
	for _, o := range s.old {
		if o.positioned && o.epoch == s.ptrEpoch {
			o.epoch, o.positioned = pointer.NewEpoch(), false
			s.logDowngraded(o, s.ptrEpoch)
		}
	}
	s.ptrEpoch = r.epoch
	s.syncedSeq.Store(s.ackSeq)
	s.commitOK.Store(true)
	s.commit.stored = false
	s.dirty.Store(false)
	s.forget, s.forgetOwed = nil, false
	s.forgetDue.Store(false)
	return true
}

// barrierAtClose finishes the epoch barrier at the stop (Close, after the
// final commit) when every line of the previous epoch is acknowledged and
// the synced record covers it: the pointer is Reset to the current file,
// of which nothing was published yet, as crossBarrier would have done. Left
// waiting, the pointer would name the previous file, and a restart that
// cannot find it (deleted and recreated) would count a lost tail. Not when
// Drain released an unpublished batch, or while a file renamed away still
// holds the pointer (leave): then the restart resumes it at the pointer and
// reads the current file from its start after it.
func (s *Source) barrierAtClose() {
	if s.dropped || s.pub.Pending() > 0 || !s.commitOK.Load() || !s.ptr.Synced() {
		return
	}
	if r := s.ptrFile(); r != nil && !deleted(r.f) {
		return
	}
	if s.resetToCur() {
		s.barrier = false
		s.epoch.Store(s.cur.epoch)
	}
}

// switchAtClose makes, at the stop, the switch from a glob stream's copy
// to its own cut file (ownCutFile) that atEnd would have made once
// rotateWait passed: when the copy is read to its end and every line is
// acknowledged and synced, the pointer is Reset onto the cut file
// (barrierAtClose), as a single-file feed's pointer is once it crossed the
// barrier. Left on the copy, the pointer named the file's old content: a
// stream preempted (maxOpenFiles) or stopped in that wait, whose copy was
// then deleted, counted a lost tail at its next open, with every line
// delivered.
func (s *Source) switchAtClose() {
	r := s.cur
	if s.ptr == nil || s.barrier || r == nil || !r.copy || r.gz != nil || len(s.next) == 0 ||
		s.dropped || s.pending != nil || r.consumed() < r.limit {
		return
	}
	if nx := s.next[0]; !s.ownCutFile(r, nx.dev, nx.ino) || copyGrew(r) {
		return // (grown: left on the copy, the next source reads on in it)
	}
	if s.pub.Pending() > 0 || !s.commitOK.Load() || !s.ptr.Synced() {
		return
	}
	s.switchTo()
	s.barrierAtClose()
}

// whyBarrier is the pause reason while the epoch barrier waits.
const whyBarrier = "epoch switch waits for the previous file's lines"

// later returns the later of two times.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// closeOnceRead closes a once-read's file at END_OF_STREAM: nothing more is
// read from it (its pointer keeps its identity), and a file deleted after
// it was read must not stay pinned on disk for the daemon's life (audit
// 10C: 8 MiB held "(deleted)"; a glob's once-read streams are closed
// already). Its last size stays known (readerSize).
func (s *Source) closeOnceRead(r *reader) {
	if r.f == nil || r.gz != nil || s.cfg.Pinned {
		return // a glob stream is closed by its glob, once acknowledged (its inode held till then)
	}
	r.lastSize = readerSize(r)
	r.close()
}
