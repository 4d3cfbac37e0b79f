package processor_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/internal/testutil"
	"tailfeed/overload"
	"tailfeed/processor"
)

// quickRetry keeps every retry in these tests at a few milliseconds.
func quickRetry(attempts int) processor.Retry {
	return processor.Retry{Initial: time.Millisecond, Max: 4 * time.Millisecond, Attempts: attempts}
}

// eventually polls cond every millisecond until it holds or 10 s passed.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// groupRig is one feed with one subscriber: a publisher over one PAUSE
// queue and a running group. The test goroutine plays the source.
type groupRig struct {
	t    *testing.T
	q    *feed.Queue
	pub  *feed.Publisher
	g    *processor.Group
	pos  int64
	ends []int64 // ends[seq-1]
	stop context.CancelFunc
}

func startGroup(t *testing.T, cfg processor.GroupConfig) *groupRig {
	t.Helper()
	r := &groupRig{t: t, q: feed.NewQueue("sub", 1000, 1<<20, overload.Policy{Kind: overload.Pause})}
	r.pub = feed.NewPublisher("app", []*feed.Queue{r.q}, 10000, 1000)
	cfg.Name, cfg.Queue, cfg.Wake = "sub", r.q, r.pub.Poke
	r.g = processor.NewGroup(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	r.stop = cancel
	r.g.Start(ctx)
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.g.Done():
		case <-time.After(10 * time.Second):
			t.Error("the group's goroutine did not end after its context was cancelled")
		}
	})
	return r
}

// publish offers one batch of lines and returns its first sequence.
func (r *groupRig) publish(lines ...string) uint64 {
	r.t.Helper()
	b := feed.NewBatch()
	b.Feed, b.Path, b.Epoch = "app", "/in/app.log", 42
	for _, l := range lines {
		r.pos += int64(len(l)) + 1
		b.AppendLine([]byte(l), r.pos)
		r.ends = append(r.ends, r.pos)
	}
	if !r.pub.TryPublish(b) {
		r.t.Fatalf("TryPublish refused (%s)", r.pub.PauseReason())
	}
	return b.FirstSeq
}

func (r *groupRig) waitDispatched(n uint64) {
	r.t.Helper()
	eventually(r.t, fmt.Sprintf("dispatched %d (now %d)", n, r.q.Dispatched()), func() bool { return r.q.Dispatched() >= n })
	if d := r.q.Dispatched(); d != n {
		r.t.Fatalf("dispatched %d, want exactly %d", d, n)
	}
}

// wantAcked checks that the window acknowledges exactly through seq, at
// the position of that line.
func (r *groupRig) wantAcked(seq uint64) {
	r.t.Helper()
	r.pub.PollAcks()
	if got := r.pub.Acknowledged(); got != seq {
		r.t.Fatalf("acknowledged %d, want %d", got, seq)
	}
}

// numbered returns n lines "<prefix><i>" for i in [from, from+n).
func numbered(prefix string, from, n int) []string {
	return testutil.Numbered(prefix+"%d", from, n)
}

// lineProc is a per-line Processor running fn under a lock-free log.
type lineProc struct {
	mu   sync.Mutex
	seen []string
	fn   func(d *feed.Delivery) error
}

func (p *lineProc) Process(_ context.Context, d *feed.Delivery) error {
	if p.fn != nil {
		if err := p.fn(d); err != nil {
			return err
		}
	}
	p.mu.Lock()
	p.seen = append(p.seen, string(d.Line))
	p.mu.Unlock()
	return nil
}

func (p *lineProc) lines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

// batchProc is a BatchProcessor whose fn decides what each call finishes.
type batchProc struct {
	mu    sync.Mutex
	first []uint64   // FirstSeq of every call
	calls [][]string // the lines of every call
	done  []string   // lines reported finished, in order
	fn    func(call int, lines []string) (int, error)
}

func (p *batchProc) ProcessBatch(_ context.Context, b *feed.Batch) (int, error) {
	lines := make([]string, len(b.Lines))
	for i, l := range b.Lines {
		lines[i] = string(l)
	}
	p.mu.Lock()
	p.calls = append(p.calls, lines)
	p.first = append(p.first, b.FirstSeq)
	call := len(p.calls)
	fn := p.fn
	p.mu.Unlock()
	n, err := len(lines), error(nil)
	if fn != nil {
		n, err = fn(call, lines)
	}
	p.mu.Lock()
	p.done = append(p.done, lines[:n]...)
	p.mu.Unlock()
	return n, err
}

