package file

import (
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
		rev25bGzipBytes(t, b, w+".1.gz")
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
	rev25bGzipBytes(t, b, to)
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

// Review 39 finding 2: a file tracked and never read at a kill -9 (W, a
// live rotation's new w.log waiting behind X, X's lines published and
// never committed: X's pointer holds its epoch alone), while tailfeed is
// down X deleted (logrotate's rotate count) and W renamed out (plain, or
// compressed). At the restart the path's stream, given X's pointer, finds
// X nowhere and reads no generation (forgetLost): W must be read where it
// is, or counted. The first version of readsAsLater's rule (the pointer
// file's mtime as the reference, for an empty record) skipped W and did
// not count it: b-lines never delivered, lossless over 12 bytes lost.
func TestRev39ListedFileBesideAPointerWithNoFileIsReadOrCounted(t *testing.T) {
	t.Parallel()
	for _, gz := range []bool{false, true} {
		name := "renamed out"
		if gz {
			name = "renamed out and compressed"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			data := t.TempDir()
			pattern := filepath.Join(dir, "*.log")
			w := filepath.Join(dir, "w.log")
			if err := os.WriteFile(w, []byte(numbered("a", 5)), 0o600); err != nil {
				t.Fatal(err)
			}
			ig, kill, _ := runGlobKill(t, pattern, data, time.Second, nil, nil)
			if got := ig.popNoAck(6*time.Second, "a-4"); got["a-4"] == 0 {
				t.Fatalf("w.log's a-lines never delivered: %v", got)
			}
			if err := os.Rename(w, w+".1"); err != nil {
				t.Fatal(err)
			}
			wLines := numbered("b", 3)
			if err := os.WriteFile(w, []byte(wLines), 0o600); err != nil {
				t.Fatal(err)
			}
			rev39WaitListed(t, data, w, int64(len(wLines)))
			kill()
			data = rev22bCopyData(t, data)
			if err := os.Remove(w + ".1"); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(w, w+".1"); err != nil {
				t.Fatal(err)
			}
			if gz {
				rev39Gzip(t, w+".1", w+".1.gz")
			}
			if err := os.WriteFile(w, []byte(numbered("c", 2)), 0o600); err != nil {
				t.Fatal(err)
			}
			ig2, stop2 := runGlobWith(t, pattern, data, time.Second, func(c *GlobConfig) { c.Stream.Logger = rev25bLog(t) }, nil)
			defer stop2()
			var lines []string
			got := map[string]int{}
			for end := time.Now().Add(5 * time.Second); time.Now().Before(end) && (got["b-2"] == 0 || got["c-1"] == 0); {
				l, _ := ig2.popEpochs(100*time.Millisecond, true)
				for _, s := range l {
					got[s]++
				}
				lines = append(lines, l...)
			}
			tails, bytes, detail := ig2.lost()
			if (got["b-0"] == 0 || got["b-1"] == 0 || got["b-2"] == 0) && bytes < uint64(len(wLines)) {
				t.Fatalf("restart: W's b-lines neither delivered (%q) nor counted: lostTails %d lostBytes %d (%q), want its %d bytes counted",
					lines, tails, bytes, detail, len(wLines))
			}
			if got["c-0"] == 0 || got["c-1"] == 0 {
				t.Errorf("restart: the new w.log's c-lines not delivered: %q", lines)
			}
		})
	}
}

