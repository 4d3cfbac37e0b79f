package processor

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"tailfeed/feed"
)

// poisonFile fails every write that holds poison while armed, as a sink
// that cannot take one specific line.
type poisonFile struct {
	*os.File
	poison []byte
	armed  *atomic.Bool
}

func (f poisonFile) Write(p []byte) (int, error) {
	if f.armed.Load() && bytes.Contains(p, f.poison) {
		return 0, &fs.PathError{Op: "write", Path: f.Name(), Err: syscall.EIO}
	}
	return f.File.Write(p)
}

// dlRig is a group with a real file sink (optionally exactlyOnce) and a
// ledger, the sink refusing lines with "poison" while armed.
type dlRig struct {
	*gRig
	dir    string
	out    string
	ledger *Ledger
	armed  atomic.Bool
}

func newDLRig(t *testing.T, onFailure OnFailure, exactlyOnce bool) *dlRig {
	t.Helper()
	return newDLRigFsync(t, onFailure, exactlyOnce, FsyncNever)
}

// newDLRigFsync is newDLRig with the sink's fsync policy (interval: 5 ms).
func newDLRigFsync(t *testing.T, onFailure OnFailure, exactlyOnce bool, mode FsyncMode) *dlRig {
	t.Helper()
	return newDLRigAt(t, t.TempDir(), onFailure, exactlyOnce, mode)
}

