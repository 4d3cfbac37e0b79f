//go:build unix

package file

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// openFIFOReader opens a reader on fifo without blocking.
func openFIFOReader(t *testing.T, fifo string) *os.File {
	t.Helper()
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// readFIFO reads what the pipe holds now.
func readFIFO(r *os.File) string {
	buf := make([]byte, 4096)
	n, _ := r.Read(buf)
	if n < 0 {
		n = 0
	}
	return string(buf[:n])
}

// TestRevS7aReopenOntoFIFOUnderFsync: rule (fifo.go, README): an output
// that is a FIFO is written like /dev/stdout — "fsync: always on a FIFO
// output writes to the pipe, no more" (fsync on a pipe is EINVAL), a pipe
// is never truncated. Change under review (reopen.go): a plain output
// removed and replaced by a FIFO (mkfifo at the path, a reader on it) is
// reopened with the raw *os.File, not as a fifoOutput. Expected: the next
// batch goes to the pipe once and succeeds (interval: its Flush succeeds
// and reports it durable). Observed: always — the write lands in the pipe,
// fsync fails (EINVAL), the truncate back fails too, the batch fails as
// ErrFatal with the sink broken, and every retry fails at the repair's
// truncate: the subscriber holds for ever (the pointer never passes "b",
// which the reader already has). interval — every Flush fails (fsync
// EINVAL, then the rewrite's truncate): the ack point never passes "b".
func TestRevS7aReopenOntoFIFOUnderFsync(t *testing.T) {
	for _, mode := range []FsyncMode{FsyncAlways, FsyncInterval} {
		t.Run(modeName(mode), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "out.log")
			cp := &reopenCheckpoint{}
			s, err := Open(Config{Path: path, Fsync: mode, Interval: time.Hour, Checkpoint: cp})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			cp.mark = 1
			mustProcess(t, s, eoBatch(1, 0, "a"))
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(path, 0o644); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
			r := openFIFOReader(t, path)
			defer r.Close()
			s.checkedAt = time.Now().Add(-2 * reopenEvery)
			cp.mark = 2
			var errs []error
			for attempt := 0; attempt < 3; attempt++ { // the group's retries
				n, err := s.ProcessBatch(context.Background(), eoBatch(1, 2, "b"))
				if err == nil && n == 1 {
					if mode == FsyncInterval {
						if err := s.Flush(context.Background()); err != nil {
							errs = append(errs, err)
							continue
						}
					}
					break
				}
				errs = append(errs, err)
			}
			if len(errs) > 0 {
				t.Errorf("the output reopened as a FIFO failed %d times (want \"b\" written once like a FIFO output): %v", len(errs), errs[0])
			}
			if mode == FsyncInterval && cp.durable != 2 {
				t.Errorf("durable through %d, want 2", cp.durable)
			}
			if got := readFIFO(r); got != "b\n" {
				t.Errorf("the FIFO's reader got %q, want \"b\\n\" once", got)
			}
		})
	}
}

// revS7aSyncFail is an output whose next Sync fails once when failNext is set.
type revS7aSyncFail struct {
	*os.File
	failNext bool
}

func (f *revS7aSyncFail) Sync() error {
	if f.failNext {
		f.failNext = false
		return syscall.EIO
	}
	return f.File.Sync()
}

// TestRevS7aCopytruncateThenFailedFsync: rule (README, added by this
// change: "`copytruncate` works for a plain output (it appends)"; DESIGN §6
// fsync interval: "a failed fsync truncates to the last synced length,
// rewrites the lines after it and syncs again" — each line once). Expected:
// after the output is copytruncated (cut to 0 in place, as logrotate's
// copytruncate does) and an fsync then fails, the rewrite leaves the output
// holding each line written after the cut once, and nothing else.
// Observed: the sink's lengths (size, synced) are those of before the cut:
// the rewrite truncates the file UP to the old synced length (NUL bytes
// after the line written since) and appends the unsynced bytes again — the
// line is in the output twice with NULs between.
func TestRevS7aCopytruncateThenFailedFsync(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.log")
	var sf *revS7aSyncFail
	open := func(p string) (SinkFile, int64, error) {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return nil, 0, err
		}
		sf = &revS7aSyncFail{File: f}
		return sf, 0, nil
	}
	cp := &reopenCheckpoint{}
	s, err := Open(Config{Path: path, Fsync: FsyncInterval, Interval: time.Hour, Checkpoint: cp, Open: open})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cp.mark = 1
	mustProcess(t, s, eoBatch(1, 0, "aaaaaaaaaa"))
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 0); err != nil { // logrotate copytruncate
		t.Fatal(err)
	}
	cp.mark = 2
	mustProcess(t, s, eoBatch(1, 11, "b"))
	sf.failNext = true
	if err := s.Flush(context.Background()); err == nil {
		t.Fatal("the injected fsync failure was not reported")
	}
	if err := s.Flush(context.Background()); err != nil { // the rewrite
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "b\n" {
		t.Errorf("after copytruncate and a failed fsync the output holds %q, want \"b\\n\"", got)
	}
}
