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
	r := newRev18cRig(t)
	r.write(r.w, numbered("ga", 3))
	if birthTimeTarget(r.w).IsZero() {
		t.Skip("no birth times: readGaps does not run (README)")
	}
	r.run(1500*time.Millisecond, nil)
	r.rename(r.w, r.x)
	time.Sleep(20 * time.Millisecond)
	r.write(r.w+".1", numbered("gap", 3))
	time.Sleep(mtimeSlack + 200*time.Millisecond)
	r.write(r.w, numbered("gb", 3))
	got, _, _, _ := r.run(1500*time.Millisecond, nil)
	if n := rev23bGapLines(got, "gb", 3); n != 3 {
		t.Fatalf("the second start delivered %d of w.log's 3 lines (delivered %v)", n, got)
	}
	return r
}

// While stopped: x.log (O's file) goes out beside the path (w.log.2), the
// gap is compressed (w.log.1.gz), w.log (P's file) is rotated to w.log.3
// and compressed, and the application makes a new w.log ("gc" lines).
// The gap is counted once (its 18 decompressed bytes), at the third start
// only; P's own .gz (read by its source from the pointer: nothing past
// it) is not counted; every "gc" line is delivered once.
func TestRev24ACompressedGapCountedWhenThePointersFileIsCompressedToo(t *testing.T) {
	t.Parallel()
	r := rev24aRig(t)
	r.rename(r.x, r.w+".2")
	gzipLikeGzip(t, r.w+".1", r.w+".1.gz", false)
	r.rename(r.w, r.w+".3")
	time.Sleep(20 * time.Millisecond)
	r.write(r.w, numbered("gc", 3)) // (before w.log.3 is removed: not on its inode)
	gzipLikeGzip(t, r.w+".3", r.w+".3.gz", false)
	got, tails, bytes, detail := r.run(2*time.Second, nil)
	t.Logf("third start: lostTails %d lostBytes %d %q (delivered %v)", tails, bytes, detail, got)
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
	if tails != 0 || bytes != 0 || len(got) != 0 {
		t.Errorf("a fourth start counted lostTails %d lostBytes %d %q and delivered %v, want nothing (the gap was counted at the third)",
			tails, bytes, detail, got)
	}
}

// The same without a gap, and P's file grown while stopped before it is
// rotated and compressed, and a later generation (w.log.4.gz, "gd" lines,
// written after P's last write) beside it: P's source reads P's tail from
// its .gz, then the later generation through gzip. Nothing is counted:
// neither .gz is a gap.
func TestRev24ACompressedPointersFileAndLaterGenerationNotCounted(t *testing.T) {
	t.Parallel()
	r := newRev18cRig(t)
	r.write(r.w, numbered("ga", 3))
	if birthTimeTarget(r.w).IsZero() {
		t.Skip("no birth times: readGaps does not run (README)")
	}
	r.run(1500*time.Millisecond, nil)
	r.rename(r.w, r.x)
	time.Sleep(mtimeSlack + 200*time.Millisecond)
	r.write(r.w, numbered("gb", 3))
	got, _, _, _ := r.run(1500*time.Millisecond, nil)
	if n := rev23bGapLines(got, "gb", 3); n != 3 {
		t.Fatalf("the second start delivered %d of w.log's 3 lines (delivered %v)", n, got)
	}
	// While stopped.
	r.rename(r.x, r.w+".2")
	rev24aAppend(t, r.w, "gb-3\n")
	r.rename(r.w, r.w+".3")
	time.Sleep(mtimeSlack + 200*time.Millisecond)
	r.write(r.w, numbered("gd", 2)) // the later generation
	gzipLikeGzip(t, r.w+".3", r.w+".3.gz", false)
	r.rename(r.w, r.w+".4")
	time.Sleep(20 * time.Millisecond)
	r.write(r.w, numbered("gc", 3))
	gzipLikeGzip(t, r.w+".4", r.w+".4.gz", false)
	got, tails, bytes, detail := r.run(2*time.Second, nil)
	t.Logf("third start: lostTails %d lostBytes %d %q (delivered %v)", tails, bytes, detail, got)
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
