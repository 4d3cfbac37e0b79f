package file

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"tailfeed/feed"
)

// eoCheckpoint is a Checkpoint for sinks tested without a group.
type eoCheckpoint struct {
	held    bool
	mark    uint64
	durable uint64
}

func (c *eoCheckpoint) Hold()        { c.held = true }
func (c *eoCheckpoint) Mark() uint64 { return c.mark }
func (c *eoCheckpoint) DurableThrough(m uint64) {
	if m > c.durable {
		c.durable = m
	}
}

// eoBatch makes a batch of lines under epoch, the first ending at position
// after start (each line plus '\n').
func eoBatch(epoch uint64, start int64, lines ...string) *feed.Batch {
	b := &feed.Batch{Feed: "app", Epoch: epoch, Positioned: true}
	pos := start
	for _, l := range lines {
		pos += int64(len(l)) + 1
		b.AppendLine([]byte(l), pos)
	}
	return b
}

// eoLines returns n lines "p-00000".. and their byte total with '\n'.
func eoLines(p string, from, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%05d", p, from+i)
	}
	return out
}

func eoJoin(lines []string) string {
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

type eoSink struct {
	t    *testing.T
	dir  string
	out  string
	rec  string
	mode FsyncMode
	cp   *eoCheckpoint
	open func(string) (SinkFile, int64, error)
	orec func(string) (RecordFile, error)
}

func newEOSink(t *testing.T, mode FsyncMode) *eoSink {
	dir := t.TempDir()
	return &eoSink{t: t, dir: dir, out: filepath.Join(dir, "out.log"), rec: filepath.Join(dir, "sink.rec"), mode: mode}
}

func (e *eoSink) openSink() *Sink {
	e.t.Helper()
	e.cp = &eoCheckpoint{}
	s, err := Open(Config{Path: e.out, Fsync: e.mode, Interval: time.Hour, Checkpoint: e.cp,
		Record: e.rec, Open: e.open, OpenRecord: e.orec})
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

func (e *eoSink) output() string {
	e.t.Helper()
	b, err := os.ReadFile(e.out)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		e.t.Fatal(err)
	}
	return string(b)
}

func mustProcess(t *testing.T, s *Sink, b *feed.Batch) {
	t.Helper()
	n, err := s.ProcessBatch(context.Background(), b)
	if err != nil || n != b.Len() {
		t.Fatalf("ProcessBatch = %d, %v; want %d, nil", n, err, b.Len())
	}
}

// TestExactlyOnceSkipsReDeliveries: after a restart the sink skips the
// lines its record covers and writes the rest, for every fsync mode.
func TestExactlyOnceSkipsReDeliveries(t *testing.T) {
	for _, mode := range []FsyncMode{FsyncNever, FsyncInterval, FsyncAlways} {
		t.Run(modeName(mode), func(t *testing.T) {
			e := newEOSink(t, mode)
			a, b := eoLines("a", 0, 5), eoLines("b", 0, 5)
			s := e.openSink()
			b1 := eoBatch(7, 0, a...)
			mustProcess(t, s, b1)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = e.openSink()
			// The restart re-reads from an older pointer: the first batch
			// again (whole, then a part of it), then new lines.
			mustProcess(t, s, eoBatch(7, 0, a...))
			mustProcess(t, s, eoBatch(7, b1.Ends[1], a[2:]...))
			mustProcess(t, s, eoBatch(7, b1.LastEnd(), b...))
			s.Close()
			if got, want := e.output(), eoJoin(append(a, b...)); got != want {
				t.Fatalf("output\n%q\nwant\n%q", got, want)
			}
		})
	}
}

// TestExactlyOnceSkipsPrefixOfBatch: a batch whose first lines were applied
// is written from the first line that was not, and counts as done whole.
func TestExactlyOnceSkipsPrefixOfBatch(t *testing.T) {
	e := newEOSink(t, FsyncNever)
	lines := eoLines("x", 0, 6)
	s := e.openSink()
	full := eoBatch(1, 0, lines...)
	mustProcess(t, s, eoBatch(1, 0, lines[:4]...))
	s.Close()
	s = e.openSink()
	defer s.Close()
	mustProcess(t, s, full)
	if got, want := e.output(), eoJoin(lines); got != want {
		t.Fatalf("output %q, want %q", got, want)
	}
}

// TestExactlyOnceAcrossEpochs: a new epoch's small positions are not
// mistaken for applied lines (AlreadyApplied is false across epochs).
func TestExactlyOnceAcrossEpochs(t *testing.T) {
	e := newEOSink(t, FsyncNever)
	s := e.openSink()
	mustProcess(t, s, eoBatch(1, 0, eoLines("old", 0, 20)...))
	mustProcess(t, s, eoBatch(2, 0, "new-1", "new-2"))
	s.Close()
	s = e.openSink()
	defer s.Close()
	mustProcess(t, s, eoBatch(2, 0, "new-1", "new-2", "new-3"))
	want := eoJoin(eoLines("old", 0, 20)) + "new-1\nnew-2\nnew-3\n"
	if got := e.output(); got != want {
		t.Fatalf("output %q, want %q", got, want)
	}
}

// TestExactlyOnceWritesLinesWithoutPosition: a replayed or downgraded line
// (no position) is written even though its position is covered, and moves
// only the record's length.
func TestExactlyOnceWritesLinesWithoutPosition(t *testing.T) {
	e := newEOSink(t, FsyncNever)
	s := e.openSink()
	mustProcess(t, s, eoBatch(1, 0, "a", "b", "c"))
	replay := eoBatch(1, 0, "b")
	replay.Positioned = false
	mustProcess(t, s, replay)
	s.Close()
	s = e.openSink() // the record must cover the replayed line: no truncation
	defer s.Close()
	mustProcess(t, s, eoBatch(1, 0, "a", "b", "c", "d"))
	if got, want := e.output(), "a\nb\nc\nb\nd\n"; got != want {
		t.Fatalf("output %q, want %q", got, want)
	}
}

// TestExactlyOnceOpenTruncatesUnrecordedTail: a crash between the output
// write and the record store leaves a tail the record does not cover; the
// open cuts it off, and the re-delivery writes the same bytes again.
func TestExactlyOnceOpenTruncatesUnrecordedTail(t *testing.T) {
	e := newEOSink(t, FsyncNever)
	s := e.openSink()
	mustProcess(t, s, eoBatch(1, 0, "a", "b"))
	s.Close()
	f, err := os.OpenFile(e.out, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("c\nd") // written, never recorded, torn
	f.Close()
	s = e.openSink()
	defer s.Close()
	if got := e.output(); got != "a\nb\n" {
		t.Fatalf("after open: %q, want the recorded length only", got)
	}
	mustProcess(t, s, eoBatch(1, 0, "a", "b", "c", "d"))
	if got, want := e.output(), "a\nb\nc\nd\n"; got != want {
		t.Fatalf("output %q, want %q", got, want)
	}
}

// TestExactlyOnceRecordLonger: an output shorter than its record (it lost
// bytes the record had seen) falls back to the other slot when that fits,
// else runs without a record (duplicates, never a gap).
func TestExactlyOnceRecordLonger(t *testing.T) {
	t.Run("other slot fits", func(t *testing.T) {
		e := newEOSink(t, FsyncNever)
		s := e.openSink()
		mustProcess(t, s, eoBatch(1, 0, "aa", "bb"))       // slot A: length 6
		mustProcess(t, s, eoBatch(1, 6, "cc", "dd", "ee")) // slot B: length 15
		s.Close()
		if err := os.Truncate(e.out, 9); err != nil { // lost "dd\nee\n"
			t.Fatal(err)
		}
		s = e.openSink()
		defer s.Close()
		if got := e.output(); got != "aa\nbb\n" {
			t.Fatalf("after open: %q, want the other slot's length", got)
		}
		mustProcess(t, s, eoBatch(1, 0, "aa", "bb", "cc", "dd", "ee"))
		if got, want := e.output(), "aa\nbb\ncc\ndd\nee\n"; got != want {
			t.Fatalf("output %q, want %q", got, want)
		}
	})
	// The slot that is too long is A (the tie of equal counters goes to A):
	// the store after the fallback must go over A, with a counter above it,
	// or the next open brings the stale A back (output cut mid-line, lines
	// skipped as applied).
	t.Run("other slot fits, the long one is A", func(t *testing.T) {
		e := newEOSink(t, FsyncNever)
		s := e.openSink()
		mustProcess(t, s, eoBatch(1, 0, "aa", "bb"))
		mustProcess(t, s, eoBatch(1, 6, "cc"))
		mustProcess(t, s, eoBatch(1, 9, "dd", "ee")) // A: counter 3, length 15; B: counter 2, length 9
		s.Close()
		if err := os.Truncate(e.out, 9); err != nil {
			t.Fatal(err)
		}
		s = e.openSink()
		mustProcess(t, s, eoBatch(2, 0, "XXXXXXXXXX"))
		s.Close()
		s = e.openSink()
		defer s.Close()
		if got, want := e.output(), "aa\nbb\ncc\nXXXXXXXXXX\n"; got != want {
			t.Fatalf("output after a second open %q, want %q (applied %+v)", got, want, s.applied)
		}
		if s.applied.Epoch != 2 || s.applied.Position != 11 || s.applied.Length != 20 {
			t.Fatalf("applied %+v, want epoch 2, position 11, length 20", s.applied)
		}
		mustProcess(t, s, eoBatch(2, 0, "XXXXXXXXXX", "y"))
		if got, want := e.output(), "aa\nbb\ncc\nXXXXXXXXXX\ny\n"; got != want {
			t.Fatalf("output %q, want %q", got, want)
		}
	})
	t.Run("no slot fits", func(t *testing.T) {
		e := newEOSink(t, FsyncNever)
		s := e.openSink()
		mustProcess(t, s, eoBatch(1, 0, "aa", "bb"))
		mustProcess(t, s, eoBatch(1, 6, "cc"))
		s.Close()
		if err := os.Truncate(e.out, 3); err != nil {
			t.Fatal(err)
		}
		s = e.openSink()
		defer s.Close()
		mustProcess(t, s, eoBatch(1, 0, "aa", "bb", "cc"))
		if got, want := e.output(), "aa\naa\nbb\ncc\n"; got != want {
			t.Fatalf("output %q, want %q (duplicates, never a gap)", got, want)
		}
	})
}

// TestExactlyOnceDamagedSlot: a torn or corrupt newest slot is ignored and
// the other one used (its tail cut off and written again).
func TestExactlyOnceDamagedSlot(t *testing.T) {
	for name, damage := range map[string]func(b []byte){
		"bad crc":   func(b []byte) { b[20] ^= 0xff },
		"bad magic": func(b []byte) { b[0] = 'X' },
		"zeroed":    func(b []byte) { clear(b[:64]) },
		"version":   func(b []byte) { b[6] = 9 },
	} {
		t.Run(name, func(t *testing.T) {
			e := newEOSink(t, FsyncNever)
			s := e.openSink()
			mustProcess(t, s, eoBatch(1, 0, "a"))      // slot A
			mustProcess(t, s, eoBatch(1, 2, "b", "c")) // slot B, the newest
			s.Close()
			rec, err := os.ReadFile(e.rec)
			if err != nil {
				t.Fatal(err)
			}
			damage(rec[recSlotB:])
			if err := os.WriteFile(e.rec, rec, 0o644); err != nil {
				t.Fatal(err)
			}
			s = e.openSink()
			defer s.Close()
			mustProcess(t, s, eoBatch(1, 0, "a", "b", "c", "d"))
			if got, want := e.output(), "a\nb\nc\nd\n"; got != want {
				t.Fatalf("output %q, want %q", got, want)
			}
		})
	}
}

// faultyRecord fails WriteAt or Sync on demand.
type faultyRecord struct {
	*os.File
	failWrite, failSync *atomic.Bool
}

func (f faultyRecord) WriteAt(p []byte, off int64) (int, error) {
	if f.failWrite.Load() {
		return 0, &fs.PathError{Op: "write", Path: f.Name(), Err: syscall.EIO}
	}
	return f.File.WriteAt(p, off)
}

func (f faultyRecord) Sync() error {
	if f.failSync.Load() {
		return &fs.PathError{Op: "fsync", Path: f.Name(), Err: syscall.EIO}
	}
	return f.File.Sync()
}

// TestExactlyOnceRecordFailure: when the record cannot be stored the lines
// do not count as done and are taken back out of the output; once the
// record works again the retry writes them once.
func TestExactlyOnceRecordFailure(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mode  FsyncMode
		write bool
	}{
		{"write never", FsyncNever, true},
		{"write always", FsyncAlways, true},
		{"fsync always", FsyncAlways, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEOSink(t, tc.mode)
			var failWrite, failSync atomic.Bool
			e.orec = func(p string) (RecordFile, error) {
				f, err := openRecordFile(p)
				if err != nil {
					return nil, err
				}
				return faultyRecord{f.(*os.File), &failWrite, &failSync}, nil
			}
			s := e.openSink()
			mustProcess(t, s, eoBatch(1, 0, "a"))
			failWrite.Store(tc.write)
			failSync.Store(!tc.write)
			b := eoBatch(1, 2, "b", "c")
			n, err := s.ProcessBatch(context.Background(), b)
			if n != 0 || !errors.Is(err, syscall.EIO) {
				t.Fatalf("ProcessBatch with a failing record = %d, %v; want 0 and EIO", n, err)
			}
			if got := e.output(); got != "a\n" {
				t.Fatalf("output after the failure %q, want the lines taken back", got)
			}
			failWrite.Store(false)
			failSync.Store(false)
			mustProcess(t, s, b)
			s.Close()
			s = e.openSink()
			defer s.Close()
			mustProcess(t, s, eoBatch(1, 0, "a", "b", "c"))
			if got, want := e.output(), "a\nb\nc\n"; got != want {
				t.Fatalf("output %q, want %q", got, want)
			}
		})
	}
}

