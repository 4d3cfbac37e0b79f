package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tailfeed/status"
)

// sameSizeConfig polls rarely (and the test turns fsnotify off), so a
// rewrite stays unseen by the source for a while.
const sameSizeConfig = `
dataDir: %DIR%/state
status: {listen: "127.0.0.1:0"}
feeds:
  - {name: app, path: %DIR%/app.log, pollIntervalMillis: 4000}
processors:
  - {name: archive, feed: app, type: file, path: %DIR%/out.log}
`

// Issue 11 item 4: a file truncated and written back to exactly its old
// size is not CAUGHT_UP (nor settled) until the source re-read its first
// bytes (DESIGN §4 "Same-size rewrites"): its mtime moved since the source
// last checked it. Once the source looked, the new lines are delivered.
func TestSameSizeRewriteIsNotCaughtUpBeforeTheCheck(t *testing.T) {
	t.Setenv("TAILFEED_NO_FSNOTIFY", "1")
	dir := t.TempDir()
	in := filepath.Join(dir, "app.log")
	if err := os.WriteFile(in, []byte(strings.Join(numbered("old-", 0, 20), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := startIn(t, dir, sameSizeConfig, Options{})
	e.waitFor("settled", 10*time.Second, settled)
	time.Sleep(50 * time.Millisecond) // past one mtime tick
	if err := os.WriteFile(in, []byte(strings.Join(numbered("NEW-", 0, 20), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := e.report().Feeds[0]
	if f.State == "CAUGHT_UP" || f.Settled {
		t.Fatalf("state %s settled %v right after a same-size rewrite the source has not looked at", f.State, f.Settled)
	}
	e.waitFor("the rewrite read", 15*time.Second, func(f status.FeedReport) bool {
		return f.Settled && f.Sequence == 40
	})
	got := readLines(t, filepath.Join(dir, "out.log"))
	want := append(numbered("old-", 0, 20), numbered("NEW-", 0, 20)...)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("output %v, want %v", got, want)
	}
}
