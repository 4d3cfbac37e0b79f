package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Second-pass audit of glob feeds (DESIGN §10 with §3/§4 per file, and the
// glob parts of §5, §7, §9 and §12). TestAud3GX… tests are findings (they
// fail against the product); TestAud3GOK… tests are passing probes of rules
// checked on the way.

// aud3GlobConfig is a glob feed over ./in/*.log read by a file sink; %s is
// extra feed keys (indented four spaces).
const aud3GlobConfig = `dataDir: ./state
status:
  listen: {{ADDR}}
feeds:
  - name: app
    path: ./in/*.log
    rotateWaitMillis: 500
    scanIntervalMillis: 1000
%s
processors:
  - name: out
    feed: app
    type: file
    path: ./out.log
`

// aud3Row finds the files row whose path ends in /base; ok false when none.
func aud3Row(g globStatus, base string) (path, fileKey, epoch, state string, offset, size int64, ok bool) {
	for _, f := range g.Feeds[0].Files {
		if strings.HasSuffix(f.Path, "/"+base) {
			return f.Path, f.FileKey, f.Epoch, f.State, f.Offset, f.Size, true
		}
	}
	return "", "", "", "", 0, 0, false
}

// TestAud3GXReloadExcludeCountsALoss — DESIGN §12 "A feed whose settings
// changed is stopped the same way, then started again from its pointer";
// §4/§7 "`lossless` is true only while tailfeed can show that no line was
// skipped"; §10 "A file that disappears with an unread tail counts in
// `lostTails`". Two files are read to their end and committed (settled);
// a reload then adds `exclude: [./in/b.log]`. b.log has not disappeared (it
// is still at its path with its file key, and it had no unread tail): the
// operator chose not to read it any more. Expected: lostTails 0, lossless
// true. Observed: the restarted feed treats b.log as "glob file gone while
// stopped" — lostTails 1, lossless false, a losses.jsonl entry — although
// not a single line was skipped. (Removing the exclude again re-reads b.log
// from its start, which §10 allows; that part is not checked.)
func TestAud3GXReloadExcludeCountsALoss(t *testing.T) {
	e := newEnv(t, fmt.Sprintf(aud3GlobConfig, ""))
	in := e.path("in")
	writeFileLines(t, filepath.Join(in, "a.log"), "a", 0, 10)
	writeFileLines(t, filepath.Join(in, "b.log"), "b", 0, 10)
	d := e.start()
	out := e.path("out.log")
	waitUntil(t, "20 lines", 30*time.Second, func() bool { return globLines(out) >= 20 })
	d.waitSettled(30 * time.Second)

	e.tmpl = fmt.Sprintf(aud3GlobConfig, "    exclude: [./in/b.log]")
	e.cfgWith(d.addr)
	if code, _, body := request(t, d, http.MethodPost, "/admin/reload", "", nil); code != http.StatusOK {
		t.Fatalf("reload: %d %s", code, body)
	}
	writeFileLines(t, filepath.Join(in, "a.log"), "a", 10, 1)
	waitUntil(t, "a 10 after the reload", 30*time.Second, func() bool { return len(perTag(t, out)["a"]) >= 11 })
	r := d.waitSettled(30 * time.Second)
	f := r.feed(t, "app")
	if f.LostTails != 0 || !f.Lossless || !r.Lossless {
		t.Errorf("after a reload that only excludes a file read to its end: lostTails %d, lossless %v (top %v); want 0 and true — no line was skipped, the file is still there\nlog:\n%s",
			f.LostTails, f.Lossless, r.Lossless, tail(d.log(), 2000))
	}
	if n := globLedger(t, e); n != 0 {
		t.Errorf("losses.jsonl holds %d lostTails entries for app after the exclude-only reload; want 0", n)
	}
}

// TestAud3GXGoneWhileStoppedRowHasNoPath — DESIGN §10 "`GET
// /feed.status?files=1` adds to each feed `files`:
// `[{"path","fileKey","epoch","offset","size","state"}]` sorted by path,
// `state` one of … `GONE` (deleted or renamed out of the glob, read to its
// end, waiting to be forgotten)"; README "Status fields": "a `GONE` file
// keeps the epoch and end its stream read it under and to …, also once its
// pointer is reset to the empty record". A file read to its end, stopped
// (SIGTERM), deleted while stopped: at the restart it is counted lost (the
// documented overcount) and its pointer kept until forgotten, so it is
// listed. Expected: its row names the file (path …/b.log, its file key,
// the epoch it was read under, offset = size = its length). Observed: the
// row has `"path": ""`, a made-up fileKey (c000000000000001), the epoch of
// the empty "lost" record and offset = size = 0 — an operator cannot tell
// which file it was.
func TestAud3GXGoneWhileStoppedRowHasNoPath(t *testing.T) {
	e := newEnv(t, fmt.Sprintf(aud3GlobConfig, ""))
	in := e.path("in")
	writeFileLines(t, filepath.Join(in, "a.log"), "a", 0, 10)
	writeFileLines(t, filepath.Join(in, "b.log"), "b", 0, 10) // "b 0\n"… = 40 bytes
	d := e.start()
	d.waitSettled(30 * time.Second)
	_, key, epoch, _, _, _, ok := aud3Row(getGlobStatus(t, d), "b.log")
	if !ok {
		t.Fatal("b.log not listed in the first run")
	}
	d.stop()
	if err := os.Remove(filepath.Join(in, "b.log")); err != nil {
		t.Fatal(err)
	}
	d = e.start()
	d.waitFor("the gone file counted", 30*time.Second, func(r *report) bool { return r.Feeds[0].LostTails == 1 })
	d.waitSettled(30 * time.Second)
	g := getGlobStatus(t, d)
	for _, f := range g.Feeds[0].Files {
		if f.Path == "" || !strings.HasPrefix(f.Path, in+"/") {
			t.Errorf("files row %+v: path %q names no file of the glob", f, f.Path)
		}
	}
	path, gotKey, gotEpoch, state, off, size, ok := aud3Row(g, "b.log")
	if !ok {
		t.Fatalf("no files row for the gone b.log (rows %+v)", g.Feeds[0].Files)
	}
	if state != "GONE" || gotKey != key || gotEpoch != epoch || off != 40 || size != 40 {
		t.Errorf("row %s: state %s fileKey %s epoch %s offset %d size %d; want GONE %s %s 40 40", path, state, gotKey, gotEpoch, off, size, key, epoch)
	}
}

// TestAud3GOKKill9ExactlyOnceRotations — DESIGN §10 "Exactly-once output is
// byte-identical per input file, not as a whole (files interleave)", "The
// epoch barrier of §4 holds per path: a new file at a path is published
// after every line of the file previously at that path is acknowledged",
// §2 (no gap), §7 `settled`. Four paths in ./in matched by ./in/*.log*, each
// written in bursts and rotated logrotate-style (p.log → p.log.N, a name the
// glob matches and one of the default rotatedNames, then a new p.log) while
// the daemon is SIGKILLed six times at varying points (bursts and
// rotations go on while it is down). Then the writer stops and a last
// daemon runs to settled. Expected: the first settled report comes only
// once every line is in the output; the exactlyOnce output holds, per input
// file, exactly that file's bytes; per path, every line of a generation
// comes before the first line of the next one.
func TestAud3GOKKill9ExactlyOnceRotations(t *testing.T) {
	aud3Kill9Rotations(t, "./in/*.log*", "", os.Rename)
}

// TestAud3GOKKill9ExactlyOnceRotationsBounded is the same under
// maxOpenFiles 4 (two files open at a time, the others waiting or
// preempted when the kill comes).
func TestAud3GOKKill9ExactlyOnceRotationsBounded(t *testing.T) {
	aud3Kill9Rotations(t, "./in/*.log*", "\n    maxOpenFiles: 4", os.Rename)
}

func aud3Kill9Rotations(t *testing.T, glob, keys string, rotate func(cur, rotated string) error) {
	aud4Kill9Rotations(t, glob, keys, true, rotate) // the same scenario, checked byte for byte
}

// TestAud3GXKill9AfterRenameOutCountsALoss — DESIGN §4 "Restart after
// rotation: every generation still on disk … find the pointer's generation:
// the file with the pointer's file key … looked for in the path's
// directory", "A pointer's unread tail that cannot be found (deleted, or
// compressed in a format not read) is … counted in `lostTails`"; §10 "A file
// renamed out of the glob is read to its end (`rotateWaitMillis` after its
// last growth), then closed", "A file that disappears with an unread tail
// counts in `lostTails`". The plainest glob deployment: ./in/*.log, logrotate
// renames app.log to app.log.1 (out of the glob, beside the path, one of the
// default rotatedNames) and creates a new app.log. Every line of both is
// delivered and the feed is settled; the daemon is SIGKILLed within
// rotateWaitMillis of the rename (the old stream still open, waiting for
// growth); while it is down the application, still holding the old
// descriptor, writes one more line to app.log.1. app.log.1 is beside the
// path with the pointer's file key. Expected after the restart: app.log.1
// read from the pointer's offset to its end (old 10 delivered), lostTails 0,
// lossless true. Observed: the pointer is taken for "glob file gone while
// stopped": old 10 is never delivered, lostTails 1, lossless false — a line
// lost (counted) and the feed red after an ordinary crash during an
// ordinary rotation, with the file sitting beside the path.
func TestAud3GXKill9AfterRenameOutCountsALoss(t *testing.T) {
	aud3RenameOutThenRestart(t, (*daemon).kill)
}

// TestAud3GXStopAfterRenameOutLosesTail is TestAud3GXKill9AfterRenameOut…
// with a clean SIGTERM stop (`systemctl restart` within rotateWaitMillis —
// default 5 s — of a logrotate run) instead of SIGKILL: same DESIGN rules,
// same expectation; observed the same: the line written to app.log.1 while
// stopped is never read, lostTails 1, lossless false.
func TestAud3GXStopAfterRenameOutLosesTail(t *testing.T) {
	aud3RenameOutThenRestart(t, (*daemon).stop)
}

func aud3RenameOutThenRestart(t *testing.T, down func(*daemon)) {
	e := newEnv(t, `dataDir: ./state
status:
  listen: {{ADDR}}
feeds:
  - name: app
    path: ./in/*.log
    rotateWaitMillis: 20000
    scanIntervalMillis: 1000
processors:
  - name: out
    feed: app
    type: file
    path: ./out.log
`)
	in := e.path("in")
	app := filepath.Join(in, "app.log")
	writeFileLines(t, app, "old", 0, 10)
	out := e.path("out.log")
	d := e.start()
	waitUntil(t, "10 old lines", 30*time.Second, func() bool { return len(perTag(t, out)["old"]) == 10 })
	d.waitSettled(30 * time.Second)
	if err := os.Rename(app, filepath.Join(in, "app.log.1")); err != nil {
		t.Fatal(err)
	}
	writeFileLines(t, app, "new", 0, 5)
	waitUntil(t, "5 new lines", 30*time.Second, func() bool { return len(perTag(t, out)["new"]) == 5 })
	d.waitSettled(30 * time.Second)
	time.Sleep(500 * time.Millisecond) // a commit or two more; still well within rotateWaitMillis
	down(d)
	// The application still held the old descriptor: one more line lands
	// in app.log.1 while tailfeed is down.
	writeFileLines(t, filepath.Join(in, "app.log.1"), "old", 10, 1)
	d = e.start()
	writeFileLines(t, app, "new", 5, 1)
	waitUntil(t, "new 5 after the restart", 30*time.Second, func() bool { return len(perTag(t, out)["new"]) >= 6 })
	r := d.waitSettled(30 * time.Second)
	deadline := time.Now().Add(10 * time.Second) // generous: old 10 may come late
	for time.Now().Before(deadline) && len(perTag(t, out)["old"]) < 11 {
		time.Sleep(50 * time.Millisecond)
	}
	got := perTag(t, out)
	if o := got["old"]; len(o) == 0 || o[len(o)-1] != 10 || len(got["new"]) < 6 {
		t.Errorf("old lines %v, new %v; want old 0..10 (old 10 written to app.log.1 while down) and new 0..5", o, got["new"])
	}
	f := r.feed(t, "app")
	if f.LostTails != 0 || !f.Lossless {
		t.Errorf("after a restart with app.log.1 still beside the path: lostTails %d, lossless %v; want 0 and true\nlog:\n%s",
			f.LostTails, f.Lossless, tail(d.log(), 1500))
	}
}

// TestAud3GXUnterminatedForgottenWhenClosed — DESIGN §4 "`unterminated` is
// their count in bytes (while tailing: the bytes after the last terminator
// right now)"; README "Status fields": "`unterminated` | bytes after the
// last line terminator now"; §10 "a caught-up file unchanged for
// `closeInactiveMillis` … is closed … (still tracked)". A glob file ends
// in 3 bytes with no terminator ("xyz"). While its stream is open the feed
// reports unterminated 3; once closeInactiveMillis closes the file, the
// report says 0 although the 3 bytes are still after the last terminator
// (the line is delivered, whole, once it ends — that part works). Expected:
// unterminated 3 for as long as the bytes are there. Observed: 0 once the
// file is CLOSED.
func TestAud3GXUnterminatedForgottenWhenClosed(t *testing.T) {
	e := newEnv(t, fmt.Sprintf(aud3GlobConfig, "    closeInactiveMillis: 1000"))
	in := e.path("in")
	writeFileLines(t, filepath.Join(in, "a.log"), "a", 0, 2)
	appendTo(t, filepath.Join(in, "a.log"), "xyz")
	d := e.start()
	d.waitFor("unterminated 3 while open", 30*time.Second, func(r *report) bool { return r.Feeds[0].Unterminated == 3 })
	var g globStatus
	waitUntil(t, "a.log CLOSED", 30*time.Second, func() bool {
		g = getGlobStatus(t, d)
		_, _, _, state, _, _, ok := aud3Row(g, "a.log")
		return ok && state == "CLOSED"
	})
	r, _ := statusRaw(t, d)
	if f := r.feed(t, "app"); f.Unterminated != 3 {
		t.Errorf("a.log CLOSED by closeInactiveMillis, still ending in \"xyz\": unterminated %d, want 3", f.Unterminated)
	}
	appendTo(t, filepath.Join(in, "a.log"), "\n")
	out := e.path("out.log")
	waitUntil(t, "xyz delivered once ended", 30*time.Second, func() bool {
		b, _ := os.ReadFile(out)
		return strings.Contains(string(b), "\nxyz\n")
	})
}

// TestAud3GXCopytruncateUnderBackpressureReDelivers — DESIGN §10 "a new
// key whose first bytes match a tracked file's fingerprint is held back for
// `rotateWaitMillis`; if the tracked file is truncated or disappears
// meanwhile, the new file is its copy (§4) and is read from the old offset
// under the old stream"; §2 "The duplicates after a crash are exactly the
// lines acknowledged since the last commit …; the only other re-delivery is
// a restored sink's catch-up". app.log (5,000 lines) is matched by
// ./in/*.log; its only subscriber is a pull client that has not pulled yet
// (the feed is paused, nothing acknowledged, so nothing committed). Three
// seconds in, logrotate copytruncates it with dateext keeping the extension
// (cp app.log app-1.log, a name the glob matches; truncate app.log) and the
// application writes 3 new lines. The client then pulls and acknowledges
// everything. Expected: each old line delivered once (app-1.log is app.log's
// copy, read on from the old stream's offset), then the 3 new ones.
// Observed: all 5,000 old lines are delivered twice — app-1.log is read in
// full as a stream of its own, without any crash. The README calls this "a
// copytruncate copy made before the tracked file's first commit … within
// about a second of the file's first read"; under backpressure that first
// commit waits for the subscriber, for any length of time. (Once one line
// has been acknowledged and committed, the same rotation is handled
// without duplicates.)
func TestAud3GXCopytruncateUnderBackpressureReDelivers(t *testing.T) {
	e := newEnv(t, `dataDir: ./state
status:
  listen: {{ADDR}}
feeds:
  - name: app
    path: ./in/*.log
    rotateWaitMillis: 1000
    scanIntervalMillis: 1000
    queueCapacity: 16
    maxPendingAcks: 16
processors:
  - name: pl
    feed: app
    type: pull
`)
	in := e.path("in")
	app := filepath.Join(in, "app.log")
	writeFileLines(t, app, "old", 0, 5000)
	d := e.start()
	d.waitFor("the feed paused on the unpolled client", 30*time.Second, func(r *report) bool { return r.Feeds[0].Paused })
	time.Sleep(3 * time.Second)
	aud3Copytruncate(t, app, filepath.Join(in, "app-1.log"))
	writeFileLines(t, app, "new", 0, 3)
	count := map[string]int{}
	deadline := time.Now().Add(90 * time.Second)
	idle := 0
	for time.Now().Before(deadline) && idle < 4 {
		evs := pullFrom(t, d, "pl", "max=1000&wait=1s")
		if len(evs) == 0 {
			idle++
			continue
		}
		idle = 0
		for _, ev := range evs {
			if ev.Attempt == 1 { // a pull redelivery (attempt > 1) is not the point
				count[ev.Line]++
			}
		}
		ackAll(t, d, evs)
	}
	dup, missing := 0, 0
	for i := 0; i < 5000; i++ {
		switch n := count[fmt.Sprintf("old %d", i)]; {
		case n == 0:
			missing++
		case n > 1:
			dup += n - 1
		}
	}
	for i := 0; i < 3; i++ {
		if count[fmt.Sprintf("new %d", i)] == 0 {
			missing++
		}
	}
	if missing != 0 || dup != 0 {
		t.Errorf("copytruncate under backpressure: %d lines missing, %d old lines delivered again (no crash); want 0 and 0", missing, dup)
	}
}

// TestAud3GOKKill9AfterCopytruncate (passing probe) — DESIGN §4/§10/§2:
// ./in/*.log with an exactlyOnce file sink; app.log (1,000 lines) read and
// settled, copytruncated to app.log.1 (out of the glob), 5 new lines
// delivered and settled, then SIGKILL and restart within 2 s of the
// rotation: each old line once, each new line once in the exactlyOnce
// output. (With rotations less than 2 s apart and kills while a copy is
// being read, older copies are read again — DESIGN §4's "mtime at or after
// the reference minus 2 s" allows that duplicate, so it is not a finding.)
func TestAud3GOKKill9AfterCopytruncate(t *testing.T) {
	e := newEnv(t, `dataDir: ./state
status:
  listen: {{ADDR}}
feeds:
  - name: app
    path: ./in/*.log
    rotateWaitMillis: 300
    scanIntervalMillis: 1000
processors:
  - name: exact
    feed: app
    type: file
    path: ./exact.log
    exactlyOnce: true
    fsync: always
`)
	in := e.path("in")
	app := filepath.Join(in, "app.log")
	writeFileLines(t, app, "old", 0, 1000)
	exact := e.path("exact.log")
	d := e.start()
	waitUntil(t, "1,000 old lines", 30*time.Second, func() bool { return len(perTag(t, exact)["old"]) == 1000 })
	d.waitSettled(30 * time.Second)
	aud3Copytruncate(t, app, filepath.Join(in, "app.log.1"))
	writeFileLines(t, app, "new", 0, 5)
	waitUntil(t, "5 new lines", 30*time.Second, func() bool { return len(perTag(t, exact)["new"]) == 5 })
	d.waitSettled(30 * time.Second)
	d.kill()
	d = e.start()
	writeFileLines(t, app, "new", 5, 1)
	waitUntil(t, "new 5 after the restart", 30*time.Second, func() bool { return len(perTag(t, exact)["new"]) >= 6 })
	d.waitSettled(30 * time.Second)
	time.Sleep(time.Second)
	got := perTag(t, exact)
	if len(got["old"]) != 1000 || len(got["new"]) != 6 {
		t.Errorf("exactlyOnce output after a kill -9 with nothing pending: %d old lines (want 1000), %d new (want 6)", len(got["old"]), len(got["new"]))
	}
}

// TestAud3GXCommitsMetricMissing — DESIGN §10 "A glob feed's `epoch`,
// `pointer.offset` and `pointer.epoch` are null (`commits` and
// `commitFailures` are summed over its files)"; README "/metrics … exposes
// per feed … `_commits_total`, `_commit_failures_total`" (DESIGN names no
// metric list, so the README's is the reference). A settled glob feed whose
// files were committed reports `pointer.commits` ≥ 1 in feed.status and
// `tailfeed_feed_commit_failures_total{feed="app"}` in /metrics, but no
// `tailfeed_feed_commits_total{feed="app"}` at all: a dashboard or alert on
// commit progress sees nothing for glob feeds. Expected: the metric present,
// equal to feed.status `pointer.commits`.
func TestAud3GXCommitsMetricMissing(t *testing.T) {
	e := newEnv(t, fmt.Sprintf(aud3GlobConfig, ""))
	in := e.path("in")
	writeFileLines(t, filepath.Join(in, "a.log"), "a", 0, 10)
	writeFileLines(t, filepath.Join(in, "b.log"), "b", 0, 10)
	d := e.start()
	r := d.waitFor("settled with commits", 30*time.Second, func(r *report) bool {
		return r.Settled && r.Feeds[0].Pointer != nil && r.Feeds[0].Pointer.Commits > 0
	})
	code, body, err := d.get("/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("/metrics: %d %v", code, err)
	}
	var commits, failures string
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, `tailfeed_feed_commits_total{feed="app"} `) {
			commits = strings.TrimPrefix(l, `tailfeed_feed_commits_total{feed="app"} `)
		}
		if strings.HasPrefix(l, `tailfeed_feed_commit_failures_total{feed="app"} `) {
			failures = l
		}
	}
	if failures == "" {
		t.Fatalf("no commit_failures_total either: %s", body)
	}
	if commits == "" {
		t.Errorf("/metrics has no tailfeed_feed_commits_total{feed=\"app\"} for the glob feed (feed.status pointer.commits %d; %q is there)", r.Feeds[0].Pointer.Commits, failures)
	}
}

