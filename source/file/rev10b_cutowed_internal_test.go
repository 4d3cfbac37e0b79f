package file

// Findings of the tenth session's review 10b (DESIGN and the diff only),
// each fixed the same session: the test failed before its fix; its comment
// gives what was observed then.

// Review 10b: a closed glob stream that still owes a commit (its drain cut
// short) when its file is cut in place: cutUnread is measured from its
// pointer's stored offset, which is behind what the stream read.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRev10BFixedBCutWhileOwingCountsDeliveredBytesLost — DESIGN §4 "Nothing
// green over a loss": a live truncation with no copy found counts "size
// last seen − read position" in lostBytes and one lost tail "when that is
// positive"; lossless only over a real loss. a.log (5 lines, 35 bytes) is
// read, acknowledged and committed (pointer bound at 35), closed. Three
// lines are appended (21 bytes): the stream reopens, reads and publishes
// them (read position 56), and closes as inactive before they are
// acknowledged (drain bound 100 ms: it owes the commit; the pointer file
// still says 35). The file is then cut and rewritten in place (O_TRUNC, two
// shorter lines); a look sees it (the diff's seen(): cutSeen, cutUnread =
// seenEnd − the POINTER FILE's offset = 56 − 35 = 21). Only then are the
// three lines acknowledged (settleOwed commits 56). Nothing was lost: every
// byte was read and every line acknowledged. Expected: lostTails 0,
// lostBytes 0. Observed (3 of 3 runs): cutUnread 21, lostTails 1,
// lostBytes 21 — the next source (resumeRotated, cutSeen) counts the 21
// bytes it read and delivered as never read; the feed turns lossy.
// unreadFrom measures from the pointer's stored offset, which lags the
// read position while a commit is owed. (Before the diff the same case
// counted a lost tail of unknown size; the diff's intent — count what was
// seen past what was read, nothing when the file was read to its end, its
// TestRev10FixedA — fails for an owing stream.)
func TestRev10BFixedBCutWhileOwingCountsDeliveredBytesLost(t *testing.T) {
	t.Parallel()
	ig, a, n := rev10bClosedOwing(t)
	if err := os.WriteFile(a, []byte("n-0\nn-1\n"), 0o600); err != nil { // O_TRUNC: in place
		t.Fatal(err)
	}
	var cutSeen bool
	var cutUnread int64
	ig.waitFor(t, "a look saw the cut", func() bool {
		s := ig.g.byPath[a]
		if s != nil && s.cutSeen {
			cutSeen, cutUnread = true, s.cutUnread
		}
		return s != nil && s.size == 8
	})
	ig.q.AddDispatched(n) // the five lines finished now
	ig.pub.Poke()
	got := ig.popLines(3 * time.Second)
	tails, bytes, detail := ig.lost()
	t.Logf("cutSeen %v cutUnread %d; delivered after %v; lostTails %d lostBytes %d detail %q", cutSeen, cutUnread, got, tails, bytes, detail)
	if got["n-0"] != 1 || got["n-1"] != 1 {
		t.Errorf("the rewritten file's lines delivered %v, want each once (DESIGN §2)", got)
	}
	if tails != 0 || bytes != 0 {
		t.Errorf("lostTails %d lostBytes %d (detail %q) though every byte of a.log was read and its five lines acknowledged before it was cut: DESIGN §4 a live truncation counts size last seen − read position (56 − 56 = 0); the pointer's offset, behind while the commit was owed, is not the read position",
			tails, bytes, detail)
	}
}

