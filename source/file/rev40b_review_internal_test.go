package file

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tailfeed/pointer"
)

// Review 40b (fortieth session, independent review of the hand-over of
// listed files, handed.go). Each test failed on ed1f4f0:
//   - a kill -9 after the pointer passed the handed file, then while down
//     the file deleted, compressed, or grown: counted lost though read and
//     committed (listedPassed found the epochs line only under the file's
//     own key, beside its path) — TestRev40bPassedThen*;
//   - the stream's own file read and forgotten (the empty record) before a
//     housekeeping pass looked: the handed file never passed nor skipped —
//     counted lost after a stop though read, or, skipped, neither read nor
//     counted for the rest of the run — TestRev40bReadThenOwnForgotten…,
//     TestRev40bSkippedOwnForgottenQuickly;
//   - compressed after the hand-over and before the source opened: read as
//     the .gz, then taken for skipped and counted —
//     TestRev40bHandedCompressedBeforeOpen.

// rev40bPassedThenKill: rev40Setup (plain), run 2 reads Y's tail and the
// handed W, the pointer passes W (names Z): kill -9 then (the list still
// names W). while() changes the files while down; run 3's lines and losses.
func rev40bPassedThenKill(t *testing.T, while func(w string)) (got2 map[string]int, lines []string, tails, bytes uint64, detail string) {
	pattern, data, w := rev40Setup(t, 10, false)
	zKey := rev40Key(t, w)
	ig2, kill2, _ := runGlobKill(t, pattern, data, time.Second, func(c *GlobConfig) { c.Stream.Logger = rev25bLog(t) }, nil)
	got2 = map[string]int{}
	var snap string
	rev40AckUntilNamed(ig2, w, zKey, got2, func() { snap = rev22bCopyData(t, data) }) // (the kill -9, then)
	if snap == "" {
		t.Skip("pointer never named Z")
	}
	list, _ := os.ReadFile(filepath.Join(snap, "feeds", "f", unreadListName))
	if !strings.Contains(string(list), `"size":8`) {
		t.Skipf("the kill's list no longer names W: %s", list)
	}
	t.Logf("run 2 delivered b-0 %d b-1 %d c-0 %d; unread list in the kill's copy: %s", got2["b-0"], got2["b-1"], got2["c-0"], list)
	kill2()
	while(w)
	ig3, stop3 := runGlobWith(t, pattern, snap, time.Second, func(c *GlobConfig) { c.Stream.Logger = rev25bLog(t) }, nil)
	defer stop3()
	appendTo(t, w, numbered("e", 1))
	lines = rev39PopUntil(ig3, "e-0")
	tails, bytes, detail = ig3.lost()
	t.Logf("run 3 delivered %q; lostTails %d lostBytes %d (%q)", lines, tails, bytes, detail)
	return
}

// W read and committed in run 2 (handed), deleted while down (logrotate's
// rotate count): nothing of it is pending (DESIGN §4: a file read to its
// end, committed and then deleted is not a lost tail).
func TestRev40bPassedThenDeletedWhileDown(t *testing.T) {
	got2, _, tails, bytes, _ := rev40bPassedThenKill(t, func(w string) {
		if err := os.Remove(w + ".1"); err != nil {
			t.Fatal(err)
		}
	})
	if got2["b-1"] > 0 && tails > 0 {
		t.Errorf("W read and committed in run 2, deleted while down: run 3 counted %d lost tails, %d bytes", tails, bytes)
	}
}

// W read and committed in run 2, compressed while down (delaycompress:
// w.log.1 -> w.log.2.gz at the next rotation).
func TestRev40bPassedThenCompressedWhileDown(t *testing.T) {
	got2, lines, tails, bytes, _ := rev40bPassedThenKill(t, func(w string) {
		os.Remove(w + ".2") // Y: rotate 2
		rev39Gzip(t, w+".1", w+".2.gz")
		if err := os.Rename(w, w+".1"); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(w, []byte(numbered("d", 2)), 0o600)
	})
	for _, l := range lines {
		if strings.HasPrefix(l, "b-") {
			t.Errorf("W's committed line %s delivered again", l)
		}
	}
	if got2["b-1"] > 0 && tails > 0 {
		t.Errorf("W read and committed in run 2, compressed while down: run 3 counted %d lost tails, %d bytes", tails, bytes)
	}
}

// W read and committed in run 2, its writer appends one line to it while
// tailfeed is down: only the new line may come (or nothing).
func TestRev40bPassedThenGrewWhileDown(t *testing.T) {
	_, lines, _, _, _ := rev40bPassedThenKill(t, func(w string) {
		appendTo(t, w+".1", "b-2\n")
	})
	for _, l := range lines {
		if l == "b-0" || l == "b-1" {
			t.Errorf("W's committed line %s delivered again (run 3: %q)", l, lines)
		}
	}
}