// TestExactlyOnceIntervalRecordAtFlush: with fsync: interval the record is
// stored at the flush, after the output's fsync, and only then does the
// checkpoint move; a crash before the flush cuts the unflushed tail off.
func TestExactlyOnceIntervalRecordAtFlush(t *testing.T) {
	e := newEOSink(t, FsyncInterval)
	s := e.openSink()
	e.cp.mark = 2
	mustProcess(t, s, eoBatch(1, 0, "a", "b"))
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if e.cp.durable != 2 {
		t.Fatalf("durable %d after the flush, want 2", e.cp.durable)
	}
	e.cp.mark = 3
	mustProcess(t, s, eoBatch(1, 4, "c"))
	if e.cp.durable != 2 {
		t.Fatalf("durable %d before the flush, want 2", e.cp.durable)
	}
	// Crash: no flush, no close. The record still says "a\nb\n".
	s.f.Close()
	s.rec.f.Close()
	if got := e.output(); got != "a\nb\nc\n" {
		t.Fatalf("output before the restart %q", got)
	}
	s = e.openSink()
	defer s.Close()
	if got := e.output(); got != "a\nb\n" {
		t.Fatalf("after open: %q, want the flushed length", got)
	}
	mustProcess(t, s, eoBatch(1, 0, "a", "b", "c"))
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := e.output(); got != "a\nb\nc\n" {
		t.Fatalf("output %q", got)
	}
}

