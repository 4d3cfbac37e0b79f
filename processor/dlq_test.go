package processor

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/feed"
)

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
	r.waitDead() // the supervisor parks it DEAD after answering the replay
}
