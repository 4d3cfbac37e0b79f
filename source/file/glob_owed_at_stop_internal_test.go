package file

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A stream closes before its first commit, its lines unacknowledged (the
// drain cut short: its pointer names no file yet), with a line written
// while it closed; a.log is renamed within the glob (to b.log) and the
// daemon stopped before any scan followed it. The lines are acknowledged
// during the shutdown's drain: the commit Close makes must still name the
// file (found where it went), so that the restart reads only the unread
// line — not b.log again from its start (duplicates after a clean stop;
// DESIGN §2 at-least-once allows duplicates only after a crash).
func TestGlobOwedCommitAtStopFollowsARenamedFile(t *testing.T) {
	dir, data := t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "a.log")
	var sb strings.Builder
	for i := range 5 {
		fmt.Fprintf(&sb, "line-%d\n", i)
	}
	if err := os.WriteFile(path, []byte(sb.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	pattern := filepath.Join(dir, "*.log")
	ig, stopRun, stop := runGlobOn(t, pattern, data)
	n := ig.take(t) // not acknowledged: the drain is cut short, it owes
	s := ig.stoppingStream(t)
	const line = "written-while-closing\n"
	appendTo(t, path, line)
	ig.waitFor(t, "the stream closed owing its commit, queued again", func() bool {
		return s.st == stQueued && s.owe != nil
	})
	if rec, _, err := ig.pointer(); err != nil || rec.FileKey != 0 {
		t.Fatalf("pointer %+v (%v): want one naming no file yet", rec, err)
	}
	if err := os.Rename(path, filepath.Join(dir, "b.log")); err != nil {
		t.Fatal(err)
	}
	stopRun() // no scan after the rename
	ig.g.mu.Lock()
	o := s.owe
	ig.g.mu.Unlock()
	ig.q.AddDispatched(n)
	ig.pub.Poke()
	for end := time.Now().Add(10 * time.Second); o.sp.Pending() > 0; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("acknowledgements not handed to the closed stream after 10 s")
		}
	}
	stop()
	rec, _, err := ig.pointer()
	t.Logf("pointer after the stop: %+v (%v)", rec, err)
	ig2, _, _ := runGlobOn(t, pattern, data)
	got := ig2.popAll(3 * time.Second)
	if got != 1 {
		t.Errorf("restart after a clean stop: %d lines delivered, want the 1 unread line (b.log is a.log renamed; its 5 lines were acknowledged before the stop)", got)
	}
}
