package e2e

// A glob stream's pointer kept for a live rotation's empty new file when
// the kept file is deleted (audit 11a's finding, fixed in the thirtieth
// session). README "What can be lost" (the glob's empty new file rows).

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestGlobEmptyNewFileGzRotatedWhileDown: DESIGN §4 "Restart after
// rotation: every generation still on disk" and "Nothing green over a
// loss". The commonest logrotate config (`create` + `compress`, no
// delaycompress: a.log.1 is gzipped and deleted at once) on a glob feed
// `./logs/*.log`: a kill -9 while the live rotation's new a.log (E) is
// still empty, then 7 lines to E, a rotation, 6 lines to W, a rotation and
// 5 lines to Z, all while tailfeed is down (aud11AEmptyNewFileGz). Found by
// the glob kill -9 property test (seed 1796521839691090567). Before the
// fix, 13 of 28 lines (E's and W's, on disk in a.log.2.gz and a.log.1.gz)
// reached no sink with lossless true, lostTails 0: the source forgot the
// deleted a.log.1's pointer (reset to the empty record) and the glob held
// nothing for the empty a.log, so nothing named the path at the restart.
// Now every line is delivered once (the glob's pointer for the path is
// kept, marked held, and the restart reads the .gz generations after it).
// The restart still counts lostTails 1 for E (its key is gone: gzip wrote
// a new file): the overcount README states for that row.
func TestGlobEmptyNewFileGzRotatedWhileDown(t *testing.T) {
	for _, takeover := range []bool{false, true} {
		t.Run(fmt.Sprintf("takeover=%v", takeover), func(t *testing.T) {
			t.Parallel()
			missing, names, f, epochs := aud11AEmptyNewFileGz(t, "./logs/*.log", takeover)
			if len(missing) > 0 {
				t.Errorf("%d lines never delivered %v (all on disk at the restart: %v); the feed reports lossless %v, lostTails %d, lostBytes %d; epochs file:\n%s",
					len(missing), missing, names, f.Lossless, f.LostTails, f.LostBytes, epochs)
			}
			if !strings.Contains(string(epochs), `"reason":"held"`) {
				t.Errorf("no held line for the deleted file's pointer:\n%s", epochs)
			}
		})
	}
}

// TestGlobHeldFileCompressedByNextLiveRotation: `create` + `compress` +
// `delaycompress`. A live rotation keeps R0's pointer (a.log.1) for the
// empty new a.log (E); a second live rotation while E is still empty
// compresses R0 (a.log.1 deleted) and moves E to a.log.1 beside a new empty
// a.log (F). The held pointer stays the path's record (before, it was let go
// as its file was deleted); kill -9, then 7 lines to F and two rotations
// with lines while down: every line once in the exactlyOnce sink and the
// count.
func TestGlobHeldFileCompressedByNextLiveRotation(t *testing.T) {
	t.Parallel()
	g := aud11ANewGenEnv(t)
	g.write(t, 10) // R0
	d := g.e.start()
	g.settle(t, d)
	time.Sleep(aud11AGap)
	g.rot()                             // R0 → a.log.1, a new empty a.log (E)
	time.Sleep(2500 * time.Millisecond) // R0's stream closes: held
	g.settle(t, d)
	time.Sleep(aud11AGap)
	g.rot()                             // R0 → a.log.2.gz, E → a.log.1, a new empty a.log (F)
	time.Sleep(2500 * time.Millisecond) // a rescan or two
	g.settle(t, d)
	d.kill()
	g.write(t, 7) // F
	time.Sleep(aud11AGap)
	g.rot()       // F → a.log.1, E → a.log.2.gz, a new a.log (W)
	g.write(t, 6) // W
	time.Sleep(aud11AGap)
	g.rot()       // W → a.log.1, F → a.log.2.gz, a new a.log (Z)
	g.write(t, 5) // Z
	d = g.e.start()
	r := g.settle(t, d)
	time.Sleep(300 * time.Millisecond)
	r, _ = statusRaw(t, d)
	g.check(t, d, r)
}

// TestGlobDeletedFileStopSoonAfterIsLossless: the other side of keeping a
// deleted file's pointer for the empty new file at its path: a file read
// to its end, committed and then deleted is no lost tail (DESIGN §4). The
// file is renamed out of the glob and deleted at once (no copy left
// anywhere), an empty file made at its path, and tailfeed stopped
// (SIGTERM) 0 to 600 ms later; nothing is written while it is stopped. The
// restart reads nothing again and counts nothing: lossless, each line once.
func TestGlobDeletedFileStopSoonAfterIsLossless(t *testing.T) {
	for _, wait := range []time.Duration{0, 100 * time.Millisecond, 300 * time.Millisecond, 600 * time.Millisecond} {
		t.Run(wait.String(), func(t *testing.T) {
			t.Parallel()
			g := aud11ANewGenEnv(t)
			g.write(t, 10)
			d := g.e.start()
			g.settle(t, d)
			if err := os.Rename(g.app, g.app+".1"); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(g.app, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(g.app + ".1"); err != nil {
				t.Fatal(err)
			}
			time.Sleep(wait)
			d.stop()
			d = g.e.start()
			r := g.settle(t, d)
			time.Sleep(300 * time.Millisecond)
			r, _ = statusRaw(t, d)
			g.check(t, d, r)
			if f := r.feed(t, "app"); !f.Lossless || f.LostTails != 0 {
				t.Errorf("nothing was lost, yet lossless %v, lostTails %d, lostBytes %d", f.Lossless, f.LostTails, f.LostBytes)
			}
		})
	}
}
