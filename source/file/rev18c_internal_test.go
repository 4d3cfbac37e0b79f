// Review 18c (of 6e58db4, readGaps): six findings, each failing on that
// commit, found in the eighteenth session. Fixed there: A (a shared header
// taken for a copy: a copy is the whole fingerprint or the whole file), D
// (an epochs line with no first bytes names the file only if written after
// its birth), F (a gap stream killed mid-read, then a rotation: adoptByPath
// gave its pointer, the last written, to the new file, whose source read
// the later generations again; the pointer of the file written last wins
// where all are found: review 18d). B, C, E are parked (open_rev18c_internal_test.go).

package file

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tailfeed/internal/fileutil"
	"tailfeed/pointer"
)

// rev18cRig: w.log read in a first run (pointer O), then renamed within
// the glob to x.log (keeps O); helpers for the later starts.
type rev18cRig struct {
	t             *testing.T
	dir, data     string
	pattern, w, x string
}

func newRev18cRig(t *testing.T) *rev18cRig {
	dir, data := t.TempDir(), t.TempDir()
	r := &rev18cRig{t: t, dir: dir, data: data, pattern: filepath.Join(dir, "*.log"),
		w: filepath.Join(dir, "w.log"), x: filepath.Join(dir, "x.log")}
	return r
}

func (r *rev18cRig) write(p, s string) {
	r.t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rev18cRig) rename(from, to string) {
	r.t.Helper()
	if err := os.Rename(from, to); err != nil {
		r.t.Fatal(err)
	}
}

// run starts a glob over the rig, consumes for d, stops it (drain, final
// commit) and returns what it delivered and what it counted lost.
func (r *rev18cRig) run(d time.Duration, mid func(ig *internalGlob)) (map[string]int, uint64, uint64, string) {
	r.t.Helper()
	ig, _, stop := runGlobOn(r.t, r.pattern, r.data)
	c := ig.consumeAll()
	if mid != nil {
		mid(ig)
	}
	time.Sleep(d)
	got := c()
	tails, bytes, detail := ig.lost()
	stop()
	return got, tails, bytes, detail
}

// gapRig builds the state of TestGlobGenerationBetweenTwoPointersFilesIsReadAtStart
// with contents given: the older pointer's file (x.log after the first
// run), the gap generation w.log.1, the new w.log written before the second
// run; then x.log goes out beside w.log and a third start is made.
func gapRig(t *testing.T, older, gap, newer string) (r *rev18cRig, third map[string]int, tails, bytes uint64, detail string) {
	r = newRev18cRig(t)
	r.write(r.w, older)
	if birthTimeTarget(r.w).IsZero() {
		t.Skip("no birth times")
	}
	r.run(1500*time.Millisecond, nil)
	r.rename(r.w, r.x)
	time.Sleep(20 * time.Millisecond)
	r.write(r.w+".1", gap)
	time.Sleep(20 * time.Millisecond)
	r.write(r.w, newer)
	r.run(1500*time.Millisecond, nil)
	r.rename(r.x, r.w+".2")
	third, tails, bytes, detail = r.run(2*time.Second, nil)
	return
}

// Every generation of w.log begins with the same header line (a CSV
// header, a banner the application writes when it opens its log). The new
// w.log holds only its header when its pointer last committed: its
// pointer's first bytes are the header, which is how the gap generation
// begins too. readGap takes the gap for "a copy of a pointer's file" and
// reads nothing: its lines are never delivered, lossless.
func TestRev18CAGapSharingTheNewFilesHeaderIsLost(t *testing.T) {
	t.Parallel()
	const hdr = "time,level,msg\n"
	_, got, tails, bytes, detail := gapRig(t, hdr+numbered("ga", 3), hdr+numbered("gap", 3), hdr)
	for i := range 3 {
		if l := fmt.Sprintf("gap-%d", i); got[l] != 1 {
			t.Errorf("%s delivered %d times at the third start, want 1 (delivered %v; lostTails %d lostBytes %d %q)", l, got[l], got, tails, bytes, detail)
		}
	}
}

