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
)

// An output that is a FIFO nobody reads (an operator's mistake) must not
// block Open for ever: open(2) of a FIFO for writing waits for a reader,
// before the daemon serves or handles SIGTERM. Open fails at once naming
// the path (fileutil.ErrNoReader); with a reader, the FIFO is an output
// like /dev/stdout and the lines reach it.
func TestFileSinkFIFOOutput(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "out.fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	t.Run("no reader", func(t *testing.T) {
		done := make(chan error, 1)
		go func() {
			s, err := Open(Config{Path: fifo})
			if err == nil {
				s.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, fileutil.ErrNoReader) {
				t.Fatalf("Open of a FIFO with no reader = %v, want ErrNoReader", err)
			}
			if msg := err.Error(); !strings.Contains(msg, fifo) {
				t.Errorf("the error does not name the FIFO: %s", msg)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Open of a FIFO with no reader blocked")
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
