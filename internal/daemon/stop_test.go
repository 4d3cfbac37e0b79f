package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
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

// slowTap finishes each line after a pause: a best-effort subscriber that is
// a little behind when the daemon stops.
type slowTap struct{ per time.Duration }

func (s slowTap) Process(ctx context.Context, _ *feed.Delivery) error {
	select {
	case <-time.After(s.per):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// A clean stop gives a best-effort subscriber the shutdown bound too: what
// it can finish within shutdownTimeoutMillis is not counted as dropped, so a
// run whose tap was merely behind stays lossless (DESIGN §5: lines count as
// dropped only when the bound expires).
func TestStopDrainsBestEffortWithinBound(t *testing.T) {
	cfg := strings.Replace(overloadConfig(4096, "      subscribers: {slow: {policy: DROP_AFTER_SPIN}}"),
		"shutdownTimeoutMillis: 300", "shutdownTimeoutMillis: 20000", 1)
	cfg = strings.Replace(cfg, "queueCapacity: 16", "queueCapacity: 1000", 1)
	tap := slowTap{per: 2 * time.Millisecond}
	e := start(t, cfg, Options{Processors: map[string]Build{"slow": func(*config.Processor, *processor.Group) (any, error) { return tap, nil }}})
	e.appendLines(numbered("line-", 0, 300)...)
	e.waitFor("all published", 20*time.Second, func(f status.FeedReport) bool { return f.Sequence == 300 })
	before := e.d.Report().Feeds[0]
	if sub(t, before, "slow").Dispatched == 300 {
		t.Skip("the tap caught up before the stop; nothing to drain")
	}
	start := time.Now()
	e.Stop()
	after := e.d.Report().Feeds[0]
	if after.Dropped != before.Dropped {
		t.Fatalf("a clean stop dropped %d lines the tap could finish within the bound (dropped %d → %d, tap %d/300 before the stop, stop took %v)",
			after.Dropped-before.Dropped, before.Dropped, after.Dropped, sub(t, before, "slow").Dispatched, time.Since(start))
	}
	if s := sub(t, after, "slow"); s.Dispatched+after.Dropped != 300 {
		t.Fatalf("tap finished %d, dropped %d; want 300 in all", s.Dispatched, after.Dropped)
	}
}

// stuck finishes batches until armed; then its call blocks, ignoring its
// context (a write that never returns), until let go.
type stuck struct {
	armed, closed atomic.Bool
	letGo         chan struct{}
	calls         atomic.Int64 // calls made while armed
	entered       chan struct{}
}

func (s *stuck) ProcessBatch(_ context.Context, b *feed.Batch) (int, error) {
	if !s.armed.Load() || len(b.Lines) == 0 {
		return len(b.Lines), nil
	}
	if s.calls.Add(1) == 1 {
		close(s.entered)
	}
	<-s.letGo
	return len(b.Lines), nil
}

func (s *stuck) Close() error { s.closed.Store(true); return nil }

// A stop is bounded even when a subscriber's call never returns (DESIGN §5
// "Shutdown", §12 "Signals": within shutdownTimeoutMillis plus 2 s): the
// daemon goes on without that group, and the final commit covers exactly
// what the pointer-holding groups finished, never a line the stuck one did
// not. Its processor is not closed while the call may use it; when the call
// returns after all, the group calls it no more.
func TestStopAbandonsAGroupWhoseCallNeverReturns(t *testing.T) {
	s := &stuck{letGo: make(chan struct{}), entered: make(chan struct{})}
	e := start(t, overloadConfig(64, ""), Options{Processors: map[string]Build{
		"slow": func(*config.Processor, *processor.Group) (any, error) { return s, nil }}})
	e.appendLines(numbered("line-", 0, 100)...)
	e.waitFor("the first lines acknowledged", 10*time.Second, func(f status.FeedReport) bool { return f.Acknowledged == 100 })
	finished := e.inputSize()
	e.waitFor("the first lines committed", 10*time.Second, func(f status.FeedReport) bool { return f.Pointer != nil && f.Pointer.Offset == finished })
	s.armed.Store(true)
	e.appendLines(numbered("line-", 100, 50)...)
	select {
	case <-s.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the stuck processor was not called")
	}
	began := time.Now()
	stopped := make(chan struct{})
	go func() {
		e.Stop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		close(s.letGo)
		<-stopped
		t.Fatal("Stop did not return 10 s after it began (shutdownTimeoutMillis 300) while a subscriber's call never returns")
	}
	// 300 ms + abandonAfter + 1 s, and 3 s of slack for a loaded machine:
	// a stop that waited for the stuck call would not return (the 10 s
	// above).
	if took := time.Since(began); took > 300*time.Millisecond+abandonAfter+time.Second+3*time.Second {
		t.Errorf("Stop took %v with shutdownTimeoutMillis 300", took)
	}
	if s.closed.Load() {
		t.Error("the abandoned subscriber's processor was closed while its call was in progress")
	}
	rec, err := pointer.Inspect(datadir.Pointer(filepath.Join(e.dir, "state"), "app"))
	if err != nil || rec.Offset != finished {
		t.Errorf("final commit at %+v (%v); want offset %d, before the first line the stuck subscriber did not finish", rec, err, finished)
	}
	close(s.letGo)
	time.Sleep(100 * time.Millisecond)
	if n := s.calls.Load(); n != 1 {
		t.Errorf("the abandoned group called its processor %d times in all once armed; want 1 (none after the stop)", n)
	}
}

// A reload that restarts a feed is bounded the same way (DESIGN §12
// "Reload": a changed feed is stopped as at shutdown): the stuck group is
// abandoned, the reload answers, and the processor's new instance receives
// first the lines the abandoned one did not finish; the old instance is
// neither closed nor handed to the new one, nor called again.
func TestReloadAbandonsAGroupWhoseCallNeverReturns(t *testing.T) {
	s := &stuck{letGo: make(chan struct{}), entered: make(chan struct{})}
	rec := &recorder{}
	var builds atomic.Int64
	e := start(t, overloadConfig(64, ""), Options{Processors: map[string]Build{
		"slow": func(*config.Processor, *processor.Group) (any, error) {
			if builds.Add(1) == 1 {
				return s, nil
			}
			return rec, nil
		}}})
	defer close(s.letGo)
	e.appendLines(numbered("line-", 0, 100)...)
	e.waitFor("the first lines acknowledged", 10*time.Second, func(f status.FeedReport) bool { return f.Acknowledged == 100 })
	s.armed.Store(true)
	e.appendLines(numbered("line-", 100, 50)...)
	select {
	case <-s.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the stuck processor was not called")
	}
	path := filepath.Join(e.dir, "tailfeed.yaml")
	text := strings.ReplaceAll(overloadConfig(64, ""), "%DIR%", e.dir)
	if err := os.WriteFile(path, []byte(strings.Replace(text, "pollIntervalMillis: 20", "pollIntervalMillis: 30", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	answered := make(chan error, 1)
	go func() { answered <- e.d.Reload(context.Background()) }()
	select {
	case err := <-answered:
		if err != nil {
			t.Fatalf("reload: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the reload did not answer 10 s after it began (shutdownTimeoutMillis 300) while a subscriber's call never returns")
	}
	// 300 ms + abandonAfter + 1 s, and 3 s of slack for a loaded machine:
	// a reload that waited for the stuck call would not answer (the 10 s
	// above).
	if took := time.Since(began); took > 300*time.Millisecond+abandonAfter+time.Second+3*time.Second {
		t.Errorf("the reload took %v with shutdownTimeoutMillis 300", took)
	}
	e.waitFor("the new instance finished the rest", 10*time.Second, func(f status.FeedReport) bool { return len(rec.got()) == 50 && f.Settled })
	sameLines(t, rec.got(), numbered("line-", 100, 50))
	if s.closed.Load() {
		t.Error("the abandoned instance was closed while its call was in progress")
	}
	if n := s.calls.Load(); n != 1 {
		t.Errorf("the abandoned instance was called %d times once armed; want 1", n)
	}
}
