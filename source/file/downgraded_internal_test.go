package file

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file read again under a pointer epoch whose late lines were delivered
// downgraded (DESIGN §4 epoch barrier) stops that epoch at the offset it
// ended at and delivers the rest under the downgraded epoch, without a
// position, whatever the buffer and batch sizes: (epoch, position) stays
// the first delivery's (DESIGN §11 catch-up).
func TestReaderSplitsAtDowngradedEpoch(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := range 50 {
		b.WriteString(strings.Repeat("x", i%7) + "line\n")
	}
	body := b.String()
	at := int64(strings.Index(body, strings.Repeat("x", 3)+"line\n") + len("xxxline\n")) // a line's end
	for _, bufSize := range []int{16, 64, 4096} {
		for _, maxLines := range []int{1, 3, 1000} {
			p := filepath.Join(t.TempDir(), "in.log")
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			r := newReader(f, 1, 2, bufSize, 1<<20)
			r.epoch, r.downAt, r.downEpoch = 0xE1, at, 0xD1
			var found Found
			var lines int
			for {
				n, err := r.read()
				if err != nil {
					t.Fatal(err)
				}
				for {
					bt, _ := fillBatch(r, &found, false, maxLines, 1<<20, "app", p)
					if bt == nil {
						break
					}
					for i := range bt.Lines {
						end := bt.Ends[i]
						wantEpoch, wantPos := uint64(0xE1), true
						if end > at {
							wantEpoch, wantPos = 0xD1, false
						}
						if bt.Epoch != wantEpoch || bt.Positioned != wantPos {
							t.Fatalf("buf %d maxLines %d: line ending at %d (epoch end %d) under epoch %x positioned %v", bufSize, maxLines, end, at, bt.Epoch, bt.Positioned)
						}
						lines++
					}
					bt.Release()
				}
				if n == 0 {
					break
				}
			}
			f.Close()
			if lines != 50 {
				t.Fatalf("buf %d maxLines %d: %d lines, want 50", bufSize, maxLines, lines)
			}
		}
	}
}