func (p *batchProc) setFn(fn func(call int, lines []string) (int, error)) {
	p.mu.Lock()
	p.fn = fn
	p.mu.Unlock()
}

func (p *batchProc) snapshot() (calls [][]string, done []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([][]string(nil), p.calls...), append([]string(nil), p.done...)
}

func TestGroupFilteredLinesCountAsProcessed(t *testing.T) {
	lines := []string{"keep 1", "drop 2", "keep skip 3", "keep 4", "drop 5"}
	want := []string{"keep 1", "keep 4"}
	t.Run("Process", func(t *testing.T) {
		p := &lineProc{}
		r := startGroup(t, processor.GroupConfig{Processor: p, Retry: quickRetry(3),
			Match: regexp.MustCompile(`^keep`), Exclude: regexp.MustCompile(`skip`)})
		r.publish(lines...)
		r.publish("drop 6", "keep skip 7") // nothing left after filtering
		r.waitDispatched(7)
		r.wantAcked(7)
		if got := p.lines(); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("processed %q, want %q", got, want)
		}
	})
	t.Run("ProcessBatch", func(t *testing.T) {
		p := &batchProc{}
		r := startGroup(t, processor.GroupConfig{Batch: p, Retry: quickRetry(3),
			Match: regexp.MustCompile(`^keep`), Exclude: regexp.MustCompile(`skip`)})
		r.publish(lines...)
		r.publish("drop 6", "keep skip 7")
		r.waitDispatched(7)
		r.wantAcked(7)
		if _, done := p.snapshot(); strings.Join(done, "|") != strings.Join(want, "|") {
			t.Fatalf("processed %q, want %q", done, want)
		}
	})
}

func TestGroupPartialBatchRetriesFromDone(t *testing.T) {
	p := &batchProc{}
	p.setFn(func(call int, lines []string) (int, error) {
		if call == 2 {
			return 2, errors.New("sink hiccup")
		}
		return len(lines), nil
	})
	r := startGroup(t, processor.GroupConfig{Batch: p, Retry: quickRetry(3)})
	r.publish("l0")
	r.publish(numbered("l", 1, 5)...)
	r.waitDispatched(6)
	calls, done := p.snapshot()
	calls, done = calls[1:], done[1:]
	if len(calls) != 2 || strings.Join(calls[1], "|") != "l3|l4|l5" {
		t.Fatalf("calls %q, want the retry to start at line 3", calls)
	}
	p.mu.Lock()
	first := append([]uint64(nil), p.first[1:]...)
	p.mu.Unlock()
	if first[0] != 2 || first[1] != 4 {
		t.Fatalf("FirstSeq of the calls %v, want [2 4] (the sequence of each call's first line)", first)
	}
	if strings.Join(done, "|") != "l1|l2|l3|l4|l5" {
		t.Fatalf("finished %q, want every line once", done)
	}
	if r.g.Failures() != 1 {
		t.Fatalf("failures %d, want 1", r.g.Failures())
	}
	if st, _ := r.q.State(); st != feed.Live {
		t.Fatalf("state %v after the retry succeeded, want LIVE", st)
	}
}

// failOn fails any call that contains bad, finishing nothing (an all or
// nothing sink), and succeeds otherwise.
func failOn(bad string, fixed *atomic.Bool) func(int, []string) (int, error) {
	return func(_ int, lines []string) (int, error) {
		for _, l := range lines {
			if l == bad && !fixed.Load() {
				return 0, errors.New("poison line " + bad)
			}
		}
		return len(lines), nil
	}
}