// TestRev10BFixedGSecondCutWhileHeldNotCounted — DESIGN §4: a live truncation
// with no copy found counts "size last seen − read position" in lostBytes;
// §2 nothing lost silently. The diff's seen() records a closed stream's cut
// once (!s.cutSeen): a second cut before the stream runs again keeps the
// first's cutUnread. a.log is read and committed (35 bytes), three lines
// appended and read (56), not acknowledged: the stream closes owing its
// commit, so it stays closed. Cut #1: a.log rewritten in place with one
// line (4 bytes). Then ten lines of 50 bytes are written to it (a look sees
// 504 bytes: the stream is queued, still held by its owed commit), and it
// is cut again (cut #2, one line "m-0"). The three lines are then
// acknowledged; the stream runs again. The ten lines were never read:
// lost, and the look saw 504 bytes of them. Expected: lostBytes ≥ 500.
// Observed (3 of 3 runs, -race): cut #1 cutUnread 21, a look saw 504
// bytes (stream queued), cutUnread still 21 after cut #2; delivered only
// m-0 (n-0 and lost-0…9, 504 bytes, never delivered); lostTails 1,
// lostBytes 21 — and those 21 are the three lines that WERE delivered
// (TestRev10BFixedB), so the real 504-byte loss counts nothing in lostBytes.
func TestRev10BFixedGSecondCutWhileHeldNotCounted(t *testing.T) {
	t.Parallel()
	ig, a, n := rev10bClosedOwing(t)
	if err := os.WriteFile(a, []byte("n-0\n"), 0o600); err != nil { // cut #1
		t.Fatal(err)
	}
	var cut1 int64
	ig.waitFor(t, "a look saw cut #1", func() bool {
		s := ig.g.byPath[a]
		cut1 = s.cutUnread
		return s.size == 4 && s.cutSeen
	})
	var lost strings.Builder
	for i := range 10 {
		fmt.Fprintf(&lost, "lost-%d %s\n", i, strings.Repeat("y", 42))
	}
	w, err := os.OpenFile(a, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.WriteString(lost.String())
	w.Close()
	var seen int64
	var st streamState
	ig.waitFor(t, "a look saw the ten lines", func() bool {
		s := ig.g.byPath[a]
		seen, st = s.size, s.st
		return s.size == int64(4+lost.Len())
	})
	if err := os.WriteFile(a, []byte("m-0\n"), 0o600); err != nil { // cut #2
		t.Fatal(err)
	}
	var cut2 int64
	ig.waitFor(t, "a look saw cut #2", func() bool {
		s := ig.g.byPath[a]
		cut2 = s.cutUnread
		return s.size == 4 && s.mod != 0
	})
	time.Sleep(200 * time.Millisecond)
	ig.q.AddDispatched(n)
	ig.pub.Poke()
	got := ig.popLines(3 * time.Second)
	tails, bytes, detail := ig.lost()
	t.Logf("cut #1 cutUnread %d; seen %d bytes (state %v); after cut #2 cutUnread %d; delivered %v; lostTails %d lostBytes %d detail %q",
		cut1, seen, st, cut2, got, tails, bytes, detail)
	if got["m-0"] != 1 {
		t.Errorf("m-0 delivered %d times, want 1", got["m-0"])
	}
	if bytes < 500 {
		t.Errorf("lostBytes %d (lostTails %d): the ten lines (%d bytes, seen by a look while the stream was held closed) were cut unread, never delivered (%v), yet lostBytes does not count them. DESIGN §4: a live truncation counts size last seen − read position (here %d) in lostBytes; the diff keeps the first cut's cutUnread (%d) over a second cut",
			bytes, tails, lost.Len(), got, seen, cut1)
	}
}

// TestRev10BFixedHCutThenDeletedWhileHeldNotCounted — DESIGN §4 "Nothing green
// over a loss" (a live truncation with no copy counts size last seen −
// read position, and a tail); §10 a file that disappears with an unread
// tail counts in lostTails. The diff defers a closed stream's cut to its
// next source (cutSeen/cutUnread); when no source runs again — the file
// deleted while the stream is still held — nothing counts it. a.log is
// read and committed (35 bytes); three lines appended and read, not
// acknowledged: the stream closes owing its commit. Ten lines (500 bytes)
// are appended (a look sees them; the stream stays held), then a.log is
// cut in place to one line (the look records cutSeen, cutUnread 521), then
// deleted. The three lines are acknowledged. The ten lines (and the one)
// were never read. Expected: lostTails ≥ 1, lostBytes ≥ 500. Observed (3
// of 3 runs, -race): cutUnread 521 recorded, nothing delivered, lostTails
// 1 but lostBytes 0 — the feed is lossy, but lostBytes lies: the cut's
// cutUnread dies with the stream (no next source), and the deletion counts
// from the size seen after the cut (4). Probably as before the diff (no
// cutUnread then); the diff records the amount and drops it.
func TestRev10BFixedHCutThenDeletedWhileHeldNotCounted(t *testing.T) {
	t.Parallel()
	ig, a, n := rev10bClosedOwing(t)
	var lost []string
	for i := range 10 {
		lost = append(lost, fmt.Sprintf("lost-%d %s", i, strings.Repeat("y", 42)))
	}
	rev10AppendLines(t, a, lost...)
	ig.waitFor(t, "a look saw the ten lines", func() bool { return ig.g.byPath[a].size == 56+500 })
	if err := os.WriteFile(a, []byte("n-0\n"), 0o600); err != nil { // cut in place
		t.Fatal(err)
	}
	var cut int64
	ig.waitFor(t, "a look saw the cut", func() bool {
		s := ig.g.byPath[a]
		cut = s.cutUnread
		return s.size == 4 && s.cutSeen
	})
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	ig.q.AddDispatched(n)
	ig.pub.Poke()
	got := ig.popLines(3 * time.Second)
	tails, bytes, detail := ig.lost()
	t.Logf("cutUnread %d; delivered %v; lostTails %d lostBytes %d detail %q", cut, got, tails, bytes, detail)
	if tails == 0 || bytes < 500 {
		t.Errorf("lostTails %d lostBytes %d (detail %q): ten lines (500 bytes) seen by a look and never read, their file cut (cutUnread %d recorded) and then deleted while its stream was held closed: DESIGN §4 \"nothing green over a loss\" (a live truncation counts size last seen − read position), §10 a file gone with an unread tail counts in lostTails",
			tails, bytes, detail, cut)
	}
}

// rev10bClosedOwing starts a glob whose a.log (35 bytes) is read and
// committed, appends three lines, takes them unacknowledged (n, 3) and
// returns once a.log's stream closed owing its commit.
func rev10bClosedOwing(t *testing.T) (ig *internalGlob, a string, n uint64) {
	t.Helper()
	ig = startInternalGlob(t, 300*time.Millisecond, 100*time.Millisecond)
	a = filepath.Join(filepath.Dir(ig.g.cfg.Stream.Path), "a.log")
	ig.firstTurnCommitted(t) // a.log's 35 bytes committed, the pointer bound to it
	rev10AppendLines(t, a, "more-0", "more-1", "more-2")
	for end := time.Now().Add(10 * time.Second); n < 3 && time.Now().Before(end); {
		if b := ig.q.TryPop(); b != nil {
			n += uint64(b.Len())
			b.Release()
		} else {
			time.Sleep(time.Millisecond)
		}
	}
	if n != 3 {
		t.Fatalf("took %d of the 3 appended lines", n)
	}
	ig.waitFor(t, "a.log's stream closed owing its commit", func() bool {
		s := ig.g.byPath[a]
		return s != nil && s.st == stClosed && s.owe != nil
	})
	return ig, a, n
}
