package daemon

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/config"
	"tailfeed/feed"
	"tailfeed/internal/datadir"
	"tailfeed/pointer"
	"tailfeed/processor"
	"tailfeed/status"
)

// engineSink stands for a sink on an engine (DESIGN §11): it records the
// lines it is given, and reports a done-through mark at start — or, while
// down, an error, as a sink whose engine cannot be reached.
type engineSink struct {
	mu    sync.Mutex
	lines []string
	down  atomic.Bool
	asked atomic.Int32
	mark  []processor.Mark
}

func (s *engineSink) Process(_ context.Context, d *feed.Delivery) error {
	s.mu.Lock()
	s.lines = append(s.lines, string(d.Line))
	s.mu.Unlock()
	return nil
}

func (s *engineSink) DoneThrough(ctx context.Context) ([]processor.Mark, error) {
	s.asked.Add(1)
	if s.down.Load() {
		return nil, errors.New("dial tcp 127.0.0.1:9: connection refused")
	}
	return s.mark, nil
}

func (s *engineSink) got() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.lines...)
}

func (s *engineSink) build(*config.Processor, *processor.Group) (any, error) { return s, nil }

const catchUpConfig = `
dataDir: %DIR%/state
status: {listen: "127.0.0.1:0"}
shutdownTimeoutMillis: 2000
feeds:
  - {name: app, path: %DIR%/app.log, pollIntervalMillis: 20}
processors:
  - name: engine
    feed: app
    type: discard
    retry: {initialMillis: 10, maxMillis: 40}
  - name: plain
    feed: app
    type: file
    path: %DIR%/plain.log
`

// TestCatchUpWaitsForTheRecord (DESIGN §11, issue 14 "an engine that is
// down holds the feed"): at start a sink whose record cannot be read yet is
// asked again with its processor's backoff; meanwhile Start has returned,
// the feed reads nothing and is stalled with the reason (the subscriber
// fenced); once the sink answers with a mark behind the pointer, the
// pointer is committed back to it and the feed re-reads from there: the
// sink and the other subscriber get the gap again.
func TestCatchUpWaitsForTheRecord(t *testing.T) {
	dir := t.TempDir()
	first := &engineSink{}
	e := startIn(t, dir, catchUpConfig, Options{Processors: map[string]Build{"engine": first.build}})
	e.appendLines(numbered("line-", 0, 10)...)
	f := e.waitFor("settled", 10*time.Second, settled)
	e.Stop()
	rec, err := pointer.Inspect(datadir.Pointer(filepath.Join(dir, "state"), "app"))
	if err != nil || rec.Offset != e.inputSize() {
		t.Fatalf("pointer %+v %v after the first run (feed %+v)", rec, err, f.Pointer)
	}

	// The sink comes back with lines 0..3 only (restored): its mark is the
	// end of line 3, under the pointer's epoch.
	second := &engineSink{mark: []processor.Mark{{Epoch: rec.Epoch, Position: 4 * int64(len("line-000000\n"))}}}
	second.down.Store(true)
	e = startIn(t, dir, catchUpConfig, Options{Processors: map[string]Build{"engine": second.build}})
	f = e.waitFor("stalled on the record", 10*time.Second, func(f status.FeedReport) bool {
		return f.Stalled != nil && second.asked.Load() >= 3
	})
	if !strings.Contains(*f.Stalled, "subscriber engine failing: reading its stored record for the catch-up at start: dial tcp") ||
		f.Settled || !f.Lossless || f.Sequence != 0 {
		t.Fatalf("while the record cannot be read: stalled %q settled %v lossless %v sequence %d", *f.Stalled, f.Settled, f.Lossless, f.Sequence)
	}
	second.down.Store(false)
	f = e.waitFor("settled after the catch-up", 10*time.Second, settled)
	if f.Stalled != nil || !f.Lossless || f.Sequence != 6 {
		t.Fatalf("after the catch-up: stalled %v lossless %v sequence %d (want the 6 lines after the mark)", f.Stalled, f.Lossless, f.Sequence)
	}
	if got := second.got(); len(got) != 6 || got[0] != "line-000004" || got[5] != "line-000009" {
		t.Fatalf("the restored sink got %q, want lines 4..9", got)
	}
	if got := readLines(t, filepath.Join(dir, "plain.log")); len(got) != 16 || got[10] != "line-000004" {
		t.Fatalf("plain sink %d lines (want 10 + the 6 re-read): %q", len(got), got)
	}
	e.Stop()
	if rec2, _ := pointer.Inspect(datadir.Pointer(filepath.Join(dir, "state"), "app")); rec2.Offset != rec.Offset || rec2.Epoch != rec.Epoch {
		t.Fatalf("pointer after the catch-up %+v, want %+v", rec2, rec)
	}

	// A stop while the record still cannot be read ends the wait at once:
	// the pointer is left as it was.
	third := &engineSink{mark: []processor.Mark{{Epoch: rec.Epoch, Position: 0}}}
	third.down.Store(true)
	e = startIn(t, dir, catchUpConfig, Options{Processors: map[string]Build{"engine": third.build}})
	e.waitFor("stalled", 10*time.Second, func(f status.FeedReport) bool { return f.Stalled != nil })
	t0 := time.Now()
	e.Stop()
	if el := time.Since(t0); el > 3*time.Second {
		t.Fatalf("stop took %v while the record could not be read", el)
	}
	if rec3, _ := pointer.Inspect(datadir.Pointer(filepath.Join(dir, "state"), "app")); rec3.Offset != rec.Offset {
		t.Fatalf("pointer moved by a stop during the wait: %+v", rec3)
	}
}