// TestAud3GXStartupLogCountsReadFilesAsUnread — DESIGN §10 "The start-up
// log names the pattern, files tracked and files with unread bytes"; §12
// "The start-up log names each feed's input, where it resumes (offset,
// epoch) … (glob feeds: §10)". Three files are read to their end and
// committed (settled, clean SIGTERM); while stopped one of them gets 2 more
// lines. Expected at the restart: `filesWithUnreadBytes=1` (and no claim
// that the feed has no pointer). Observed: `filesWithUnreadBytes=3` — every
// file counted as unread although two were read to their end — and the
// feed line says `resume="none (no pointer): from the start of the file"`
// although every file resumes from its pointer (nothing is read again).
func TestAud3GXStartupLogCountsReadFilesAsUnread(t *testing.T) {
	e := newEnv(t, fmt.Sprintf(aud3GlobConfig, ""))
	in := e.path("in")
	for _, f := range []string{"a", "b", "c"} {
		writeFileLines(t, filepath.Join(in, f+".log"), f, 0, 3)
	}
	d := e.start()
	out := e.path("out.log")
	waitUntil(t, "9 lines", 30*time.Second, func() bool { return globLines(out) == 9 })
	d.waitSettled(30 * time.Second)
	d.stop()
	writeFileLines(t, filepath.Join(in, "a.log"), "a", 3, 2)
	d = e.start()
	waitUntil(t, "a 3, a 4", 30*time.Second, func() bool { return globLines(out) == 11 })
	d.waitSettled(30 * time.Second)
	log := d.log()
	var started, feedLine string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "glob feed started") {
			started = l
		}
		if strings.Contains(l, "feed: input=") && feedLine == "" {
			feedLine = l
		}
	}
	if !strings.Contains(started, "filesTracked=3") || !strings.Contains(started, "filesWithUnreadBytes=1") {
		t.Errorf("start-up line %q: want filesTracked=3 and filesWithUnreadBytes=1 (only a.log has unread bytes)", started)
	}
	if strings.Contains(feedLine, "no pointer") {
		t.Errorf("start-up line %q says the glob feed has no pointer; its three files resume from their pointers", feedLine)
	}
	if n := globLines(out); n != 11 {
		t.Errorf("%d lines out, want 11 (nothing read again)", n)
	}
}

