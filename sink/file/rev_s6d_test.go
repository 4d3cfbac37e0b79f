//go:build unix

package file

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"tailfeed/processor"
)

// TestRevS6dFIFOReaderGoneIsHeldNotDeadLettered
//
// Rule (28c32d1, README's FIFO sentence): a FIFO output that no process
// reads is the output's fault, not a line's: the write fails with an error
// that is processor.ErrFatal, so the subscriber holds the line at the cap
// and an onFailure deadLetter configuration never sends it to the ledger
// "while the reader is away" (the group dead-letters only errors that are
// not ErrFatal, processor/group.go).
//
// Expectation: a FIFO whose reader came (the lazy output opened it) and then
// went away again is the same "no reader" state: the next write fails
// errors.Is(err, processor.ErrFatal), nothing written.
//
// What happens: fifoOutput keeps the fd it opened once a reader came and
// never looks at the reader again: the write after the reader closed fails
// with EPIPE ("write PATH: broken pipe"), a plain retryable error, so under
// onFailure deadLetter every line written while the consumer restarts goes
// to the dead-letter ledger (deadLettered counts up, the lines leave the
// FIFO's stream) instead of being held until the reader is back.
func TestRevS6dFIFOReaderGoneIsHeldNotDeadLettered(t *testing.T) {
	fifo, s := openFIFOSink(t)
	defer s.Close()
	// No reader yet: held (ErrFatal), as the commit intends.
	if _, err := s.ProcessBatch(t.Context(), eoBatch(1, 0, "a")); !errors.Is(err, processor.ErrFatal) {
		t.Fatalf("write with no reader yet = %v, want ErrFatal", err)
	}
	// The consumer starts, reads, and goes away again (a restart).
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.ProcessBatch(t.Context(), eoBatch(1, 0, "a")); n != 1 || err != nil {
		t.Fatalf("write with a reader = %d, %v", n, err)
	}
	buf := make([]byte, 16)
	if n, err := r.Read(buf); err != nil || string(buf[:n]) != "a\n" {
		t.Fatalf("reader got %q, %v", buf[:n], err)
	}
	r.Close()

	type res struct {
		n   int
		err error
	}
	done := make(chan res, 1)
	go func() {
		n, err := s.ProcessBatch(t.Context(), eoBatch(1, 2, "b"))
		done <- res{n, err}
	}()
	select {
	case got := <-done:
		if got.n != 0 || got.err == nil {
			t.Fatalf("write after the reader went away = %d, %v; want 0 and an error", got.n, got.err)
		}
		if !errors.Is(got.err, processor.ErrFatal) {
			t.Errorf("write after the FIFO's reader went away = %q: not processor.ErrFatal, so onFailure deadLetter dead-letters the line while the reader is away (want it held like \"no reader yet\")", got.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("write after the reader went away blocked")
	}
}

// TestRevS6dFIFOReaderGoneMidBatchThenBackGetsWholeLines
//
// Rule (28c32d1, DESIGN §2/§6): a FIFO output whose reader is away holds
// the subscriber (nothing committed past the lines) and the lines reach
// the reader once one has the FIFO open again; a retried batch is written
// whole, never as a torn piece followed by the batch again.
//
// Expectation: the consumer reads part of a batch larger than the pipe and
// goes away (restart) while the sink's write is in progress; a new
// consumer opens the FIFO; the group retries the batch: it is written, and
// what the new consumer reads is whole lines of the batch.
//
// What happens: the write fails with EPIPE after a partial write; the
// sink's clean-up truncates the output back, which a FIFO cannot do
// (EINVAL), so it is marked broken; fifoOutput keeps the broken fd, and
// every later ProcessBatch first "repairs" by truncating the FIFO again and
// fails ErrFatal: the subscriber holds for ever although a reader is there
// (stalled until the daemon restarts), while the part of the batch the
// failed write left in the pipe (the fd is kept open, so the pipe's buffer
// lives on) reaches the new reader: a torn piece of a line.
func TestRevS6dFIFOReaderGoneMidBatchThenBackGetsWholeLines(t *testing.T) {
	fifo, s := openFIFOSink(t)
	defer s.Close()
	line := strings.Repeat("x", 999)
	lines := make([]string, 256) // 256000 bytes: more than a pipe holds (64 KiB)
	for i := range lines {
		lines[i] = fmt.Sprintf("%03d%s", i, line[3:])
	}
	r1, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	type res struct {
		n   int
		err error
	}
	done := make(chan res, 1)
	go func() {
		n, err := s.ProcessBatch(t.Context(), eoBatch(1, 0, lines...))
		done <- res{n, err}
	}()
	// The write is in progress (its first bytes are in the pipe); it cannot
	// have finished (the batch is larger than pipe + what is read here).
	buf := make([]byte, 4096)
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, err := r1.Read(buf)
		if n > 0 {
			break
		}
		if err != nil && !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("nothing reached the FIFO's reader")
		}
		time.Sleep(5 * time.Millisecond)
	}
	r1.Close() // the consumer restarts
	select {
	case got := <-done:
		if got.err == nil {
			t.Fatalf("the write to a FIFO whose reader went away mid-batch succeeded (%d)", got.n)
		}
		t.Logf("write while the reader went away: %v", got.err)
	case <-time.After(5 * time.Second):
		t.Fatal("the write blocked after the reader went away")
	}
	// The consumer is back; the group retries the batch (a few times).
	r2, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	var got bytes.Buffer
	var sinkClosed atomic.Bool
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		b := make([]byte, 1<<16)
		for {
			n, err := r2.Read(b)
			got.Write(b[:n])
			if err != nil && !errors.Is(err, syscall.EAGAIN) && (!errors.Is(err, io.EOF) || sinkClosed.Load()) {
				return // EOF once the sink closed its end (before: no writer yet)
			}
			if n == 0 {
				time.Sleep(2 * time.Millisecond)
			}
		}
	}()
	var last error
	ok := false
	for attempt := 0; attempt < 5 && !ok; attempt++ {
		n, err := s.ProcessBatch(t.Context(), eoBatch(1, 0, lines...))
		if err == nil && n == len(lines) {
			ok = true
		}
		last = err
	}
	if !ok {
		s.Close()
		sinkClosed.Store(true)
		<-readDone
		t.Fatalf("a reader has the FIFO open again, yet every retry of the batch fails: %v (the subscriber holds for ever); meanwhile the new reader got %d bytes left in the pipe by the failed write (a torn piece, starting %.10q)", last, got.Len(), got.String())
	}
	s.Close()
	sinkClosed.Store(true)
	<-readDone
	for i, l := range strings.SplitAfter(got.String(), "\n") {
		if l == "" {
			continue
		}
		if len(l) != 1000 {
			t.Fatalf("the new reader's line %d is torn (%d bytes, starts %.10q)", i, len(l), l)
		}
	}
}

// openFIFOSink makes a FIFO in a temporary directory (skipping the test
// where mkfifo fails) and opens a file sink on it while nobody reads it.
func openFIFOSink(t *testing.T) (string, *Sink) {
	t.Helper()
	fifo := filepath.Join(t.TempDir(), "out.fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	s, err := Open(Config{Path: fifo})
	if err != nil {
		t.Fatalf("Open of a FIFO with no reader: %v", err)
	}
	return fifo, s
}
