package file

import (
	"compress/gzip"
	"os"
	"path/filepath"
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
