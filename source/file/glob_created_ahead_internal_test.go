package file

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/overload"
	"tailfeed/pointer"
)

// runGlobOver runs a glob feed over files one-line files present at
// start, its pointers opened through open: it takes every line, waits for
// every commit to be synced, stops the feed and returns its epochs file.
func runGlobOver(t *testing.T, files int, open func(string, pointer.Options) (*pointer.Pointer, error)) (epochs string) {
	t.Helper()
	dir, data := t.TempDir(), t.TempDir()
	for i := range files {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.log", i)), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	openPointer = open
	t.Cleanup(func() { openPointer = pointer.Open })
	epochs = filepath.Join(data, "f.epochs")
	q := feed.NewQueue("q", 4096, 8<<20, overload.Policy{Kind: overload.Pause})
	pub := feed.NewPublisher("f", []*feed.Queue{q}, 4096, 64)
	g, err := NewGlob(GlobConfig{
		Stream: Config{Feed: "f", Path: filepath.Join(dir, "*.log"), Strategy: Committed, CommitSync: time.Millisecond, NoNotify: true,
			Poll: 50 * time.Millisecond, RotateWait: 200 * time.Millisecond},
		PointerDir: filepath.Join(data, "f"), EpochsPath: epochs, MaxOpenFiles: 1024,
	}, pub)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	deadline := time.Now().Add(60 * time.Second)
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
	// Every stream commits its line, then stops with a final commit.
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
	return epochs
}

// recordOpens runs a glob feed over files files (runGlobOver) and returns
// its epochs file and the Options each pointer was opened with.
func recordOpens(t *testing.T, files int) (epochs string, opened map[string]pointer.Options) {
	t.Helper()
	var mu sync.Mutex
	opened = map[string]pointer.Options{}
	epochs = runGlobOver(t, files, func(path string, o pointer.Options) (*pointer.Pointer, error) {
		mu.Lock()
		opened[path] = o
		mu.Unlock()
		return pointer.Open(path, o)
	})
	mu.Lock()
	defer mu.Unlock()
	if len(opened) != files {
		t.Fatalf("%d pointers opened for %d files", len(opened), files)
	}
	return epochs, opened
}

// createdLines checks that the epochs file holds exactly one "created"
// line, and one "adopted" line after it, for each pointer opened (named by
// its epoch), and no other line; it returns the created lines' positions.
func createdLines(t *testing.T, epochs string, opened map[string]pointer.Options) map[uint64]int {
	t.Helper()
	lines, err := pointer.ReadEpochs(epochs)
	if err != nil {
		t.Fatal(err)
	}
	created, adopted := map[uint64]int{}, map[uint64]int{}
	for i, l := range lines {
		switch l.Reason {
		case "created":
			if _, dup := created[l.Epoch]; dup || l.FileKey != 0 || l.Path != "" {
				t.Fatalf("line %d: created line %+v (duplicate or naming a file)", i+1, l)
			}
			created[l.Epoch] = i
		case "adopted":
			if _, ok := created[l.Epoch]; !ok {
				t.Fatalf("line %d: adopted line for %016x before its created line", i+1, l.Epoch)
			}
			adopted[l.Epoch] = i
		default:
			t.Fatalf("line %d: unexpected %+v", i+1, l)
		}
	}
	for path, o := range opened {
		name := strings.TrimSuffix(filepath.Base(path), ".ptr")
		if hex16(o.Epoch) != name {
			t.Fatalf("pointer %s opened with epoch %016x", path, o.Epoch)
		}
		if _, ok := created[o.Epoch]; !ok {
			t.Fatalf("no created line for pointer %s", path)
		}
		if _, ok := adopted[o.Epoch]; !ok {
			t.Fatalf("no adopted line for pointer %s", path)
		}
	}
	if len(created) != len(opened) || len(adopted) != len(opened) {
		t.Fatalf("%d created and %d adopted lines for %d pointers", len(created), len(adopted), len(opened))
	}
	return created
}

// The "created" lines of the new pointers a schedule pass starts are
// written ahead, together (one write, one fsync), before any of those
// pointer files exists; each pointer is opened with CreatedLogged and
// writes no line of its own. Before, each new stream waited for a grouped
// fsync of the epochs file of its own on the way to its first line (bench
// 7a: about a tenth of the run). The epochs file still maps every pointer's
// epoch to its file (created, then adopted).
func TestGlobWritesCreatedLinesAhead(t *testing.T) {
	const files = 3 * maxOpening
	var calls, lines int
	var mu sync.Mutex
	appendCreated = func(path string, epochs []uint64) error {
		mu.Lock()
		calls++
		lines += len(epochs)
		mu.Unlock()
		return pointer.AppendCreated(path, epochs)
	}
	t.Cleanup(func() { appendCreated = pointer.AppendCreated })
	epochs, opened := recordOpens(t, files)
	for path, o := range opened {
		if !o.CreatedLogged {
			t.Fatalf("pointer %s opened without its created line written ahead", path)
		}
	}
	createdLines(t, epochs, opened)
	// Every file is present at start and slots are plenty: one pass starts
	// them all.
	if calls != 1 || lines != files {
		t.Fatalf("%d appends ahead of %d created lines; want 1 of %d", calls, lines, files)
	}
}

// A failed append ahead costs nothing but the saving: each pointer then
// writes its own created line (write-ahead, as without the batch), every
// line is delivered, and the epochs file holds one created line per
// pointer.
func TestGlobCreatedAheadFailureFallsBackToOwnLines(t *testing.T) {
	appendCreated = func(string, []uint64) error { return errors.New("input/output error") }
	t.Cleanup(func() { appendCreated = pointer.AppendCreated })
	epochs, opened := recordOpens(t, maxOpening)
	for path, o := range opened {
		if o.CreatedLogged {
			t.Fatalf("pointer %s opened with CreatedLogged although the append ahead failed", path)
		}
	}
	createdLines(t, epochs, opened)
}
