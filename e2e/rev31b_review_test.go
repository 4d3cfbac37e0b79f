package e2e

// Review 31b of the thirty-first session (ae908d7..5d398c6): the unread
// list's files found beside their path at a start (readListedBeside,
// listedCopyBeside), the list's rewrite in countUnreadGone, and
// dropLeftGzOlder's mtime condition.

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

const rev31BManyTmpl = `dataDir: ./state
status: {listen: "{{ADDR}}"}
feeds:
  - name: app
    path: ./logs/*.log
    readStrategy: COMMITTED
    pollIntervalMillis: 50
    maxOpenFiles: 2
    forgetAfterMillis: 500
processors:
  - {name: once, feed: app, type: file, path: ./out/once.jsonl, exactlyOnce: true, format: json}
`

// rev31BFiller writes n files f000.log … of 3 lines each.
func rev31BFiller(t *testing.T, e *env, n int) {
	t.Helper()
	if err := os.MkdirAll(e.path("logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		appendTo(t, e.path(fmt.Sprintf("logs/f%04d.log", i)), fmt.Sprintf("f%04d #0\nf%04d #1\nf%04d #2\n", i, i, i))
	}
}

// rev31BListed: the glob's unread list names key.
func rev31BListed(t *testing.T, e *env, key uint64) bool {
	b, _ := os.ReadFile(e.path("state/feeds/app/unread.list"))
	for _, l := range strings.Split(string(b), "\n") {
		var w struct {
			Key uint64 `json:"key"`
		}
		if json.Unmarshal([]byte(l), &w) == nil && w.Key == key {
			return true
		}
	}
	return false
}

// rev31BKilledFirstRun: a first run over the filler files and victim
// (z.log, sorted last) killed -9 at its first line in the sink, z.log's
// stream never opened (its key on the unread list); skips when it was.
func rev31BKilledFirstRun(t *testing.T, e *env, victim string) {
	t.Helper()
	d := e.start()
	waitUntil(t, "a first line in the sink", 20*time.Second, func() bool { return len(rev31Lines(e.path("out/once.jsonl"))) > 0 })
	d.kill()
	if !rev31BListed(t, e, fileKeyOf(t, victim)) {
		b, _ := os.ReadFile(e.path("state/feeds/app/unread.list"))
		t.Skipf("z.log not on the unread list at the kill: nothing to show (list %d bytes: %.600s)", len(b), b)
	}
}

// rev31BCounts: each line text's deliveries in the exactlyOnce sink.
func rev31BCounts(e *env) map[string]int {
	n := map[string]int{}
	for _, l := range rev31Lines(e.path("out/once.jsonl")) {
		n[l]++
	}
	return n
}

// rev31BRotatedWhileDown: 200 filler files and z.log (3 lines); a first
// run killed -9 at its first line, z.log never opened (listed); while down
// z.log renamed z.log.1 and a new z.log with z #3, z #4. Returns z.log.1's
// key.
func rev31BRotatedWhileDown(t *testing.T, e *env) uint64 {
	t.Helper()
	rev31BFiller(t, e, 200)
	z := e.path("logs/z.log")
	appendTo(t, z, "z #0\nz #1\nz #2\n")
	rev31BKilledFirstRun(t, e, z)
	if err := os.Rename(z, z+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, z, "z #3\nz #4\n")
	return fileKeyOf(t, z+".1")
}

// TestRev31BXBesideQueuedKilledLost: DESIGN §2 "the restart re-reads
// from the pointer; … never a gap"; §4 "Nothing green over a loss.
// `lossless` is true only while tailfeed can show that no line was
// skipped. Every case where it cannot is counted". rev31BRotatedWhileDown;
// the second start finds the listed z.log beside its path (z.log.1, by key)
// and queues it (readListedBeside), behind the 200 filler streams
// (maxOpenFiles 2); it is killed -9 as soon as the unread list on disk no
// longer names z.log.1's key (countUnreadGone's rewrite), before
// z.log.1's stream opened. A third start.
// Observed: z #0, z #1, z #2 never delivered, lostTails 0, lossless true
// (nothing on disk names z.log.1 any more: no pointer, no list entry, and
// it is not in the glob). Expected: read, or counted.
// Suspected cause: source/file/glob.go:5755-5771 — countUnreadGone
// rewrites the list with the start list alone (g.live.written), dropping
// the entry readListedBeside (glob.go:5733) took; the stream queueBeside
// made (glob.go:4803, gone: true) is in no list (waitingNow skips
// s.gone, unreadlive.go:62; only a clean stop's moved list names it:
// TestRev31BOKBesideQueuedStopped) until its pointer is adopted.
// 3/3 runs. New: on 3c15d75 the second start counts z.log lost
// (lossless false), a loss counted.
func TestRev31BXBesideQueuedKilledLost(t *testing.T) {
	rev31BBesideQueuedThen(t, false)
}

// TestRev31BOKBesideQueuedStopped: TestRev31BXBesideQueuedKilledLost's
// second start stopped cleanly instead (the stop's moved list names the
// gone stream): the third start reads z.log.1, every line once.
func TestRev31BOKBesideQueuedStopped(t *testing.T) {
	rev31BBesideQueuedThen(t, true)
}

func rev31BBesideQueuedThen(t *testing.T, stop bool) {
	e := newEnv(t, rev31BManyTmpl)
	k := rev31BRotatedWhileDown(t, e)
	if !rev31BListed(t, e, k) {
		t.Fatal("z.log.1's key not on the list before the second start")
	}
	d := e.start()
	// (Was: killed once the list no longer named z.log.1's key. Fixed, the
	// list keeps the previous run's entry until z.log.1's stream adopts
	// its pointer: killed as soon as the start is over — the list written
	// again by countUnreadGone, "glob feed started" logged — z.log.1
	// queued behind the fillers.)
	waitUntil(t, "the start over", 20*time.Second, func() bool { return strings.Contains(d.log(), "glob feed started") })
	if stop {
		d.stop()
	} else {
		d.kill()
	}
	if n := rev31BCounts(e); n["z #0"] > 0 {
		t.Skip("z.log.1 read before the kill")
	}
	d = e.start()
	r := d.waitFor("settled", 90*time.Second, func(r *report) bool { return r.Settled })
	time.Sleep(time.Second)
	r, _ = d.status()
	n := rev31BCounts(e)
	if n["z #0"] > 1 || n["z #3"] != 1 {
		t.Errorf("z #0 ×%d, z #3 ×%d", n["z #0"], n["z #3"])
	}
	if (n["z #0"] == 0 || n["z #1"] == 0 || n["z #2"] == 0) && r.Lossless {
		t.Errorf("z.log.1 (z #0..#2) delivered %d/%d/%d times, lostTails %d lossless %v", n["z #0"], n["z #1"], n["z #2"], r.Feeds[0].LostTails, r.Lossless)
	}
}

// TestRev31BXBesideAfterNewFileAtPath: DESIGN §10 "**Order.** The epoch
// barrier of §4 holds per path: a new file at a path is published after
// every line of the file previously at that path is acknowledged";
// §4 "Restart after rotation … Read it from the offset to its end first.
// Then read every later generation … only then the file at the path".
// rev31BRotatedWhileDown; the second start reads z.log.1 (the file
// previously at logs/z.log, its Delivery.Path logs/z.log) and the new
// z.log. Observed: every line once, but the new z.log's z #3, z #4 are
// in the sink before z.log.1's z #0..#2 (positions 600, 601 vs 602-604;
// published first). Expected: z #0..#2 first. 4/4 runs.
// Suspected cause: source/file/glob.go:4803-4816 — queueBeside, called by
// readListedBeside after the first scan, gives the stream no barrier
// (after) and the new z.log at the path none either (restartOrder,
// glob.go:1191, ran at that scan: no stream's first path was logs/z.log);
// the queue puts the beside stream last. Also the copytruncate case
// (listedCopyBeside). New (3c15d75 counted z.log.1 lost, never read).
func TestRev31BXBesideAfterNewFileAtPath(t *testing.T) {
	e := newEnv(t, rev31BManyTmpl)
	rev31BRotatedWhileDown(t, e)
	d := e.start()
	d.waitFor("settled", 90*time.Second, func(r *report) bool { return r.Settled })
	waitUntil(t, "z's 5 lines", 20*time.Second, func() bool { return rev31BCounts(e)["z #0"] > 0 && rev31BCounts(e)["z #3"] > 0 })
	pos := map[string]int{}
	for i, l := range rev31Lines(e.path("out/once.jsonl")) {
		if strings.HasPrefix(l, "z #") {
			if _, ok := pos[l]; !ok {
				pos[l] = i
			}
		}
	}
	if pos["z #3"] < pos["z #2"] {
		t.Errorf("the new z.log's z #3 at %d in the sink, before z.log.1's z #2 at %d (z #0 at %d)", pos["z #3"], pos["z #2"], pos["z #0"])
	}
	for l, c := range rev31BCounts(e) {
		if c > 1 {
			t.Errorf("%q delivered %d times", l, c)
		}
	}
}

// TestRev31BXBannerOldGenerationTaken: DESIGN §2 exactlyOnce "skip
// re-deliveries"; §4 "Nothing green over a loss … Every case where it
// cannot is counted"; §10 "A file that disappears with an unread tail
// counts in lostTails as in §4". Each of the application's logs starts
// with the same banner line. Run 0: logs/z.log (banner + a #0..#4) read,
// then renamed z.log.1 (out of the glob), read to its end and forgotten
// (forgetAfterMillis 500); stopped. While down: 200 filler files, a new
// z.log holding only the banner. Run 1 killed -9 at its first line (z.log
// listed, never opened). While down: z.log deleted. Run 2.
// Observed: z.log.1 — the old generation run 0 read and forgot, which
// starts with the banner and is larger — is taken for z.log's copy
// (listedCopyBeside) and read again whole: every a #i twice in the
// exactlyOnce sink, the banner twice; z.log's deletion not counted
// (lostTails 0, lossless true). Expected: z.log counted lost (lostTails 1,
// its 23 bytes), z.log.1 not read again.
// Suspected cause: source/file/glob.go:5660-5688 — listedCopyBeside takes
// any logrotate-named regular file beside the path whose first FPLen bytes
// are the entry's (FPLen = the whole entry when under 4 KiB, so a file
// holding just a common prefix matches) and at least its size, with no
// look at whether it was read before (epochs: its "forgotten" line) or
// was there before the entry's file was. 3/3 runs. New (3c15d75 counted
// z.log: lostTails 1, each a #i once).
func TestRev31BXBannerOldGenerationTaken(t *testing.T) {
	e := newEnv(t, rev31BManyTmpl)
	if err := os.MkdirAll(e.path("logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	const banner = "=== app v1 started ===\n"
	z := e.path("logs/z.log")
	appendTo(t, z, banner+"a #0\na #1\na #2\na #3\na #4\n")
	d := e.start()
	waitUntil(t, "z.log's 6 lines", 20*time.Second, func() bool { return len(rev31Lines(e.path("out/once.jsonl"))) >= 6 })
	d.waitFor("settled", 20*time.Second, func(r *report) bool { return r.Settled })
	if err := os.Rename(z, z+".1"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "z.log.1's pointer forgotten", 20*time.Second, func() bool {
		m, _ := os.ReadDir(e.path("state/feeds/app"))
		for _, f := range m {
			if strings.HasSuffix(f.Name(), ".ptr") {
				return false
			}
		}
		return true
	})
	d.stop()
	rev31BFiller(t, e, 200)
	appendTo(t, z, banner)
	rev31BKilledFirstRun(t, e, z)
	if err := os.Remove(z); err != nil {
		t.Fatal(err)
	}
	d = e.start()
	d.waitFor("settled", 90*time.Second, func(r *report) bool { return r.Settled })
	time.Sleep(time.Second)
	r, _ := d.status()
	n := rev31BCounts(e)
	var twice []string
	for l, c := range n {
		if c > 1 {
			twice = append(twice, fmt.Sprintf("%q×%d", l, c))
		}
	}
	if len(twice) > 0 || r.Lossless || r.Feeds[0].LostTails != 1 {
		t.Errorf("z.log (the banner alone) deleted unread while down: lostTails %d lossless %v; delivered more than once: %v", r.Feeds[0].LostTails, r.Lossless, twice)
	}
}

// TestRev31BOKBesideKilledMidReadResumed: the beside stream's progress
// is kept across a kill -9. rev31BRotatedWhileDown with z.log 100,000
// lines (z.log.1 after the rename); the second start is killed -9 once
// some of z.log.1's lines are in the sink, not all; a third start. Every
// z line is in the exactlyOnce sink once, nothing counted.
func TestRev31BOKBesideKilledMidReadResumed(t *testing.T) {
	e := newEnv(t, rev31BManyTmpl)
	rev31BFiller(t, e, 200)
	z := e.path("logs/z.log")
	const many = 100000
	var b strings.Builder
	for i := range many {
		fmt.Fprintf(&b, "z #%06d\n", i)
	}
	appendTo(t, z, b.String())
	rev31BKilledFirstRun(t, e, z)
	if err := os.Rename(z, z+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, z, "new #0\nnew #1\n")
	d := e.start()
	waitUntil(t, "some of z.log.1 in the sink", 60*time.Second, appendedHolds(e.path("out/once.jsonl"), `"line":"z #000000"`))
	d.kill()
	if rev31BCounts(e)[fmt.Sprintf("z #%06d", many-1)] > 0 {
		t.Skip("z.log.1 read whole before the kill")
	}
	d = e.start()
	waitUntil(t, "the last z line", 60*time.Second, func() bool { return rev31BCounts(e)[fmt.Sprintf("z #%06d", many-1)] > 0 })
	r := d.waitFor("settled", 60*time.Second, func(r *report) bool { return r.Settled })
	n := rev31BCounts(e)
	var bad []string
	for i := range many {
		if l := fmt.Sprintf("z #%06d", i); n[l] != 1 && len(bad) < 10 {
			bad = append(bad, fmt.Sprintf("%s×%d", l, n[l]))
		}
	}
	if len(bad) > 0 || n["new #0"] != 1 || !r.Lossless {
		t.Errorf("z.log.1 lines not once: %v; new #0 ×%d; lossless %v lostTails %d", bad, n["new #0"], r.Lossless, r.Feeds[0].LostTails)
	}
}

// TestRev31BOKCopytruncateOriginalRewritten: a copytruncate while down
// whose original (its key still in the glob) got other bytes: the copy
// z.log.1 is read (listedCopyBeside), the original's new lines too, each
// once, nothing counted (the order is TestRev31BXBesideAfterNewFileAtPath's).
func TestRev31BOKCopytruncateOriginalRewritten(t *testing.T) {
	e := newEnv(t, rev31BManyTmpl)
	rev31BFiller(t, e, 200)
	z := e.path("logs/z.log")
	appendTo(t, z, "z #0\nz #1\nz #2\n")
	rev31BKilledFirstRun(t, e, z)
	appendTo(t, z, "z #3\n") // written while down, before the copy
	b, err := os.ReadFile(z)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(z+".1", b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(z, 0); err != nil {
		t.Fatal(err)
	}
	appendTo(t, z, "z #4\nz #5\n")
	d := e.start()
	waitUntil(t, "z's lines", 60*time.Second, func() bool { n := rev31BCounts(e); return n["z #0"] > 0 && n["z #5"] > 0 })
	r := d.waitFor("settled", 60*time.Second, func(r *report) bool { return r.Settled })
	n := rev31BCounts(e)
	for i := range 6 {
		if l := fmt.Sprintf("z #%d", i); n[l] != 1 {
			t.Errorf("%s delivered %d times", l, n[l])
		}
	}
	if !r.Lossless {
		t.Errorf("lossless false, lostTails %d", r.Feeds[0].LostTails)
	}
}

// TestRev31BOKSymlinkedRotatedBesideTarget: the listed file reached by a
// symlink logs/z.log → ../real/z.log; while down the target is rotated
// (real/z.log → real/z.log.1, a new real/z.log): the start finds the
// listed key beside the link's target (keyBeside) and reads it; every
// line once, nothing counted.
func TestRev31BOKSymlinkedRotatedBesideTarget(t *testing.T) {
	e := newEnv(t, rev31BManyTmpl)
	rev31BFiller(t, e, 200)
	if err := os.MkdirAll(e.path("real"), 0o755); err != nil {
		t.Fatal(err)
	}
	real := e.path("real/z.log")
	appendTo(t, real, "z #0\nz #1\nz #2\n")
	if err := os.Symlink("../real/z.log", e.path("logs/z.log")); err != nil {
		t.Fatal(err)
	}
	rev31BKilledFirstRun(t, e, real)
	if err := os.Rename(real, real+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, real, "z #3\nz #4\n")
	d := e.start()
	waitUntil(t, "z's lines", 60*time.Second, func() bool { n := rev31BCounts(e); return n["z #0"] > 0 && n["z #4"] > 0 })
	r := d.waitFor("settled", 60*time.Second, func(r *report) bool { return r.Settled })
	n := rev31BCounts(e)
	for i := range 5 {
		if l := fmt.Sprintf("z #%d", i); n[l] != 1 {
			t.Errorf("%s delivered %d times", l, n[l])
		}
	}
	if !r.Lossless {
		t.Errorf("lossless false, lostTails %d", r.Feeds[0].LostTails)
	}
}

// TestRev31BOKRenamedIntoMatchedDir: glob ./logs/**/*.log; the listed
// z.log renamed into logs/old/z.log (matched) while down, a new z.log at
// the path: the scan finds its key in the glob and reads it; nothing
// read beside, every line once, nothing counted.
func TestRev31BOKRenamedIntoMatchedDir(t *testing.T) {
	e := newEnv(t, strings.Replace(rev31BManyTmpl, "./logs/*.log", "./logs/**/*.log", 1))
	rev31BFiller(t, e, 200)
	z := e.path("logs/z.log")
	appendTo(t, z, "z #0\nz #1\nz #2\n")
	rev31BKilledFirstRun(t, e, z)
	if err := os.MkdirAll(e.path("logs/old"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(z, e.path("logs/old/z.log")); err != nil {
		t.Fatal(err)
	}
	appendTo(t, z, "z #3\nz #4\n")
	d := e.start()
	waitUntil(t, "z's lines", 60*time.Second, func() bool { n := rev31BCounts(e); return n["z #0"] > 0 && n["z #4"] > 0 })
	r := d.waitFor("settled", 60*time.Second, func(r *report) bool { return r.Settled })
	n := rev31BCounts(e)
	for i := range 5 {
		if l := fmt.Sprintf("z #%d", i); n[l] != 1 {
			t.Errorf("%s delivered %d times", l, n[l])
		}
	}
	if !r.Lossless {
		t.Errorf("lossless false, lostTails %d", r.Feeds[0].LostTails)
	}
}

// TestRev31BXSingleLateWriteLeftGzReadAgain: DESIGN §2 "The duplicates
// after a crash are exactly the lines acknowledged since the last commit
// reached the pointer file — never a gap; the only other re-delivery is a
// restored sink's catch-up". TestRev31SingleFileLeftGzNotReadAgain's
// set-up, with the application's usual late write: after logrotate's
// create (a.log → a.log.1, a new empty a.log) the application writes one
// more line to its open descriptor (a.log.1) before it reopens its log —
// so the file left is modified after the new empty file was made. The
// feed reads it, switches to the empty a.log after rotateWait; a second
// rotation with delaycompress (a.log.1 → a.log.2.gz, its mtime kept; the
// empty file → a.log.1; a new a.log); a stop (or kill) within rotateWait.
// Observed: the restart reads a.log.2.gz again whole: its 6 lines twice in
// the exactlyOnce sink, after a clean stop too. Expected: once (as without
// the late write, and as at 3c15d75).
// Suspected cause: source/file/open.go:1088 — dropLeftGzOlder now keeps a
// .gz modified at or after the reference (the pointer's file's mtime: the
// empty file's, made before the late write); the file left is routinely
// modified after its successor was created (the application writes on
// until it reopens), and an idle successor keeps its creation mtime. New:
// 3c15d75 passes (drops it: named older).
func TestRev31BXSingleLateWriteLeftGzReadAgain(t *testing.T) {
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
			time.Sleep(100 * time.Millisecond)
			g.write(t, g.app+".1", 1) // the application's last line before its reopen
			waitUntil(t, "the switch to the new a.log", 10*time.Second, func() bool {
				return strings.Contains(d.log(), "switching to the next file")
			})
			waitUntil(t, "6 lines delivered", 10*time.Second, func() bool { return g.delivered() >= 6 })
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
				t.Errorf("after the restart: twice %v missing %v (lossless %v, %v)", dup, miss, r.Lossless, err)
			}
		})
	}
}

// TestRev31BOKSettledAfterBesideRead: rev31BRotatedWhileDown; the second
// start's first report with settled true and CAUGHT_UP comes only once
// z.log.1 (the beside stream) is read: z #0..#2 in the sink by then.
func TestRev31BOKSettledAfterBesideRead(t *testing.T) {
	e := newEnv(t, rev31BManyTmpl)
	rev31BRotatedWhileDown(t, e)
	d := e.start()
	r := d.waitFor("settled", 90*time.Second, func(r *report) bool { return r.Settled && r.Feeds[0].State == "CAUGHT_UP" })
	n := rev31BCounts(e)
	if n["z #0"] != 1 || n["z #2"] != 1 || n["z #3"] != 1 {
		t.Errorf("settled and %s with z #0 ×%d z #2 ×%d z #3 ×%d in the sink", r.Feeds[0].State, n["z #0"], n["z #2"], n["z #3"])
	}
}

// TestRev31BXGlobLateWriteLeftGzReadAgain: DESIGN §2 (as
// TestRev31BXSingleLateWriteLeftGzReadAgain). rev31StoppedRotationThenIdle
// with 1 idle rotation, where the file left gets the application's late
// line after the empty new a.log was made (while stopped: a.log → a.log.1,
// an empty a.log, 100 ms, one line to a.log.1). The start reads a.log.1's
// 6 lines and moves the pointer to the empty a.log; one delaycompress
// rotation (a.log.1 → a.log.2.gz, its mtime kept); a stop or kill; a start.
// Observed: the restart reads a.log.2.gz again: its lines twice in the
// exactlyOnce sink. Expected: once.
// Suspected cause: source/file/open.go:1088 (as the single-file case): the
// reference is the empty file's mtime, before the file left's last write.
// New: 3c15d75 passes (TestRev31LeftFileGzNotReadAgain's drop, by name).
func TestRev31BXGlobLateWriteLeftGzReadAgain(t *testing.T) {
	for _, v := range []string{"stop", "kill"} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
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
			time.Sleep(100 * time.Millisecond)
			g.write(t, g.app+".1", 1) // the application's late line
			d = g.e.start()
			g.settle(t, d, "the rotation while stopped", nil)
			time.Sleep(aud11AGap)
			rev30BDelayRotate(t, g.app)
			time.Sleep(700 * time.Millisecond)
			g.settle(t, d, "the rotation seen", nil)
			if v == "kill" {
				d.kill()
			} else {
				d.stop()
			}
			d = g.e.start()
			g.settle(t, d, "restart", nil)
			time.Sleep(500 * time.Millisecond)
			r, err := d.status()
			if dup, miss := g.once(); err != nil || len(dup)+len(miss) > 0 || !r.Lossless {
				t.Errorf("after the restart: twice %v missing %v (lossless %v, %v)", dup, miss, r.Lossless, err)
			}
		})
	}
}

// rev31BLedger: the losses ledger's lines that name s.
func rev31BLedger(e *env, s string) []string {
	b, _ := os.ReadFile(e.path("state/losses.jsonl"))
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return out
}