// The handed .gz: run 2's pointer Reset to it (its b-lines published, not
// acknowledged: the subscriber stops there), the list drops W at once
// (handedPassed: the pointer names it). Killed then; run 3 must deliver
// the b-lines or count them.
func TestRev40bGzPointerNamesItKilled(t *testing.T) {
	pattern, data, w := rev40Setup(t, 10, true)
	gzKey := rev40Key(t, w+".1.gz")
	ig2, kill2, _ := runGlobKill(t, pattern, data, time.Second, func(c *GlobConfig) { c.Stream.Logger = rev25bLog(t) }, nil)
	got2 := map[string]int{}
	var snap string
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end) && snap == ""; {
		if b := ig2.q.TryPop(); b != nil {
			ack := true
			for i := range b.Len() {
				got2[string(b.Lines[i])]++
				ack = ack && !strings.HasPrefix(string(b.Lines[i]), "b-")
			}
			if ack {
				ig2.q.AddDispatched(uint64(b.Len()))
			}
			b.Release()
			ig2.pub.Poke()
		}
		ig2.g.mu.Lock()
		s := ig2.g.byPath[w]
		var pp string
		if s != nil {
			pp = s.ptrPath
		}
		ig2.g.mu.Unlock()
		if pp != "" && got2["b-1"] > 0 {
			if rec, err := pointer.Inspect(pp); err == nil && rec.FileKey == gzKey {
				time.Sleep(1500 * time.Millisecond) // a housekeeping pass drops W from the list
				snap = rev22bCopyData(t, data)
			}
		}
		time.Sleep(time.Millisecond)
	}
	if snap == "" {
		t.Skip("pointer never named W.gz")
	}
	list, _ := os.ReadFile(filepath.Join(snap, "feeds", "f", unreadListName))
	t.Logf("run 2 delivered b-0 %d b-1 %d c-0 %d; unread list in the kill's copy: %q", got2["b-0"], got2["b-1"], got2["c-0"], list)
	kill2()
	ig3, stop3 := runGlobWith(t, pattern, snap, time.Second, func(c *GlobConfig) { c.Stream.Logger = rev25bLog(t) }, nil)
	defer stop3()
	appendTo(t, w, numbered("e", 1))
	lines := rev39PopUntil(ig3, "e-0")
	tails, bytes, detail := ig3.lost()
	t.Logf("run 3 delivered %q; lostTails %d lostBytes %d (%q)", lines, tails, bytes, detail)
	got := map[string]int{}
	for _, l := range lines {
		got[l]++
	}
	if (got["b-0"] == 0 || got["b-1"] == 0) && tails == 0 {
		t.Errorf("W.gz's unacknowledged b-lines neither delivered again nor counted")
	}
}

// The handed W skipped by the path's source (Y gone at its open: the
// generations by the pointer file's mtime), its own file Z read and
// deleted at once (logrotate's compress with no delaycompress removes the
// plain file): the pointer goes from Z's record to the empty one before a
// housekeeping pass sees it name Z. W must be read or counted in this run.
func TestRev40bSkippedOwnForgottenQuickly(t *testing.T) {
	pattern, data, w := rev40Setup(t, 10, false)
	rev40DeleteYAtOpen(t, w+".2")
	ig2, stop2 := runGlobWith(t, pattern, data, time.Second, func(c *GlobConfig) { c.Stream.Logger = rev25bLog(t) }, nil)
	deleted := false
	got2 := map[string]int{}
	for end := time.Now().Add(6 * time.Second); time.Now().Before(end); {
		if b := ig2.q.TryPop(); b != nil {
			for i := range b.Len() {
				got2[string(b.Lines[i])]++
			}
			ig2.q.AddDispatched(uint64(b.Len()))
			b.Release()
			ig2.pub.Poke()
		}
		if !deleted {
			ig2.g.mu.Lock()
			s := ig2.g.byPath[w]
			opened := s != nil && s.src != nil && s.src.Opened()
			ig2.g.mu.Unlock()
			if opened {
				os.Remove(w) // Z: the source holds it
				deleted = true
			}
		}
		time.Sleep(time.Millisecond)
	}
	ig2.g.mu.Lock()
	nh := len(ig2.g.handed)
	var hs []string
	for _, h := range ig2.g.handed {
		rec, err := pointer.Inspect(h.at.ptrPath)
		hs = append(hs, fmt.Sprintf("%s opened=%v passed=%v ptr=%+v err=%v", h.w.Path, h.opened, h.passed, rec, err))
	}
	ig2.g.mu.Unlock()
	tails, bytes, detail := ig2.lost()
	t.Logf("run 2 after 6 s: delivered %v; handed left %d %v; lostTails %d lostBytes %d (%q)", got2, nh, hs, tails, bytes, detail)
	if got2["b-0"] == 0 && tails < 2 {
		t.Errorf("W's b-lines neither delivered nor counted in run 2 (only Y's tail counted): the feed is green over W's unread lines")
	}
	stop2()
	list, _ := os.ReadFile(filepath.Join(data, "feeds", "f", unreadListName))
	t.Logf("unread list after the stop: %q", list)
}

