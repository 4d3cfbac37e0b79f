package e2e

// Audit 8d: DESIGN §3, §4 and §9 for single-file feeds (no globs).
//
// Findings (failed on the product as audited; fixed in the twenty-sixth
// session):
//   - TestAud8DXPartialTruncationUnreadSilent: a live cut to a size above
//     the read position (first bytes unchanged) loses lines tailfeed saw,
//     uncounted, lossless true.
//   - TestAud8DXOnceTruncatedMidReadLossless: a ONCE_EARLIEST read whose
//     file is truncated mid-read ends END_OF_STREAM lossless with the rest
//     of the file (as it was at open) never delivered.
//
// Probes kept as regressions (pass): a symlink retargeted to a
// same-content copy keeps the epoch; rotations (and a kill -9) while the
// feed is paused; a once-read whose file is renamed away mid-read.

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

const aud8dConfig = `dataDir: ./state
status:
  listen: {{ADDR}}
shutdownTimeoutMillis: 2000
feeds:
  - name: app
    path: %s
    readStrategy: %s
    maxLineBytes: %d
    pollIntervalMillis: 50
    rotateWaitMillis: 1000
processors:
  - name: out
    feed: app
    type: file
    path: ./out.log
`

func aud8dEnv(t *testing.T, path, strategy string, maxLine int) *env {
	return newEnv(t, fmt.Sprintf(aud8dConfig, path, strategy, maxLine))
}

// aud8dWant waits for out.log to hold at least len(want) bytes and
// requires it to be exactly want.
func aud8dWant(t *testing.T, e *env, want string) {
	t.Helper()
	out := e.path("out.log")
	waitUntil(t, fmt.Sprintf("output %q", tail(want, 200)), 30*time.Second, func() bool {
		b, _ := os.ReadFile(out)
		return len(b) >= len(want)
	})
	time.Sleep(300 * time.Millisecond) // anything more (a duplicate) would land now
	if b, _ := os.ReadFile(out); string(b) != want {
		t.Fatalf("output %q, want %q", tail(string(b), 400), tail(want, 400))
	}
}

func aud8dSymlink(t *testing.T, target, link string) {
	t.Helper()
	tmp := link + ".tmp"
	os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, link); err != nil {
		t.Fatal(err)
	}
}

// TestAud8DOKRetargetToSameContent: DESIGN §4 "Symlinks": "A retarget
// is a rotation: the old target is read to its end, then the new target is
// a new file unless §3's same-content rule holds." §3: "a new file key
// whose first bytes match the fingerprint and that is not shorter than
// the offset is the same file" (same pointer and epoch).
func TestAud8DOKRetargetToSameContent(t *testing.T) {
	e := aud8dEnv(t, "./link/app.log", "COMMITTED", 1048576)
	os.MkdirAll(e.path("link"), 0o755)
	os.MkdirAll(e.path("t1"), 0o755)
	os.MkdirAll(e.path("t2"), 0o755)
	t1, t2 := e.path("t1/app.log"), e.path("t2/app.log")
	appendTo(t, t1, "a1\na2\n")
	aud8dSymlink(t, t1, e.path("link/app.log"))
	d := e.start()
	aud8dWant(t, e, "a1\na2\n")
	r := d.waitSettled(30 * time.Second)
	epoch := r.Feeds[0].Epoch
	b, _ := os.ReadFile(t1)
	os.WriteFile(t2, append(b, "a3\n"...), 0o644)
	aud8dSymlink(t, t2, e.path("link/app.log"))
	aud8dWant(t, e, "a1\na2\na3\n")
	r = waitReport(t, d, "settled at 9", 30*time.Second, func(r *report) bool {
		return r.Settled && r.Feeds[0].Pointer != nil && r.Feeds[0].Pointer.Offset == 9
	})
	if f := r.Feeds[0]; f.Epoch != epoch || f.Pointer.Epoch != epoch || !f.Lossless {
		t.Errorf("after a retarget to a same-content copy: epoch %s pointer epoch %s lossless %v; want the epoch %s kept", f.Epoch, f.Pointer.Epoch, f.Lossless, epoch)
	}
	d.stop()
}

const aud8dPullConfig = `dataDir: ./state
status:
  listen: {{ADDR}}
feeds:
  - name: app
    path: ./in.log
    readStrategy: COMMITTED
    queueCapacity: 4
    pollIntervalMillis: 50
processors:
  - name: out
    feed: app
    type: file
    path: ./out.log
  - name: slow
    feed: app
    type: pull
    maxInFlight: 1000
`

