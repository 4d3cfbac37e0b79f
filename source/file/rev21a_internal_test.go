package file

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Review of 61aa493 (review 13a C: a genOwn stream whose own file leaves
// the glob before its source reaches it counts that file whole — ownLost —
// and still reads the pointer's file beside the path). Each finding A–F
// failed 3 of 3 at 61aa493; fixed in the commits after it.

// reuseInodeAt deletes the file at w and makes a file holding content on
// its freed inode, renamed to w (a new file at the path on the old inode);
// false when the file system gave the inode to none of 40 tries.
func reuseInodeAt(t *testing.T, w, content string) bool {
	t.Helper()
	k, err := keyOfPath(w)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(w); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(w)
	var keep []string
	defer func() {
		for _, p := range keep {
			os.Remove(p)
		}
	}()
	for i := range 40 {
		p := filepath.Join(dir, fmt.Sprintf("reuse-%d.tmp", i))
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if got, err := keyOfPath(p); err == nil && got == k {
			if err := os.Rename(p, w); err != nil {
				t.Fatal(err)
			}
			return true
		}
		keep = append(keep, p) // held: the next try gets another inode
	}
	return false
}

// createOnKey makes a file holding content at w on the inode of key k
// (freed before: deleted), trying up to 40 files; false when the file
// system gave that inode to none.
func createOnKey(t *testing.T, w string, k uint64, content string) bool {
	t.Helper()
	dir := filepath.Dir(w)
	var keep []string
	defer func() {
		for _, p := range keep {
			os.Remove(p)
		}
	}()
	for i := range 40 {
		p := filepath.Join(dir, fmt.Sprintf("reuse-%d.tmp", i))
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if got, err := keyOfPath(p); err == nil && got == k {
			if err := os.Rename(p, w); err != nil {
				t.Fatal(err)
			}
			return true
		}
		keep = append(keep, p) // held: the next try gets another inode
	}
	return false
}

// A. The fix works (TestRev13AGenOwnWaitingFileDeletedLosesOldTailSilently):
// w.log deleted while its genOwn stream waited, its 12 bytes counted, and
// the stream reads w.log.1's tail beside the path to its end. The stream
// then closes, quiet, every line acknowledged. Its pointer still names
// w.log.1 (the stream's key is the deleted w.log's: forgetOrHold's
// forgetClosed does not reset a record naming another key). tailfeed is
// stopped cleanly, and logrotate deletes w.log.1 (read to its end) while
// it is stopped: the next start finds the pointer naming a file that is
// gone and counts its "unread tail" lost. DESIGN §4: "A file that was read
// to its end, committed and then deleted is not a lost tail"; §10: a file
// renamed out of the glob is read to its end, then closed, GONE "read to
// its end, waiting to be forgotten".
func TestRev21AAOwnLostStreamsPointerFileReadThenDeletedWhileStoppedIsNoLoss(t *testing.T) {
	t.Parallel()
	ig, dir, data, stop := genOwnWaiting(t, func(_, w string) {
		if err := os.Remove(w); err != nil {
			t.Fatal(err)
		}
	})
	wantLines(t, ig.popLines(3*time.Second), "tail-0", "tail-1")
	if tails, bytes, detail := ig.lost(); tails != 1 || bytes != 12 {
		t.Fatalf("lostTails %d lostBytes %d (%q): want 1 and 12 (w.log deleted unread)", tails, bytes, detail)
	}
	ig.waitFor(t, "every stream closed (read to its end, quiet)", func() bool {
		for _, s := range ig.g.byKey {
			if s.st != stClosed || s.owe != nil {
				return false
			}
		}
		return true
	})
	stop()
	w1 := filepath.Join(dir, "w.log.1")
	if err := os.Remove(w1); err != nil { // logrotate's "rotate 1", while stopped
		t.Fatal(err)
	}
	ig3, stop3 := runGlobWith(t, filepath.Join(dir, "*.log"), data, time.Second, nil, nil)
	defer stop3()
	wantLines(t, ig3.popLines(time.Second))
	if tails, bytes, detail := ig3.lost(); tails != 0 {
		t.Errorf("the next start: lostTails %d lostBytes %d (%q): want nothing — w.log.1 was read to its end and every line of it committed before the stop, and was deleted afterwards", tails, bytes, detail)
	}
}

// B. The same waiting genOwn stream (no slot free), but w.log is deleted
// and a new file made at w.log on its freed inode between two looks (ext4
// gives a freed inode again at once; a writer reopening its log after an
// "rm"). Where the file system reports birth times (simulated here by
// reuseWalk: this machine's statx reports none; no scan sees the path
// empty, one held after its walk while the file is replaced), the scan
// takes the new file for inode reuse (born after the stream's file was
// first seen) and books the old stream gone through the "key with other
// first bytes" branch, which calls neverRead, not leftUnread: the fix's
// ownAfterGone hook is not reached. neverRead counts from the pointer's
// offset (20, in w.log.1) to w.log's size (12): nothing, and takes the
// stream off the queue. The deleted w.log's three lines are never counted
// and w.log.1's two lines (beside the path) are not read in this run.
// DESIGN §2/§4/§10: the pointer's generation is read before the file at
// the path; a file that disappears with an unread tail counts in lostTails
// (README: a waiting file's inode given to a file born after it — "the
// waiting one is counted lost").
func TestRev21ABOwnFileDeletedAndInodeReusedAtPathLosesBothSilently(t *testing.T) {
	t.Parallel()
	rw := &reuseWalk{}
	ig, dir, _, release, _, stop := genOwnHeld(t, func(g *Glob) { g.afterWalk = rw.hook })
	defer stop()
	ig.g.mu.Lock()
	ig.g.maxSlots = 0 // nothing starts until the test says so
	ig.g.mu.Unlock()
	release()
	w := filepath.Join(dir, "w.log")
	var gen *gstream
	ig.waitFor(t, "w.log's genOwn stream", func() bool {
		for _, s := range ig.g.byKey {
			if s.genOwn {
				gen = s
			}
		}
		return gen != nil
	})
	if !rw.replace(t, w, func() bool { return reuseInodeAt(t, w, numbered("r", 4)) }) {
		t.Skip("the file system did not give the freed inode to a new file")
	}
	ig.waitFor(t, "the scan booking w.log's old stream gone", func() bool { return gen.gone })
	time.Sleep(300 * time.Millisecond)
	ig.g.mu.Lock()
	ig.g.maxSlots = 1
	ig.g.mu.Unlock()
	got := ig.popLines(3 * time.Second)
	tails, bytes, detail := ig.lost()
	if got["r-0"] != 1 || got["r-3"] != 1 {
		t.Errorf("the new w.log's lines: %v, want r-0..r-3 once", got)
	}
	// w.log.1's tail: read (or at least counted); the deleted w.log's
	// 12 bytes: counted.
	readTail := got["tail-0"] == 1 && got["tail-1"] == 1
	if !readTail && (tails < 2 || bytes < 12+14) || readTail && (tails < 1 || bytes < 12) {
		t.Errorf("delivered %v; lostTails %d lostBytes %d (%q): want w.log.1's tail-0, tail-1 delivered (or counted) and the deleted w.log's 12 bytes counted",
			got, tails, bytes, detail)
	}
}

// reuseWalk is an afterWalk hook for a file replaced on its own inode
// between two looks: replace holds the scan that walked before it (its
// list names the old file) until the file is replaced — no scan sees the
// path empty — and from then on the walk reports the file at the path born
// at the replacement (after the glob first saw the old one), as ext4's
// statx does; this machine's reports no birth time.
type reuseWalk struct {
	armed, reused atomic.Bool
	bornAt        atomic.Int64
	path          atomic.Value
	resume        chan struct{}
	hit           chan struct{}
}

func (rw *reuseWalk) hook(list []found) {
	reused := rw.reused.Load() // before the hold: the held walk's list names the old file
	if rw.armed.CompareAndSwap(true, false) {
		close(rw.hit)
		<-rw.resume
	}
	if !reused {
		return
	}
	for i := range list {
		if p, _ := rw.path.Load().(string); list[i].path == p {
			list[i].born = rw.bornAt.Load()
		}
	}
}

// replace runs do (the deletion and the new file on the freed inode)
// while a scan is held after its walk; do's result.
func (rw *reuseWalk) replace(t *testing.T, w string, do func() bool) bool {
	t.Helper()
	rw.path.Store(w)
	rw.resume, rw.hit = make(chan struct{}), make(chan struct{})
	rw.armed.Store(true)
	select {
	case <-rw.hit:
	case <-time.After(5 * time.Second):
		t.Fatal("no scan within 5 s")
	}
	rw.bornAt.Store(time.Now().UnixNano())
	ok := do()
	rw.reused.Store(ok)
	close(rw.resume)
	return ok
}

// genOwnHeld runs genOwnWaiting's scenario (rev13a_c) up to the waiting
// stream, with pre run on the restarted glob before its manager starts:
// w.log's stream (given the old pointer) queued behind the one slot, which
// the first stream's open holds until release is called (at most once).
func genOwnHeld(t *testing.T, pre func(*Glob)) (ig *internalGlob, dir, data string, release, kill, stop func()) {
	t.Helper()
	dir, data, _, _ = genOwnStopped(t, 2)
	pattern := filepath.Join(dir, "*.log")
	var opens atomic.Int32
	ch := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(ch) }) }
	ig, kill, stop = runGlobKill(t, pattern, data, 5*time.Second, func(c *GlobConfig) {
		c.MaxOpenFiles = 1
		c.CloseInactive = 50 * time.Millisecond
		c.Stream.OpenHook = func() {
			if opens.Add(1) == 1 {
				<-ch // the first stream's open holds the one slot
			}
		}
	}, pre)
	t.Cleanup(release) // before stop (cleanups run last first)
	ig.waitFor(t, "w.log's stream, given the old pointer, waiting for the slot", func() bool {
		for _, s := range ig.g.byKey {
			if s.genOwn && s.st == stQueued {
				return true
			}
		}
		return false
	})
	return ig, dir, data, release, kill, stop
}

