package file_test

import (
	"strings"
	"testing"
	"time"

	"tailfeed/source/file"
)

// A feed restarted by a reload passes its previous source's ResumePoint as
// Config.Resume (every strategy but COMMITTED): the new source reads on in
// the same file, under the same epoch, from where the previous one stopped
// — for LATEST too, so what was appended during the restart is delivered —
// and starts per its strategy when the file at the path is another one.

// settle waits until r settled (a once-read: ended, every line
// acknowledged).
func settle(r *rig, st file.Strategy) {
	r.t.Helper()
	if !st.Bounded() {
		r.waitSettled()
		return
	}
	r.waitFor("end of stream", 20*time.Second, func() bool {
		return r.src.State() == file.EndOfStream && r.pub.Pending() == 0
	})
}

// resumeRig runs a source of strategy st on dir/app.log to its settling
// and returns it stopped, with its ResumePoint.
func resumeRig(t *testing.T, dir string, st file.Strategy, resume *file.Resume, lines int) (*rig, *file.Resume) {
	t.Helper()
	r := newRig(t, dir, rigOpts{strategy: st, resume: resume}).start()
	if lines > 0 {
		r.waitLines(lines)
	}
	settle(r, st)
	r.stop()
	return r, r.src.ResumePoint()
}

func TestReloadResumeLatest(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/app.log"
	appendTo(t, path, "before")
	r := newRig(t, dir, rigOpts{strategy: file.Latest}).start()
	r.waitSettled()
	appendTo(t, path, "one")
	first := r.waitLines(1)
	r.stop()
	rp := r.src.ResumePoint()
	if rp == nil {
		t.Fatal("no resume point after a LATEST source read a line")
	}
	appendTo(t, path, "during") // while the feed restarts
	r2 := newRig(t, dir, rigOpts{strategy: file.Latest, resume: rp}).start()
	appendTo(t, path, "after")
	g := r2.waitLines(2)
	r2.waitSettled()
	if l := strings.Join(lines(r2.rec.all()), ","); l != "during,after" {
		t.Fatalf("restarted LATEST source delivered %q, want during,after", l)
	}
	if g[0].Epoch != first[0].Epoch {
		t.Errorf("restarted source's epoch %x, want its previous one's %x (the subscribers skip by place)", g[0].Epoch, first[0].Epoch)
	}
}

func TestReloadResumeLatestReplacedStartsAtEnd(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/app.log"
	appendTo(t, path, "before")
	r := newRig(t, dir, rigOpts{strategy: file.Latest}).start()
	r.waitSettled()
	appendTo(t, path, "one")
	r.waitLines(1)
	r.stop()
	rp := r.src.ResumePoint()
	// Replaced by another file holding the same first bytes and more: not
	// the file read (its key), so LATEST starts at its end.
	replaceWith(t, path, "before", "one", "two", "three")
	r2 := newRig(t, dir, rigOpts{strategy: file.Latest, resume: rp}).start()
	r2.waitSettled()
	appendTo(t, path, "new")
	r2.waitLines(1)
	r2.waitSettled()
	if l := strings.Join(lines(r2.rec.all()), ","); l != "new" {
		t.Fatalf("LATEST over a replaced file delivered %q, want new", l)
	}
}

func TestReloadResumeEarliestAndOnce(t *testing.T) {
	for _, st := range []file.Strategy{file.Earliest, file.OnceEarliest} {
		t.Run(st.String(), func(t *testing.T) {
			dir := t.TempDir()
			path := dir + "/app.log"
			appendTo(t, path, "a1", "a2")
			_, rp := resumeRig(t, dir, st, nil, 2)
			if rp == nil {
				t.Fatal("no resume point")
			}
			appendTo(t, path, "a3")
			r2 := newRig(t, dir, rigOpts{strategy: st, resume: rp}).start()
			want := "a3"
			if st == file.OnceEarliest {
				want = "" // read to its size at the first open: done
				time.Sleep(200 * time.Millisecond)
			} else {
				r2.waitLines(1)
			}
			settle(r2, st)
			if l := strings.Join(lines(r2.rec.all()), ","); l != want {
				t.Fatalf("restarted %v source delivered %q, want %q", st, l, want)
			}
		})
	}
}
