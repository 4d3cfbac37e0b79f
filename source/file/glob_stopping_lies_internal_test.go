package file

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Review of f128221 (a stopping stream read to its end is CAUGHT_UP): cases
// where the stopping stream's file holds bytes no stream has read, yet the
// new rule (s.behind false, stat size <= ReadPos) reports it read to its end.

// stoppingStream waits until a.log's stream is stopping (its drain waits
// for the lines ig.take popped) and returns it.
func (ig *internalGlob) stoppingStream(t *testing.T) *gstream {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		ig.g.mu.Lock()
		for _, s := range ig.g.byKey {
			if s.st == stStopping {
				ig.g.mu.Unlock()
				return s
			}
		}
		ig.g.mu.Unlock()
		if time.Now().After(end) {
			t.Fatal("a.log's stream not stopping after 10 s")
		}
	}
}

// waitFor polls cond under the glob's mutex.
func (ig *internalGlob) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		ig.g.mu.Lock()
		ok := cond()
		ig.g.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%s: not after 10 s", what)
		}
	}
}

// writeAfter opens path for appending (a writer's descriptor), runs move
// (a rename or a removal), then writes line through that descriptor —
// the application's last line into a file that left its path.
func writeAfter(t *testing.T, path string, move func() error, line string) {
	t.Helper()
	w, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := move(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString(line); err != nil {
		t.Fatal(err)
	}
}

// stillStopping fails the test unless s is still stopping (its drain
// waits for the lines ig.take popped).
func (ig *internalGlob) stillStopping(t *testing.T, s *gstream) {
	t.Helper()
	ig.g.mu.Lock()
	still := s.st == stStopping
	ig.g.mu.Unlock()
	if !still {
		t.Fatal("a.log's stream closed before the check (drain bound 10 s)")
	}
}

// checkBehind asserts the feed and a.log's row report a.log behind.
func (ig *internalGlob) checkBehind(t *testing.T, why string) {
	t.Helper()
	st, c := ig.g.StateCounts()
	files := ig.g.Files()
	if st != Behind || c.Behind != 1 || len(files) != 1 || files[0].State != Behind.String() {
		t.Errorf("%s: state %v, counts %+v, files %+v; want BEHIND, filesBehind 1, a.log BEHIND", why, st, c, files)
	}
}

// A file truncated and written again (copytruncate, or an application that
// truncates its log at start) while its stream is stopping: its new lines
// are read by no stream yet (the stopping one is cancelled; closed queues it
// again only after the drain, which waits up to a minute for the popped
// lines). Its size is below the stopping stream's read offset, so the new
// rule "behind only if size > ReadPos" reports it CAUGHT_UP, filesBehind 0,
// ?files=1 CAUGHT_UP at offset 35 with size 9 — although the glob's own scan
// saw the change (s.reopen) and DESIGN §10 is CAUGHT_UP only when every
// tracked file is read to its end. Before f128221: BEHIND.
func TestStoppingStreamTruncatedAndRewrittenIsBehind(t *testing.T) {
	t.Parallel()
	ig := startInternalGlob(t, 50*time.Millisecond, 10*time.Second)
	n := ig.take(t) // popped, not acknowledged: the drain waits
	s := ig.stoppingStream(t)
	path := filepath.Join(filepath.Dir(ig.g.cfg.Stream.Path), "a.log")
	if err := os.WriteFile(path, []byte("new-line\n"), 0o600); err != nil { // O_TRUNC: 9 bytes < 35 read
		t.Fatal(err)
	}
	ig.waitFor(t, "the scan seeing a.log rewritten", func() bool { return s.reopen || s.st != stStopping })
	ig.stillStopping(t, s)
	ig.checkBehind(t, "a.log truncated and rewritten while its stream is stopping")
	ig.q.AddDispatched(n)
	ig.pub.Poke()
}

// A file deleted while its stream is stopping, into which its writer still
// appends through its open descriptor (why rotateWaitMillis exists): the
// stopping source still holds the file open and has not read the new line.
// DESIGN §7: CAUGHT_UP needs the path to name the open file "or be missing
// with the open file read to its end"; the open file is not read to its
// end. The new rule stats the (missing) path, finds nothing and reports
// CAUGHT_UP, filesBehind 0. Before f128221: BEHIND.
func TestStoppingStreamDeletedAndWrittenIsBehind(t *testing.T) {
	t.Parallel()
	ig := startInternalGlob(t, 50*time.Millisecond, 10*time.Second)
	n := ig.take(t)
	s := ig.stoppingStream(t)
	path := filepath.Join(filepath.Dir(ig.g.cfg.Stream.Path), "a.log")
	writeAfter(t, path, func() error { return os.Remove(path) }, "written-after-the-unlink\n")
	ig.waitFor(t, "the scan seeing a.log gone", func() bool { return s.gone || s.st != stStopping })
	ig.stillStopping(t, s)
	ig.checkBehind(t, "a.log deleted and written through its writer's descriptor while its stream is stopping")
	ig.q.AddDispatched(n)
	ig.pub.Poke()
}

// logrotate's create mode while a file's stream is stopping: a.log renamed
// out of the glob (a.log.1), an empty a.log created, and the application
// writes its last lines into a.log.1 before it reopens. The stopping source
// still holds a.log.1 open with those lines unread; the new rule stats the
// path, which names the new, empty file (size 0 <= ReadPos), and reports
// the old stream read to its end: feed CAUGHT_UP, filesBehind 0 (the empty
// a.log waits for bytes and is not behind). DESIGN §7: the path must name
// the open file, else BEHIND. Before f128221: BEHIND.
func TestStoppingStreamRotatedOutAndWrittenIsBehind(t *testing.T) {
	t.Parallel()
	ig := startInternalGlob(t, 50*time.Millisecond, 10*time.Second)
	n := ig.take(t)
	s := ig.stoppingStream(t)
	path := filepath.Join(filepath.Dir(ig.g.cfg.Stream.Path), "a.log")
	writeAfter(t, path, func() error {
		if err := os.Rename(path, path+".1"); err != nil {
			return err
		}
		return os.WriteFile(path, nil, 0o600)
	}, "last-line-before-the-reopen\n")
	ig.waitFor(t, "the scan seeing a.log rotated", func() bool {
		return (s.gone && len(ig.g.byKey) == 2) || s.st != stStopping
	})
	ig.stillStopping(t, s)
	st, c := ig.g.StateCounts()
	if st != Behind || c.Behind < 1 {
		t.Errorf("a.log rotated out and written while its stream is stopping: state %v, counts %+v, files %+v; want BEHIND, filesBehind >= 1",
			st, c, ig.g.Files())
	}
	ig.q.AddDispatched(n)
	ig.pub.Poke()
}

// Pre-existing (fails before f128221 too): the same rotation, after the
// stopping stream's drain ends. Its source was cancelled before a.log.1's
// last line and closes the descriptor without reading it or counting it:
// the line is never delivered, lostTails stays 0, the feed reports
// CAUGHT_UP and CommitOK — settled and lossless with a line lost. DESIGN
// §10: a file renamed out of the glob is read to its end, then closed; one
// that disappears with an unread tail counts in lostTails.
func TestStoppingStreamRotatedOutLastLineIsReadOrCounted(t *testing.T) {
	t.Parallel()
	ig := startInternalGlob(t, 50*time.Millisecond, 10*time.Second)
	n := ig.take(t)
	s := ig.stoppingStream(t)
	path := filepath.Join(filepath.Dir(ig.g.cfg.Stream.Path), "a.log")
	writeAfter(t, path, func() error {
		if err := os.Rename(path, path+".1"); err != nil {
			return err
		}
		return os.WriteFile(path, nil, 0o600)
	}, "last-line-before-the-reopen\n")
	ig.waitFor(t, "the scan seeing a.log rotated", func() bool { return s.gone || s.st != stStopping })
	ig.q.AddDispatched(n)
	ig.pub.Poke()
	ig.waitFor(t, "a.log.1's stream closed", func() bool { return s.st != stStopping })
	got := 0
	for end := time.Now().Add(3 * time.Second); got == 0 && time.Now().Before(end); {
		if b := ig.q.TryPop(); b != nil {
			got += b.Len()
			ig.q.AddDispatched(uint64(b.Len()))
			b.Release()
		} else {
			time.Sleep(2 * time.Millisecond)
		}
	}
	if got == 0 && ig.g.LostTails() == 0 {
		st, c := ig.g.StateCounts()
		t.Errorf("a.log.1's last line neither delivered nor counted lost: lostTails 0, state %v, counts %+v, CommitOK %v",
			st, c, ig.g.CommitOK())
	}
}

// appendTo appends line to the file at path (its writer, once).
func appendTo(t *testing.T, path, line string) {
	t.Helper()
	writeAfter(t, path, func() error { return nil }, line)
}
