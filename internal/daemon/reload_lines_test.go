package daemon

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tailfeed/config"
	"tailfeed/status"
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

// Review 44b F1: another feed's processor written above a postgres, nats or
// kafka processor shifts its index, and the key names those sinks keep by
// index for their messages (postgres DSNAt, nats Literal, kafka
// SASL.PasswordKey) were compared as settings: the feed restarted.
func TestReloadIndexShiftKeepsProcessorsSame(t *testing.T) {
	dir := t.TempDir()
	load := func(name, body string) *config.Config {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o600)
		cfg, err := config.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	head := "dataDir: " + dir + "/state\nfeeds:\n  - {name: a, path: " + dir + "/a.log}\n  - {name: b, path: " + dir + "/b.log}\nprocessors:\n"
	pg := "  - {name: pg, feed: a, type: postgres, dsn: \"postgres://u:pw@h/db\", table: t}\n"
	nats := "  - {name: nt, feed: a, type: nats, url: \"nats://127.0.0.1:4222\", stream: S, subject: \"s.{instance}\", token: tok}\n"
	kafka := "  - {name: kf, feed: a, type: kafka, brokers: [\"h:9092\"], topic: t, sasl: {mechanism: PLAIN, username: u, password: pw}}\n"
	other := "  - {name: x, feed: b, type: discard}\n"
	for name, p := range map[string]string{"postgres": pg, "nats": nats, "kafka": kafka} {
		a := load(name+"1.yaml", head+p+other)
		b := load(name+"2.yaml", head+other+p)
		if !sameProcessors(procsOf(a, "a"), procsOf(b, "a")) {
			pa, pb := procsOf(a, "a")[0], procsOf(b, "a")[0]
			t.Errorf("%s: a processor of feed b moved above feed a's processor: feed a's processors compare changed (restart). settings %+v vs %+v", name, pa.Settings, pb.Settings)
		}
	}
}
