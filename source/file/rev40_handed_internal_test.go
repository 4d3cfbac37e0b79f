package file

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"tailfeed/internal/fileutil"
	"tailfeed/pointer"
)

// Listed files handed to their path's stream (handed.go; fortieth
// session). Two faults a soak of TestAud11AOKGlobKill9Property found at a
// restart after a kill -9 (thirty-ninth session, kept open then): a file
// tracked and never read at the kill (the new file of a live rotation,
// waiting behind the renamed-out one), renamed out of the glob while
// tailfeed was down, was read where it is as a stream of its own while the
// path's stream, given the previous pointer, still read the older
// generation (its lines out of the path's order); compressed as well, it
// was counted lost while that stream read its .gz (an overcount). A first
// fix left such a file to the path's source with nothing on disk naming it:
// lost uncounted when a second kill came before that source reached it and
// a rotation deleted it (review 39b; the e2e TestRev32B/C generation
// tests); the list now keeps its entry until the pointer passes it.

// rev39TailCommittedAUnacked starts a glob on a dir holding w.log with
// five tail-lines, takes them and acknowledges them until they are
// committed, appends a-lines up to a-(n-1) and takes them unacknowledged
// (a slow subscriber). It returns the pattern, the data dir, w.log's path
// and the kill (the glob still running).
func rev39TailCommittedAUnacked(t *testing.T, n int) (pattern, data, w string, kill func()) {
	t.Helper()
	dir := t.TempDir()
	data = t.TempDir()
	pattern = filepath.Join(dir, "*.log")
	w = filepath.Join(dir, "w.log")
	if err := os.WriteFile(w, []byte(numbered("tail", 5)), 0o600); err != nil {
		t.Fatal(err)
	}
	ig, kill, _ := runGlobKill(t, pattern, data, time.Second, nil, nil)
	if got := ig.popNoAck(6*time.Second, "tail-4"); got["tail-4"] == 0 {
		t.Fatalf("w.log's tail-lines never delivered: %v", got)
	}
	ig.waitFor(t, "w.log's first five lines committed", func() bool {
		s := ig.g.byPath[w]
		if s == nil || s.ptrPath == "" {
			return false
		}
		rec, err := pointer.Inspect(s.ptrPath)
		return err == nil && rec.Offset > 0
	})
	last := fmt.Sprintf("a-%d", n-1)
	appendTo(t, w, numbered("a", n)[len(numbered("a", 5)):])
	if got := ig.popNoAck(10*time.Second, last); got[last] == 0 {
		t.Fatalf("w.log's a-lines never delivered: %v", got)
	}
	return pattern, data, w, kill
}

