package e2e

import (
	"os"
	"strings"
	"testing"
	"time"
)

// Review 29c of the headGrow / headFirst / adoptCopies changes.

const rev29CSingleTmpl = `dataDir: ./state
status: {listen: "{{ADDR}}"}
shutdownTimeoutMillis: 1000
feeds:
  - name: app
    path: ./logs/app.log
    readStrategy: COMMITTED
    pollIntervalMillis: 50
    rotateWaitMillis: 400
processors:
  - {name: plain, feed: app, type: file, path: ./out/plain.log}
  - {name: consumer, feed: app, type: pull, ackTimeoutMillis: 3000}
`

// rev29CStart makes logs/app.log with content and starts the daemon.
func rev29CStart(t *testing.T, tmpl, content string) (*env, *daemon) {
	e := newEnv(t, tmpl)
	for _, d := range []string{"logs", "out"} {
		if err := os.MkdirAll(e.path(d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(e.path("logs/app.log"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return e, e.start()
}

// TestRev29CXHeaderFileTakesUncommittedPointer — DESIGN §10 "At a start, a
// new key whose first bytes match a stream whose file is now shorter than
// its offset is that stream's copy at once; any other new key is a new
// stream." adoptCopies (source/file/glob.go:5069, offset 0 no longer
// skipped; copyName glob.go "a fingerprint over two lines: a file holding
// them is taken for a copy wherever it is and whatever its name") gives a
// never-committed pointer (offset 0, first bytes = a two-line CSV header)
// of a.log — cut while stopped by logrotate copytruncate+compress, its copy
// a.log.1.gz outside the glob — to b.log, another application's file
// created while stopped with the same header: b.log is read from 0 under
// a.log's epoch, its header lines get the (epoch, position) that named
// a.log's header lines, and the exactlyOnce sink skips them.
//
// Observed: once.log holds each header line once (a.log's); b.log's two
// header lines lost there. Expected: b.log is a new stream (a new epoch),
// once.log holds each header line twice, as plain.log does.
func TestRev29CXHeaderFileTakesUncommittedPointer(t *testing.T) {
	t.Parallel()
	const header = "ts,level,msg\n#schema 1\n"
	r := rev29BNew(t)
	r.create("a.log")
	d := r.e.start()
	d.waitFor("a.log tracked", 30*time.Second, func(rep *report) bool { return rep.Settled })
	appendTo(t, r.e.path("logs/a.log"), header)
	r.waitOut("once.log", []string{"ts,level,msg", "#schema 1"})
	for _, p := range r.pointers() {
		t.Logf("before the kill: pointer offset %d fpLen %d commits %d", p.Offset, p.FingerprintLength, p.Commits)
	}
	d.kill()
	// While stopped: logrotate copytruncate+compress cuts a.log (its copy
	// a.log.1.gz is outside the glob); another application starts b.log
	// with the same CSV header.
	r.logrotate("a.log", "copytruncate\ncompress\nrotate 1")
	appendTo(t, r.e.path("logs/b.log"), header)
	bl := r.write("b.log", "b", 3)
	d2 := r.e.start()
	r.waitOut("plain.log", bl)
	r.waitOut("once.log", bl)
	rep := d2.waitFor("settled", 30*time.Second, func(rep *report) bool { return rep.feed(t, "app").Sequence >= 5 || rep.Settled })
	f := rep.feed(t, "app")
	plain, once := r.lines("plain.log"), r.lines("once.log")
	t.Logf("plain header lines %d/%d, once header lines %d/%d; lostTails %d lossless %v; log: %s", plain["ts,level,msg"], plain["#schema 1"],
		once["ts,level,msg"], once["#schema 1"], f.LostTails, f.Lossless, rev29CGrep(d2.log(), "copied and cut"))
	for _, h := range []string{"ts,level,msg", "#schema 1"} {
		if once[h] < 2 {
			t.Errorf("once.log holds %q %d times, want 2 (a.log's and b.log's): b.log's header was read under a.log's epoch and skipped as applied", h, once[h])
		}
	}
}

func rev29CGrep(log, s string) string {
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return "(none)"
}

// Glob, a.log adopted with a banner, a second batch (headGrow gives the
// record its identity at offset 0 before any commit: the pull consumer
// never acknowledges), kill -9, logrotate renames a.log to a.log.1 (out of
// the glob) and a new a.log starts with the same banner. Expected: no line
// of the new a.log skipped by the exactlyOnce sink; a.log's old unacked
// lines either read again or counted lost (never lossless over a loss).
func TestRev29COKNamedUncommittedRenamedOut(t *testing.T) {
	t.Parallel()
	const banner = "=== app start ===\n"
	r := rev29BNew(t)
	appendTo(t, r.e.path("logs/a.log"), banner)
	d := r.e.start()
	r.waitOut("once.log", []string{"=== app start ==="})
	old := r.write("a.log", "old", 3)
	r.waitOut("once.log", old)
	for _, p := range r.pointers() {
		t.Logf("before the kill: pointer offset %d fpLen %d key %s commits %d", p.Offset, p.FingerprintLength, p.FileKey, p.Commits)
	}
	d.kill()
	r.logrotate("a.log", "create\nrotate 1")
	appendTo(t, r.e.path("logs/a.log"), banner)
	nw := r.write("a.log", "new", 3)
	d2 := r.e.start()
	_, stop := rev29BPull(d2)
	defer stop()
	r.waitOut("plain.log", nw)
	rep := d2.waitFor("new lines read", 30*time.Second, func(rep *report) bool { return rep.feed(t, "app").Sequence >= 4 })
	f := rep.feed(t, "app")
	once := r.lines("once.log")
	waitUntil(t, "once.log holds the new lines", 20*time.Second, func() bool {
		once = r.lines("once.log")
		for _, s := range nw {
			if once[s] == 0 {
				return false
			}
		}
		return true
	})
	t.Logf("once banner %d, lostTails %d lossless %v, old in plain %v", once["=== app start ==="], f.LostTails, f.Lossless, r.lines("plain.log"))
	if once["=== app start ==="] < 2 {
		t.Errorf("once.log holds the banner %d times, want 2 (the new a.log's skipped)", once["=== app start ==="])
	}
	plain := r.lines("plain.log")
	if plain[old[0]] < 2 && f.Lossless {
		t.Errorf("a.log's unacknowledged lines neither read again (%d) nor counted lost (lostTails %d, lossless %v)", plain[old[0]], f.LostTails, f.Lossless)
	}
}