// newDLRigAt makes the rig on the output, ledger and record in dir (a
// restart when dir was used before; the queue counts from 0 again and the
// same lines get the same positions).
func newDLRigAt(t *testing.T, dir string, onFailure OnFailure, exactlyOnce bool, mode FsyncMode) *dlRig {
	t.Helper()
	l, err := OpenLedger(filepath.Join(dir, "sink.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &dlRig{dir: dir, out: filepath.Join(dir, "out.log"), ledger: l}
	r.armed.Store(true)
	r.gRig = newGRig(t, GroupConfig{Name: "sink", Retry: fastRetry(2), OnFailure: onFailure, Ledger: l})
	cfg := FileSinkConfig{Path: r.out, Checkpoint: r.g, Fsync: mode, Interval: 5 * time.Millisecond, Open: func(p string) (SinkFile, int64, error) {
		f, n, err := openAppend(p)
		if err != nil {
			return nil, 0, err
		}
		return poisonFile{f.(*os.File), []byte("poison"), &r.armed}, n, nil
	}}
	if exactlyOnce {
		cfg.Record = filepath.Join(dir, "sink.rec")
	}
	s, err := OpenFileSink(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	r.g.SetBatchProcessor(s)
	return r
}

func (r *dlRig) output() string {
	b, _ := os.ReadFile(r.out)
	return string(b)
}

// TestDeadLetterOneLine: a sink failing for one specific line → after the
// retry budget that line is in the ledger (raw bytes, error, attempts,
// position), the lines after it flow; a replay after the fault is gone
// delivers it and empties the ledger.
func TestDeadLetterOneLine(t *testing.T) {
	r := newDLRig(t, DeadLetter, false)
	r.run()
	poison := "poison \xff\x00 line"
	r.publish("a", poison, "b")
	r.waitAck(3, 10*time.Second) // a fenced subscriber refuses publishes: wait
	r.publish("c")
	r.waitAck(4, 10*time.Second)
	if got, want := r.output(), "a\nb\nc\n"; got != want {
		t.Fatalf("output %q, want %q", got, want)
	}
	if n := r.ledger.Len(); n != 1 {
		t.Fatalf("ledger holds %d entries, want 1", n)
	}
	if st, _ := r.q.State(); st != feed.Live {
		t.Fatalf("subscriber %v after the dead letter, want LIVE", st)
	}
	items, total := r.ledger.List(10)
	e := items[0]
	raw, _ := base64.StdEncoding.DecodeString(e.LineBase64)
	if total != 1 || string(raw) != poison || e.Feed != "app" || e.Epoch != "00000000000000e1" ||
		e.Position != int64(len("a\n")+len(poison)+1) || !e.Positioned || e.Attempts != 2 ||
		!strings.Contains(e.Error, syscall.EIO.Error()) || e.Time == "" {
		t.Fatalf("entry %+v", *e.DeadLetterEntry)
	}
	if !strings.Contains(e.Line, "poison \ufffd\x00 line") {
		t.Fatalf("readable line %q", e.Line)
	}

	// Still failing: the entry stays.
	res, err := r.g.Replay(context.Background(), 10)
	if !errors.Is(err, ErrReplayIncomplete) || res.Replayed != 0 || res.Remaining != 1 {
		t.Fatalf("replay while failing = %+v, %v", res, err)
	}
	r.armed.Store(false)
	res, err = r.g.Replay(context.Background(), 10)
	if err != nil || res.Replayed != 1 || res.Remaining != 0 {
		t.Fatalf("replay = %+v, %v", res, err)
	}
	if got, want := r.output(), "a\nb\nc\n"+poison+"\n"; got != want {
		t.Fatalf("output after the replay %q, want %q", got, want)
	}
	if _, err := os.Stat(r.ledger.Path()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ledger file after the last entry left: %v", err)
	}
	if q := r.q.Dispatched(); q != 4 {
		t.Fatalf("dispatched %d after the replay, want 4 (a replay holds no queue position)", q)
	}
}

// TestHoldKeepsRetrying: with onFailure hold the failing line is never
// skipped: the subscriber is fenced (the feed stalls) and retries at the cap
// until the fault is gone; then everything is written in order.
func TestHoldKeepsRetrying(t *testing.T) {
	r := newDLRig(t, Hold, false)
	r.run()
	r.publish("a", "poison", "b")
	deadline := time.Now().Add(10 * time.Second)
	for r.g.Failures() < 6 {
		if time.Now().After(deadline) {
			t.Fatal("no retries")
		}
		time.Sleep(time.Millisecond)
	}
	if st, why := r.q.State(); st != feed.Fenced || !r.q.Stalling() || !strings.Contains(why, "input/output error") {
		t.Fatalf("state %v %q, want FENCED with the reason", st, why)
	}
	if r.q.AckPoint() > 1 || r.ledger.Len() != 0 {
		t.Fatalf("ack point %d, ledger %d while holding", r.q.AckPoint(), r.ledger.Len())
	}
	r.armed.Store(false)
	r.waitAck(3, 10*time.Second)
	if got, want := r.output(), "a\npoison\nb\n"; got != want {
		t.Fatalf("output %q, want %q", got, want)
	}
	if st, _ := r.q.State(); st != feed.Live {
		t.Fatalf("state %v after recovery, want LIVE", st)
	}
}

// TestReplayWritesThroughExactlyOnce: a replayed line has no position, so an
// exactlyOnce sink writes it although its record covers the position.
func TestReplayWritesThroughExactlyOnce(t *testing.T) {
	r := newDLRig(t, DeadLetter, true)
	r.run()
	r.publish("a", "poison", "b")
	r.waitAck(3, 10*time.Second)
	r.armed.Store(false)
	if res, err := r.g.Replay(context.Background(), 1); err != nil || res.Replayed != 1 {
		t.Fatalf("replay = %+v, %v", res, err)
	}
	if got, want := r.output(), "a\nb\npoison\n"; got != want {
		t.Fatalf("output %q, want %q", got, want)
	}
}

// replayProbe records what a per-line processor sees of a replayed line.
type replayProbe struct {
	mu   sync.Mutex
	fail atomic.Bool
	seen []feed.Delivery
	oc   []bool
	aa   []bool
}

func (p *replayProbe) Process(_ context.Context, d *feed.Delivery) error {
	if p.fail.Load() {
		return errors.New("down")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	c := *d
	c.Line = bytes.Clone(d.Line)
	p.seen = append(p.seen, c)
	p.oc = append(p.oc, d.OnComplete(func() error { return nil }))
	p.aa = append(p.aa, d.AlreadyApplied(d.Epoch, d.Position))
	return nil
}

// TestReplayedDeliveryHasNoPosition: a replayed line keeps its feed, epoch
// and position, has Sequence 0, and OnComplete and AlreadyApplied return
// false for it.
func TestReplayedDeliveryHasNoPosition(t *testing.T) {
	dir := t.TempDir()
	l, err := OpenLedger(filepath.Join(dir, "p.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := newGRig(t, GroupConfig{Name: "p", Retry: fastRetry(1), OnFailure: DeadLetter, Ledger: l})
	p := &replayProbe{}
	p.fail.Store(true)
	r.g.SetProcessor(p)
	r.run()
	r.publish("x")
	r.waitAck(1, 10*time.Second)
	p.fail.Store(false)
	if res, err := r.g.Replay(context.Background(), 5); err != nil || res.Replayed != 1 {
		t.Fatalf("replay = %+v, %v", res, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	d := p.seen[0]
	if d.Feed != "app" || d.Epoch != 0xe1 || d.Position != 2 || d.Sequence != 0 || string(d.Line) != "x" || d.Positioned() {
		t.Fatalf("replayed delivery %+v", d)
	}
	if p.oc[0] || p.aa[0] {
		t.Fatalf("OnComplete %v, AlreadyApplied %v for a replayed line, want false, false", p.oc[0], p.aa[0])
	}
}

func ledgerDelivery(line string, epoch uint64, pos int64) *feed.Delivery {
	b := feed.NewBatch()
	b.Feed, b.Path, b.Epoch = "app", "/in.log", epoch
	b.AppendLine([]byte(line), pos)
	var d feed.Delivery
	d.Reset(b, 0)
	return &d
}

// TestLedgerAcrossRestart: entries are read back at open (raw bytes exact);
// a re-delivered positioned line is not appended twice; a torn last entry
// is cut off; a purge removes from the front.
func TestLedgerAcrossRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	l, err := OpenLedger(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw := "\x00bin\xfe\xff\r"
	for i, line := range []string{raw, "two", "three"} {
		if err := l.DeadLetter(ledgerDelivery(line, 9, int64(10*(i+1))), 6, errors.New("boom")); err != nil {
			t.Fatal(err)
		}
	}
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"feed":"app","epo`) // a crash during an append
	f.Close()

	l, err = OpenLedger(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if l.Len() != 3 {
		t.Fatalf("ledger after restart: %d entries, want 3", l.Len())
	}
	data, _ := os.ReadFile(path)
	if !bytes.HasSuffix(data, []byte("}\n")) {
		t.Fatalf("torn tail not cut off: %q", data[len(data)-20:])
	}
	// The same positioned line again (delivered again after a crash).
	if err := l.DeadLetter(ledgerDelivery("two", 9, 20), 6, errors.New("boom")); err != nil {
		t.Fatal(err)
	}
	if l.Len() != 3 {
		t.Fatalf("re-delivered dead letter appended twice: %d entries", l.Len())
	}
	items := l.head(1)
	if len(items) != 1 || string(items[0].line) != raw || items[0].epoch != 9 || items[0].entry.Position != 10 {
		t.Fatalf("head %+v", items)
	}
	if n, err := l.Purge(2); err != nil || n != 2 {
		t.Fatalf("purge = %d, %v", n, err)
	}
	l, err = OpenLedger(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if items, total := l.List(10); total != 1 || items[0].Line != "three" {
		t.Fatalf("after purge: %d entries, first %+v", total, items)
	}
}

// TestLedgerKeepsCorruptEntries: a complete line that does not decode is
// kept and counted (it may hold a line), skipped by replays, removed by a
// purge.
func TestLedgerKeepsCorruptEntries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, []byte("not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := OpenLedger(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if l.Len() != 1 || len(l.head(10)) != 0 {
		t.Fatalf("len %d, replayable %d", l.Len(), len(l.head(10)))
	}
	if items, _ := l.List(10); items[0].Corrupt != "not json" {
		t.Fatalf("listed %+v", items[0])
	}
	if n, err := l.Purge(10); n != 1 || err != nil || l.Len() != 0 {
		t.Fatalf("purge = %d, %v; len %d", n, err, l.Len())
	}
}

// panicker fails every line, then panics on each once disarmed.
type panicker struct{ fail atomic.Bool }

func (p *panicker) Process(_ context.Context, d *feed.Delivery) error {
	if p.fail.Load() {
		return errors.New("down")
	}
	panic("cannot take " + string(d.Line))
}

// TestReplayPanicDoesNotHang: a processor that panics on a replayed line
// kills the subscriber (quarantined, DEAD); the replay returns an error
// instead of waiting forever, and the entry stays in the ledger.
func TestReplayPanicDoesNotHang(t *testing.T) {
	l, err := OpenLedger(filepath.Join(t.TempDir(), "p.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := newGRig(t, GroupConfig{Name: "p", Retry: fastRetry(1), OnFailure: DeadLetter, Ledger: l})
	p := &panicker{}
	p.fail.Store(true)
	r.g.SetProcessor(p)
	r.run()
	r.publish("x")
	r.waitAck(1, 10*time.Second)
	p.fail.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := r.g.Replay(ctx, 1)
	if !errors.Is(err, ErrReplayIncomplete) || res.Remaining != 1 {
		t.Fatalf("replay into a panic = %+v, %v", res, err)
	}
	if st, _ := r.q.State(); st != feed.Dead {
		t.Fatalf("state %v, want DEAD", st)
	}
}
