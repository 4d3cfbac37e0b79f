package file_test

import (
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"tailfeed/source/file"
)

// copyFile copies src to dst as logrotate's copytruncate does (a new file,
// the same bytes).
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// A copytruncate done the logrotate way on a running source: copy app.log
// to app.log.1, the application goes on appending to app.log (the source
// reads those lines), then app.log is truncated and written again. The copy
// holds nothing the source did not read: no line may be delivered twice (the
// copy is not a later generation), none lost. (e2e TestLogrotate,
// copytruncate/live, found 128 lines twice.)
func TestLiveCopytruncateDeliversNoLineTwice(t *testing.T) {
	t.Parallel()
	for _, notify := range []bool{false, true} {
		t.Run(fmt.Sprintf("notify=%v", notify), func(t *testing.T) {
			r := newRig(t, "", rigOpts{strategy: file.Committed, noNotify: !notify})
			appendTo(t, r.path, numbered("a", 0, 100)...)
			r.start()
			r.waitLines(100)
			for round := 1; round <= 3; round++ {
				if round > 1 {
					if err := os.Rename(r.path+".1", fmt.Sprintf("%s.%d", r.path, round)); err != nil {
						t.Fatal(err)
					}
				}
				n := 100 + (round-1)*12 + 5
				copyFile(t, r.path, r.path+".1")
				appendTo(t, r.path, numbered(fmt.Sprintf("w%d", round), 0, 5)...) // between the copy and the truncate
				r.waitLines(n)
				if err := os.Truncate(r.path, 0); err != nil {
					t.Fatal(err)
				}
				appendTo(t, r.path, numbered(fmt.Sprintf("n%d", round), 0, 7)...)
				r.waitLines(n + 7)
			}
			time.Sleep(600 * time.Millisecond) // several polls
			r.waitSettled()
			gs := r.rec.all()
			var dup []string
			for l, c := range counts(gs) {
				if c > 1 {
					dup = append(dup, fmt.Sprintf("%s×%d", l, c))
				}
			}
			if want := 100 + 3*(5+7); len(dup) > 0 || len(gs) != want {
				t.Fatalf("%d deliveries (want %d), duplicates %v\n%s", len(gs), want, dup, tailOf(r.logs.String(), 20))
			}
			if r.src.LostTails() != 0 || r.src.LostBytes() != 0 {
				t.Fatalf("lostTails %d lostBytes %d: nothing was lost", r.src.LostTails(), r.src.LostBytes())
			}
		})
	}
}

// A plain copy of the file the source reads (cp app.log app.log.1, then the
// path replaced by a new file) is no later generation: its lines were read
// from the file itself and are not delivered again.
func TestLiveCopyOfTheOpenFileIsNotReadAsAGeneration(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed, noNotify: true})
	appendTo(t, r.path, numbered("a", 0, 1000)...) // more than the fingerprint's bytes
	r.start()
	r.waitLines(1000)
	copyFile(t, r.path, r.path+".1")
	appendTo(t, r.path, numbered("w", 0, 5)...) // after the copy: the copy is shorter than what was read
	r.waitLines(1005)
	if err := os.Remove(r.path); err != nil {
		t.Fatal(err)
	}
	appendTo(t, r.path, numbered("b", 0, 5)...)
	r.waitLines(1010)
	time.Sleep(600 * time.Millisecond) // several polls
	r.waitSettled()
	gs := r.rec.all()
	if len(gs) != 1010 {
		t.Fatalf("%d deliveries, want 1010 (the copy's lines not again)\n%s", len(gs), tailOf(r.logs.String(), 12))
	}
}

// A copytruncate noticed at the end of the open file (an acknowledgement's
// wake-up, not a poll) reads the copy's unread lines at once: the feed does
// not report CAUGHT_UP with them unread until the next poll.
func TestLiveCopyFoundAtTheEndIsReadAtOnce(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	r := newRig(t, "", rigOpts{strategy: file.Committed, noNotify: true, poll: 3 * time.Second,
		hold: map[string]chan struct{}{"a-00004": hold}})
	appendTo(t, r.path, numbered("a", 0, 5)...)
	r.start()
	r.waitLines(4)
	st, _ := os.Stat(r.path)
	r.waitFor("all read", 5*time.Second, func() bool { return r.src.ReadPos() == st.Size() })
	time.Sleep(100 * time.Millisecond)
	appendTo(t, r.path, numbered("w", 0, 3)...) // unread: no poll before the ack
	copyFile(t, r.path, r.path+".1")
	if err := os.Truncate(r.path, 0); err != nil {
		t.Fatal(err)
	}
	// CAUGHT_UP after the copy was found (the detail names it) with its
	// lines not read, in two looks in a row (not the instant between the
	// detail and the switch to the copy).
	sawCaughtUp, prev := false, false
	close(hold)
	deadline := time.Now().Add(10 * time.Second)
	for r.rec.len() < 8 && time.Now().Before(deadline) {
		now := strings.Contains(r.src.Detail(), "reading its copy") && r.src.State() == file.CaughtUp && r.src.LinesRead() < 8
		sawCaughtUp = sawCaughtUp || (now && prev)
		prev = now
		time.Sleep(500 * time.Microsecond)
	}
	if r.rec.len() < 8 || sawCaughtUp {
		t.Fatalf("got %d lines; CAUGHT_UP with the copy's lines unread: %v\n%s", r.rec.len(), sawCaughtUp, tailOf(r.logs.String(), 10))
	}
}
