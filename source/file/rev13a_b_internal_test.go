// Review 13a, finding B: parked in the thirteenth session, found and fixed
// in the fifteenth (closed() reads beside its path a file renamed out of the
// glob as its stream closed). The wait below is for the stream's close, not
// for it to be neither stopping nor open: fixed, it is open again beside its
// path.

package file

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Review of 78ea949, race 3. A glob file's stream closing as inactive (its
// drain waiting for the acknowledgements) when logrotate renames the file
// out of the glob beside its path (a.log → a.log.1, `create`); the scan sees
// it gone while the stream stops. The application, not yet told to reopen
// its log, writes one more line through its descriptor into a.log.1 just
// after the stream closed (within rotateWaitMillis of the rename). The
// diff's closed() reads beside only when the source noted a tail at close
// (tailSize > tailEnd); with none, it retires the key and leaves the file:
// nobody ever reads a.log.1 again, the line is never delivered and never
// counted (lostTails 0). The same rename seen by a scan after the stream
// closed is read beside (scan: readBeside "also with no byte past what its
// pointer committed yet: logrotate renames, and the application writes on
// to its descriptor").
//
// DESIGN §10: "A file renamed out of the glob is read to its end
// (rotateWaitMillis after its last growth), then closed"; "A file that
// disappears with an unread tail counts in lostTails"; §2: never lose a
// line silently.
func TestRev13ARenamedOutWhileStoppingThenWrittenIsRead(t *testing.T) {
	t.Parallel()
	dir, data, path := aLogIn(t, numbered("line", 5))
	pattern := filepath.Join(dir, "*.log")
	ig, stop := runGlobWith(t, pattern, data, 5*time.Second, func(c *GlobConfig) {
		c.CloseInactive = 50 * time.Millisecond
		c.Stream.RotateWait = 2 * time.Second
	}, func(g *Glob) { g.drainBound = 10 * time.Second })
	defer stop()
	n := ig.take(t) // not acknowledged: the stopping stream's drain waits
	s := ig.stoppingStream(t)
	w, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0) // the application's descriptor
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "the scan saw a.log gone while its stream stopped", func() bool { return s.gone })
	ig.q.AddDispatched(n)
	ig.pub.Poke()
	ig.waitFor(t, "the stream closed", func() bool { return s.st != stStopping })
	if _, err := w.WriteString("written-after-the-rename\n"); err != nil {
		t.Fatal(err)
	}
	got := ig.popAll(3 * time.Second)
	tails, bytes, detail := ig.lost()
	if got != 1 {
		t.Errorf("a line written into a.log.1 just after the rename: %d lines delivered, want 1; lostTails %d lostBytes %d (%q) — never read, and not counted",
			got, tails, bytes, detail)
	}
}
