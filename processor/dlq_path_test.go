package processor

import (
	"fmt"
	"path/filepath"
	"testing"

	"tailfeed/feed"
)

// A dead letter of a file whose name is not UTF-8 keeps the path's exact
// bytes across a restart (pathBase64): a replay carries the file's path,
// not one with U+FFFD for each bad byte (audit 10B).
func TestDeadLetterKeepsPathBytes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sink.jsonl")
	l, err := OpenLedger(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range []string{"/logs/a\xff.log", "/logs/b.log"} {
		var d feed.Delivery
		d.Reset(&feed.Batch{Feed: "app", Path: p, Epoch: 0xe1 + uint64(i), Positioned: true,
			Lines: [][]byte{[]byte("x")}, Ends: []int64{2}}, 0)
		if err := l.DeadLetter(&d, 6, fmt.Errorf("x")); err != nil {
			t.Fatal(err)
		}
	}
	l2, err := OpenLedger(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	items := l2.Head(10)
	if len(items) != 2 {
		t.Fatalf("%d entries, want 2", len(items))
	}
	for i, want := range []string{"/logs/a\xff.log", "/logs/b.log"} {
		if got := l2.entries[i].e.Path; got != want {
			t.Errorf("entry %d path %q, want %q", i, got, want)
		}
	}
}
