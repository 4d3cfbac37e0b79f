package file

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"

	"tailfeed/feed"
	"tailfeed/internal/fileutil"
	"tailfeed/internal/ndjson"
	"tailfeed/pointer"
	"tailfeed/processor"
)

// FsyncMode is the file sink's durability policy.
type FsyncMode int

const (
	FsyncNever    FsyncMode = iota // survives kill -9 (page cache), not power loss
	FsyncInterval                  // sync at most Interval after the first unsynced write
	FsyncAlways                    // sync before the lines count as dispatched
)

// SinkFile is the file a sink writes: the seam for fault injection.
type SinkFile interface {
	io.Writer
	Truncate(size int64) error
	Sync() error
	Close() error
}

// Config configures a file sink.
type Config struct {
	Path     string
	Fsync    FsyncMode
	Interval time.Duration
	// Mode is the output's permission bits (0: DefaultSinkMode). The
	// default Open creates the output with it and sets it on an existing
	// output whose bits differ (umask aside: the file gets exactly Mode).
	Mode os.FileMode
	// Open opens the output (nil: os.OpenFile append-only, with Mode).
	Open func(path string) (SinkFile, int64, error)
	// Checkpoint is the group's checkpoint (required for FsyncInterval).
	Checkpoint processor.Checkpoint
	// Record is the exactlyOnce side record's path
	// (dataDir/state/<processor>.rec); "" = exactlyOnce off. See exactlyonce.go.
	Record string
	// PerEpoch: the record keeps one applied position per epoch (layout 2,
	// record2.go): the feed is a glob, its files' lines interleave.
	PerEpoch bool
	// EpochsFile is the feed's epochs file (dataDir/feeds/<feed>.epochs;
	// "": none). With exactlyOnce and a one-epoch record (layout 1), a
	// line of an older epoch that the file shows complete before the
	// record's epoch began is skipped as applied (pointer.HeldBefore): a
	// catch-up for another sink does not write it twice.
	EpochsFile string
	// OpenRecord opens the side record (nil: os.OpenFile read-write, created 0600).
	OpenRecord func(path string) (RecordFile, error)
	// SyncDir fsyncs a directory (nil: fileutil.SyncDir); under fsync
	// always or interval it makes the entry of an output it created
	// durable before the sink is used.
	SyncDir func(dir string) error
	// Logger receives the exactlyOnce WARNs at open (nil: none).
	Logger hclog.Logger
	// JSON writes internal/ndjson's object per line (`format: json`)
	// instead of the line's bytes; everything else (one write per batch,
	// truncation, fsync, the exactlyOnce record's length) is about the
	// bytes written, whatever they are.
	JSON bool
	// SyncLines (interval only): also sync as soon as this many lines wait
	// for their fsync; 0 = off. The daemon passes half of maxPendingAcks, so
	// that a busy feed's acknowledgement window never fills waiting for the
	// interval (syncing sooner than the interval is always allowed).
	SyncLines int
}

// maxUnsynced bounds the bytes an interval sink keeps for a rewrite after a
// failed fsync; past it the sink syncs inline.
const maxUnsynced = 8 << 20

// Sink appends each line's raw bytes plus '\n' with one write(2) per
// batch, done before the lines count as dispatched.
//
// On a failed or short write it truncates back to the length before the write
// and reports nothing done; if that truncate fails the error wraps ErrFatal and
// the subscriber stays fenced. With FsyncInterval the queue's ack point waits
// for the fsync (a hold): a failed fsync truncates to the last synced length,
// rewrites the lines after it and syncs again.
type Sink struct {
	cfg  Config
	f    SinkFile
	size int64           // bytes in the file
	out  ndjson.Renderer // raw lines, or format json

	// FsyncInterval only.
	synced     int64     // length known durable
	unsynced   []byte    // bytes written after synced, kept for a rewrite
	firstDirty time.Time // zero when nothing is unsynced
	dirtyMark  uint64    // checkpoint mark through the last write
	syncedMark uint64    // checkpoint mark the last DurableThrough reported
	broken     bool      // the file's tail is in an unknown state: rewrite before anything else

	// A plain output (not exactlyOnce) that is a regular file (reopen.go):
	// plain, a cut by another program (copytruncate) is noticed; follow
	// (the default Open), a rename or removal is followed.
	plain     bool
	follow    bool
	dev, ino  uint64    // the open output's identity
	checkedAt time.Time // the path's last look

	// exactlyOnce only (exactlyonce.go).
	rec     *sideRecord
	rec2    *epochRecord     // PerEpoch (perepoch.go)
	applied applied          // last line written (stored in rec, or to be at the next flush)
	view    feed.Batch       // the lines of a batch not applied yet
	marks   []processor.Mark // the record's done-through marks at open (DoneThrough)
	held    pointer.Held     // layout 1: older epochs held (Config.EpochsFile)
	doubt   string           // DoneThroughDoubt
}

