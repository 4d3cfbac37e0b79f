package file

import (
	"fmt"
	"strings"

	"os"
	"path/filepath"
	"tailfeed/pointer"
	"testing"
	"time"
)

// Review s7_r2 (d6c611a..4947625): the unread list, besideAtStart.

// Rule: DESIGN §4 "Nothing green over a loss", §10 a file that disappears
// with an unread tail counts in lostTails; README: a file in the glob
// still waiting for its first turn at a stop (no pointer yet) is named in
// unread.list, and one the start does not find counts lostTails 1.
// Case: COMMITTED, *.log, maxOpenFiles 2 (one stream at a time): a.log
// holds the slot (nothing acknowledged), b.log waits for its first turn,
// never read. b.log is deleted just before a clean stop, after the last
// scan (scanInterval long). waitingAtStop lists b.log, but writeUnreadList
// drops every entry whose file no longer exists ("gone since the last
// look: the glob counted it, or will not know it either way") — nobody
// counted it: the glob's last look saw it waiting.
// Expected: b.log's 3 lines counted lost (at the stop or at the restart):
// lostTails 1, lostBytes its size. Observed: lostTails 0 across both runs,
// the feed lossless with b.log's lines never delivered.
func TestRevS7bWaitingFileDeletedJustBeforeStopIsCounted(t *testing.T) {
	t.Parallel()
	dir, data, a := aLogIn(t, numbered("a", 10000))
	b := filepath.Join(dir, "b.log")
	bLines := numbered("b", 3)
	if err := os.WriteFile(b, []byte(bLines), 0o600); err != nil {
		t.Fatal(err)
	}
	pattern := filepath.Join(dir, "*.log")
	cfg := func(c *GlobConfig) {
		c.MaxOpenFiles = 2
		c.ScanInterval = time.Hour // no scan between the deletion and the stop
		c.Stream.NoNotify = true   // (nor an event's: the window is the same, only wider)
	}
	ig, stop := runGlobCfg(t, pattern, data, 200*time.Millisecond, cfg)
	ig.waitFor(t, "a.log open, b.log waiting for its first turn", func() bool {
		sa, sb := ig.g.byPath[a], ig.g.byPath[b]
		return sa != nil && sa.st == stOpen && sb != nil && sb.st == stQueued && sb.ptrPath == ""
	})
	if err := os.Remove(b); err != nil {
		t.Fatal(err)
	}
	stop()
	tails1, bytes1, detail1 := ig.lost()
	_, listErr := os.Stat(filepath.Join(ig.ptrDir, unreadListName))
	ig2, stop2 := runGlobCfg(t, pattern, data, 200*time.Millisecond, cfg)
	ig2.popEpochs(time.Second, true)
	tails2, bytes2, detail2 := ig2.lost()
	stop2()
	if tails1+tails2 != 1 || bytes1+bytes2 != uint64(len(bLines)) {
		t.Fatalf("b.log, waiting for its first turn, deleted just before a clean stop: stop lostTails %d lostBytes %d (%q), unread list stat err %v; restart lostTails %d lostBytes %d (%q); want 1 and %d in all",
			tails1, bytes1, detail1, listErr, tails2, bytes2, detail2, len(bLines))
	}
}

// Rule: README (config reload): a glob feed whose new exclude removes a
// file still at its path stops reading it, as a changed path does: no
// loss is counted, read to its end or not (this change's (d), excludedAt, now unmatchedAt).
// Case: COMMITTED, *.log, maxOpenFiles 2: a.log holds the slot, b.log
// waits for its first turn, never read, no pointer: the clean stop names
// it in unread.list. The (reload's) restart excludes b.log, which is still
// at its path, untouched. countUnreadGone looks for it only among the
// matched files (g.keys), not finding it there counts it "gone": lostTails
// 1, lostBytes its size, the feed lossy, while excludedAt (now unmatchedAt) treats the same
// file with a pointer as no loss.
// Expected: lostTails 0 (nothing gone: the operator's choice). Observed:
// lostTails 1, lostBytes 12 ("tracked and never read ... is gone").
func TestRevS7bUnreadListFileExcludedAtRestartIsNoLoss(t *testing.T) {
	t.Parallel()
	dir, data, a := aLogIn(t, numbered("a", 10000))
	b := filepath.Join(dir, "b.log")
	if err := os.WriteFile(b, []byte(numbered("b", 3)), 0o600); err != nil {
		t.Fatal(err)
	}
	pattern := filepath.Join(dir, "*.log")
	one := func(c *GlobConfig) { c.MaxOpenFiles = 2 }
	ig, stop := runGlobCfg(t, pattern, data, 200*time.Millisecond, one)
	ig.waitFor(t, "a.log open, b.log waiting for its first turn", func() bool {
		sa, sb := ig.g.byPath[a], ig.g.byPath[b]
		return sa != nil && sa.st == stOpen && sb != nil && sb.st == stQueued && sb.ptrPath == ""
	})
	stop()
	if _, err := os.Stat(filepath.Join(ig.ptrDir, unreadListName)); err != nil {
		t.Fatalf("no unread list after the stop: %v", err)
	}
	excl := func(c *GlobConfig) { c.MaxOpenFiles = 2; c.Exclude = []string{b} }
	ig2, stop2 := runGlobCfg(t, pattern, data, 200*time.Millisecond, excl)
	ig2.popEpochs(time.Second, true)
	tails, bytes, detail := ig2.lost()
	stop2()
	if _, err := os.Stat(b); err != nil {
		t.Fatalf("b.log should still be at its path: %v", err)
	}
	if tails != 0 || bytes != 0 {
		t.Fatalf("b.log, never read, still at its path, excluded by the restart's config: lostTails %d lostBytes %d (%q); want 0, 0 (excluded is no loss)",
			tails, bytes, detail)
	}
}

