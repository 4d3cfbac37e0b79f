package file

import (
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// While tailfeed was stopped, w.log (F1) got two lines its stream had not
// read and was rotated twice: F1 is w.log.2, F2 (born and rotated while
// stopped, 3 lines) w.log.1, F3 the new w.log. At the start F3 takes F1's
// pointer (adoptByPath): its source is to read F1's tail, F2, then F3.
// While that stream waits for a slot (maxOpenFiles 1) logrotate rotates
// again (F3 → w.log.1, F2 → w.log.2, F1 → w.log.3, a new F4 at w.log) and a
// scan finds F3 out of the glob at w.log.1. Its source then started with
// w.log.1 for its path, and looked for the pointer's later generations
// beside that name (w.log.1.1 …), not beside w.log, where they rotate:
// F2's 3 lines were never read, and nothing was counted (audit 7 C: a busy
// writer's whole generation missing, lossless true); the stream now keeps
// its path and opens its own file where it went (ownAt). DESIGN §4 "Restart
// after rotation: every generation still on disk … read".
func TestGlobGenOwnStreamMovedBeforeItStartsReadsTheGenerations(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	pattern := filepath.Join(dir, "*.log")
	a, w := filepath.Join(dir, "a.log"), filepath.Join(dir, "w.log")
	for p, c := range map[string]string{a: numbered("a", 5), w: numbered("w", 5)} {
		if err := os.WriteFile(p, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ig, _, stop := runGlobOn(t, pattern, data)
	if got := ig.popAll(2 * time.Second); got != 10 {
		t.Fatalf("first run delivered %d lines, want 10", got)
	}
	stop()
	rotate := func(body string) {
		t.Helper()
		for i := 3; i >= 1; i-- {
			from := w + "." + itoa(i)
			if _, err := os.Stat(from); err == nil {
				if err := os.Rename(from, w+"."+itoa(i+1)); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := os.Rename(w, w+".1"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
		if err := os.WriteFile(w, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	appendTo(t, w, numbered("f1tail", 2))
	time.Sleep(20 * time.Millisecond)
	rotate(numbered("f2", 3))
	time.Sleep(20 * time.Millisecond)
	rotate(numbered("f3", 3))
	var opens atomic.Int32
	release := make(chan struct{})
	ig2, stop2 := runGlobWith(t, pattern, data, 5*time.Second, func(c *GlobConfig) {
		c.MaxOpenFiles = 1
		c.CloseInactive = 50 * time.Millisecond
		c.Stream.OpenHook = func() {
			if opens.Add(1) == 1 {
				<-release // the first stream's open holds the one slot
			}
		}
	}, nil)
	defer stop2()
	var relOnce sync.Once
	rel := func() { relOnce.Do(func() { close(release) }) }
	defer rel() // (before stop2: a failed wait leaves no open blocked)
	var gen *gstream
	ig2.waitFor(t, "w.log's stream, given the old pointer, waiting for the slot", func() bool {
		for _, s := range ig2.g.byKey {
			if s.genOwn && s.st == stQueued {
				gen = s
			}
		}
		return gen != nil
	})
	rotate(numbered("f4", 2))
	// Its own file found beside the path (its source opens it there, after
	// the generations named after w.log: Config.ownAt), the stream's path
	// unchanged.
	ig2.waitFor(t, "the waiting stream's own file found at w.log.1", func() bool { return gen.ownAt == w+".1" && gen.path == w })
	rel()
	got := ig2.popLines(3 * time.Second)
	tails, bytes, detail := ig2.lost()
	missing := []string{}
	for _, l := range []string{"f1tail-0", "f1tail-1", "f2-0", "f2-1", "f2-2", "f3-0", "f3-1", "f3-2", "f4-0", "f4-1"} {
		if got[l] != 1 {
			missing = append(missing, l)
		}
	}
	if len(missing) > 0 || tails != 0 {
		t.Errorf("after the restart: lines not delivered once: %v (delivered %v); lostTails %d lostBytes %d (%q)", missing, got, tails, bytes, detail)
	}
}
