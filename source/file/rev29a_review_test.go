package file

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/overload"
	"tailfeed/pointer"
)

// rev29AMsyncs runs a glob over files files, each empty when the glob
// opens it when empty is true (one line "x\n" written to each once every
// stream is open), else holding that line at start; it takes and
// acknowledges every line, waits for every commit to be synced, stops and
// returns how many pointer msyncs (Mapping.Flush) happened in all, and how
// many of them from the moment the lines were written.
func rev29AMsyncs(t *testing.T, files int, empty bool) (total, afterWrite int64) {
	t.Helper()
	dir, data := t.TempDir(), t.TempDir()
	content := []byte("x\n")
	if empty {
		content = nil
	}
	for i := range files {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.log", i)), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var n atomic.Int64
	openPointer = func(path string, o pointer.Options) (*pointer.Pointer, error) {
		o.Map = func(f *os.File) (pointer.Mapping, error) {
			m := &rev28BMap{f: f, mem: make([]byte, pointer.Size), n: &n}
			_, err := f.ReadAt(m.mem, 0)
			return m, err
		}
		return pointer.Open(path, o)
	}
	t.Cleanup(func() { openPointer = pointer.Open })
	q := feed.NewQueue("q", 4096, 8<<20, overload.Policy{Kind: overload.Pause})
	pub := feed.NewPublisher("f", []*feed.Queue{q}, 4096, 64)
	g, err := NewGlob(GlobConfig{
		Stream: Config{Feed: "f", Path: filepath.Join(dir, "*.log"), Strategy: Committed, CommitSync: time.Millisecond, NoNotify: true,
			Poll: 50 * time.Millisecond, RotateWait: 200 * time.Millisecond},
		PointerDir: filepath.Join(data, "f"), EpochsPath: filepath.Join(data, "f.epochs"), MaxOpenFiles: 1024,
	}, pub)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	deadline := time.Now().Add(60 * time.Second)
	if empty {
		for {
			st, c := g.StateCounts()
			if st == CaughtUp && c.Open == files {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("not every empty file open: %s %+v", st, c)
			}
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond)
		afterWrite = -n.Load()
		for i := range files {
			f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("f%03d.log", i)), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write([]byte("x\n"))
			f.Close()
		}
	}
	for taken := 0; taken < files; {
		if b := q.TryPop(); b != nil {
			taken += b.Len()
			q.AddDispatched(uint64(b.Len()))
			b.Release()
			continue
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d lines delivered", taken, files)
		}
		time.Sleep(time.Millisecond)
	}
	for g.SyncedSeq() < pub.Acknowledged() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
	g.Drain(dctx)
	dcancel()
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	total = n.Load()
	if empty {
		afterWrite += total
	}
	return total, afterWrite
}

// Probe (cost, figures logged): a glob over files adopted while empty that
// then get one line each pays headFirst's msync per stream before its
// first line, on top of the commit's; files holding their line at start
// pay none (as before the change).
func TestRev29AOKGlobEmptyStartMsyncs(t *testing.T) {
	const files = 60
	withContent, _ := rev29AMsyncs(t, files, false)
	emptyTotal, emptyAfter := rev29AMsyncs(t, files, true)
	t.Logf("%d files: with content at start %d msyncs; adopted empty then one line each: %d msyncs (%d after the lines were written)",
		files, withContent, emptyTotal, emptyAfter)
	if withContent > files {
		t.Errorf("files with content at start: %d msyncs for %d files, want at most %d", withContent, files, files)
	}
	if emptyAfter > 2*files {
		t.Errorf("files adopted empty: %d msyncs after their first line for %d files, want at most 2 each (headFirst + commit)", emptyAfter, files)
	}
}
