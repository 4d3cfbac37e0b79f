package file

// Review 23c C (parked in the twenty-third session, fixed in the
// twenty-fourth): logrotate's compress without delaycompress applied to
// the path's pointer's own file too. readGaps found that file beside the
// path only by its key (a .gz has another one), set no bound and skipped
// the path: a compressed gap generation was neither read nor counted. It
// is found now as its source finds it (gzCopyOf mirrors findGzCopy), and
// its mtime (gzip keeps it) bounds the compressed gaps.

import (
	"os"
	"testing"
	"time"
)

func rev24aAppend(t *testing.T, p, s string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// rev24aRig builds the first two starts of the scenario: w.log (3 "ga"
// lines, O's file) read; rotated to x.log, the gap w.log.1 (3 "gap"
// lines) written, then, more than mtimeSlack later, the new w.log (3 "gb"
// lines, P's file) read by the second start.
func rev24aRig(t *testing.T) *rev18cRig {
	t.Helper()
	r, got := rev24aGapRig(t, "", numbered("gb", 3))
	if n := rev23bGapLines(got, "gb", 3); n != 3 {
		t.Fatalf("the second start delivered %d of w.log's 3 lines (delivered %v)", n, got)
	}
	return r
}

// rev24aGapRig builds the first two starts of rev24aRig's scenario with
// every generation beginning with hdr: w.log (hdr + 3 "ga" lines, O's
// file) read (firstStart); renamed to x.log, 20 ms later the gap w.log.1
// (hdr + 3 "gap" lines) written, then, more than mtimeSlack later, the new
// w.log (p, P's file) read by the second start (1.5 s). It returns what
// the second start delivered.
func rev24aGapRig(t *testing.T, hdr, p string) (*rev18cRig, map[string]int) {
	t.Helper()
	r := newRev18cRig(t)
	r.firstStart(hdr+numbered("ga", 3), nil)
	r.rename(r.w, r.x)
	time.Sleep(20 * time.Millisecond)
	r.write(r.w+".1", hdr+numbered("gap", 3))
	time.Sleep(mtimeSlack + 200*time.Millisecond)
	r.write(r.w, p)
	got, _, _, _ := r.run(1500*time.Millisecond, nil)
	return r, got
}

// rev24aGzOnly is rev24aRig, then, while stopped: x.log (O's file) out
// beside the path (w.log.2), the gap compressed (w.log.1.gz; its plain
// twin kept if keep), w.log (P's file) rotated to w.log.3 (a new w.log
// with 3 "gc" lines 20 ms later) and compressed: P's file is gzOnly.
func rev24aGzOnly(t *testing.T, keep bool) *rev18cRig {
	t.Helper()
	r := rev24aRig(t)
	r.rename(r.x, r.w+".2")
	gzipLikeGzip(t, r.w+".1", r.w+".1.gz", keep)
	r.rotate(r.w+".3", numbered("gc", 3)) // (before w.log.3 is removed: not on its inode)
	gzipLikeGzip(t, r.w+".3", r.w+".3.gz", false)
	return r
}

// rev24aNoGapSecond: w.log (3 "ga" lines, O's file) read (firstStart);
// renamed to x.log and, more than mtimeSlack later, the new w.log (3 "gb"
// lines, P's file) made; the second start run (1.5 s). It returns what
// the second start delivered.
func rev24aNoGapSecond(t *testing.T) (*rev18cRig, map[string]int) {
	t.Helper()
	r := newRev18cRig(t)
	r.firstStart(numbered("ga", 3), nil)
	r.rename(r.w, r.x)
	time.Sleep(mtimeSlack + 200*time.Millisecond)
	r.write(r.w, numbered("gb", 3))
	got, _, _, _ := r.run(1500*time.Millisecond, nil)
	return r, got
}

// laterGenerationCompressed, after rev24aNoGapSecond, while stopped: x.log
// out beside the path (w.log.2), P's file grown ("gb-3"), rotated to
// w.log.3 and, more than mtimeSlack later, a later generation (2 "gd"
// lines) written; w.log.3 compressed, the later generation rotated to
// w.log.4 (a new w.log, 3 "gc" lines, 20 ms later) and compressed.
func (r *rev18cRig) laterGenerationCompressed() {
	r.t.Helper()
	r.rename(r.x, r.w+".2")
	rev24aAppend(r.t, r.w, "gb-3\n")
	r.rename(r.w, r.w+".3")
	time.Sleep(mtimeSlack + 200*time.Millisecond)
	r.write(r.w, numbered("gd", 2)) // the later generation
	gzipLikeGzip(r.t, r.w+".3", r.w+".3.gz", false)
	r.rotate(r.w+".4", numbered("gc", 3))
	gzipLikeGzip(r.t, r.w+".4", r.w+".4.gz", false)
}

// startFor runs a start for d and logs, as the start named which, what it
// delivered and counted lost.
func (r *rev18cRig) startFor(which string, d time.Duration) (map[string]int, uint64, uint64, string) {
	r.t.Helper()
	got, tails, bytes, detail := r.run(d, nil)
	r.t.Logf("%s start: lostTails %d lostBytes %d %q (delivered %v)", which, tails, bytes, detail, got)
	return got, tails, bytes, detail
}

// wantNothing: the start counted nothing lost and delivered nothing.
func wantNothing(t *testing.T, got map[string]int, tails, bytes uint64, format string, args ...any) {
	t.Helper()
	if tails != 0 || bytes != 0 || len(got) != 0 {
		t.Errorf(format, args...)
	}
}

// While stopped: x.log (O's file) goes out beside the path (w.log.2), the
// gap is compressed (w.log.1.gz), w.log (P's file) is rotated to w.log.3
// and compressed, and the application makes a new w.log ("gc" lines).
// The gap is counted once (its 18 decompressed bytes), at the third start
// only; P's own .gz (read by its source from the pointer: nothing past
// it) is not counted; every "gc" line is delivered once.
func TestRev24ACompressedGapCountedWhenThePointersFileIsCompressedToo(t *testing.T) {
	t.Parallel()
	r := rev24aGzOnly(t, false)
	got, tails, bytes, detail := r.startFor("third", 2*time.Second)
	gap := len(numbered("gap", 3))
	if tails != 1 || bytes != uint64(gap) {
		t.Errorf("the compressed gap w.log.1.gz (%d decompressed bytes, read by no stream): lostTails %d lostBytes %d, want 1 and %d (%q)",
			gap, tails, bytes, gap, detail)
	}
	if n := rev23bGapLines(got, "gap", 3); n != 0 {
		t.Errorf("%d gap lines delivered: a glob reads no .gz from its start (delivered %v)", n, got)
	}
	if n := rev23bGapLines(got, "gc", 3); n != 3 || len(got) != 3 {
		t.Errorf("the third start delivered %v, want each gc line once and nothing else", got)
	}
	got, tails, bytes, detail = r.run(1500*time.Millisecond, nil)
	wantNothing(t, got, tails, bytes, "a fourth start counted lostTails %d lostBytes %d %q and delivered %v, want nothing (the gap was counted at the third)",
		tails, bytes, detail, got)
}

// The same without a gap, and P's file grown while stopped before it is
// rotated and compressed, and a later generation (w.log.4.gz, "gd" lines,
// written after P's last write) beside it: P's source reads P's tail from
// its .gz, then the later generation through gzip. Nothing is counted:
// neither .gz is a gap.
func TestRev24ACompressedPointersFileAndLaterGenerationNotCounted(t *testing.T) {
	t.Parallel()
	r, got := rev24aNoGapSecond(t)
	if n := rev23bGapLines(got, "gb", 3); n != 3 {
		t.Fatalf("the second start delivered %d of w.log's 3 lines (delivered %v)", n, got)
	}
	r.laterGenerationCompressed() // while stopped
	got, tails, bytes, detail := r.startFor("third", 2*time.Second)
	if tails != 0 || bytes != 0 {
		t.Errorf("lostTails %d lostBytes %d %q: P's own .gz and its later generation are read by its source, no gap", tails, bytes, detail)
	}
	want := map[string]int{"gb-3": 1, "gd-0": 1, "gd-1": 1, "gc-0": 1, "gc-1": 1, "gc-2": 1}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("line %s delivered %d times, want %d (delivered %v)", k, got[k], n, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("delivered %v, want exactly %v", got, want)
	}
}