// C. The waiting genOwn stream's own file w.log is renamed out of the glob
// beside its path, to a name that is no rotated generation of w.log
// (w.log.old: neither matched by *.log nor by the default rotatedNames).
// The scan finds it there (leftUnread; queued gone, its path kept: its
// source finds its own file beside the path with the generations).
// tailfeed is stopped cleanly before the stream's source ran (no slot
// free). Close counts a never-read file out of the glob that no
// pointer names ("a restart will not know it") from unreadFrom — for this
// stream the pointer's offset, 20, an offset in w.log.1, not in w.log.old
// — to its size, 12: nothing. The next start reads w.log.1's tail (its
// pointer names it) but knows nothing of w.log.old: its three lines are
// neither delivered nor counted, in either run. DESIGN §2/§4: never lose a
// line silently; §10: a file renamed out of the glob is read to its end.
func TestRev21ACOwnFileRenamedOutThenCleanStopBeforeItsTurnIsLostSilently(t *testing.T) {
	t.Parallel()
	ig, dir, data, release, _, stop := genOwnHeld(t, nil)
	ig.g.mu.Lock()
	ig.g.maxSlots = 0 // w.log's stream never starts in this run
	ig.g.mu.Unlock()
	release()
	w := filepath.Join(dir, "w.log")
	if err := os.Rename(w, w+".old"); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the scan finding w.log out of the glob", func() bool {
		for _, s := range ig.g.byKey {
			if s.genOwn && s.gone {
				return true
			}
		}
		return false
	})
	stop()
	tails, bytes, _ := ig.lost()
	ig3, stop3 := runGlobWith(t, filepath.Join(dir, "*.log"), data, time.Second, nil, nil)
	defer stop3()
	got := ig3.popLines(2 * time.Second)
	t3, b3, detail := ig3.lost()
	tails, bytes = tails+t3, bytes+b3
	readOwn := got["n-0"] == 1 && got["n-1"] == 1 && got["n-2"] == 1
	if !readOwn && bytes < 12 {
		t.Errorf("w.log.old's 3 lines (12 bytes) neither delivered nor counted: delivered at the next start %v, lostTails %d lostBytes %d over both runs (%q)",
			got, tails, bytes, detail)
	}
	if got["tail-0"] != 1 || got["tail-1"] != 1 {
		t.Errorf("w.log.1's tail: delivered %v at the next start, want tail-0 and tail-1 once", got)
	}
}

