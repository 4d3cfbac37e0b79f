package e2e

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

const fifoConfig = `dataDir: ./state
status:
  listen: {{ADDR}}
feeds:
  - name: app
    path: ./in.log
    pollIntervalMillis: 20
processors:
  - name: archive
    feed: app
    type: file
    path: ./out.log
`

// Issue 11 item 11: a FIFO at the input path is never opened for reading
// (the open would block until a writer came, and SIGTERM could no longer
// stop the daemon). The feed is FAILED with the reason in its detail, the
// error is logged once, not at every poll, SIGTERM stops the daemon with
// exit 0 within a few seconds, and a regular file put at the path is read.
func TestFIFOPathFailsAndStillStopsOnSigterm(t *testing.T) {
	e := newEnv(t, fifoConfig)
	in := e.path("in.log")
	if err := syscall.Mkfifo(in, 0o644); err != nil {
		t.Fatal(err)
	}
	// A daemon blocked opening the FIFO is released by a writer, so that a
	// failing test ends.
	t.Cleanup(func() {
		if f, err := os.OpenFile(in, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	d := e.start()
	r := d.waitFor("the feed FAILED", 10*time.Second, func(r *report) bool {
		return r.Feeds[0].State == "FAILED" && r.Feeds[0].Detail != nil
	})
	if det := *r.Feeds[0].Detail; !strings.Contains(det, "named pipe") || !strings.Contains(det, "in.log") {
		t.Errorf("detail %q: want the path and the reason", det)
	}
	if r.Settled || r.Feeds[0].Settled {
		t.Errorf("settled with a FAILED feed")
	}
	time.Sleep(time.Second) // 50 polls
	if n := strings.Count(d.log(), "named pipe"); n != 1 {
		t.Errorf("the failure is logged %d times in 50 polls, want once:\n%s", n, tail(d.log(), 3000))
	}

	// A regular file replaces the FIFO: the feed leaves FAILED by itself.
	if err := os.Remove(in); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d.waitFor("the regular file read", 10*time.Second, func(r *report) bool {
		return r.Settled && r.Feeds[0].State == "CAUGHT_UP" && r.Feeds[0].Sequence == 2
	})

	// Back to a FIFO: FAILED again, and SIGTERM still stops the daemon.
	if err := os.Remove(in); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(in, 0o644); err != nil {
		t.Fatal(err)
	}
	d.waitFor("the feed FAILED again", 10*time.Second, func(r *report) bool { return r.Feeds[0].State == "FAILED" })
	start := time.Now()
	d.signal(syscall.SIGTERM)
	if code := d.wait(10 * time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0\n%s", code, tail(d.log(), 3000))
	}
	took := time.Since(start)
	if took > 5*time.Second {
		t.Errorf("SIGTERM took %v to stop the daemon", took)
	}
	t.Logf("SIGTERM with a FIFO at the path: exit 0 after %v", took.Round(time.Millisecond))
	if out, err := os.ReadFile(e.path("out.log")); err != nil || string(out) != "one\ntwo\n" {
		t.Errorf("output %q (%v), want the regular file's two lines", out, err)
	}
}
