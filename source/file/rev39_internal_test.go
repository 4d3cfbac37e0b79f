package file

import (
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/pointer"
)

// rev39PublishedNeverCommitted starts a glob on a dir holding w.log with
// five a-lines, takes them unacknowledged (a slow subscriber) and kills the
// glob before any commit: w.log's pointer names its epoch and no file (the
// key and first bytes only in the epochs file's "adopted" line). It returns
// the pattern, a copy of the data directory as the kill left it (the killed
// glob's sources keep their locks in this process), w.log's path and the
// pointer's epoch.
func rev39PublishedNeverCommitted(t *testing.T) (pattern, data, w string, epoch uint64) {
	t.Helper()
	dir := t.TempDir()
	data = t.TempDir()
	pattern = filepath.Join(dir, "*.log")
	w = filepath.Join(dir, "w.log")
	if err := os.WriteFile(w, []byte(numbered("a", 5)), 0o600); err != nil {
		t.Fatal(err)
	}
	ig, kill, _ := runGlobKill(t, pattern, data, time.Second, nil, nil)
	got := ig.popNoAck(6*time.Second, "a-4")
	if got["a-4"] == 0 {
		t.Fatalf("w.log's lines never delivered in the first run: %v", got)
	}
	kill()
	data = rev22bCopyData(t, data)
	ptrs, _ := filepath.Glob(filepath.Join(data, "feeds", "f", "*.ptr"))
	if len(ptrs) != 1 {
		t.Fatalf("pointers after the kill: %v, want w.log's alone", ptrs)
	}
	p, err := pointer.Open(ptrs[0], pointer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := p.Record()
	p.Close()
	if rec.FileKey != 0 || rec.FPLen != 0 || rec.Offset != 0 || rec.Epoch == 0 {
		t.Skipf("set-up not reached: w.log's pointer after the kill is %+v, not an epoch with nothing committed", rec)
	}
	return pattern, data, w, rec.Epoch
}

// rev39CopyTruncate is logrotate's copytruncate of w.log: its bytes copied
// to w.log.1 (compressed to w.log.1.gz when gz), w.log cut to nothing and
// written again with two b-lines (the same inode, other first bytes).
func rev39CopyTruncate(t *testing.T, w string, gz bool) {
	t.Helper()
	b, err := os.ReadFile(w)
	if err != nil {
		t.Fatal(err)
	}
	if gz {
		f, err := os.Create(w + ".1.gz")
		if err != nil {
			t.Fatal(err)
		}
		zw := gzip.NewWriter(f)
		if _, err := zw.Write(b); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	} else if err := os.WriteFile(w+".1", b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(w, 0); err != nil {
		t.Fatal(err)
	}
	appendTo(t, w, numbered("b", 2))
}

// rev39Restart restarts the glob on data after rev39PublishedNeverCommitted.
// The application has written five more a-lines to w.log; then
// copytruncate (rev39CopyTruncate, the copy removed when noCopy) runs while
// tailfeed is down (atOpen false), or after the restarted glob matched
// w.log to the pointer by its key and first bytes and before the stream's
// source opens it (atOpen: logrotate running while tailfeed starts). It
// returns what the restart delivered, with epochs, until w.log's b-1 (10 s
// at most, then 300 ms more), and the glob.
func rev39Restart(t *testing.T, pattern, data, w string, gz, noCopy, atOpen bool) (ig2 *internalGlob, lines []string, epochs []uint64) {
	t.Helper()
	appendTo(t, w, numbered("a", 10)[len(numbered("a", 5)):])
	cut := func() {
		rev39CopyTruncate(t, w, gz)
		if noCopy {
			if err := os.Remove(w + ".1"); err != nil {
				t.Error(err)
			}
		}
	}
	var armed, fired atomic.Bool
	armed.Store(atOpen)
	if !atOpen {
		cut()
	}
	ig2, stop2 := runGlobWith(t, pattern, data, time.Second, func(c *GlobConfig) {
		c.Stream.Logger = rev25bLog(t)
		c.Stream.OpenHook = func() {
			if armed.CompareAndSwap(true, false) {
				cut()
				fired.Store(true)
			}
		}
	}, nil)
	t.Cleanup(stop2)
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
		l, e := ig2.popEpochs(200*time.Millisecond, true)
		lines, epochs = append(lines, l...), append(epochs, e...)
		if len(lines) > 0 && lines[len(lines)-1] == "b-1" {
			break
		}
	}
	l, e := ig2.popEpochs(300*time.Millisecond, true)
	lines, epochs = append(lines, l...), append(epochs, e...)
	if atOpen && !fired.Load() {
		t.Fatalf("set-up not reached: no source opened w.log after the restart (delivered %q)", lines)
	}
	return ig2, lines, epochs
}

// A glob stream killed after its lines were published and before its first
// commit (its pointer names an epoch and no file; the epochs file names the
// file it adopted), then copytruncated: w.log keeps its inode, other first
// bytes, and w.log.1 (or w.log.1.gz) holds what the epoch's file held, five
// lines never read among them. The restart reads the copy from its start
// under the pointer's epoch (the sinks skip what they hold of it), then
// w.log under a new one; nothing is lost. With the copytruncate while
// tailfeed is down the glob already gave the pointer to no file at its
// start (its first bytes changed) and the source looked for the copy. With
// the copytruncate after the glob's start matched w.log by its key and
// first bytes and before the stream's source opened it, the source read no
// epochs line for its empty record and took the file at the path for
// another one: "other first bytes, nothing committed: reading it from its
// start under a new epoch" — a-5..a-9 never read, nothing counted (the
// official CI of stop 46 and this session's soak of
// TestAud11AOKGlobKill9Property: 77 lines of a copytruncated sub/t.log
// missing from every sink, lostTails 0).
func TestRev39NeverCommittedCopyTruncatedReadsTheCopy(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name       string
		gz, atOpen bool
	}{
		{"while down, plain copy", false, false},
		{"while down, compressed copy", true, false},
		{"at the open, plain copy", false, true},
		{"at the open, compressed copy", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			pattern, data, w, epoch := rev39PublishedNeverCommitted(t)
			ig2, lines, epochs := rev39Restart(t, pattern, data, w, c.gz, false, c.atOpen)
			tails, bytes, detail := ig2.lost()
			want := strings.Split(strings.TrimSuffix(numbered("a", 10)+numbered("b", 2), "\n"), "\n")
			if strings.Join(lines, "\n") != strings.Join(want, "\n") || tails != 0 {
				t.Fatalf("restart: delivered %q, want %q (the copy's ten a-lines from its start, then w.log's two); lostTails %d lostBytes %d (%q)", lines, want, tails, bytes, detail)
			}
			for i := range 10 {
				if epochs[i] != epoch {
					t.Errorf("the copy's line %d read under epoch %016x, want the pointer's %016x", i, epochs[i], epoch)
				}
			}
			if epochs[10] == epoch || epochs[11] != epochs[10] {
				t.Errorf("w.log's new lines read under epochs %016x, %016x; want one new epoch (not the copy's %016x)", epochs[10], epochs[11], epoch)
			}
		})
	}
}

