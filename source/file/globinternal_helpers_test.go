package file

import (
	"context"
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

// internalGlob is a glob feed over dir/*.log whose a.log holds five lines,
// run for the tests that reach into the glob's locks (a goroutine that has
// not run yet, a manager busy).
type internalGlob struct {
	g      *Glob
	q      *feed.Queue
	pub    *feed.Publisher
	ptrDir string
	size   int64 // a.log's bytes
}

// startInternalGlob starts it; drainBound 0 keeps the default. It is
// stopped, drained and closed at the test's end.
func startInternalGlob(t *testing.T, closeInactive, drainBound time.Duration) *internalGlob {
	t.Helper()
	dir, data := t.TempDir(), t.TempDir()
	var sb strings.Builder
	for i := range 5 {
		fmt.Fprintf(&sb, "line-%d\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.log"), []byte(sb.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	ig := &internalGlob{size: int64(sb.Len()), ptrDir: filepath.Join(data, "feeds", "f")}
	ig.q = feed.NewQueue("rec", 4096, 8<<20, overload.Policy{Kind: overload.Pause})
	ig.pub = feed.NewPublisher("f", []*feed.Queue{ig.q}, 65536, 512)
	g, err := NewGlob(GlobConfig{
		Stream: Config{Feed: "f", Path: filepath.Join(dir, "*.log"), Strategy: Committed, Poll: 50 * time.Millisecond,
			RotateWait: 200 * time.Millisecond, CommitSync: 5 * time.Millisecond, BatchLines: 512, Outputs: []string{data}},
		PointerDir:    ig.ptrDir,
		EpochsPath:    filepath.Join(data, "feeds", "f.epochs"),
		ScanInterval:  100 * time.Millisecond,
		MaxOpenFiles:  16,
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

// take pops a.log's five lines without acknowledging them; it returns how
// many it took.
func (ig *internalGlob) take(t *testing.T) uint64 {
	t.Helper()
	taken := uint64(0)
	for end := time.Now().Add(10 * time.Second); taken < 5; {
		if time.Now().After(end) {
			t.Fatalf("%d lines taken in 10 s, want 5", taken)
		}
		b := ig.q.TryPop()
		if b == nil {
			time.Sleep(time.Millisecond)
			continue
		}
		taken += uint64(b.Len())
		b.Release()
	}
	return taken
}

// pointer reads the feed's one stream pointer.
func (ig *internalGlob) pointer() (pointer.Record, []string, error) {
	ptrs, _ := filepath.Glob(filepath.Join(ig.ptrDir, "*.ptr"))
	if len(ptrs) != 1 {
		return pointer.Record{}, ptrs, nil
	}
	rec, err := pointer.Inspect(ptrs[0])
	return rec, ptrs, err
}

// aLogIn makes a glob directory holding a.log with content, and a data
// directory; it returns both and a.log's path.
func aLogIn(t *testing.T, content string) (dir, data, path string) {
	t.Helper()
	dir, data = t.TempDir(), t.TempDir()
	path = filepath.Join(dir, "a.log")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, data, path
}

// numbered is n lines "prefix-0\n" … "prefix-(n-1)\n".
func numbered(prefix string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%s-%d\n", prefix, i)
	}
	return b.String()
}

// firstTurnCommitted takes a.log's five lines and acknowledges them, and
// waits for its stream's first turn to close committed: the pointer names
// a.log by its key and fingerprint. It returns the stream.
func (ig *internalGlob) firstTurnCommitted(t *testing.T) *gstream {
	t.Helper()
	ig.q.AddDispatched(ig.take(t))
	ig.pub.Poke()
	var s *gstream
	ig.waitFor(t, "a.log's first stream closed, committed", func() bool {
		for _, x := range ig.g.byKey {
			s = x
		}
		return s != nil && s.st == stClosed && s.owe == nil
	})
	if rec, _, err := ig.pointer(); err != nil || rec.FileKey != s.key {
		t.Fatalf("pointer %+v (%v): want a.log's key", rec, err)
	}
	return s
}

// pastFingerprint is a file's content of 50-byte lines just past 5,000
// bytes (longer than the 4 KiB fingerprint), and how many lines.
func pastFingerprint() (string, int) {
	var b strings.Builder
	n := 0
	for ; b.Len() < 5000; n++ {
		fmt.Fprintf(&b, "line-%04d %s\n", n, strings.Repeat("x", 40))
	}
	return b.String(), n
}

// copyKeyOf is the key of the last copy src took (0: none).
func copyKeyOf(src *Source) uint64 {
	if t := src.CopyKey(); t != nil {
		return t.Key
	}
	return 0
}

// consumeAll takes, counts and acknowledges every line published until
// stop is called, which returns how many times each line came.
func (ig *internalGlob) consumeAll() (stop func() map[string]int) {
	_, stop = ig.consumeLive()
	return stop
}

// consumeLive is consumeAll with count, which tells how many times a line
// came so far (any goroutine).
func (ig *internalGlob) consumeLive() (count func(line string) int, stop func() map[string]int) {
	var mu sync.Mutex
	got := map[string]int{}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			default:
			}
			if b := ig.q.TryPop(); b != nil {
				mu.Lock()
				for _, l := range b.Lines {
					got[string(l)]++
				}
				mu.Unlock()
				ig.q.AddDispatched(uint64(b.Len()))
				b.Release()
				ig.pub.Poke()
			} else {
				time.Sleep(2 * time.Millisecond)
			}
		}
	}()
	count = func(line string) int {
		mu.Lock()
		defer mu.Unlock()
		return got[line]
	}
	var once sync.Once
	stop = func() map[string]int {
		once.Do(func() {
			close(done)
			<-finished
		})
		mu.Lock()
		defer mu.Unlock()
		return got
	}
	return count, stop
}

// copytruncateRound copies a to copyPath, truncates a in place and writes
// two new lines to it ("r<round>-new-0", "-1"), which it returns.
func copytruncateRound(t *testing.T, a, copyPath string, round int) []string {
	t.Helper()
	old, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(copyPath, old, 0o600); err != nil {
		t.Fatal(err)
	}
	nf, err := os.OpenFile(a, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer nf.Close()
	var lines []string
	for i := range 2 {
		l := fmt.Sprintf("r%d-new-%d", round, i)
		lines = append(lines, l)
		fmt.Fprintln(nf, l)
	}
	return lines
}
