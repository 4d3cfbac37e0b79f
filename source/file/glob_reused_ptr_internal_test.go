package file

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"tailfeed/pointer"
)

// Rule: DESIGN §3 "Reset (new epoch) rewrites the file in place"; §4
// "Restart after rotation: … find the pointer's generation: the file with
// the pointer's file key and fingerprint … Read it from the offset to its
// end first"; a pointer's unread tail is counted lost only when it cannot
// be found; §2 never a gap. besideAtStart refuses a file born after the
// pointer took its key (inode reuse, TestRevS7bBesideAtStartTakesAFileBornLater).
// Case: COMMITTED, *.log, rotateWaitMillis long. Run 1 reads a.log (g0)
// and stops; while stopped a.log is rotated out of the glob (a.log.1) and
// a new a.log (g1) written: run 2's a.log takes g0's pointer file, reset
// in place for g1. Run 2 reads g1; a.log is rotated again (a.log.2, new
// a.log g2) and run 2 stops within rotateWaitMillis, so the pointer still
// names g1. While stopped the application appends "g1-3" to a.log.2.
// Expected: run 3 finds a.log.2 beside a.log with the pointer's key and
// first bytes, reads "g1-3", counts nothing. Before: g1 was born after
// the pointer FILE was made (for g0) and was refused as "born after its
// pointer": lostTails 1 and "g1-3" never delivered.
func TestGlobReusedPointerLaterGenerationFoundBeside(t *testing.T) {
	t.Parallel()
	dir, data, a := aLogIn(t, numbered("g0", 3))
	pattern := filepath.Join(dir, "*.log")
	cfg := func(c *GlobConfig) { c.Stream.RotateWait = time.Minute }
	pop := func(ig *internalGlob, want int) []string {
		var got []string
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end) && len(got) < want; {
			l, _ := ig.popEpochs(50*time.Millisecond, true)
			got = append(got, l...)
		}
		return got
	}
	committed := func(ig *internalGlob) func() bool {
		return func() bool {
			ptrs, _ := filepath.Glob(filepath.Join(ig.ptrDir, "*.ptr"))
			c := 0
			for _, p := range ptrs {
				if rec, err := pointer.Inspect(p); err == nil && rec.FileKey != 0 && rec.FPLen > 0 && rec.Offset > 0 {
					c++
				}
			}
			return c >= 1 && c == len(ptrs)
		}
	}

	ig, stop := runGlobCfg(t, pattern, data, 200*time.Millisecond, cfg)
	if got := pop(ig, 3); len(got) != 3 {
		t.Fatalf("run 1 delivered %q, want g0-0..g0-2", got)
	}
	waitTrue(t, "g0 committed", committed(ig))
	stop()
	ptrs, _ := filepath.Glob(filepath.Join(ig.ptrDir, "*.ptr"))
	if len(ptrs) != 1 {
		t.Fatalf("pointers after run 1: %v, want one", ptrs)
	}
	time.Sleep(30 * time.Millisecond) // g1 born well after the pointer file (coarse timestamps)
	if err := os.Rename(a, a+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a, []byte(numbered("g1", 3)), 0o600); err != nil {
		t.Fatal(err)
	}

	ig2, stop2 := runGlobCfg(t, pattern, data, 200*time.Millisecond, cfg)
	if got := pop(ig2, 3); !slices.Equal(got, strings.Fields(numbered("g1", 3))) {
		t.Fatalf("run 2 delivered %q, want g1-0..g1-2", got)
	}
	waitTrue(t, "g1 committed in g0's pointer file", func() bool {
		rec, err := pointer.Inspect(ptrs[0])
		return err == nil && rec.FileKey != 0 && rec.Offset == int64(len(numbered("g1", 3)))
	})
	if err := os.Rename(a, a+".2"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a, []byte(numbered("g2", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := pop(ig2, 1); !slices.Equal(got, []string{"g2-0"}) {
		t.Fatalf("run 2 delivered %q after the rotation, want g2-0", got)
	}
	waitTrue(t, "g2 committed", func() bool {
		ps, _ := filepath.Glob(filepath.Join(ig2.ptrDir, "*.ptr"))
		n := 0
		for _, p := range ps {
			if rec, err := pointer.Inspect(p); err == nil && rec.Offset > 0 {
				n++
			}
		}
		return n == 2
	})
	stop2()
	if rec, err := pointer.Inspect(ptrs[0]); err != nil || rec.Offset != int64(len(numbered("g1", 3))) {
		t.Fatalf("g0's pointer file after run 2: %+v %v; want it still naming g1 at its end", rec, err)
	}
	// The application's old descriptor writes on to a.log.2 while stopped.
	f, err := os.OpenFile(a+".2", os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("g1-3\n")
	f.Close()

	ig3, stop3 := runGlobCfg(t, pattern, data, 200*time.Millisecond, cfg)
	got := pop(ig3, 1)
	time.Sleep(300 * time.Millisecond)
	more, _ := ig3.popEpochs(100*time.Millisecond, true)
	got = append(got, more...)
	tails, bytes, detail := ig3.lost()
	stop3()
	if !slices.Equal(got, []string{"g1-3"}) || tails != 0 {
		t.Fatalf("a.log.2 (g1, its pointer reset in place from g0's) beside a.log with the pointer's key and first bytes: run 3 delivered %q, lostTails %d lostBytes %d (%q); want [g1-3], 0",
			got, tails, bytes, detail)
	}
}

// takenOr: a record whose key no epochs line names under its epoch (a
// copy bound under the epoch, or no epochs file) falls back to the
// pointer file's last write, never to its creation.
func TestGlobTakenOrFallsBackToPointerMtime(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "0000000000000001.ptr")
	if err := os.WriteFile(p, make([]byte, pointer.Size), 0o600); err != nil {
		t.Fatal(err)
	}
	mod := time.Now().Add(time.Hour).Truncate(time.Second)
	if err := os.Chtimes(p, mod, mod); err != nil {
		t.Fatal(err)
	}
	l := loaded{s: &gstream{ptrPath: p}, rec: pointer.Record{Epoch: 7, FileKey: 9}}
	line := time.Now().Add(2 * time.Hour)
	if got := takenOr(map[[2]uint64]time.Time{{7, 9}: line}, l); !got.Equal(line) {
		t.Fatalf("with its epochs line: %v, want %v", got, line)
	}
	if got := takenOr(map[[2]uint64]time.Time{{7, 8}: line, {6, 9}: line}, l); !got.Equal(mod) {
		t.Fatalf("no line for (epoch, key): %v, want the pointer's mtime %v", got, mod)
	}
}
