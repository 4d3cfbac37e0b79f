package daemon

import (
	"os"
	"strings"
	"testing"
	"time"

	"tailfeed/status"
)

// A file sink writing next to its input (same first bytes, as long as what
// was consumed) is never taken for the input's copytruncate copy: after a
// truncation in place the input is read from its start and the sink's own
// lines are not read back (the daemon passes its outputs to the source).
func TestFileSinkNextToInputIsNotReadBack(t *testing.T) {
	e := start(t, `
dataDir: %DIR%/state
status: {listen: "127.0.0.1:0"}
feeds:
  - {name: app, path: %DIR%/app.log, pollIntervalMillis: 50, rotateWaitMillis: 300}
processors:
  - {name: archive, feed: app, type: file, path: %DIR%/app.archive.log}
`, Options{})
	out := e.dir + "/app.archive.log"
	e.appendLines(numbered("day1-", 0, 50)...)
	e.waitFor("day 1 settled", 20*time.Second, func(f status.FeedReport) bool {
		return settled(f) && f.Acknowledged == 50
	})
	time.Sleep(20 * time.Millisecond) // the truncation comes after the sink's last write
	if err := os.Truncate(e.input, 0); err != nil {
		t.Fatal(err)
	}
	e.appendLines(numbered("day2-", 0, 10)...)
	e.waitFor("day 2 settled", 20*time.Second, func(f status.FeedReport) bool {
		return settled(f) && len(readLines(t, out)) >= 60
	})
	time.Sleep(600 * time.Millisecond) // past rotateWait: a read-back would show
	f := e.waitFor("settled", 20*time.Second, settled)
	if got := readLines(t, out); len(got) != 60 || f.Downgraded != 0 {
		t.Fatalf("the archive holds %d lines for 60 written (downgraded %d): the source read its sink's output back",
			len(got), f.Downgraded)
	}
	detail := ""
	if f.Detail != nil {
		detail = *f.Detail
	}
	if strings.Contains(detail, "copy") || !strings.Contains(detail, "truncated") {
		t.Fatalf("detail %q: want the truncation, read from the start (no copy)", detail)
	}
}