// The same, the copy gone too (copytruncate, then the copy removed): the
// five unread a-lines are nowhere; the restart counts one lost tail (how
// many bytes is not known) and reads w.log's new lines under a new epoch.
// At the open, nothing was counted before.
func TestRev39NeverCommittedCutNoCopyIsCounted(t *testing.T) {
	t.Parallel()
	for _, atOpen := range []bool{false, true} {
		name := "while down"
		if atOpen {
			name = "at the open"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pattern, data, w, epoch := rev39PublishedNeverCommitted(t)
			ig2, lines, epochs := rev39Restart(t, pattern, data, w, false, true, atOpen)
			tails, bytes, detail := ig2.lost()
			if strings.Join(lines, "\n") != "b-0\nb-1" || tails != 1 {
				t.Fatalf("restart: delivered %q, want w.log's two b-lines; lostTails %d lostBytes %d (%q), want 1 (a-lines 5-9 were never read and are gone)", lines, tails, bytes, detail)
			}
			if epochs[0] == epoch {
				t.Errorf("w.log's new lines read under the gone file's epoch %016x", epoch)
			}
		})
	}
}

// rev39Gzip is logrotate's compress of p to to (a .gz holding p's bytes,
// p's mtime kept, as gzip keeps it), p removed.
func rev39Gzip(t *testing.T, p, to string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(to, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
}

// rev39PopUntil pops (acknowledging) what g delivers until the line last
// (10 s at most), then 300 ms more.
func rev39PopUntil(ig *internalGlob, last string) []string {
	var lines []string
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
		l, _ := ig.popEpochs(200*time.Millisecond, true)
		lines = append(lines, l...)
		if slices.Contains(l, last) {
			break
		}
	}
	l, _ := ig.popEpochs(300*time.Millisecond, true)
	return append(lines, l...)
}

