package e2e

// Review 9d: the losses ledger gate across stops and reloads, and a glob
// stream's identity (openKeys, first bytes, birth time) and report.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// TestRev9DFixedFWaitingFileReplacedAtItsPathUncounted — DESIGN §10 "Identity is
// the file key confirmed by the fingerprint: the same key with other first
// bytes is a new stream (inode reuse)"; "A file that disappears with an
// unread tail counts in lostTails as in §4"; §7 lossless; the change under
// review (a): "for never-read waiting files, birth time vs when the glob
// first saw the file; a waiting file replaced by a reused inode is counted
// lost (neverRead)". As rev9WaitingSwap (maxOpenFiles 2, an unpolled pull
// client: b..i.log wait for their first turn, never read, no pointer), but
// each waiting file is deleted and a new file of other first bytes is
// created at the SAME path (an application's delete-and-recreate, or
// `create` after a rename elsewhere), usually with the deleted file's
// inode. Expected: each deleted file counted (lostTails 8, lostBytes their
// sizes, lossless false), each new file delivered whole. Observed: sameFile
// still returns true before any look at first bytes or birth time for a
// stream at its own path with no pointer (`!moved && (open || s.ptrPath ==
// "" || …)`): the new file is taken for the waiting one, the deleted files'
// bytes are never counted when the glob's look meets the new file before
// it saw the deletion. Observed: ledger lostTails 7, 6, 7 of 8 (lostBytes
// short by 19890 per missed file) in 3 of 3 runs, with 6, 8, 5 inodes
// reused; every new file delivered whole. With a single such replacement
// the feed would report lossless true.
func TestRev9DFixedFWaitingFileReplacedAtItsPathUncounted(t *testing.T) {
	e := newEnv(t, rev9WaitCfg)
	in := e.path("in")
	old := "bcdefghi"
	writeFileLines(t, filepath.Join(in, "a.log"), "a", 0, 3000)
	for _, c := range old {
		writeFileLines(t, filepath.Join(in, string(c)+".log"), string(c), 0, 3000)
	}
	d := e.start()
	waitUntil(t, "i.log BEHIND, never read", 30*time.Second, func() bool {
		_, _, _, state, off, size, ok := aud3Row(getGlobStatus(t, d), "i.log")
		return ok && state == "BEHIND" && off == 0 && size > 0
	})
	time.Sleep(2500 * time.Millisecond)
	var lostSize uint64
	reused := 0
	for k := range old {
		op := filepath.Join(in, string(old[k])+".log")
		tag := string(old[k]) + "N" // other first bytes
		ino := rev9Ino(op)
		st, err := os.Stat(op)
		if err != nil {
			t.Fatal(err)
		}
		lostSize += uint64(st.Size())
		os.Remove(op)
		writeFileLines(t, op, tag, 0, 4000)
		if rev9Ino(op) == ino {
			reused++
		}
		time.Sleep(300 * time.Millisecond)
	}
	time.Sleep(3 * time.Second)
	got := rev9dPullAckByTag(t, d, "pl")
	r := d.waitSettled(30 * time.Second)
	f := r.feed(t, "app")
	led, _ := os.ReadFile(e.path("state/losses.jsonl"))
	lt, lb := globLedger(t, e), ledgerSum(t, e.path("state/losses.jsonl"), "app", "lostBytes")
	t.Logf("%d of %d new files got the deleted file's inode; got %v", reused, len(old), got)
	if reused == 0 {
		t.Skip("no inode was reused: nothing to tell")
	}
	if lt != len(old) || f.Lossless || lb != lostSize {
		t.Errorf("%d waiting files (never read, %d bytes in all) deleted, each followed at once by a new file of other first bytes at the same path (%d of them with its inode): ledger lostTails %d lostBytes %d, report lossless %v; want %d, %d, false (DESIGN §10: the same key with other first bytes is a new stream; a file that disappears with an unread tail counts in lostTails)\nlosses.jsonl:\n%s",
			len(old), lostSize, reused, lt, lb, f.Lossless, len(old), lostSize, led)
	}
	for _, c := range old {
		if n := got[string(c)+"N"]; n < 4000 {
			t.Errorf("%c.log (new): %d of its 4000 lines delivered", c, n)
		}
		if n := got[string(c)]; n > 0 {
			t.Logf("%c.log (deleted): %d of its lines delivered", c, n)
		}
	}
	d.stop()
}

// rev9dPullAckByTag pulls and acknowledges every line of sub until idle and
// counts them by tag (the line's text before its first space).
func rev9dPullAckByTag(t testing.TB, d *daemon, sub string) map[string]int {
	got := map[string]int{}
	deadline := time.Now().Add(90 * time.Second)
	idle := 0
	for time.Now().Before(deadline) && idle < 4 {
		evs := pullFrom(t, d, sub, "max=1000&wait=1s")
		if len(evs) == 0 {
			idle++
			continue
		}
		idle = 0
		for _, ev := range evs {
			tag, _, _ := strings.Cut(string(ev.Line), " ")
			got[tag]++
		}
		ackAll(t, d, evs)
	}
	return got
}

// TestRev9DFixedDMovedOutThenWrittenCaughtUp — DESIGN §7 "When a report is built,
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
// event reaches a file outside the watched directory). Mode "recreate":
// renamed out, and a new shorter file created at the path (tracked by a
// stream of its own): behindLocked's "another file at the path, tracked"
// branch answers not behind without looking at the open file either.
// rename: 3 of 3, recreate: 3 of 3
// rounds each; single: 1 of 1 (the single-file feed, daemon fileCaughtUp, same
// flag: pre-existing there); delete: 0 of 3 (passes: the unlinked case is
// caught).
func TestRev9DFixedDMovedOutThenWrittenCaughtUp(t *testing.T) {
	t.Parallel() // mostly asleep (3.5 s per round): with the other parallel tests
	for _, mode := range []string{"rename", "recreate", "delete", "single"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
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
				if mode == "recreate" {
					// A new, shorter file at the path (its own stream).
					writeFileLines(t, p, fmt.Sprintf("n%d", i), 0, 1)
				}
				// The source's next poll sees the path missing, the file
				// read to its end.
				time.Sleep(3500 * time.Millisecond)
				before := waitReport(t, d, tag+" settled after the move", 20*time.Second, func(r *report) bool { return r.Settled })
				fmt.Fprintf(w, "%s 1\n%s 2\n", tag, tag)
				r, err := d.status()
				if err != nil {
					t.Fatal(err)
				}
				n := len(perTag(t, out)[tag])
				// CAUGHT_UP is true once the source read the 2 lines (a poll
				// may land between the append and the report: CI saw it
				// once, settled false, the lines in flight); settled is
				// true only once they were delivered.
				read := r.Feeds[0].Sequence >= before.Feeds[0].Sequence+2
				if (r.Settled && n < 3) || (r.Feeds[0].State == "CAUGHT_UP" && !read) {
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
