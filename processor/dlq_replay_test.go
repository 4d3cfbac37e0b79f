package processor

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"tailfeed/feed"
)

// Dead-letter replay (DESIGN §12 "Dead-letter replay"): counted in lines,
// a webhook request replayed whole under its original key, the first
// failure stopping the replay with the rest left in the ledger once, and a
// replay into a pull subscriber queued at once, each entry leaving the
// ledger when acknowledged.

// ledgerTexts is the ledger's entries' lines, as the file holds them.
func ledgerTexts(t *testing.T, l *Ledger) []string {
	t.Helper()
	items, n := l.List(1000)
	out := make([]string, 0, n)
	for _, it := range items {
		out = append(out, it.Line)
	}
	// The file agrees with memory: a reopen reads the same entries.
	again, err := OpenLedger(l.Path(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.Len() != n {
		t.Fatalf("ledger file holds %d entries, memory %d", again.Len(), n)
	}
	return out
}

// TestLedgerUnitsWholeRequests: with whole requests, the entries of one
// request form one unit wherever they stand, max is rounded up to whole
// units; without, every entry is a unit.
func TestLedgerUnitsWholeRequests(t *testing.T) {
	l, err := OpenLedger(t.TempDir()+"/x.jsonl", nil)
	if err != nil {
		t.Fatal(err)
	}
	add := func(line string, pos int64, req string, n int) {
		var d feed.Delivery
		d.Reset(&feed.Batch{Feed: "app", Epoch: 1, Positioned: true, Lines: [][]byte{[]byte(line)}, Ends: []int64{pos}}, 0)
		if err := l.DeadLetterRequest(&d, 1, errors.New("x"), req, n); err != nil {
			t.Fatal(err)
		}
	}
	add("a1", 3, "app:0000000000000001:3-9", 2)
	add("b", 5, "", 0)
	add("a2", 9, "app:0000000000000001:3-9", 2)
	add("c", 12, "app:0000000000000001:12-12", 1)
	show := func(us [][]replayItem) string {
		var out []string
		for _, u := range us {
			var ls []string
			for _, it := range u {
				ls = append(ls, string(it.line))
			}
			out = append(out, strings.Join(ls, "+"))
		}
		return fmt.Sprint(out)
	}
	for _, c := range []struct {
		max   int
		whole bool
		want  string
	}{
		{1, true, "[a1+a2]"},
		{2, true, "[a1+a2]"},
		{3, true, "[a1+a2 b]"},
		{10, true, "[a1+a2 b c]"},
		{3, false, "[a1 b a2]"},
	} {
		us := l.take(c.max, c.whole, "")
		if got := show(us); got != c.want {
			t.Errorf("take(%d, %v) = %s, want %s", c.max, c.whole, got, c.want)
		}
		l.untake(us)
	}
}
