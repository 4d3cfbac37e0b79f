package file

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/overload"
	"tailfeed/pointer"
)

// Review of "created lines ahead": the schedule pass's append of the new
// pointers' "created" epochs lines runs on a goroutine of its own that no
// one joins. A stop while that append is slow (an fsync of the epochs file
// stalling while a thousand files start) lets Glob.Close return with the
// append still running: the goroutine outlives the feed, and the epochs
// file is written after the feed closed. A clean stop (SIGTERM: Drain,
// Close, exit) can then cut the write in the middle of a line; the next
// start's first append is glued to that torn line and does not parse
// (pointer.ReadEpochs skips it), so a clean stop now loses an epochs line,
// which before the change only a kill -9 could do: every epochs append of
// a glob feed ran on the manager or on a stream goroutine that stopAll
// joins.
func TestGlobCloseWaitsForCreatedLinesAhead(t *testing.T) {
	dir, data := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.log"), []byte("one\ntwo\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	epochs := filepath.Join(data, "feeds", "f.epochs")
	var inFlight atomic.Int32
	entered := make(chan struct{}, 1)
	appendCreated = func(path string, es []uint64) error {
		inFlight.Add(1)
		defer inFlight.Add(-1)
		select {
		case entered <- struct{}{}:
		default:
		}
		time.Sleep(600 * time.Millisecond) // the epochs file's fsync stalls
		return pointer.AppendCreated(path, es)
	}
	t.Cleanup(func() {
		// Whatever the outcome, no goroutine of this test outlives it.
		for end := time.Now().Add(5 * time.Second); inFlight.Load() > 0 && time.Now().Before(end); {
			time.Sleep(5 * time.Millisecond)
		}
		appendCreated = pointer.AppendCreated
	})

	q := feed.NewQueue("rec", 4096, 8<<20, overload.Policy{Kind: overload.Pause})
	pub := feed.NewPublisher("f", []*feed.Queue{q}, 65536, 512)
	g, err := NewGlob(GlobConfig{
		Stream: Config{Feed: "f", Path: filepath.Join(dir, "*.log"), Strategy: Committed, Poll: 50 * time.Millisecond,
			RotateWait: 200 * time.Millisecond, CommitSync: 5 * time.Millisecond, BatchLines: 512, Outputs: []string{data}},
		PointerDir:    filepath.Join(data, "feeds", "f"),
		EpochsPath:    epochs,
		ScanInterval:  100 * time.Millisecond,
		MaxOpenFiles:  16,
		CloseInactive: time.Minute,
		ForgetAfter:   time.Minute,
	}, pub)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.Run(ctx)
	}()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		cancel()
		<-done
		g.Close()
		t.Fatal("no created lines written ahead in 10 s")
	}
	// The feed stops while the append runs (the daemon's shutdown).
	cancel()
	<-done
	dctx, dcancel := context.WithTimeout(context.Background(), time.Second)
	g.Drain(dctx)
	dcancel()
	g.Close()
	running := inFlight.Load()
	sizeAtClose := aheadFileSize(epochs)
	for end := time.Now().Add(5 * time.Second); inFlight.Load() > 0 && time.Now().Before(end); {
		time.Sleep(5 * time.Millisecond)
	}
	if running > 0 {
		t.Errorf("Glob.Close returned with %d append(s) of created lines ahead still running; the epochs file was %d bytes at Close, %d after",
			running, sizeAtClose, aheadFileSize(epochs))
	}
}

func aheadFileSize(p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		return -1
	}
	return fi.Size()
}