// Open opens (creating) the output file. Under fsync always or
// interval, an output it created gets its directory fsynced, so that a power
// loss cannot take the new file's entry (and every synced line in it) away.
func Open(cfg Config) (*Sink, error) {
	if cfg.SyncDir == nil {
		cfg.SyncDir = fileutil.SyncDir
	}
	syncDir := cfg.SyncDir
	if cfg.Mode == 0 {
		cfg.Mode = DefaultSinkMode
	}
	open := cfg.Open
	if open == nil {
		open = func(path string) (SinkFile, int64, error) { return openOutput(path, cfg.Mode, cfg.Logger) }
		if err := makeParents(cfg.Path, cfg.Fsync != FsyncNever, syncDir); err != nil {
			return nil, err
		}
	}
	_, serr := os.Stat(cfg.Path)
	created := errors.Is(serr, fs.ErrNotExist)
	f, size, err := open(cfg.Path)
	if cfg.Open == nil {
		f, size, err = cfg.fifoOutput(f, size, err)
	}
	if err != nil {
		return nil, err
	}
	if created && cfg.Fsync != FsyncNever {
		if err := syncDir(filepath.Dir(cfg.Path)); err != nil {
			f.Close()
			return nil, fmt.Errorf("fsync the directory of %s: %w", cfg.Path, err)
		}
	}
	s := &Sink{cfg: cfg, f: f, size: size, synced: size, held: pointer.Held{Path: cfg.EpochsFile}}
	s.out.JSON = cfg.JSON
	if cfg.Open == nil {
		if err := s.cutTornTail(); err != nil {
			f.Close()
			return nil, err
		}
	}
	if cfg.Record != "" {
		if err := s.openRecord(); err != nil {
			f.Close()
			return nil, err
		}
		s.marks = s.recordMarks()
	}
	if cfg.Record == "" {
		s.followFile()
	}
	if cfg.Fsync == FsyncInterval {
		cfg.Checkpoint.Hold()
	}
	return s, nil
}

// fifoOutput gives what the default open of the output gave (f, size,
// err) as a fifoOutput when the path is a FIFO: one without a reader yet
// is opened at the first write (fifo.go), the subscriber retrying, fenced,
// until a reader is there; one with a reader now is held and retried the
// same way when that reader goes away.
func (cfg Config) fifoOutput(f SinkFile, size int64, err error) (SinkFile, int64, error) {
	if err != nil && isNoReader(err) {
		if cfg.Logger != nil {
			cfg.Logger.Warn("the output is a FIFO that no process reads yet; the subscriber holds its lines and retries until a reader opens it",
				"path", cfg.Path)
		}
		return &fifoOutput{path: cfg.Path, mode: cfg.Mode, log: cfg.Logger}, 0, nil
	}
	if err == nil {
		if st, serr := os.Stat(cfg.Path); serr == nil && st.Mode()&fs.ModeNamedPipe != 0 {
			return &fifoOutput{path: cfg.Path, mode: cfg.Mode, log: cfg.Logger, f: f}, 0, nil
		}
	}
	return f, size, err
}

// cutTornTail truncates the output to just after its last '\n'. Every write
// of this sink ends with '\n', so bytes after the last one are a batch write
// that a crash (kill -9 ends write(2) part way) left torn; none of its lines
// counted as dispatched, so they come again. Left in place, the torn piece
// would glue itself to the first line written after the restart.
func (s *Sink) cutTornTail() error {
	cut, err := lastLineEnd(s.cfg.Path, s.size)
	if err != nil || cut == s.size {
		return err
	}
	if err := s.f.Truncate(cut); err != nil {
		return fmt.Errorf("truncate torn tail of %s: %w", s.cfg.Path, err)
	}
	if s.cfg.Logger != nil {
		s.cfg.Logger.Warn("output ends in a torn write; cutting it off (its lines are delivered again)",
			"path", s.cfg.Path, "bytes", s.size-cut)
	}
	s.size, s.synced = cut, cut
	return nil
}

