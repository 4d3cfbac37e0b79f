package file_test

import (
	"os"
	"testing"
	"time"

	"tailfeed/source/file"
)

// A line ended by a lone '\r' at the end of the file waits, while tailing,
// for the byte after it (it may be the first half of "\r\n"). When the file
// is left for good it is a terminator (DESIGN §4): the line is delivered.

// waitLine waits until line was delivered and returns its first delivery.
func (r *rig) waitLine(line string) got {
	r.t.Helper()
	var g got
	seen := 0
	// Only the deliveries since the last poll are looked at: copying all of
	// them (15,000 in TestGzCutBeforeReadIsCounted) every 5 ms under -race
	// held the recorder's lock against the source's deliveries; in CI the
	// wait's 10 s ran out with the line not yet recorded. 30 s now.
	r.waitFor("line "+line, 30*time.Second, func() bool {
		for _, d := range r.rec.since(seen) {
			seen++
			if d.Line == line {
				g = d
				return true
			}
		}
		return false
	})
	return g
}

// Rename rotation: the last line of the rotated file is published before
// the switch, under its epoch with its position.
func TestLoneCRLastLineOfRotatedFileIsDelivered(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed, rotateWait: 200 * time.Millisecond})
	if err := os.WriteFile(r.path, []byte("a1\ra2\ra3\r"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.start()
	first := r.waitLines(2)[0]
	if err := os.Rename(r.path, r.path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.path, []byte("b1\rb2\r"), 0o644); err != nil {
		t.Fatal(err)
	}
	a3 := r.waitLine("a3")
	r.waitLine("b1")
	r.waitSettled()
	r.stop()
	if !a3.Positioned || a3.Epoch != first.Epoch || a3.Pos != 9 {
		t.Fatalf("a3 delivered as %+v, want positioned at 9 under epoch %x", a3, first.Epoch)
	}
	if c := counts(r.rec.all()); c["a3"] != 1 || c["b1"] != 1 {
		t.Fatalf("delivered %v", lines(r.rec.all()))
	}
}

// Deletion: the open file is closed rotateWait after the path went missing;
// its last line comes first.
func TestLoneCRLastLineOfDeletedFileIsDelivered(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed, rotateWait: 200 * time.Millisecond})
	if err := os.WriteFile(r.path, []byte("a1\ra2\r"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.start()
	r.waitLines(1)
	if err := os.Remove(r.path); err != nil {
		t.Fatal(err)
	}
	a2 := r.waitLine("a2")
	r.waitFor("waiting for file", 10*time.Second, func() bool { return r.src.State() == file.WaitingForFile })
	if err := os.WriteFile(r.path, []byte("b1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.waitLine("b1")
	r.stop()
	if !a2.Positioned || a2.Pos != 6 {
		t.Fatalf("a2 delivered as %+v, want positioned at 6", a2)
	}
	if c := counts(r.rec.all()); c["a2"] != 1 || len(r.rec.all()) != 3 {
		t.Fatalf("delivered %v", lines(r.rec.all()))
	}
}

// Truncation in place with no copy: the lines read before the truncation
// are published, the last one too.
func TestLoneCRLastLineOfTruncatedFileIsDelivered(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed})
	if err := os.WriteFile(r.path, []byte("a1\ra2\r"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.start()
	r.waitLines(1)
	if err := os.Truncate(r.path, 0); err != nil {
		t.Fatal(err)
	}
	r.waitFor("the truncation noticed", 10*time.Second, func() bool { return r.warned("truncated") })
	appendTo(t, r.path, "b1")
	r.waitLine("b1")
	r.waitSettled()
	r.stop()
	if c := counts(r.rec.all()); c["a2"] != 1 || len(r.rec.all()) != 3 {
		t.Fatalf("delivered %v", lines(r.rec.all()))
	}
}

// A switched-away file: a line appended to it after the switch and ended by
// a lone '\r' is delivered (downgraded) when the file is closed; a '\n'
// written after a '\r' whose line was taken completes that terminator (no
// empty line).
func TestLoneCRLastLineOfOldFileAtClose(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed, rotateWait: 200 * time.Millisecond})
	if err := os.WriteFile(r.path, []byte("a1\ra2\r"), 0o644); err != nil {
		t.Fatal(err)
	}
	app, err := os.OpenFile(r.path, os.O_WRONLY|os.O_APPEND, 0) // the application's descriptor
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	r.start()
	r.waitLines(1)
	if err := os.Rename(r.path, r.path+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, r.path, "b1")
	r.waitLine("a2")
	r.waitLine("b1")
	// The '\n' ends "a2\r\n"; late ends with a lone '\r'.
	if _, err := app.WriteString("\nlate\r"); err != nil {
		t.Fatal(err)
	}
	late := r.waitLine("late")
	r.waitSettled()
	r.stop()
	if late.Positioned {
		t.Fatalf("late delivered with a position: %+v", late)
	}
	want := map[string]int{"a1": 1, "a2": 1, "b1": 1, "late": 1}
	if c := counts(r.rec.all()); len(c) != len(want) || len(r.rec.all()) != 4 {
		t.Fatalf("delivered %q, want a1 a2 b1 late once each", lines(r.rec.all()))
	}
	if r.src.Downgraded() != 1 {
		t.Fatalf("downgraded %d, want 1", r.src.Downgraded())
	}
}
