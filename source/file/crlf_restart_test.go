package file_test

import (
	"os"
	"testing"
	"time"

	"tailfeed/source/file"
)

// a2 ends with a lone '\r' when its file is left: it is delivered and
// committed at the position just after the '\r'. The writer then completes
// the "\r\n". After a restart the byte at the pointer is that '\n': it ends
// a2's terminator, and is not an empty line; the next line keeps its
// position.
func TestRevLoneCRCommittedInsideCRLF(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed, rotateWait: 200 * time.Millisecond})
	if err := os.WriteFile(r.path, []byte("a1\na2\r"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.start()
	r.waitLines(1)
	if err := os.Rename(r.path, r.path+".1"); err != nil {
		t.Fatal(err)
	}
	r.waitLine("a2")
	r.waitFor("commit of a2", 10*time.Second, func() bool { return r.ptr.Record().Offset == 6 })
	r.stop()
	f, err := os.OpenFile(r.path+".1", os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("\na3\n")); err != nil {
		t.Fatal(err)
	}
	f.Close()
	t.Logf("run 1: %q; pointer %+v", lines(r.rec.all()), r.ptr.Record())

	r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed, rotateWait: 200 * time.Millisecond}).start()
	g := r2.waitLine("a3")
	r2.stop()
	if g.Pos != 10 || !g.Positioned {
		t.Errorf("a3 = %+v, want positioned at 10", g)
	}
	if all := r2.rec.all(); len(all) != 1 {
		t.Errorf("run 2 delivered %q, want only a3 (\"a2\\r\\n\" is one terminator)", lines(all))
	}
}
