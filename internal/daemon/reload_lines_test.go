package daemon

import (
	"net/http"
	"tailfeed/status"
	"testing"
	"time"
)

// A reload restarts a feed only when its settings or its processors'
// changed (DESIGN §12 "Reload"), not when they merely moved in the file: a
// comment above them, or a new feed written before them, shifts every
// line. The line numbers the config keeps for its messages (a file
// processor's path key, a tls key, an engine sink's keys) were compared
// with the settings, so such a reload restarted the feed (its lines
// published again from its pointer, "feed restarted with its new
// settings").
func TestReloadMovedLinesRestartsNothing(t *testing.T) {
	const base = `dataDir: %DIR%/state
status: {listen: "127.0.0.1:0", token: sesame}
feeds:
  - name: app
    path: %DIR%/app.log
    pollIntervalMillis: 20
processors:
  - name: archive
    feed: app
    type: file
    path: %DIR%/out.log
`
	e := start(t, base, Options{})
	e.appendLines(numbered("a", 0, 5)...)
	e.waitFor("settled", 10*time.Second, settled)
	before := e.d.feeds[0]
	e.rewrite("# moved down by this comment\n\n" + base)
	if code, body := e.reload(); code != http.StatusOK {
		t.Fatalf("reload: %d %s", code, body)
	}
	if e.d.feeds[0] != before {
		t.Fatalf("a reload that only moved the config's lines restarted feed app")
	}
	e.appendLines(numbered("b", 0, 5)...)
	f := e.waitFor("settled", 10*time.Second, func(f status.FeedReport) bool { return f.Settled && f.Sequence >= 10 })
	if f.Sequence != 10 {
		t.Fatalf("sequence %d after 10 lines, want 10 (published again by a restart)", f.Sequence)
	}
}
