package file_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"tailfeed/pointer"
	"tailfeed/source/file"
)

// r2Lines shows gs's first and last lines with their positions and epochs.
func r2Lines(gs []got) string {
	var b []string
	for _, g := range gs {
		b = append(b, fmt.Sprintf("%q@%d/%x", g.Line, g.Pos, g.Epoch&0xffff))
	}
	if len(b) > 6 {
		b = append(b[:3], append([]string{"…"}, b[len(b)-3:]...)...)
	}
	return strings.Join(b, " ")
}

// startCutSettled starts r with the file at path copied and cut at stage
// at of its open (then appended after the cut), and waits until it settled.
func startCutSettled(t *testing.T, r *rig, path, at string, then []string) {
	t.Helper()
	hook, cut := cutOnce(t, path, at, then)
	r.opts.startHook = hook
	r.start()
	r.waitFor("the cut", 10*time.Second, cut)
	time.Sleep(500 * time.Millisecond)
	r.waitSettled()
}

// b33 is n lines of 33 bytes.
func b33(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("b-%030d", i)) // 32 bytes + '\n' = 33
	}
	return out
}

// Review 42's second round of the start-up copytruncate fix (each failed on
// its second version, which judged only the pointer by headStat's bytes): positions taken by reading the file again after its
// first bytes and size (a resumed stream's first bytes, LATEST's last line,
// a glob's end-at-start) read the cut content while the fingerprint was
// the old one's, and the copy was read from them.

// R2-1: LATEST, cut at "opened" and written past the old size: the start
// position is computed by lastLineStart from the NEW content, the copy is
// read from it.
func TestR2LatestCutAfterHeadStatFragment(t *testing.T) {
	t.Parallel()
	r := newRig(t, t.TempDir(), rigOpts{strategy: file.Latest})
	aLines(t, r.path, 400) // 8000 bytes
	then := b33(300)       // 9900 bytes
	startCutSettled(t, r, r.path, "opened", then)
	for _, g := range r.rec.all() {
		if !strings.HasPrefix(g.Line, "b-") {
			t.Fatalf("LATEST delivered %q (pos %d) — not a line written after the start; all: %s", g.Line, g.Pos, r2Lines(r.rec.all()))
		}
	}
	t.Logf("delivered %d lines: %s", r.rec.len(), r2Lines(r.rec.all()))
}

// R2-2: EARLIEST reload (Resume), cut at "opened": resumes() reads the file
// afresh, finds the cut content, starts at 0 under a new epoch, and the
// copy is read from 0: every line the previous instance delivered again.
func TestR2ResumeEarliestCutAfterHeadStat(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := dir + "/app.log"
	aLines(t, path, 400)
	_, rp := resumeRig(t, dir, file.Earliest, nil, 400)
	if rp == nil {
		t.Fatal("no resume point")
	}
	r2 := newRig(t, dir, rigOpts{strategy: file.Earliest, resume: rp})
	startCutSettled(t, r2, path, "opened", nil)
	if n := r2.rec.len(); n != 0 || r2.src.LostTails() != 0 {
		t.Fatalf("after a reload and a copytruncate in its open: %d lines delivered again (want 0; %s), lostTails %d lostBytes %d detail %q",
			n, r2Lines(r2.rec.all()), r2.src.LostTails(), r2.src.LostBytes(), r2.src.Detail())
	}
}

// R2-3: LATEST reload (Resume), lines appended during the reload, cut at
// "opened": resumes() fails on the cut content, lastLineStart on the cut
// file returns the old size, the copy is read from there: the appended
// lines are never delivered and nothing is counted.
func TestR2ResumeLatestCutAfterHeadStat(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := dir + "/app.log"
	appendTo(t, path, "before")
	r := newRig(t, dir, rigOpts{strategy: file.Latest}).start()
	r.waitSettled()
	appendTo(t, path, "one")
	r.waitLines(1)
	r.stop()
	rp := r.src.ResumePoint()
	if rp == nil {
		t.Fatal("no resume point")
	}
	appendTo(t, path, "during-1", "during-2") // while the feed restarts
	r2 := newRig(t, dir, rigOpts{strategy: file.Latest, resume: rp})
	startCutSettled(t, r2, path, "opened", nil)
	l := strings.Join(lines(r2.rec.all()), ",")
	if l != "during-1,during-2" {
		t.Fatalf("restarted LATEST delivered %q, want during-1,during-2; lostTails %d lostBytes %d detail %q",
			l, r2.src.LostTails(), r2.src.LostBytes(), r2.src.Detail())
	}
}

// R2-6: a glob's LATEST stream with the end taken at the glob's start
// (EndAt, EndHead), cut at "opened": headIs reads the cut file, takes it for
// rewritten since, end 0; the copy is read from 0 — every line written
// before the start delivered by LATEST.
func TestR2LatestEndAtCutAfterHeadStat(t *testing.T) {
	t.Parallel()
	r := newRig(t, t.TempDir(), rigOpts{strategy: file.Latest})
	aLines(t, r.path, 400) // 7600 bytes
	b, _ := os.ReadFile(r.path)
	r.opts.cfgMod = func(c *file.Config) {
		c.HasEndAt, c.EndAt = true, int64(len(b))
		c.EndHeadLen, c.EndHead = 4096, pointer.Fingerprint(b[:4096])
	}
	startCutSettled(t, r, r.path, "opened", nil)
	if n := r.rec.len(); n != 0 {
		t.Fatalf("LATEST delivered %d lines written before the start (%s); detail %q", n, r2Lines(r.rec.all()), r.src.Detail())
	}
}