func TestGroupRetriesRunOutThenLineByLineHoldsOnlyFailingLine(t *testing.T) {
	var fixed atomic.Bool
	p := &batchProc{}
	p.setFn(failOn("l4", &fixed))
	r := startGroup(t, processor.GroupConfig{Batch: p, Retry: quickRetry(3)})
	r.publish(numbered("l", 1, 2)...)
	r.publish(numbered("l", 3, 5)...) // l3..l7, l4 fails
	// Lines 1-3 are finished and published exactly at the fence.
	r.waitDispatched(3)
	eventually(t, "the subscriber fenced", func() bool { st, _ := r.q.State(); return st == feed.Fenced })
	if _, reason := r.q.State(); !strings.Contains(reason, "poison line l4") {
		t.Fatalf("fence reason %q, want the error", reason)
	}
	r.wantAcked(3)
	extra := feed.NewBatch()
	extra.AppendLine([]byte("l8"), r.pos+3)
	if !r.q.Stalling() || r.pub.TryPublish(extra) {
		t.Fatal("a fenced holding subscriber does not stall the feed")
	}
	// Held: it keeps retrying l4 alone, never passing it.
	n := len(func() [][]string { c, _ := p.snapshot(); return c }())
	eventually(t, "more retries", func() bool { c, _ := p.snapshot(); return len(c) > n+3 })
	calls, done := p.snapshot()
	if last := calls[len(calls)-1]; len(last) != 1 || last[0] != "l4" {
		t.Fatalf("last call %q, want l4 alone", last)
	}
	if r.q.Dispatched() != 3 {
		t.Fatalf("dispatched %d while held, want 3", r.q.Dispatched())
	}
	fixed.Store(true)
	r.waitDispatched(7)
	eventually(t, "the subscriber unfenced", func() bool { st, _ := r.q.State(); return st == feed.Live })
	r.wantAcked(7)
	_, done = p.snapshot()
	if strings.Join(done, "|") != "l1|l2|l3|l4|l5|l6|l7" {
		t.Fatalf("finished %q, want every line once, in order", done)
	}
}

// ledger records dead letters.
type ledger struct {
	mu    sync.Mutex
	lines []string
	info  []string
}

func (l *ledger) DeadLetter(d *feed.Delivery, attempts int, lastErr error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, string(d.Line))
	l.info = append(l.info, fmt.Sprintf("seq=%d pos=%d epoch=%d attempts=%d err=%v", d.Sequence, d.Position, d.Epoch, attempts, lastErr))
	return nil
}

func TestGroupDeadLettersOnlyFailingLine(t *testing.T) {
	var never atomic.Bool
	p := &batchProc{}
	p.setFn(failOn("l4", &never))
	dl := &ledger{}
	r := startGroup(t, processor.GroupConfig{Batch: p, Retry: quickRetry(3), OnFailure: processor.DeadLetter, Ledger: dl})
	r.publish(numbered("l", 1, 7)...)
	r.waitDispatched(7)
	r.wantAcked(7)
	_, done := p.snapshot()
	if strings.Join(done, "|") != "l1|l2|l3|l5|l6|l7" {
		t.Fatalf("processed %q, want all but the dead letter", done)
	}
	dl.mu.Lock()
	defer dl.mu.Unlock()
	want := fmt.Sprintf("seq=4 pos=%d epoch=42 attempts=3 err=poison line l4", r.ends[3])
	if len(dl.lines) != 1 || dl.lines[0] != "l4" || dl.info[0] != want {
		t.Fatalf("dead letters %q %q, want l4 with %s", dl.lines, dl.info, want)
	}
	if r.g.DeadLettered() != 1 {
		t.Fatalf("DeadLettered %d, want 1", r.g.DeadLettered())
	}
	eventually(t, "LIVE", func() bool { st, _ := r.q.State(); return st == feed.Live })
}

func TestGroupPanicInProcessMarksDeadWithExactDispatch(t *testing.T) {
	p := &lineProc{fn: func(d *feed.Delivery) error {
		if string(d.Line) == "l8" {
			panic("boom")
		}
		return nil
	}}
	r := startGroup(t, processor.GroupConfig{Processor: p, Retry: quickRetry(3)})
	r.publish(numbered("l", 1, 3)...)
	r.publish(numbered("l", 4, 10)...) // l8 is the 5th line of this batch
	waitStateG(t, r.q, feed.Dead)      // the panic was recovered; the group is parked, quarantined
	st, reason := r.q.State()
	if st != feed.Dead || !strings.Contains(reason, "panic: boom") || !strings.Contains(reason, "sub") {
		t.Fatalf("state %v reason %q, want DEAD with the panic", st, reason)
	}
	if d := r.q.Dispatched(); d != 7 {
		t.Fatalf("dispatched %d after a panic on line 8, want exactly 7", d)
	}
	if !r.q.Stalling() {
		t.Fatal("a dead holding subscriber does not stall")
	}
	r.wantAcked(7)
	if a := r.pub.PollAcks(); a.Moved {
		t.Fatalf("acknowledged past the dead line: %+v", a)
	}
}

