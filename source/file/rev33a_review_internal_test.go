package file

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tailfeed/pointer"
)

// Review 33a's findings on listing waiting files at once (listAtOnce), both
// fixed in liveHeads / liveUnreadDue (noHead).

// TestRev33AXListedHeadGrowsWithFile: listed at once (listAtOnce), a
// waiting file's entry takes the first bytes it has at the scan that
// finds it — often a partial first line — and liveHeads keeps them
// (re-read only for another stream or a shorter file) while the file
// grows and its size is written again. A restart's identity check of the
// entry (key + those first bytes) rests on a few bytes: a deletion while
// down plus an inode reuse by a file with the same short prefix (a
// timestamp) reads as "found in the glob", nothing counted.
func TestRev33AXListedHeadGrowsWithFile(t *testing.T) {
	t.Parallel()
	g, dir := newListGlob(t)
	a := filepath.Join(dir, "a.log")
	if err := os.WriteFile(a, []byte("2026-12-06 "), 0o600); err != nil {
		t.Fatal(err)
	}
	const key = 42
	s := &gstream{path: a, key: key, st: stQueued, size: 11}
	g.byKey[key] = s
	now := time.Now()
	ws, ok := g.liveUnreadDue(now)
	if !ok {
		t.Fatal("not listed at once")
	}
	g.writeLiveUnread(ws)
	more := strings.Repeat("14:00:00 line of the first writer\n", 200)
	f, _ := os.OpenFile(a, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(more)
	f.Close()
	s.size = int64(11 + len(more))
	ws, ok = g.liveUnreadDue(now.Add(2 * unreadListResize))
	if !ok {
		t.Fatal("grown, not written again")
	}
	g.writeLiveUnread(ws)
	got := g.live.written[key]
	if want := min(int(s.size), pointer.MaxFingerprint); got.FPLen != want {
		t.Errorf("listed with its first %d bytes after it grew to %d (size written %d); want %d", got.FPLen, s.size, got.Size, want)
	}
}

// TestRev33AXUnreadableHeadNotRewrittenEveryPass: a waiting file whose
// first bytes cannot be read (liveHeads leaves it out: n 0) stays "new"
// (not in written) and listAtOnce makes it urgent at every pass: the whole
// list is written again (fsync of file and directory) at every
// housekeeping pass and every scan while it waits — before, once per
// unreadListDelay.
func TestRev33AXUnreadableHeadNotRewrittenEveryPass(t *testing.T) {
	t.Parallel()
	g, dir := newListGlob(t)
	for i := range 1000 {
		p := filepath.Join(dir, fmt.Sprintf("f%04d.log", i))
		if err := os.WriteFile(p, []byte("line\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		k := uint64(1000 + i)
		g.byKey[k] = &gstream{path: p, key: k, st: stQueued, size: 5}
	}
	// Unreadable (another user's 0600 file for a non-root daemon): simulated
	// by a path that cannot be opened.
	g.byKey[7] = &gstream{path: filepath.Join(dir, "locked.log"), key: 7, st: stQueued, size: 5}
	now := time.Now()
	writes := 0
	for i := range 20 {
		if ws, ok := g.liveUnreadDue(now.Add(time.Duration(i) * 50 * time.Millisecond)); ok {
			g.writeLiveUnread(ws)
			writes++
		}
	}
	if writes > 2 {
		t.Errorf("nothing changed but the unreadable file: the list of %d entries written %d times in 20 passes (1 s)", len(g.live.written), writes)
	}
}
