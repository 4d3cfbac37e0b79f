//go:build openfindings

package file_test

// Review 25e, findings A and A2: parked in the twenty-fifth session, older
// than it (they fail at d78bdda), review 24d C's design question again (go
// test -tags openfindings -run 'TestRev25ERA' ./source/file): a generation
// holding nothing but a header every generation starts with, compressed,
// is taken for the .gz of a file the source saw holding only that header
// (the seen catalogue's whole first bytes) and not read — its line neither
// read nor counted. README states it as not covered.

import (
	"os"
	"testing"
)

// A (older: fails at d78bdda and 79154bc too — the seen catalogue's
// whole-file entry of a header-only file; a silent loss; passes with
// queueLater's .gz seenHead check disabled):
// review 25d A's scenario with fp0 gone, but the catalogued file stays
// header-only for its whole life. Running, default rotatedNames, dateext
// naming, no inotify (a slow poll). The application writes a header line
// "# app started" (with its pid when it has one: C's and E's headers
// differ from B's, else C is "the same content under a new file key", §3)
// at the top of every file it opens. A ("a" lines) is
// rotated to app.log-20261201; B appears at app.log holding only its header
// (the application restarted at once: a quiet day) and never more. B is
// rotated to app.log-20261202, C (header + "c" lines) appears; B is read
// to its end and closed: the catalogue holds B's whole content, the 14
// header bytes. Then, between two looks, logrotate runs twice with compress:
// C to app.log-20261203.gz, D — another quiet day: the header only — to
// app.log-20261204.gz; E appears at app.log. queueLater's scan finds D's
// .gz; its decompressed bytes are exactly B's whole content, so
// seenHead(head) takes it for "a .gz of a file the source saw": skipped,
// catalogued. D's line is read by nobody and counted nowhere: lostTails 0
// (lossless) over a line never read. D is no copy of B: B was never
// compressed (it is still on disk, plain, beside D's .gz), and D is a file
// the application made two days later. Unlike the README's "not covered"
// header case, no file of D's name exists beside it.
func TestRev25ERAHeaderOnlyGzTakenForAClosedHeaderOnlyFile(t *testing.T) {
	t.Parallel()
	const hdr = "# app started"
	r := rev25HeaderRig(t, hdr) // A rotated, B: its header only, for good

	rev25RotateBMakeC(t, r, "# app started, pid 7", 22) // B rotated, C made; B read to its end and closed, just after a look

	// Two rotations between two looks, compress without delaycompress.
	rev25TwoRotationsBetweenLooks(t, r, hdr, "# app started, pid 9")
	gs := rev25SlowLooks(t, r, 33)
	if n := counts(gs)[hdr]; n != 2 && r.src.LostTails() == 0 {
		t.Errorf("%q delivered %d times (want 2: B, D), lostTails 0 (lossless): app.log-20261204.gz, a header-only generation, taken for a .gz of the closed header-only B and skipped", hdr, n)
	}
	if n := len(gs); n != 33 {
		t.Logf("%d lines delivered, want 33", n)
	}
}

// A2 (older: fails at 79154bc — fp0 — and at d78bdda too; the seen
// catalogue's entry of a file still held: at HEAD noteSeen keeps a held
// plain reader's first-noted bytes, never its longer fingerprint; a silent
// loss; passes with queueLater's .gz seenHead check disabled): review 25d A's
// scenario with B still open. Running, no inotify (a slow poll), dateext
// naming; the application writes "# app started" atop every file. A is
// rotated; B appears at app.log with its header only, and the rotation's
// noteSeen notes those 14 bytes; B gets its "b" lines (the source's
// fingerprint of B grows; the catalogue's entry does not). Then, between
// two looks: B rotated to app.log-20261202, D — a quiet day, its header
// only — made at app.log, rotated and compressed to app.log-20261203.gz,
// E made at app.log. The source still holds B (reading its end) when
// queueLater's scan meets D's .gz: its decompressed bytes, exactly the
// header, are "the whole" of B's stale entry — seenHead skips it as a .gz
// of B. D's line is neither read nor counted: lostTails 0 (lossless).
func TestRev25ERA2HeaderOnlyGzTakenForAHeldFilesFirstNotedBytes(t *testing.T) {
	t.Parallel()
	const hdr = "# app started"
	r := rev25HeaderRig(t, hdr) // A rotated, B: its header only so far
	appendTo(t, r.path, numbered("b", 0, 10)...)
	r.waitLines(21)
	r.waitSettled()

	// Between two looks: B rotated, D (header only) made, rotated and
	// compressed, E made.
	mustRename(t, r.path, r.path+"-20261202") // B
	appendTo(t, r.path+"-20261202", numbered("b", 10, 5)...)
	d := r.path + "-20261203"
	if err := os.WriteFile(d, rev25Lines(hdr), 0o644); err != nil {
		t.Fatal(err)
	}
	gzipTo(t, d, d+".gz")
	if err := os.WriteFile(r.path+".new", rev25Lines(append([]string{"# app started, pid 9"}, numbered("e", 0, 10)...)...), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRename(t, r.path+".new", r.path) // E
	gs := rev25SlowLooks(t, r, 37)
	if n := counts(gs)[hdr]; n != 2 && r.src.LostTails() == 0 {
		t.Errorf("%q delivered %d times (want 2: B, D), lostTails 0 (lossless): app.log-20261203.gz, a header-only generation, taken for a .gz of the held B by its first-noted bytes and skipped", hdr, n)
	}
	if n := len(gs); n != 37 {
		t.Logf("%d lines delivered, want 37", n)
	}
}