// D. The fix's ownLost stream is not told to its source. w.log's genOwn
// stream waits for a slot; w.log is deleted and the scan counts it whole
// (ownLost: "its sources read the pointer's file beside the path only")
// and queues the stream gone. A new w.log is then made on the freed inode
// (ext4 gives it again at once; the walk reports it born after the glob
// first saw the old w.log, as ext4 does — simulated: this machine's statx
// reports no birth time) and gets a stream of its own, read from its
// start. The old stream's source, though, is started as any gone stream's:
// pinned to the old key at w.log, which the new file has now, so after
// w.log.1's tail it takes the new file for its own and reads it from its
// start too — every line of the new file is delivered twice (and w.log's
// 12 bytes were counted lost besides). DESIGN §10: the same key with other
// first bytes is a new stream (inode reuse), read once; §2: a line is
// delivered twice only after a crash.
func TestRev21ADOwnLostStreamReadsNewFileOnItsFreedInode(t *testing.T) {
	t.Parallel()
	var reused atomic.Bool
	var bornAt atomic.Int64
	var wpath atomic.Value
	hook := func(list []found) {
		if !reused.Load() {
			return
		}
		for i := range list {
			if p, _ := wpath.Load().(string); list[i].path == p {
				list[i].born = bornAt.Load() // made after the glob first saw w.log
			}
		}
	}
	ig, dir, _, release, _, stop := genOwnHeld(t, func(g *Glob) { g.afterWalk = hook })
	defer stop()
	ig.g.mu.Lock()
	ig.g.maxSlots = 0 // nothing starts until the test says so
	ig.g.mu.Unlock()
	release()
	w := filepath.Join(dir, "w.log")
	wpath.Store(w)
	k, err := keyOfPath(w)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(w); err != nil {
		t.Fatal(err)
	}
	var gen *gstream
	ig.waitFor(t, "the scan counting w.log (ownLost)", func() bool {
		for _, s := range ig.g.byKey {
			if s.genOwn && s.ownLost {
				gen = s
			}
		}
		return gen != nil
	})
	bornAt.Store(time.Now().UnixNano())
	if !createOnKey(t, w, k, numbered("r", 4)) {
		t.Skip("the file system did not give the freed inode to a new file")
	}
	reused.Store(true)
	ig.waitFor(t, "a stream of its own for the new w.log", func() bool {
		for _, s := range ig.g.byKey {
			if s != gen && s.path == w && s.key == k {
				return true
			}
		}
		return false
	})
	ig.g.mu.Lock()
	ig.g.maxSlots = 1
	ig.g.mu.Unlock()
	got := ig.popLines(4 * time.Second)
	wantLines(t, got, "tail-0", "tail-1", "r-0", "r-1", "r-2", "r-3")
	if tails, bytes, detail := ig.lost(); tails != 1 || bytes != 12 {
		t.Errorf("lostTails %d lostBytes %d (%q): want 1 and 12 (the old w.log deleted unread)", tails, bytes, detail)
	}
}