// TestExactlyOnceIntervalRecordFailureHolds: a record that cannot be synced
// at the flush keeps the checkpoint where it was; the next flush stores it.
func TestExactlyOnceIntervalRecordFailureHolds(t *testing.T) {
	e := newEOSink(t, FsyncInterval)
	var failWrite, failSync atomic.Bool
	e.orec = func(p string) (RecordFile, error) {
		f, err := openRecordFile(p)
		if err != nil {
			return nil, err
		}
		return faultyRecord{f.(*os.File), &failWrite, &failSync}, nil
	}
	s := e.openSink()
	defer s.Close()
	e.cp.mark = 1
	mustProcess(t, s, eoBatch(1, 0, "a"))
	failSync.Store(true)
	if err := s.Flush(context.Background()); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Flush = %v, want EIO", err)
	}
	if e.cp.durable != 0 {
		t.Fatalf("durable %d after a failed record sync, want 0", e.cp.durable)
	}
	if _, due := s.FlushDue(); !due {
		t.Fatal("no flush due after a failed record sync")
	}
	failSync.Store(false)
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if e.cp.durable != 1 {
		t.Fatalf("durable %d, want 1", e.cp.durable)
	}
}

// eoFaultyFile is a sink file whose Write or Sync fails with a given errno.
type eoFaultyFile struct {
	*os.File
	writeErr, syncErr *atomic.Pointer[syscall.Errno]
}