func TestGroupPanicInProcessBatchAfterPartialSuccess(t *testing.T) {
	p := &batchProc{}
	p.setFn(func(call int, lines []string) (int, error) {
		if call == 2 {
			return 4, errors.New("partial")
		}
		if call == 3 {
			panic(fmt.Sprintf("at %s", lines[0]))
		}
		return len(lines), nil
	})
	r := startGroup(t, processor.GroupConfig{Batch: p, Retry: quickRetry(3)})
	r.publish(numbered("l", 1, 2)...)
	r.publish(numbered("l", 3, 6)...)
	waitStateG(t, r.q, feed.Dead)
	st, reason := r.q.State()
	if st != feed.Dead || !strings.Contains(reason, "panic: at l7") {
		t.Fatalf("state %v reason %q", st, reason)
	}
	if d := r.q.Dispatched(); d != 6 {
		t.Fatalf("dispatched %d, want 6 (2 + the 4 finished before the panic)", d)
	}
}

func TestGroupCompletionsRunAfterDeliveryBeforeDispatch(t *testing.T) {
	var mu sync.Mutex
	var events []string
	logf := func(f string, a ...any) {
		mu.Lock()
		events = append(events, fmt.Sprintf(f, a...))
		mu.Unlock()
	}
	var r *groupRig
	p := &lineProc{fn: func(d *feed.Delivery) error {
		seq, line := d.Sequence, string(d.Line)
		ok := d.OnComplete(func() error {
			logf("complete %s dispatched=%v", line, r.q.Dispatched() >= seq)
			return nil
		})
		logf("process %s registered=%v", line, ok)
		return nil
	}}
	r = startGroup(t, processor.GroupConfig{Processor: p, Retry: quickRetry(3)})
	r.publish("a", "b")
	r.waitDispatched(2)
	mu.Lock()
	got := strings.Join(events, "; ")
	mu.Unlock()
	want := "process a registered=true; complete a dispatched=false; process b registered=true; complete b dispatched=false"
	if got != want {
		t.Fatalf("events %q, want %q", got, want)
	}
}

func TestGroupCompletionGivenUpStillDispatches(t *testing.T) {
	var tries atomic.Int32
	p := &lineProc{fn: func(d *feed.Delivery) error {
		if string(d.Line) == "b" {
			d.OnComplete(func() error {
				tries.Add(1)
				return errors.New("ack lost")
			})
		}
		return nil
	}}
	r := startGroup(t, processor.GroupConfig{Processor: p, Retry: quickRetry(4)})
	r.publish("a", "b", "c")
	r.waitDispatched(3)
	r.wantAcked(3)
	if n := tries.Load(); n != 4 {
		t.Fatalf("the completion ran %d times, want the 4 attempts", n)
	}
	if r.g.CompletionFailures() != 1 {
		t.Fatalf("CompletionFailures %d, want 1", r.g.CompletionFailures())
	}
	if got := strings.Join(p.lines(), ""); got != "abc" {
		t.Fatalf("processed %q", got)
	}
	if st, _ := r.q.State(); st != feed.Live {
		t.Fatalf("state %v, want LIVE (a given-up completion does not hold)", st)
	}
}

func TestGroupRetriesWithAttemptNumbers(t *testing.T) {
	var fails atomic.Int32
	var attempts []int
	var mu sync.Mutex
	p := &lineProc{fn: func(d *feed.Delivery) error {
		mu.Lock()
		attempts = append(attempts, d.Attempt)
		mu.Unlock()
		if string(d.Line) == "b" && fails.Add(1) <= 2 {
			return errors.New("busy")
		}
		return nil
	}}
	r := startGroup(t, processor.GroupConfig{Processor: p, Retry: quickRetry(6)})
	r.publish("a", "b", "c")
	r.waitDispatched(3)
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(attempts) != "[1 1 2 3 1]" {
		t.Fatalf("attempts %v, want [1 1 2 3 1]", attempts)
	}
}