// TestAud8DXPartialTruncationUnreadSilent: the feed is paused with most of
// a 4 MB file unread; the file is cut in place to half its size (at a line
// boundary, above the read position; first bytes unchanged), no copy.
// DESIGN §4 "Nothing green over a loss": "lossless is true only while
// tailfeed can show that no line was skipped. Every case where it cannot
// is counted, in lostTails (files) and lostBytes (the bytes known to be
// gone, where known): ... a live truncation with no copy found counts
// `size last seen − read position` in lostBytes and one lost tail when
// that is positive". Observed: 20000 of 40000 lines delivered (the cut
// half, seen by tailfeed at 4,000,000 bytes, never), settled, lossless
// true, lostTails 0, lostBytes 0, no detail. (The bytes known gone are
// 2,000,000 = size last seen − new size; the test asks only that the loss
// is counted and the feed lossy.) Likely cause: Source.changed
// (source/file/rotate.go, "if size < r.readPos()") treats only a file
// shorter than the read position as truncated; a shrink above it with the
// first bytes unchanged just lowers lastSize.
func TestAud8DXPartialTruncationUnreadSilent(t *testing.T) {
	e := newEnv(t, aud8dPullConfig)
	in := e.path("in.log")
	const lineLen, lines = 100, 40000
	var b strings.Builder
	for i := range lines {
		s := fmt.Sprintf("old-%06d-", i)
		b.WriteString(s + strings.Repeat("x", lineLen-len(s)-1) + "\n")
	}
	appendTo(t, in, b.String())
	d := e.start()
	d.waitFor("reading", 15*time.Second, func(r *report) bool { return r.Feeds[0].Sequence > 0 })
	time.Sleep(time.Second) // paused; several polls saw the whole size
	r0, _ := d.status()
	cut := int64(lines / 2 * lineLen)
	if err := os.Truncate(in, cut); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // several polls see the cut
	deadline := time.Now().Add(40 * time.Second)
	var f feedReport
	for {
		ackAll(t, d, pullFrom(t, d, "slow", "max=1000&wait=100ms"))
		r, err := d.status()
		if err == nil && r.Settled && r.Feeds[0].Pointer != nil && r.Feeds[0].Pointer.Offset == sizeOf(in) {
			f = r.Feeds[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not settled within 40s: %+v %v", r, err)
		}
	}
	data, _ := os.ReadFile(e.path("out.log"))
	got := strings.Count(string(data), "\n")
	t.Logf("sequence before the cut %d; delivered %d of %d lines; lossless %v lostTails %d lostBytes %d detail %v",
		r0.Feeds[0].Sequence, got, lines, f.Lossless, f.LostTails, f.LostBytes, f.Detail)
	if got >= lines {
		t.Fatalf("every line was delivered: the cut removed nothing unread")
	}
	if f.Lossless || f.LostTails == 0 || f.LostBytes == 0 {
		t.Errorf("%d of %d lines delivered, the rest (seen by tailfeed, then cut) gone, yet lossless %v lostTails %d lostBytes %d; want false, 1, %d",
			got, lines, f.Lossless, f.LostTails, f.LostBytes, int64(lines*lineLen)-cut)
	}
	d.stop()
}

// TestAud8DXOnceTruncatedMidReadLossless: ONCE_EARLIEST is paused (an
// unpolled pull subscriber) with most of a 4 MB file unread; the file is
// truncated in place, to 0 or to half its size (at a line boundary, above
// the read position), no copy. DESIGN §4: "ONCE_EARLIEST reads from 0 to
// the file's size at open and stops (END_OF_STREAM)"; "Nothing green over
// a loss. `lossless` is true only while tailfeed can show that no line was
// skipped. Every case where it cannot is counted, in `lostTails` (files)
// and `lostBytes` (the bytes known to be gone, where known): ... a live
// truncation with no copy found counts `size last seen − read position` in
// `lostBytes` and one lost tail when that is positive". Observed: the read
// stops at the new end, END_OF_STREAM, settled, lossless true, lostTails 0,
// lostBytes 0 — the launcher is told the bounded run is complete and whole
// (truncate: 1,114,100 of 4,000,000 bytes delivered; cut: 2,000,000).
// Likely cause: Source.check (source/file/rotate.go, "if r == nil ||
// s.cfg.Strategy.Bounded() { return }") never checks a once-read's file,
// and a read that meets the end early is taken for the end of the read.
func TestAud8DXOnceTruncatedMidReadLossless(t *testing.T) {
	for _, how := range []string{"truncate", "cut"} {
		t.Run(how, func(t *testing.T) { aud8dOnceChanged(t, how) })
	}
}

// TestAud8DOKOnceRotatedMidRead: the same, the file renamed away (a new
// file at the path) while the once-read is paused: every line of the
// opened file is still delivered, then END_OF_STREAM, lossless.
func TestAud8DOKOnceRotatedMidRead(t *testing.T) { aud8dOnceChanged(t, "rename") }

func aud8dOnceChanged(t *testing.T, how string) {
	e := newEnv(t, strings.Replace(aud8dPullConfig, "COMMITTED", "ONCE_EARLIEST", 1))
	in := e.path("in.log")
	const lineLen, lines = 100, 40000
	var b strings.Builder
	for i := range lines {
		s := fmt.Sprintf("old-%06d-", i)
		b.WriteString(s + strings.Repeat("x", lineLen-len(s)-1) + "\n")
	}
	appendTo(t, in, b.String())
	d := e.start()
	d.waitFor("reading", 15*time.Second, func(r *report) bool { return r.Feeds[0].Sequence > 0 })
	time.Sleep(500 * time.Millisecond)
	switch how {
	case "rename":
		os.Rename(in, in+".1")
		appendTo(t, in, "new-1\n")
	case "truncate":
		os.Truncate(in, 0)
	case "cut":
		os.Truncate(in, int64(b.Len()/2))
	}
	time.Sleep(500 * time.Millisecond)
	deadline := time.Now().Add(40 * time.Second)
	var f feedReport
	for {
		ackAll(t, d, pullFrom(t, d, "slow", "max=1000&wait=100ms"))
		r, err := d.status()
		if err == nil && r.Settled && r.Feeds[0].State == "END_OF_STREAM" {
			f = r.Feeds[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not END_OF_STREAM within 40s: %+v %v", r, err)
		}
	}
	data, _ := os.ReadFile(e.path("out.log"))
	if how != "rename" {
		t.Logf("%s: %d of %d bytes delivered; lossless %v lostTails %d lostBytes %d", how, len(data), b.Len(), f.Lossless, f.LostTails, f.LostBytes)
		if len(data) >= b.Len() {
			t.Fatalf("every line was delivered: the %s removed nothing unread", how)
		}
		if f.Lossless || (f.LostTails == 0 && f.LostBytes == 0) {
			t.Errorf("ONCE_EARLIEST, file %s mid-read: %d of the %d bytes the file had at open delivered, END_OF_STREAM, yet lossless %v lostTails %d lostBytes %d; want lossless false and the loss counted",
				how, len(data), b.Len(), f.Lossless, f.LostTails, f.LostBytes)
		}
		d.stop()
		return
	}
	if string(data) != b.String() || !f.Lossless {
		t.Errorf("ONCE_EARLIEST over a file rotated mid-read: %d bytes out (want %d: the opened file whole), lossless %v sequence %d", len(data), b.Len(), f.Lossless, f.Sequence)
	}
	d.stop()
}

// TestAud8DOKRotationsWhilePaused: three rename rotations while the
// feed is paused with most of the first file unread (§4: "further
// rotations queue further files. Files are read in order, each to its
// end"): every line once, in order, lossless.
func TestAud8DOKRotationsWhilePaused(t *testing.T) {
	for _, kill := range []bool{false, true} {
		t.Run(fmt.Sprint("kill=", kill), func(t *testing.T) { aud8dRotationsWhilePaused(t, kill) })
	}
}

func aud8dRotationsWhilePaused(t *testing.T, kill bool) {
	e := newEnv(t, aud8dPullConfig)
	in := e.path("in.log")
	var want strings.Builder
	gen := func(tag string, n int) string {
		var b strings.Builder
		for i := range n {
			s := fmt.Sprintf("%s-%06d-", tag, i)
			b.WriteString(s + strings.Repeat("x", 99-len(s)) + "\n")
		}
		want.WriteString(b.String())
		return b.String()
	}
	appendTo(t, in, gen("g0", 20000))
	d := e.start()
	d.waitFor("reading", 15*time.Second, func(r *report) bool { return r.Feeds[0].Sequence > 0 })
	time.Sleep(300 * time.Millisecond)
	for i, tag := range []string{"g1", "g2", "g3"} {
		for j := 3 + i; j >= 1; j-- { // shift app.log.N to N+1
			os.Rename(fmt.Sprintf("%s.%d", in, j), fmt.Sprintf("%s.%d", in, j+1))
		}
		os.Rename(in, in+".1")
		appendTo(t, in, gen(tag, 5000))
		time.Sleep(300 * time.Millisecond)
	}
	if kill {
		d.kill()
		d = e.start()
	}
	deadline := time.Now().Add(40 * time.Second)
	var f feedReport
	for {
		ackAll(t, d, pullFrom(t, d, "slow", "max=1000&wait=100ms"))
		r, err := d.status()
		if err == nil && r.Settled && r.Feeds[0].Pointer != nil && r.Feeds[0].Pointer.Offset == sizeOf(in) {
			f = r.Feeds[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not settled within 40s: %+v %v", r, err)
		}
	}
	data, _ := os.ReadFile(e.path("out.log"))
	if kill {
		// Duplicates after the kill: every wanted line at least once, in order.
		got := strings.Split(string(data), "\n")
		wl := strings.Split(want.String(), "\n")
		j := 0
		for _, g := range got {
			if j < len(wl) && g == wl[j] {
				j++
			}
		}
		if j != len(wl) || !f.Lossless {
			t.Errorf("after kill -9: line %d of %d missing (%q); lossless %v lostTails %d", j, len(wl), wl[min(j, len(wl)-1)], f.Lossless, f.LostTails)
		}
		d.stop()
		return
	}
	if string(data) != want.String() || !f.Lossless {
		t.Errorf("rotations while paused: %d bytes out, want %d; lossless %v lostTails %d", len(data), want.Len(), f.Lossless, f.LostTails)
	}
	d.stop()
}