func (f eoFaultyFile) Write(p []byte) (int, error) {
	if e := f.writeErr.Load(); e != nil {
		// Part of the bytes reach the file first, as a disk filling up does.
		n, _ := f.File.Write(p[:len(p)/2])
		return n, &fs.PathError{Op: "write", Path: f.Name(), Err: *e}
	}
	return f.File.Write(p)
}

func (f eoFaultyFile) Sync() error {
	if e := f.syncErr.Load(); e != nil {
		return &fs.PathError{Op: "fsync", Path: f.Name(), Err: *e}
	}
	return f.File.Sync()
}

// TestExactlyOnceSinkFaults: ENOSPC and EIO on the output's write or fsync
// leave neither output nor record ahead: the batch is not done, and the
// retry after the fault writes it once.
func TestExactlyOnceSinkFaults(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mode  FsyncMode
		errno syscall.Errno
		sync  bool
	}{
		{"ENOSPC write", FsyncNever, syscall.ENOSPC, false},
		{"EIO write", FsyncAlways, syscall.EIO, false},
		{"EIO fsync", FsyncAlways, syscall.EIO, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEOSink(t, tc.mode)
			var werr, serr atomic.Pointer[syscall.Errno]
			e.open = func(p string) (SinkFile, int64, error) {
				f, n, err := openAppend(p)
				if err != nil {
					return nil, 0, err
				}
				return eoFaultyFile{f.(*os.File), &werr, &serr}, n, nil
			}
			s := e.openSink()
			mustProcess(t, s, eoBatch(1, 0, "a"))
			errno := tc.errno
			if tc.sync {
				serr.Store(&errno)
			} else {
				werr.Store(&errno)
			}
			b := eoBatch(1, 2, "bbbbbbbb", "cccccccc")
			if n, err := s.ProcessBatch(context.Background(), b); n != 0 || !errors.Is(err, tc.errno) {
				t.Fatalf("ProcessBatch = %d, %v; want 0, %v", n, err, tc.errno)
			}
			if got := e.output(); got != "a\n" {
				t.Fatalf("output after the fault %q, want \"a\\n\"", got)
			}
			werr.Store(nil)
			serr.Store(nil)
			mustProcess(t, s, b)
			s.Close()
			s = e.openSink()
			defer s.Close()
			mustProcess(t, s, eoBatch(1, 0, "a", "bbbbbbbb", "cccccccc"))
			if got, want := e.output(), "a\nbbbbbbbb\ncccccccc\n"; got != want {
				t.Fatalf("output %q, want %q", got, want)
			}
		})
	}
}