// Review 39 finding 3: a never-committed glob stream's w.log held only a
// header line when it was adopted (its epochs line names those 33 bytes).
// While tailfeed is down w.log gets ten a-lines and another application's
// v.log, also matched by the glob, starts with the same header; w.log is
// copied and cut between the glob's look and its stream's open (its copy
// older than v.log's last write). The copy search must not take v.log,
// a stream of the glob's own, for w.log's copy: its lines were read under
// w.log's old epoch (and again by its own stream: an exactlyOnce sink had
// them twice, and w.log's pointer was bound to v.log's key).
func TestRev39NeverCommittedCutCopyIsNoGlobFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := t.TempDir()
	pattern := filepath.Join(dir, "*.log")
	w := filepath.Join(dir, "w.log")
	v := filepath.Join(dir, "v.log")
	hdr := "#Fields: date time level message\n"
	if err := os.WriteFile(w, []byte(hdr), 0o600); err != nil {
		t.Fatal(err)
	}
	ig, kill, _ := runGlobKill(t, pattern, data, time.Second, nil, nil)
	if got := ig.popNoAck(6*time.Second, strings.TrimSuffix(hdr, "\n")); len(got) == 0 {
		t.Fatal("w.log's header never delivered")
	}
	kill()
	data = rev22bCopyData(t, data)
	ptrs, _ := filepath.Glob(filepath.Join(data, "feeds", "f", "*.ptr"))
	if len(ptrs) != 1 {
		t.Fatalf("pointers after the kill: %v, want w.log's alone", ptrs)
	}
	rec, err := pointer.Inspect(ptrs[0])
	if err != nil || rec.FileKey != 0 || rec.Offset != 0 || rec.Epoch == 0 {
		t.Skipf("set-up not reached: w.log's pointer after the kill is %+v (%v), not an epoch with nothing committed", rec, err)
	}
	appendTo(t, w, numbered("a", 10))
	if err := os.WriteFile(v, []byte(hdr+numbered("v", 5)), 0o600); err != nil {
		t.Fatal(err)
	}
	var armed, fired atomic.Bool
	armed.Store(true)
	ig2, stop2 := runGlobWith(t, pattern, data, time.Second, func(c *GlobConfig) {
		c.Stream.Logger = rev25bLog(t)
		c.Stream.OpenHook = func() {
			if armed.CompareAndSwap(true, false) {
				rev39CopyTruncate(t, w, false)
				old := time.Now().Add(-time.Minute)
				if err := os.Chtimes(w+".1", old, old); err != nil {
					t.Error(err)
				}
				time.Sleep(20 * time.Millisecond)
				appendTo(t, v, "v-5\n")
				fired.Store(true)
			}
		}
	}, nil)
	defer stop2()
	lines, epochs := ig2.popEpochs(3*time.Second, true)
	tails, bytes, detail := ig2.lost()
	if !fired.Load() {
		t.Fatalf("set-up not reached: no source opened a file after the restart (delivered %q)", lines)
	}
	got := map[string]int{}
	for i, s := range lines {
		got[s]++
		if strings.HasPrefix(s, "v-") && epochs[i] == rec.Epoch {
			t.Errorf("v.log's %s delivered under w.log's old epoch %016x (taken for w.log's copy)", s, rec.Epoch)
		}
	}
	for _, s := range strings.Fields(strings.ReplaceAll(numbered("v", 6), "\n", " ")) {
		if got[s] != 1 {
			t.Errorf("v.log's %s delivered %d times, want once (delivered %q)", s, got[s], lines)
		}
	}
	if got["a-9"] == 0 && tails == 0 {
		t.Errorf("w.log's a-lines neither delivered nor counted: lostTails %d lostBytes %d (%q); delivered %q", tails, bytes, detail, lines)
	}
}

// rev39WaitListed waits (10 s at most; else the test is skipped, its
// set-up not reached) until the glob's unread list names the file at w
// holding size bytes: the new file of a live rotation, waiting for its
// turn, listed for a kill -9 (the file before it at w may be listed under
// w too, until it gets its pointer).
func rev39WaitListed(t *testing.T, data, w string, size int64) {
	t.Helper()
	list := filepath.Join(data, "feeds", "f", unreadListName)
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		ws, _ := readUnreadList(list)
		for _, e := range ws {
			if e.Path == w && e.Size == size {
				return
			}
		}
		if time.Now().After(end) {
			b, _ := os.ReadFile(list)
			t.Skipf("set-up not reached: the new w.log (%d bytes) not in the unread list after 10 s (%q)", size, b)
		}
	}
}

// A file read and committed to its end, renamed out of the glob (logrotate
// create) while its stream still watched it (rotateWaitMillis), the path's
// new file read with a pointer of its own; killed. While tailfeed is down
// logrotate runs again with compress: the first file becomes w.log.2.gz,
// holding exactly its committed bytes, the second w.log.1, a third w.log.
// At the restart the first file's pointer is not found by its key (the
// second file's pointer takes the path); the .gz shows nothing of it was
// unread: not counted lost. Before, "glob file gone while stopped …
// its unread tail, if any, is lost" (this session's soak of
// TestAud11AOKGlobKill9PropertyNoDeletes: lossless false, every line
// delivered).
func TestRev39GoneWhileStoppedCompressedWithItsCommittedBytesIsNoLoss(t *testing.T) {
	t.Parallel()
	rev39CompressedWhileDown(t, false)
}

// Review 43 F-B: the same with the first file's last line ended by a lone
// '\r', taken when the path's new file waited for it, its '\n' appended
// afterwards (read, skipped): the pointer stays at the line's end P, the
// file (and its .gz) holds P+1 bytes. The .gz was not taken for the
// committed file, and it was counted gone with its tail (lostTails 1)
// though every byte of it was delivered.
func TestLoneCRGoneWhileStoppedCompressedIsNoLoss(t *testing.T) {
	t.Parallel()
	rev39CompressedWhileDown(t, true)
}

