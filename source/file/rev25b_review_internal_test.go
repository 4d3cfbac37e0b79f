package file

// Review 25b, the glob side: readGaps / gzCopyOf judge a .gz beside a glob
// path with twinRead(…, g.matched) — "its plain twin is read instead" when
// the glob matches the twin — while the path's own source judges it with
// Config.GlobMatched, which Glob.start sets only for a stream given a gone
// file's pointer (genOwn): for an ordinary stream it is nil, and its
// twinReadInstead knew only rotatedNames. G and G2 failed on the reviewed
// code; fixed in the twenty-fifth session (Config.globFiles, the glob's
// matcher, given to every glob stream for the twin rule). H (older, not
// the twin rule) fixed too: a held-back copy is told taken by any of its
// original's sources (gstream.copies), or by its compressed twin once it is
// gone (tookAsCopy).

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// rev25bLog: the glob's log, to the test's output when REV25B_LOG is set.
func rev25bLog(t *testing.T) hclog.Logger {
	if os.Getenv("REV25B_LOG") == "" {
		return hclog.NewNullLogger()
	}
	return hclog.New(&hclog.LoggerOptions{Output: os.Stderr, Level: hclog.Debug})
}

// rev25bRunGlob runs a glob over pattern (exclude, rotatedNames names)
// with the rig's data directory for d, then stops it; what it delivered
// and counted lost.
func rev25bRunGlob(t *testing.T, pattern, data string, exclude, names []string, d time.Duration) (map[string]int, uint64, uint64, string) {
	t.Helper()
	return rev25bRunGlobMid(t, pattern, data, exclude, names, d, nil)
}

// rev25bRunGlobMid is rev25bRunGlob, mid (if set) run while the glob runs
// (d counts from its end).
func rev25bRunGlobMid(t *testing.T, pattern, data string, exclude, names []string, d time.Duration, mid func()) (map[string]int, uint64, uint64, string) {
	t.Helper()
	return rev25RunGlobSet(t, pattern, data, d, mid, func(c *GlobConfig) {
		c.Stream.RotatedNames = names
		c.Stream.Logger = rev25bLog(t)
		c.Exclude = exclude
		c.CloseInactive = 50 * time.Millisecond
	})
}

// rev25RunGlobSet runs runGlobWith's glob over pattern with data (its
// config changed by set; drainBound 300 ms), consuming what it delivers;
// mid (if set) runs while the glob runs, then d passes; the glob is
// stopped (drained for up to 5 s). What it delivered and counted lost.
func rev25RunGlobSet(t *testing.T, pattern, data string, d time.Duration, mid func(), set func(*GlobConfig)) (map[string]int, uint64, uint64, string) {
	t.Helper()
	ig, stop := runGlobWith(t, pattern, data, 5*time.Second, set, func(g *Glob) { g.drainBound = 300 * time.Millisecond })
	c := ig.consumeAll()
	if mid != nil {
		mid()
	}
	time.Sleep(d)
	got := c()
	tails, bytes, detail := ig.lost()
	stop()
	return got, tails, bytes, detail
}

// rev25CopyTruncate is logrotate's copytruncate of w: its bytes copied
// to cp (mode 0600), then w cut to nothing.
func rev25CopyTruncate(t *testing.T, w, cp string) {
	t.Helper()
	data0, err := os.ReadFile(w)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cp, data0, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(w, 0); err != nil {
		t.Fatal(err)
	}
}

