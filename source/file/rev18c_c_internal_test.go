package file

// Review 18c, finding C (parked in the eighteenth session, fixed in the
// twenty-third): a gap generation — born beside a glob path between two
// pointers' files, read by neither (readGaps) — compressed before the start
// that would read it. A glob stream reads no .gz from its start, and its
// birth time is the compression's: it was neither read nor counted. It is
// counted now (countGzGap), once, and the .gz files that are no gap are
// left alone.

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// gzipLikeGzip compresses src to dst as gzip(1) does — dst keeps src's
// modification time — and removes src unless keep (the moment between
// gzip's write and its unlink).
func gzipLikeGzip(t *testing.T, src, dst string, keep bool) {
	t.Helper()
	st, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(data)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(dst, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	if !keep {
		if err := os.Remove(src); err != nil {
			t.Fatal(err)
		}
	}
}

// rev18cGzGap runs the gap scenario of gapRig with the gap generation
// compressed before the third start. It returns the rig and what the third
// start delivered and counted.
func rev18cGzGap(t *testing.T, gap string) (*rev18cRig, map[string]int, uint64, uint64, string) {
	return rev23aGz(t, numbered("ga", 3), gap, numbered("gb", 3), nil, 2*time.Second)
}

// The compressed gap generation is counted: lostTails 1, lostBytes its
// decompressed size, its path in detail; a fourth start counts it no more.
func TestRev18CCCompressedGapGenerationIsCounted(t *testing.T) {
	t.Parallel()
	gap := numbered("gap", 3)
	r, got, tails, bytes, detail := rev18cGzGap(t, gap)
	for i := range 3 {
		if l := fmt.Sprintf("gap-%d", i); got[l] != 0 {
			t.Errorf("%s delivered %d times: a .gz is not read from its start (delivered %v)", l, got[l], got)
		}
	}
	if tails != 1 || bytes != uint64(len(gap)) || !strings.Contains(detail, r.w+".1.gz") {
		t.Fatalf("want the compressed gap counted once (lostTails 1, lostBytes %d, detail naming %s); got lostTails %d lostBytes %d %q",
			len(gap), r.w+".1.gz", tails, bytes, detail)
	}
	got, tails, bytes, detail = r.run(1500*time.Millisecond, nil)
	wantNotCounted(t, tails, bytes, "a fourth start counted again: lostTails %d lostBytes %d %q (delivered %v)", tails, bytes, detail, got)
}

// A .gz of lines a stream read before (the gap's content is the older
// pointer's file's, byte for byte: the epochs file names its first bytes)
// is not counted.
func TestRev18CCCompressedCopyOfReadFileNotCounted(t *testing.T) {
	t.Parallel()
	_, got, tails, bytes, detail := rev18cGzGap(t, numbered("ga", 3))
	wantNotCounted(t, tails, bytes, "a compressed copy of lines read before was counted: lostTails %d lostBytes %d %q (delivered %v)", tails, bytes, detail, got)
}

// A .gz whose plain twin is beside it (compressed, the plain file not
// removed yet) is the twin's: the plain gap generation is read, the .gz
// not counted.
func TestRev18CCGzWithPlainTwinLeftToTheTwin(t *testing.T) {
	t.Parallel()
	r := newRev18cRig(t)
	r.firstStart(numbered("ga", 3), nil)
	got, tails, bytes, detail := r.compressedGapStart(numbered("gap", 3), numbered("gb", 3), true, 2*time.Second)
	for i := range 3 {
		if l := fmt.Sprintf("gap-%d", i); got[l] != 1 {
			t.Errorf("%s delivered %d times, want once from the plain twin (delivered %v)", l, got[l], got)
		}
	}
	wantNotCounted(t, tails, bytes, "the .gz of a plain twin was counted: lostTails %d lostBytes %d %q", tails, bytes, detail)
}

// With nothing at the path (logrotate renamed it, the application has not
// written since: besideAtStart's "alone"), a generation born after the
// pointer's file and compressed while stopped is read by nobody: counted
// once, never both delivered and counted.
func TestRev18CCCompressedGapNothingAtPath(t *testing.T) {
	t.Parallel()
	r := newRev18cRig(t)
	r.firstStart(numbered("ga", 3), nil)
	r.rename(r.w, r.w+".2")
	time.Sleep(20 * time.Millisecond)
	gap := numbered("gap", 3)
	r.write(r.w+".1", gap)
	gzipLikeGzip(t, r.w+".1", r.w+".1.gz", false)
	got, tails, bytes, detail := r.run(2*time.Second, nil)
	delivered := rev23bGapLines(got, "gap", 3)
	t.Logf("delivered %d lostTails %d lostBytes %d %q", delivered, tails, bytes, detail)
	switch {
	case delivered == 3 && tails == 0:
		// read (through gzip, as a later generation): fine
	case delivered == 0 && tails == 1 && bytes == uint64(len(gap)):
		// counted
	default:
		t.Errorf("gap lines delivered %d times in all with lostTails %d lostBytes %d %q: want all read and nothing counted, or none read and the gap counted (delivered %v)",
			delivered, tails, bytes, detail, got)
	}
}
