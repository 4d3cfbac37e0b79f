package e2e

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRevS6aReloadWithFIFOReaderGoneKeepsTheFeed checks DESIGN §12
// "Reload" ("if invalid, … the daemon runs on unchanged") and §7 settled
// ("the source is CAUGHT_UP, WAITING_FOR_FILE or END_OF_STREAM; every
// pointer-holding queue is drained …"), with the README's decision of this
// change for FIFO outputs ("opened without waiting for a reader: with
// none, `run` exits 1 naming it … and a reload adding it fails").
//
// A file sink writes a FIFO whose reader has gone away for a moment (a
// consumer restarting). A reload changes the feed: it stops the feed, the
// new instance's open of the FIFO fails at once (the non-blocking open of
// this change), and the rollback's rebuild on the old config fails the
// same way. Expected: the reload fails and the feed still runs (or at
// least is reported, not settled), so lines appended afterwards reach the
// reader once it is back. Observed: the feed is left out of the daemon:
// feed.status lists no feed and says settled and lossless, and the lines
// appended afterwards are never read, even with the reader back.
func TestRevS6aReloadWithFIFOReaderGoneKeepsTheFeed(t *testing.T) {
	tmpl := `dataDir: ./state
status: {listen: "{{ADDR}}"}
shutdownTimeoutMillis: 300
feeds:
  - {name: app, path: ./in.log, pollIntervalMillis: POLL}
processors:
  - {name: f, feed: app, type: file, path: ./out.fifo}
`
	e := newEnv(t, strings.Replace(tmpl, "POLL", "20", 1))
	os.WriteFile(e.path("in.log"), []byte("a\n"), 0o644)
	if err := syscall.Mkfifo(e.path("out.fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	rfd, err := syscall.Open(e.path("out.fifo"), syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	d := e.start()
	d.waitSettled(30 * time.Second)
	syscall.Close(rfd) // the reader goes away for a moment
	e.tmpl = strings.Replace(tmpl, "POLL", "21", 1)
	e.cfgWith(d.addr)
	code, _, body := request(t, d, "POST", "/admin/reload", "", []byte{})
	t.Logf("reload: %d %s", code, body)
	// The reader is back; a new line is appended.
	rfd, err = syscall.Open(e.path("out.fifo"), syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(rfd)
	appendTo(t, e.path("in.log"), "b\n")
	time.Sleep(2 * time.Second)
	st, err := d.status()
	if err != nil {
		t.Fatal(err)
	}
	var app *feedReport
	for i := range st.Feeds {
		if st.Feeds[i].Feed == "app" {
			app = &st.Feeds[i]
		}
	}
	if app == nil {
		t.Errorf("after a failed reload (reader of the FIFO gone for a moment) feed.status lists no feed app, and says settled %v, lossless %v, while line b appended to its input is never read", st.Settled, st.Lossless)
	} else if app.Settled && app.Sequence < 2 {
		t.Errorf("feed app settled with line b unread: %+v", *app)
	}
	d.stop()
}
