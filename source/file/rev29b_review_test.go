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

// rev29BMsyncs runs a glob over files f000.log… (empty at the start when
// empty, else one line each), waits for every stream to be open, then
// (empty) appends one line to each, takes and acknowledges every line and
// stops. It returns the msyncs of the stream pointers before the lines were
// appended and in all.
func rev29BMsyncs(t *testing.T, files int, empty bool) (before, all int64) {
	t.Helper()
	dir, data := t.TempDir(), t.TempDir()
	for i := range files {
		c := []byte("x\n")
		if empty {
			c = nil
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.log", i)), c, 0o644); err != nil {
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
	deadline := time.Now().Add(25 * time.Second)
	for {
		g.mu.Lock()
		open := 0
		for s := range g.running {
			if s.st == stOpen && s.src != nil && s.src.State() == CaughtUp {
				open++
			}
		}
		g.mu.Unlock()
		if open == files {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d streams open and caught up", open, files)
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	before = n.Load()
	if empty {
		for i := range files {
			f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("f%03d.log", i)), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString("x\n")
			f.Close()
		}
	}
	for taken := 0; taken < files; {
		if b := q.TryPop(); b != nil {
			taken += b.Len()
			q.AddDispatched(uint64(b.Len()))
			b.Release()
			pub.Poke()
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
	return before, n.Load()
}

// Probe (cost of the change, a judgement call): msyncs of a glob whose 60
// files are adopted while empty and then get one line each, against 60
// files adopted with their line.
func TestRev29BOKMsyncsAdoptedEmpty(t *testing.T) {
	const files = 60
	b0, a0 := rev29BMsyncs(t, files, false)
	b1, a1 := rev29BMsyncs(t, files, true)
	t.Logf("adopted with content: %d msyncs before, %d in all (%.2f per file); adopted empty: %d before, %d in all (%.2f per file)",
		b0, a0, float64(a0)/files, b1, a1, float64(a1)/files)
}

// rev29BSlots is a glob over dir/*.log with two slots (maxOpenFiles 5), a
// queue of two lines that nobody pops until the test says so, and the
// default drain bound; stopped and closed at the test's end.
func rev29BSlots(t *testing.T, dir, data string, onLoss func(Loss)) *internalGlob {
	return rev29BGlob(t, dir, data, 2, 5, time.Minute, 0, onLoss)
}

// rev29BGlob is rev29BSlots with the queue's capacity, maxOpenFiles,
// closeInactive and the drain bound (0: the default) given.
func rev29BGlob(t *testing.T, dir, data string, queueCap, maxOpen int, closeInactive, drainBound time.Duration, onLoss func(Loss)) *internalGlob {
	t.Helper()
	ig := &internalGlob{ptrDir: filepath.Join(data, "feeds", "f")}
	ig.q = feed.NewQueue("rec", queueCap, 8<<20, overload.Policy{Kind: overload.Pause})
	ig.pub = feed.NewPublisher("f", []*feed.Queue{ig.q}, 65536, 512)
	g, err := NewGlob(GlobConfig{
		Stream: Config{Feed: "f", Path: filepath.Join(dir, "*.log"), Strategy: Committed, Poll: 50 * time.Millisecond,
			RotateWait: 200 * time.Millisecond, CommitSync: 5 * time.Millisecond, BatchLines: 512, Outputs: []string{data}, OnLoss: onLoss},
		PointerDir:    ig.ptrDir,
		EpochsPath:    filepath.Join(data, "feeds", "f.epochs"),
		ScanInterval:  100 * time.Millisecond,
		MaxOpenFiles:  maxOpen,
		CloseInactive: closeInactive,
		ForgetAfter:   time.Minute,
	}, ig.pub)
	if err != nil {
		t.Fatal(err)
	}
	if drainBound > 0 {
		g.drainBound = drainBound
	}
	ig.g = g
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		dctx, c := context.WithTimeout(context.Background(), 5*time.Second)
		g.Drain(dctx)
		c()
		g.Close()
	})
	return ig
}

func rev29BAppend(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// A glob stream adopted while empty publishes three lines (first bytes
// stored at offset 0, the change) and closes as inactive before they are
// acknowledged (drain bound 100 ms: it owes the commit). Its file is
// renamed out of the glob (a.log.1), a new a.log written, and the old file
// gets one more line; then the three are acknowledged. The owed commit
// names the old file (not the new one at the path); the old file's late
// line is read beside the path, the new file's lines once; nothing lost,
// nothing delivered twice.
func TestRev29BOKOwedThenRenamedOut(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	a := filepath.Join(dir, "a.log")
	if err := os.WriteFile(a, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ig := rev29BGlob(t, dir, data, 4096, 16, 300*time.Millisecond, 100*time.Millisecond, nil)
	var sa *gstream
	ig.waitFor(t, "a.log open", func() bool {
		sa = ig.g.byPath[a]
		return sa != nil && sa.st == stOpen && sa.src != nil && sa.src.State() == CaughtUp
	})
	rev29BAppend(t, a, "a-0\na-1\na-2\n")
	n := uint64(0)
	for end := time.Now().Add(10 * time.Second); n < 3 && time.Now().Before(end); {
		if b := ig.q.TryPop(); b != nil {
			n += uint64(b.Len())
			b.Release()
		} else {
			time.Sleep(time.Millisecond)
		}
	}
	if n != 3 {
		t.Fatalf("took %d of 3 lines", n)
	}
	key := sa.key
	ig.waitFor(t, "a.log's stream closed owing its commit", func() bool { return sa.st == stClosed && sa.owe != nil })
	rec, _, err := ig.pointer()
	t.Logf("record while owing: %+v (%v); stream key %x", rec, err, key)
	if err := os.Rename(a, a+".1"); err != nil {
		t.Fatal(err)
	}
	rev29BAppend(t, a, "n-0\nn-1\n")
	rev29BAppend(t, a+".1", "late-0\n")
	time.Sleep(300 * time.Millisecond)
	ig.q.AddDispatched(n)
	ig.pub.Poke()
	count, stop := ig.consumeLive()
	for end := time.Now().Add(15 * time.Second); (count("n-1") == 0 || count("late-0") == 0) && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	got := stop()
	tails, bytes, detail := ig.lost()
	ptrs, _ := filepath.Glob(filepath.Join(ig.ptrDir, "*.ptr"))
	var recs []pointer.Record
	for _, p := range ptrs {
		r, _ := pointer.Inspect(p)
		recs = append(recs, r)
	}
	t.Logf("delivered after %v; lostTails %d lostBytes %d detail %q; pointers %+v", got, tails, bytes, detail, recs)
	for _, l := range []string{"n-0", "n-1", "late-0"} {
		if got[l] != 1 {
			t.Errorf("%s delivered %d times, want 1", l, got[l])
		}
	}
	for _, l := range []string{"a-0", "a-1", "a-2"} {
		if got[l] != 0 {
			t.Errorf("%s (acknowledged, committed) delivered again %d times without a crash", l, got[l])
		}
	}
	if tails != 0 || bytes != 0 {
		t.Errorf("nothing lost: want lostTails 0 lostBytes 0, got %d %d (%q)", tails, bytes, detail)
	}
}
