package file_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/internal/grouptest"
	"tailfeed/processor"
	"tailfeed/sink/file"
)

// faultFile is a file sink's output (file.SinkFile) over a real file
// whose Write and Sync fail on command. It checks the sink's clean-up
// rules as they happen: after a write that left bytes behind, or a failed
// fsync, the next call on the file must be the truncate back to the last
// good length (checkpoints in errs).
type faultFile struct {
	f *os.File

	mu        sync.Mutex
	writeMode string        // "", "enospc" (half written), "eio" (nothing written), "short" (half, no error)
	syncMode  string        // "", "block", "fail"
	release   chan struct{} // closed (unblock) to let blocked Syncs go on (per the mode at that time)
	once      sync.Once
	blocking  chan struct{} // poked when a Sync starts blocking
	wantTrunc int64         // the length the next call must truncate to; -1: none owed
	truncs    []int64
	errs      []string

	writeFails, syncs, syncFails atomic.Int64
	synced                       atomic.Int64 // file length at the last successful fsync
}

func newFaultFile() *faultFile {
	return &faultFile{wantTrunc: -1, release: make(chan struct{}), blocking: make(chan struct{}, 1)}
}

// open is the sink's Config.Open.
func (ff *faultFile) open(path string) (file.SinkFile, int64, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	ff.f = f
	ff.synced.Store(st.Size())
	return ff, st.Size(), nil
}

// unblock lets every blocked and later "block" Sync go on.
func (ff *faultFile) unblock() { ff.once.Do(func() { close(ff.release) }) }

func (ff *faultFile) setWrite(mode string) {
	ff.mu.Lock()
	ff.writeMode = mode
	ff.mu.Unlock()
}

func (ff *faultFile) setSync(mode string) {
	ff.mu.Lock()
	ff.syncMode = mode
	ff.mu.Unlock()
}

func (ff *faultFile) size() int64 {
	st, err := ff.f.Stat()
	if err != nil {
		return -1
	}
	return st.Size()
}

func (ff *faultFile) Write(p []byte) (int, error) {
	ff.mu.Lock()
	mode := ff.writeMode
	if ff.wantTrunc >= 0 {
		ff.errs = append(ff.errs, fmt.Sprintf("write before truncating back to %d", ff.wantTrunc))
	}
	ff.mu.Unlock()
	before := ff.size()
	var n int
	var err error
	switch mode {
	case "enospc":
		n, _ = ff.f.Write(p[:len(p)/2])
		err = syscall.ENOSPC
	case "eio":
		err = syscall.EIO
	case "short":
		n, err = ff.f.Write(p[:len(p)/2])
	default:
		return ff.f.Write(p)
	}
	ff.writeFails.Add(1)
	if n > 0 {
		ff.mu.Lock()
		ff.wantTrunc = before
		ff.mu.Unlock()
	}
	return n, err
}

func (ff *faultFile) Truncate(size int64) error {
	ff.mu.Lock()
	ff.truncs = append(ff.truncs, size)
	if ff.wantTrunc >= 0 && size != ff.wantTrunc {
		ff.errs = append(ff.errs, fmt.Sprintf("truncated to %d, want %d", size, ff.wantTrunc))
	}
	ff.wantTrunc = -1
	ff.mu.Unlock()
	return ff.f.Truncate(size)
}

func (ff *faultFile) Sync() error {
	ff.syncs.Add(1)
	ff.mu.Lock()
	mode, rel := ff.syncMode, ff.release
	ff.mu.Unlock()
	if mode == "block" {
		select {
		case ff.blocking <- struct{}{}:
		default:
		}
		<-rel
		ff.mu.Lock()
		mode = ff.syncMode
		ff.mu.Unlock()
	}
	if mode == "fail" {
		ff.syncFails.Add(1)
		ff.mu.Lock()
		ff.wantTrunc = ff.synced.Load() // never retried alone: back to the last synced length
		ff.mu.Unlock()
		return syscall.EIO
	}
	if err := ff.f.Sync(); err != nil {
		return err
	}
	ff.synced.Store(ff.size())
	return nil
}

func (ff *faultFile) Close() error { return ff.f.Close() }

func (ff *faultFile) check(t *testing.T) {
	t.Helper()
	ff.mu.Lock()
	defer ff.mu.Unlock()
	if len(ff.errs) > 0 {
		t.Fatalf("the sink broke its clean-up rules: %s", strings.Join(ff.errs, "; "))
	}
}

func (ff *faultFile) truncCount() int {
	ff.mu.Lock()
	defer ff.mu.Unlock()
	return len(ff.truncs)
}