// Plain and .gz: run 2 reads the handed W; every line is acknowledged for
// 4 s (housekeeping passes after the pointer passed W): W's lines come
// once, nothing counted.
func TestRev40bHandedReadOnce(t *testing.T) {
	for _, gz := range []bool{false, true} {
		pattern, data, _ := rev40Setup(t, 10, gz)
		ig2, stop2 := runGlobWith(t, pattern, data, time.Second, func(c *GlobConfig) { c.Stream.Logger = rev25bLog(t) }, nil)
		lines, _ := ig2.popEpochs(4*time.Second, true)
		tails, bytes, detail := ig2.lost()
		got := map[string]int{}
		for _, l := range lines {
			got[l]++
		}
		t.Logf("gz %v: run 2 %q; lost %d %d %q", gz, lines, tails, bytes, detail)
		if got["b-0"] != 1 || got["b-1"] != 1 || tails != 0 {
			t.Errorf("gz %v: b-0 %d b-1 %d, lostTails %d", gz, got["b-0"], got["b-1"], tails)
		}
		stop2()
	}
}

// The handed plain W compressed (logrotate's delaycompress, or its
// compress running late) after the start handed it over and before the
// path's source opened (no housekeeping pass between): the source reads
// the .gz; W must not be counted lost.
func TestRev40bHandedCompressedBeforeOpen(t *testing.T) {
	pattern, data, w := rev40Setup(t, 10, false)
	var once bool
	openPointer = func(path string, o pointer.Options) (*pointer.Pointer, error) {
		if !once {
			once = true
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
	got := map[string]int{}
	for _, l := range lines {
		got[l]++
	}
	if got["b-0"] > 0 && tails > 0 {
		t.Errorf("W's lines delivered (from its .gz) and W counted lost: lostTails %d lostBytes %d", tails, bytes)
	}
}

// The handed W read and committed by the path's source (Y, W, then its own
// Z, which logrotate's compress deleted meanwhile: the source reads it by
// its descriptor and the pointer goes to the empty record at once). W
// stays "handed" for the whole run (handedPassed: an empty record is never
// passed); the stop lists it; deleted later (rotate count), the next start
// counts its 8 bytes lost though every line was delivered and committed.
func TestRev40bReadThenOwnForgottenThenDeleted(t *testing.T) {
	pattern, data, w := rev40Setup(t, 10, false)
	ig2, stop2 := runGlobWith(t, pattern, data, time.Second, func(c *GlobConfig) { c.Stream.Logger = rev25bLog(t) }, nil)
	deleted := false
	got2 := map[string]int{}
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); {
		if b := ig2.q.TryPop(); b != nil {
			for i := range b.Len() {
				got2[string(b.Lines[i])]++
			}
			ig2.q.AddDispatched(uint64(b.Len()))
			b.Release()
			ig2.pub.Poke()
		}
		if !deleted {
			ig2.g.mu.Lock()
			s := ig2.g.byPath[w]
			opened := s != nil && s.src != nil && s.src.Opened()
			ig2.g.mu.Unlock()
			if opened {
				os.Remove(w) // Z: compressed and removed by logrotate; the source holds it
				deleted = true
			}
		}
		time.Sleep(time.Millisecond)
	}
	ig2.g.mu.Lock()
	var hs []string
	for _, h := range ig2.g.handed {
		rec, err := pointer.Inspect(h.at.ptrPath)
		hs = append(hs, fmt.Sprintf("%s opened=%v passed=%v ptr=%+v err=%v", h.w.Path, h.opened, h.passed, rec, err))
	}
	ig2.g.mu.Unlock()
	tails2, _, _ := ig2.lost()
	t.Logf("run 2: delivered %v; handed left %v; lostTails %d", got2, hs, tails2)
	stop2()
	list, _ := os.ReadFile(filepath.Join(data, "feeds", "f", unreadListName))
	t.Logf("unread list after the stop: %q", list)
	os.Remove(w + ".1") // W: logrotate's rotate count, while tailfeed is down
	ig3, stop3 := runGlobWith(t, pattern, data, time.Second, func(c *GlobConfig) { c.Stream.Logger = rev25bLog(t) }, nil)
	defer stop3()
	os.WriteFile(w, []byte(numbered("e", 1)), 0o600)
	lines := rev39PopUntil(ig3, "e-0")
	tails, bytes, detail := ig3.lost()
	t.Logf("run 3 delivered %q; lostTails %d lostBytes %d (%q)", lines, tails, bytes, detail)
	if got2["b-0"] == 1 && got2["b-1"] == 1 && tails > 0 {
		t.Errorf("W delivered and committed in run 2; run 3 counted %d lost tails (%d bytes)", tails, bytes)
	}
}