// rev25GlobGa: a glob directory dir holding w.log (3 "ga" lines, its path
// w) and a data directory; the pattern "dir/*" and its exclude
// "dir/*.gz".
func rev25GlobGa(t *testing.T) (dir, data, pattern string, exclude []string, w string) {
	t.Helper()
	dir, data = t.TempDir(), t.TempDir()
	pattern, exclude = filepath.Join(dir, "*"), []string{filepath.Join(dir, "*.gz")}
	w = filepath.Join(dir, "w.log")
	if err := os.WriteFile(w, []byte(numbered("ga", 3)), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, data, pattern, exclude, w
}

// G probe (passes): the glob's twin rule against a cut stream's source.
// A glob "dir/*" excluding "dir/*.gz", rotatedNames "w.log.*.gz" (the
// compressed generations only). A first start reads w.log ("ga" lines)
// and w.log.1 ("gz" lines, an earlier generation the glob matches: a
// stream of its own), every line committed. While stopped w.log.1 is being
// compressed (w.log.1.gz whole, its plain twin still there), and w.log is
// copytruncated with compress (its copy w.log.2.gz, w.log cut, then 2 "gb"
// lines written). At the second start the glob finds w.log's pointer
// naming no matched file (the cut file's first bytes differ) and gives it
// to the file at the path (adoptByPath: genOwn), whose source gets the
// glob's matcher (Config.GlobMatched): twinReadInstead takes w.log.1 for
// read by its stream, as readGaps' twinRead with g.matched does — they
// agree, w.log.1.gz is not read again.
func TestRev25BRGProbeCutGlobStreamLeavesGzOfAGlobFileOut(t *testing.T) {
	t.Parallel()
	got := rev25bCutBesideGlobTwin(t, "", "")
	if n := rev23bGapLines(got, "gz", 3); n != 0 {
		t.Errorf("second start delivered %d of w.log.1's 3 lines again", n)
	}
	if rev23bGapLines(got, "gb", 2) != 2 {
		t.Errorf("second start delivered %v, want gb-0..1 once", got)
	}
}

// G (new with this change; the glob's twin rule against an ordinary
// stream's source): G probe's scenario with every w.log beginning with
// the same 4 KiB header (hdr: the application writes it at every start of
// its log, as after a copytruncate). The cut w.log holds its header again
// and "gb" lines, shorter than the pointer's offset: its key and first
// bytes are the pointer's, so the glob keeps it an ordinary stream
// (Config.GlobMatched nil), and its source finds it cut (shorter than the
// offset): it reads the copy w.log.2.gz from the pointer, then scans for
// later generations. w.log.1.gz's twin w.log.1 is no generation name and
// the source knows no glob matcher: twinReadInstead says "nobody reads
// it", the .gz is queued as a later generation — the "gz" lines, read and
// committed by w.log.1's own stream, delivered again. readGaps (gzCopyOf:
// twinRead with g.matched) takes the twin for read by its glob stream:
// the glob and the path's source disagree. The parent rule left the .gz
// out (a file of its name).
func TestRev25BRGOrdinaryGlobStreamReadsGzOfAGlobFileAgain(t *testing.T) {
	t.Parallel()
	var hdr strings.Builder
	for i := 0; hdr.Len() < 4200; i++ {
		fmt.Fprintf(&hdr, "# header line %03d of the application's log, written at every start\n", i)
	}
	got := rev25bCutBesideGlobTwin(t, hdr.String(), hdr.String())
	if n := rev23bGapLines(got, "gz", 3); n != 0 {
		t.Errorf("second start delivered %d of w.log.1's 3 lines again (read and committed by its own stream at the first start): w.log's source read w.log.1.gz as a later generation — its twin is a glob file, which the glob (twinRead with g.matched) knows and the ordinary stream's source (GlobMatched nil) does not", n)
	}
	if rev23bGapLines(got, "gb", 2) != 2 {
		t.Errorf("second start delivered %v, want gb-0..1 once", got)
	}
}

// rev25bCutBesideGlobTwin: G's scenario; hdr begins w.log at the first
// start, hdr2 after the cut. What the second start delivered.
func rev25bCutBesideGlobTwin(t *testing.T, hdr, hdr2 string) map[string]int {
	t.Helper()
	dir, data := t.TempDir(), t.TempDir()
	pattern, exclude := filepath.Join(dir, "*"), []string{filepath.Join(dir, "*.gz")}
	names := []string{"w.log.*.gz"}
	w, w1 := filepath.Join(dir, "w.log"), filepath.Join(dir, "w.log.1")
	for p, s := range map[string]string{w1: numbered("gz", 3), w: hdr + numbered("ga", 3)} {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got1, _, _, _ := rev25bRunGlob(t, pattern, data, exclude, names, time.Second)
	if rev23bGapLines(got1, "ga", 3) != 3 || rev23bGapLines(got1, "gz", 3) != 3 {
		t.Fatalf("first start delivered %v, want ga-0..2 and gz-0..2", got1)
	}
	gzipLikeGzip(t, w1, w1+".gz", true) // being compressed: its twin still there
	// copytruncate with compress: the copy w.log.2, compressed.
	rev25CopyTruncate(t, w, w+".2")
	gzipLikeGzip(t, w+".2", w+".2.gz", false)
	rev24aAppend(t, w, hdr2+numbered("gb", 2)) // shorter than before the cut
	got, tails, bytes, detail := rev25bRunGlob(t, pattern, data, exclude, names, 2*time.Second)
	t.Logf("second start: lostTails %d lostBytes %d %q (delivered gz/gb/ga lines: %d/%d/%d)", tails, bytes, detail,
		rev23bGapLines(got, "gz", 3), rev23bGapLines(got, "gb", 2), rev23bGapLines(got, "ga", 3))
	return got
}

// G2 (new with this change; G while running, no shared header): one glob
// run ("dir/*" excluding "dir/*.gz", rotatedNames "w.log.*.gz") reads w.log
// ("ga" lines) and w.log.1 ("gz" lines, a glob file of its own); both
// streams are closed (closeInactive). Then w.log.1 is being compressed
// (w.log.1.gz whole, its twin still there) and w.log is copytruncated with
// compress (its copy w.log.2.gz — written compressed here, its plain
// copy, a glob file, left out of the scenario — w.log cut, "gb" lines
// written). The glob
// reopens w.log's stream, an ordinary one (Config.GlobMatched nil), whose
// source finds its file cut and reads the copy, then scans for later
// generations: w.log.1.gz is not left out (its twin is no generation name
// and the source knows no glob matcher), read as a later generation — the
// "gz" lines delivered twice. The parent rule left it out.
func TestRev25BRG2RunningCutGlobStreamReadsGzOfAGlobFileAgain(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	pattern, exclude := filepath.Join(dir, "*"), []string{filepath.Join(dir, "*.gz")}
	names := []string{"w.log.*.gz"}
	w, w1 := filepath.Join(dir, "w.log"), filepath.Join(dir, "w.log.1")
	for p, s := range map[string]string{w1: numbered("gz", 3), w: numbered("ga", 3)} {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var got map[string]int
	var tails, lbytes uint64
	var detail string
	got, tails, lbytes, detail = rev25bRunGlobMid(t, pattern, data, exclude, names, 3*time.Second, func() {
		time.Sleep(800 * time.Millisecond) // both read, committed, closed (closeInactive 50 ms)
		gzipLikeGzip(t, w1, w1+".gz", true)
		data0, err := os.ReadFile(w)
		if err != nil {
			t.Fatal(err)
		}
		rev25bGzipBytes(t, data0, w+".2.gz") // the copy compressed (its plain one never matched here)
		if err := os.Truncate(w, 0); err != nil {
			t.Fatal(err)
		}
		rev24aAppend(t, w, numbered("gb", 2))
	})
	t.Logf("run: lostTails %d lostBytes %d %q (delivered %v)", tails, lbytes, detail, got)
	if got["gz-0"] != 1 || got["gz-1"] != 1 || got["gz-2"] != 1 {
		t.Errorf("w.log.1's lines delivered %d, %d, %d times, want once each: w.log's source read w.log.1.gz as a later generation after its cut (its twin a glob file the ordinary stream's source does not know)",
			got["gz-0"], got["gz-1"], got["gz-2"])
	}
	if got["gb-0"] != 1 || got["gb-1"] != 1 {
		t.Errorf("delivered %v, want gb-0..1 once", got)
	}
}

// rev25bGzipBytes writes data compressed to dst.
func rev25bGzipBytes(t *testing.T, data []byte, dst string) {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(data)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// H (older: fails with the parent's generations.go, open.go and glob.go
// too; found building G2, not the twin rule):
// a glob "dir/*" excluding "dir/*.gz" (default rotatedNames). w.log ("ga"
// lines) is read to its end, committed, its stream closed
// (closeInactive). logrotate's copytruncate with compress: the copy
// w.log.2 (a glob file: a new key with a tracked file's first bytes, held
// back), w.log cut, "gb" lines written, then gzip: w.log.2.gz written,
// w.log.2 unlinked — within rotateWait. w.log's source reads the copy's
// .gz from the pointer (nothing past it); every byte of w.log was
// delivered. The glob counts the held-back w.log.2 as "renamed out of the
// glob or deleted before its stream read it to its end: its 15 bytes from
// offset 0 were never read": lostTails 1, lostBytes 15 over no loss.
func TestRev25BRHRunningCopytruncateCompressHeldCopyCountedLost(t *testing.T) {
	t.Parallel()
	_, data, pattern, exclude, w := rev25GlobGa(t)
	got, tails, lbytes, detail := rev25bRunGlobMid(t, pattern, data, exclude, nil, 3*time.Second, func() {
		time.Sleep(800 * time.Millisecond) // read, committed, closed (closeInactive 50 ms)
		rev25CopyTruncate(t, w, w+".2")
		rev24aAppend(t, w, numbered("gb", 2))
		time.Sleep(20 * time.Millisecond)
		gzipLikeGzip(t, w+".2", w+".2.gz", false)
	})
	t.Logf("run: lostTails %d lostBytes %d %q (delivered %v)", tails, lbytes, detail, got)
	if got["ga-0"] != 1 || got["ga-1"] != 1 || got["ga-2"] != 1 || got["gb-0"] != 1 || got["gb-1"] != 1 {
		t.Errorf("delivered %v, want ga-0..2 and gb-0..1 once each", got)
	}
	if tails != 0 || lbytes != 0 {
		t.Errorf("lostTails %d lostBytes %d %q: every line of w.log (and so of its copy w.log.2) was delivered", tails, lbytes, detail)
	}
}

// Cost probe (passes; not parallel: it sets the package's scanListed): a
// glob of 300 files, each with a generation kept beside it as a plain file
// and its .gz (gzip -k: the twin rule's costliest case, gzTwin decompressing
// each .gz's head), run twice (the second start a restart with every
// pointer at its file). No generation scan runs while the feed idles: the
// glob's streams are pinned (no queueLater, no noteSeen), and a start
// whose pointers name their files scans nothing either.
func TestRev25BRProbeGlobOfManyTwinPairsNoScanPerPoll(t *testing.T) {
	dir, data := t.TempDir(), t.TempDir()
	for i := range 300 {
		p := filepath.Join(dir, fmt.Sprintf("f%03d.log", i))
		if err := os.WriteFile(p, []byte(numbered(fmt.Sprintf("f%03d", i), 2)), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p+".1", []byte(numbered(fmt.Sprintf("o%03d", i), 2)), 0o600); err != nil {
			t.Fatal(err)
		}
		gzipLikeGzip(t, p+".1", p+".1.gz", true)
	}
	var mu sync.Mutex
	scans := 0
	scanListed = func(string) {
		mu.Lock()
		scans++
		mu.Unlock()
	}
	defer func() { scanListed = nil }()
	pattern := filepath.Join(dir, "*.log")
	for run := range 2 {
		got, tails, _, _ := rev25bRunGlob(t, pattern, data, nil, nil, 3*time.Second)
		mu.Lock()
		n := scans
		scans = 0
		mu.Unlock()
		t.Logf("start %d: %d lines delivered, lostTails %d, %d generation scans", run+1, len(got), tails, n)
		if n != 0 {
			t.Errorf("start %d: %d generation scans (want none: no stream's pointer names another file)", run+1, n)
		}
	}
}