// E. B's inode reuse with a touched stream: w.log's genOwn stream reads
// part of w.log.1's long tail (6000 lines), is stopped for a waiting file
// (maxOpenFiles 1, its turn over) and queued again, every line it published
// acknowledged. While it waits, w.log is deleted and a new file (r-0..r-3)
// made at w.log on its freed inode; the walk reports the new file born
// after the glob first saw w.log, and no scan sees the path empty (as on
// ext4, between two looks; simulated by reuseWalk: this machine's statx
// reports no birth time). The scan books the old stream gone in the
// "key with other first bytes" branch: touched, so not neverRead — its
// forgetClosed does nothing (queued) and the stream stays queued, gone,
// its key reused; ownAfterGone is never asked. A new stream reads the new
// file from its start; the old stream's next source, pinned to the old
// key — which the new file now has — reads w.log.1 on and then takes the
// new file for its own and reads it from its start as well: r-0..r-3 are
// delivered twice, and the deleted w.log's 12 bytes are never counted.
// DESIGN §10: the same key with other first bytes is a new stream (inode
// reuse), read once; §2: never lose a line silently; a line delivered
// twice only after a crash.
func TestRev21AETouchedGenOwnInodeReusedAtPathReadsNewFileTwiceUncounted(t *testing.T) {
	t.Parallel()
	const n = 6000
	dir, data, a, w := genOwnStopped(t, n)
	pattern := filepath.Join(dir, "*.log")
	rw := &reuseWalk{}
	ig, stop := runGlobWith(t, pattern, data, 5*time.Second, func(c *GlobConfig) {
		c.MaxOpenFiles = 1
		c.CloseInactive = 50 * time.Millisecond
	}, func(g *Glob) { g.afterWalk = rw.hook })
	defer stop()
	var gen *gstream
	ig.waitFor(t, "w.log's stream reading w.log.1", func() bool {
		for _, s := range ig.g.byKey {
			if s.genOwn && s.st == stOpen {
				gen = s
			}
		}
		return gen != nil
	})
	appendTo(t, a, "a-new\n") // a waiting file: w.log's stream is stopped after its turn
	ig.waitFor(t, "w.log's stream stopped for the waiting file", func() bool {
		if gen.st == stStopping {
			ig.g.maxSlots = 0 // nothing starts until the test says so
			return true
		}
		return false
	})
	got := map[string]int{}
	pop := func(d time.Duration) {
		for k, v := range ig.popLines(d) {
			got[k] += v
		}
	}
	for end := time.Now().Add(10 * time.Second); ; {
		pop(50 * time.Millisecond)
		ig.g.mu.Lock()
		ok := gen.st == stQueued && gen.owe == nil
		ig.g.mu.Unlock()
		if ok {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("w.log's stream not queued again (st %v)", gen.st)
		}
	}
	ig.g.mu.Lock()
	touched := gen.touched
	ig.g.mu.Unlock()
	if !touched || got["tail-0"] != 1 || got[fmt.Sprintf("tail-%d", n-1)] != 0 {
		t.Fatalf("w.log's stream: touched %v, tail-0 delivered %d, last tail line %d: not the case under test", touched, got["tail-0"], got[fmt.Sprintf("tail-%d", n-1)])
	}
	if !rw.replace(t, w, func() bool { return reuseInodeAt(t, w, numbered("r", 4)) }) {
		t.Skip("the file system did not give the freed inode to a new file")
	}
	ig.waitFor(t, "the scan booking w.log's old stream gone", func() bool { return gen.gone })
	time.Sleep(300 * time.Millisecond)
	ig.g.mu.Lock()
	ig.g.maxSlots = 1
	ig.g.mu.Unlock()
	pop(5 * time.Second)
	for i := range n {
		if l := fmt.Sprintf("tail-%d", i); got[l] != 1 {
			t.Errorf("%s delivered %d times, want once", l, got[l])
			break
		}
	}
	for i := range 4 {
		if l := fmt.Sprintf("r-%d", i); got[l] != 1 {
			t.Errorf("the new w.log's %s delivered %d times, want once", l, got[l])
		}
	}
	if got["a-new"] != 1 || got["n-0"] != 0 {
		t.Errorf("a-new delivered %d times (want 1), n-0 %d (want 0)", got["a-new"], got["n-0"])
	}
	if tails, bytes, detail := ig.lost(); tails != 1 || bytes != 12 {
		t.Errorf("lostTails %d lostBytes %d (%q): want 1 and 12 (the old w.log deleted unread)", tails, bytes, detail)
	}
}

