package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRunRefusesDirectoryPath: a feed path that is a directory passes
// `validate` (it checks the file only) and is refused by `run` with exit 2,
// "FILE:LINE: …" at the feed's path key, naming the directory (DESIGN §12
// "Validation"); no LOCK is left behind.
func TestRunRefusesDirectoryPath(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.log")
	if err := os.Mkdir(in, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "c.yaml")
	os.WriteFile(path, []byte(brokenBase), 0o644)
	if out, stderr, code := cli(t, "validate", "--config", path); code != 0 {
		t.Errorf("validate: exit %d, want 0: %s%s", code, out, stderr)
	}
	_, stderr, code := cli(t, "run", "--config", path)
	loc := fmt.Sprintf("%s:%d: ", path, strings.Count(brokenBase[:strings.Index(brokenBase, "    path: ./in.log")], "\n")+1) // its path key's line
	if code != 2 || !hasLine(stderr, func(l string) bool {
		return strings.HasPrefix(l, loc) && strings.Contains(l, in) && strings.Contains(l, "is a directory")
	}) {
		t.Errorf("run: exit %d, stderr %q; want 2 and a line %q…%s is a directory", code, stderr, loc, in)
	}
}

// TestSIGHUPDoesNotKill: SIGHUP (a terminal hang-up, logrotate's
// postrotate) reloads the unchanged config: the daemon keeps running and
// serving, and a later SIGTERM still stops it cleanly (DESIGN §12 "Signals").
func TestSIGHUPDoesNotKill(t *testing.T) {
	e := newEnv(t, strings.Replace(brokenBase, "127.0.0.1:1", addrPlaceholder, 1))
	os.WriteFile(e.path("in.log"), []byte("one\ntwo\n"), 0o644)
	d := e.start()
	d.waitSettled(30 * time.Second)
	d.signal(syscall.SIGHUP)
	waitUntil(t, "the SIGHUP log line", 10*time.Second, func() bool {
		return strings.Contains(d.log(), "SIGHUP received: reloading the config")
	})
	d.signal(syscall.SIGHUP) // a second one reloads too
	time.Sleep(200 * time.Millisecond)
	if d.exited() {
		t.Fatalf("daemon exited after SIGHUP with code %d", d.code)
	}
	f, _ := os.OpenFile(e.path("in.log"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("three\n")
	f.Close()
	r := d.waitFor("line three delivered", 30*time.Second, func(r *report) bool { return r.Settled && r.Feeds[0].Sequence == 3 })
	if !r.Lossless {
		t.Errorf("lossless false after SIGHUP")
	}
	d.stop()
	if !strings.Contains(d.log(), "stopped cleanly") {
		t.Errorf("no clean stop in the log:\n%s", tail(d.log(), 2000))
	}
}