func TestDeliveryWithoutPositionRefusesCompletion(t *testing.T) {
	b := feed.NewBatch()
	b.Positioned = false
	b.Epoch = 3
	b.AppendLine([]byte("x"), 2)
	var d feed.Delivery
	d.Reset(b, 0)
	if d.OnComplete(func() error { return nil }) || d.AlreadyApplied(3, 100) {
		t.Fatal("a delivery without a position accepted a completion or claims AlreadyApplied")
	}
	b.Positioned = true
	d.Reset(b, 0)
	if !d.AlreadyApplied(3, 2) || d.AlreadyApplied(3, 1) || d.AlreadyApplied(4, 2) {
		t.Fatal("AlreadyApplied: want true for the same epoch and position <= pos only")
	}
}

func TestRetryBackoffDoublesToCapWithinJitter(t *testing.T) {
	r := processor.Retry{Initial: time.Second, Max: 16 * time.Second, Attempts: 6}
	for i, want := range []time.Duration{1, 2, 4, 8, 16, 16, 16} {
		if got := r.Backoff(i + 1); got != want*time.Second {
			t.Fatalf("Backoff(%d) = %v, want %v", i+1, got, want*time.Second)
		}
	}
	r.Jitter = 0.2
	for range 1000 {
		if d := r.Backoff(2); d < 1600*time.Millisecond || d > 2400*time.Millisecond {
			t.Fatalf("Backoff(2) with 20%% jitter = %v, outside 1.6s..2.4s", d)
		}
	}
}

// failingFlusher writes nothing, is always due for a flush, and its Flush
// always fails (an fsync that keeps failing).
type failingFlusher struct {
	flushes atomic.Int64
	dirty   atomic.Bool
}

func (f *failingFlusher) ProcessBatch(_ context.Context, b *feed.Batch) (int, error) {
	f.dirty.Store(true)
	return len(b.Lines), nil
}

func (f *failingFlusher) FlushDue() (time.Time, bool) {
	return time.Now().Add(-time.Second), f.dirty.Load()
}

func (f *failingFlusher) Flush(context.Context) error {
	f.flushes.Add(1)
	return errors.New("fsync: input/output error")
}

// TestGroupStopsWhileFlushKeepsFailing: a stop must end the group even when
// its processor's flush is due and keeps failing (it once spun forever,
// hanging the daemon's shutdown).
func TestGroupStopsWhileFlushKeepsFailing(t *testing.T) {
	fl := &failingFlusher{}
	r := startGroup(t, processor.GroupConfig{Batch: fl, Retry: quickRetry(3)})
	r.publish("a")
	waitStateG(t, r.q, feed.Fenced)
	eventually(t, "flush retries", func() bool { return fl.flushes.Load() >= 3 })
	r.stop()
	select {
	case <-r.g.Done():
	case <-time.After(5 * time.Second):
		t.Fatalf("the group did not stop while its flush keeps failing (%d flushes)", fl.flushes.Load())
	}
}

func waitStateG(t *testing.T, q *feed.Queue, want feed.SubState) {
	t.Helper()
	eventually(t, fmt.Sprintf("state %v", want), func() bool { st, _ := q.State(); return st == want })
}

// TestGroupStopDuringFailingCompletionDoesNotDispatch: a completion still
// failing (not out of attempts) when the group stops is not given up: its
// line does not count as dispatched (it comes again after a restart) and
// nothing counts in CompletionFailures.
func TestGroupStopDuringFailingCompletionDoesNotDispatch(t *testing.T) {
	var tries atomic.Int32
	p := &lineProc{fn: func(d *feed.Delivery) error {
		if string(d.Line) == "b" {
			d.OnComplete(func() error {
				tries.Add(1)
				return errors.New("ack endpoint down")
			})
		}
		return nil
	}}
	r := startGroup(t, processor.GroupConfig{Processor: p, Retry: quickRetry(1 << 20)})
	r.publish("a", "b", "c")
	eventually(t, "completion retries", func() bool { return tries.Load() >= 3 })
	r.stop()
	<-r.g.Done()
	if d := r.q.Dispatched(); d != 1 {
		t.Fatalf("dispatched %d after a stop during b's completion, want 1 (a only)", d)
	}
	if n := r.g.CompletionFailures(); n != 0 {
		t.Fatalf("CompletionFailures %d after a stop, want 0", n)
	}
}

