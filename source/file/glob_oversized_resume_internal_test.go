package file

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// EARLIEST without pointers, maxLineBytes 16: a line being written is
// longer than 16 bytes, so its first piece (16 bytes) is delivered while
// its end is not written yet. The stream closes as inactive inside that
// line; the writer then ends it and the stream opens again. The rest is that
// line's last piece, and the line counts once in oversized (DESIGN §4:
// oversized counts such lines, not pieces) — the new source must know it
// resumes inside an oversized line.
func TestGlobResumeInsideAnOversizedLineCountsItOnce(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	a := filepath.Join(dir, "a.log")
	if err := os.WriteFile(a, []byte(strings.Repeat("A", 20)), 0o600); err != nil {
		t.Fatal(err)
	}
	ig, _ := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond, func(c *GlobConfig) {
		c.Stream.Strategy = Earliest
		c.PointerDir = ""
		c.Stream.MaxLine = 16
		c.CloseInactive = 100 * time.Millisecond
	})
	var first []string
	for end := time.Now().Add(3 * time.Second); len(first) == 0 && time.Now().Before(end); {
		first, _ = ig.popEpochs(20*time.Millisecond, true)
	}
	var s *gstream
	ig.waitFor(t, "a.log's stream closed inside the line", func() bool {
		s = ig.g.byPath[a]
		return s != nil && s.st == stClosed && s.resume != nil
	})
	appendTo(t, a, "BB\n")
	var rest []string
	for end := time.Now().Add(3 * time.Second); len(rest) == 0 && time.Now().Before(end); {
		rest, _ = ig.popEpochs(20*time.Millisecond, true)
	}
	over := ig.g.Oversized()
	t.Logf("first %q, then %q; oversized %d", first, rest, over)
	if len(first) != 1 || first[0] != strings.Repeat("A", 16) || len(rest) != 1 || rest[0] != "AAAABB" {
		t.Fatalf("pieces: %q then %q; want the 16-byte piece, then AAAABB", first, rest)
	}
	if over != 1 {
		t.Errorf("one line of 22 bytes delivered in two pieces across a reopen: oversized %d, want 1", over)
	}
}
