package file

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/internal/fileutil"
	"tailfeed/overload"
	"tailfeed/pointer"
)

// Review of ca9d31f (a queued stream whose file left its path waits for a
// scan; Source.nameFile names the file in a pointer that names none yet).

// runGlobQuiet runs a glob feed over pattern with its pointers under data,
// streams never closed as inactive; stop cancels the manager, drains for
// drain (cut short: lines not acknowledged stay so) and closes the feed.
func runGlobQuiet(t *testing.T, pattern, data string, drain time.Duration) (ig *internalGlob, stop func()) {
	t.Helper()
	return runGlobCfg(t, pattern, data, drain, nil)
}

// runGlobCfg is runGlobQuiet with the config changed by set (nil: none)
// before the glob is made.
func runGlobCfg(t *testing.T, pattern, data string, drain time.Duration, set func(*GlobConfig)) (ig *internalGlob, stop func()) {
	t.Helper()
	return runGlobWith(t, pattern, data, drain, set, nil)
}

// runGlobWith is runGlobCfg with pre (nil: none) run on the glob before
// its manager starts.
func runGlobWith(t *testing.T, pattern, data string, drain time.Duration, set func(*GlobConfig), pre func(*Glob)) (ig *internalGlob, stop func()) {
	t.Helper()
	ig, _, stop = runGlobKill(t, pattern, data, drain, set, pre)
	return ig, stop
}

// runGlobKill is runGlobWith that also returns kill, which ends the
// manager's Run without the drain and the final commit (a kill -9 as far
// as the pointers on disk go; stop, or the test's cleanup, closes the rest).
func runGlobKill(t *testing.T, pattern, data string, drain time.Duration, set func(*GlobConfig), pre func(*Glob)) (ig *internalGlob, kill, stop func()) {
	t.Helper()
	ig = &internalGlob{ptrDir: filepath.Join(data, "feeds", "f")}
	ig.q = feed.NewQueue("rec", 4096, 8<<20, overload.Policy{Kind: overload.Pause})
	ig.pub = feed.NewPublisher("f", []*feed.Queue{ig.q}, 65536, 512)
	cfg := GlobConfig{
		Stream: Config{Feed: "f", Path: pattern, Strategy: Committed, Poll: 50 * time.Millisecond,
			RotateWait: 200 * time.Millisecond, CommitSync: 5 * time.Millisecond, BatchLines: 512, Outputs: []string{data}},
		PointerDir:    ig.ptrDir,
		EpochsPath:    filepath.Join(data, "feeds", "f.epochs"),
		ScanInterval:  100 * time.Millisecond,
		MaxOpenFiles:  16,
		CloseInactive: time.Hour,
		ForgetAfter:   time.Minute,
	}
	if set != nil {
		set(&cfg)
	}
	g, err := NewGlob(cfg, ig.pub)
	if err != nil {
		t.Fatal(err)
	}
	ig.g = g
	if pre != nil {
		pre(g)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.Run(ctx)
	}()
	var killed, once sync.Once
	kill = func() { killed.Do(func() { cancel(); <-done }) }
	stop = func() {
		once.Do(func() {
			kill()
			dctx, c := context.WithTimeout(context.Background(), drain)
			g.Drain(dctx)
			c()
			g.Close()
		})
	}
	t.Cleanup(stop)
	return ig, kill, stop
}

// popEpochs pops (and acknowledges, when ack) what the feed delivers for
// d: the lines, and the epoch each batch carried.
func (ig *internalGlob) popEpochs(d time.Duration, ack bool) (lines []string, epochs []uint64) {
	for end := time.Now().Add(d); time.Now().Before(end); {
		b := ig.q.TryPop()
		if b == nil {
			time.Sleep(2 * time.Millisecond)
			continue
		}
		for _, l := range b.Lines {
			lines = append(lines, string(l))
			epochs = append(epochs, b.Epoch)
		}
		if ack {
			ig.q.AddDispatched(uint64(b.Len()))
		}
		b.Release()
		ig.pub.Poke()
	}
	return lines, epochs
}

