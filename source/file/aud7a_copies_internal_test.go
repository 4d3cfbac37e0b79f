// Audit 7 A (parked since the twelfth session, fixed in the twenty-second):
// a glob stream whose source stayed open across several copytruncates took
// one copy per truncation, but the glob kept only the last for the stream's
// next source (Source.CopyKey), which read the earlier ones again as later
// generations of its file.

package file

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestAud7ACopiesOfOneOpenSourceNotReadAgain — DESIGN §2 (no duplicate
// without a crash), §10 "Exactly-once output is byte-identical per input
// file"; README: "Copies its earlier opens in this process read are never
// taken for later generations". a.log (5 lines) is rotated by copytruncate
// three times while its stream stays open (numbered copies shifted first,
// as logrotate does: a.log.1 → a.log.2 …, none matched by *.log), each
// round's lines read from the copy by the open source; the stream is then
// closed as inactive and rotated once more while closed. The next source
// reads the newest copy from its pointer — and, before the fix, a.log.3
// and a.log.2 (the first two rounds' copies, taken by the same earlier
// source, within §4's 2 s of the pointer's file) again from their start as
// later generations: 7 lines twice (line-0…4, r0-new-0, -1), in 6 runs of 6.
func TestAud7ACopiesOfOneOpenSourceNotReadAgain(t *testing.T) {
	t.Parallel()
	ig := startInternalGlob(t, 500*time.Millisecond, 5*time.Second)
	dir := filepath.Dir(ig.g.cfg.Stream.Path)
	a := filepath.Join(dir, "a.log")
	count, stop := ig.consumeLive()
	var want []string
	for i := range 5 {
		want = append(want, fmt.Sprintf("line-%d", i))
	}
	waitDelivered := func(l string) {
		t.Helper()
		for end := time.Now().Add(5 * time.Second); count(l) == 0; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("%s never delivered", l)
			}
		}
	}
	waitDelivered("line-4")
	rotate := func(round int) {
		t.Helper()
		for j := round; j >= 1; j-- {
			if err := os.Rename(fmt.Sprintf("%s.%d", a, j), fmt.Sprintf("%s.%d", a, j+1)); err != nil {
				t.Fatal(err)
			}
		}
		want = append(want, copytruncateRound(t, a, a+".1", round)...)
	}
	for round := range 3 {
		ig.g.mu.Lock()
		s := ig.g.byPath[a]
		closed := s == nil || s.st == stClosed
		ig.g.mu.Unlock()
		if closed {
			t.Fatalf("round %d: a.log's stream is not open (closeInactive 500 ms)", round)
		}
		rotate(round)
		waitDelivered(fmt.Sprintf("r%d-new-1", round)) // its source read the copy, then the file
	}
	ig.waitFor(t, "a.log's stream closed as inactive", func() bool {
		s := ig.g.byPath[a]
		return s != nil && s.st == stClosed
	})
	rotate(3) // while closed: the next source reads a.log.1 from its pointer
	time.Sleep(1500 * time.Millisecond)
	got := stop()
	for _, l := range want {
		if got[l] != 1 {
			t.Errorf("%s delivered %d times, want once (delivered %v)", l, got[l], got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d distinct lines delivered, %d written: %v", len(got), len(want), got)
	}
	if tails, bytes, detail := ig.lost(); tails != 0 || bytes != 0 {
		t.Errorf("lostTails %d lostBytes %d (%q), want nothing lost: every copy is on disk", tails, bytes, detail)
	}
}

// noteCopy keeps every copy a source took, not only its last one; all
// those of the last minute, however many (review 22a B: a bound of 8 had
// the first of 10 quick copytruncates read again).
func TestNoteCopyKeepsEveryCopyOfOneSource(t *testing.T) {
	t.Parallel()
	src := &Source{}
	n := maxCopiesKept + 2
	for i := range n {
		src.tookCopy(uint64(100+i), 1, 10, uint64(i), int64(10+i), time.Time{})
	}
	var s gstream
	s.noteCopy(src)
	if len(s.copies) != n || s.copies[0].Key != 100 || s.copies[n-1].Key != uint64(100+n-1) {
		t.Fatalf("copies = %+v, want the source's %d copies, oldest first", s.copies, n)
	}
	s.noteCopy(src) // the same source noted again: nothing added twice
	if len(s.copies) != n {
		t.Fatalf("noted twice: %d copies, want %d", len(s.copies), n)
	}
}

// trimCopies keeps every copy taken within copiesWindow of the last one,
// and of the older ones only as many as bring the list to maxCopiesKept.
func TestTrimCopiesKeepsTheLastMinute(t *testing.T) {
	t.Parallel()
	now := time.Now()
	var cs []CopyTaken
	for i := range 12 { // taken 12..1 minutes before now
		cs = append(cs, CopyTaken{Key: uint64(i), At: now.Add(-time.Duration(12-i) * time.Minute)})
	}
	for i := range 12 { // and 12 in the last second
		cs = append(cs, CopyTaken{Key: uint64(100 + i), At: now.Add(-time.Duration(12-i) * time.Millisecond)})
	}
	got := trimCopies(cs)
	if len(got) != 13 || got[0].Key != 11 || got[12].Key != 111 {
		t.Fatalf("trimCopies kept %d: %+v; want the 12 of the last second and the newest older one (key 11)", len(got), got)
	}
	few := []CopyTaken{{Key: 1, At: now.Add(-time.Hour)}, {Key: 2, At: now}}
	if got := trimCopies(few); len(got) != 2 {
		t.Fatalf("trimCopies of %d copies kept %d, want all (under maxCopiesKept)", len(few), len(got))
	}
}
