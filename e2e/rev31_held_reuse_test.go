package e2e

// Thirty-first session: CI's TestRev30BOKManyHeldRestart/stop overcount
// made deterministic, and the duplicates its reproduction found (a
// compressed older generation read again after a restart).

import (
	"os"
	"strings"
	"testing"
	"time"
)

// rev31StoppedRotationThenIdle: a glob feed ./logs/*.log, a.log (5 lines)
// read and committed; stopped, a.log renamed to a.log.1 and an empty a.log
// made; started (the pointer reads a.log.1 to its end and moves on to the
// empty a.log, its epochs line naming a.log.1's 115 bytes as the file left),
// then n idle logrotate create + delaycompress rotations (rev30BDelayRotate:
// the .gz keeps its original's mtime, as logrotate's does); then a stop or
// a kill -9 and a start. Every line once in the exactlyOnce sink and
// lossless after the restart; 3 lines written then delivered once.
func rev31StoppedRotationThenIdle(t *testing.T, n int, kill bool) {
	g := rev30BNewEnv(t)
	g.write(t, "", 5)
	d := g.e.start()
	g.settle(t, d, "a.log read", nil)
	d.stop()
	if err := os.Rename(g.app, g.app+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(g.app, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	d = g.e.start()
	g.settle(t, d, "the rotation while stopped", nil)
	time.Sleep(aud11AGap)
	for range n {
		rev30BDelayRotate(t, g.app)
		time.Sleep(700 * time.Millisecond)
		g.settle(t, d, "the rotation seen", nil)
	}
	if kill {
		d.kill()
	} else {
		d.stop()
	}
	d = g.e.start()
	g.settle(t, d, "restart", nil)
	time.Sleep(300 * time.Millisecond) // a generation read again would be in the sink by now
	f, p, ok := g.waitBook(t, d, 1, 1)
	// A kill -9 may come while the stream of the last rotated-out empty
	// file is still open (CI load: its pointer not deleted yet, its file
	// compressed by the next rotation): the start counts that pointer's
	// file "gone while stopped" (README: its tail "if any"), an overcount
	// that is not this test's. Any other count is.
	other := 0
	for _, l := range rev31ALossesNaming(g.e, "") {
		if !(kill && strings.Contains(l, "glob file gone while stopped (pointer")) {
			other++
		}
	}
	if dup, miss := g.once(); !ok || other > 0 || (!f.Lossless && !kill) || len(dup)+len(miss) > 0 {
		t.Errorf("after the restart: settled %v filesTracked %d pointers %v lossless %v lostTails %d (%d not gone while stopped) twice %v missing %v\n%s",
			f.Settled, f.FilesTracked, p, f.Lossless, f.LostTails, other, dup, miss, d.log())
	}
	g.write(t, "", 3)
	waitUntil(t, "3 more lines", 20*time.Second, func() bool { _, miss := g.once(); return len(miss) == 0 })
	f, p, ok = g.waitBook(t, d, 1, 1)
	if dup, miss := g.once(); !ok || (!f.Lossless && !kill) || len(dup)+len(miss) > 0 {
		t.Errorf("after 3 lines: settled %v filesTracked %d pointers %v lossless %v twice %v missing %v", f.Settled, f.FilesTracked, p, f.Lossless, dup, miss)
	}
}

// TestRev31HeldMarkFileOnReusedInode: DESIGN §4 "Nothing green over a
// loss" counts only what may have been lost; README (Many files per feed)
// "a file read to its end, committed and closed … nothing".
// rev31StoppedRotationThenIdle with 6 idle rotations: the pointer of the
// first empty a.log is held as the path's record throughout, its held
// line moved on (remarkHeld) as the empty files it names go, and the new
// files take the deleted ones' inodes in turn. At the stop the mark names
// that pointer's key, often by then the inode of the empty a.log.1 — born
// after the pointer file was written, before the mark: the glob found it
// as the mark's file (so the mark named nothing) and the stream's source,
// bounding by the pointer file's mtime, took it for another file and
// counted the pointer's file's tail lost (lostTails 1, lossless false)
// over nothing lost — CI's TestRev30BOKManyHeldRestart/stop, where a.log's
// first file was let go under load. Fixed, the source then read
// a.log.1's .gz again (below).
func TestRev31HeldMarkFileOnReusedInode(t *testing.T) {
	for _, v := range []string{"stop", "kill"} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			rev31StoppedRotationThenIdle(t, 6, v == "kill")
		})
	}
}