// a.log's five lines are published under epoch E and never acknowledged
// (the subscriber is slow; a clean stop's drain is cut short), its
// pointer still names no file (no commit yet). a.log is then rewritten in
// place with other content (truncated and written again: same inode); the
// stream sees it (markGone unbinds the descriptor, Bind(nil, key): the old
// epoch's fingerprint must not grow over the new content) and waits at the
// epoch barrier. The daemon is stopped: Source.Close's nameFile stores the
// record (E, offset 0, a.log's key, fingerprint length 0) — a fingerprint
// covering nothing, which matches any content. At the restart a.log's key
// takes that pointer (identity at a restart is key + fingerprint) and the
// new content is read under the old epoch E, from position 0: the same
// (epoch, position) pairs as the old lines, so an exactlyOnce sink that
// applied (E, 35) skips the new lines up to 35 (lost), and the old lines
// nobody acknowledged, whose bytes are gone, are counted by nobody.
// Before ca9d31f the pointer kept file key 0: the restart took the epochs
// file's "adopted" line (the old fingerprint), found no file with it,
// counted the old tail (countGone) and read the new content as a new file
// under a new epoch. DESIGN §4 "Epoch barrier": every new file gets a new
// epoch (truncation, replacement); §3 a replaced input resets under a new
// epoch; §4 "Nothing green over a loss".
func TestGlobRewrittenBeforeFirstCommitThenStoppedKeepsNoOldEpoch(t *testing.T) {
	t.Parallel()
	dir, data, path := aLogIn(t, numbered("line", 5))
	ig, stop := runGlobQuiet(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond)
	old, oldEpochs := ig.popEpochs(time.Second, false)
	if len(old) != 5 {
		t.Fatalf("first run: %d lines delivered, want 5", len(old))
	}
	e := oldEpochs[0]
	// Rewritten in place: same inode, other bytes, longer than before.
	var nb strings.Builder
	for i := range 10 {
		fmt.Fprintf(&nb, "fresh-%d\n", i)
	}
	if err := os.WriteFile(path, []byte(nb.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(600 * time.Millisecond) // the stream's look (Poll 50 ms) sees it
	stop()
	rec, _, err := ig.pointer()
	if err != nil {
		t.Fatal(err)
	}
	dev, ino, err := fileutil.DevInoPath(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pointer after the stop: epoch %016x offset %d fileKey %016x (a.log %016x) fpLen %d; old lines' epoch %016x",
		rec.Epoch, rec.Offset, rec.FileKey, pointer.FileKey(dev, ino), rec.FPLen, e)

	// The restart.
	ig2, _ := runGlobQuiet(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond)
	got, epochs := ig2.popEpochs(1500*time.Millisecond, true)
	tails, bytes, detail := ig2.lost()
	t.Logf("restart: %d lines delivered, epochs %x; lostTails %d lostBytes %d detail %q", len(got), epochs, tails, bytes, detail)
	if len(got) != 10 {
		t.Errorf("restart: %d lines delivered %q, want a.log's 10 new lines", len(got), got)
	}
	for i, ep := range epochs {
		if ep == e {
			t.Errorf("restart: new line %q delivered under the old content's epoch %016x (its lines %q were published under it at the same positions): a rewritten file's content needs a new epoch",
				got[i], e, old)
			break
		}
	}
}

// a.log's stream closes owing its commit before its first one (five lines
// popped, not acknowledged, the drain cut short at 300 ms; a line written
// while it closed queues it again): nameFile now names a.log in its
// pointer (key, first bytes). a.log is then rewritten in place (same
// inode, other first bytes) while the stream waits, queued, for its
// acknowledgements. The scan sees the key with other first bytes
// (sameFile: the pointer names the file and its fingerprint differs): a
// new stream for the new content, after the old one at that path; the old
// stream is marked gone but stays queued. Once its lines are acknowledged
// and the owed commit made, schedule starts the old stream too — its file
// is at its path (exists) — and its source, finding its file replaced,
// reads it from its start under a new epoch; then the new stream reads the
// same bytes from its start. Every new line twice, with no crash (DESIGN
// §2 at-least-once only across a crash; §10 one stream per file). Before
// ca9d31f the pointer named no file, sameFile took the file as the same,
// and only the old stream read it (from its start, replaced).
func TestGlobQueuedOwingRewrittenInPlaceIsReadOnce(t *testing.T) {
	t.Parallel()
	ig := startInternalGlob(t, 50*time.Millisecond, 300*time.Millisecond)
	path := filepath.Join(filepath.Dir(ig.g.cfg.Stream.Path), "a.log")
	n := ig.take(t) // not acknowledged: the drain is cut short, it owes
	s := ig.stoppingStream(t)
	appendTo(t, path, "written-while-closing\n")
	ig.waitFor(t, "the stream closed owing its commit, queued again", func() bool {
		return s.st == stQueued && s.owe != nil
	})
	var nb strings.Builder
	for i := range 10 {
		fmt.Fprintf(&nb, "fresh-%d\n", i)
	}
	if err := os.WriteFile(path, []byte(nb.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // scans (every 100 ms) look at it
	ig.g.mu.Lock()
	gone, tracked := s.gone, len(ig.g.byKey)
	ig.g.mu.Unlock()
	t.Logf("after the scans: old stream gone %v, streams tracked %d", gone, tracked)
	ig.q.AddDispatched(n) // the five lines acknowledged: the owed commit is made
	ig.pub.Poke()
	got, _ := ig.popEpochs(3*time.Second, true)
	seen := map[string]int{}
	for _, l := range got {
		seen[l]++
	}
	t.Logf("delivered after the rewrite: %q", got)
	for i := range 10 {
		l := fmt.Sprintf("fresh-%d", i)
		if seen[l] != 1 {
			t.Errorf("%q delivered %d times, want once (a.log rewritten in place while its stream waited, queued owing its first commit)", l, seen[l])
		}
	}
}

// One slot (maxOpenFiles 3): a.log's stream holds it, stopping, its five
// lines unacknowledged; b.log's new stream waits for its first turn
// (queued, no pointer yet). b.log is deleted and another file created at
// its path: schedule sees b.log's file gone from its path (awaitScan), the
// scan marks its stream gone and makes a new stream for the new file,
// after it (the per-path barrier). Once a.log's lines are acknowledged the
// slot is free and schedule starts the gone stream (its file gone, not at
// its path): its pointer is new and names no file, so its source adopts
// the file at the path — the new one, another stream's. Then the new
// stream, its barrier done, reads the same file again: every line twice
// with no crash (DESIGN §10: one stream per file; a deleted file's key is
// retired, the new file a stream of its own).
func TestGlobQueuedStreamDeletedAndRecreatedBeforeItsTurnIsReadOnce(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	for _, n := range []string{"a", "b"} {
		var sb strings.Builder
		for i := range 5 {
			fmt.Fprintf(&sb, "%s-%d\n", n, i)
		}
		if err := os.WriteFile(filepath.Join(dir, n+".log"), []byte(sb.String()), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ig, _ := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, func(c *GlobConfig) { c.MaxOpenFiles = 3 })
	if ig.g.maxSlots != 1 {
		t.Fatalf("maxSlots %d, want 1", ig.g.maxSlots)
	}
	n := ig.take(t) // a.log's lines, not acknowledged: its stream holds the slot
	var b *gstream
	ig.waitFor(t, "b.log's stream queued while a.log's stops", func() bool {
		b = ig.g.byPath[filepath.Join(dir, "b.log")]
		a := ig.g.byPath[filepath.Join(dir, "a.log")]
		return b != nil && b.st == stQueued && a != nil && a.st == stStopping
	})
	// The new file made before the old one is deleted (not its inode).
	bp, tmp := filepath.Join(dir, "b.log"), filepath.Join(dir, "b.tmp")
	var nb strings.Builder
	for i := range 5 {
		fmt.Fprintf(&nb, "other-%d\n", i)
	}
	if err := os.WriteFile(tmp, []byte(nb.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(bp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, bp); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the scan seeing b.log's file gone", func() bool { return b.gone })
	ig.q.AddDispatched(n)
	ig.pub.Poke()
	got, _ := ig.popEpochs(3*time.Second, true)
	seen := map[string]int{}
	for _, l := range got {
		seen[l]++
	}
	t.Logf("delivered: %q", got)
	for i := range 5 {
		l := fmt.Sprintf("other-%d", i)
		if seen[l] != 1 {
			t.Errorf("%q delivered %d times, want once (b.log deleted and recreated while its stream waited for its first turn)", l, seen[l])
		}
	}
}

// a.log's stream closes owing its commit (five lines popped, never
// acknowledged) and waits, queued, with a line written while it closed.
// a.log is then rotated within the glob — renamed to a-1.log (matched by
// *.log, sorting before a.log) — and a new a.log created. schedule sees
// the old file gone from its path (awaitScan) and the scan follows it to
// a-1.log first (sort order), dropping it from a.log's place, so the new
// a.log's stream finds no stream before it at that path: no barrier. It
// starts at once and publishes while every line of the file previously at
// a.log is still unacknowledged (and its tail unread). DESIGN §10 "Order":
// the epoch barrier of §4 holds per path — a new file at a path is
// published after every line of the file previously at that path is
// acknowledged. (Renamed to a name sorting after a.log, the new stream is
// made before the old one is followed and waits for it.)
func TestGlobQueuedStreamRotatedWithinGlobHoldsTheNewFileAtItsPath(t *testing.T) {
	t.Parallel()
	ig := startInternalGlob(t, 50*time.Millisecond, 300*time.Millisecond)
	dir := filepath.Dir(ig.g.cfg.Stream.Path)
	path := filepath.Join(dir, "a.log")
	ig.take(t) // never acknowledged: the drain is cut short, it owes
	s := ig.stoppingStream(t)
	appendTo(t, path, "written-while-closing\n")
	ig.waitFor(t, "the stream closed owing its commit, queued again", func() bool {
		return s.st == stQueued && s.owe != nil
	})
	if err := os.Rename(path, filepath.Join(dir, "a-1.log")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("new-0\nnew-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the scan following a.log to a-1.log", func() bool { return s.path == filepath.Join(dir, "a-1.log") })
	ig.g.mu.Lock()
	ns := ig.g.byPath[path]
	var after *gstream
	if ns != nil {
		after = ns.after
	}
	ig.g.mu.Unlock()
	got := ig.popAll(time.Second) // acknowledged: the new file's lines, if published
	t.Logf("new a.log's stream %v, after the old one: %v; %d lines published while the old file's 5 lines are unacknowledged", ns != nil, after == s, got)
	if got > 0 {
		t.Errorf("the new a.log published %d lines while the 5 lines of the file previously at a.log (now a-1.log) were unacknowledged and its tail unread: want it held by the per-path barrier", got)
	}
}

// ONCE_EARLIEST, one slot: a.log is read (its lines not acknowledged yet,
// so that it keeps the slot), b.log — matched at start — waits for its
// turn and is deleted meanwhile. schedule sees it gone from its path
// (awaitScan), the scan marks it gone and schedule starts it: its once
// source finds no file (open fails) and the stream is closed without
// being done. A bounded feed is END_OF_STREAM only when every stream is
// done: it stays BEHIND for ever, and b.log's unread bytes are counted by
// nobody. DESIGN §10: ONCE_EARLIEST reads every file matched at start to
// its size when first matched, END_OF_STREAM when all are done; a file
// that disappears with an unread tail counts in lostTails.
func TestGlobOnceQueuedFileDeletedBeforeItsTurnEnds(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	for _, n := range []string{"a", "b"} {
		var sb strings.Builder
		for i := range 5 {
			fmt.Fprintf(&sb, "%s-%d\n", n, i)
		}
		if err := os.WriteFile(filepath.Join(dir, n+".log"), []byte(sb.String()), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ig, _ := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, func(c *GlobConfig) {
		c.Stream.Strategy = OnceEarliest
		c.PointerDir = ""
		c.MaxOpenFiles = 2
	})
	if ig.g.maxSlots != 1 {
		t.Fatalf("maxSlots %d, want 1", ig.g.maxSlots)
	}
	n := ig.take(t) // a.log's lines, not acknowledged yet
	var b *gstream
	ig.waitFor(t, "b.log's stream queued", func() bool {
		b = ig.g.byPath[filepath.Join(dir, "b.log")]
		return b != nil && b.st == stQueued
	})
	if err := os.Remove(filepath.Join(dir, "b.log")); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the scan seeing b.log gone", func() bool { return b.gone })
	ig.q.AddDispatched(n)
	ig.pub.Poke()
	var st State
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if st = ig.g.State(); st == EndOfStream {
			break
		}
	}
	tails, bytes, detail := ig.lost()
	ig.g.mu.Lock()
	bst, bdone := b.st, b.done
	ig.g.mu.Unlock()
	t.Logf("state %v; b.log's stream state %d done %v; lostTails %d lostBytes %d detail %q", st, bst, bdone, tails, bytes, detail)
	if st != EndOfStream {
		t.Errorf("ONCE_EARLIEST feed %v 5 s after its last file was read and b.log (matched at start) deleted before its turn: want END_OF_STREAM", st)
	}
	if tails == 0 {
		t.Errorf("b.log (35 bytes, matched at start, never read) deleted before its turn: lostTails 0, want it counted")
	}
}

// A glob feed with discovery by rescan (no fsnotify, as on a network file
// system; scanIntervalMillis 1000). b.log is renamed within the glob (to
// c.log) in the moment between
// schedule's look (its file at its path: started, atPath) and its source's
// open (Config.OpenHook: between the stat and the open) — a file that
// keeps moving, or one rotated just then. The source finds nothing at
// b.log and a new pointer naming no file: WAITING_FOR_FILE; housekeeping
// closes it (read to its end, gone from its path), and it is not queued
// again (grownSince looks at the stale path). The scan follows it to
// c.log but sees no change (a rename changes neither size nor mtime): the
// stream stays closed at offset 0 of its 35 bytes, never read — and
// reported CAUGHT_UP (behindLocked compares the size with the last look,
// not with what was read). DESIGN §10: a rename within the glob keeps the
// stream (and it reads its file); §7 state: CAUGHT_UP only when every
// tracked file is read to its end.
func TestGlobFileMovedAsItsStreamOpensIsRead(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	bp, cp := filepath.Join(dir, "b.log"), filepath.Join(dir, "c.log")
	var sb strings.Builder
	for i := range 5 {
		fmt.Fprintf(&sb, "b-%d\n", i)
	}
	if err := os.WriteFile(bp, []byte(sb.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	var armed atomic.Bool
	armed.Store(true)
	ig, _ := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, func(c *GlobConfig) {
		c.CloseInactive = 100 * time.Millisecond
		c.Stream.NoNotify = true // discovery by rescan only (a file system without events)
		c.ScanInterval = time.Second
		c.Stream.OpenHook = func() {
			if armed.CompareAndSwap(true, false) {
				os.Rename(bp, cp) // moved between the stat and the open
			}
		}
	})
	got, _ := ig.popEpochs(4*time.Second, true)
	st := ig.g.State()
	var path string
	var sst streamState
	ig.g.mu.Lock()
	for _, s := range ig.g.byKey {
		path, sst = s.path, s.st
	}
	ig.g.mu.Unlock()
	t.Logf("delivered %q; stream at %s state %d; feed %v", got, path, sst, st)
	if len(got) != 5 {
		t.Errorf("b.log renamed to c.log (within the glob) as its stream opened it: %d of its 5 lines delivered in 4 s (4 rescans), feed state %v", len(got), st)
	}
	if len(got) < 5 && st == CaughtUp {
		t.Errorf("feed CAUGHT_UP with c.log's 5 lines unread")
	}
}

// The case ca9d31f's TestGlobQueuedStreamMovedToAnotherMatchedDirIsNotALoss
// holds, with the move a moment later: x/a.log's stream waits, queued
// owing its commit, a line written while it closed (its noted tail), its
// pointer naming the file; the lines are acknowledged, housekeeping makes
// the owed commit and schedule, seeing the file at its path, starts it
// (atPath: start drops the noted tail). x/a.log is moved to y/a.log
// (matched by dir/*/*.log) between the source's stat and its open
// (OpenHook). The source finds nothing at x/a.log and looks for the
// pointer's file beside it only: not found, its tail counted lost. Yet the
// file never left the glob: the scan follows it to y/a.log. Counted lost
// while in the glob (and read again, or left unread). DESIGN §4 "Nothing
// green over a loss" counts losses, not files that moved; §10 a file
// renamed within the glob (into another matched directory too, README) is
// followed.
func TestGlobQueuedStreamMovedAsItStartsIsNotALoss(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	for _, d := range []string{"x", "y"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	path, moved := filepath.Join(dir, "x", "a.log"), filepath.Join(dir, "y", "a.log")
	var sb strings.Builder
	for i := range 5 {
		fmt.Fprintf(&sb, "line-%d\n", i)
	}
	if err := os.WriteFile(path, []byte(sb.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	var armed atomic.Bool
	ig, _ := runGlobWith(t, filepath.Join(dir, "*", "*.log"), data, 5*time.Second, func(c *GlobConfig) {
		c.CloseInactive = 50 * time.Millisecond
		c.Stream.OpenHook = func() {
			if armed.CompareAndSwap(true, false) {
				os.Rename(path, moved) // between the stat and the open
			}
		}
	}, func(g *Glob) { g.drainBound = 300 * time.Millisecond })
	ig.firstTurnCommitted(t)
	appendTo(t, path, numbered("more", 5))
	const line = "written-while-closing\n"
	s := ig.ackedWhileQueued(t, path, line) // returns holding ig.g.mu
	armed.Store(true)
	ig.g.mu.Unlock()
	ig.waitFor(t, "the scan following x/a.log to y/a.log", func() bool { return s.path == moved })
	got := ig.popAll(3 * time.Second)
	tails, bytes, detail := ig.lost()
	t.Logf("delivered %d lines after the move; lostTails %d lostBytes %d detail %q", got, tails, bytes, detail)
	if tails != 0 {
		t.Errorf("x/a.log moved to y/a.log (within the glob) as its queued stream started with %q unread: lostTails %d, lostBytes %d, detail %q (%d lines delivered after); want nothing counted lost",
			line, tails, bytes, detail, got)
	}
	if got != 1 {
		t.Errorf("%d lines delivered after the move, want its 1 line", got)
	}
}

// One slot (maxOpenFiles 3), COMMITTED: b.log, matched, waits for its
// first turn (queued, never opened) while a.log's stream holds the slot;
// b.log is deleted. schedule sees its file gone from its path (awaitScan),
// the scan marks it gone — counting nothing: a queued stream has no noted
// tail — and its start finds no file and a new pointer naming none. Its 35
// bytes were read by nobody and counted by nobody: lostTails 0, the feed
// lossless. DESIGN §10: a file that disappears with an unread tail counts
// in lostTails; §4 "Nothing green over a loss".
func TestGlobQueuedNeverReadFileDeletedIsCounted(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	for _, n := range []string{"a", "b"} {
		var sb strings.Builder
		for i := range 5 {
			fmt.Fprintf(&sb, "%s-%d\n", n, i)
		}
		if err := os.WriteFile(filepath.Join(dir, n+".log"), []byte(sb.String()), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ig, _ := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, func(c *GlobConfig) { c.MaxOpenFiles = 3 })
	if ig.g.maxSlots != 1 {
		t.Fatalf("maxSlots %d, want 1", ig.g.maxSlots)
	}
	n := ig.take(t) // a.log's lines, not acknowledged: its stream holds the slot
	var b *gstream
	ig.waitFor(t, "b.log's stream queued while a.log's stops", func() bool {
		b = ig.g.byPath[filepath.Join(dir, "b.log")]
		a := ig.g.byPath[filepath.Join(dir, "a.log")]
		return b != nil && b.st == stQueued && a != nil && a.st == stStopping
	})
	if err := os.Remove(filepath.Join(dir, "b.log")); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the scan seeing b.log gone", func() bool { return b.gone })
	ig.q.AddDispatched(n)
	ig.pub.Poke()
	got := ig.popAll(2 * time.Second)
	tails, bytes, detail := ig.lost()
	t.Logf("delivered %d; lostTails %d lostBytes %d detail %q", got, tails, bytes, detail)
	if tails == 0 {
		t.Errorf("b.log (5 lines, never read) deleted while its stream waited for its first turn: lostTails 0, want it counted")
	}
}

// a.log's stream closes before its first commit (five lines popped, not
// acknowledged, the drain cut short): nameFile gives its pointer a.log's
// key and fingerprint, which closed() keeps as the stream's (fpLen 35).
// Its lines are then acknowledged and the owed commit made; the stream is
// closed, read to its end. a.log is then moved the way mv does across file
// systems, into the glob: copied to b.log (with two lines more), then
// deleted. b.log's first bytes match a.log's fingerprint: it is held back
// as a possible copy and, a.log gone within rotateWaitMillis, taken as its
// copy (done: "its tail is read by that file's stream"). But a.log's
// stream is closed and gone: it never runs again, and b.log's two new
// lines are read by nobody (nor counted). Before ca9d31f the closed
// stream's fingerprint length was 0 (no commit before its close), b.log
// was a new stream read from its start (a.log's five lines again, then
// its two). DESIGN §10: a copy is read from the old offset under the old
// stream; otherwise a new stream from its start — never not at all.
func TestGlobCopyOfClosedNeverCommittedStreamIsRead(t *testing.T) {
	t.Parallel()
	ig := startInternalGlob(t, 50*time.Millisecond, 300*time.Millisecond)
	dir := filepath.Dir(ig.g.cfg.Stream.Path)
	path := filepath.Join(dir, "a.log")
	n := ig.take(t) // not acknowledged: the drain is cut short, it owes
	s := ig.stoppingStream(t)
	ig.waitFor(t, "the stream closed owing its commit", func() bool { return s.st == stClosed && s.owe != nil })
	ig.q.AddDispatched(n)
	ig.pub.Poke()
	ig.waitFor(t, "the owed commit made", func() bool { return s.owe == nil })
	ig.g.mu.Lock()
	fpLen := s.fpLen
	ig.g.mu.Unlock()
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// mv across file systems: copy (plus what the writer adds), then unlink.
	if err := os.WriteFile(filepath.Join(dir, "b.tmp"), append(old, "extra-0\nextra-1\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "b.tmp"), filepath.Join(dir, "b.log")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond) // a scan holds b.log back (rotateWait 200 ms)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	got, _ := ig.popEpochs(3*time.Second, true)
	seen := map[string]int{}
	for _, l := range got {
		seen[l]++
	}
	tails, bytes, detail := ig.lost()
	t.Logf("closed stream's fpLen %d; delivered after the move %q; lostTails %d lostBytes %d detail %q", fpLen, got, tails, bytes, detail)
	for _, l := range []string{"extra-0", "extra-1"} {
		if seen[l] == 0 && tails == 0 {
			t.Errorf("%q (written to the moved copy b.log) delivered 0 times and nothing counted lost", l)
		}
	}
}

// One slot. a.log's five lines are published under epoch E, not
// acknowledged, no commit yet; a.log is rewritten in place (same inode,
// other bytes) and the stream, seeing it, unbinds its descriptor from the
// pointer (markGone: Bind(nil, key)) and waits at its epoch barrier. b.log
// appears; a.log's stream, past its one-second turn, is preempted and
// closes owing (drain cut short): nameFile stores (E, 0, a.log's key,
// fingerprint length 0). The lines are acknowledged: the owed commit binds
// the file at the path — the new content — and grows the empty fingerprint
// over it: (E, 35, key, new first bytes). Started again, the stream takes
// the new content for E's file and reads it from offset 35: its first
// four lines never delivered, the fifth torn ("sh-4"), nothing counted.
// (ca9d31f's parent binds the same way from a record naming no file.)
// DESIGN §3 (the fingerprint is read from the open descriptor, never from
// whatever the path names now), §4 epoch barrier (a rewritten file is read
// from its start under a new epoch).
func TestGlobRewrittenAtBarrierThenPreemptedOwingReadsNewContentWhole(t *testing.T) {
	t.Parallel()
	dir, data, path := aLogIn(t, numbered("line", 5))
	ig, _ := runGlobWith(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond,
		func(c *GlobConfig) { c.MaxOpenFiles = 3 },
		func(g *Glob) { g.drainBound = 300 * time.Millisecond })
	n := ig.take(t) // not acknowledged
	var nb strings.Builder
	for i := range 10 {
		fmt.Fprintf(&nb, "fresh-%d\n", i)
	}
	if err := os.WriteFile(path, []byte(nb.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // the stream sees it, waits at its barrier
	if err := os.WriteFile(filepath.Join(dir, "b.log"), []byte("b-0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var a *gstream
	ig.waitFor(t, "a.log's stream preempted, closed owing", func() bool {
		a = ig.g.byPath[path]
		return a != nil && a.st != stOpen && a.st != stStopping && a.owe != nil
	})
	rec, _ := pointer.Inspect(a.ptrPath)
	ig.q.AddDispatched(n)
	ig.pub.Poke()
	got, _ := ig.popEpochs(4*time.Second, true)
	seen := map[string]int{}
	for _, l := range got {
		seen[l]++
	}
	tails, bytes, detail := ig.lost()
	t.Logf("pointer at a.log's close: offset %d fileKey %016x fpLen %d; delivered %q; lostTails %d lostBytes %d detail %q",
		rec.Offset, rec.FileKey, rec.FPLen, got, tails, bytes, detail)
	for i := range 10 {
		l := fmt.Sprintf("fresh-%d", i)
		if seen[l] == 0 && tails == 0 {
			t.Errorf("%q (a.log's new content) never delivered, nothing counted lost", l)
		}
	}
}

// EARLIEST (no pointers: a glob feed keeps them for COMMITTED only): a.log
// is read, its stream closed as inactive (closeInactiveMillis 100), then a
// line is appended: the stream is opened again ("reopened when it
// changes"), and its new source — Earliest, no offset given — reads a.log
// from its start: its two lines delivered again with no crash, then the
// new one. The same for LATEST once a stream's first turn is over
// (fromEnd is cleared at its first start), and for a stream preempted for
// its turn. DESIGN §10 Bounded: a caught-up file is closed and reopened
// when it changes (identity re-checked) — reading on, as §2 delivers each
// line once when nothing crashed.
func TestGlobEarliestReopenedStreamReadsOn(t *testing.T) {
	t.Parallel()
	dir, data, path := aLogIn(t, "old-0\nold-1\n")
	ig, _ := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, func(c *GlobConfig) {
		c.Stream.Strategy = Earliest
		c.PointerDir = ""
		c.CloseInactive = 100 * time.Millisecond
	})
	first, _ := ig.popEpochs(time.Second, true)
	var s *gstream
	ig.waitFor(t, "a.log's stream closed as inactive", func() bool {
		s = ig.g.byPath[path]
		return s != nil && s.st == stClosed
	})
	appendTo(t, path, "new-0\n")
	got, _ := ig.popEpochs(2*time.Second, true)
	t.Logf("first turn %q; after the append %q", first, got)
	if len(got) != 1 || got[0] != "new-0" {
		t.Errorf("after a.log's stream was closed as inactive and a line appended: delivered %q, want [new-0]", got)
	}
}

// LATEST, one slot (maxOpenFiles 2, no pointers): a.log and b.log present
// at start. a.log's stream takes the slot and its open is slow (OpenHook:
// 1.5 s, a slow disk or network file system); b.log's stream waits for its
// first turn (with ca9d31f, also for a scan whenever its file moved). A
// line appended to b.log meanwhile — after the start — is skipped: b.log's
// source starts at the end of the file as it is at its open, not at the
// start. DESIGN §10: LATEST reads the files present at start from their
// end (their end at the start); §4 LATEST starts at the end and tails:
// what is written after the start is delivered.
func TestGlobLatestQueuedStreamKeepsLinesWrittenAfterStart(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	for _, n := range []string{"a", "b"} {
		if err := os.WriteFile(filepath.Join(dir, n+".log"), []byte(n+"-old\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ig, _ := runOneSlotNoPointers(t, dir, data, Latest, 0, 1500*time.Millisecond, true)
	var b *gstream
	ig.waitFor(t, "b.log's stream queued", func() bool {
		b = ig.g.byPath[filepath.Join(dir, "b.log")]
		return b != nil && b.st == stQueued
	})
	appendTo(t, filepath.Join(dir, "b.log"), "b-new\n") // after the start, before b.log's turn
	got, _ := ig.popEpochs(4*time.Second, true)
	t.Logf("delivered: %q", got)
	if !slices.Contains(got, "b-new") {
		t.Errorf("b-new, appended to b.log after the start while its stream waited for its first turn, never delivered (LATEST)")
	}
}

// runOneSlotNoPointers runs a glob feed over dir/*.log without pointers
// (strat: EARLIEST, LATEST, ONCE_*) with one slot (maxOpenFiles 2) and
// closeInactive (0: an hour). While slow is set, the next source's open
// takes slowOpen (a slow disk: its stream holds the slot) and clears it;
// armed sets it for the first open.
func runOneSlotNoPointers(t *testing.T, dir, data string, strat Strategy, closeInactive, slowOpen time.Duration, armed bool) (*internalGlob, *atomic.Bool) {
	t.Helper()
	slow := new(atomic.Bool)
	slow.Store(armed)
	ig, _ := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, func(c *GlobConfig) {
		c.Stream.Strategy = strat
		c.PointerDir = ""
		c.MaxOpenFiles = 2
		if closeInactive > 0 {
			c.CloseInactive = closeInactive
		}
		c.Stream.OpenHook = func() {
			if slow.CompareAndSwap(true, false) {
				time.Sleep(slowOpen)
			}
		}
	})
	if ig.g.maxSlots != 1 {
		t.Fatalf("maxSlots %d, want 1", ig.g.maxSlots)
	}
	return ig, slow
}

// twoClosedEarliest runs runOneSlotNoPointers (EARLIEST, closeInactive
// 100 ms, a slow open of 2.5 s when slow is set) over a.log and b.log
// holding aContent and bContent, takes and acknowledges what their first
// turns deliver (first), and waits for both streams to close, a.log's with
// its resume point kept.
func twoClosedEarliest(t *testing.T, aContent, bContent string) (ig *internalGlob, slow *atomic.Bool, a, b string, sa, sb *gstream, first []string) {
	t.Helper()
	dir, data := t.TempDir(), t.TempDir()
	a, b = filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
	if err := os.WriteFile(a, []byte(aContent), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte(bContent), 0o600); err != nil {
		t.Fatal(err)
	}
	ig, slow = runOneSlotNoPointers(t, dir, data, Earliest, 100*time.Millisecond, 2500*time.Millisecond, false)
	first, _ = ig.popEpochs(time.Second, true)
	ig.waitFor(t, "both streams closed", func() bool {
		sa, sb = ig.g.byPath[a], ig.g.byPath[b]
		return sa != nil && sb != nil && sa.st == stClosed && sb.st == stClosed && sa.resume != nil
	})
	return ig, slow, a, b, sa, sb, first
}
