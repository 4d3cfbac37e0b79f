package file

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"tailfeed/internal/fileutil"
	"time"
)

// Review (rev-u) of c55e695: glob streams awaiting a scan, PinKey/PinGone,
// leftUnread, settleOwed waiting for a scan, Resume/EndAt.

// a.log's stream commits its first five lines (the pointer names a.log by
// key), then reads three more that are not acknowledged and is closed as
// inactive owing their commit. The daemon is stopped (SIGTERM): Run ends,
// then — during the shutdown's drain — a.log is renamed within the glob
// (b.log, logrotate's olddir or a rename by the application) and the three
// lines are acknowledged. Close settles the owed commit; c55e695's
// settleOwed sees the file gone from its path with no scan having followed
// it and waits for a scan that never comes (Run has ended): the clean stop
// leaves the pointer at the five lines. The restart finds b.log by its key
// and delivers the three acknowledged lines again, with no crash. Before
// c55e695 the commit was made (the pointer already named the file).
// DESIGN §3 Commit: msync "at stop"; §2 every line once when nothing
// crashed; §10 the commit rule per stream, a rename within the glob keeps
// the stream.
func TestGlobOwedCommitMadeAtCleanStopAfterRenameWithinGlob(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	a := filepath.Join(dir, "a.log")
	if err := os.WriteFile(a, []byte("a-0\na-1\na-2\na-3\na-4\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ig, stopRun, stop := runGlobOn(t, filepath.Join(dir, "*.log"), data)
	if got := ig.popAll(time.Second); got != 5 {
		t.Fatalf("first turn delivered %d lines, want 5", got)
	}
	ig.waitFor(t, "a.log's first five lines committed", func() bool {
		rec, _, err := ig.pointer()
		return err == nil && rec.Offset == 20 && rec.FileKey != 0
	})
	appendTo(t, a, "a-5\na-6\na-7\n")
	var n uint64
	var s *gstream
	for end := time.Now().Add(5 * time.Second); n < 3 && time.Now().Before(end); {
		if b := ig.q.TryPop(); b != nil {
			n += uint64(b.Len()) // not acknowledged yet
			b.Release()
		} else {
			time.Sleep(2 * time.Millisecond)
		}
	}
	if n != 3 {
		t.Fatalf("after the append: %d lines, want 3", n)
	}
	ig.waitFor(t, "a.log's stream closed as inactive, owing the three lines' commit", func() bool {
		s = ig.g.byPath[a]
		return s != nil && s.st == stClosed && s.owe != nil
	})
	stopRun() // SIGTERM: Run ends, the drain and Close follow
	if err := os.Rename(a, filepath.Join(dir, "b.log")); err != nil {
		t.Fatal(err)
	}
	ig.q.AddDispatched(n) // the three lines acknowledged during the drain
	ig.pub.Poke()
	time.Sleep(50 * time.Millisecond)
	stop()
	rec, _, err := ig.pointer()
	t.Logf("pointer after the clean stop: offset %d key %x err %v", rec.Offset, rec.FileKey, err)
	ig2, _, _ := runGlobOn(t, filepath.Join(dir, "*.log"), data)
	got, _ := ig2.popEpochs(2*time.Second, true)
	t.Logf("delivered after the restart: %q", got)
	if rec.Offset != 32 {
		t.Errorf("every line of a.log acknowledged before a clean stop: pointer offset %d, want 32", rec.Offset)
	}
	if len(got) != 0 {
		t.Errorf("after a clean stop with every line acknowledged, the restart delivered %q again (want nothing)", got)
	}
}

// LATEST, one slot, no pointers: a.log and b.log present at start (b.log
// "b-old\n", 6 bytes: its end at the start). a.log's open is slow, b.log's
// stream waits for its first turn. Meanwhile b.log is truncated
// (copytruncate; a scan sees it at size 0) and two lines are written to it
// afresh — both after the start. b.log's first turn takes its end at
// EndAt (6, the old file's size) inside the new content: b-nw0 is skipped,
// delivered by nobody and counted by nobody. DESIGN §4 LATEST starts at the
// end and tails; a truncation is a new file read from 0 (§4 "Rotation,
// truncation": every new file gets a new epoch, read from its start);
// §10 LATEST's end is that of the files present at start — the file that
// was there is gone; "Nothing green over a loss".
func TestGlobLatestQueuedTruncatedBeforeFirstTurnReadsNewLines(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	for _, n := range []string{"a", "b"} {
		if err := os.WriteFile(filepath.Join(dir, n+".log"), []byte(n+"-old\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ig, _ := runOneSlotNoPointers(t, dir, data, Latest, 0, 2500*time.Millisecond, true)
	b := filepath.Join(dir, "b.log")
	var s *gstream
	ig.waitFor(t, "b.log's stream queued", func() bool {
		s = ig.g.byPath[b]
		return s != nil && s.st == stQueued
	})
	if err := os.Truncate(b, 0); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "a scan seeing b.log truncated", func() bool { return s.size == 0 })
	appendTo(t, b, "b-nw0\nb-nw1\n")
	got, _ := ig.popEpochs(5*time.Second, true)
	tails, bytes, _ := ig.lost()
	t.Logf("delivered: %q; lostTails %d lostBytes %d", got, tails, bytes)
	if !slices.Contains(got, "b-nw0") && tails == 0 {
		t.Errorf("b-nw0, written to b.log after the start (after a truncation the glob saw), neither delivered nor counted lost (LATEST)")
	}
}

// EARLIEST, no pointers, one slot (maxOpenFiles 2): a.log ("banner\n") is
// read and its stream closed (its Resume point: offset 7, fingerprint of
// "banner\n"). a.log is then copytruncated (a scan sees it at size 0: its
// stream is queued, b.log's slow open holding the slot) and the
// application, restarted, writes its banner again and a line. a.log's new
// source resumes at offset 7 since the first 7 bytes are "banner\n" again:
// the new banner line is skipped, delivered and counted by nobody, though
// the glob saw the truncation. DESIGN §4 Rotation, truncation: a file
// shorter than what was read is truncated, a new file read from 0 under a
// new epoch (the same-first-bytes blind spot is for a truncation nobody saw
// between two looks); "Nothing green over a loss".
func TestGlobEarliestResumeAfterSeenTruncationReadsFromStart(t *testing.T) {
	t.Parallel()
	ig, slow, a, b, sa, sb, first := twoClosedEarliest(t, "banner\n", "b-0\n")
	slow.Store(true)
	appendTo(t, b, "b-1\n") // b.log's stream opens again, slowly: it holds the slot
	ig.waitFor(t, "b.log's stream opening", func() bool { return sb.st == stOpen })
	if err := os.Truncate(a, 0); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "a scan seeing a.log truncated, its stream queued", func() bool { return sa.size == 0 && sa.st == stQueued })
	appendTo(t, a, "banner\nline-x\n")
	got, _ := ig.popEpochs(5*time.Second, true)
	tails, bytes, _ := ig.lost()
	t.Logf("first %q; after the truncation %q; lostTails %d lostBytes %d", first, got, tails, bytes)
	if !slices.Contains(got, "banner") && tails == 0 {
		t.Errorf("a.log truncated (seen by a scan) and written again: its new first line neither delivered nor counted; delivered %q", got)
	}
}

// Kubernetes layout: containers/c.log is a symlink to pods/0.log; the glob
// is containers/*.log and has one slot (maxOpenFiles 3), held by a.log's
// stream (its lines not yet acknowledged). c.log's stream waits for its
// first turn. The runtime rotates the container log: pods/0.log is
// renamed pods/0.log.1 and a new pods/0.log written. The glob finds c.log's
// old file gone from the glob; leftUnread looks for it by key only beside
// the link (containers/), not beside the link's final target, and counts
// its two lines lost though they sit in pods/0.log.1. DESIGN §4 Symlinks:
// generations are looked for beside the final target; a retarget (the
// target rotated) is a rotation, the old target read to its end; §10 a
// file renamed out of the glob is read to its end.
func TestGlobQueuedSymlinkedFileRotatedIsReadBesideTarget(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	cont, pods := filepath.Join(dir, "containers"), filepath.Join(dir, "pods")
	for _, d := range []string{cont, pods} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(cont, "a.log"), []byte("a-0\na-1\na-2\na-3\na-4\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(pods, "0.log")
	if err := os.WriteFile(target, []byte("c-old-0\nc-old-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(cont, "c.log")); err != nil {
		t.Fatal(err)
	}
	ig, _ := runGlobCfg(t, filepath.Join(cont, "*.log"), data, 200*time.Millisecond, func(c *GlobConfig) { c.MaxOpenFiles = 3 })
	if ig.g.maxSlots != 1 {
		t.Fatalf("maxSlots %d, want 1", ig.g.maxSlots)
	}
	n := ig.take(t) // a.log's lines, not acknowledged: its stream holds the slot
	var c *gstream
	ig.waitFor(t, "c.log's stream queued while a.log's stops", func() bool {
		c = ig.g.byPath[filepath.Join(cont, "c.log")]
		sa := ig.g.byPath[filepath.Join(cont, "a.log")]
		return c != nil && c.st == stQueued && sa != nil && sa.st == stStopping
	})
	if err := os.Rename(target, target+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(target, []byte("c-new-0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the scan seeing c.log's old file gone from the glob", func() bool { return c.gone })
	ig.q.AddDispatched(n)
	ig.pub.Poke()
	got, _ := ig.popEpochs(3*time.Second, true)
	tails, bytes, detail := ig.lost()
	t.Logf("delivered %q; lostTails %d lostBytes %d detail %q", got, tails, bytes, detail)
	if !slices.Contains(got, "c-old-0") || !slices.Contains(got, "c-old-1") {
		t.Errorf("c.log's target rotated (pods/0.log.1, beside the link's final target) before its stream's first turn: its lines not read")
	}
	if tails != 0 {
		t.Errorf("lostTails %d for a file still on disk beside the link's target, want 0", tails)
	}
}

// a.log's stream is open, its five lines published and not acknowledged.
// logrotate renames a.log to a-1.log (matched by *.log: the stream follows
// it, a scan sees the rename) and only then — the application reopening
// its log on the postrotate signal — is a new a.log created, seen by a
// later scan. vacated (c55e695) holds the barrier only when both are seen
// by the same scan: the new a.log's stream has no stream before it at its
// path and publishes while every line of the file previously at a.log is
// unacknowledged. DESIGN §10 "Order": the epoch barrier of §4 holds per
// path — a new file at a path is published after every line of the file
// previously at that path is acknowledged.
func TestGlobRenamedWithinGlobNewFileInLaterScanWaitsForBarrier(t *testing.T) {
	t.Parallel()
	dir, data, path := aLogIn(t, "a-0\na-1\na-2\na-3\na-4\n")
	ig, _ := runGlobQuiet(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond)
	n := ig.take(t) // not acknowledged
	var s *gstream
	ig.waitFor(t, "a.log's stream open", func() bool {
		s = ig.g.byPath[path]
		return s != nil && s.st == stOpen
	})
	if err := os.Rename(path, filepath.Join(dir, "a-1.log")); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the scan following a.log to a-1.log", func() bool { return s.path == filepath.Join(dir, "a-1.log") })
	if err := os.WriteFile(path, []byte("new-0\nnew-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the new a.log tracked", func() bool { ns := ig.g.byPath[path]; return ns != nil && ns != s })
	early, _ := ig.popEpochs(time.Second, true)
	ig.q.AddDispatched(n)
	ig.pub.Poke()
	late, _ := ig.popEpochs(time.Second, true)
	t.Logf("published while the old file's 5 lines were unacknowledged: %q; after: %q", early, late)
	if len(early) > 0 {
		t.Errorf("the new a.log published %q while the 5 lines of the file previously at a.log (now a-1.log) were unacknowledged: want it held by the per-path barrier", early)
	}
}

// One slot (maxOpenFiles 3), held by a.log's stream; b.log (5 lines) waits
// for its first turn and is deleted, and the application at once writes
// b.tmp — a name *.log does not match — in the same directory, which gets
// b.log's inode number (ext4 reuses a freed inode at once). The scan finds
// b.log gone; leftUnread looks beside its path by key alone (nothing of
// b.log was fingerprinted; fingerprintMatches accepts any content for an
// empty record) and takes b.tmp for b.log renamed out: a file the glob does
// not match is read and delivered under b.log's name, and b.log's five
// lines are counted by nobody. DESIGN §10: matched files only (a file out
// of the glob is read only as a matched file's rename, read to its end);
// a file that disappears with an unread tail counts in lostTails; §4
// "Nothing green over a loss". (The README's inode-reuse caveat is for a
// replacement *within* the glob before a scan.) The glob knows b.log's size
// at its last look: a file with the key but another size is not it.
func TestGlobQueuedUnreadDeletedInodeReusedOutsideGlobIsNotRead(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	for _, n := range []string{"a", "b"} {
		var sb []byte
		for i := range 5 {
			sb = append(sb, []byte(n+"-"+string(rune('0'+i))+"\n")...)
		}
		if err := os.WriteFile(filepath.Join(dir, n+".log"), sb, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ig, _ := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, func(c *GlobConfig) { c.MaxOpenFiles = 3 })
	if ig.g.maxSlots != 1 {
		t.Fatalf("maxSlots %d, want 1", ig.g.maxSlots)
	}
	n := ig.take(t) // a.log's lines, not acknowledged: its stream holds the slot
	var b *gstream
	bp := filepath.Join(dir, "b.log")
	ig.waitFor(t, "b.log's stream queued while a.log's stops", func() bool {
		b = ig.g.byPath[bp]
		sa := ig.g.byPath[filepath.Join(dir, "a.log")]
		return b != nil && b.st == stQueued && sa != nil && sa.st == stStopping
	})
	_, oldIno, err := fileutil.DevInoPath(bp)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(bp); err != nil {
		t.Fatal(err)
	}
	reused := false
	for i := 0; i < 200 && !reused; i++ { // the lowest free inode is taken first
		tmp := filepath.Join(dir, fmt.Sprintf("b-%d.tmp", i))
		if err := os.WriteFile(tmp, []byte("other-0\nother-1\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, ino, _ := fileutil.DevInoPath(tmp)
		reused = ino == oldIno
	}
	if !reused {
		t.Skipf("no new file got b.log's inode %d in 200 tries (this file system does not reuse it at once): cannot reproduce inode reuse here", oldIno)
	}
	ig.waitFor(t, "the scan seeing b.log gone", func() bool { return b.gone })
	ig.q.AddDispatched(n)
	ig.pub.Poke()
	got, _ := ig.popEpochs(2*time.Second, true)
	tails, bytes, detail := ig.lost()
	t.Logf("delivered %q; lostTails %d lostBytes %d detail %q", got, tails, bytes, detail)
	if slices.Contains(got, "other-0") {
		t.Errorf("b.tmp, not matched by *.log (a new file with a deleted b.log's inode number), was read as b.log's stream")
	}
	if tails == 0 {
		t.Errorf("b.log (5 lines, never read) deleted before its first turn: lostTails 0, want it counted")
	}
}

// EARLIEST, no pointers: a.log's two lines are read and acknowledged; a.log
// is then renamed within the glob (c.log, matched by *.log): the scan
// follows it, its source (pinned to a.log) reads it to its end and, the
// path missing for rotateWaitMillis, closes it and ends (WAITING_FOR_FILE,
// no current reader). closed() takes no Resume point from that source
// (ResumePoint nil: no current reader at Close) and, BytesRead > 0, drops
// the stream's — so when a line is appended to c.log the stream's new
// source reads c.log from its start: old-0 and old-1 delivered again with
// no crash. DESIGN §10: a rename within the glob keeps the stream (no
// re-read); §2 each line once when nothing crashed.
func TestGlobEarliestRenamedWithinGlobReadsOnNotAgain(t *testing.T) {
	t.Parallel()
	dir, data, path := aLogIn(t, "old-0\nold-1\n")
	ig, _ := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, func(c *GlobConfig) {
		c.Stream.Strategy = Earliest
		c.PointerDir = ""
	})
	first, _ := ig.popEpochs(time.Second, true)
	var s *gstream
	ig.waitFor(t, "a.log's stream open", func() bool {
		s = ig.g.byPath[path]
		return s != nil
	})
	c := filepath.Join(dir, "c.log")
	if err := os.Rename(path, c); err != nil {
		t.Fatal(err)
	}
	var resume *Resume
	ig.waitFor(t, "the stream followed to c.log and closed", func() bool {
		resume = s.resume
		return s.path == c && s.st == stClosed
	})
	t.Logf("closed stream's resume point: %+v", resume)
	appendTo(t, c, "new-0\n")
	got, _ := ig.popEpochs(2*time.Second, true)
	t.Logf("first %q; after the rename and an append %q", first, got)
	if len(got) != 1 || got[0] != "new-0" {
		t.Errorf("after a.log was renamed within the glob (c.log) and a line appended: delivered %q, want [new-0]", got)
	}
}

// LATEST, one slot, no pointers: a.log and b.log present at start, b.log
// empty (just rotated). a.log's open is slow; b.log's stream waits for its
// first turn and a line is written to it meanwhile — after the start.
// c55e695's EndAt takes LATEST's end at the size found at the start, but
// an EndAt of 0 reads as unset (EndAt > 0): b.log's first turn starts at
// its size at the open and b-new is skipped, delivered and counted by
// nobody. DESIGN §10: LATEST reads files present at start from their end
// (the end at the start: 0 here); §4 LATEST starts at the end and tails.
func TestGlobLatestEmptyAtStartQueuedKeepsLinesWrittenAfterStart(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.log"), []byte("a-old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b.log"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ig, _ := runOneSlotNoPointers(t, dir, data, Latest, 0, 1500*time.Millisecond, true)
	var b *gstream
	ig.waitFor(t, "b.log's stream queued", func() bool {
		b = ig.g.byPath[filepath.Join(dir, "b.log")]
		return b != nil && b.st == stQueued
	})
	appendTo(t, filepath.Join(dir, "b.log"), "b-new\n") // after the start, before b.log's turn
	got, _ := ig.popEpochs(4*time.Second, true)
	tails, _, _ := ig.lost()
	ig.g.mu.Lock()
	st, read := b.st, b.offset
	if b.src != nil {
		read = b.src.ReadPos()
	}
	ig.g.mu.Unlock()
	t.Logf("delivered: %q; lostTails %d; b.log's stream state %d, read to %d", got, tails, st, read)
	if !slices.Contains(got, "b-new") && tails == 0 {
		t.Errorf("b-new, appended to b.log (empty at the start) while its stream waited for its first turn, neither delivered nor counted (LATEST)")
	}
}

// LATEST (no pointers): a.log holds three lines at the start; its stream
// starts at its end and reads nothing (nothing is appended). a.log is then
// deleted (or rotated away with nothing unread). Its stream read no byte
// (touched false) and its first turn is over (fromEnd cleared), so unread()
// holds and leftUnread counts the whole file — bytes LATEST was never to
// read, all written before the start — as lost: lostTails 1, lostBytes 18,
// the feed lossy with nothing lost. DESIGN §4 "Nothing green over a loss"
// counts lines skipped, never lines the strategy does not read; §10 a file
// read to its end and gone is not a lost tail. Both when the stream is
// open at the deletion (closed()'s leftUnread) and when it was closed as
// inactive first (scan's).
func TestGlobLatestIdleFileDeletedIsNotALoss(t *testing.T) {
	t.Parallel()
	for _, closeFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("closedFirst=%v", closeFirst), func(t *testing.T) {
			dir, data := t.TempDir(), t.TempDir()
			path := filepath.Join(dir, "a.log")
			if err := os.WriteFile(path, []byte("old-0\nold-1\nold-2\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			ig, _ := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, func(c *GlobConfig) {
				c.Stream.Strategy = Latest
				c.PointerDir = ""
				if closeFirst {
					c.CloseInactive = 100 * time.Millisecond
				}
			})
			var s *gstream
			ig.waitFor(t, "a.log's stream open, caught up", func() bool {
				s = ig.g.byPath[path]
				return s != nil && s.st == stOpen && s.src.State() == CaughtUp
			})
			if closeFirst {
				ig.waitFor(t, "a.log's stream closed as inactive", func() bool { return s.st == stClosed })
			}
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			ig.waitFor(t, "a.log's stream gone and closed", func() bool { return s.gone && s.st == stClosed })
			got, _ := ig.popEpochs(500*time.Millisecond, true)
			tails, bytes, detail := ig.lost()
			t.Logf("delivered %q; lostTails %d lostBytes %d detail %q", got, tails, bytes, detail)
			if tails != 0 || bytes != 0 {
				t.Errorf("LATEST, a.log idle (nothing appended after the start) deleted: lostTails %d lostBytes %d, want 0 0", tails, bytes)
			}
		})
	}
}

// COMMITTED, one slot (maxOpenFiles 3): a.log's five lines are published,
// not acknowledged, never committed. a.log is renamed within the glob
// (c.log; the scan follows it); its source, pinned to a.log, reads it to
// its end and closes its reader (WAITING_FOR_FILE, no current reader).
// b.log appears and takes the slot: a.log's stream is stopped and closes
// owing its commit — with no head (HeadAtClose 0: no current reader at
// Close). The lines are then acknowledged: commitOwed commits without
// binding the file (o.headLen 0). A line appended to c.log starts the
// stream again: the five lines must not come again (no crash). DESIGN §10
// a rename within the glob keeps the stream; §2 once when nothing crashed.
func TestGlobOwedAfterRenameWithinGlobNoReaderIsNotReadAgain(t *testing.T) {
	t.Parallel()
	dir, data, path := aLogIn(t, "a-0\na-1\na-2\na-3\na-4\n")
	ig, _ := runGlobWith(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, func(c *GlobConfig) { c.MaxOpenFiles = 3 },
		func(g *Glob) { g.drainBound = 300 * time.Millisecond })
	n := ig.take(t)
	var s *gstream
	ig.waitFor(t, "a.log's stream open", func() bool { s = ig.g.byPath[path]; return s != nil && s.st == stOpen })
	c := filepath.Join(dir, "c.log")
	if err := os.Rename(path, c); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the stream followed to c.log, its source waiting for its file", func() bool {
		return s.path == c && s.st == stOpen && s.src.State() == WaitingForFile
	})
	if err := os.WriteFile(filepath.Join(dir, "b.log"), []byte("b-0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "a.log's stream closed owing its commit", func() bool { return s.st == stClosed && s.owe != nil })
	hl := s.owe.headLen
	ig.q.AddDispatched(n)
	ig.pub.Poke()
	ig.waitFor(t, "the owed commit made", func() bool { return s.owe == nil })
	appendTo(t, c, "new-0\n")
	got, _ := ig.popEpochs(2*time.Second, true)
	t.Logf("owed head length %d; after the acknowledgements and an append to c.log: %q", hl, got)
	for _, l := range got {
		if strings.HasPrefix(l, "a-") {
			t.Errorf("a.log's acknowledged lines delivered again after a rename within the glob: %q", got)
			break
		}
	}
}

// COMMITTED: a.log's line a-0 is read, acknowledged and committed (the
// pointer names a.log), its stream closed as inactive. a-1 is appended:
// the stream is started again, and between its source's stat and open
// (OpenHook) a.log is moved out of the glob to another directory (not
// beside its path) and the scan, meanwhile, finds it gone. The source was
// started with PinGone unset: it finds the file neither at its path nor
// beside it and reports NotFound, counting nothing. closed() re-queues a
// NotFound stream only while !s.gone; gone, it takes the stream's source
// for one that read its file to its end (WAITING_FOR_FILE: "ended") and
// forgetClosed resets its pointer to the empty record: a-1, never read, is
// counted by nobody. DESIGN §10 a file that disappears with an unread tail
// counts in lostTails; §4 "Nothing green over a loss".
func TestGlobNotFoundSourceThenScanGoneCountsTail(t *testing.T) {
	t.Parallel()
	dir, other, data := t.TempDir(), t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "a.log")
	if err := os.WriteFile(path, []byte("a-0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var armed atomic.Bool
	ig, _ := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, func(c *GlobConfig) {
		c.CloseInactive = 100 * time.Millisecond
		c.Stream.OpenHook = func() {
			if armed.CompareAndSwap(true, false) {
				os.Rename(path, filepath.Join(other, "a.log")) // moved between the stat and the open
				time.Sleep(500 * time.Millisecond)             // the scan sees it gone meanwhile
			}
		}
	})
	first, _ := ig.popEpochs(500*time.Millisecond, true)
	var s *gstream
	ig.waitFor(t, "a-0 committed, a.log's stream closed", func() bool {
		s = ig.g.byPath[path]
		rec, _, err := ig.pointer()
		return s != nil && s.st == stClosed && s.owe == nil && err == nil && rec.Offset == 4 && rec.FileKey != 0
	})
	armed.Store(true)
	appendTo(t, path, "a-1\n")
	ig.waitFor(t, "a.log's stream gone and closed", func() bool { return s.gone && s.st == stClosed && !armed.Load() })
	got, _ := ig.popEpochs(time.Second, true)
	tails, bytes, detail := ig.lost()
	rec, _, _ := ig.pointer()
	t.Logf("first %q; then %q; lostTails %d lostBytes %d detail %q; pointer %+v", first, got, tails, bytes, detail, rec)
	if !slices.Contains(got, "a-1") && tails == 0 {
		t.Errorf("a-1, appended to a.log before it was moved out of the glob as its stream opened it: neither delivered nor counted")
	}
}

// LATEST, no pointers: a.log holds old-0 at the start; its stream starts at
// its end, reads new-0 (appended after the start) and is closed as
// inactive. closed() keeps a Resume point only from a source whose
// strategy was Earliest; the first turn's was Latest, so none is kept, and
// when new-1 is appended the stream's next source (Earliest, no Resume)
// reads a.log from its start: old-0 (before the start) and new-0 (already
// delivered) come again, with no crash. DESIGN §10/README (c55e695): a
// stream closed by closeInactiveMillis is read on from where it stopped
// when opened again; §2 once when nothing crashed; §4 LATEST starts at the
// end.
func TestGlobLatestReopenedAfterFirstTurnReadsOn(t *testing.T) {
	t.Parallel()
	dir, data, path := aLogIn(t, "old-0\n")
	ig, _ := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, func(c *GlobConfig) {
		c.Stream.Strategy = Latest
		c.PointerDir = ""
		c.CloseInactive = 300 * time.Millisecond
	})
	var s *gstream
	ig.waitFor(t, "a.log's stream open, caught up", func() bool {
		s = ig.g.byPath[path]
		return s != nil && s.st == stOpen && s.src.State() == CaughtUp
	})
	appendTo(t, path, "new-0\n")
	first, _ := ig.popEpochs(time.Second, true)
	ig.waitFor(t, "a.log's stream closed as inactive", func() bool { return s.st == stClosed })
	appendTo(t, path, "new-1\n")
	got, _ := ig.popEpochs(2*time.Second, true)
	t.Logf("first turn %q; after the reopen %q", first, got)
	if len(got) != 1 || got[0] != "new-1" {
		t.Errorf("LATEST, a.log's stream closed as inactive after its first turn, then new-1 appended: delivered %q, want [new-1]", got)
	}
}

// LATEST (no pointers): a.log holds three lines at the start; its stream
// starts at its end, nothing is appended, and it is closed as inactive.
// logrotate then renames a.log to a.log.1 (beside it, not matched by
// *.log). unread() holds for the stream (touched false: it read no byte;
// fromEnd cleared after its first turn), so leftUnread finds a.log.1 by
// key and the stream reads it — from its start (Earliest, no Resume):
// the three lines written before the start, which LATEST never delivers,
// are delivered. DESIGN §4 LATEST starts at the end and tails; §10 a file
// renamed out of the glob is read to its end (from where its stream was).
func TestGlobLatestIdleFileRenamedOutIsNotReadFromStart(t *testing.T) {
	t.Parallel()
	dir, data, path := aLogIn(t, "old-0\nold-1\nold-2\n")
	ig, _ := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, func(c *GlobConfig) {
		c.Stream.Strategy = Latest
		c.PointerDir = ""
		c.CloseInactive = 100 * time.Millisecond
	})
	var s *gstream
	ig.waitFor(t, "a.log's stream closed as inactive after its first turn", func() bool {
		s = ig.g.byPath[path]
		return s != nil && s.st == stClosed && !s.fromEnd
	})
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "a.log's stream gone", func() bool { return s.gone })
	got, _ := ig.popEpochs(2*time.Second, true)
	tails, bytes, _ := ig.lost()
	t.Logf("delivered %q; lostTails %d lostBytes %d", got, tails, bytes)
	if len(got) != 0 {
		t.Errorf("LATEST, a.log idle since the start renamed out of the glob: delivered %q (written before the start), want nothing", got)
	}
}

// EARLIEST, no pointers, one slot (maxOpenFiles 2): a.log's a-0 is read
// and its stream closed (touched, its Resume point kept). b.log's stream
// holds the slot (a slow open) when a-new is appended to a.log (a.log's
// stream queued, behind) and logrotate renames a.log to a.log.1 (beside
// it; *.log does not match it). The scan finds it gone; its stream is not
// unread (touched), so leftUnread does not look beside its path, and its
// source (no pointer) has no key to look for it by: it finds nothing and
// counts nothing. a-new is neither read nor counted. With pointers the
// source finds the file beside its path by key and reads it to its end.
// DESIGN §10 a file renamed out of the glob is read to its end; a file
// that disappears with an unread tail counts in lostTails; §4 "Nothing
// green over a loss".
func TestGlobEarliestQueuedRenamedOutBesidePathIsRead(t *testing.T) {
	t.Parallel()
	ig, slow, a, b, sa, sb, first := twoClosedEarliest(t, "a-0\n", "b-0\n")
	slow.Store(true)
	appendTo(t, b, "b-1\n") // b.log's stream opens again, slowly: it holds the slot
	ig.waitFor(t, "b.log's stream opening", func() bool { return sb.st == stOpen })
	appendTo(t, a, "a-new\n")
	ig.waitFor(t, "a.log's stream queued", func() bool { return sa.st == stQueued })
	if err := os.Rename(a, a+".1"); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the scan seeing a.log gone from the glob", func() bool { return sa.gone })
	got, _ := ig.popEpochs(5*time.Second, true)
	tails, bytes, _ := ig.lost()
	t.Logf("first %q; then %q; lostTails %d lostBytes %d", first, got, tails, bytes)
	if !slices.Contains(got, "a-new") && tails == 0 {
		t.Errorf("a-new, appended to a.log before it was renamed out of the glob beside its path (its stream queued): neither delivered nor counted (EARLIEST)")
	}
}

// COMMITTED: a.log's five lines are read, acknowledged and committed; its
// stream stays open. a.log is renamed out of the glob beside its path
// (a.log.1: an operator's mv, a tool's temporary rename) and, a scan having
// seen it gone, renamed back before its stream closed it (within
// rotateWaitMillis). The scan retires its key as soon as it is gone from
// the glob, though its stream still holds it open: the file back at a.log
// is a new stream read from its start — a-0..a-4 delivered again with no
// crash. DESIGN §10: a key is retired once its file was seen deleted, or
// renamed out *and closed*; a rename out of the glob is read to its end.
func TestGlobRenamedOutAndBackWhileOpenIsNotReadAgain(t *testing.T) {
	t.Parallel()
	dir, data, path := aLogIn(t, "a-0\na-1\na-2\na-3\na-4\n")
	ig, _ := runGlobWith(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, func(c *GlobConfig) {
		c.Stream.RotateWait = 2 * time.Second
	}, nil)
	first, _ := ig.popEpochs(time.Second, true)
	var s *gstream
	ig.waitFor(t, "a.log's lines committed, its stream open", func() bool {
		s = ig.g.byPath[path]
		rec, _, err := ig.pointer()
		return s != nil && s.st == stOpen && err == nil && rec.Offset == 20
	})
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the scan seeing a.log gone", func() bool { return s.gone })
	if err := os.Rename(path+".1", path); err != nil {
		t.Fatal(err)
	}
	got, _ := ig.popEpochs(2*time.Second, true)
	t.Logf("first %q; after the rename out and back %q", first, got)
	if len(got) != 0 {
		t.Errorf("a.log renamed out of the glob and back while its stream was open: delivered %q again, want nothing", got)
	}
}

// LATEST (no pointers): a.log holds three lines at the start. Between its
// stream's first source's stat and open (OpenHook) it is renamed within
// the glob (c.log). The source reports NotFound and the stream is queued
// again awaiting a scan (c55e695) — but start() cleared fromEnd on that
// first turn, so its next source is EARLIEST with no Resume: c.log is read
// from its start and the three lines written before the start are
// delivered. DESIGN §4 LATEST starts at the end; §10 files present at start
// are read from their end, a rename within the glob keeps the stream.
func TestGlobLatestMovedAtFirstOpenStaysAtEnd(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	path, c := filepath.Join(dir, "a.log"), filepath.Join(dir, "c.log")
	if err := os.WriteFile(path, []byte("old-0\nold-1\nold-2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var armed atomic.Bool
	armed.Store(true)
	ig, _ := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, func(cf *GlobConfig) {
		cf.Stream.Strategy = Latest
		cf.PointerDir = ""
		cf.Stream.OpenHook = func() {
			if armed.CompareAndSwap(true, false) {
				os.Rename(path, c) // moved between the stat and the open
			}
		}
	})
	got, _ := ig.popEpochs(3*time.Second, true)
	var sp string
	ig.g.mu.Lock()
	for _, s := range ig.g.byKey {
		sp = s.path
	}
	ig.g.mu.Unlock()
	t.Logf("delivered %q; stream at %s", got, sp)
	if len(got) != 0 {
		t.Errorf("LATEST, a.log (present at start) renamed to c.log as its stream first opened it: delivered %q (written before the start), want nothing", got)
	}
}

// ONCE_EARLIEST, one slot (maxOpenFiles 2): a.log and b.log, 6,000 lines
// each, nothing acknowledged for a while: a.log's stream is preempted after
// its turn with bytes unread (queued again, touched) and b.log's stream
// takes the slot. a.log is then renamed out of the glob beside its path
// (a.log.1). Its stream is not unread (touched), so leftUnread does not
// handle it (nor mark it done); its once source (no pointer) finds nothing.
// Observed: its 1,904 unread lines are counted lost though a.log.1 is
// beside its path, and the stream stays closed, gone, not done: the feed
// is BEHIND for ever, never END_OF_STREAM. DESIGN §10 ONCE_EARLIEST: END_OF_STREAM when
// all are done; a file that disappears with an unread tail counts in
// lostTails; a rename out of the glob is read to its end.
func TestGlobOnceTouchedQueuedRenamedOutEnds(t *testing.T) {
	t.Parallel()
	for _, deleted := range []bool{false, true} {
		t.Run(fmt.Sprintf("deleted=%v", deleted), func(t *testing.T) { onceTouchedQueuedGone(t, deleted) })
	}
}

// onceTouchedQueuedGone: a.log renamed out beside its path, or deleted
// (the loss is then rightly counted, but the feed never ends either).
func onceTouchedQueuedGone(t *testing.T, deleted bool) {
	dir, data := t.TempDir(), t.TempDir()
	for _, n := range []string{"a", "b"} {
		var sb strings.Builder
		for i := range 6000 {
			fmt.Fprintf(&sb, "%s-%05d\n", n, i)
		}
		if err := os.WriteFile(filepath.Join(dir, n+".log"), []byte(sb.String()), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ig, _ := runGlobWith(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, func(c *GlobConfig) {
		c.Stream.Strategy = OnceEarliest
		c.PointerDir = ""
		c.MaxOpenFiles = 2
	}, func(g *Glob) { g.drainBound = 200 * time.Millisecond })
	a := filepath.Join(dir, "a.log")
	var s *gstream
	ig.waitFor(t, "a.log's stream preempted with bytes unread, queued", func() bool {
		s = ig.g.byPath[a]
		return s != nil && s.st == stQueued && s.touched
	})
	move := func() error { return os.Rename(a, a+".1") }
	if deleted {
		move = func() error { return os.Remove(a) }
	}
	if err := move(); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the scan seeing a.log gone", func() bool { return s.gone })
	lines := ig.popLines(5 * time.Second)
	for l, c := range ig.popLines(5 * time.Second) {
		lines[l] += c
	}
	na, nb := 0, 0
	for l, c := range lines {
		if strings.HasPrefix(l, "a-") {
			na += c
		} else {
			nb += c
		}
	}
	st := ig.g.State()
	tails, bytes, _ := ig.lost()
	ig.g.mu.Lock()
	sst, done, sg := s.st, s.done, s.gone
	ig.g.mu.Unlock()
	t.Logf("a.log lines delivered %d of 6000, b.log %d; feed %v; lostTails %d lostBytes %d; a.log's stream state %d done %v gone %v", na, nb, st, tails, bytes, sst, done, sg)
	if st != EndOfStream {
		t.Errorf("ONCE_EARLIEST: feed %v after every file was read or gone, want END_OF_STREAM", st)
	}
	if na < 6000 && tails == 0 {
		t.Errorf("a.log: %d of its 6000 lines delivered and no loss counted", na)
	}
}