// TestRev31LeftFileGzNotReadAgain: DESIGN §2 "The duplicates after a crash
// are exactly the lines acknowledged since the last commit reached the
// pointer file — never a gap; the only other re-delivery is a restored
// sink's catch-up". rev31StoppedRotationThenIdle with 1 and 2 idle
// rotations: the first compresses a.log.1 (the file the held pointer's
// epoch moved off, every line committed) to a.log.2.gz with its mtime,
// within mtimeSlack of the pointer's reference; the restart queued it as a
// later generation of the held record's file and delivered its 5 lines
// again under a new epoch (exactlyOnce sink: twice), the record's file
// found at a.log.1 (1 rotation) or gone (2).
func TestRev31LeftFileGzNotReadAgain(t *testing.T) {
	for _, v := range []string{"stop1", "kill1", "stop2", "kill2"} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			rev31StoppedRotationThenIdle(t, int(v[4]-'0'), strings.HasPrefix(v, "kill"))
		})
	}
}

const rev31SingleTmpl = `dataDir: ./state
status: {listen: "{{ADDR}}"}
shutdownTimeoutMillis: 2000
feeds:
  - name: app
    path: ./logs/a.log
    readStrategy: COMMITTED
    pollIntervalMillis: 50
    rotateWaitMillis: 3000
processors:
  - {name: once, feed: app, type: file, path: ./out/once.jsonl, exactlyOnce: true, format: json}
`

// TestRev31SingleFileLeftGzNotReadAgain: the same for a single-file feed.
// a.log (5 lines) read; a live logrotate create (a.log.1, a new empty
// a.log) switched to after rotateWait; a second rotation with
// delaycompress (a.log.1 to a.log.2.gz, its mtime kept, the empty a.log to
// a.log.1, a new a.log) and a stop within rotateWait (the pointer still
// names the empty file now at a.log.1): the restart read a.log.2.gz — the
// file the pointer's epoch moved off, every line committed — as a later
// generation: its 5 lines twice in the exactlyOnce sink.
func TestRev31SingleFileLeftGzNotReadAgain(t *testing.T) {
	for _, v := range []string{"stop", "kill"} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, rev31SingleTmpl)
			if err := os.MkdirAll(e.path("logs"), 0o755); err != nil {
				t.Fatal(err)
			}
			g := &rev30BGlobEnv{e: e, app: e.path("logs/a.log")}
			g.write(t, "", 5)
			d := e.start()
			waitUntil(t, "5 lines delivered", 10*time.Second, func() bool { return g.delivered() >= 5 })
			time.Sleep(300 * time.Millisecond)
			if err := os.Rename(g.app, g.app+".1"); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(g.app, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			waitUntil(t, "the switch to the new a.log", 10*time.Second, func() bool {
				return strings.Contains(d.log(), "switching to the next file")
			})
			time.Sleep(300 * time.Millisecond)
			rev30BDelayRotate(t, g.app)
			time.Sleep(300 * time.Millisecond)
			if v == "kill" {
				d.kill()
			} else {
				d.stop()
			}
			d = e.start()
			d.waitFor("settled", 20*time.Second, func(r *report) bool { return r.Settled })
			time.Sleep(500 * time.Millisecond)
			r, err := d.status()
			if dup, miss := g.once(); err != nil || len(dup)+len(miss) > 0 || !r.Lossless {
				t.Errorf("after the restart: twice %v missing %v (status %+v, %v)\n%s", dup, miss, r, err, d.log())
			}
		})
	}
}
