package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"tailfeed/config"
	"tailfeed/feed"
	"tailfeed/processor"
	"tailfeed/status"
)

// rev27aMarkSink applies lines (slowly while slow is open) and keeps, per
// epoch, the end of the last line it applied: its done-through marks.
type rev27aMarkSink struct {
	mu    sync.Mutex
	slow  chan struct{}
	marks map[uint64]int64
	got   int
}

func (s *rev27aMarkSink) Process(_ context.Context, d *feed.Delivery) error {
	s.mu.Lock()
	ch := s.slow
	s.mu.Unlock()
	if ch != nil {
		<-ch
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.marks == nil {
		s.marks = map[uint64]int64{}
	}
	s.marks[d.Epoch] = d.Position
	s.got++
	return nil
}

func (s *rev27aMarkSink) DoneThrough(context.Context) ([]processor.Mark, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []processor.Mark
	for e, p := range s.marks {
		out = append(out, processor.Mark{Epoch: e, Position: p})
	}
	return out, nil
}

func (s *rev27aMarkSink) given() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.got
}

func (s *rev27aMarkSink) build(*config.Processor, *processor.Group) (any, error) { return s, nil }

const rev27aGlobRefuseConfig = `
dataDir: %DIR%/state
status: {listen: "127.0.0.1:0", token: sesame, stallAlertMillis: 100}
shutdownTimeoutMillis: 500
feeds:
  - name: app
    path: "%DIR%/in/*.log"
    pollIntervalMillis: 20
    queueCapacity: 2
    overload: {subscribers: {engine: {policy: BLOCK_WITH_DEADLINE, blockDeadlineMillis: 20}}}
processors:
  - name: engine
    feed: app
    type: discard
    batchMaxLines: 1
  - name: plain
    feed: app
    type: file
    path: %DIR%/plain.log
`

// TestRev27AOKGlobStreamRefusedWholeNotReRead: a glob feed; a sink with a
// record under BLOCK_WITH_DEADLINE is slow while a new file's lines come:
// every line of b.log is refused to it (it has no mark of b.log's epoch).
// After it catches up on a.log, a clean stop and a restart with its record
// as it was must re-read nothing (DESIGN §2, §5, §11).
func TestRev27AOKGlobStreamRefusedWholeNotReRead(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	if err := os.MkdirAll(in, 0o755); err != nil {
		t.Fatal(err)
	}
	a := filepath.Join(in, "a.log")
	write := func(path string, lines []string) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(strings.Join(lines, "\n") + "\n")
		f.Close()
	}
	write(a, numbered("a-", 0, 10))
	eng := &rev27aMarkSink{}
	e := startIn(t, dir, rev27aGlobRefuseConfig, Options{Processors: map[string]Build{"engine": eng.build}})
	e.waitFor("a.log settled", 10*time.Second, func(f status.FeedReport) bool { return f.Settled && f.Sequence == 10 })
	slow := make(chan struct{})
	eng.mu.Lock()
	eng.slow = slow
	eng.mu.Unlock()
	for i := 10; i < 14; i++ {
		write(a, numbered("a-", i, 1))
		time.Sleep(40 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	write(filepath.Join(in, "b.log"), numbered("b-", 0, 20))
	f := e.waitFor("b.log refused to engine", 10*time.Second, func(f status.FeedReport) bool {
		return f.Sequence == 34 && f.Refused > 0 && sub(t, f, "plain").Dispatched == 34
	})
	eng.mu.Lock()
	eng.slow = nil
	eng.mu.Unlock()
	close(slow)
	f = e.waitFor("settled", 10*time.Second, settled)
	rel, _ := os.ReadFile(filepath.Join(dir, "state", "state", "released.json"))
	e.Stop()
	eng.mu.Lock()
	marks := map[uint64]int64{}
	for k, v := range eng.marks {
		marks[k] = v
	}
	eng.mu.Unlock()
	t.Logf("run 1: refused %d, engine %+v, marks %v; released.json %s", f.Refused, sub(t, f, "engine"), marks, rel)
	plain1 := len(readLines(t, filepath.Join(dir, "plain.log")))

	eng2 := &rev27aMarkSink{marks: marks}
	e = startIn(t, dir, rev27aGlobRefuseConfig, Options{Processors: map[string]Build{"engine": eng2.build}})
	time.Sleep(300 * time.Millisecond)
	f2 := e.waitFor("settled", 10*time.Second, settled)
	plain2 := len(readLines(t, filepath.Join(dir, "plain.log")))
	e.Stop()
	if f2.Sequence != 0 || plain2 != plain1 {
		t.Errorf("glob feed, restart after a clean stop, nothing new, the sink's record as it was: re-read %d lines, plain.log %d → %d, engine given %d; want none (run 1 refused %d; released.json %s)",
			f2.Sequence, plain1, plain2, eng2.given(), f.Refused, strings.TrimSpace(string(rel)))
	}
}