func faultySink(ff *faultFile, path string, mode file.FsyncMode) func(*testing.T, *processor.Group) processor.BatchProcessor {
	return func(t *testing.T, g *processor.Group) processor.BatchProcessor {
		s, err := file.Open(file.Config{Path: path, Fsync: mode,
			Interval: 5 * time.Millisecond, Open: ff.open, Checkpoint: g})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

func waitState(t *testing.T, q *feed.Queue, want feed.SubState, reason string) {
	t.Helper()
	grouptest.WaitFor(t, fmt.Sprintf("state %v with %q", want, reason), func() bool {
		st, r := q.State()
		return st == want && strings.Contains(r, reason)
	})
}

// TestFileSinkWriteFaultsTruncateRetryAndFence: a failed or short write is
// truncated back to the length before it, retried, and fences the
// subscriber (the pointer holds) while it keeps failing; afterwards every
// line is in the output exactly once.
func TestFileSinkWriteFaultsTruncateRetryAndFence(t *testing.T) {
	for _, tc := range []struct {
		name        string
		fsync       file.FsyncMode
		write, sync string
		reason      string
		truncates   bool
	}{
		{"ENOSPC part written", file.FsyncNever, "enospc", "", "no space left on device", true},
		{"EIO nothing written", file.FsyncNever, "eio", "", "input/output error", false},
		{"short write", file.FsyncNever, "short", "", io.ErrShortWrite.Error(), true},
		{"fsync always fails", file.FsyncAlways, "", "fail", "fsync", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "out.log")
			ff := newFaultFile()
			size1 := appendInput(t, filepath.Join(dir, "app.log"), 1, 2000)
			p := startPipeline(t, dir, pipeOpts{queueLines: 256, subs: []subSpec{{"sink", faultySink(ff, out, tc.fsync)}}})
			q := p.queues[0]
			p.waitCommitted(size1)

			ff.setWrite(tc.write)
			ff.setSync(tc.sync)
			appendInput(t, p.in, 2001, 500)
			waitState(t, q, feed.Fenced, tc.reason)
			fails := func() int64 { return ff.writeFails.Load() + ff.syncFails.Load() }
			n := fails()
			grouptest.WaitFor(t, "three more failures", func() bool { return fails() >= n+3 })
			if st, r := q.State(); st != feed.Fenced || !q.Stalling() {
				t.Fatalf("state %v (%q) while writes keep failing, want FENCED", st, r)
			}
			if off := p.committed(); off != size1 {
				t.Fatalf("pointer at %d while the sink fails, want %d", off, size1)
			}
			// The source may have published every line before the first
			// fault: lines appended while fenced are what it must refuse.
			size3 := appendInput(t, p.in, 2501, 50)
			grouptest.WaitFor(t, "the feed paused while its subscriber is fenced", func() bool {
				return p.pub.Pauses() > 0 && p.pub.Paused()
			})
			ff.check(t)
			if tc.truncates && ff.truncCount() == 0 {
				t.Fatal("no truncate after a failure that left bytes behind")
			}

			ff.setWrite("")
			ff.setSync("")
			waitState(t, q, feed.Live, "")
			p.waitCommitted(size3)
			p.stop()
			ff.check(t)
			sameFile(t, out, p.in)
		})
	}
}

// TestFileSinkFsyncIntervalHoldsPointer is issue 3 acceptance 4: with
// `fsync: interval` the pointer never passes the last fsynced line, while
// an fsync blocks and while it fails; a failed fsync truncates to the last
// synced length and rewrites; the subscriber is FENCED while fsync fails;
// afterwards the output holds every line exactly once.
func TestFileSinkFsyncIntervalHoldsPointer(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.log")
	ff := newFaultFile()
	size1 := appendInput(t, filepath.Join(dir, "app.log"), 1, 3000)
	p := startPipeline(t, dir, pipeOpts{queueLines: 256, subs: []subSpec{{"sink", faultySink(ff, out, file.FsyncInterval)}}})
	t.Cleanup(ff.unblock) // cleanups run last first: a failed test unblocks before the stop
	q := p.queues[0]

	// Output bytes equal input bytes, so the synced output length is the
	// input position of the last synced line. Sample pointer, then synced
	// length (it only grows) all along.
	stop := make(chan struct{})
	sampled := make(chan int)
	go func() {
		n := 0
		defer func() { sampled <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			off := p.committed()
			if synced := ff.synced.Load(); off > synced {
				t.Errorf("pointer offset %d is past the last fsynced output byte %d", off, synced)
				return
			}
			n++
			time.Sleep(200 * time.Microsecond)
		}
	}()
	defer func() {
		if stop != nil {
			close(stop)
			<-sampled
		}
	}()

	p.waitCommitted(size1)
	if s := ff.synced.Load(); s != size1 {
		t.Fatalf("pointer at %d with %d bytes synced", size1, s)
	}

	// An fsync that blocks: nothing past the synced length is committed.
	ff.setSync("block")
	appendInput(t, p.in, 3001, 2000)
	select {
	case <-ff.blocking:
	case <-time.After(10 * time.Second):
		t.Fatal("no fsync after new lines were written")
	}
	grouptest.WaitFor(t, "the unsynced lines dispatched", func() bool { return q.Dispatched() > 3000 })
	if off := p.committed(); off != size1 {
		t.Fatalf("pointer moved to %d during a blocked fsync (synced %d)", off, size1)
	}

	// The fsync fails, and keeps failing: fenced, truncated to the synced
	// length and rewritten before every new attempt.
	ff.setSync("fail")
	ff.unblock()
	waitState(t, q, feed.Fenced, "input/output error")
	n := ff.syncFails.Load()
	grouptest.WaitFor(t, "three more failed fsyncs", func() bool { return ff.syncFails.Load() >= n+3 })
	if st, r := q.State(); st != feed.Fenced {
		t.Fatalf("state %v (%q) while fsync keeps failing, want FENCED", st, r)
	}
	if off := p.committed(); off != size1 {
		t.Fatalf("pointer moved to %d while fsync fails", off)
	}
	ff.check(t)
	ff.mu.Lock()
	truncs := append([]int64(nil), ff.truncs...)
	ff.mu.Unlock()
	if len(truncs) < 3 || truncs[0] != size1 {
		t.Fatalf("truncates %v, want at least 3, back to the synced length %d", truncs, size1)
	}

	ff.setSync("")
	waitState(t, q, feed.Live, "")
	size2 := appendInput(t, p.in, 5001, 1000)
	p.waitCommitted(size2)
	close(stop)
	if n := <-sampled; n < 10 {
		t.Fatalf("only %d samples of the pointer", n)
	}
	stop = nil
	p.stop()
	ff.check(t)
	sameFile(t, out, p.in)
}
