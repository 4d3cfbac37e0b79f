package file

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"tailfeed/pointer"
)

// A file discovered while every slot is taken waits (queued) for its first
// turn; logrotate then renames it out of the glob (b.log -> b.log.old, not
// matched by *.log) and creates a new b.log before that turn comes. The
// stream of the first b.log never ran: it has no pointer yet. When its turn
// comes its file is beside its path (DESIGN §10: a rename out of the glob
// is read to its end), and the new b.log is a stream of its own, read after
// it (§10 "Order"). Every line of both is delivered once, nothing counted
// lost.
func TestGlobNeverStartedStreamRotatedOutIsReadOnce(t *testing.T) {
	ig := startInternalGlob(t, 50*time.Millisecond, 0)
	dir := filepath.Dir(ig.g.cfg.Stream.Path)
	ig.q.AddDispatched(ig.take(t)) // a.log's five lines
	ig.pub.Poke()
	ig.g.mu.Lock()
	slots := ig.g.maxSlots
	ig.g.maxSlots = 0 // no turn for anyone until restored
	ig.g.mu.Unlock()
	path := filepath.Join(dir, "b.log")
	if err := os.WriteFile(path, []byte("old-1\nold-2\nold-3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var s *gstream
	ig.waitFor(t, "b.log queued for its first turn", func() bool {
		s = ig.g.byPath[path]
		return s != nil && s.st == stQueued
	})
	if err := os.Rename(path, path+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("new-1\nnew-2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the scan seeing b.log rotated", func() bool {
		n := ig.g.byPath[path]
		return s.gone && n != nil && n != s
	})
	ig.g.mu.Lock()
	ig.g.maxSlots = slots
	ig.g.schedule(ig.g.ctx)
	ig.g.mu.Unlock()
	got := ig.popLines(3 * time.Second)
	tails, bytes, detail := ig.lost()
	for _, l := range []string{"old-1", "old-2", "old-3", "new-1", "new-2"} {
		if got[l] != 1 {
			t.Errorf("line %q delivered %d times, want once (all: %v; lostTails %d lostBytes %d detail %q)", l, got[l], got, tails, bytes, detail)
		}
	}
	if tails != 0 {
		t.Errorf("lostTails %d lostBytes %d detail %q: want nothing lost", tails, bytes, detail)
	}
}

// popLines pops for d, acknowledging, and counts each line delivered.
func (ig *internalGlob) popLines(d time.Duration) map[string]int {
	got := map[string]int{}
	for end := time.Now().Add(d); time.Now().Before(end); {
		b := ig.q.TryPop()
		if b == nil {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		for i := range b.Len() {
			got[string(b.Lines[i])]++
		}
		ig.q.AddDispatched(uint64(b.Len()))
		b.Release()
		ig.pub.Poke()
	}
	return got
}

// The same queued stream whose file is deleted before its first turn: none
// of it was read, so its bytes are counted lost (DESIGN §10: a file that
// disappears with an unread tail counts in lostTails; §4 "Nothing green
// over a loss"), once, and the new b.log is read from its start, once.
func TestGlobNeverStartedStreamDeletedIsCounted(t *testing.T) {
	ig := startInternalGlob(t, 50*time.Millisecond, 0)
	dir := filepath.Dir(ig.g.cfg.Stream.Path)
	ig.q.AddDispatched(ig.take(t))
	ig.pub.Poke()
	ig.g.mu.Lock()
	slots := ig.g.maxSlots
	ig.g.maxSlots = 0
	ig.g.mu.Unlock()
	path := filepath.Join(dir, "b.log")
	const old = "old-1\nold-2\nold-3\n"
	if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	var s *gstream
	ig.waitFor(t, "b.log queued for its first turn", func() bool {
		s = ig.g.byPath[path]
		return s != nil && s.st == stQueued
	})
	// The new file is made before the old one is deleted: it cannot reuse
	// its inode (a same-inode file before any scan is the same file to the
	// glob: nothing of the old one was fingerprinted).
	if err := os.WriteFile(path+".tmp", []byte("new-1\nnew-2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the scan seeing b.log replaced", func() bool {
		n := ig.g.byPath[path]
		return s.gone && n != nil && n != s
	})
	ig.g.mu.Lock()
	ig.g.maxSlots = slots
	ig.g.schedule(ig.g.ctx)
	ig.g.mu.Unlock()
	got := ig.popLines(3 * time.Second)
	tails, bytes, detail := ig.lost()
	for l, want := range map[string]int{"old-1": 0, "new-1": 1, "new-2": 1} {
		if got[l] != want {
			t.Errorf("line %q delivered %d times, want %d (all: %v)", l, got[l], want, got)
		}
	}
	if tails != 1 || bytes != uint64(len(old)) {
		t.Errorf("b.log deleted before its stream read any of it: lostTails %d lostBytes %d detail %q; want 1 and %d", tails, bytes, detail, len(old))
	}
}

// A stream's first turn comes with its file at its path; while its
// goroutine waits to open its new pointer (the disk busy), logrotate
// renames the file out of the glob and creates a new one at the path. Its
// source must not take the new file for its own (a stream of its own reads
// it): the old file is read where it went, the new one once, nothing lost.
func TestGlobStreamWhoseFileIsReplacedBeforeItsOpenReadsItsOwn(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	openPointer = func(path string, o pointer.Options) (*pointer.Pointer, error) {
		if strings.Contains(o.Input, "b.log") {
			<-release
		}
		return pointer.Open(path, o)
	}
	t.Cleanup(func() { openPointer = pointer.Open; once.Do(func() { close(release) }) })
	ig := startInternalGlob(t, 50*time.Millisecond, 0)
	dir := filepath.Dir(ig.g.cfg.Stream.Path)
	ig.q.AddDispatched(ig.take(t))
	ig.pub.Poke()
	path := filepath.Join(dir, "b.log")
	if err := os.WriteFile(path, []byte("old-1\nold-2\nold-3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var s *gstream
	ig.waitFor(t, "b.log's stream started", func() bool {
		s = ig.g.byPath[path]
		return s != nil && s.st == stOpen
	})
	if err := os.Rename(path, path+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("new-1\nnew-2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	once.Do(func() { close(release) })
	got := ig.popLines(4 * time.Second)
	tails, bytes, detail := ig.lost()
	for _, l := range []string{"old-1", "old-2", "old-3", "new-1", "new-2"} {
		if got[l] != 1 {
			t.Errorf("line %q delivered %d times, want once (all: %v; lostTails %d lostBytes %d detail %q)", l, got[l], got, tails, bytes, detail)
		}
	}
	if tails != 0 {
		t.Errorf("lostTails %d lostBytes %d detail %q: want nothing lost", tails, bytes, detail)
	}
}