// A file tracked and never read at a kill -9 (a live rotation's new
// w.log, waiting behind the renamed-out file before it), rotated twice
// while tailfeed is down with compress: it is w.log.2.gz at the restart.
// The stream of w.log given the previous run's pointer reads it as a later
// generation of that pointer's file; it is not counted "tracked and never
// read … gone". Before, countUnreadGone found no plain copy beside the
// path and counted its bytes lost while they were delivered (this
// session's soak of TestAud11AOKGlobKill9PropertyNoDeletes: x/y/r.log's
// 130 bytes counted, every line delivered).
func TestRev39ListedFileCompressedWhileDownIsNotCounted(t *testing.T) {
	t.Parallel()
	pattern, data, w, kill := rev39TailCommittedAUnacked(t, 10)
	rev39Rotate(t, w, false, "b")
	rev39WaitListed(t, data, w, 8)
	kill()
	data = rev22bCopyData(t, data)
	rev39Rotate(t, w, true, "c")
	rev39Rotate(t, w, true, "d")
	for i, p := range []string{w + ".3.gz", w + ".2.gz", w + ".1"} {
		at := time.Now().Add(-time.Duration(60-15*i) * time.Second)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	ig2, stop2 := runGlobWith(t, pattern, data, time.Second, func(c *GlobConfig) { c.Stream.Logger = rev25bLog(t) }, nil)
	defer stop2()
	lines := rev39PopUntil(ig2, "d-1")
	tails, bytes, detail := ig2.lost()
	got := map[string]int{}
	for _, s := range lines {
		got[s]++
	}
	var missing []string
	for _, s := range strings.Fields(strings.ReplaceAll(numbered("a", 10)[len(numbered("a", 5)):]+numbered("b", 2)+numbered("c", 2)+numbered("d", 2), "\n", " ")) {
		if got[s] == 0 {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 || tails != 0 {
		t.Fatalf("restart: delivered %q; missing %q; lostTails %d lostBytes %d (%q); want every line after the pointer and nothing counted", lines, missing, tails, bytes, detail)
	}
}

// A file tracked and never read at a kill -9 (a live rotation's new w.log,
// waiting behind the renamed-out file before it), renamed out once more
// while tailfeed is down (plain: w.log.1). The stream of w.log given the
// previous run's pointer reads it as a later generation of that pointer's
// file, after the older one — the path's order (DESIGN §10 Order). Before,
// it was also read where it is as a stream of its own (readListedBeside),
// published while the path's source still read the older generation, and
// read twice (this session's soak of TestAud11AOKGlobKill9PropertyNoDeletes:
// 379 lines of a.log out of order in the exactlyOnce output).
func TestRev39ListedFileRenamedOutWhileDownKeepsThePathsOrder(t *testing.T) {
	t.Parallel()
	// Many a-lines: the path's source is still reading them when a
	// stream of the listed file's own would have published its lines.
	const nA = 20000
	pattern, data, w, kill := rev39TailCommittedAUnacked(t, nA)
	rev39Rotate(t, w, false, "b")
	rev39WaitListed(t, data, w, 8)
	kill()
	data = rev22bCopyData(t, data)
	rev39Rotate(t, w, false, "c")
	for i, p := range []string{w + ".2", w + ".1"} {
		at := time.Now().Add(-time.Duration(60-20*i) * time.Second)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	ig2, stop2 := runGlobWith(t, pattern, data, time.Second, func(c *GlobConfig) { c.Stream.Logger = rev25bLog(t) }, nil)
	defer stop2()
	lines := rev39PopUntil(ig2, "c-1")
	tails, bytes, detail := ig2.lost()
	var after []string
	for _, s := range lines {
		if !strings.HasPrefix(s, "tail-") {
			after = append(after, s)
		}
	}
	want := strings.Fields(strings.ReplaceAll(numbered("a", nA)[len(numbered("a", 5)):]+numbered("b", 2)+numbered("c", 2), "\n", " "))
	if !slices.Equal(after, want) || tails != 0 {
		i := 0
		for i < min(len(after), len(want)) && after[i] == want[i] {
			i++
		}
		t.Fatalf("restart: %d lines after any tail-line, want %d (a-5…a-%d, b-0, b-1, c-0, c-1 in that order, once); they differ at %d (got %q, want %q); lostTails %d lostBytes %d (%q)",
			len(after), len(want), nA-1, i, after[i:min(len(after), i+4)], want[i:min(len(want), i+4)], tails, bytes, detail)
	}
}

// W, listed unread at a kill, renamed out while down (plain, or compressed
// as logrotate's create + compress leaves it), is handed to the path's
// stream at the restart (its source reads it after the pointer's file Y).
// That source is still on Y (a long tail, a slow consumer) when tailfeed
// is killed again; while down logrotate (rotate 2) deletes Y and moves W on.
// The third start reads W (the list still names it: it finds W beside the
// path, where Y's pointer, Y gone, no longer reads it as a later
// generation) or, compressed, counts it. Before (review 39b, the first
// hand-over with the entry dropped): W's lines never delivered, nothing of
// W counted.
func TestRev40ListedFileHandedOverThenKilledAgain(t *testing.T) { rev40SecondKill(t, false) }
func TestRev40ListedGzHandedOverThenKilledAgain(t *testing.T)   { rev40SecondKill(t, true) }

func rev40SecondKill(t *testing.T, gz bool) {
	dir := t.TempDir()
	data := t.TempDir()
	pattern := filepath.Join(dir, "*.log")
	w := filepath.Join(dir, "w.log")
	if err := os.WriteFile(w, []byte(numbered("tail", 5)), 0o600); err != nil {
		t.Fatal(err)
	}
	// run 1
	ig, kill, _ := runGlobKill(t, pattern, data, time.Second, nil, nil)
	if got := ig.popNoAck(6*time.Second, "tail-4"); got["tail-4"] == 0 {
		t.Fatalf("tail-lines never delivered: %v", got)
	}
	ig.waitFor(t, "tail committed", func() bool {
		s := ig.g.byPath[w]
		if s == nil || s.ptrPath == "" {
			return false
		}
		rec, err := pointer.Inspect(s.ptrPath)
		return err == nil && rec.Offset > 0
	})
	const nA = 20000
	appendTo(t, w, numbered("a", nA)[len(numbered("a", 5)):])
	if got := ig.popNoAck(10*time.Second, "a-5"); got["a-5"] == 0 {
		t.Fatalf("a-lines never delivered: %v", got)
	}
	rev39Rotate(t, w, false, "b") // Y -> w.log.1, W (b-0, b-1) at w.log
	rev39WaitListed(t, data, w, 8)
	kill()
	data = rev22bCopyData(t, data)
	// down 1: logrotate (rotate 2): Y -> w.log.2, W -> w.log.1, Z (c) at w.log
	wp := w + ".1"
	if gz {
		os.Rename(w+".1", w+".2")
		os.Rename(w, w+".1")
		rev39Gzip(t, w+".1", w+".1.gz")
		os.WriteFile(w, []byte(numbered("c", 2)), 0o600)
		wp = w + ".1.gz"
	} else {
		rev39Rotate(t, w, false, "c")
	}
	for i, p := range []string{w + ".2", wp} {
		at := time.Now().Add(-time.Duration(60-20*i) * time.Second)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	// run 2: the path's stream reads Y's tail; the consumer acks a little
	ig2, kill2, _ := runGlobKill(t, pattern, data, time.Second, func(c *GlobConfig) { c.Stream.Logger = rev25bLog(t) }, nil)
	got2 := map[string]int{}
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
		b := ig2.q.TryPop()
		if b == nil {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		for i := range b.Len() {
			got2[string(b.Lines[i])]++
		}
		if got2["a-3000"] == 0 {
			ig2.q.AddDispatched(uint64(b.Len()))
		}
		b.Release()
		ig2.pub.Poke()
	}
	time.Sleep(300 * time.Millisecond)
	ig2.g.mu.Lock()
	var ptrs []string
	for _, s := range ig2.g.byKey {
		ptrs = append(ptrs, fmt.Sprintf("%s ptr=%s", s.path, filepath.Base(s.ptrPath)))
	}
	ig2.g.mu.Unlock()
	t.Logf("run 2: b-lines delivered %d/%d; streams %v", got2["b-0"], got2["b-1"], ptrs)
	list, _ := os.ReadFile(filepath.Join(data, "feeds", "f", unreadListName))
	t.Logf("run 2 unread list at the kill: %s", list)
	kill2()
	data = rev22bCopyData(t, data)
	// down 2: logrotate (rotate 2): Y deleted, W -> w.log.2, Z -> w.log.1, V (d) at w.log
	if err := os.Remove(w + ".2"); err != nil {
		t.Fatal(err)
	}
	if gz {
		os.Rename(w+".1.gz", w+".2.gz")
		os.Rename(w, w+".1")
		os.WriteFile(w, []byte(numbered("d", 2)), 0o600)
	} else {
		rev39Rotate(t, w, false, "d")
	}
	// run 3
	ig3, stop3 := runGlobWith(t, pattern, data, time.Second, func(c *GlobConfig) { c.Stream.Logger = rev25bLog(t) }, nil)
	defer stop3()
	lines := rev39PopUntil(ig3, "d-1")
	tails, bytes, detail := ig3.lost()
	got := map[string]int{}
	for _, s := range lines {
		got[s]++
	}
	var show []string
	for _, s := range lines {
		if !strings.HasPrefix(s, "a-") {
			show = append(show, s)
		}
	}
	t.Logf("run 3 delivered (a-lines left out, %d lines in all): %q; lostTails %d lostBytes %d (%q)", len(lines), show, tails, bytes, detail)
	switch {
	case got2["b-0"]+got["b-0"] > 0 && got2["b-1"]+got["b-1"] > 0:
	case gz && tails >= 2 && bytes >= 8:
		// Compressed beside a path whose pointer's file is gone: a glob
		// reads no .gz from its start; W's 8 bytes are counted (README
		// "Identity").
	default:
		t.Errorf("W's b-lines not delivered in any run (run 2: %d, %d; run 3: %d, %d), and W's 8 bytes not counted: lostTails %d lostBytes %d (%q)",
			got2["b-0"], got2["b-1"], got["b-0"], got["b-1"], tails, bytes, detail)
	}
}

// rev40Setup: run 1 reads Y (w.log: tail + a-lines, a-lines unacked), Y
// rotated out, W (b-0, b-1) at w.log listed unread; kill. While down:
// Y -> w.log.2, W -> w.log.1 (or .gz), Z (c-lines) at w.log. Returns pattern, data, w.
func rev40Setup(t *testing.T, nA int, gz bool) (pattern, data, w string) {
	t.Helper()
	pattern, data, w = rev40ListedAtKill(t, nA)
	wp := w + ".1"
	if gz {
		os.Rename(w+".1", w+".2")
		os.Rename(w, w+".1")
		os.WriteFile(w, []byte(numbered("c", 2)), 0o600) // create, then compress (no inode reuse by Z)
		rev39Gzip(t, w+".1", w+".1.gz")
		wp = w + ".1.gz"
	} else {
		rev39Rotate(t, w, false, "c")
	}
	for i, p := range []string{w + ".2", wp} {
		at := time.Now().Add(-time.Duration(60-20*i) * time.Second)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	return pattern, data, w
}

func rev40Key(t *testing.T, p string) uint64 {
	dev, ino, err := fileutil.DevInoPath(p)
	if err != nil {
		t.Fatal(err)
	}
	return pointer.FileKey(dev, ino)
}

// Review 40 finding 1: a kill -9 after the path's pointer passed W (it
// names Z) and before the next housekeeping pass rewrote the unread list.
// Before listedPassed the third start read W again from its start as a
// stream of its own, after Z's lines (plain), or counted it lost though
// read and committed (.gz).
func TestRev40KillAfterPassedBeforeListWrite(t *testing.T)   { rev40KillPassed(t, false) }
func TestRev40KillAfterPassedBeforeListWriteGz(t *testing.T) { rev40KillPassed(t, true) }

func rev40KillPassed(t *testing.T, gz bool) {
	pattern, data, w := rev40Setup(t, 10, gz)
	zKey := rev40Key(t, w)
	ig2, kill2, _ := runGlobKill(t, pattern, data, time.Second, func(c *GlobConfig) { c.Stream.Logger = rev25bLog(t) }, nil)
	got2 := map[string]int{}
	var snap string
	rev40AckUntilNamed(ig2, w, zKey, got2, func() { snap = rev22bCopyData(t, data) }) // (the kill -9, then)
	if snap == "" {
		t.Skip("pointer never named Z")
	}
	list, _ := os.ReadFile(filepath.Join(snap, "feeds", "f", unreadListName))
	t.Logf("run 2 delivered b-0 %d b-1 %d c-0 %d; unread list in the kill's copy: %s", got2["b-0"], got2["b-1"], got2["c-0"], list)
	kill2()
	ig3, stop3 := runGlobWith(t, pattern, snap, time.Second, func(c *GlobConfig) { c.Stream.Logger = rev25bLog(t) }, nil)
	defer stop3()
	appendTo(t, w, numbered("e", 1))
	lines := rev39PopUntil(ig3, "e-0")
	tails, bytes, detail := ig3.lost()
	t.Logf("run 3 delivered %q; lostTails %d lostBytes %d (%q)", lines, tails, bytes, detail)
	if got2["b-0"] > 0 && tails > 0 {
		t.Errorf("run 3 counted %d lost tails (%d bytes) though W's lines were delivered and committed in run 2", tails, bytes)
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "b-") {
			t.Errorf("run 3 delivered W's committed line %s again (committed: the path's pointer named Z at the kill)", l)
		}
	}
}

// rev40DeleteYAtOpen makes the first pointer open of the path's stream
// (the source's goroutine, before it looks for its files) delete Y
// (w.log.2): logrotate's rotate count running as tailfeed starts.
func rev40DeleteYAtOpen(t *testing.T, y string) {
	var once bool
	openPointer = func(path string, o pointer.Options) (*pointer.Pointer, error) {
		if !once {
			once = true
			os.Remove(y)
		}
		return pointer.Open(path, o)
	}
	t.Cleanup(func() { openPointer = pointer.Open })
}

// Review 40 findings 2, 3: the handed W is not read by the path's source
// (Y gone when it opens: generations by the pointer file's mtime), the
// pointer moves to Z, and the glob stops before the next housekeeping pass
// (ThenStop) or runs on (RunOn). Before: W dropped from the stop's list and
// counted by nobody (plain, ThenStop); a .gz never counted (both). Now a
// plain W intact beside its path is read as a stream of its own (run 2, or
// run 3 from the stop's list); a .gz is counted (a glob reads no .gz from
// its start).
func TestRev40HandedSkippedThenStop(t *testing.T)   { rev40Skipped(t, false, true) }
func TestRev40HandedGzSkippedThenStop(t *testing.T) { rev40Skipped(t, true, true) }
func TestRev40HandedGzSkippedRunOn(t *testing.T)    { rev40Skipped(t, true, false) }

func rev40Skipped(t *testing.T, gz, stopQuick bool) {
	pattern, data, w := rev40Setup(t, 10, gz)
	zKey := rev40Key(t, w)
	rev40DeleteYAtOpen(t, w+".2")
	ig2, stop2 := runGlobWith(t, pattern, data, time.Second, func(c *GlobConfig) { c.Stream.Logger = rev25bLog(t) }, nil)
	got2 := map[string]int{}
	named := false
	named = rev40AckUntilNamed(ig2, w, zKey, got2, nil)
	if !named {
		t.Skip("pointer never named Z")
	}
	if !stopQuick {
		l, _ := ig2.popEpochs(3*time.Second, true)
		for _, x := range l {
			got2[x]++
		}
	}
	ig2.g.mu.Lock()
	nh := len(ig2.g.handed)
	ig2.g.mu.Unlock()
	stop2()
	tails2, bytes2, detail2 := ig2.lost()
	list, _ := os.ReadFile(filepath.Join(data, "feeds", "f", unreadListName))
	t.Logf("run 2: b-0 %d b-1 %d c-0 %d; handed left %d; lostTails %d lostBytes %d (%q); unread list after the stop: %q", got2["b-0"], got2["b-1"], got2["c-0"], nh, tails2, bytes2, detail2, list)
	ig3, stop3 := runGlobWith(t, pattern, data, time.Second, func(c *GlobConfig) { c.Stream.Logger = rev25bLog(t) }, nil)
	defer stop3()
	appendTo(t, w, numbered("e", 1))
	lines := rev39PopUntil(ig3, "e-0")
	tails3, bytes3, detail3 := ig3.lost()
	t.Logf("run 3 delivered %q; lostTails %d lostBytes %d (%q)", lines, tails3, bytes3, detail3)
	got3 := map[string]int{}
	for _, l := range lines {
		got3[l]++
	}
	// Y's lost tail counts once (a-5..a-9: 35 bytes); W's 8 bytes must be delivered or counted too.
	if got2["b-0"]+got3["b-0"] == 0 && tails2+tails3 < 2 {
		t.Errorf("W's b-lines never delivered and not counted: lostTails %d+%d lostBytes %d+%d", tails2, tails3, bytes2, bytes3)
	}
	if !gz && (got2["b-0"]+got3["b-0"] == 0 || got2["b-1"]+got3["b-1"] == 0) {
		t.Errorf("W (plain, intact beside its path) not read: b-0 %d+%d b-1 %d+%d; lostTails %d+%d", got2["b-0"], got3["b-0"], got2["b-1"], got3["b-1"], tails2, tails3)
	}
}

func TestRev40HandedSkippedRunOn(t *testing.T) { rev40Skipped(t, false, false) }

// rev40AckUntilNamed takes every batch ig delivers, acknowledging it and
// counting its lines in got, until the pointer of the stream at path w
// names key — then it calls at (when not nil: a kill's copy of the data
// dir, say) and returns true — or 10 s pass.
func rev40AckUntilNamed(ig *internalGlob, w string, key uint64, got map[string]int, at func()) bool {
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if b := ig.q.TryPop(); b != nil {
			for i := range b.Len() {
				got[string(b.Lines[i])]++
			}
			ig.q.AddDispatched(uint64(b.Len()))
			b.Release()
			ig.pub.Poke()
		}
		ig.g.mu.Lock()
		var pp string
		if s := ig.g.byPath[w]; s != nil {
			pp = s.ptrPath
		}
		ig.g.mu.Unlock()
		if pp == "" {
			continue
		}
		if rec, err := pointer.Inspect(pp); err == nil && rec.FileKey == key {
			if at != nil {
				at()
			}
			return true
		}
	}
	return false
}

// rev40ListedAtKill is run 1 of the hand-over tests: rev39TailCommittedAUnacked
// (Y = w.log: tail-lines committed, a-5…a-(nA-1) delivered unacknowledged),
// Y rotated out and W (b-0, b-1) at w.log listed unread, then a kill -9;
// the data dir as the kill left it.
func rev40ListedAtKill(t *testing.T, nA int) (pattern, data, w string) {
	t.Helper()
	pattern, data, w, kill := rev39TailCommittedAUnacked(t, nA)
	rev39Rotate(t, w, false, "b")
	rev39WaitListed(t, data, w, 8)
	kill()
	return pattern, rev22bCopyData(t, data), w
}

// The path's own file (Z) deleted as tailfeed starts, before the path's
// stream's source opens (review 40c (d) argued that source then reads the
// pointer's file Y only, leaving the handed W pending — the feed BEHIND
// until the stream's pointer is forgotten): W is read, nothing pending.
func TestRev40HandedOwnFileGoneAtOpenStillRead(t *testing.T) {
	// (Not parallel: rev40DeleteYAtOpen sets the package's openPointer.)
	pattern, data, w := rev40Setup(t, 10, false)
	rev40DeleteYAtOpen(t, w) // (Z, at the path)
	ig2, stop2 := runGlobWith(t, pattern, data, time.Second, func(c *GlobConfig) {
		c.Stream.Logger = rev25bLog(t)
		c.Stream.RotateWait = 200 * time.Millisecond
	}, nil)
	defer stop2()
	got := map[string]int{}
	var tails uint64
	for end := time.Now().Add(8 * time.Second); time.Now().Before(end) && got["b-1"] == 0; {
		l, _ := ig2.popEpochs(200*time.Millisecond, true)
		for _, x := range l {
			got[x]++
		}
		if tails, _, _ = ig2.lost(); tails > 1 {
			break // (Y's tail, if any, and W's)
		}
	}
	ig2.g.mu.Lock()
	pending := ig2.g.handedPending()
	ig2.g.mu.Unlock()
	t.Logf("delivered %v; lostTails %d; handed pending %d", got, tails, pending)
	if got["b-0"] == 0 && tails < 2 {
		t.Errorf("W (b-0, b-1) neither read nor counted within 8 s (handed pending %d)", pending)
	}
}