// TestGroupPanicAfterDeadLetterCountsTheDeadLetter: a dead-lettered line
// counts as processed, also when the next line panics: the hold sits after
// it, so a restart does not deliver it again on top of its ledger entry.
func TestGroupPanicAfterDeadLetterCountsTheDeadLetter(t *testing.T) {
	p := &lineProc{fn: func(d *feed.Delivery) error {
		switch string(d.Line) {
		case "bad":
			return errors.New("poison")
		case "boom":
			panic("boom")
		}
		return nil
	}}
	dl := &ledger{}
	r := startGroup(t, processor.GroupConfig{Processor: p, Retry: quickRetry(2), OnFailure: processor.DeadLetter, Ledger: dl})
	r.publish("ok", "bad", "boom", "never")
	waitStateG(t, r.q, feed.Dead)
	if st, _ := r.q.State(); st != feed.Dead {
		t.Fatalf("state %v, want DEAD", st)
	}
	if d := r.q.Dispatched(); d != 2 {
		t.Fatalf("dispatched %d, want 2 (ok, and bad in the ledger)", d)
	}
}

// TestGroupEmptyViewFailureHoldsUnderDeadLetter: a batch processor that
// fails on a batch the filters emptied (nothing to dead-letter) keeps it
// retrying fenced under onFailure deadLetter, never DEAD, and the batch
// passes once the processor recovers. Dead-lettering "the failing line" of
// an empty view used to panic the subscriber.
func TestGroupEmptyViewFailureHoldsUnderDeadLetter(t *testing.T) {
	var fixed atomic.Bool
	p := &batchProc{}
	p.setFn(func(_ int, lines []string) (int, error) {
		if len(lines) == 0 && !fixed.Load() {
			return 0, errors.New("cannot note skipped lines")
		}
		return len(lines), nil
	})
	dl := &ledger{}
	r := startGroup(t, processor.GroupConfig{Batch: p, Retry: quickRetry(2), OnFailure: processor.DeadLetter, Ledger: dl,
		Match: regexp.MustCompile(`^keep`)})
	r.publish("keep 1")
	r.waitDispatched(1)
	r.publish("drop 2", "drop 3") // an empty view
	eventually(t, "the subscriber fenced", func() bool { st, _ := r.q.State(); return st == feed.Fenced })
	n := r.g.Failures()
	eventually(t, "more retries past the attempts", func() bool {
		if st, why := r.q.State(); st == feed.Dead {
			t.Fatalf("subscriber DEAD: %s", why)
		}
		return r.g.Failures() > n+3
	})
	if st, _ := r.q.State(); st != feed.Fenced || r.q.Dispatched() != 1 {
		c, _ := p.snapshot()
		t.Fatalf("state %v, dispatched %d while failing, want FENCED, 1 %q", st, r.q.Dispatched(), c)
	}
	fixed.Store(true)
	r.waitDispatched(3)
	if st, why := r.q.State(); st != feed.Live {
		t.Fatalf("state %v %q once the batch passed, want LIVE", st, why)
	}
	r.wantAcked(3)
	dl.mu.Lock()
	defer dl.mu.Unlock()
	if len(dl.lines) != 0 || r.g.DeadLettered() != 0 {
		t.Fatalf("dead letters %q, want none (there was no line)", dl.lines)
	}
}

// TestRetryStepNeverLaterThanOneStep: the pull's redelivery delay (DESIGN
// §6: no later than one backoff step after the ack timeout) is the same
// doubling as Backoff, its jitter only shortening it.
func TestRetryStepNeverLaterThanOneStep(t *testing.T) {
	r := processor.Retry{Initial: time.Second, Max: 16 * time.Second, Attempts: 6}
	for i, want := range []time.Duration{1, 2, 4, 8, 16, 16} {
		if got := r.Step(i + 1); got != want*time.Second {
			t.Fatalf("Step(%d) = %v, want %v", i+1, got, want*time.Second)
		}
	}
	r.Jitter = 0.2
	shorter := false
	for range 1000 {
		d := r.Step(5)
		if d < 12800*time.Millisecond || d > 16*time.Second {
			t.Fatalf("Step(5) with 20%% jitter = %v, outside 12.8s..16s", d)
		}
		shorter = shorter || d < 16*time.Second
	}
	if !shorter {
		t.Fatal("Step never varied: the jitter is not applied")
	}
}
