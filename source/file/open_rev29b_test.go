//go:build openfindings

package file

// Review 29b's lesser finding kept open (run with -tags openfindings): a
// glob stream stopped for another file's turn with a batch read and not
// published, its file cut while it waits, counts one lost tail but 0 lost
// bytes (the glob takes the stream's read position for what was read).
// Stated in README.

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestRev29BXDroppedBatchCutWhileWaiting — DESIGN §4 "Nothing green over a
// loss": "Every case where it cannot is counted, in lostTails (files) and
// lostBytes (the bytes known to be gone, where known)"; "a live truncation
// with no copy found counts size last seen − read position in lostBytes".
// A glob stream adopted while empty reads three lines (39 bytes); headFirst
// stores its first bytes (offset 0, the change) but the batch cannot be
// published (the queue is full of another file's lines). A third file
// waiting for a slot takes the stream's turn: it is stopped, its batch
// dropped unpublished (Drain), and it waits for a slot. Its file is cut in
// place meanwhile (no copy), two new lines written; a look sees the cut.
// The three lines were never delivered to anyone: 39 bytes known gone
// (the glob saw the file at 39 bytes, nothing of it delivered).
// Observed (3 of 3): lostTails 1 (counted by the change's new branch,
// open.go:691 — the stream's second source in the run has prevSource
// false: g.start sets it only when s.src != nil (glob.go:2388), and closed() cleared s.src
// at glob.go:2633, so the "later source excluded" clause never applies),
// lostBytes 0; cutUnread 0. Expected lostBytes 39. Suspected cause:
// glob.go:1540 `from := max(g.unreadFrom(s), s.offset)` with s.offset =
// src.ReadPos() (glob.go:2584), which counts the dropped, unpublished batch
// as read. Lesser (lossless is false all the same).
func TestRev29BXDroppedBatchCutWhileWaiting(t *testing.T) {
	dir, data := t.TempDir(), t.TempDir()
	a, c, x := filepath.Join(dir, "a.log"), filepath.Join(dir, "c.log"), filepath.Join(dir, "x.log")
	for _, p := range []string{a, c} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var lmu sync.Mutex
	var losses []Loss
	ig := rev29BSlots(t, dir, data, func(l Loss) { lmu.Lock(); losses = append(losses, l); lmu.Unlock() })
	ig.waitFor(t, "a.log and c.log open", func() bool {
		n := 0
		for s := range ig.g.running {
			if s.st == stOpen && s.src != nil && s.src.State() == CaughtUp {
				n++
			}
		}
		return n == 2
	})
	rev29BAppend(t, c, "c-0\nc-1\n") // fills the queue (2 lines)
	ig.waitFor(t, "the queue full", func() bool { return ig.q.Depth() >= 2 })
	rev29BAppend(t, a, "a-0 xxxxxxxx\na-1 xxxxxxxx\na-2 xxxxxxxx\n")
	var sa *gstream
	ig.waitFor(t, "a.log's first bytes stored, its batch held", func() bool {
		sa = ig.g.byPath[a]
		if sa == nil || sa.src == nil || sa.src.ptr == nil {
			return false
		}
		rec := sa.src.ptr.Record()
		return rec.FPLen > 0 && rec.Offset == 0 && sa.src.pending != nil
	})
	rev29BAppend(t, x, "x-0\n") // waits for a slot: a.log's turn ends
	ig.waitFor(t, "a.log's stream stopped, waiting", func() bool {
		return sa.src == nil && (sa.st == stQueued || sa.st == stClosed)
	})
	if err := os.WriteFile(a, []byte("n-0\nn-1\n"), 0o644); err != nil { // cut in place, rewritten
		t.Fatal(err)
	}
	var cutSeen bool
	var cutUnread int64
	ig.waitFor(t, "a look saw the cut, or a.log's stream started again", func() bool {
		cutSeen, cutUnread = sa.cutSeen, sa.cutUnread
		return sa.cutSeen || sa.src != nil
	})
	var prev bool
	ig.waitFor(t, "a.log's stream started again", func() bool {
		if sa.src != nil {
			prev = sa.src.cfg.prevSource
		}
		return sa.src != nil
	})
	t.Logf("a.log's second source in this run: prevSource %v", prev)
	count, stop := ig.consumeLive()
	for end := time.Now().Add(15 * time.Second); count("n-1") == 0 && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	got := stop()
	tails, bytes, detail := ig.lost()
	lmu.Lock()
	t.Logf("cutSeen %v cutUnread %d; delivered %v; lostTails %d lostBytes %d detail %q; losses %+v", cutSeen, cutUnread, got, tails, bytes, detail, losses)
	lmu.Unlock()
	if got["n-1"] == 0 {
		t.Fatalf("the rewritten a.log's lines never delivered: %v", got)
	}
	if got["a-0 xxxxxxxx"] == 0 && (tails == 0 || bytes < 39) {
		t.Errorf("a-0..a-2 (39 bytes, read, never published) were cut with no copy and never delivered: want lostTails >= 1, lostBytes >= 39; got lostTails %d lostBytes %d", tails, bytes)
	}
}
