package file

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tailfeed/pointer"
)

// Review 40c (fortieth session, third independent review of the hand-over
// of listed files, handed.go). Failing on 9f575cb:
//   - listedPassed took an epochs "reset" line left by an older file on a
//     reused inode for proof that a listed file was read: a file never
//     read neither read nor counted — TestRev40c…OldResetLineOnReusedInode
//     (now only handed entries, and only lines written since the
//     hand-over: HandedAt);
//   - a handed .gz read, committed, then deleted while down, counted lost
//     (the line names the .gz's key: HandedKey) —
//     TestRev40cPassedGzThenDeletedWhileDown;
//   - a handed file grown since it was listed, compressed before the
//     source opened: its reader's first bytes differ from the listed ones,
//     taken for skipped and counted (the hand-over takes its first bytes
//     and size now) — TestRev40cHandedGrownCompressedBeforeOpen.

// rev40cListedMovedOut: run 1 leaves W (w.log: b-0, b-1) in the unread
// list (the new file of a live rotation, behind Y = w.log.1), killed.
// While down W is moved beside the path under a name that is no rotated
// name (readListedBeside's case, no hand-over): "w.saved". prior, when
// set, appends to the epochs file what an earlier file Q on W's inode
// (ext4 gives a freed inode to the next file made) left: a "reset" line
// moving a pointer off Q, whose whole content was "b-0\n" (a header, an
// idle day's one line), at its end 4. Returns run 2's lines and losses.
func rev40cMovedOut(t *testing.T, prior bool, gone bool) (lines []string, tails, bytes uint64, detail string) {
	return rev40cMovedOutQ(t, prior, gone, "b-0\n")
}