// An empty file (v.log) was matched in an earlier run: its stream's
// pointer took it while empty, so the epochs file names its key with no
// first bytes. It was deleted; its inode was given to the gap generation
// (ext4 reuses a freed inode for the next file made in the directory).
// epochsNamed maps the key to a line without first bytes, which readGap
// takes for "read (or adopted) by a stream before": the gap generation is
// read by nobody, nothing counted.
func TestRev18CDGapOnAReusedInodeOfAnEmptyNamedFileIsLost(t *testing.T) {
	t.Parallel()
	r := newRev18cRig(t)
	v := filepath.Join(r.dir, "v.log")
	r.write(r.w, numbered("ga", 3))
	r.write(v, "")
	if birthTimeTarget(r.w).IsZero() {
		t.Skip("no birth times")
	}
	r.run(1500*time.Millisecond, nil)
	vKey := rev18cKey(t, v)
	emptyNamed := false
	lines, _ := pointer.ReadEpochs(filepath.Join(r.data, "feeds", "f.epochs"))
	for _, l := range lines {
		if l.FileKey == vKey && l.FPLen == 0 {
			emptyNamed = true
		}
	}
	if !emptyNamed {
		t.Skipf("the epochs file does not name v.log's key without first bytes: %+v", lines)
	}
	if err := os.Remove(v); err != nil {
		t.Fatal(err)
	}
	r.rename(r.w, r.x)
	time.Sleep(20 * time.Millisecond)
	reused := false
	for i := 0; i < 200 && !reused; i++ {
		r.write(r.w+".1", numbered("gap", 3))
		if rev18cKey(t, r.w+".1") == vKey {
			reused = true
			break
		}
		os.Remove(r.w + ".1")
		time.Sleep(time.Millisecond)
	}
	if !reused {
		t.Skip("v.log's inode given to no new file in 200 tries")
	}
	time.Sleep(20 * time.Millisecond)
	r.write(r.w, numbered("gb", 3))
	r.run(1500*time.Millisecond, nil)
	r.rename(r.x, r.w+".2")
	got, tails, bytes, detail := r.run(2*time.Second, nil)
	for i := range 3 {
		if l := fmt.Sprintf("gap-%d", i); got[l] != 1 {
			t.Errorf("%s delivered %d times at the third start, want 1 (delivered %v; lostTails %d lostBytes %d %q)", l, got[l], got, tails, bytes, detail)
		}
	}
}

func rev18cKey(t *testing.T, p string) uint64 {
	t.Helper()
	dev, ino, err := fileutil.DevInoPath(p)
	if err != nil {
		t.Fatal(err)
	}
	return pointer.FileKey(dev, ino)
}

// The gap stream readGaps queued at a start is killed (kill -9) while it
// reads the gap generation (its lines published, the first acknowledged):
// its pointer names the gap file, with w.log as its first path. While
// stopped, w.log is rotated (w.log → w.log.4, a new w.log). At the next
// start two pointers name w.log as their first path: w.log's own (the old
// w.log, read and committed to its end two starts before) and the gap
// stream's, written last. adoptByPath gives the new w.log the one written
// last, the gap stream's: its source reads the gap file, then every later
// generation from its start — the old w.log (w.log.4), whose lines were
// all delivered and committed: read again. (Without readGaps there is no
// second pointer: w.log's own is adopted and reads w.log.4 from its
// offset, at its end.) The gap's lines are read again too (never
// committed: allowed).
func TestRev18CFGapStreamKilledThenRotationReadsThePathsFileAgain(t *testing.T) {
	t.Parallel()
	r := newRev18cRig(t)
	r.write(r.w, numbered("ga", 3))
	if birthTimeTarget(r.w).IsZero() {
		t.Skip("no birth times")
	}
	r.run(1500*time.Millisecond, nil)
	r.rename(r.w, r.x)
	time.Sleep(20 * time.Millisecond)
	r.write(r.w+".1", numbered("gap", 3))
	time.Sleep(20 * time.Millisecond)
	r.write(r.w, numbered("gb", 3))
	if got, _, _, _ := r.run(1500*time.Millisecond, nil); got["gb-0"] != 1 {
		t.Fatalf("second run delivered %v", got)
	}
	r.rename(r.x, r.w+".2")
	ig, kill, stop := runGlobKill(t, r.pattern, r.data, 300*time.Millisecond, nil, nil)
	var first string
	for end := time.Now().Add(5 * time.Second); first == "" && time.Now().Before(end); time.Sleep(2 * time.Millisecond) {
		if b := ig.q.TryPop(); b != nil {
			first = string(b.Lines[0])
			ig.q.AddDispatched(1) // the first line only
			ig.pub.Poke()
		}
	}
	if first != "gap-0" {
		t.Fatalf("third start: first line %q, want gap-0", first)
	}
	time.Sleep(300 * time.Millisecond) // gap-0 committed
	kill()
	stop()
	// While stopped: w.log rotated (→ w.log.4), a new w.log.
	r.rename(r.w, r.w+".4")
	time.Sleep(20 * time.Millisecond)
	r.write(r.w, numbered("gc", 3))
	got, tails, bytes, detail := r.run(2*time.Second, nil)
	for _, l := range []string{"gb-0", "gb-1", "gb-2", "ga-0"} {
		if got[l] != 0 {
			t.Errorf("%s delivered %d times again after the kill and the rotation (read, acknowledged and committed two starts before; delivered %v)", l, got[l], got)
		}
	}
	if got["gc-0"] != 1 {
		t.Errorf("the new w.log's lines: delivered %v", got)
	}
	for _, l := range []string{"gap-1", "gap-2"} {
		if got[l] < 1 {
			t.Errorf("%s delivered %d times after the kill, want at least 1: never acknowledged (delivered %v; lostTails %d lostBytes %d %q)", l, got[l], got, tails, bytes, detail)
		}
	}
	if tails != 0 || bytes != 0 {
		t.Errorf("start after the kill: lostTails %d lostBytes %d %q; nothing was lost", tails, bytes, detail)
	}
}
