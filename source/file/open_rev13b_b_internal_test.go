//go:build openfindings

// Parked (thirteenth session, review 13b): fails on the product as it is;
// see the issue 13 closing note. go test -tags openfindings ./source/file -run TestRev13B

package file

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A live rotation while tailfeed runs (A, read and committed, → w.log.1;
// an empty B at w.log): A's pointer is kept (forgetOrHold). tailfeed is
// then stopped cleanly (SIGTERM: drain, final commit) with B still empty
// — nothing lets the kept pointer go at a stop. While it is stopped
// logrotate runs once more, the ordinary way with "rotate 1" (w.log.1 — A,
// read to its end — deleted, B → w.log.1, a new empty w.log). Not a line was written since A was read: the restart must
// deliver nothing and count nothing. It counts lostTails 1 for A (the
// kept pointer, adopted by the new w.log, does not find A beside the path:
// "gone while stopped"). Before the diff A's pointer was reset when its
// stream closed and the restart counted nothing. Breaks DESIGN §7
// "lossless is true only while tailfeed can show that no line was
// skipped" in its other direction (the brief: never report lostTails for
// a loss that did not happen) on an ordinary operator path; the README's
// admitted cost ("a kept file deleted while tailfeed is stopped") lands
// here on logrotate's plainest configuration, not on an odd operator act.
// (Held: "compress delaycompress" instead — A gzipped to w.log.2.gz — counts
// nothing.) Seen 3 of 3 runs.
func TestRev13BBCleanStopWhileKeptThenRotatedWhileStopped(t *testing.T) {
	for _, mode := range []string{"rotate1"} {
		t.Run(mode, func(t *testing.T) { cleanStopKeptRotated(t, mode) })
	}
}

func cleanStopKeptRotated(t *testing.T, mode string) {
	dir, data := t.TempDir(), t.TempDir()
	pattern := filepath.Join(dir, "*.log")
	w := filepath.Join(dir, "w.log")
	if err := os.WriteFile(w, []byte(numbered("first", 2)), 0o600); err != nil {
		t.Fatal(err)
	}
	ig, _, stop := runGlobOn(t, pattern, data)
	if got := ig.popAll(time.Second); got != 2 {
		t.Fatalf("first run delivered %d lines, want 2", got)
	}
	var a *gstream
	ig.waitFor(t, "w.log's stream read, committed, closed", func() bool {
		a = ig.g.byPath[w]
		return a != nil && a.st == stClosed && a.owe == nil
	})
	if err := os.Rename(w, w+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "A kept for the empty B", func() bool { return a.gone && a.st == stClosed && a.held })
	time.Sleep(300 * time.Millisecond)
	stop() // clean stop
	switch mode {
	case "rotate1":
		if err := os.Remove(w + ".1"); err != nil {
			t.Fatal(err)
		}
	case "delaycompress":
		gzipTo(t, w+".1", w+".2.gz")
	}
	if err := os.Rename(w, w+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ig2, _, _ := runGlobOn(t, pattern, data)
	got := ig2.popAll(2 * time.Second)
	tails, bytes, detail := ig2.lost()
	if got != 0 || tails != 0 || bytes != 0 {
		t.Errorf("%s while stopped, no line written since A was read: %d lines delivered, lostTails %d lostBytes %d (%q); want nothing", mode, got, tails, bytes, detail)
	}
}
