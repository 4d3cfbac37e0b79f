package file

import (
	"os"
	"testing"
	"time"

	"tailfeed/pointer"
)

// Review 40d (fortieth session, fourth independent review of the hand-over
// of listed files, handed.go). Each failing on 77c4edc: a handed file grown
// after the hand-over and compressed before the source opened, counted
// lost though read (the .gz's key looked for again before a skip); one
// compressed after the hand-over, read, committed and deleted while down,
// counted at the next start (the epochs line matched by its listed first
// bytes under any key); the feed CAUGHT_UP (settled) while a skipped
// handed file was still unread and uncounted (a pending handed file is
// behind).

// D1: W handed over plain (8 bytes); its writer appends b-2 after the
// hand-over (still writing through its descriptor), then logrotate
// compresses it before the path's source opens. The source reads the .gz
// (b-0..b-2): W must not be counted lost.
func TestRev40dHandedGrewAfterHandOverThenCompressedBeforeOpen(t *testing.T) {
	pattern, data, w := rev40Setup(t, 10, false)
	var once bool
	openPointer = func(path string, o pointer.Options) (*pointer.Pointer, error) {
		if !once {
			once = true
			appendTo(t, w+".1", "b-2\n")
			rev39Gzip(t, w+".1", w+".1.gz")
		}
		return pointer.Open(path, o)
	}
	t.Cleanup(func() { openPointer = pointer.Open })
	ig2, stop2 := runGlobWith(t, pattern, data, time.Second, func(c *GlobConfig) { c.Stream.Logger = rev25bLog(t) }, nil)
	defer stop2()
	lines, _ := ig2.popEpochs(4*time.Second, true)
	tails, bytes, detail := ig2.lost()
	t.Logf("run 2 %q; lostTails %d lostBytes %d (%q)", lines, tails, bytes, detail)
	if rev40cHas(lines, "b-2") && tails > 0 {
		t.Errorf("W's lines delivered (from its .gz) and W counted lost: lostTails %d lostBytes %d (%q)", tails, bytes, detail)
	}
	_ = os.Remove
}

// D2: the handed W skipped by the path's source (Y gone at its open): the
// source reads Z to its end and is CAUGHT_UP; until the next housekeeping
// pass queues W (readHandedBeside), is the feed CAUGHT_UP with W's lines
// unread and uncounted?
func TestRev40dSkippedHandedCaughtUpMeanwhile(t *testing.T) {
	pattern, data, w := rev40Setup(t, 10, false)
	rev40DeleteYAtOpen(t, w+".2")
	ig2, stop2 := runGlobWith(t, pattern, data, time.Second, func(c *GlobConfig) { c.Stream.Logger = rev25bLog(t) }, nil)
	defer stop2()
	got := map[string]int{}
	var green []string
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); {
		if b := ig2.q.TryPop(); b != nil {
			for i := range b.Len() {
				got[string(b.Lines[i])]++
			}
			ig2.q.AddDispatched(uint64(b.Len()))
			b.Release()
			ig2.pub.Poke()
		}
		st, c := ig2.g.StateCounts()
		ig2.g.mu.Lock()
		nh := len(ig2.g.handed)
		ig2.g.mu.Unlock()
		if st == CaughtUp && got["b-0"] == 0 && got["c-1"] > 0 && ig2.q.Depth() == 0 {
			green = append(green, time.Now().Format("15:04:05.000")+" handed="+itoa(nh)+" tracked="+itoa(c.Tracked)+" behind="+itoa(c.Behind))
		}
		time.Sleep(2 * time.Millisecond)
	}
	tails, bytes, detail := ig2.lost()
	t.Logf("delivered %v; lostTails %d lostBytes %d (%q)", got, tails, bytes, detail)
	if len(green) > 0 {
		t.Errorf("CAUGHT_UP, queue drained, with W's b-lines unread (read later: %d) at %d looks: first %q last %q", got["b-0"], len(green), green[0], green[len(green)-1])
	}
}

// D3: W handed over plain, compressed after the hand-over and before the
// source opened (TestRev40bHandedCompressedBeforeOpen); the source reads
// the .gz, the pointer passes it (names Z); kill -9 before the list drops
// W (its entry still HandedKey 0); the .gz deleted while down (rotate
// count). Run 3 must not count W: every line of it was committed.
func TestRev40dCompressedAfterHandOverPassedThenDeletedWhileDown(t *testing.T) {
	pattern, data, w := rev40Setup(t, 10, false)
	zKey := rev40Key(t, w)
	var once bool
	openPointer = func(path string, o pointer.Options) (*pointer.Pointer, error) {
		if !once {
			once = true
			rev39Gzip(t, w+".1", w+".1.gz")
		}
		return pointer.Open(path, o)
	}
	t.Cleanup(func() { openPointer = pointer.Open })
	ig2, kill2, _ := runGlobKill(t, pattern, data, time.Second, func(c *GlobConfig) { c.Stream.Logger = rev25bLog(t) }, nil)
	got2 := map[string]int{}
	var snap string
	rev40AckUntilNamed(ig2, w, zKey, got2, func() { snap = rev22bCopyData(t, data) }) // (the kill -9, then)
	if snap == "" {
		t.Skip("pointer never named Z")
	}
	list, _ := os.ReadFile(snap + "/feeds/f/" + unreadListName)
	t.Logf("run 2 delivered b-0 %d b-1 %d c-0 %d; list at the kill: %s", got2["b-0"], got2["b-1"], got2["c-0"], list)
	kill2()
	openPointer = pointer.Open
	if err := os.Remove(w + ".1.gz"); err != nil {
		t.Fatal(err)
	}
	ig3, stop3 := runGlobWith(t, pattern, snap, time.Second, func(c *GlobConfig) { c.Stream.Logger = rev25bLog(t) }, nil)
	defer stop3()
	appendTo(t, w, numbered("e", 1))
	lines := rev39PopUntil(ig3, "e-0")
	tails, bytes, detail := ig3.lost()
	t.Logf("run 3 delivered %q; lostTails %d lostBytes %d (%q)", lines, tails, bytes, detail)
	if got2["b-1"] > 0 && tails > 0 {
		t.Errorf("W (as its .gz) read and committed in run 2, deleted while down: run 3 counted %d lost tails, %d bytes (%q)", tails, bytes, detail)
	}
}
