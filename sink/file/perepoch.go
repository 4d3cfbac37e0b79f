package file

import (
	"context"
	"fmt"

	"github.com/hashicorp/go-hclog"

	"tailfeed/feed"
	"tailfeed/processor"
)

// exactlyOnce per epoch (record2.go): the sink of a glob feed keeps one
// applied position per epoch, so that re-deliveries of every file are
// skipped when files interleave.

// openRecord2 loads the layout 2 record (or takes over a layout 1 one) and
// makes the output agree with it.
func (s *Sink) openRecord2() error {
	rec, err := loadRecord2(s.cfg.Record, s.cfg.OpenRecord)
	if err != nil {
		return err
	}
	log := s.cfg.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	var v1 *sideRecord
	if rec.copies[0] == nil && rec.copies[1] == nil {
		if v1, err = loadRecord(s.cfg.Record, s.cfg.OpenRecord); err == nil {
			defer v1.f.Close()
		} else {
			v1 = nil
		}
	}
	to, mustStore := rec.reconcile(s.size, log, v1)
	if to >= 0 && to < s.size {
		log.Info("truncating the output to its exactlyOnce record (an unrecorded tail will be delivered again)",
			"path", s.cfg.Path, "from", s.size, "to", to)
		if err := s.f.Truncate(to); err != nil {
			rec.f.Close()
			return fmt.Errorf("truncate %s to its record: %w", s.cfg.Path, err)
		}
		if s.cfg.Fsync != FsyncNever {
			if err := s.f.Sync(); err != nil {
				rec.f.Close()
				return fmt.Errorf("fsync %s: %w", s.cfg.Path, err)
			}
		}
		s.size, s.synced = to, to
	}
	if mustStore {
		if err := rec.store(s.size, true); err != nil {
			rec.f.Close()
			return err
		}
	}
	s.rec2 = rec
	s.noteLost(rec.lost)
	return nil
}

// processOnce2 is processOnce with the per-epoch record.
func (s *Sink) processOnce2(ctx context.Context, b *feed.Batch) (int, error) {
	skip := 0
	if pos, ok := s.rec2.applied(b.Epoch); ok {
		for skip < len(b.Lines) && b.AlreadyApplied(skip, b.Epoch, pos) {
			skip++
		}
	}
	if skip > 0 {
		v := &s.view
		*v = feed.Batch{Feed: b.Feed, Path: b.Path, Epoch: b.Epoch, Positioned: b.Positioned,
			FirstSeq: b.FirstSeq + uint64(skip), Lines: b.Lines[skip:], Ends: b.Ends[skip:], Through: b.Done()}
		b = v
	}
	if len(b.Lines) == 0 {
		s.passOver2(b)
		s.processBatch(ctx, b) // moves an interval's durable mark over the batch
		return skip, nil
	}
	before, beforeSynced := s.size, s.synced
	n, err := s.processBatch(ctx, b)
	if err != nil || n == 0 {
		return skip + n, err
	}
	undo, _ := s.rec2.put(b)
	if s.cfg.Fsync == FsyncInterval {
		return skip + n, nil // stored at the flush, after the output's fsync
	}
	if err := s.rec2.store(s.size, s.cfg.Fsync == FsyncAlways); err != nil {
		undo()
		s.size, s.synced = before, beforeSynced
		if terr := s.f.Truncate(before); terr != nil {
			s.broken = true
			return skip, fmt.Errorf("%w (truncate back failed: %v): %w", err, terr, processor.ErrFatal)
		}
		return skip, err
	}
	return skip + n, nil
}

// passOver2 is passOver with the per-epoch record.
func (s *Sink) passOver2(b *feed.Batch) {
	undo, moved := s.rec2.put(b)
	if !moved || (s.cfg.Fsync == FsyncInterval && !s.firstDirty.IsZero()) {
		return // nothing new, or stored at the flush
	}
	if err := s.rec2.store(s.size, s.cfg.Fsync == FsyncAlways); err != nil {
		undo()
		if s.cfg.Logger != nil {
			s.cfg.Logger.Warn("exactlyOnce record not advanced over lines finished without the sink", "error", err)
		}
	}
}

// storeFlushed2 stores the record after an interval flush.
func (s *Sink) storeFlushed2() error {
	return s.rec2.store(s.size, true)
}
