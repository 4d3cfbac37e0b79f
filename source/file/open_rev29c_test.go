//go:build openfindings

package file_test

// Review 29c's finding kept open (run with -tags openfindings): a batch
// published while an msync of its pointer runs does not wait for its first
// bytes to be stored (reading never waits for an msync); a kill -9 in that
// window, then a rewrite keeping the stored first bytes while stopped, reads
// the new lines under the old epoch. Stated in README.

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"tailfeed/pointer"
	"tailfeed/source/file"
)

// TestRev29CXHeadGrowSkippedWhileMsyncRuns — DESIGN §2 "every delivery
// carries (feed, epoch, position)" (unique per line, §4 "<feed>:<epoch>:
// <position> stays unique for every sink") and the change's own rule
// (headGrow): before a batch of the pointer's epoch goes out past the first
// bytes the record holds, the record is stored with them grown.
//
// headGrow returns without growing while an async msync is in flight
// (source/file/commit.go:305 `if s.collectSync(false); s.commit.inFlight
// { return true }`): the batch is published anyway, and the commit of its
// acknowledgement waits in pend behind the same msync. A kill -9 in that
// window leaves a record whose first bytes (the banner) a file rewritten
// while stopped (copytruncate, banner written again) still matches: the
// restart reads the new line under the old epoch and the old line's
// position (an exactlyOnce sink skips it: lost).
//
// Observed: record in the page cache FPLen 14 (banner) while "payload-1"
// ending at 24 is published and acknowledged; after the restart
// "payload-2" is delivered under the old epoch at position 24 — the same
// (epoch, position) as "payload-1". Expected: FPLen >= 24 before
// "payload-1" goes out, and "payload-2" under a new epoch (the copy
// app.log.1 read from the pointer first).
func TestRev29CXHeadGrowSkippedWhileMsyncRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := filepath.Join(dir, "app.log")
	const banner = "=== start ===\n" // 14 bytes
	if err := os.WriteFile(in, []byte(banner), 0o644); err != nil {
		t.Fatal(err)
	}
	var gm *rev29CGateMap
	r := newRig(t, dir, rigOpts{strategy: file.Committed, ptrMap: func(f *os.File) (pointer.Mapping, error) {
		m := &rev29CGateMap{f: f, buf: make([]byte, pointer.Size), blocked: make(chan struct{}), release: make(chan struct{})}
		if _, err := f.ReadAt(m.buf, 0); err != nil {
			return nil, err
		}
		m.gated.Store(true)
		gm = m
		return m, nil
	}})
	r.start()
	r.waitLines(1)
	select {
	case <-gm.blocked: // the banner's commit is in its msync (slow disk)
	case <-time.After(20 * time.Second):
		t.Fatal("the banner's commit never reached an msync")
	}
	appendTo(t, in, "payload-1")
	first := r.waitLines(2)
	// What a kill -9 leaves now: the mapping's bytes (page cache).
	gm.mu.Lock()
	snap := append([]byte(nil), gm.buf...)
	gm.mu.Unlock()
	rec, err := pointer.Decode(snap)
	if err != nil {
		t.Fatal(err)
	}
	p1 := first[1]
	t.Logf("page cache record at the kill: offset %d fpLen %d key %x epoch %016x; published %q at %d under %016x",
		rec.Offset, rec.FPLen, rec.FileKey, rec.Epoch, p1.Line, p1.Pos, p1.Epoch)
	// The process dies: nothing more reaches the disk.
	gm.dead.Store(true)
	close(gm.release)
	r.stop()
	if err := os.WriteFile(filepath.Join(dir, "app.ptr"), snap, 0o644); err != nil {
		t.Fatal(err)
	}
	// While stopped: copytruncate, the application writes its banner again.
	old, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in+".1", old, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, []byte(banner+"payload-2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r2 := newRig(t, dir, rigOpts{strategy: file.Committed}).start()
	r2.waitFor("payload-2", 20*time.Second, func() bool {
		for _, g := range r2.rec.all() {
			if g.Line == "payload-2" {
				return true
			}
		}
		return false
	})
	failed := false
	if int64(rec.FPLen) < p1.Pos {
		t.Errorf("record a kill -9 leaves holds %d first bytes while %q ending at %d was published under its epoch (want >= %d)", rec.FPLen, p1.Line, p1.Pos, p1.Pos)
		failed = true
	}
	for _, g := range r2.rec.all() {
		if g.Line == "payload-2" && g.Positioned && g.Epoch == p1.Epoch && g.Pos <= p1.Pos {
			t.Errorf("after the restart %q delivered under epoch %016x position %d, which named %q (an exactlyOnce sink skips it: lost)", g.Line, g.Epoch, g.Pos, p1.Line)
			failed = true
		}
	}
	if !failed {
		t.Logf("run 2: %+v", r2.rec.all())
	}
}
