package e2e

// Review 9d: the losses ledger gate across stops and reloads, and a glob
// stream's identity (openKeys, first bytes, birth time) and report.

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// rev9dCfg: one feed "app" over path (glob or single file) with a slow poll
// and a long rotateWait; a file sink ./out.log.
func rev9dCfg(path, extra string) string {
	return `dataDir: ./state
status:
  listen: {{ADDR}}
feeds:
  - name: app
    path: ` + path + `
    pollIntervalMillis: 3000
    rotateWaitMillis: 60000
` + extra + `processors:
  - name: out
    feed: app
    type: file
    path: ./out.log
`
}

// TestRev9DXDMovedOutThenWrittenCaughtUp — DESIGN §7 "When a report is built,
// an fstat must show no complete line past the read position, and the path
// must still name the open file (or be missing with the open file read to
// its end); otherwise the state is BEHIND"; §10 "the fstat rule of §7, per
// file"; the change under review (b): "an open CAUGHT_UP stream whose path
// names nothing is CAUGHT_UP only once its source saw the file read to its
// end". The writer keeps its descriptor (an application logrotate did not
// signal yet). fN.log (1 line) is delivered and settled; the file is renamed
// out of the glob (mode "rename", into another directory) or deleted (mode
// "delete"); once the source saw its path missing with the file read to its
// end (CAUGHT_UP, settled again), the writer appends 2 lines through its
// descriptor, and a report is taken at once. Expected: BEHIND / not
// settled (an fstat of the open file shows complete lines past the read
// position). Observed: behindLocked answers !FileEnded() — a flag the
// source set at its last look, not an fstat — so the report says CAUGHT_UP
// and settled until the next poll (pollIntervalMillis 3000; no fsnotify
// event reaches a file outside the watched directory). rename: 3 of 3
// rounds; single: 1 of 1 (the single-file feed, daemon fileCaughtUp, same
// flag: pre-existing there); delete: 0 of 3 (passes: the unlinked case is
// caught).
func TestRev9DXDMovedOutThenWrittenCaughtUp(t *testing.T) {
	for _, mode := range []string{"rename", "delete", "single"} {
		t.Run(mode, func(t *testing.T) {
			path := "./in/*.log"
			if mode == "single" {
				path = "./in/f1.log"
			}
			e := newEnv(t, rev9dCfg(path, ""))
			in := e.path("in")
			moved := e.path("moved")
			os.MkdirAll(moved, 0o755)
			writeFileLines(t, filepath.Join(in, "keep.log"), "k", 0, 1)
			if mode == "single" {
				writeFileLines(t, filepath.Join(in, "f1.log"), "f1", 0, 0)
			}
			d := e.start()
			out := e.path("out.log")
			bad := 0
			rounds := 3
			if mode == "single" {
				rounds = 1
			}
			for i := 1; i <= rounds; i++ {
				tag := fmt.Sprintf("f%d", i)
				p := filepath.Join(in, tag+".log")
				w, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
				if err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(w, "%s 0\n", tag)
				waitReport(t, d, tag+" 0 settled", 20*time.Second, func(r *report) bool {
					return r.Settled && len(perTag(t, out)[tag]) >= 1
				})
				if mode == "delete" {
					err = os.Remove(p)
				} else {
					err = os.Rename(p, filepath.Join(moved, tag+".log"))
				}
				if err != nil {
					t.Fatal(err)
				}
				// The source's next poll sees the path missing, the file
				// read to its end.
				time.Sleep(3500 * time.Millisecond)
				waitReport(t, d, tag+" settled after the move", 20*time.Second, func(r *report) bool { return r.Settled })
				fmt.Fprintf(w, "%s 1\n%s 2\n", tag, tag)
				r, err := d.status()
				if err != nil {
					t.Fatal(err)
				}
				n := len(perTag(t, out)[tag])
				if (r.Settled || r.Feeds[0].State == "CAUGHT_UP") && n < 3 {
					bad++
					t.Errorf("round %d (%s): right after 2 lines were appended to the open (moved-out) file, the report says state %s settled %v with %d of %s's 3 lines delivered",
						i, mode, r.Feeds[0].State, r.Settled, n, tag)
				}
				waitUntil(t, tag+" delivered", 20*time.Second, func() bool { return len(perTag(t, out)[tag]) >= 3 })
				w.Close()
			}
			if bad > 0 {
				t.Errorf("%s: %d of %d reports claimed CAUGHT_UP/settled with lines past the open file's read position (DESIGN §7 fstat rule)", mode, bad, rounds)
			}
		})
	}
}