// F. The fix's scan branch for a stream owing its commit defers the whole
// of leftUnread — the own file's count with it — to settleOwed, which runs
// only once every line the stream published is acknowledged. w.log's
// genOwn stream reads part of w.log.1's long tail, is stopped for a
// waiting file (maxOpenFiles 1) while its lines are unacknowledged (a slow
// subscriber; its drain gives up: closed owing its commit). w.log is then
// deleted, none of it read: the scan sees it gone and counts nothing yet.
// tailfeed is stopped cleanly before the subscriber acknowledges (the
// stop's drain cut short): Close's settleOwed still finds lines pending,
// so w.log is not counted in this run; the next start knows nothing of
// w.log (the pointer names w.log.1) and reads w.log.1 on from the pointer.
// w.log's three lines are never counted, and lostTails stayed 0 the whole
// time since the deletion was seen. DESIGN §4 "Nothing green over a loss"
// (lossless only while tailfeed can show no line was skipped); §10: a file
// that disappears with an unread tail counts in lostTails.
func TestRev21AFOwedGenOwnOwnFileDeletedThenStopNeverCounted(t *testing.T) {
	t.Parallel()
	const n = 6000
	dir, data, a, w := genOwnStopped(t, n)
	pattern := filepath.Join(dir, "*.log")
	ig, stop := runGlobWith(t, pattern, data, 300*time.Millisecond, func(c *GlobConfig) {
		c.MaxOpenFiles = 1
		c.CloseInactive = 50 * time.Millisecond
	}, func(g *Glob) { g.drainBound = 300 * time.Millisecond })
	var gen *gstream
	ig.waitFor(t, "w.log's stream reading w.log.1", func() bool {
		for _, s := range ig.g.byKey {
			if s.genOwn && s.st == stOpen {
				gen = s
			}
		}
		return gen != nil
	})
	appendTo(t, a, "a-new\n") // a waiting file: w.log's stream is stopped after its turn
	ig.waitFor(t, "w.log's stream stopped for the waiting file", func() bool {
		if gen.st == stStopping {
			ig.g.maxSlots = 0 // nothing starts until the test says so
			return true
		}
		return false
	})
	popped, _ := ig.popEpochs(100*time.Millisecond, false) // taken, never acknowledged
	ig.waitFor(t, "w.log's stream closed owing its commit", func() bool { return gen.st != stStopping && gen.owe != nil })
	if len(popped) == 0 {
		t.Fatal("nothing delivered before the stop")
	}
	if err := os.Remove(w); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the scan booking w.log gone", func() bool { return gen.gone })
	time.Sleep(300 * time.Millisecond)
	seenTails, seenBytes, _ := ig.lost()
	stop() // clean; the drain is cut short (nothing acknowledged)
	tails2, bytes2, _ := ig.lost()
	ig3, stop3 := runGlobWith(t, pattern, data, time.Second, nil, nil)
	defer stop3()
	got := ig3.popLines(4 * time.Second)
	tails3, bytes3, detail3 := ig3.lost()
	if got[fmt.Sprintf("tail-%d", n-1)] != 1 {
		t.Errorf("the next start did not read w.log.1 on (last tail line delivered %d times)", got[fmt.Sprintf("tail-%d", n-1)])
	}
	if tails2+tails3 < 1 || bytes2+bytes3 < 12 {
		t.Errorf("w.log (12 bytes, deleted unread while its stream owed its commit) never counted: lostTails %d lostBytes %d once the deletion was seen, %d %d after the stop, %d %d at the next start (%q)",
			seenTails, seenBytes, tails2, bytes2, tails3, bytes3, detail3)
	}
}

