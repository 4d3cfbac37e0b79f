//go:build openfindings

// Review 9's passing probes (ninth session), out of the default build to
// keep CI's time: go test -tags openfindings ./e2e -run TestRev9OK.

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestRev9OKNewNameRetiredInodeCommitted: the same under COMMITTED (the
// diff's fix) — kept as a probe.
func TestRev9OKNewNameRetiredInodeCommitted(t *testing.T) { rev9NewNames(t, "COMMITTED") }

// TestRev9OKTruncatedEmptyThenRegrown: see rev9TruncEmpty.
func TestRev9OKTruncatedEmptyThenRegrown(t *testing.T) {
	t.Run("same-path", func(t *testing.T) { rev9TruncEmpty(t, false) })
	t.Run("renamed", func(t *testing.T) { rev9TruncEmpty(t, true) })
}

// TestRev9OKCopytruncateRenamedThenRestart (passed 1 of 1): XC's "within" case, then a
// clean stop and a restart (nothing deleted: a.log.1 and b.log are on
// disk, every line acknowledged and committed). DESIGN §4/§7 "lossless is
// true only while tailfeed cannot show … skipped"; only a tail that cannot
// be found is a lost tail; §2 no duplicate without a crash. Both pointers
// left by XC's two streams name b.log's key.
func TestRev9OKCopytruncateRenamedThenRestart(t *testing.T) {
	rev9CopyRename(t, "within", true)
}

// TestRev9OKHardLinkUnlinked: see rev9HardLink.
func TestRev9OKHardLinkUnlinked(t *testing.T) {
	t.Run("open", func(t *testing.T) { rev9HardLink(t, false) })
	t.Run("closed", func(t *testing.T) { rev9HardLink(t, true) })
}

// TestRev9OKNewNameReusedInodeSameHeader (passed 1 of 1, 12 reuses): DESIGN §10 "a key whose file
// was seen deleted … is retired, so a file that later appears with it is a
// new stream whatever its first bytes"; "A new key is a new stream, read
// from its start"; §2 no line lost. As TestAud4GXNewNameWithRetiredInodeNeverRead
// (files under new names, each deleted once read; ext4 gives the next file
// a deleted file's inode), but every file starts with the same header line
// "h 0", and every other file holds only that header. A new file with a
// header-only file's inode then starts with that file's whole content: its
// first bytes match the pointer's fingerprint, and sameFile (first bytes,
// since no descriptor holds the key) takes it for the deleted file at its
// offset — its header line is never delivered.
func TestRev9OKNewNameReusedInodeSameHeader(t *testing.T) {
	e := newEnv(t, aud4Cfg("./in/*.log", "    scanIntervalMillis: 1000\n", aud4OutSink))
	in := e.path("in")
	writeFileLines(t, filepath.Join(in, "keep.log"), "k", 0, 1)
	d := e.start()
	out := e.path("out.log")
	d.waitSettled(20 * time.Second)
	inodes := map[uint64]int{}
	reuses := 0
	for i := 1; i <= 120 && reuses < 12; i++ {
		tag := fmt.Sprintf("f%03d", i)
		p := filepath.Join(in, tag+".log")
		writeFileLines(t, p, "h", 0, 1)
		if i%2 == 0 {
			writeFileLines(t, p, tag, 0, 3)
		}
		ino := rev9Ino(p)
		prev, reused := inodes[ino]
		inodes[ino] = i
		if reused {
			reuses++
		}
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) && (len(perTag(t, out)["h"]) < i || (i%2 == 0 && len(perTag(t, out)[tag]) < 3)) {
			time.Sleep(5 * time.Millisecond)
		}
		if h, n := len(perTag(t, out)["h"]), len(perTag(t, out)[tag]); h < i || (i%2 == 0 && n < 3) {
			r, _ := d.status()
			t.Fatalf("new file %s.log: after 5 s, %d header lines delivered for %d files, %d of its own lines; feed state %s settled %v lossless %v (its inode was f%03d.log's, deleted after it was read: %v)", tag, h, i, n, r.Feeds[0].State, r.Settled, r.Lossless, prev, reused)
		}
		d.waitSettled(20 * time.Second)
		time.Sleep(20 * time.Millisecond)
		os.Remove(p)
		time.Sleep(30 * time.Millisecond)
	}
	t.Logf("%d inode reuses, every file read", reuses)
}

