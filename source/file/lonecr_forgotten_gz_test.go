package file_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"tailfeed/source/file"
)

// Review 43 F-A: a single-file feed's file whose last line ends in a lone
// '\r' is renamed away (nothing at the path): after rotateWait it is
// left, its '\r' taken, the line delivered and committed at P. The writer
// appends the '\n' (read, skipped). The file is then compressed (a .gz of
// P+1 bytes, the plain file removed): deleted, read to its end, every line
// committed — forgotten (the empty record; its epochs line's end is P, the
// line's). After a clean stop, the restart took the .gz (P+1 bytes, not
// the forgotten file's P) for a later generation and delivered its lines
// again, under a new epoch (exactlyOnce sinks too).
func TestLoneCRForgottenFileGzNotReadAgain(t *testing.T) {
	t.Parallel()
	for _, cr := range []bool{false, true} {
		name := "control-lf"
		if cr {
			name = "lone-cr-then-lf"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, "", rigOpts{strategy: file.Committed, rotateWait: time.Second})
			last := "a2\n"
			if cr {
				last = "a2\r"
			}
			if err := os.WriteFile(r.path, []byte("a1\n"+last), 0o644); err != nil {
				t.Fatal(err)
			}
			r.start()
			r.waitLines(2 - map[bool]int{true: 1}[cr])
			w, err := os.OpenFile(r.path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(r.path, r.path+".1"); err != nil {
				t.Fatal(err)
			}
			r.waitLine("a2")
			r.waitFor("commit of a2", 10*time.Second, func() bool { return r.ptr.Record().Offset == 6 })
			if cr {
				w.WriteString("\n") // completes the "\r\n"
			}
			w.Close()
			time.Sleep(100 * time.Millisecond) // the '\n' read; the left file still watched (rotateWait)
			gzipTo(t, r.path+".1", r.path+".1.gz")
			r.waitFor("the deleted file forgotten (read to its end, nothing of it pending)", 10*time.Second, func() bool {
				return strings.Contains(r.logs.String(), "nothing of it is pending")
			})
			r.waitSettled()
			r.stop()

			r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed, rotateWait: 200 * time.Millisecond}).start()
			appendTo(t, r.path, "b-00000")
			r2.waitLines(1)
			r2.waitSettled()
			time.Sleep(300 * time.Millisecond)
			r2.stop()
			if got := lines(r2.rec.all()); len(got) != 1 {
				t.Fatalf("after a clean stop the restart delivered %q, want only b-00000 (the forgotten file's .gz read again from its start)", got)
			}
			if n := r2.src.LostTails(); n != 0 {
				t.Fatalf("lostTails %d", n)
			}
		})
	}
}