// Rule: DESIGN §4 "Restart after rotation" / §10: a file is found at a
// restart by key + fingerprint, and a file born after the pointer's file
// was seen is not it (inode reuse); README: findBeside refuses "a file
// born after the glob first saw it". besideAtStart (this change) has no
// such guard.
// Case: COMMITTED, *.log, rotateWaitMillis long: a.log ("x-0".."x-2") is
// read and committed; logrotate renames it to a.log.1 (out of the glob)
// and a new a.log is read and committed; the daemon stops within
// rotateWaitMillis, so a.log.1's pointer still names it. While stopped
// a.log.1 is deleted, and another file, created later, gets its inode
// (ext4 reuses it) and starts with the same bytes (a common header), and
// is put beside a.log. At the restart besideAtStart takes it for the
// pointer's file (key + first bytes, no birth-time check) and reads it
// from the old pointer's offset: a file out of the glob, never the
// pointer's, delivered in part ("other-3"), and the pointer's file, gone,
// is not counted.
// Expected: nothing of the later file delivered; the pointer's file gone
// while stopped counted (lostTails 1, as countGone does without a file
// beside). Observed: "other-3" delivered, lostTails 0.
func TestRevS7bBesideAtStartTakesAFileBornLater(t *testing.T) {
	t.Parallel()
	dir, data, a := aLogIn(t, numbered("x", 3))
	pattern := filepath.Join(dir, "*.log")
	cfg := func(c *GlobConfig) { c.Stream.RotateWait = time.Minute }
	ig, stop := runGlobCfg(t, pattern, data, 200*time.Millisecond, cfg)
	if got, _ := ig.popEpochs(time.Second, true); len(got) != 3 {
		t.Fatalf("first run delivered %q, want x-0..x-2", got)
	}
	oldIno := inoOf(t, a)
	committed := func(n int) func() bool {
		return func() bool {
			ptrs, _ := filepath.Glob(filepath.Join(ig.ptrDir, "*.ptr"))
			c := 0
			for _, p := range ptrs {
				if rec, err := pointer.Inspect(p); err == nil && rec.FileKey != 0 && rec.FPLen > 0 && rec.Offset > 0 {
					c++
				}
			}
			return c == n
		}
	}
	waitTrue(t, "a.log committed", committed(1))
	old := a + ".1"
	if err := os.Rename(a, old); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a, []byte("n-0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	var got []string
	for time.Now().Before(deadline) && len(got) < 1 {
		l, _ := ig.popEpochs(200*time.Millisecond, true)
		got = append(got, l...)
	}
	waitTrue(t, "the old and the new a.log committed", committed(2))
	stop()
	// While stopped: a.log.1 is deleted; a later file reuses its inode.
	if err := os.Remove(old); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	later := numbered("x", 3) + "other-3\n"
	var extra []string
	found := ""
	for i := range 2000 {
		p := filepath.Join(dir, fmt.Sprintf("tmp-%d", i))
		if err := os.WriteFile(p, []byte(later), 0o600); err != nil {
			t.Fatal(err)
		}
		if inoOf(t, p) == oldIno {
			found = p
			break
		}
		extra = append(extra, p)
	}
	for _, p := range extra {
		os.Remove(p)
	}
	if found == "" {
		t.Skip("the filesystem did not reuse the inode")
	}
	if err := os.Rename(found, old); err != nil {
		t.Fatal(err)
	}
	ig2, stop2 := runGlobCfg(t, pattern, data, 200*time.Millisecond, cfg)
	got2, _ := ig2.popEpochs(2*time.Second, true)
	tails, bytes, detail := ig2.lost()
	stop2()
	if strings.Contains(strings.Join(got2, ","), "other-3") || tails != 1 {
		t.Fatalf("a file born while stopped with a.log.1's inode and first bytes, beside a.log: restart delivered %q, lostTails %d lostBytes %d (%q); want none of it delivered and a.log.1's pointer counted gone (lostTails 1)",
			got2, tails, bytes, detail)
	}
}