// TestAud3GXClosedFileRenamedOutLosesAppendSilently — DESIGN §10 "A file
// renamed out of the glob is read to its end (`rotateWaitMillis` after its
// last growth), then closed"; "A file that disappears with an unread tail
// counts in `lostTails` as in §4"; §7 "`lossless` … true only while
// tailfeed can show that no line was skipped"; README "a closed file
// renamed out beside its path … with lines appended since its last commit
// is found there by its file key and read to its end first (closed
// `rotateWaitMillis` after its last growth)". ./in/*.log, rotateWaitMillis
// 5000, closeInactiveMillis 1000. a.log (3 lines) is read and then CLOSED as
// inactive; logrotate renames it to a.log.1 (out of the glob, beside the
// path) and creates a new a.log; 100 ms later the application, still
// holding the old descriptor, writes "a 4" to it — well within
// rotateWaitMillis of a.log's last growth. Expected: "a 4" delivered (or, at
// the very least, counted lost). Observed: "a 4" is never delivered, the
// files row shows the gone file GONE with its old size (12 of 16 bytes),
// and the feed stays settled, lostTails 0, lossless true — a silent loss.
func TestAud3GXClosedFileRenamedOutLosesAppendSilently(t *testing.T) {
	e := newEnv(t, `dataDir: ./state
status:
  listen: {{ADDR}}
feeds:
  - name: app
    path: ./in/*.log
    rotateWaitMillis: 5000
    scanIntervalMillis: 1000
    closeInactiveMillis: 1000
processors:
  - name: out
    feed: app
    type: file
    path: ./out.log
`)
	in := e.path("in")
	app := filepath.Join(in, "a.log")
	writeFileLines(t, app, "a", 1, 3)
	d := e.start()
	out := e.path("out.log")
	waitUntil(t, "a.log CLOSED", 30*time.Second, func() bool {
		_, _, _, state, _, _, ok := aud3Row(getGlobStatus(t, d), "a.log")
		return ok && state == "CLOSED" && globLines(out) == 3
	})
	if err := os.Rename(app, filepath.Join(in, "a.log.1")); err != nil {
		t.Fatal(err)
	}
	writeFileLines(t, app, "n", 1, 1)
	time.Sleep(100 * time.Millisecond)
	writeFileLines(t, filepath.Join(in, "a.log.1"), "a", 4, 1)
	deadline := time.Now().Add(10 * time.Second) // twice rotateWaitMillis
	for time.Now().Before(deadline) && len(perTag(t, out)["a"]) < 4 {
		time.Sleep(50 * time.Millisecond)
	}
	r := d.waitSettled(30 * time.Second)
	f := r.feed(t, "app")
	if got := perTag(t, out)["a"]; len(got) < 4 {
		t.Errorf("\"a 4\", written to the renamed-out a.log.1 100 ms after the rename, never delivered (a lines %v); lostTails %d, lossless %v — want it delivered, or at least counted", got, f.LostTails, f.Lossless)
	}
}