func rev40cMovedOutQ(t *testing.T, prior bool, gone bool, q string) (lines []string, tails, bytes uint64, detail string) {
	pattern, data, w, kill := rev39TailCommittedAUnacked(t, 10)
	rev39Rotate(t, w, false, "b")
	rev39WaitListed(t, data, w, 8)
	kill()
	data = rev22bCopyData(t, data)
	wKey := rev40Key(t, w)
	saved := filepath.Join(filepath.Dir(w), "w.saved")
	if err := os.Rename(w, saved); err != nil {
		t.Fatal(err)
	}
	if gone {
		os.Remove(saved)
	}
	if prior {
		err := pointer.AppendEpoch(filepath.Join(data, "feeds", "f.epochs"), pointer.EpochLine{
			Epoch: 0x1111, FileKey: 0x2222, FPLen: 4, FP: pointer.Fingerprint([]byte("x-0\n")),
			Path: filepath.Join(filepath.Dir(w), "q.log"), Time: time.Now().Add(-48 * time.Hour), Reason: "reset",
			PrevEpoch: 0x3333, PrevOffset: int64(len(q)), PrevFileKey: wKey, PrevFPLen: uint64(len(q)), PrevFP: pointer.Fingerprint([]byte(q)),
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	ig2, stop2 := runGlobWith(t, pattern, data, time.Second, func(c *GlobConfig) { c.Stream.Logger = rev25bLog(t) }, nil)
	defer stop2()
	lines, _ = ig2.popEpochs(3*time.Second, true)
	tails, bytes, detail = ig2.lost()
	t.Logf("prior %v gone %v: run 2 delivered %q; lostTails %d lostBytes %d (%q)", prior, gone, lines, tails, bytes, detail)
	return
}

func rev40cHas(lines []string, p string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}

// Baseline: W moved out while down is read beside its path.
func TestRev40cMovedOutBaseline(t *testing.T) {
	lines, tails, _, _ := rev40cMovedOut(t, false, false)
	if !rev40cHas(lines, "b-1") && tails == 0 {
		t.Errorf("baseline: W neither read nor counted")
	}
}

// An earlier file on W's inode left a reset line whose first bytes are
// a prefix of W's: listedPassed takes W, never read, for read.
func TestRev40cMovedOutOldResetLineOnReusedInode(t *testing.T) {
	lines, tails, bytes, _ := rev40cMovedOut(t, true, false)
	if !rev40cHas(lines, "b-1") && tails == 0 {
		t.Errorf("W (b-0, b-1: never read) neither read nor counted: lostTails %d lostBytes %d", tails, bytes)
	}
}

// W deleted while down: baseline counts it (never read, gone).
func TestRev40cGoneBaseline(t *testing.T) {
	lines, tails, _, _ := rev40cMovedOutQ(t, false, true, "b-0\nb-1\n")
	if !rev40cHas(lines, "b-1") && tails == 0 {
		t.Errorf("baseline: W neither read nor counted")
	}
}

// W deleted while down, an earlier file on its inode held the same bytes
// (an idle generation: its header only) and left a reset line: W is not
// counted.
func TestRev40cGoneOldResetLineOnReusedInode(t *testing.T) {
	lines, tails, bytes, _ := rev40cMovedOutQ(t, true, true, "b-0\nb-1\n")
	if !rev40cHas(lines, "b-1") && tails == 0 {
		t.Errorf("W (never read) deleted while down neither read nor counted: lostTails %d lostBytes %d", tails, bytes)
	}
}

// rev40Setup with W grown after it was listed (its writer appended b-2
// while tailfeed was down, before logrotate moved it out): the common case
// for the listed file, the live rotation's new file.
func rev40cSetupGrown(t *testing.T) (pattern, data, w string) {
	t.Helper()
	pattern, data, w = rev40ListedAtKill(t, 10)
	appendTo(t, w, "b-2\n") // W grows after the list named it (8 bytes)
	rev39Rotate(t, w, false, "c")
	for i, p := range []string{w + ".2", w + ".1"} {
		at := time.Now().Add(-time.Duration(60-20*i) * time.Second)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	return pattern, data, w
}

// W (grown after listing) handed, read and committed in run 2, the
// pointer passes it (names Z); kill -9 before the list drops it; W deleted
// while down (rotate count). Run 3 must not count it.
func TestRev40cPassedGrownThenDeletedWhileDown(t *testing.T) {
	pattern, data, w := rev40cSetupGrown(t)
	zKey := rev40Key(t, w)
	ig2, kill2, _ := runGlobKill(t, pattern, data, time.Second, func(c *GlobConfig) { c.Stream.Logger = rev25bLog(t) }, nil)
	got2 := map[string]int{}
	var snap string
	rev40AckUntilNamed(ig2, w, zKey, got2, func() { snap = rev22bCopyData(t, data) }) // (the kill -9, then)
	if snap == "" {
		t.Skip("pointer never named Z")
	}
	list, _ := os.ReadFile(filepath.Join(snap, "feeds", "f", unreadListName))
	if !strings.Contains(string(list), `"handedAt"`) {
		t.Skipf("the kill's list no longer names W: %s", list)
	}
	t.Logf("run 2 delivered b-0 %d b-1 %d b-2 %d c-0 %d; list at the kill: %s", got2["b-0"], got2["b-1"], got2["b-2"], got2["c-0"], list)
	kill2()
	if err := os.Remove(w + ".1"); err != nil {
		t.Fatal(err)
	}
	ig3, stop3 := runGlobWith(t, pattern, snap, time.Second, func(c *GlobConfig) { c.Stream.Logger = rev25bLog(t) }, nil)
	defer stop3()
	appendTo(t, w, numbered("e", 1))
	lines := rev39PopUntil(ig3, "e-0")
	tails, bytes, detail := ig3.lost()
	t.Logf("run 3 delivered %q; lostTails %d lostBytes %d (%q)", lines, tails, bytes, detail)
	if got2["b-2"] > 0 && tails > 0 {
		t.Errorf("W read and committed in run 2 (b-0..b-2), deleted while down: run 3 counted %d lost tails, %d bytes", tails, bytes)
	}
}

// TestRev40bHandedCompressedBeforeOpen with W grown after listing.
func TestRev40cHandedGrownCompressedBeforeOpen(t *testing.T) {
	pattern, data, w := rev40cSetupGrown(t)
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
	if rev40cHas(lines, "b-2") && tails > 0 {
		t.Errorf("W's lines delivered (from its .gz) and W counted lost: lostTails %d lostBytes %d", tails, bytes)
	}
}

// The handed W.gz (compressed while down) read and committed in run 2, the
// pointer passes it (names Z); kill -9 before the list drops W; the .gz
// deleted while down (rotate count). Run 3 must not count it.
func TestRev40cPassedGzThenDeletedWhileDown(t *testing.T) {
	pattern, data, w := rev40Setup(t, 10, true)
	zKey := rev40Key(t, w)
	ig2, kill2, _ := runGlobKill(t, pattern, data, time.Second, func(c *GlobConfig) { c.Stream.Logger = rev25bLog(t) }, nil)
	got2 := map[string]int{}
	var snap string
	rev40AckUntilNamed(ig2, w, zKey, got2, func() { snap = rev22bCopyData(t, data) }) // (the kill -9, then)
	if snap == "" {
		t.Skip("pointer never named Z")
	}
	list, _ := os.ReadFile(filepath.Join(snap, "feeds", "f", unreadListName))
	if !strings.Contains(string(list), `"size":8`) {
		t.Skipf("the kill's list no longer names W: %s", list)
	}
	t.Logf("run 2 delivered b-0 %d b-1 %d c-0 %d; list at the kill: %s", got2["b-0"], got2["b-1"], got2["c-0"], list)
	kill2()
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
		t.Errorf("W.gz read and committed in run 2, deleted while down: run 3 counted %d lost tails, %d bytes", tails, bytes)
	}
}
