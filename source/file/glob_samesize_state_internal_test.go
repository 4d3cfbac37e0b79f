package file

import (
	"os"
	"testing"
	"time"
)

// DESIGN §4 "Same-size rewrites": "until that check ran, the feed is not
// CAUGHT_UP" — per file in a glob (§10: CAUGHT_UP when every tracked file
// is read to its end, the rule of §7 per file), as a single-file feed's
// report holds it. An open, caught-up a.log is rewritten in place to the
// same size (other first bytes) or shorter; its source has not looked yet
// (no fsnotify, no poll, no scan within the test). Before, the glob's
// state and a.log's row said CAUGHT_UP: only a size past the read
// position counted.
func TestGlobSameSizeRewriteNotCaughtUpBeforeTheCheck(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"same-size", "shorter"} {
		t.Run(mode, func(t *testing.T) {
			_, data, a := aLogIn(t, numbered("a", 3))
			cfg := func(c *GlobConfig) {
				c.Stream.NoNotify = true
				c.Stream.Poll = time.Hour
				c.ScanInterval = time.Hour
			}
			ig, stop := runGlobCfg(t, a, data, 200*time.Millisecond, cfg)
			defer stop()
			if got, _ := ig.popEpochs(time.Second, true); len(got) != 3 {
				t.Fatalf("delivered %q, want a-0..a-2", got)
			}
			waitTrue(t, "caught up", func() bool { return ig.g.State() == CaughtUp })
			content := numbered("b", 3) // as long as a-0..a-2
			if mode == "shorter" {
				content = numbered("b", 1)
			}
			f, err := os.OpenFile(a, os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteString(content); err != nil {
				t.Fatal(err)
			}
			f.Close()
			later := time.Now().Add(2 * time.Second) // another mtime, whatever the tick
			if err := os.Chtimes(a, later, later); err != nil {
				t.Fatal(err)
			}
			st, _ := ig.g.StateCounts()
			var row string
			for _, fs := range ig.g.Files() {
				row = fs.State
			}
			if st == CaughtUp || row == CaughtUp.String() {
				t.Fatalf("a.log rewritten in place (%s), not checked by its source yet: feed %s, row %s; want BEHIND", mode, st, row)
			}
		})
	}
}
