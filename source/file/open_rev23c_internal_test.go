//go:build openfindings

// Review 23c, finding E: parked in the twenty-third session, a case
// README states as not covered (go test -tags openfindings -run
// 'TestRev23CE' ./source/file). It holds for plain gap generations as much
// as for compressed ones (readGaps' bounds), older than the .gz count
// (finding C, the path's pointer's own file compressed too, is fixed:
// rev24a_internal_test.go):
//   - E: a gap last written after the path's new file was made (the
//     application writes its last line to the rotated file before it
//     reopens its log): the bound is the path's file's last write.

package file

import (
	"os"
	"testing"
	"time"
)

// E: logrotate's create + compress (no delaycompress): the new w.log (P's
// file) is made empty at the rotation, and the application writes its last
// lines to the rotated file (the gap, w.log.1) until the postrotate signal
// reopens its log — after P's file was made. P's file stays empty (a quiet
// application): its stream binds it while empty, its mtime is its
// creation's. While stopped: O's file x.log goes out beside the path
// (w.log.2), the gap is compressed. countGzGap takes only a .gz last
// written before the path's file was (upMod): the gap, written after P's
// file was made, is not counted; no source reads it (the file at the path
// is P's own, read from its pointer, no generation scan). Neither read nor
// counted, lossless.
func TestRev23CEGapWrittenAfterTheEmptyPathFileWasMadeIsLostSilently(t *testing.T) {
	t.Parallel()
	r := newRev18cRig(t)
	r.write(r.w, numbered("ga", 3))
	if birthTimeTarget(r.w).IsZero() {
		t.Skip("no birth times: readGaps does not run (README)")
	}
	r.run(1500*time.Millisecond, nil)
	r.rename(r.w, r.x)
	time.Sleep(20 * time.Millisecond)
	r.write(r.w+".1", numbered("gap", 2))
	time.Sleep(20 * time.Millisecond)
	r.write(r.w, "") // logrotate's create
	time.Sleep(20 * time.Millisecond)
	f, err := os.OpenFile(r.w+".1", os.O_APPEND|os.O_WRONLY, 0) // the application, before its reopen
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("gap-2\n")
	f.Close()
	r.run(1500*time.Millisecond, nil)
	// While stopped.
	r.rename(r.x, r.w+".2")
	gzipLikeGzip(t, r.w+".1", r.w+".1.gz", false)
	got, tails, bytes, detail := r.run(2*time.Second, nil)
	delivered := rev23bGapLines(got, "gap", 3)
	t.Logf("third start: gap lines delivered %d; lostTails %d lostBytes %d %q (delivered %v)", delivered, tails, bytes, detail, got)
	if delivered == 0 && tails == 0 {
		t.Errorf("the compressed gap %s (%d decompressed bytes, read by no stream) is neither read nor counted: lostTails %d lostBytes %d %q (delivered %v)",
			r.w+".1.gz", len(numbered("gap", 3)), tails, bytes, detail, got)
	}
}
