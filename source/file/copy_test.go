package file_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"tailfeed/source/file"
)

// truncateWithArchive runs the scenario of a file sink writing next to its
// input: app.log is tailed, every line is appended to app.archive.log
// (same first bytes, as long as what was consumed), then app.log is
// truncated in place and the application logs on. It returns the rig once
// the day-2 lines arrived and a few polls and rotateWaits passed.
func truncateWithArchive(t *testing.T, declare bool) *rig {
	t.Helper()
	dir := t.TempDir()
	archive := filepath.Join(dir, "app.archive.log")
	o := rigOpts{strategy: file.Committed, archive: archive}
	if declare {
		o.outputs = []string{archive, filepath.Join(dir, "state")}
	}
	r := newRig(t, dir, o)
	appendTo(t, r.path, numbered("day1", 0, 50)...)
	r.start()
	r.waitLines(50)
	r.waitSettled()
	// The archive's last write must be older than the truncation: only then
	// does it pass for a copy by its times as well.
	time.Sleep(20 * time.Millisecond)
	if err := os.Truncate(r.path, 0); err != nil {
		t.Fatal(err)
	}
	appendTo(t, r.path, numbered("day2", 0, 10)...)
	r.waitLines(60)
	r.waitSettled()
	// A source reading its own output back keeps delivering: give it time to
	// show (several polls, past rotateWait).
	time.Sleep(2 * r.opts.rotateWait)
	r.waitSettled()
	return r
}

// A file sink's output next to its input, declared in Config.Outputs, is
// never taken for the copytruncate copy: a truncation in place reads the file
// from its start, and the sink's lines are not read back.
func TestSinkOutputNextToInputIsNotTakenForCopy(t *testing.T) {
	t.Parallel()
	r := truncateWithArchive(t, true)
	r.stop()
	all := r.rec.all()
	if len(all) != 60 || r.src.Downgraded() != 0 {
		t.Fatalf("%d deliveries (downgraded %d) for 60 lines written: the source read the sink's output back",
			len(all), r.src.Downgraded())
	}
	for l, n := range counts(all) {
		if n != 1 {
			t.Fatalf("%s delivered %d times", l, n)
		}
	}
	if r.warned("reading its copy") {
		t.Fatalf("the sink's output was taken for a copy:\n%s", tailOf(r.logs.String(), 20))
	}
	if !r.warned("truncated") {
		t.Fatalf("no WARN about the truncation:\n%s", tailOf(r.logs.String(), 20))
	}
}

// An undeclared file that matches a copy (same first bytes, long enough,
// older than the truncation) may be taken for the copy, but a copy is a
// snapshot: read up to its size when found, then closed, never watched as a
// switched-away file. So a sink output nobody declared still does not feed
// back into its source.
func TestCopyIsASnapshotNeverWatched(t *testing.T) {
	t.Parallel()
	r := truncateWithArchive(t, false)
	r.stop()
	all := r.rec.all()
	if len(all) != 60 || r.src.Downgraded() != 0 {
		t.Fatalf("%d deliveries (downgraded %d) for 60 lines written: the copy was read as it grew",
			len(all), r.src.Downgraded())
	}
	c := counts(all)
	for i, l := range numbered("day2", 0, 10) {
		if c[l] != 1 {
			t.Fatalf("day2 line %d delivered %d times", i, c[l])
		}
	}
}

// A real copytruncate with a file sink writing next to the input: the copy
// is found (the declared output is skipped even though it is newer) and its
// unread lines are delivered once.
func TestCopyTruncateNextToSinkOutput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	archive := filepath.Join(dir, "app.archive.log")
	hold := make(chan struct{})
	r := newRig(t, dir, rigOpts{strategy: file.Committed, archive: archive,
		outputs: []string{archive}, hold: map[string]chan struct{}{"a-00600": hold}})
	// More than 4 KiB: the archive's first bytes match the input's
	// fingerprint in full.
	appendTo(t, r.path, numbered("a", 0, 600)...)
	r.start()
	r.waitLines(600)
	r.waitSettled()
	// Lines the source reads but the sink has not consumed: the archive
	// stays at 600 lines, the copy holds 620.
	appendTo(t, r.path, numbered("a", 600, 20)...)
	r.waitFor("the new lines read", 10*time.Second, func() bool { return r.src.LinesRead() >= 620 })
	data, err := os.ReadFile(r.path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.path+".1", data, 0o644); err != nil {
		t.Fatal(err)
	}
	// The archive grows after the copy: newer than the copy, older than the
	// truncation, longer than what was consumed, it would win as "the
	// newest match" were it not skipped.
	time.Sleep(20 * time.Millisecond)
	appendTo(t, archive, numbered("x", 0, 40)...)
	time.Sleep(20 * time.Millisecond)
	if err := os.Truncate(r.path, 0); err != nil {
		t.Fatal(err)
	}
	appendTo(t, r.path, numbered("b", 0, 5)...)
	close(hold)
	r.waitLines(625)
	r.waitSettled()
	r.stop()
	c := counts(r.rec.all())
	for _, l := range append(numbered("a", 0, 620), numbered("b", 0, 5)...) {
		if c[l] != 1 {
			t.Fatalf("%s delivered %d times; got %v", l, c[l], lines(r.rec.all()))
		}
	}
	if len(r.rec.all()) != 625 {
		t.Fatalf("%d deliveries, want 625: %v", len(r.rec.all()), lines(r.rec.all())[600:])
	}
}