func modeName(m FsyncMode) string {
	switch m {
	case FsyncAlways:
		return "always"
	case FsyncInterval:
		return "interval"
	}
	return "never"
}

// TestExactlyOnceIntervalFsyncFailure: a failed output fsync at the flush
// stores no record and moves nothing durable; the next flush truncates to
// the last synced length, rewrites, syncs, and only then stores the record.
func TestExactlyOnceIntervalFsyncFailure(t *testing.T) {
	e := newEOSink(t, FsyncInterval)
	var werr, serr atomic.Pointer[syscall.Errno]
	e.open = func(p string) (SinkFile, int64, error) {
		f, n, err := openAppend(p)
		if err != nil {
			return nil, 0, err
		}
		return eoFaultyFile{f.(*os.File), &werr, &serr}, n, nil
	}
	s := e.openSink()
	e.cp.mark = 1
	mustProcess(t, s, eoBatch(1, 0, "a"))
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.cp.mark = 3
	mustProcess(t, s, eoBatch(1, 2, "b", "c"))
	eio := syscall.EIO
	serr.Store(&eio)
	if err := s.Flush(context.Background()); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Flush = %v, want EIO", err)
	}
	if e.cp.durable != 1 || s.rec.cur.Length != 2 {
		t.Fatalf("after a failed fsync: durable %d, record length %d; want 1, 2", e.cp.durable, s.rec.cur.Length)
	}
	serr.Store(nil)
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if e.cp.durable != 3 || s.rec.cur.Length != 6 || s.rec.cur.Position != 6 {
		t.Fatalf("after the retried flush: durable %d, record %+v", e.cp.durable, s.rec.cur)
	}
	s.Close()
	if got := e.output(); got != "a\nb\nc\n" {
		t.Fatalf("output %q", got)
	}
}

