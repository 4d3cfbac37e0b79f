//go:build openfindings

package file_test

// Review 25d, findings C and E: parked in the twenty-fifth session (go test
// -tags openfindings -run 'TestRev25DR[CE]' ./source/file).
//   - C: a .gz too short to tell, written beside a plain file of its name
//     the source read, removed before it wrote anything: taken for that
//     file's compressor failing (review 25b A3, 25d B: no loss there) —
//     a silent loss when another writer made it. README states it.
//   - E (older than the session): a second copytruncate's copy shorter
//     than what the source read, compressed, matches no first bytes the
//     seen catalogue holds: read again (a duplicate).

import (
	"os"
	"testing"
	"time"

	"tailfeed/source/file"
)

// C (older: fails at d78bdda — any file of its name left the .gz out —
// and at a54cbb9 (review 25c F); passes at 7caa5d4, which counted it; the
// latest patch's heldTwin keeps it uncounted once the .gz is gone; a
// silent loss, the flip side of review 25b A3 and of B above): review 25c F's scenario — rotatedNames
// "app.log.*.gz"; A (10 "a" lines) rotated to app.log.1, read and closed
// (in the seen catalogue); a .gz is being written in as app.log.1.gz by
// something other than A's compressor (its gzip header so far, 3 "z" lines
// to come: a pipeline, a compressor whose input is elsewhere — review 25c
// E's writer), B is rotated to app.log.3, C made: the scan notes the .gz
// torn, too short to tell, heldTwin = A (a file of its name the source
// read). Then, as in E, the writer fails and removes its output: the .gz
// is gone, A still at app.log.1. retryTorn: gone, not moved, and the file
// of its name is heldTwin's: "that file's compressor's output, removed" —
// dropped, nothing counted. Its 3 lines were read by nobody: lostTails 0
// over a loss. E (the same .gz with no file of its name) counts it; a .gz
// too short to tell cannot be told from A's failed gzip (review 25b A3) by
// anything heldTwin looks at, and DESIGN §4 wants lossless only where
// tailfeed can show that no line was skipped.
func TestRev25DRCTornGzBesideAReadNamesakeDeletedUncounted(t *testing.T) {
	t.Parallel()
	rev25dTornBesideReadNamesakeDeleted(t, false)
}

// E (older: fails the same way at a54cbb9, 7caa5d4 and d78bdda — review
// 25c D's duplicate, which the latest patch's fp0 fixes once per file; fp0 is "the first bytes as first noted", kept
// for good, and copytruncate keeps the file's inode, so its catalogue entry,
// for every cycle): rotatedNames "app.log.*.gz". Review 25c D's window
// twice over. Cycle 1: logrotate copies app.log (10 "a" lines, 80 bytes)
// to app.log.1, the application writes 2 more, logrotate cuts app.log
// (no copy read: the source read past what it holds; never opened), "b" lines
// (10) written and read; the copy compressed to app.log.1.gz. Cycle 2, the
// same: app.log.1.gz shifted to app.log.2.gz, app.log (10 "b" lines)
// copied to app.log.1, 2 more "b" lines, the cut, "c" lines, the copy
// compressed to app.log.1.gz. Then a rotation by rename (app.log to
// app.log.3, "d" lines at app.log): queueLater's scan finds both .gz in its
// window. app.log.2.gz (a-0..9) matches app.log's fp0 — the 80 "a" bytes
// noted at the open — and is skipped; app.log.1.gz (b-0..9, 80 bytes)
// matches neither fp0 nor the refreshed fingerprint (the 96 bytes of b-0..11,
// or c's): read again as a later generation, b-0..9 delivered twice.
func TestRev25DRESecondCopytruncateShortCopysGzReadAgain(t *testing.T) {
	t.Parallel()
	r := rev25Running(t, rigOpts{strategy: file.Committed, rotateWait: 50 * time.Millisecond, rotated: []string{"app.log.*.gz"}}, numbered("a", 0, 10))
	cycle := func(p string, n int) {
		rev25CopyBeforeCut(t, r, p, n)
		if err := os.Truncate(r.path, 0); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond) // the cut seen
	}
	cycle("a", 10)
	appendTo(t, r.path, numbered("b", 0, 10)...)
	r.waitLines(22)
	r.waitSettled()
	gzipTo(t, r.path+".1", r.path+".1.gz")
	time.Sleep(300 * time.Millisecond)
	mustRename(t, r.path+".1.gz", r.path+".2.gz")
	cycle("b", 22)
	appendTo(t, r.path, numbered("c", 0, 5)...)
	r.waitLines(29)
	r.waitSettled()
	gzipTo(t, r.path+".1", r.path+".1.gz")
	mustRename(t, r.path, r.path+".3") // the next rotation (create)
	appendTo(t, r.path, numbered("d", 0, 5)...)
	r.waitLines(34)
	r.waitSettled()
	time.Sleep(500 * time.Millisecond)
	gs := r.rec.all()
	if testing.Verbose() {
		t.Logf("log:\n%s", r.logs.String())
	}
	if c := counts(gs); c["a-00000"] != 1 || c["b-00000"] != 1 || len(gs) != 34 {
		t.Fatalf("%d lines delivered (a-00000 %d times, b-00000 %d times), want 34 each once: app.log.1.gz, the second copytruncate's copy of b-0..9 (read before the cut), read again as a later generation", len(gs), c["a-00000"], c["b-00000"])
	}
}
