//go:build unix

package e2e

import (
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A file sink's output FIFO that nobody reads yet is no reason to refuse a
// start (nor a reload, nor its rollback: see TestRevS6aReloadWithFIFO…):
// the daemon runs, the subscriber holds its lines and retries, fenced,
// with a stalled reason naming the FIFO, the feed is not settled and
// nothing is committed past the lines; once a reader opens the FIFO, the
// next retry delivers them, and SIGTERM gives exit 0 either way.
func TestFIFOOutputWithoutReaderHoldsUntilAReaderComes(t *testing.T) {
	e := newEnv(t, `dataDir: ./state
status: {listen: "{{ADDR}}"}
shutdownTimeoutMillis: 300
feeds:
  - {name: app, path: ./in.log, pollIntervalMillis: 20}
processors:
  - {name: f, feed: app, type: file, path: ./out.fifo, retry: {initialMillis: 20, maxMillis: 100, attempts: 3}, onFailure: deadLetter}
`)
	os.WriteFile(e.path("in.log"), []byte("a\nb\n"), 0o644)
	if err := syscall.Mkfifo(e.path("out.fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := e.start()
	r := d.waitFor("the subscriber stalled on the FIFO", 10*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return f.Stalled != nil && strings.Contains(*f.Stalled, "out.fifo")
	})
	f := r.feed(t, "app")
	t.Logf("stalled: %s", *f.Stalled)
	if r.Settled || f.Settled || f.Acknowledged != 0 || f.DeadLettered != 0 {
		t.Errorf("a FIFO with no reader: settled %v/%v, acknowledged %d, dead-lettered %d; want the lines held (none)",
			r.Settled, f.Settled, f.Acknowledged, f.DeadLettered)
	}
	time.Sleep(500 * time.Millisecond) // past the retries: held at the cap, never dead-lettered
	if f := d.waitFor("a report", time.Second, func(*report) bool { return true }).feed(t, "app"); f.DeadLettered != 0 || f.Acknowledged != 0 {
		t.Errorf("after the retries ran out: acknowledged %d, dead-lettered %d; want 0, 0 (held)", f.Acknowledged, f.DeadLettered)
	}
	rd, err := os.OpenFile(e.path("out.fifo"), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	d.waitSettled(10 * time.Second)
	d.stop()
	got, _ := io.ReadAll(rd)
	if string(got) != "a\nb\n" {
		t.Errorf("the reader got %q, want %q", got, "a\nb\n")
	}
}
