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

// TestDeadLetterRedeliveredAfterCrashIsSkipped: [a, poison] dead-letters
// poison; a restart before the pointer passed it delivers both again with
// the fault gone: poison is not written (the ledger keeps it), the ack
// point passes it, and a replay writes it exactly once.
func TestDeadLetterRedeliveredAfterCrashIsSkipped(t *testing.T) {
	for _, tc := range []struct {
		name string
		eo   bool
		mode FsyncMode
		want string // the output after the re-delivery
	}{
		{"plain", false, FsyncNever, "a\na\n"}, // at-least-once: a again
		{"exactlyOnce", true, FsyncNever, "a\n"},
		{"exactlyOnce interval", true, FsyncInterval, "a\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			r := newDLRigAt(t, dir, DeadLetter, tc.eo, tc.mode)
			r.run()
			r.publish("a", "poison")
			r.waitAck(2, 10*time.Second)
			r.cancel()
			<-r.g.Done()

			r = newDLRigAt(t, dir, DeadLetter, tc.eo, tc.mode) // the restart: same output, ledger, record
			r.armed.Store(false)
			r.run()
			r.publish("a", "poison")
			r.waitAck(2, 10*time.Second)
			if got := r.output(); got != tc.want {
				t.Fatalf("output after the re-delivery %q, want %q (the dead letter stays in the ledger only)", got, tc.want)
			}
			if n := r.ledger.Len(); n != 1 {
				t.Fatalf("ledger %d entries, want 1", n)
			}
			if res, err := r.g.Replay(context.Background(), 10); err != nil || res.Replayed != 1 {
				t.Fatalf("replay = %+v, %v", res, err)
			}
			if got, want := r.output(), tc.want+"poison\n"; got != want {
				t.Fatalf("output after the replay %q, want %q", got, want)
			}
		})
	}
}

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

// TestPullSkipsLedgerLines: a pull subscriber does not hand out a line the
// ledger holds; the ack point passes it once the lines before it are
// acknowledged.
func TestPullSkipsLedgerLines(t *testing.T) {
	r := newPullRig(t, GroupConfig{Retry: slowRetry(6), OnFailure: DeadLetter}, time.Minute, 100)
	if err := r.ledger.DeadLetter(ledgerDelivery("l-00001", 0xe1, 16), 6, errors.New("boom")); err != nil {
		t.Fatal(err)
	}
	r.publish(eoLines("l", 0, 3)...) // ends 8, 16, 24
	evs := r.pull(2, false)
	if evs[0].Line != "l-00000" || evs[1].Line != "l-00002" {
		t.Fatalf("pulled %q, %q; want l-00000 and l-00002", evs[0].Line, evs[1].Line)
	}
	if a := r.q.AckPoint(); a != 0 {
		t.Fatalf("ack point %d before any ACK", a)
	}
	r.ack(evs[0])
	r.waitAck(2, 10*time.Second)
	r.ack(evs[1])
	r.waitAck(3, 10*time.Second)
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
	if l.within(eoBatch(1, 0, "a")) != nil {
		t.Fatal("an empty ledger holds a line")
	}
	for _, pos := range []int64{4, 12} {
		if err := l.DeadLetter(ledgerDelivery("xxx", 1, pos), 1, errors.New("boom")); err != nil {
			t.Fatal(err)
		}
	}
	b := eoBatch(1, 0, "aaa", "bbb", "ccc", "ddd") // ends 4, 8, 12, 16
	b.Feed = "app"
	if got := l.within(b); len(got) != 2 || !got[4] || !got[12] {
		t.Fatalf("within = %v, want 4 and 12", got)
	}
	for name, other := range map[string]*feed.Batch{
		"other epoch": eoBatch(2, 0, "aaa", "bbb", "ccc"),
		"after":       eoBatch(1, 12, "eee"),
		"between":     eoBatch(1, 4, "bbb"),
	} {
		if got := l.within(other); got != nil {
			t.Fatalf("%s: within = %v", name, got)
		}
	}
	other := eoBatch(1, 0, "aaa")
	other.Feed = "other"
	unpos := eoBatch(1, 0, "aaa")
	unpos.Positioned = false
	if l.within(other) != nil || l.within(unpos) != nil {
		t.Fatal("another feed's or an unpositioned line matched")
	}
	if n, err := l.Purge(1); n != 1 || err != nil {
		t.Fatalf("purge = %d, %v", n, err)
	}
	if got := l.within(b); len(got) != 1 || !got[12] {
		t.Fatalf("after the purge within = %v, want 12 only", got)
	}
	if n, err := l.Purge(1); n != 1 || err != nil || l.within(b) != nil {
		t.Fatalf("purge = %d, %v; within %v", n, err, l.within(b))
	}
}