// lastLineEnd returns the offset just after the last '\n' in the first size
// bytes of path (0 when there is none).
func lastLineEnd(path string, size int64) (int64, error) {
	if size == 0 {
		return 0, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for end := size; end > 0; {
		n := min(int64(len(buf)), end)
		if _, err := f.ReadAt(buf[:n], end-n); err != nil {
			return 0, fmt.Errorf("read tail of %s: %w", path, err)
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return end - n + int64(i) + 1, nil
		}
		end -= n
	}
	return 0, nil
}

// makeParents creates the missing directories above path, as the dataDir
// is created (an output like ./var/out/app.log needs no mkdir first); with
// sync, each new directory's entry is fsynced in its parent, so that a power
// loss cannot take the output's path away.
func makeParents(path string, sync bool, syncDir func(string) error) error {
	var missing []string
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(dir); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		missing = append(missing, dir)
		if filepath.Dir(dir) == dir {
			break
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create the directory of %s: %w", path, err)
	}
	for i := len(missing) - 1; sync && i >= 0; i-- {
		if err := syncDir(filepath.Dir(missing[i])); err != nil {
			return fmt.Errorf("fsync the directory of %s: %w", missing[i], err)
		}
	}
	return nil
}

// DefaultSinkMode is a file sink output's mode when the config sets none:
// the owner writes, a log-reading group reads, others nothing (the lines
// may hold what the application logged: tokens, addresses, passwords).
const DefaultSinkMode os.FileMode = 0o640

// openAppend is openOutput with DefaultSinkMode and no logger.
func openAppend(path string) (SinkFile, int64, error) { return openOutput(path, DefaultSinkMode, nil) }

// openOutput opens path append-only, creating it with mode, and gives an
// output whose permission bits differ exactly mode (umask would only have
// narrowed a new file; a changed `mode` applies at the next start). A
// chmod the file's owner must do is a WARN, not a failure.
func openOutput(path string, mode os.FileMode, log hclog.Logger) (SinkFile, int64, error) {
	// Never blocks in the open: a FIFO at the path that nobody reads is an
	// error naming it (fileutil.ErrNoReader), not a start or a reload that
	// hangs for ever (DESIGN §12: SIGTERM always stops the daemon); Open
	// then opens it at the first write (fifoOutput).
	f, err := fileutil.OpenAppend(path, os.O_CREATE, mode)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	// The mode is the sink's file's: a device or a pipe at the path
	// (/dev/null, /dev/stdout) or a file of another user is not tailfeed's
	// to change (as root it would change /dev/null for the whole host).
	uid, owned := fileutil.Owner(st)
	switch {
	case st.Mode().Perm() == mode.Perm():
	case !st.Mode().IsRegular():
		if log != nil {
			log.Warn("the output is not a regular file; its mode is left as it is", "path", path,
				"type", st.Mode().Type().String(), "current", fmt.Sprintf("%04o", st.Mode().Perm()))
		}
	case owned && uid != os.Geteuid():
		if log != nil {
			log.Warn("the output belongs to another user; its mode is left as it is", "path", path,
				"uid", uid, "current", fmt.Sprintf("%04o", st.Mode().Perm()), "mode", fmt.Sprintf("%04o", mode.Perm()))
		}
	default:
		if err := f.Chmod(mode.Perm()); err != nil && log != nil {
			log.Warn("cannot set the output's mode", "path", path, "mode", fmt.Sprintf("%04o", mode.Perm()),
				"current", fmt.Sprintf("%04o", st.Mode().Perm()), "error", err)
		}
	}
	return f, st.Size(), nil
}

// ProcessBatch writes b's lines with one write(2).
func (s *Sink) ProcessBatch(ctx context.Context, b *feed.Batch) (int, error) {
	if s.rec2 != nil {
		return s.processOnce2(ctx, b)
	}
	if s.rec != nil {
		return s.processOnce(ctx, b)
	}
	return s.processBatch(ctx, b)
}

func (s *Sink) processBatch(ctx context.Context, b *feed.Batch) (int, error) {
	if len(b.Lines) == 0 {
		s.markEmpty() // writes nothing: a broken tail can wait for the next write
		return 0, nil
	}
	s.noticeCut()
	if s.broken {
		if err := s.repair(); err != nil {
			return 0, err
		}
	}
	s.reopenIfMoved(ctx)
	out := s.out.Render(b) // the batch's own buffer when it can: read-only, valid until ProcessBatch returns
	if err := s.write(out); err != nil {
		return 0, err
	}
	switch s.cfg.Fsync {
	case FsyncAlways:
		if err := s.f.Sync(); err != nil {
			// Never retried alone: drop the unsynced bytes; the group
			// rewrites the batch and syncs again.
			s.size -= int64(len(out))
			if terr := s.f.Truncate(s.size); terr != nil {
				s.broken = true
				return 0, fmt.Errorf("fsync %s: %w (truncate back: %v): %w", s.cfg.Path, err, terr, processor.ErrFatal)
			}
			return 0, fmt.Errorf("fsync %s: %w", s.cfg.Path, err)
		}
		s.synced = s.size
	case FsyncInterval:
		if s.firstDirty.IsZero() {
			s.firstDirty = time.Now()
		}
		s.unsynced = append(s.unsynced, out...)
		s.dirtyMark = s.cfg.Checkpoint.Mark()
		if len(s.unsynced) > maxUnsynced || s.cfg.SyncLines > 0 && s.dirtyMark-s.syncedMark >= uint64(s.cfg.SyncLines) {
			if err := s.Flush(ctx); err != nil {
				// The lines are written; the hold keeps them unacknowledged
				// until a later Flush succeeds.
				return len(b.Lines), nil
			}
		}
	}
	return len(b.Lines), nil
}

// write appends p with one write(2); on a failure or short write it truncates
// back to the length before.
func (s *Sink) write(p []byte) error {
	n, err := s.f.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	if err != nil {
		if n > 0 {
			if terr := s.f.Truncate(s.size); terr != nil {
				s.broken = true // s.size stays the length the file must have
				return fmt.Errorf("write %s: %w (truncate back failed: %v): %w", s.cfg.Path, err, terr, processor.ErrFatal)
			}
		}
		if pe, ok := err.(*os.PathError); ok && pe.Op == "write" && pe.Path == s.cfg.Path {
			return err // already "write PATH: reason" (the stalled reason shows it once)
		}
		if _, ok := err.(noReaderError); ok {
			return err // "open PATH: a FIFO that no process reads …" (nothing written)
		}
		return fmt.Errorf("write %s: %w", s.cfg.Path, err)
	}
	s.size += int64(n)
	return nil
}

// repair brings the file back to the length it must have after a failed
// write or fsync whose clean-up failed.
func (s *Sink) repair() error {
	if s.cfg.Fsync == FsyncInterval {
		return s.rewrite()
	}
	if err := s.f.Truncate(s.size); err != nil {
		return fmt.Errorf("truncate %s: %w: %w", s.cfg.Path, err, processor.ErrFatal)
	}
	s.broken = false
	return nil
}

// rewrite truncates to the last synced length and writes the unsynced bytes
// again (interval), or truncates to the last good length (never/always).
func (s *Sink) rewrite() error {
	if err := s.f.Truncate(s.synced); err != nil {
		s.broken = true
		return fmt.Errorf("truncate %s: %w: %w", s.cfg.Path, err, processor.ErrFatal)
	}
	s.size = s.synced
	s.broken = false
	if len(s.unsynced) > 0 {
		if err := s.write(s.unsynced); err != nil {
			s.broken = true
			return err
		}
	}
	return nil
}

// markEmpty moves the durable mark over a batch that wrote nothing (lines
// filtered out, dead-lettered or released): at once when nothing written
// waits for its fsync, else with the next Flush.
func (s *Sink) markEmpty() {
	if s.cfg.Fsync != FsyncInterval {
		return
	}
	if s.firstDirty.IsZero() {
		s.syncedMark = s.cfg.Checkpoint.Mark()
		s.cfg.Checkpoint.DurableThrough(s.syncedMark)
	} else {
		s.dirtyMark = s.cfg.Checkpoint.Mark()
	}
}

// FlushDue implements Flusher.
func (s *Sink) FlushDue() (time.Time, bool) {
	if s.cfg.Fsync != FsyncInterval || s.firstDirty.IsZero() {
		return time.Time{}, false
	}
	return s.firstDirty.Add(s.cfg.Interval), true
}

// Flush syncs unsynced writes and moves the durable mark. A failed fsync is
// never retried alone: the next Flush truncates to the last synced length,
// rewrites the bytes after it and syncs again.
func (s *Sink) Flush(ctx context.Context) error {
	if s.firstDirty.IsZero() && !s.broken {
		return nil
	}
	s.noticeCut()
	if s.broken {
		if err := s.rewrite(); err != nil {
			return err
		}
	}
	if err := s.f.Sync(); err != nil {
		s.broken = true
		return fmt.Errorf("fsync %s: %w", s.cfg.Path, err)
	}
	s.synced = s.size
	s.unsynced = s.unsynced[:0]
	if err := s.storeFlushed(); err != nil {
		return err // firstDirty stays: the next Flush stores the record again
	}
	s.firstDirty = time.Time{}
	s.syncedMark = s.dirtyMark
	s.cfg.Checkpoint.DurableThrough(s.dirtyMark)
	return nil
}

// Close syncs (interval/always) and closes the file.
func (s *Sink) Close() error {
	var err error
	if s.cfg.Fsync != FsyncNever {
		err = s.Flush(context.Background())
	}
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	if cerr := s.closeRecord(); err == nil {
		err = cerr
	}
	return err
}