// TestExactlyOnceFallbackStoredBeforeDelivery: when open gives up the
// newest record (the output lost bytes it had seen), the record it chose
// is on disk before any delivery. Otherwise the stale newest slot fits
// again once the re-deliveries are written, and a kill -9 before the first
// store makes the next open truncate to it and skip lines as applied: a
// gap.
func TestExactlyOnceFallbackStoredBeforeDelivery(t *testing.T) {
	// crash writes b (the write only, then kill -9 before its record store)
	// and reopens the sink.
	crash := func(t *testing.T, e *eoSink, s *Sink, b *feed.Batch) *Sink {
		t.Helper()
		if n, err := s.processBatch(context.Background(), b); err != nil || n != b.Len() {
			t.Fatal(n, err)
		}
		s.f.Close()
		s.closeRecord()
		return e.openSink()
	}
	t.Run("no usable record", func(t *testing.T) {
		e := newEOSink(t, FsyncNever)
		a := eoLines("a", 0, 10) // 8 bytes each with '\n'
		s := e.openSink()
		b1 := eoBatch(1, 0, a[:5]...)
		mustProcess(t, s, b1)
		mustProcess(t, s, eoBatch(1, b1.LastEnd(), a[5:]...)) // slots: length 40, 80
		s.Close()
		if err := os.Truncate(e.out, 16); err != nil { // power loss: a-00000, a-00001 survive
			t.Fatal(err)
		}
		s = crash(t, e, e.openSink(), eoBatch(1, 0, a...))
		mustProcess(t, s, eoBatch(1, 0, a...)) // delivered again
		s.Close()
		if got, want := e.output(), eoJoin(a[:2])+eoJoin(a); got != want {
			t.Errorf("output\n%q\nwant every line (duplicates allowed, never a gap)\n%q", got, want)
		}
	})
	t.Run("other slot", func(t *testing.T) {
		e := newEOSink(t, FsyncNever)
		s := e.openSink()
		mustProcess(t, s, eoBatch(1, 0, "aa", "bb"))       // A: length 6
		mustProcess(t, s, eoBatch(1, 6, "cc", "dd", "ee")) // B: length 15
		s.Close()
		if err := os.Truncate(e.out, 9); err != nil { // lost "dd\nee\n"
			t.Fatal(err)
		}
		s = e.openSink() // back to A: "aa\nbb\n"
		if s.applied.Position != 6 || s.applied.Length != 6 {
			t.Fatalf("applied %+v after open, want A's (position 6, length 6)", s.applied)
		}
		// The source re-reads from its pointer: cc, dd, ee and a longer
		// line that ends past B's length; kill -9 before the store.
		s = crash(t, e, s, eoBatch(1, 6, "cc", "dd", "ee", "ffffffff"))
		defer s.Close()
		if got, want := e.output(), "aa\nbb\n"; got != want {
			t.Fatalf("output after the crash %q, want the unrecorded tail cut (%q)", got, want)
		}
		mustProcess(t, s, eoBatch(1, 6, "cc", "dd", "ee", "ffffffff"))
		if got, want := e.output(), "aa\nbb\ncc\ndd\nee\nffffffff\n"; got != want {
			t.Fatalf("output %q, want %q", got, want)
		}
	})
}
