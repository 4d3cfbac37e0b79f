package file

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"tailfeed/pointer"
)

// Review 43 F-B: TestRev39GoneWhileStoppedCompressedWithItsCommittedBytesIsNoLoss
// with the first file's last line ended by a lone '\r', taken when the
// path's new file waited for it, its '\n' appended afterwards (read,
// skipped): the pointer stays at P, the file (and its .gz) holds P+1
// bytes. Compressed beside its path while tailfeed was down, it was
// counted gone with its tail (lostTails 1: the .gz's P+1 bytes not taken
// for the committed P) though every byte of it was delivered.
func TestLoneCRGoneWhileStoppedCompressedIsNoLoss(t *testing.T) {
	for _, cr := range []bool{false, true} {
		name := "control-lf"
		if cr {
			name = "lone-cr-then-lf"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			data := t.TempDir()
			pattern := filepath.Join(dir, "*.log")
			w := filepath.Join(dir, "w.log")
			if err := os.WriteFile(w, []byte(numbered("a", 4)), 0o600); err != nil {
				t.Fatal(err)
			}
			ig, kill, _ := runGlobKill(t, pattern, data, time.Second, func(c *GlobConfig) { c.Stream.RotateWait = time.Minute }, nil)
			if got := ig.popLines(2 * time.Second); got["a-3"] == 0 {
				t.Fatalf("a-lines never delivered: %v", got)
			}
			time.Sleep(50 * time.Millisecond)
			last := "a-4\n"
			if cr {
				last = "a-4\r"
			}
			wr, err := os.OpenFile(w, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			wr.WriteString(last)
			P := int64(len(numbered("a", 5)))
			var xPtr string
			if !cr {
				if got := ig.popLines(2 * time.Second); got["a-4"] == 0 {
					t.Fatalf("a-4 never delivered: %v", got)
				}
			} else {
				time.Sleep(300 * time.Millisecond) // "a-4\r" held
			}
			ig.waitFor(t, "pointer named", func() bool {
				s := ig.g.byPath[w]
				if s == nil || s.ptrPath == "" {
					return false
				}
				xPtr = s.ptrPath
				return true
			})
			rev39Rotate(t, w, false, "b")
			got := ig.popLines(2 * time.Second)
			if cr && got["a-4"] == 0 {
				t.Fatalf("a-4 (lone CR) never delivered: %v", got)
			}
			if cr {
				wr.WriteString("\n") // completes the "\r\n" after the line was taken
			}
			wr.Close()
			if got["b-1"] == 0 {
				got2 := ig.popLines(2 * time.Second)
				if got2["b-1"] == 0 {
					t.Fatalf("b-lines never delivered: %v %v", got, got2)
				}
			}
			ig.waitFor(t, "w.log.1 committed to its last line", func() bool {
				rec, err := pointer.Inspect(xPtr)
				return err == nil && rec.Offset == P
			})
			time.Sleep(500 * time.Millisecond) // the '\n' read
			if ig.popLines(300 * time.Millisecond)[""] != 0 {
				t.Fatal("an empty line for the '\\n'")
			}
			kill()
			data = rev22bCopyData(t, data)
			if rec, err := pointer.Inspect(filepath.Join(data, "feeds", "f", filepath.Base(xPtr))); err != nil || rec.FileKey == 0 {
				t.Fatalf("set-up not reached: the first file's pointer %+v %v", rec, err)
			} else {
				t.Logf("first file's pointer after the kill: offset %d (file %d bytes)", rec.Offset, P+map[bool]int64{true: 1}[cr])
			}
			st1, err := os.Stat(w + ".1")
			if err != nil {
				t.Fatal(err)
			}
			if st2, err := os.Stat(w); err == nil && st2.ModTime().Before(st1.ModTime().Add(mtimeSlack+time.Second)) {
				at := st1.ModTime().Add(mtimeSlack + time.Second)
				os.Chtimes(w, at, at)
			}
			rev39Rotate(t, w, true, "c")
			ig2, stop2 := runGlobWith(t, pattern, data, time.Second, func(c *GlobConfig) { c.Stream.Logger = rev25bLog(t) }, nil)
			defer stop2()
			lines := rev39PopUntil(ig2, "c-1")
			tails, bytes, detail := ig2.lost()
			t.Logf("restart delivered %q", lines)
			if tails != 0 || bytes != 0 {
				t.Errorf("restart: lostTails %d lostBytes %d (%q), want nothing: every byte of the first file was delivered and committed", tails, bytes, detail)
			}
		})
	}
}