// rev39CompressedWhileDown runs the case above; loneCR: w.log's last line
// is "a-4\r", its '\n' written after the rotation took the line.
func rev39CompressedWhileDown(t *testing.T, loneCR bool) {
	dir := t.TempDir()
	data := t.TempDir()
	pattern := filepath.Join(dir, "*.log")
	w := filepath.Join(dir, "w.log")
	if err := os.WriteFile(w, []byte(numbered("a", 4)), 0o600); err != nil {
		t.Fatal(err)
	}
	ig, kill, _ := runGlobKill(t, pattern, data, time.Second, func(c *GlobConfig) { c.Stream.RotateWait = time.Minute }, nil)
	if got := ig.popLines(2 * time.Second); got["a-3"] == 0 {
		t.Fatalf("w.log's a-lines never delivered: %v", got)
	}
	// The application writes on after the file was taken (its .gz keeps
	// that last write's mtime).
	time.Sleep(50 * time.Millisecond)
	wr, err := os.OpenFile(w, os.O_WRONLY|os.O_APPEND, 0) // the application's descriptor
	if err != nil {
		t.Fatal(err)
	}
	end := int64(len(numbered("a", 5))) // the end of a-4, its pointer's offset
	var xPtr string
	named := func() bool {
		s := ig.g.byPath[w]
		if s == nil || s.ptrPath == "" {
			return false
		}
		xPtr = s.ptrPath
		return true
	}
	committed := func() bool {
		rec, err := pointer.Inspect(xPtr)
		return err == nil && rec.Offset == end
	}
	if loneCR {
		wr.WriteString("a-4\r")
		time.Sleep(300 * time.Millisecond) // read, the line held (a "\r\n"'s possible first half)
		ig.waitFor(t, "w.log's pointer named", named)
	} else {
		wr.WriteString("a-4\n")
		wr.Close()
		if got := ig.popLines(2 * time.Second); got["a-4"] == 0 {
			t.Fatalf("w.log's a-4 never delivered: %v", got)
		}
		ig.waitFor(t, "w.log committed to its end", func() bool { return named() && committed() })
	}
	rev39Rotate(t, w, false, "b")
	got := ig.popLines(2 * time.Second)
	if loneCR {
		if got["a-4"] == 0 {
			t.Fatalf("a-4 (ended by a lone '\\r') never delivered: %v", got)
		}
		wr.WriteString("\n") // completes the "\r\n" after its line was taken
		wr.Close()
		ig.waitFor(t, "w.log.1 committed to its last line", committed)
	}
	if got["b-1"] == 0 {
		if got = ig.popLines(2 * time.Second); got["b-1"] == 0 {
			t.Fatalf("the new w.log's b-lines never delivered: %v", got)
		}
	}
	ig.waitFor(t, "the new w.log committed with a pointer of its own", func() bool {
		s := ig.g.byPath[w]
		if s == nil || s.ptrPath == "" || s.ptrPath == xPtr {
			return false
		}
		rec, err := pointer.Inspect(s.ptrPath)
		return err == nil && rec.Offset == int64(len(numbered("b", 2)))
	})
	if loneCR {
		time.Sleep(500 * time.Millisecond) // the '\n' read
		if ig.popLines(300 * time.Millisecond)[""] != 0 {
			t.Fatal("an empty line for the '\\n'")
		}
	}
	kill()
	data = rev22bCopyData(t, data)
	if rec, err := pointer.Inspect(filepath.Join(data, "feeds", "f", filepath.Base(xPtr))); err != nil || rec.FileKey == 0 {
		t.Fatalf("the first file's pointer after the kill is %+v (%v), not naming it", rec, err)
	}
	// The second file written more than mtimeSlack after the first one's
	// last write: else the first one's .gz is within the slack of the
	// second pointer's file and read again as a later generation of it (a
	// duplicate the slack allows, "reading a file twice is a duplicate,
	// never a gap"; this test ran in under 2 s and saw it 4 runs in 6).
	st1, err := os.Stat(w + ".1")
	if err != nil {
		t.Fatal(err)
	}
	if st2, err := os.Stat(w); err == nil && st2.ModTime().Before(st1.ModTime().Add(mtimeSlack+time.Second)) {
		at := st1.ModTime().Add(mtimeSlack + time.Second)
		if err := os.Chtimes(w, at, at); err != nil {
			t.Fatal(err)
		}
	}
	rev39Rotate(t, w, true, "c")
	ig2, stop2 := runGlobWith(t, pattern, data, time.Second, func(c *GlobConfig) { c.Stream.Logger = rev25bLog(t) }, nil)
	defer stop2()
	lines := rev39PopUntil(ig2, "c-1")
	tails, bytes, detail := ig2.lost()
	if tails != 0 || bytes != 0 {
		t.Errorf("restart: lostTails %d lostBytes %d (%q), want nothing: the first file's .gz holds exactly its committed bytes", tails, bytes, detail)
	}
	n := map[string]int{}
	for _, s := range lines {
		n[s]++
	}
	if n["c-0"] == 0 || n["c-1"] == 0 || n["a-0"] != 0 {
		t.Errorf("restart: delivered %q, want the c-lines (and no a-line again)", lines)
	}
}

