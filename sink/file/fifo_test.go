//go:build unix

package file

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"tailfeed/internal/fileutil"
	"tailfeed/processor"
)

// An output that is a FIFO nobody reads yet (a consumer that starts after
// the daemon, or restarts during a reload) must neither block Open for
// ever (open(2) of a FIFO for writing waits for a reader, before the
// daemon serves or handles SIGTERM) nor fail it (a start, a reload and
// its rollback would fail on it, and a failed rollback drops the feed):
// Open succeeds at once, and every write until a reader is there fails
// at once naming the FIFO (fileutil.ErrNoReader), nothing done, so the
// subscriber holds and retries. Once a reader opened it, the next write
// opens the FIFO and the lines reach it; with a reader from the start,
// the FIFO is an output like /dev/stdout.
func TestFileSinkFIFOOutput(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "out.fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	t.Run("no reader", func(t *testing.T) {
		type res struct {
			n   int
			err error
		}
		done := make(chan res, 1)
		s, err := Open(Config{Path: fifo})
		if err != nil {
			t.Fatalf("Open of a FIFO with no reader = %v, want it opened at the first write", err)
		}
		defer s.Close()
		go func() {
			n, err := s.ProcessBatch(t.Context(), eoBatch(1, 0, "a", "b"))
			done <- res{n, err}
		}()
		select {
		case r := <-done:
			if r.n != 0 || !errors.Is(r.err, fileutil.ErrNoReader) {
				t.Fatalf("write to a FIFO with no reader = %d, %v; want 0, ErrNoReader", r.n, r.err)
			}
			if !errors.Is(r.err, processor.ErrFatal) {
				t.Errorf("the error is not held at the cap (processor.ErrFatal: never dead-lettered): %v", r.err)
			}
			if msg := r.err.Error(); !strings.Contains(msg, fifo) {
				t.Errorf("the error does not name the FIFO: %s", msg)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a write to a FIFO with no reader blocked")
		}
		// The reader comes: the retried batch reaches it.
		r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if n, err := s.ProcessBatch(t.Context(), eoBatch(1, 0, "a", "b")); n != 2 || err != nil {
			t.Fatalf("write once the FIFO has a reader = %d, %v", n, err)
		}
		s.Close()
		got, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != "a\nb\n" {
			t.Fatalf("read %q from the FIFO, want %q", got, "a\nb\n")
		}
	})
	t.Run("no reader, closed unused", func(t *testing.T) {
		s, err := Open(Config{Path: fifo, Fsync: FsyncAlways})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("Close of a sink whose FIFO never had a reader: %v", err)
		}
	})
	t.Run("reader", func(t *testing.T) {
		r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		s, err := Open(Config{Path: fifo})
		if err != nil {
			t.Fatalf("Open of a FIFO with a reader: %v", err)
		}
		if _, err := s.ProcessBatch(t.Context(), eoBatch(1, 0, "a", "b")); err != nil {
			t.Fatal(err)
		}
		s.Close()
		got, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != "a\nb\n" {
			t.Fatalf("read %q from the FIFO, want %q", got, "a\nb\n")
		}
	})
}

// Character devices stay outputs (/dev/null throws lines away in tests,
// /dev/full makes writes fail): the non-blocking open is for FIFOs only.
func TestFileSinkDeviceOutput(t *testing.T) {
	s, err := Open(Config{Path: "/dev/null"})
	if err != nil {
		t.Skipf("open /dev/null: %v", err)
	}
	defer s.Close()
	if _, err := s.ProcessBatch(t.Context(), eoBatch(1, 0, "a")); err != nil {
		t.Fatalf("write to /dev/null: %v", err)
	}
}