// TestRev9OKAdoptedPointerQueuedFileRenamed (passed 1 of 1): DESIGN §10 "A rename within the
// glob keeps the stream"; §4 "Restart after rotation" (the pointer's
// generation beside the path read from the offset to its end first, then
// the file at the path); §2 no gap, no duplicate without a crash; §7
// lossless. Run 1 reads a.log (g0) and stops. While stopped: a.log ->
// a.log.1 (out of the glob) with 2 more g0 lines, a new a.log (g1, 5
// lines), and big b/c/d.log. Run 2: an unpolled pull client and
// maxOpenFiles 2 keep a.log queued (its stream given g0's pointer, still
// naming g0's key); a.log is then renamed within the glob to z.log before
// its turn. Before the change an unchanged file renamed within the glob
// kept its stream (size and mtime equal); now the pointer's first bytes
// (g0's) are asked of z.log (g1).
func TestRev9OKAdoptedPointerQueuedFileRenamed(t *testing.T) {
	e := newEnv(t, rev9WaitCfg)
	in := e.path("in")
	a := filepath.Join(in, "a.log")
	writeFileLines(t, a, "g0", 0, 5)
	d := e.start()
	got := pullAckByFirstByte(t, d, "pl")
	d.waitSettled(20 * time.Second)
	d.stop()
	if got['g'] != 5 {
		t.Fatalf("run 1: %v", got)
	}
	os.Rename(a, a+".1")
	writeFileLines(t, a+".1", "g0", 5, 2)
	writeFileLines(t, a, "g1", 0, 5)
	for _, c := range "bcd" {
		writeFileLines(t, filepath.Join(in, string(c)+".log"), string(c), 0, 3000)
	}
	d = e.start()
	time.Sleep(1500 * time.Millisecond)
	gs := getGlobStatus(t, d)
	_, _, _, state, off, _, ok := aud3Row(gs, "a.log")
	t.Logf("a.log before the rename: %v %s offset %d", ok, state, off)
	if err := os.Rename(a, filepath.Join(in, "z.log")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond)
	lines := rev9PullLines(t, d, "pl")
	r := d.waitSettled(30 * time.Second)
	f := r.feed(t, "app")
	var bad []string
	for i := 0; i < 7; i++ {
		if l := fmt.Sprintf("g0 %d", i); (i >= 5 && lines[l] != 1) || (i < 5 && lines[l] > 1) {
			bad = append(bad, fmt.Sprintf("%s×%d", l, lines[l]))
		}
	}
	for i := 0; i < 5; i++ {
		if l := fmt.Sprintf("g1 %d", i); lines[l] != 1 {
			bad = append(bad, fmt.Sprintf("%s×%d", l, lines[l]))
		}
	}
	if len(bad) > 0 || !f.Lossless || f.LostTails != 0 {
		t.Errorf("lines not delivered exactly once: %v; lossless %v lostTails %d; want g0 5..6 and g1 0..4 once, lossless\nfiles: %+v", bad, f.Lossless, f.LostTails, getGlobStatus(t, d).Feeds[0].Files)
	}
	d.stop()
}

// TestRev9OKKill9CopytruncateOutOfGlob: aud4's kill -9 rotation soak
// (DESIGN §2 no gap; §10 exactly-once output byte-identical per input
// file, per-path order; §7 lossless: every file is still on disk) with
// copytruncate rotations, the copies named out of the glob (p.log.N).
//
// exactlyOnce byte-identical output does not hold (copies re-read as later
// generations under new epochs at each restart: duplicates, which §4
// allows: "Reading a file twice is a duplicate, never a gap"), so only no
// gap and lossless are checked (exact false).
func TestRev9OKKill9CopytruncateOutOfGlob(t *testing.T) {
	aud4Kill9Rotations(t, "./in/*.log", "", false, rev9CopyTruncate)
}

// TestRev9OKCopytruncateKill9: see rev9CopyKill.
func TestRev9OKCopytruncateKill9(t *testing.T) {
	t.Run("nothing-acked", func(t *testing.T) { rev9CopyKill(t, false) })
	t.Run("acked", func(t *testing.T) { rev9CopyKill(t, true) })
}

// TestRev9OKCopytruncateCopyInGlob: copytruncate whose copy the glob
// matches (logrotate's dateext with `extension .log`: a-1.log), while the
// pull client does not poll, then everything pulled: DESIGN §10 "a new key
// whose first bytes match a tracked file's fingerprint is held back …; if
// the tracked file is truncated meanwhile, the new file is its copy and is
// read from the old offset under the old stream"; §2 every line, no
// duplicate without a crash; §7 lossless.
func TestRev9OKCopytruncateCopyInGlob(t *testing.T) {
	e := newEnv(t, fmt.Sprintf(rev9PullCfg, ""))
	in := e.path("in")
	a := filepath.Join(in, "a.log")
	writeFileLines(t, a, "a", 0, 200)
	d := e.start()
	evs := pullFromN(t, d, "pl", 16, "")
	ackAll(t, d, evs)
	d.waitFor("16 acknowledged, paused", 20*time.Second, func(r *report) bool {
		return r.Feeds[0].Acknowledged >= 16 && r.Feeds[0].Paused
	})
	data, _ := os.ReadFile(a)
	if err := os.WriteFile(filepath.Join(in, "a-1.log"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(a, 0); err != nil {
		t.Fatal(err)
	}
	writeFileLines(t, a, "n", 0, 50)
	time.Sleep(2500 * time.Millisecond)
	got := rev9PullLines(t, d, "pl")
	r := d.waitSettled(30 * time.Second)
	f := r.feed(t, "app")
	var missing, dup []string
	for i := 0; i < 250; i++ {
		l := fmt.Sprintf("a %d", i)
		if i >= 200 {
			l = fmt.Sprintf("n %d", i-200)
		} else if i < 16 {
			continue
		}
		switch c := got[l]; {
		case c == 0:
			missing = append(missing, l)
		case c > 1:
			dup = append(dup, fmt.Sprintf("%s×%d", l, c))
		}
	}
	if len(missing) > 0 || len(dup) > 0 || !f.Lossless {
		t.Errorf("copy in the glob: missing %d %v, duplicated %d %v; lossless %v lostTails %d lostBytes %d\nfiles: %+v", len(missing), rev9Head(missing), len(dup), rev9Head(dup), f.Lossless, f.LostTails, f.LostBytes, getGlobStatus(t, d).Feeds[0].Files)
	}
	d.stop()
}

// TestRev9OKReplaceWhileBehind: see rev9ReplaceWhileBehind.
func TestRev9OKReplaceWhileBehind(t *testing.T) {
	for _, mode := range []string{"rename", "rm"} {
		for _, ra := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s-renamed%v", mode, ra), func(t *testing.T) { rev9ReplaceWhileBehind(t, mode, ra) })
		}
	}
}