// Review 39b finding 3: the never-committed cut file's copy is a file the
// glob matches (pattern w.log*: w.log.1 is a glob stream of its own). The
// copy is read once, by its own stream, and nothing is counted lost. The
// first version left glob files out of the copy search, counted the cut
// lost and read the copy again as a later generation.
func TestRev39NeverCommittedCutCopyMatchedByTheGlobIsReadOnce(t *testing.T) {
	t.Parallel()
	for _, atOpen := range []bool{false, true} {
		name := "while down"
		if atOpen {
			name = "at the open"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, data, w, _ := rev39PublishedNeverCommitted(t)
			pattern := filepath.Join(filepath.Dir(w), "w.log*")
			ig2, lines, _ := rev39Restart(t, pattern, data, w, false, false, atOpen)
			tails, bytes, detail := ig2.lost()
			got := map[string]int{}
			for _, l := range lines {
				got[l]++
			}
			for i := range 10 {
				s := fmt.Sprintf("a-%d", i)
				if got[s] == 0 || (i >= 5 && got[s] > 1) {
					t.Errorf("%s delivered %d times, want once (a-0…a-4 at least once); delivered %q", s, got[s], lines)
				}
			}
			if tails != 0 {
				t.Errorf("lostTails %d lostBytes %d (%q), want 0: every a-line is in w.log.1, which the glob reads", tails, bytes, detail)
			}
		})
	}
}

// Review 39b finding 1: X was committed at its header alone; renamed out,
// five lines written to it while tailfeed was down, then deleted. An idle
// day's generation compressed days before, w.log.4.gz, holds only that
// header: it is no proof that nothing of X was unread (it was written
// before X's pointer took X). X's tail is counted lost.
func TestRev39OlderGzHoldingTheCommittedBytesIsNoProof(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := t.TempDir()
	pattern := filepath.Join(dir, "*.log")
	w := filepath.Join(dir, "w.log")
	hdr := "tail-hdr\n"
	if err := os.WriteFile(w+".4", []byte(hdr), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-96 * time.Hour)
	if err := os.Chtimes(w+".4", old, old); err != nil {
		t.Fatal(err)
	}
	rev39Gzip(t, w+".4", w+".4.gz")
	if err := os.WriteFile(w, []byte(hdr), 0o600); err != nil {
		t.Fatal(err)
	}
	ig, kill, _ := runGlobKill(t, pattern, data, time.Second, func(c *GlobConfig) { c.Stream.RotateWait = time.Minute }, nil)
	if got := ig.popLines(2 * time.Second); got["tail-hdr"] == 0 {
		t.Fatalf("X's header never delivered: %v", got)
	}
	var xPtr string
	ig.waitFor(t, "X committed to its header", func() bool {
		s := ig.g.byPath[w]
		if s == nil || s.ptrPath == "" {
			return false
		}
		xPtr = s.ptrPath
		rec, err := pointer.Inspect(xPtr)
		return err == nil && rec.Offset == int64(len(hdr))
	})
	if err := os.Rename(w, w+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w, []byte("tail-y0\ntail-y1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := ig.popLines(2 * time.Second); got["tail-y1"] == 0 {
		t.Fatalf("Y never delivered: %v", got)
	}
	ig.waitFor(t, "Y committed with its own pointer", func() bool {
		s := ig.g.byPath[w]
		if s == nil || s.ptrPath == "" || s.ptrPath == xPtr {
			return false
		}
		rec, err := pointer.Inspect(s.ptrPath)
		return err == nil && rec.Offset == 16
	})
	kill()
	data = rev22bCopyData(t, data)
	if rec, err := pointer.Inspect(filepath.Join(data, "feeds", "f", filepath.Base(xPtr))); err != nil || rec.FileKey == 0 || rec.Offset != int64(len(hdr)) {
		t.Skipf("set-up not reached: X's pointer %+v (%v)", rec, err)
	}
	appendTo(t, w+".1", numbered("a", 5))
	if err := os.Remove(w + ".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(w, w+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w, []byte("tail-z0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ig2, stop2 := runGlobWith(t, pattern, data, time.Second, func(c *GlobConfig) { c.Stream.Logger = rev25bLog(t) }, nil)
	defer stop2()
	lines := rev39PopUntil(ig2, "tail-z0")
	tails, bytes, detail := ig2.lost()
	got := map[string]int{}
	for _, s := range lines {
		got[s]++
	}
	if got["a-0"] == 0 && tails == 0 {
		t.Errorf("X's five lines written after its last commit are gone with it, never delivered (%q), and nothing is counted: lostTails %d lostBytes %d (%q)", lines, tails, bytes, detail)
	}
}
