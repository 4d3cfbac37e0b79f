package file

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// COMMITTED, glob *.log, rotateWaitMillis 10 s: a.log's five lines are read
// and acknowledged; logrotate renames a.log to a.log.1 (out of the glob, a
// default rotatedNames name) and the application writes b-0 to a new a.log,
// read and committed under a pointer of its own. The daemon stops within
// rotateWaitMillis of the rename (a.log's stream still open, waiting for
// growth); while it is down the application, still holding the old
// descriptor, writes a-5 to a.log.1. At the restart no matched file has
// the old pointer's key and the file at its path has a pointer of its own
// (adoptByPath gives the old one to nobody): the old pointer's file is
// beside its path by key and first bytes (DESIGN §4 "Restart after
// rotation"), read from the pointer's offset to its end — a-5, nothing
// counted — then closed rotateWaitMillis after its last growth, its
// pointer recording that nothing of it is pending: a further restart
// counts nothing either. Before, countGone counted it gone while stopped
// (lostTails 1) and a-5 was never read.
func TestGlobRenamedOutBeforeStopReadBesidePathAtRestart(t *testing.T) {
	t.Parallel()
	dir, data, a := aLogIn(t, numbered("a", 5))
	pattern := filepath.Join(dir, "*.log")
	longWait := func(c *GlobConfig) { c.Stream.RotateWait = 10 * time.Second }
	ig, stop := runGlobCfg(t, pattern, data, time.Second, longWait)
	if first, _ := ig.popEpochs(time.Second, true); len(first) != 5 {
		t.Fatalf("first turn delivered %q, want a-0..a-4", first)
	}
	if err := os.Rename(a, a+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a, []byte("b-0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, _ := ig.popEpochs(time.Second, true); strings.Join(got, ",") != "b-0" {
		t.Fatalf("after the rename delivered %q, want b-0", got)
	}
	time.Sleep(300 * time.Millisecond) // committed
	stop()
	appendTo(t, a+".1", "a-5\n")

	ig2, stop2 := runGlobCfg(t, pattern, data, time.Second, nil)
	got, _ := ig2.popEpochs(1500*time.Millisecond, true)
	tails, bytes, detail := ig2.lost()
	if strings.Join(got, ",") != "a-5" || tails != 0 {
		t.Fatalf("restart with a.log.1 (a-5 past the pointer) beside a.log: delivered %q, lostTails %d lostBytes %d (%q); want a-5 and 0",
			got, tails, bytes, detail)
	}
	ig2.waitFor(t, "a.log.1's stream closed rotateWaitMillis after its last growth", func() bool {
		for _, s := range ig2.g.byKey {
			if s.path == a+".1" {
				return s.st == stClosed && s.owe == nil && s.offset == 0
			}
		}
		return false
	})
	stop2()

	ig3, stop3 := runGlobCfg(t, pattern, data, time.Second, nil)
	got, _ = ig3.popEpochs(500*time.Millisecond, true)
	tails, bytes, detail = ig3.lost()
	stop3()
	if len(got) != 0 || tails != 0 {
		t.Errorf("a further restart: delivered %q, lostTails %d lostBytes %d (%q); want nothing", got, tails, bytes, detail)
	}
}

// COMMITTED, glob *.log, closeInactiveMillis 100 ms, rotateWaitMillis 1 s:
// a.log's five lines are read, acknowledged and committed, and its stream
// closed as inactive. logrotate renames a.log to a.log.1 (out of the glob,
// beside its path) with nothing appended yet; a scan finds it gone from the
// glob. Then the application, still holding the old descriptor, writes a-5
// to it. DESIGN §10: a file renamed out of the glob is read to its end
// (rotateWaitMillis after its last growth), then closed; the closed stream
// is opened again where its file went, as an open one would have gone on
// reading it: a-5 is delivered, nothing counted. Before, a closed file
// renamed out with no byte past its pointer yet was forgotten at once, and
// a-5 was neither delivered nor counted.
func TestGlobClosedRenamedOutThenAppendedIsRead(t *testing.T) {
	t.Parallel()
	dir, data, a := aLogIn(t, numbered("a", 5))
	pattern := filepath.Join(dir, "*.log")
	ig, stop := runGlobCfg(t, pattern, data, time.Second, func(c *GlobConfig) {
		c.CloseInactive = 100 * time.Millisecond
		c.Stream.RotateWait = time.Second
	})
	s := ig.firstTurnCommitted(t)
	if err := os.Rename(a, a+".1"); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "a scan found a.log gone from the glob", func() bool { return s.gone })
	appendTo(t, a+".1", "a-5\n")
	got, _ := ig.popEpochs(1500*time.Millisecond, true)
	tails, bytes, detail := ig.lost()
	if strings.Join(got, ",") != "a-5" || tails != 0 {
		t.Fatalf("a-5, appended to the closed a.log after it was renamed out of the glob to a.log.1: delivered %q, lostTails %d lostBytes %d (%q); want a-5 and 0",
			got, tails, bytes, detail)
	}
	ig.waitFor(t, "a.log.1's stream closed again, its pointer reset", func() bool {
		rec, _, err := ig.pointer()
		return s.st == stClosed && err == nil && rec.FileKey == 0
	})
	stop()
}