// Regression (ruled out by review 21a): the fix's scan branch for a touched genOwn stream: w.log's stream
// (given the old pointer) reads part of w.log.1's long tail, is stopped for
// a waiting file (maxOpenFiles 1, its turn over) and queued again, every
// line it published acknowledged; while it waits, w.log is deleted. The
// scan counts w.log whole (ownLost) and the stream reads w.log.1 on from
// its pointer: every tail line once, w.log's 12 bytes counted once.
func TestRev21AGenOwnTouchedQueuedOwnFileDeletedReadsOnAndCounts(t *testing.T) {
	t.Parallel()
	const n = 6000
	dir, data, a, w := genOwnStopped(t, n)
	pattern := filepath.Join(dir, "*.log")
	ig, stop := runGlobWith(t, pattern, data, 5*time.Second, func(c *GlobConfig) {
		c.MaxOpenFiles = 1
		c.CloseInactive = 50 * time.Millisecond
	}, nil)
	defer stop()
	var gen *gstream
	ig.waitFor(t, "w.log's stream reading w.log.1", func() bool {
		for _, s := range ig.g.byKey {
			if s.genOwn && s.st == stOpen {
				gen = s
			}
		}
		return gen != nil
	})
	appendTo(t, a, "a-new\n") // a waiting file: w.log's stream is stopped after its turn
	ig.waitFor(t, "w.log's stream stopped for the waiting file", func() bool {
		if gen.st == stStopping {
			ig.g.maxSlots = 0 // nothing starts until the test says so
			return true
		}
		return false
	})
	got := map[string]int{}
	pop := func(d time.Duration) {
		for k, v := range ig.popLines(d) {
			got[k] += v
		}
	}
	for end := time.Now().Add(10 * time.Second); ; {
		pop(50 * time.Millisecond)
		ig.g.mu.Lock()
		ok := gen.st == stQueued && gen.owe == nil
		ig.g.mu.Unlock()
		if ok {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("w.log's stream not queued again (st %v)", gen.st)
		}
	}
	ig.g.mu.Lock()
	touched := gen.touched
	ig.g.mu.Unlock()
	if !touched || got["tail-0"] != 1 || got[fmt.Sprintf("tail-%d", n-1)] != 0 {
		t.Fatalf("w.log's stream: touched %v, tail-0 delivered %d, last tail line %d: not the case under test", touched, got["tail-0"], got[fmt.Sprintf("tail-%d", n-1)])
	}
	if err := os.Remove(w); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the scan booking w.log gone", func() bool { return gen.gone })
	time.Sleep(300 * time.Millisecond)
	ig.g.mu.Lock()
	ig.g.maxSlots = 1
	ig.g.mu.Unlock()
	pop(4 * time.Second)
	for i := range n {
		if l := fmt.Sprintf("tail-%d", i); got[l] != 1 {
			t.Errorf("%s delivered %d times, want once", l, got[l])
			break
		}
	}
	if got["a-new"] != 1 || got["n-0"] != 0 {
		t.Errorf("a-new delivered %d times (want 1), n-0 %d (want 0)", got["a-new"], got["n-0"])
	}
	if tails, bytes, detail := ig.lost(); tails != 1 || bytes != 12 {
		t.Errorf("lostTails %d lostBytes %d (%q): want 1 and 12 (w.log deleted unread)", tails, bytes, detail)
	}
}

