package processor

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/overload"
)

// goid is the calling goroutine's id (from its stack header).
func goid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	id, _ := strconv.ParseUint(string(b[:bytes.IndexByte(b, ' ')]), 10, 64)
	return id
}

// supervisors counts the goroutines running a group (in supervise).
func supervisors() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return bytes.Count(buf[:n], []byte("processor.(*Group).supervise("))
		}
		buf = make([]byte, 2*len(buf))
	}
}

// oneRunner panics on "boom" and records which goroutines ran it and how
// many ran it at once.
type oneRunner struct {
	mu      sync.Mutex
	ids     map[uint64]bool
	running atomic.Int32
	most    atomic.Int32
}

func (p *oneRunner) Process(_ context.Context, d *feed.Delivery) error {
	n := p.running.Add(1)
	defer p.running.Add(-1)
	for m := p.most.Load(); n > m && !p.most.CompareAndSwap(m, n); m = p.most.Load() {
	}
	p.mu.Lock()
	p.ids[goid()] = true
	p.mu.Unlock()
	if string(d.Line) == "boom" {
		panic("boom")
	}
	return nil
}

// TestReleaseRacingRecoveryRunsOneGoroutine: releases of a dead group
// issued while the group is still recovering from its panic (several
// releasers spinning on POST /admin/release as the panic happens) never
// run two group goroutines: the processor runs on one goroutine for the
// group's whole life, one call at a time, and each death is released
// exactly once. (A release used to start a new goroutine from the HTTP
// goroutine, with a context kept in the group.)
func TestReleaseRacingRecoveryRunsOneGoroutine(t *testing.T) {
	p := &oneRunner{ids: map[uint64]bool{}}
	r := newGRig(t, GroupConfig{Name: "p", Retry: fastRetry(1)})
	r.g.SetProcessor(p)
	before := supervisors()
	r.run()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var stopOnce sync.Once
	halt := func() { stopOnce.Do(func() { close(stop); wg.Wait() }) }
	defer halt()          // before the rig's cleanup stops the group
	var most atomic.Int32 // group goroutines seen at once
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if n := int32(supervisors() - before); n > most.Load() {
				most.Store(n)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}()
	var released, answers atomic.Uint64
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				n, err := r.g.Release(context.Background())
				switch {
				case err == nil:
					released.Add(n)
					answers.Add(1)
				case !errors.Is(err, ErrNotHeld):
					t.Errorf("release: %v", err)
					return
				}
				runtime.Gosched()
			}
		}()
	}
	const rounds = 30
	for i := 1; i <= rounds; i++ {
		r.publish("a", "boom", "b") // dies on boom; b is what the dead batch left
		r.waitAck(uint64(3*i), 10*time.Second)
		for st, _ := r.q.State(); st != feed.Released; st, _ = r.q.State() {
			time.Sleep(100 * time.Microsecond) // the ack point moves just before the state
		}
	}
	halt()
	if released.Load() != 2*rounds || answers.Load() != rounds || r.q.ReleasedLines() != 2*rounds {
		t.Fatalf("released %d lines in %d answers (queue counts %d), want %d in %d",
			released.Load(), answers.Load(), r.q.ReleasedLines(), 2*rounds, rounds)
	}
	p.mu.Lock()
	ids := len(p.ids)
	p.mu.Unlock()
	if ids != 1 || p.most.Load() != 1 || most.Load() != 1 {
		t.Fatalf("the processor ran on %d goroutines, %d at once; %d group goroutines at once; want 1, 1, 1",
			ids, p.most.Load(), most.Load())
	}
	if st, _ := r.q.State(); st != feed.Released {
		t.Fatalf("state %v, want RELEASED", st)
	}
}

// blockProc finishes every line but "stuck", on which it waits for the stop.
type blockProc struct{ entered chan struct{} }

func (p blockProc) Process(ctx context.Context, d *feed.Delivery) error {
	if string(d.Line) == "stuck" {
		close(p.entered)
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

// TestBestEffortLeftAtStopCountsAsDropped: the lines a best-effort
// queue's group did not finish when it stopped (the rest of its batch and
// everything queued) are counted as dropped by the group, as its goroutine
// ends (the publisher counts only its own drops: one writer per counter).
func TestBestEffortLeftAtStopCountsAsDropped(t *testing.T) {
	q := feed.NewQueue("tap", 1024, 1<<20, overload.Policy{Kind: overload.DropAfterSpin})
	pub := feed.NewPublisher("app", []*feed.Queue{q}, 65536, 512)
	p := blockProc{entered: make(chan struct{})}
	g := NewGroup(GroupConfig{Name: "tap", Queue: q, Processor: p, Retry: fastRetry(1)})
	ctx, cancel := context.WithCancel(context.Background())
	g.Start(ctx)
	var pos int64
	for _, lines := range [][]string{{"a", "b"}, {"c", "stuck", "d"}, {"e", "f", "g"}} {
		b := feed.NewBatch()
		b.Feed, b.Path, b.Epoch = "app", "/in.log", 1
		for _, l := range lines {
			pos += int64(len(l)) + 1
			b.AppendLine([]byte(l), pos)
		}
		if !pub.TryPublish(b) {
			t.Fatal("publish refused")
		}
	}
	<-p.entered
	cancel()
	<-g.Done()
	if q.Finished() != 3 || q.Dropped() != 5 || q.Counters.Dropped.Load() != 0 {
		t.Fatalf("finished %d, dropped %d (publisher %d); want 3 (a, b, c), 5 (stuck, d, e, f, g), 0",
			q.Finished(), q.Dropped(), q.Counters.Dropped.Load())
	}
}

// TestReplayPanicAnswersAndParks: a processor that panics on a replayed
// dead letter quarantines its subscriber; the replay is answered at once
// (incomplete: it died), the entry stays in the ledger, and a replay asked
// while the subscriber is dead is refused (not running) by the parked
// group, until a release lets it run again.
func TestReplayPanicAnswersAndParks(t *testing.T) {
	l, err := OpenLedger(filepath.Join(t.TempDir(), "p.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var d feed.Delivery
	d.Reset(eoBatch(1, 0, "boom"), 0)
	if err := l.DeadLetter(&d, 1, errors.New("x")); err != nil {
		t.Fatal(err)
	}
	r := newGRig(t, GroupConfig{Name: "p", Retry: fastRetry(1), OnFailure: DeadLetter, Ledger: l})
	r.g.SetProcessor(boomProc{})
	r.run()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := r.g.Replay(ctx, 10)
	if !errors.Is(err, ErrReplayIncomplete) || !strings.Contains(err.Error(), "died during the replay") || res.Remaining != 1 {
		t.Fatalf("replay = %+v, %v; want incomplete, died, 1 remaining", res, err)
	}
	r.waitDead()
	if _, err := r.g.Replay(ctx, 10); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Fatalf("replay into a dead subscriber: %v, want not running", err)
	}
	if n, err := r.g.Release(ctx); err != nil || n != 0 {
		t.Fatalf("release = %d, %v; want 0 lines (nothing queued), nil", n, err)
	}
	r.publish("a")
	r.waitAck(1, 10*time.Second)
}
