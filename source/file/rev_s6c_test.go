package file_test

import (
	"os"
	"strings"
	"testing"
)

// DESIGN §4: "A once-read's bytes after the last terminator are not
// delivered; `unterminated` is their count in bytes" (README: "a once-read:
// never delivered, not even as pieces"). 00397a3 enforces this by moving a
// once-read's limit back to just after the last terminator (reader.onceEnd,
// a backward scan, lastTermEnd). A resumed once-read (a reload, a glob
// stream taken up again) reads to Resume.Limit, its size when first
// opened. When the file is now shorter than that (cut after the
// fingerprint's 4 KiB, the resume still valid: same head, not shorter than
// the offset), lastTermEnd's first ReadAt hits EOF and returns an error;
// onceEnd then gives up ("the reads fail the same way" — they do not: the
// reads stop at EOF without error) and leaves the limit past the last
// terminator. The once-read then reads the unterminated tail and the
// splitter cuts maxLineBytes pieces from it.
// Expected: nothing after the last "\n" is delivered, unterminated 27.
// Observed: "0123456789" and "ABCDEFGHIJ" are delivered as lines.
func TestRevS6cResumedOnceReadOfShrunkFileDeliversTailPieces(t *testing.T) {
	t.Parallel()
	head := strings.Repeat("012345678\n", 500) // 5,000 bytes: past the 4 KiB fingerprint
	tail := "0123456789ABCDEFGHIJxyzzyQQQ"     // 28 bytes, no terminator
	r := onceRead(t, "", head+tail, nil)
	rp := r.src.ResumePoint()
	if rp == nil {
		t.Fatal("no resume point")
	}
	size := int64(len(head) + len(tail))
	if rp.Offset != int64(len(head)) || rp.Limit != size {
		t.Fatalf("resume point offset %d limit %d, want %d, %d", rp.Offset, rp.Limit, len(head), size)
	}
	// The last byte is cut: the file is one byte shorter than the limit.
	if err := os.Truncate(r.path, size-1); err != nil {
		t.Fatal(err)
	}
	r2 := onceRead(t, r.dir, "", rp)
	if got := lines(r2.rec.all()); len(got) != 0 {
		t.Errorf("resumed once-read of a file cut below its limit inside its unterminated last line: delivered %q, want nothing (bytes after the last terminator are never delivered, not even as pieces)", got)
	}
	if got := r2.src.Unterminated(); got != int64(len(tail)-1) {
		t.Errorf("unterminated %d, want %d", got, len(tail)-1)
	}
}
