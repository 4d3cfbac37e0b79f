package file_test

// Review 25d (the twenty-fifth session's latest fixes, a54cbb9..79154bc:
// the seen catalogue's first-noted bytes, seenGen.fp0; a torn .gz's
// heldTwin; twinRead's told twin; the glob's copy takes told by time and
// birth). go test -count=1 -run 'TestRev25DR' ./source/file
// Each failed on the reviewed code (79154bc). Fixed in the twenty-fifth
// session: A (fp0 taken out again: review 25c D's duplicate, which it
// fixed, is as before the session — passing again, the noteSeen refresh
// that made it gone too), B (a torn .gz never told, beside the file the
// source read, is not counted when it stays torn: its compressor was
// killed), C2 (a .gz told by its bytes not to be that file's twin lets
// heldTwin go), D (rev25d_review_internal_test.go). Parked
// (open_rev25d_test.go, -tags openfindings): C (the flip side of B and of
// review 25b A3: a .gz too short to tell cannot be told from that file's
// failed compressor) and E (older: a second copytruncate's short copy,
// compressed, read again).

import (
	"os"
	"testing"
	"time"
)

// A (new with the latest patch: seenHead's first, the seen catalogue's
// first-noted bytes fp0 matched against a .gz; a silent loss; passes at
// a54cbb9, whose catalogue kept only the refreshed bytes, and at 7caa5d4
// and d78bdda): running,
// default rotatedNames, logrotate's dateext naming, no inotify (a slow
// poll: two rotations between two looks). The application writes a header
// line "# app started" at the top of every file it opens. A ("a" lines) is
// rotated to app.log-20261201 and B appears at app.log holding only its
// header: the source queues B and the rotation's noteSeen notes B's first
// bytes — the header, all B holds. B gets its "b" lines; at the next
// rotation (B to app.log-20261202, C at app.log) noteSeen refreshes B's
// entry and keeps the header as B's first-noted bytes (fp0). Then, between
// two looks, logrotate runs twice with compress (no delaycompress): C to
// app.log-20261203.gz; D — a quiet day: the header only — to
// app.log-20261204.gz; E appears at app.log. queueLater's scan finds D's
// .gz in its window; its decompressed bytes are exactly "# app started\n",
// and seenHead(head, true) matches them against B's fp0 (the same 14 bytes,
// covering as much as the .gz has): "a .gz of a file the source saw" —
// skipped, and noteSeen then catalogues its identity. D's line is read by
// nobody and counted nowhere: lostTails 0 (lossless) over a line never
// read. D is no copy of B (B went on to hold b lines; D is another file
// the application made a day later). The README's "not covered" header
// case is a .gz beside a plain file of its name; here no file of D's name
// exists, only a catalogue entry of a file that once was header-only —
// every file the source opened right after the application created it.
func TestRev25DRAHeaderOnlyGenerationsGzTakenForAFirstNotedHeaderSkipped(t *testing.T) {
	t.Parallel()
	const hdr = "# app started"
	r := rev25HeaderRig(t, hdr) // A rotated, B: its header only so far
	appendTo(t, r.path, numbered("b", 0, 10)...)
	r.waitLines(21)
	r.waitSettled()

	rev25RotateBMakeC(t, r, hdr, 32) // B rotated, C made; B read to its end and closed, just after a look

	// Two rotations between two looks, compress without delaycompress.
	rev25TwoRotationsBetweenLooks(t, r, hdr, hdr)
	gs := rev25SlowLooks(t, r, 43)
	if n := counts(gs)[hdr]; n != 4 && r.src.LostTails() == 0 {
		t.Errorf("%q delivered %d times (want 4: B, C, D, E), lostTails 0 (lossless): app.log-20261204.gz, a header-only generation, taken for a .gz of B by B's first-noted bytes and skipped", hdr, n)
	}
	if n := len(gs); n != 43 {
		t.Logf("%d lines delivered, want 43", n)
	}
}

