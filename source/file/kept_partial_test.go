package file_test

import (
	"os"
	"testing"
	"time"

	"tailfeed/source/file"
)

// keptMidLine sets up case D with the application in the middle of a line:
// three lines and "xy" are written through the application's descriptor,
// then the file is copied with the copier's "echo >>" (the copy holds
// "xy\n") and the copy renamed over the path. It returns the rig, once the
// new file's "xy" was delivered, and the application's descriptor on the
// old inode.
func keptMidLine(t *testing.T) (*rig, *os.File) {
	r := newRig(t, "", rigOpts{strategy: file.Committed, rotateWait: 5 * time.Second})
	appendTo(t, r.path, numbered("a", 0, 3)...)
	app, err := os.OpenFile(r.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Close() })
	if _, err := app.WriteString("xy"); err != nil {
		t.Fatal(err)
	}
	r.start()
	r.waitLines(3)
	r.waitFor("the partial line read", 10*time.Second, func() bool { return r.src.Unterminated() == 2 })
	data, err := os.ReadFile(r.path)
	if err != nil {
		t.Fatal(err)
	}
	tmp := r.path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil { // cp A A.tmp; echo >> A.tmp
		t.Fatal(err)
	}
	if err := os.Rename(tmp, r.path); err != nil { // mv A.tmp A
		t.Fatal(err)
	}
	g := r.waitLine("xy")
	if !g.Positioned || g.Pos != int64(len(data)+1) {
		t.Fatalf("the new file's line \"xy\" = %+v, want positioned at %d", g, len(data)+1)
	}
	return r, app
}

// The application ends its line in the old inode with other bytes than the
// copier: the old file's line "xyw" is delivered whole (downgraded), never
// cut to "w"; the new file's "xy" once.
func TestRevSameContentPartialLineOfOldFile(t *testing.T) {
	t.Parallel()
	r, app := keptMidLine(t)
	if _, err := app.WriteString("w\nz\n"); err != nil {
		t.Fatal(err)
	}
	r.waitLine("z")
	r.stop()
	all := r.rec.all()
	t.Logf("delivered %q", lines(all))
	c := counts(all)
	if c["xy"] != 1 || c["xyw"] != 1 || c["w"] != 0 || c["z"] != 1 {
		t.Fatalf("delivered %q; want \"xy\" (new file), \"xyw\" and \"z\" (old file) once each, no \"w\"", lines(all))
	}
	for _, g := range all {
		if (g.Line == "xyw" || g.Line == "z") && g.Positioned {
			t.Errorf("%+v: a line of the old file after the switch is positioned", g)
		}
	}
	if got := r.src.Downgraded(); got != 2 {
		t.Errorf("downgraded = %d, want 2 (xyw, z)", got)
	}
}

// The application ends its line in the old inode exactly as the copy did:
// the old file's line "xy" is the new file's line at the same offset,
// delivered once (from the new file).
func TestKeptSameLineLeftToNewFile(t *testing.T) {
	t.Parallel()
	r, app := keptMidLine(t)
	if _, err := app.WriteString("\nz\n"); err != nil {
		t.Fatal(err)
	}
	r.waitLine("z")
	r.stop()
	all := r.rec.all()
	c := counts(all)
	if c["xy"] != 1 || c["z"] != 1 || c[""] != 0 {
		t.Fatalf("delivered %q; want \"xy\" once (the new file's) and \"z\" once", lines(all))
	}
	if got := r.src.Downgraded(); got != 1 {
		t.Errorf("downgraded = %d, want 1 (z)", got)
	}
}
