package processor

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"tailfeed/feed"
)

// A positioned line already in the dead-letter ledger that comes again (a
// crash came before the pointer passed it) is processed: the group
// finishes it without the processor, so it is never in the output and in
// the ledger at once (a replay would write it twice, even under
// exactlyOnce), and deadLettered stays the number of entries.

// TestGroupSkipsLedgerLines: lines whose (feed, epoch, position) the
// ledger holds are left out of what the processor sees — in the middle, at
// the end, a whole batch — also under filters, and batches before and after
// (a view shared with the batch) are whole; the ack point passes them all.
func TestGroupSkipsLedgerLines(t *testing.T) {
	for _, filtered := range []bool{false, true} {
		t.Run(map[bool]string{false: "no filter", true: "exclude"}[filtered], func(t *testing.T) {
			l, err := OpenLedger(t.TempDir()+"/p.jsonl", nil)
			if err != nil {
				t.Fatal(err)
			}
			// Positions of the lines published below (each "xN" plus '\n' is 3 bytes):
			// x5, x9, and one past every line.
			for _, pos := range []int64{3 * 5, 3 * 9, 1000} {
				if err := l.DeadLetter(ledgerDelivery("old", 0xe1, pos), 6, errors.New("boom")); err != nil {
					t.Fatal(err)
				}
			}
			cfg := GroupConfig{Name: "p", Retry: fastRetry(2), OnFailure: DeadLetter, Ledger: l}
			if filtered {
				cfg.Exclude = regexp.MustCompile("^x3$")
			}
			r := newGRig(t, cfg)
			p := &linesSeen{}
			r.g.SetBatchProcessor(p)
			r.run()
			r.publish("x1", "x2", "x3") // shared view (or filtered)
			r.publish("x4", "x5", "x6") // x5 in the ledger
			r.publish("x7", "x8")       // shared again
			r.publish("x9")             // the whole batch in the ledger
			r.publish("y0", "y1", "y2") // shared
			r.waitAck(12, 10*time.Second)
			want := []string{"x1", "x2", "x3", "x4", "x6", "x7", "x8", "y0", "y1", "y2"}
			if filtered {
				want = slices.DeleteFunc(want, func(s string) bool { return s == "x3" })
			}
			if got := p.all(); !slices.Equal(got, want) {
				t.Fatalf("processor saw %q, want %q", got, want)
			}
			if l.Len() != 3 || r.g.DeadLettered() != 0 {
				t.Fatalf("ledger %d, dead-lettered this run %d; want 3 and 0", l.Len(), r.g.DeadLettered())
			}
		})
	}
}

// linesSeen records the lines a batch processor is given.
type linesSeen struct {
	mu  sync.Mutex
	got []string
}

func (p *linesSeen) ProcessBatch(_ context.Context, b *feed.Batch) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range b.Lines {
		p.got = append(p.got, string(l))
	}
	return len(b.Lines), nil
}

func (p *linesSeen) all() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.got)
}

// TestLedgerWithin: the ledger finds the lines of a batch it holds by
// feed, epoch and position (none for a batch without positions), and
// forgets an entry once it was purged or replayed.
func TestLedgerWithin(t *testing.T) {
	l, err := OpenLedger(t.TempDir()+"/p.jsonl", nil)
	if err != nil {
		t.Fatal(err)
	}
	if l.Within(eoBatch(1, 0, "a")) != nil {
		t.Fatal("an empty ledger holds a line")
	}
	for _, pos := range []int64{4, 12} {
		if err := l.DeadLetter(ledgerDelivery("xxx", 1, pos), 1, errors.New("boom")); err != nil {
			t.Fatal(err)
		}
	}
	b := eoBatch(1, 0, "aaa", "bbb", "ccc", "ddd") // ends 4, 8, 12, 16
	b.Feed = "app"
	if got := l.Within(b); len(got) != 2 || !got[4] || !got[12] {
		t.Fatalf("within = %v, want 4 and 12", got)
	}
	for name, other := range map[string]*feed.Batch{
		"other epoch": eoBatch(2, 0, "aaa", "bbb", "ccc"),
		"after":       eoBatch(1, 12, "eee"),
		"between":     eoBatch(1, 4, "bbb"),
	} {
		if got := l.Within(other); got != nil {
			t.Fatalf("%s: within = %v", name, got)
		}
	}
	other := eoBatch(1, 0, "aaa")
	other.Feed = "other"
	unpos := eoBatch(1, 0, "aaa")
	unpos.Positioned = false
	if l.Within(other) != nil || l.Within(unpos) != nil {
		t.Fatal("another feed's or an unpositioned line matched")
	}
	if n, err := l.Purge(1); n != 1 || err != nil {
		t.Fatalf("purge = %d, %v", n, err)
	}
	if got := l.Within(b); len(got) != 1 || !got[12] {
		t.Fatalf("after the purge within = %v, want 12 only", got)
	}
	if n, err := l.Purge(1); n != 1 || err != nil || l.Within(b) != nil {
		t.Fatalf("purge = %d, %v; within %v", n, err, l.Within(b))
	}
}