// Two pointers at one path, both files compressed while down (the soak's
// history, shortened). Run 1: w.log (X) is read, five tail-lines
// acknowledged and committed, five a-lines delivered and never
// acknowledged; killed. Down: logrotate (create) renames X to w.log.1 and
// the application writes b-lines to a new w.log (K1). Run 2: X's pointer
// goes to K1 (adoptByPath), its source reads X's a-lines again (not
// acknowledged); logrotate runs while tailfeed runs: X to w.log.2, K1 to
// w.log.1, a new w.log (K2) with c-lines; killed. Down: X to w.log.3.gz, K1
// to w.log.2, K2 to w.log.1, a new w.log (K3) with d-lines. Run 3: X's
// pointer goes to K3, its source reads the a-lines from the .gz again (not
// acknowledged); K2, tracked and never read in run 2, is read where it is
// as a stream of its own with a new pointer, its c-lines delivered and not
// acknowledged; killed. Down: logrotate with compress again: X to
// w.log.4.gz, K1 to w.log.3.gz, K2 to w.log.2.gz, K3 to w.log.1, a new
// w.log (K4) with e-lines. Two pointers name w.log and neither file is
// beside it by its key. The restart delivers every line after X's pointer
// — the a-lines from X's .gz, then K1's, K2's, K3's and K4's lines. Before,
// K4 took the pointer written last (K2's): X's pointer went to countGone,
// its file not found by its key, its tail counted lost while it sat in the
// .gz, and K1's b-lines were read by nobody (this session's soak of
// TestAud11AOKGlobKill9Property: 207 lines of x/y/r.log missing, lostTails
// 3). K2's pointer is still counted lost (its file, compressed, is not
// found by its key; the path's source reads it as a later generation): an
// overcount, README.
func TestRev39OlderPointerCompressedWhileDownIsReadFromItsGz(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := t.TempDir()
	pattern := filepath.Join(dir, "*.log")
	w := filepath.Join(dir, "w.log")
	rotate := func(gz bool, next string) { t.Helper(); rev39Rotate(t, w, gz, next) }
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
	appendTo(t, w, numbered("a", 10)[len(numbered("a", 5)):])
	if got := ig.popNoAck(6*time.Second, "a-9"); got["a-9"] == 0 {
		t.Fatalf("w.log's a-lines never delivered: %v", got)
	}
	kill()
	data = rev22bCopyData(t, data)
	rotate(false, "b")

	ig2, kill2, _ := runGlobKill(t, pattern, data, time.Second, nil, nil)
	if got := ig2.popNoAck(6*time.Second, "a-9"); got["a-9"] == 0 {
		t.Fatalf("run 2: X's a-lines never delivered: %v", got)
	}
	rotate(false, "c")
	time.Sleep(300 * time.Millisecond) // (the glob sees K2)
	kill2()
	data = rev22bCopyData(t, data)
	rotate(true, "d")

	ig3, kill3, _ := runGlobKill(t, pattern, data, time.Second, nil, nil)
	if got := ig3.popNoAck(6*time.Second, "c-1"); got["c-1"] == 0 {
		t.Fatalf("run 3: K2's c-lines never delivered: %v", got)
	}
	ptrs, _ := filepath.Glob(filepath.Join(data, "feeds", "f", "*.ptr"))
	time.Sleep(100 * time.Millisecond) // (K2's epochs line written)
	kill3()
	data = rev22bCopyData(t, data)
	rotate(true, "e")
	// The generations' last writes apart as a running application's are
	// (here all were written within a few seconds, and the 2 s slack of
	// DESIGN §4 would make every one a later generation of any other).
	for i, p := range []string{w + ".4.gz", w + ".3.gz", w + ".2.gz", w + ".1"} {
		at := time.Now().Add(-time.Duration(60-15*i) * time.Second)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}

	ig4, stop4 := runGlobWith(t, pattern, data, time.Second, func(c *GlobConfig) { c.Stream.Logger = rev25bLog(t) }, nil)
	defer stop4()
	lines := rev39PopUntil(ig4, "e-1")
	tails, bytes, detail := ig4.lost()
	got := map[string]int{}
	for _, s := range lines {
		got[s]++
	}
	var missing []string
	for _, s := range strings.Fields(strings.ReplaceAll(numbered("a", 10)[len(numbered("a", 5)):]+numbered("b", 2)+numbered("c", 2)+numbered("d", 2)+numbered("e", 2), "\n", " ")) {
		if got[s] == 0 {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("restart: delivered %q; missing %q; lostTails %d lostBytes %d (%q); want every line after X's pointer (pointers before it: %d)", lines, missing, tails, bytes, detail, len(ptrs))
	}
	t.Logf("restart: lostTails %d (%q)", tails, detail)
}

// rev39Gen is the generation number of w.log.N or w.log.N.gz.
func rev39Gen(p string) int {
	p = strings.TrimSuffix(p, ".gz")
	n, _ := strconv.Atoi(p[strings.LastIndexByte(p, '.')+1:])
	return n
}

// rev39Rotate is logrotate's create rotation of w (rotate N, compress with
// delaycompress when gz: w.log.1 is compressed as it becomes w.log.2.gz),
// then the application writes two lines of next to the new w.
func rev39Rotate(t *testing.T, w string, gz bool, next string) {
	t.Helper()
	names, _ := filepath.Glob(w + ".*")
	// oldest first: the highest number
	slices.SortFunc(names, func(a, b string) int { return rev39Gen(b) - rev39Gen(a) })
	for _, p := range names {
		to := fmt.Sprintf("%s.%d", w, rev39Gen(p)+1)
		if strings.HasSuffix(p, ".gz") {
			if err := os.Rename(p, to+".gz"); err != nil {
				t.Fatal(err)
			}
		} else if gz {
			rev39Gzip(t, p, to+".gz")
		} else if err := os.Rename(p, to); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Rename(w, w+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w, []byte(numbered(next, 2)), 0o600); err != nil {
		t.Fatal(err)
	}
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
	dir := t.TempDir()
	data := t.TempDir()
	pattern := filepath.Join(dir, "*.log")
	w := filepath.Join(dir, "w.log")
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
	appendTo(t, w, numbered("a", 10)[len(numbered("a", 5)):])
	if got := ig.popNoAck(6*time.Second, "a-9"); got["a-9"] == 0 {
		t.Fatalf("w.log's a-lines never delivered: %v", got)
	}
	rev39Rotate(t, w, false, "b")
	list := filepath.Join(data, "feeds", "f", unreadListName)
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(list); err == nil && strings.Contains(string(b), `"path":"`+w+`"`) {
			break
		}
		if time.Now().After(end) {
			b, _ := os.ReadFile(list)
			t.Skipf("set-up not reached: the new w.log not in the unread list after 10 s (%q)", b)
		}
	}
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
	dir := t.TempDir()
	data := t.TempDir()
	pattern := filepath.Join(dir, "*.log")
	w := filepath.Join(dir, "w.log")
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
	// Many a-lines: the path's source is still reading them when a
	// stream of the listed file's own would have published its lines.
	const nA = 20000
	appendTo(t, w, numbered("a", nA)[len(numbered("a", 5)):])
	if got := ig.popNoAck(10*time.Second, fmt.Sprintf("a-%d", nA-1)); got[fmt.Sprintf("a-%d", nA-1)] == 0 {
		t.Fatalf("w.log's a-lines never delivered: %v", got)
	}
	rev39Rotate(t, w, false, "b")
	list := filepath.Join(data, "feeds", "f", unreadListName)
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(list); err == nil && strings.Contains(string(b), `"path":"`+w+`"`) {
			break
		}
		if time.Now().After(end) {
			b, _ := os.ReadFile(list)
			t.Skipf("set-up not reached: the new w.log not in the unread list after 10 s (%q)", b)
		}
	}
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
