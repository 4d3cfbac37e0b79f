package file

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/overload"
)

// A glob file ending in bytes with no terminator keeps counting them in
// Unterminated once closeInactive closes it: the bytes are still after
// its last terminator (DESIGN §4 "right now"). Before, a closed file's
// counted nothing.
func TestGlobUnterminatedKeptWhenClosed(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.log"), []byte("a 0\na 1\nxyz"), 0o600); err != nil {
		t.Fatal(err)
	}
	q := feed.NewQueue("rec", 4096, 8<<20, overload.Policy{Kind: overload.Pause})
	pub := feed.NewPublisher("f", []*feed.Queue{q}, 65536, 512)
	g, err := NewGlob(GlobConfig{
		Stream: Config{Feed: "f", Path: filepath.Join(dir, "*.log"), Strategy: Committed, Poll: 50 * time.Millisecond,
			RotateWait: 200 * time.Millisecond, CommitSync: 5 * time.Millisecond, BatchLines: 512, Outputs: []string{data}},
		PointerDir:    filepath.Join(data, "feeds", "f"),
		EpochsPath:    filepath.Join(data, "feeds", "f.epochs"),
		ScanInterval:  100 * time.Millisecond,
		MaxOpenFiles:  16,
		CloseInactive: 300 * time.Millisecond,
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
	defer func() {
		cancel()
		<-done
		dctx, c := context.WithTimeout(context.Background(), 5*time.Second)
		g.Drain(dctx)
		c()
		g.Close()
	}()
	closed := func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		for _, s := range g.byKey {
			return s.st == stClosed && s.src == nil
		}
		return false
	}
	sawOpen := false
	for end := time.Now().Add(20 * time.Second); ; {
		if time.Now().After(end) {
			t.Fatalf("a.log not closed as inactive in 20 s (unterminated %d, seen open with 3: %v)", g.Unterminated(), sawOpen)
		}
		if b := q.TryPop(); b != nil { // acknowledge its lines: it may close
			q.AddDispatched(uint64(b.Len()))
			b.Release()
			pub.Poke()
		}
		if !sawOpen && !closed() && g.Unterminated() == 3 {
			sawOpen = true
		}
		if sawOpen && closed() {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := g.Unterminated(); n != 3 {
		t.Fatalf("a.log closed as inactive, still ending in \"xyz\": unterminated %d, want 3", n)
	}
}
