package file

// Getters for the status report and metrics; safe from any goroutine.

// State is the source's state: FAILED while the path names something that
// is not a regular file (regular.go), even while a file left open by a
// rotation is still read.
func (s *Source) State() State {
	if s.pathFailed.Load() {
		return Failed
	}
	return State(s.state.Load())
}

// ForgotKey is the file key of the file whose pointer the source reset to
// the empty record (forgetStep: deleted after every line of it was
// committed); 0: none.
func (s *Source) ForgotKey() uint64 { return s.forgotKey.Load() }

// Opened reports whether the source ever opened its file or waited for
// one (a state past STARTING, not FAILED): /readyz's rule (DESIGN §12
// "Health") latched where it happens, so a feed that opens and fails
// before a readiness check looks still counts as having opened.
func (s *Source) Opened() bool { return s.opened.Load() }

// Epoch is the current file's epoch.
func (s *Source) Epoch() uint64 { return s.epoch.Load() }

// ReadEpoch is the epoch the current file's positioned lines were read
// under: Epoch, except once the pointer was reset to the empty record
// after its file was deleted (forgetStep): the epoch forgotten.
func (s *Source) ReadEpoch() uint64 {
	e := s.epoch.Load()
	if f := s.forgot.Load(); f != nil && f[1] == e {
		return f[0]
	}
	return e
}

// Detail is the latest notable event (rotation, truncation, reset), or "".
func (s *Source) Detail() string {
	if d := s.detail.Load(); d != nil {
		return *d
	}
	return ""
}

// ReadPos is the offset read up to in the current file.
func (s *Source) ReadPos() int64 { return s.readPos.Load() }

// Oversized counts lines delivered in pieces.
func (s *Source) Oversized() uint64 { return s.oversized.Load() }

// Unterminated is the number of bytes after the last terminator (once-read:
// at the end, none of them delivered; tailing: right now, pieces already
// delivered of a long line not ended yet included).
func (s *Source) Unterminated() int64 { return s.unterminated.Load() }

// Downgraded counts lines delivered without a position.
func (s *Source) Downgraded() uint64 { return s.downgraded.Load() }

// TornPending reports whether a compressed generation that did not end
// cleanly is waited for (its lines unread): the feed is not CAUGHT_UP.
func (s *Source) TornPending() bool { return s.tornN.Load() > 0 }

// LostTails counts files whose unread tail could not be read (DESIGN §4
// "Nothing green over a loss").
func (s *Source) LostTails() uint64 { return s.lostTails.Load() }

// LostBytes counts the bytes known to be gone, where known.
func (s *Source) LostBytes() uint64 { return s.lostBytes.Load() }

// lose counts tails lost files and bytes lost bytes under epoch and reports
// each nonzero counter to cfg.OnLoss. Source goroutine only.
func (s *Source) lose(tails, bytes, epoch uint64, detail string) {
	// The ledger first (OnLoss appends and fsyncs), then the counter: a
	// report never shows a loss the ledger does not hold yet.
	if tails > 0 {
		if s.cfg.OnLoss != nil {
			s.cfg.OnLoss(Loss{Counter: "lostTails", Amount: tails, Epoch: epoch, Detail: detail})
		}
		s.lostTails.Add(tails)
	}
	if bytes > 0 {
		if s.cfg.OnLoss != nil {
			s.cfg.OnLoss(Loss{Counter: "lostBytes", Amount: bytes, Epoch: epoch, Detail: detail})
		}
		s.lostBytes.Add(bytes)
	}
}

// CommitFailures counts failed pointer stores, msyncs and resets.
func (s *Source) CommitFailures() uint64 { return s.commitFailures.Load() }

// CommitOK reports whether the last commit attempt succeeded and is synced.
// While the pointer still names a deleted file that is to be forgotten
// (DESIGN §4), it is not: a kill -9 then would count the file's tail lost.
func (s *Source) CommitOK() bool {
	return s.commitOK.Load() && !s.dirty.Load() && !s.forgetDue.Load()
}

// SyncedSeq is the acknowledged sequence the last synced commit covers.
func (s *Source) SyncedSeq() uint64 { return s.syncedSeq.Load() }

// LinesRead counts lines read (batched) this run.
func (s *Source) LinesRead() uint64 { return s.linesRead.Load() }

// BytesRead counts bytes read this run.
func (s *Source) BytesRead() uint64 { return s.bytesRead.Load() }

// Forgot reports that the source forgot its pointer's file: deleted, read
// to its end, every line acknowledged (the pointer Reset to the empty
// record).
func (s *Source) Forgot() bool { return s.forgot.Load() != nil }

// FileIdentity is the open file's device and inode (open false: none).
func (s *Source) FileIdentity() (dev, ino uint64, open bool) {
	return s.fileDev.Load(), s.fileIno.Load(), s.fileOpen.Load()
}

// FileEnded reports that the open file is read to its end and its path is
// missing.
func (s *Source) FileEnded() bool { return s.fileEnded.Load() }

// VerifiedMod is the open file's modification time (UnixNano) when its
// content was last checked (size and first bytes, DESIGN §4 "Same-size
// rewrites"). A file whose mtime differs now was written since: the feed
// is not CAUGHT_UP until the source looked again.
func (s *Source) VerifiedMod() int64 { return s.verifiedMod.Load() }