// B (new with the session and again with the latest patch: twinRead's
// told — passes at a54cbb9, which took the held file of its name for the
// twin of a .gz too short to tell and left the .gz out, and at d78bdda,
// where any file of its name did; fails at 7caa5d4 as here): a false
// loss. rotatedNames "app.log.*.gz" (review 24d D's configuration),
// running: A (1,000 lines, every one delivered) is renamed to app.log.1
// and gzip begins app.log.1.gz (created, nothing written yet: GNU gzip's
// first write is a 16 KiB buffer), the new app.log appears; the source's
// scan notes the .gz torn (too short to tell: not "read instead";
// heldTwin = A). Then gzip dies without cleaning up (SIGKILL: logrotate's
// host rebooted, the OOM killer) — its empty output and its input A stay
// as they are. retryTorn: the .gz never ends cleanly and does not grow;
// after tornWait (10 s) it is "a compressed generation stayed torn … its
// lines are not read": lostTails 1, lossless false — although its twin A,
// still beside it under heldTwin's identity, was read whole. heldTwin is
// looked at only when the .gz is gone (review 25b A3, gzip failing
// cleanly), not when it stays torn. DESIGN §4 "Nothing green over a loss"
// counts what "tailfeed cannot show that no line was skipped" — here it
// can: the .gz's only possible content is the twin's, read.
func TestRev25DRBGzOnlyNamesCompressKilledTwinReadCountedLost(t *testing.T) {
	t.Parallel()
	r := rev25bGzJustBegun(t)    // gzip begun, then killed
	time.Sleep(12 * time.Second) // past tornWait
	r.waitSettled()
	gs := r.rec.all()
	if d := rev25bDup(gs); len(d) > 0 || len(gs) != 1010 {
		t.Errorf("%d lines delivered (want 1010), %d more than once", len(gs), len(d))
	}
	if n := r.src.LostTails(); n != 0 {
		t.Errorf("lostTails %d (detail %q), want 0: every line of app.log.1 was delivered; only its killed compressor's empty output stayed",
			n, r.src.Detail())
	}
}

// C2 (as C: older, new with heldTwin in kind; the sharper case): the .gz noted torn while too short to tell
// (heldTwin = A), then its first line flushed — its decompressed bytes
// ("z-00000") now tell that A, of its name, is not its twin — then its
// writer fails and removes it. retryTorn never looks at a still-torn .gz's
// first bytes again (only its size), so heldTwin stands: dropped, nothing
// counted, though the source could see it was no output of A's compressor.
func TestRev25DRC2TornGzToldNoTwinThenDeletedUncounted(t *testing.T) {
	t.Parallel()
	rev25dTornBesideReadNamesakeDeleted(t, true)
}

// rev25dTornBesideReadNamesakeDeleted: C's scenario; told: the .gz's first
// line flushed before it is deleted.
func rev25dTornBesideReadNamesakeDeleted(t *testing.T, told bool) {
	r := rev25TwoGens(t, "")
	full, torn := rev25bGz(t, rev25Lines(numbered("z", 0, 3)...), len("z-00000\n"))
	if err := os.WriteFile(r.path+".1.gz", full[:10], 0o644); err != nil { // the gzip header only
		t.Fatal(err)
	}
	rev25ThirdGen(t, r, "") // B rotated, C; the scan noted the .gz torn
	if told {
		if err := os.WriteFile(r.path+".1.gz", full[:torn], 0o644); err != nil { // its first line flushed (same inode)
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	if err := os.Remove(r.path + ".1.gz"); err != nil { // its writer failed
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	r.waitSettled()
	if testing.Verbose() {
		t.Logf("log:\n%s", r.logs.String())
	}
	if n := rev25WaitZ(r); n != 3 && r.src.LostTails() == 0 {
		t.Errorf("app.log.1.gz (3 lines, being written in beside the read app.log.1, then deleted unfinished): %d of its lines delivered, lostTails 0 (lossless)", n)
	}
}
