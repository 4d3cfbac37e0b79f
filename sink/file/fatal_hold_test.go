package file

import (
	"io/fs"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/processor"
)

// tornFile writes half of every write and fails with ENOSPC while failing
// is set, and cannot truncate while noTruncate is set: a sink whose output
// is left in an unknown state.
type tornFile struct {
	*os.File
	failing, noTruncate *atomic.Bool
}

func (f tornFile) Write(p []byte) (int, error) {
	if f.failing.Load() {
		n, _ := f.File.Write(p[:len(p)/2])
		return n, &fs.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return f.File.Write(p)
}

func (f tornFile) Truncate(size int64) error {
	if f.noTruncate.Load() {
		return &fs.PathError{Op: "truncate", Path: f.Name(), Err: syscall.EIO}
	}
	return f.File.Truncate(size)
}

// A sink that cannot put its output back in order (a failed write whose
// truncate-back fails too: ErrFatal) is the sink's fault, not a line's: even
// under deadLetter it holds, fenced, and dead-letters nothing, so no line
// ends up both in the ledger and (half-written) in the output. Once the
// file can be truncated again, the output is exactly the lines, once.
func TestFatalSinkErrorHoldsUnderDeadLetter(t *testing.T) {
	r := newDLRig(t, processor.DeadLetter, false)
	var failing, noTruncate atomic.Bool
	failing.Store(true)
	noTruncate.Store(true)
	s, err := Open(Config{Path: r.out, Checkpoint: r.G, Open: func(p string) (SinkFile, int64, error) {
		f, n, err := openAppend(p)
		if err != nil {
			return nil, 0, err
		}
		return tornFile{f.(*os.File), &failing, &noTruncate}, n, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	r.G.SetBatchProcessor(s)
	r.Run()
	r.Publish("a", "b", "c")
	deadline := time.Now().Add(10 * time.Second)
	for r.G.Failures() < 8 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d failures", r.G.Failures())
		}
		time.Sleep(2 * time.Millisecond)
	}
	if n := r.ledger.Len(); n != 0 {
		t.Fatalf("a broken sink dead-lettered %d lines; it must hold", n)
	}
	if st, _ := r.Q.State(); st != feed.Fenced {
		t.Fatalf("subscriber %v while the sink is broken, want FENCED", st)
	}
	if got := r.Q.AckPoint(); got != 0 {
		t.Fatalf("ack point %d while nothing is written", got)
	}
	failing.Store(false)
	noTruncate.Store(false)
	r.WaitAck(3, 10*time.Second)
	if got, want := r.output(), "a\nb\nc\n"; got != want {
		t.Fatalf("output %q, want %q", got, want)
	}
	if n := r.ledger.Len(); n != 0 {
		t.Fatalf("ledger holds %d entries", n)
	}
}

// syncFailFile fails every fsync with EIO, and the truncate that follows a
// failed fsync while truncFails is set: fsync: always cannot take its bytes
// back out.
type syncFailFile struct {
	*os.File
	failing, truncFails, justFailed *atomic.Bool
}

func (f syncFailFile) Sync() error {
	if f.failing.Load() {
		f.justFailed.Store(true)
		return &fs.PathError{Op: "fsync", Path: f.Name(), Err: syscall.EIO}
	}
	return f.File.Sync()
}

func (f syncFailFile) Truncate(n int64) error {
	if f.truncFails.Load() && f.justFailed.Swap(false) {
		return &fs.PathError{Op: "truncate", Path: f.Name(), Err: syscall.EIO}
	}
	return f.File.Truncate(n)
}

// fsync: always whose failed fsync cannot be taken back out of the output
// is the same unknown state: the subscriber holds rather than dead-letter a
// line whose bytes stay in the output (a replay would write it twice).
func TestFatalFsyncHoldsUnderDeadLetter(t *testing.T) {
	r := newDLRig(t, processor.DeadLetter, false)
	var failing, truncFails, justFailed atomic.Bool
	failing.Store(true)
	truncFails.Store(true)
	s, err := Open(Config{Path: r.out, Checkpoint: r.G, Fsync: FsyncAlways, Open: func(p string) (SinkFile, int64, error) {
		f, n, err := openAppend(p)
		if err != nil {
			return nil, 0, err
		}
		return syncFailFile{f.(*os.File), &failing, &truncFails, &justFailed}, n, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	r.G.SetBatchProcessor(s)
	r.Run()
	r.Publish("a")
	deadline := time.Now().Add(10 * time.Second)
	for r.G.Failures() < 6 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d failures", r.G.Failures())
		}
		time.Sleep(2 * time.Millisecond)
	}
	if n := r.ledger.Len(); n != 0 {
		t.Fatalf("dead-lettered %d lines whose bytes may stay in the output (%q)", n, r.output())
	}
	failing.Store(false)
	truncFails.Store(false)
	r.WaitAck(1, 10*time.Second)
	if got := r.output(); got != "a\n" {
		t.Fatalf("output %q, want %q", got, "a\n")
	}
}