// TestAud3GXWaitingFileDeletedWhileStoppedIsSilent — DESIGN §10 "A file
// that disappears with an unread tail counts in `lostTails` as in §4"; §4
// "Nothing green over a loss. `lossless` is true only while tailfeed can
// show that no line was skipped"; README "A file found out of the glob …
// while it waits for its first turn, with no pointer yet, and still unread
// when tailfeed stops is counted lost at the stop (no pointer would tell
// the restart about it)". Under maxOpenFiles 2 and an unpolled pull client,
// b.log and c.log (3,000 lines each) are tracked, BEHIND and waiting for
// their first turn when the daemon is stopped (SIGTERM). While it is down,
// c.log is deleted. After the restart the client pulls and acknowledges
// everything. Expected: c.log's 3,000 lines, known to the daemon as unread
// when it stopped, are counted (lostTails ≥ 1, lossless false). Observed:
// nothing records them — the restarted feed is settled, lostTails 0,
// lossless true, and c's lines are simply absent.
func TestAud3GXWaitingFileDeletedWhileStoppedIsSilent(t *testing.T) {
	e := newEnv(t, `dataDir: ./state
status:
  listen: {{ADDR}}
feeds:
  - name: app
    path: ./in/*.log
    rotateWaitMillis: 1000
    scanIntervalMillis: 1000
    maxOpenFiles: 2
    queueCapacity: 16
    maxPendingAcks: 16
processors:
  - name: pl
    feed: app
    type: pull
`)
	in := e.path("in")
	for _, f := range []string{"a", "b", "c"} {
		writeFileLines(t, filepath.Join(in, f+".log"), f, 0, 3000)
	}
	d := e.start()
	waitUntil(t, "c.log tracked, BEHIND, never read", 30*time.Second, func() bool {
		_, _, _, state, off, size, ok := aud3Row(getGlobStatus(t, d), "c.log")
		return ok && state == "BEHIND" && off == 0 && size > 0
	})
	d.stop()
	if err := os.Remove(filepath.Join(in, "c.log")); err != nil {
		t.Fatal(err)
	}
	d = e.start()
	got := pullAckByFirstByte(t, d, "pl")
	r := d.waitSettled(30 * time.Second)
	f := r.feed(t, "app")
	if got['c'] < 3000 && (f.LostTails == 0 || f.Lossless) {
		t.Errorf("c.log (3,000 lines, tracked and unread at the stop) deleted while stopped: %d of its lines delivered, yet lostTails %d, lossless %v", got['c'], f.LostTails, f.Lossless)
	}
}

// aud3Copytruncate does what logrotate's copytruncate does: copies path to
// copy, then cuts path to 0 in place.
func aud3Copytruncate(t *testing.T, path, copy string) {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(copy, src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
}