// Regression (ruled out by review 21a): w.log's stream, reading w.log.1's
// long tail, is closed owing its commit (nothing acknowledged); w.log is
// deleted; the acknowledgements arrive: the owed commit is made, w.log
// counted once, and the stream reads w.log.1 on: every tail line once.
func TestRev21AGenOwnOwedOwnFileDeletedThenAckedReadsOn(t *testing.T) {
	t.Parallel()
	const n = 6000
	dir, data, a, w := genOwnStopped(t, n)
	pattern := filepath.Join(dir, "*.log")
	ig, stop := runGlobWith(t, pattern, data, 5*time.Second, func(c *GlobConfig) {
		c.MaxOpenFiles = 1
		c.CloseInactive = 50 * time.Millisecond
	}, func(g *Glob) { g.drainBound = 300 * time.Millisecond })
	defer stop()
	var gen *gstream
	ig.waitFor(t, "w.log's stream reading w.log.1", func() bool {
		for _, s := range ig.g.byKey {
			if s.genOwn && s.st == stOpen {
				gen = s
			}
		}
		return gen != nil
	})
	appendTo(t, a, "a-new\n")
	ig.waitFor(t, "w.log's stream stopped for the waiting file", func() bool {
		if gen.st == stStopping {
			ig.g.maxSlots = 0
			return true
		}
		return false
	})
	lines, _ := ig.popEpochs(100*time.Millisecond, false) // not acknowledged
	ig.waitFor(t, "closed owing", func() bool { return gen.st != stStopping })
	more, _ := ig.popEpochs(100*time.Millisecond, false)
	lines = append(lines, more...)
	ig.g.mu.Lock()
	st, owe, touched := gen.st, gen.owe != nil, gen.touched
	ig.g.mu.Unlock()
	t.Logf("popped %d unacked; st %v owe %v touched %v", len(lines), st, owe, touched)
	if !owe {
		t.Fatalf("not owing")
	}
	if err := os.Remove(w); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the scan booking w.log gone", func() bool { return gen.gone })
	time.Sleep(300 * time.Millisecond)
	ig.q.AddDispatched(uint64(len(lines)))
	ig.pub.Poke()
	ig.waitFor(t, "settled", func() bool { return gen.owe == nil })
	ig.g.mu.Lock()
	t.Logf("after settle: st %v ownLost %v queued", gen.st, gen.ownLost)
	ig.g.maxSlots = 1
	ig.g.mu.Unlock()
	got := map[string]int{}
	for _, l := range lines {
		got[l]++
	}
	for k, v := range ig.popLines(4 * time.Second) {
		got[k] += v
	}
	for i := range n {
		if l := fmt.Sprintf("tail-%d", i); got[l] != 1 {
			t.Errorf("%s delivered %d times, want once", l, got[l])
			break
		}
	}
	if got["a-new"] != 1 || got["n-0"] != 0 {
		t.Errorf("a-new delivered %d times (want 1), n-0 %d (want 0)", got["a-new"], got["n-0"])
	}
	if tails, bytes, detail := ig.lost(); tails != 1 || bytes != 12 {
		t.Errorf("lostTails %d lostBytes %d (%q): want 1 and 12", tails, bytes, detail)
	}
}
