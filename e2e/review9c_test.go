package e2e

// Review 9c of h/globpath: (A) a glob's changed/narrowed path counts no
// loss for a file no longer matched; (B) the walk skips dataDir reached
// under another name; (C) an open glob file whose mtime moved is BEHIND
// until its check ran.

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rev9cCfg: one glob feed "app" over path (extra: feed keys, indented four
// spaces), dataDir, a file sink ./out.log.
func rev9cCfg(dataDir, path, extra string) string {
	return `dataDir: ` + dataDir + `
status:
  listen: {{ADDR}}
feeds:
  - name: app
    path: ` + path + `
    rotateWaitMillis: 300
` + extra + `processors:
  - name: out
    feed: app
    type: file
    path: ./out.log
`
}

// rev9cChangePath applies tmpl by a reload (mode "reload") or a stopped
// restart (mode "restart") and returns the running daemon.
func rev9cChangePath(t *testing.T, e *env, d *daemon, mode, tmpl string) *daemon {
	t.Helper()
	e.tmpl = tmpl
	if mode == "reload" {
		e.cfgWith(d.addr)
		if code, _, body := request(t, d, http.MethodPost, "/admin/reload", "", nil); code != http.StatusOK {
			t.Fatalf("reload: %d %s", code, body)
		}
		return d
	}
	d.stop()
	return e.start()
}

// TestRev9COKTouchNotBehindForever (passed: CAUGHT_UP/settled again
// within 5 s of each touch): DESIGN §5/§7 status (BEHIND only while
// something is unread or unchecked), §4 "Same-size rewrites" (a change of
// mtime alone reads the fingerprint's bytes again … until that check ran,
// the feed is not CAUGHT_UP — after it ran, it is). A glob feed ./in/*.log,
// a.log read to its end and settled; `touch a.log` (mtime only, content
// unchanged). Expected: CAUGHT_UP and settled again within a few polls.
func TestRev9COKTouchNotBehindForever(t *testing.T) {
	e := newEnv(t, rev9cCfg("./state", "./in/*.log", "    scanIntervalMillis: 60000\n"))
	in := e.path("in")
	p := filepath.Join(in, "a.log")
	writeFileLines(t, p, "a", 0, 3)
	writeFileLines(t, filepath.Join(in, "b.log"), "b", 0, 3)
	d := e.start()
	d.waitFor("6 lines settled", 20*time.Second, func(r *report) bool { return r.Settled && r.Feeds[0].Acknowledged >= 6 })
	for i := 1; i <= 3; i++ {
		later := time.Now().Add(time.Duration(i) * 3 * time.Second)
		if err := os.Chtimes(p, later, later); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		var last *report
		for time.Now().Before(deadline) {
			r, err := d.status()
			if err != nil {
				t.Fatal(err)
			}
			last = r
			if r.Settled && r.Feeds[0].State == "CAUGHT_UP" {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if !last.Settled || last.Feeds[0].State != "CAUGHT_UP" {
			g := getGlobStatus(t, d)
			t.Fatalf("touch %d of a.log (mtime only, nothing written): 5 s later state %s settled %v, files %+v; want CAUGHT_UP and settled (nothing unread, the check sees the same bytes)",
				i, last.Feeds[0].State, last.Settled, g.Feeds[0].Files)
		}
	}
}

// TestRev9CFixedCRenameOverNotCaughtUp: DESIGN §7 "When a report is built, …
// the path must still name the open file …; otherwise the state is
// BEHIND"; §10 "CAUGHT_UP when every tracked file is read to its end (the
// fstat rule of §7, per file)"; §4 "before reporting CAUGHT_UP, check that
// the path names the open file". A glob feed ./in/*.log; a.log (open,
// caught up) is replaced 60 times by a rename of a.tmp (not matched) over
// it, new content of the same size, and a report is taken right after:
// the open stream's path no longer names its file, and the new file at
// the path is not delivered yet. behindLocked now answers "not behind"
// for an open file whose path names another file (left to "another
// stream's" row, which does not exist yet until a scan or event). The
// same mode is in TestAud4GXSameSizeRewriteNotCaughtUp's switch but not in
// its mode list.
// Observed: 12-23 of 60 reports settled (CAUGHT_UP) with the new file's
// lines undelivered, every run; also at 762ac0c (not a regression, but
// (C) left it: "another file there is another stream's" — a stream that
// does not exist yet).
func TestRev9CFixedCRenameOverNotCaughtUp(t *testing.T) {
	e := newEnv(t, rev9cCfg("./state", "./in/*.log", "    scanIntervalMillis: 60000\n"))
	in := e.path("in")
	p := filepath.Join(in, "a.log")
	writeFileLines(t, p, "r00", 0, 3)
	writeFileLines(t, filepath.Join(in, "b.log"), "b", 0, 3)
	d := e.start()
	out := e.path("out.log")
	d.waitFor("6 lines settled", 20*time.Second, func(r *report) bool { return r.Settled && r.Feeds[0].Acknowledged >= 6 })
	bad := 0
	const rounds = 60
	for i := 1; i <= rounds; i++ {
		time.Sleep(30 * time.Millisecond)
		tag := fmt.Sprintf("r%02d", i%100)
		content := fmt.Sprintf("%s 0\n%s 1\n%s 2\n", tag, tag, tag)
		if err := os.WriteFile(p+".tmp", []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(p+".tmp", p); err != nil {
			t.Fatal(err)
		}
		r, err := d.status()
		if err != nil {
			t.Fatal(err)
		}
		if r.Settled { // settled: read, acknowledged and committed — so the 3 lines must be in out.log
			if n := len(perTag(t, out)[tag]); n < 3 {
				bad++
				if bad <= 3 {
					t.Errorf("rename-over %d: the report built right after it says state %s settled %v with %d of the 3 new lines delivered", i, r.Feeds[0].State, r.Settled, n)
				}
			}
		}
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) && len(perTag(t, out)[tag]) < 3 {
			time.Sleep(20 * time.Millisecond)
		}
		if n := len(perTag(t, out)[tag]); n < 3 {
			g := getGlobStatus(t, d)
			r, _ := d.status()
			fi, _ := os.ReadFile(p)
			t.Fatalf("rename-over %d: %d of its 3 lines delivered 20 s later (a.log holds %q): state %s settled %v lostTails %d lossless %v, files %+v",
				i, n, fi, r.Feeds[0].State, r.Settled, r.Feeds[0].LostTails, r.Feeds[0].Lossless, g.Feeds[0].Files)
		}
		d.waitSettled(20 * time.Second)
	}
	if bad > 0 {
		t.Errorf("%d of %d reports taken right after a rename over a.log claimed settled with the new lines undelivered", bad, rounds)
	}
}

// TestRev9COKWalkKeepsDataDirLookalikes: DESIGN §10 "Never matched: …
// anything under dataDir" — and nothing else: dataDir is ./in/state; the
// glob ./in/**/*.log must still read ./in/state2/x.log, ./in/state.d/y.log,
// ./in/sub/state/z.log (a directory named like dataDir elsewhere), and,
// through a root symlink ./in2 -> ./in, nothing twice; a symlinked
// directory ./in/ext -> ../outside is not descended (as before).
func TestRev9COKWalkKeepsDataDirLookalikes(t *testing.T) {
	e := newEnv(t, rev9cCfg("./in/state", "./in/**/*.log", "    scanIntervalMillis: 500\n"))
	in := e.path("in")
	writeFileLines(t, filepath.Join(in, "state2", "x.log"), "x", 0, 3)
	writeFileLines(t, filepath.Join(in, "state.d", "y.log"), "y", 0, 3)
	writeFileLines(t, filepath.Join(in, "sub", "state", "z.log"), "z", 0, 3)
	writeFileLines(t, filepath.Join(in, "stat", "w.log"), "w", 0, 3)
	d := e.start()
	out := e.path("out.log")
	waitUntil(t, "12 lines", 20*time.Second, func() bool { return globLines(out) >= 12 })
	writeFileLines(t, filepath.Join(in, "state2", "x.log"), "x", 3, 1)
	waitUntil(t, "13 lines", 20*time.Second, func() bool { return globLines(out) >= 13 })
	time.Sleep(1500 * time.Millisecond)
	d.waitSettled(20 * time.Second)
	got := perTag(t, out)
	for _, tag := range []string{"w", "y", "z"} {
		if len(got[tag]) != 3 {
			t.Errorf("tag %s: %d lines, want 3", tag, len(got[tag]))
		}
	}
	if len(got["x"]) != 4 || globLines(out) != 13 {
		t.Errorf("x %d lines (want 4), total %d (want 13)", len(got["x"]), globLines(out))
	}
	g := getGlobStatus(t, d)
	for _, f := range g.Feeds[0].Files {
		if strings.Contains(f.Path, "/in/state/") {
			t.Errorf("file under dataDir listed: %s", f.Path)
		}
	}
}

// TestRev9COKWalkDataDirSymlinkSibling: dataDir ./state is a symlink to
// ./in/real; the glob ./in/**/*.log still reads ./in/realx/a.log and
// ./in/a.log, and not ./in/real/* (DESIGN §10).
func TestRev9COKWalkDataDirSymlinkSibling(t *testing.T) {
	e := newEnv(t, rev9cCfg("./state", "./in/**/*.log", "    scanIntervalMillis: 500\n"))
	in := e.path("in")
	writeFileLines(t, filepath.Join(in, "a.log"), "a", 0, 3)
	writeFileLines(t, filepath.Join(in, "realx", "b.log"), "b", 0, 3)
	writeFileLines(t, filepath.Join(in, "real", "decoy.log"), "d", 0, 3)
	if err := os.Symlink(filepath.Join(in, "real"), e.path("state")); err != nil {
		t.Fatal(err)
	}
	d := e.start()
	out := e.path("out.log")
	waitUntil(t, "6 lines", 20*time.Second, func() bool { return globLines(out) >= 6 })
	time.Sleep(1500 * time.Millisecond)
	d.waitSettled(20 * time.Second)
	got := perTag(t, out)
	if len(got["a"]) != 3 || len(got["b"]) != 3 || len(got["d"]) != 0 {
		t.Errorf("a %d b %d decoy %d; want 3 3 0", len(got["a"]), len(got["b"]), len(got["d"]))
	}
}

// TestRev9COKSameFilesOtherSpelling (passed): DESIGN §10 identity is the file key
// confirmed by the fingerprint; §12 a changed path; §2/§7 every line
// delivered unless a loss is counted. The glob ./in/*.log changes to
// ./link/*.log, where ./link is a symlink to ./in: every file is still
// matched (same key, same first bytes), under another spelling. a.log got
// 3 lines while the daemon was stopped / before the reload's restart (a
// tail past its pointer). Expected: the tail is read (the file IS
// matched), no loss, no duplicate.
func TestRev9COKSameFilesOtherSpelling(t *testing.T) {
	for _, mode := range []string{"reload", "restart"} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t, rev9cCfg("./state", "./in/*.log", "    scanIntervalMillis: 500\n"))
			in := e.path("in")
			p := filepath.Join(in, "a.log")
			writeFileLines(t, p, "a", 0, 5)
			if err := os.Symlink(in, e.path("link")); err != nil {
				t.Fatal(err)
			}
			d := e.start()
			d.waitFor("5 lines settled", 20*time.Second, func(r *report) bool { return r.Settled && r.Feeds[0].Acknowledged >= 5 })
			if mode == "restart" {
				d.stop()
				writeFileLines(t, p, "a", 5, 3)
				e.tmpl = rev9cCfg("./state", "./link/*.log", "    scanIntervalMillis: 500\n")
				d = e.start()
			} else {
				d = rev9cChangePath(t, e, d, mode, rev9cCfg("./state", "./link/*.log", "    scanIntervalMillis: 500\n"))
				writeFileLines(t, p, "a", 5, 3)
			}
			writeFileLines(t, p, "a", 8, 1)
			deadline := time.Now().Add(10 * time.Second)
			for time.Now().Before(deadline) && len(perTag(t, e.path("out.log"))["a"]) < 9 {
				time.Sleep(50 * time.Millisecond)
			}
			time.Sleep(time.Second)
			r := d.waitSettled(20 * time.Second)
			got := perTag(t, e.path("out.log"))["a"]
			f := r.Feeds[0]
			if len(got) != 9 || f.LostTails != 0 || !f.Lossless {
				t.Errorf("%s changing ./in/*.log to ./link/*.log (link -> in: the same files): a lines %v, lostTails %d lossless %v; want a 0..8 once each, no loss", mode, got, f.LostTails, f.Lossless)
			}
		})
	}
}

// TestRev9COKNarrowedUnreadWarns: README/DESIGN §12 a changed path: a file
// no longer matched with bytes past its pointer is not counted lost but a
// WARN names its unread bytes (this change's rule). The glob ./in/* reads
// a.log and b.txt; stopped; b.txt gets 2 lines; restarted as ./in/*.log.
func TestRev9COKNarrowedUnreadWarns(t *testing.T) {
	e := newEnv(t, rev9cCfg("./state", "./in/*", ""))
	in := e.path("in")
	writeFileLines(t, filepath.Join(in, "a.log"), "a", 0, 5)
	writeFileLines(t, filepath.Join(in, "b.txt"), "b", 0, 5)
	d := e.start()
	d.waitFor("10 lines settled", 20*time.Second, func(r *report) bool { return r.Settled && r.Feeds[0].Acknowledged >= 10 })
	d.stop()
	writeFileLines(t, filepath.Join(in, "b.txt"), "b", 5, 2)
	e.tmpl = rev9cCfg("./state", "./in/*.log", "")
	d = e.start()
	r := d.waitSettled(20 * time.Second)
	if f := r.Feeds[0]; f.LostTails != 0 || !f.Lossless {
		t.Errorf("lostTails %d lossless %v, want 0 true", f.LostTails, f.Lossless)
	}
	if lg := d.log(); !strings.Contains(lg, "unreadBytes=8") && !strings.Contains(lg, `"unreadBytes":8`) {
		t.Errorf("no WARN naming b.txt's 8 unread bytes; log tail:\n%s", tail(lg, 3000))
	}
}

// TestRev9COKNarrowedThenWidened (passed): DESIGN §10 "A forgotten file that comes
// back (renamed back, or matched after a reload widens the glob) is read
// from its start"; §2 every line delivered unless a loss is counted. The
// glob ./in/* reads a.log and b.txt; a reload (or stopped restart)
// narrows it to ./in/*.log: b.txt, still there, is forgotten (no loss);
// b.txt gets 2 more lines; a second reload/restart widens the glob back to
// ./in/*. Expected: b.txt read again from its start (b 0..6 delivered,
// duplicates allowed), or a counted loss.
func TestRev9COKNarrowedThenWidened(t *testing.T) {
	for _, mode := range []string{"reload", "restart"} {
		t.Run(mode, func(t *testing.T) {
			wide := rev9cCfg("./state", "./in/*", "    scanIntervalMillis: 500\n")
			e := newEnv(t, wide)
			in := e.path("in")
			writeFileLines(t, filepath.Join(in, "a.log"), "a", 0, 5)
			writeFileLines(t, filepath.Join(in, "b.txt"), "b", 0, 5)
			d := e.start()
			d.waitFor("10 lines settled", 20*time.Second, func(r *report) bool { return r.Settled && r.Feeds[0].Acknowledged >= 10 })
			d = rev9cChangePath(t, e, d, mode, rev9cCfg("./state", "./in/*.log", "    scanIntervalMillis: 500\n"))
			writeFileLines(t, filepath.Join(in, "a.log"), "a", 5, 1)
			waitUntil(t, "a 5", 20*time.Second, func() bool { return len(perTag(t, e.path("out.log"))["a"]) >= 6 })
			d.waitSettled(20 * time.Second)
			writeFileLines(t, filepath.Join(in, "b.txt"), "b", 5, 2)
			time.Sleep(time.Second)
			d = rev9cChangePath(t, e, d, mode, wide)
			deadline := time.Now().Add(10 * time.Second)
			for time.Now().Before(deadline) && len(perTag(t, e.path("out.log"))["b"]) < 7 {
				time.Sleep(50 * time.Millisecond)
			}
			time.Sleep(time.Second)
			r := d.waitSettled(20 * time.Second)
			got := perTag(t, e.path("out.log"))["b"]
			has := map[int]bool{}
			for _, n := range got {
				has[n] = true
			}
			if f := r.Feeds[0]; (!has[5] || !has[6]) && f.LostTails == 0 {
				t.Errorf("%s: ./in/* narrowed to ./in/*.log, b.txt appended 2 lines, widened back to ./in/*: b lines %v, lostTails %d lossless %v; want b 5 and 6 delivered (read from its start) or a counted loss", mode, got, f.LostTails, f.Lossless)
			}
		})
	}
}

// TestRev9CFixedCMovedOutUnreadNotCaughtUp: DESIGN §7 "When a report is built,
// an fstat must show no complete line past the read position, and the
// path must still name the open file (or be missing with the open file
// read to its end); otherwise the state is BEHIND"; §10 "the fstat rule of
// §7, per file"; "A file renamed out of the glob is read to its end". A
// glob feed ./in/*.log; each round a new fN.log (1 line, delivered,
// settled) gets 3 more lines and is at once renamed out of the glob
// (fN.log.old; mode "rename") or deleted (mode "delete"); a report is
// taken right after. behindLocked stats the path (not the open
// descriptor) and answers "not behind" when the stat fails, so the report
// may say settled while the open file holds 3 unread lines. Counted: a
// settled report while those lines are not in out.log.
// Observed: rename 4-18 of 80, delete 0-4 of 80 reports settled with 3
// lines unread (fails in every run as a whole); also at 762ac0c.
func TestRev9CFixedCMovedOutUnreadNotCaughtUp(t *testing.T) {
	for _, mode := range []string{"rename", "delete"} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t, rev9cCfg("./state", "./in/*.log", "    scanIntervalMillis: 60000\n"))
			in := e.path("in")
			writeFileLines(t, filepath.Join(in, "keep.log"), "k", 0, 1)
			d := e.start()
			out := e.path("out.log")
			d.waitSettled(20 * time.Second)
			bad := 0
			const rounds = 80
			for i := 1; i <= rounds; i++ {
				tag := fmt.Sprintf("f%02d", i)
				p := filepath.Join(in, tag+".log")
				writeFileLines(t, p, tag, 0, 1)
				waitReport(t, d, tag+" 0 settled", 20*time.Second, func(r *report) bool {
					return r.Settled && len(perTag(t, out)[tag]) >= 1
				})
				writeFileLines(t, p, tag, 1, 3)
				var err error
				if mode == "rename" {
					err = os.Rename(p, p+".old")
				} else {
					err = os.Remove(p)
				}
				if err != nil {
					t.Fatal(err)
				}
				r, err := d.status()
				if err != nil {
					t.Fatal(err)
				}
				if r.Settled {
					if n := len(perTag(t, out)[tag]); n < 4 {
						bad++
						if bad <= 3 {
							t.Errorf("round %d (%s): the report right after says state %s settled %v with %d of %s's 4 lines delivered", i, mode, r.Feeds[0].State, r.Settled, n, tag)
						}
					}
				}
				waitUntil(t, tag+" delivered", 20*time.Second, func() bool { return len(perTag(t, out)[tag]) >= 4 })
			}
			if bad > 0 {
				t.Errorf("%s: %d of %d reports taken right after 3 lines were appended and the file moved out claimed settled with them undelivered", mode, bad, rounds)
			}
		})
	}
}

// rev9cTouchSettles touches p (mtime only) three times and reports, for
// each, whether the feed was CAUGHT_UP and settled again within wait.
func rev9cTouchSettles(t *testing.T, d *daemon, p string, wait time.Duration) (string, bool) {
	t.Helper()
	for i := 1; i <= 3; i++ {
		later := time.Now().Add(time.Duration(i) * 3 * time.Second)
		if err := os.Chtimes(p, later, later); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(wait)
		var last *report
		for time.Now().Before(deadline) {
			r, err := d.status()
			if err != nil {
				t.Fatal(err)
			}
			last = r
			if r.Settled && r.Feeds[0].State == "CAUGHT_UP" {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if !last.Settled || last.Feeds[0].State != "CAUGHT_UP" {
			return fmt.Sprintf("touch %d: %v later state %s settled %v", i, wait, last.Feeds[0].State, last.Settled), false
		}
	}
	return "", true
}

// TestRev9COKTouchSlowPoll (passed): DESIGN §4 "Wake-ups from fsnotify on the
// file's directory; a poll covers file systems where events don't
// arrive"; §4 "Same-size rewrites … until that check ran, the feed is not
// CAUGHT_UP"; §7 BEHIND only with something unread/unchecked. A glob feed
// with pollIntervalMillis 30000 (events arrive: local file system): after
// `touch a.log` (mtime only), the report says BEHIND until the next poll,
// up to 30 s, with nothing to read — the touch's event (IN_ATTRIB) does
// not make the source look. Expected: CAUGHT_UP/settled within 5 s, as
// the single-file feed (mode "single") under the same settings.
func TestRev9COKTouchSlowPoll(t *testing.T) {
	for _, mode := range []string{"glob", "single"} {
		t.Run(mode, func(t *testing.T) {
			path := "./in/*.log"
			if mode == "single" {
				path = "./in/a.log"
			}
			e := newEnv(t, rev9cCfg("./state", path, "    scanIntervalMillis: 60000\n    pollIntervalMillis: 30000\n"))
			in := e.path("in")
			p := filepath.Join(in, "a.log")
			writeFileLines(t, p, "a", 0, 3)
			d := e.start()
			d.waitFor("3 lines settled", 20*time.Second, func(r *report) bool { return r.Settled && r.Feeds[0].Acknowledged >= 3 })
			time.Sleep(500 * time.Millisecond)
			if msg, ok := rev9cTouchSettles(t, d, p, 5*time.Second); !ok {
				t.Errorf("%s feed, pollIntervalMillis 30000, touch a.log (nothing written): %s; want CAUGHT_UP and settled within 5 s (nothing unread; fsnotify wakes the source)", mode, msg)
			}
		})
	}
}

// TestRev9COKRenameOverDelivered (passed 3×300 rounds; the 20 s stall seen once not reproduced): DESIGN §2 every line delivered; §10 a
// file renamed over a matched path is a new stream (new key), discovered
// on fsnotify events (rescan every scanIntervalMillis as a fallback). a.log
// is replaced 300 times by a rename of a.tmp (not matched) over it; each
// replacement's 3 lines must be delivered within 10 s (the rescan is 60 s
// away). Seen once in the first run of TestRev9CFixedCRenameOverNotCaughtUp:
// round 25's lines not delivered within 20 s.
func TestRev9COKRenameOverDelivered(t *testing.T) {
	e := newEnv(t, rev9cCfg("./state", "./in/*.log", "    scanIntervalMillis: 60000\n"))
	in := e.path("in")
	p := filepath.Join(in, "a.log")
	writeFileLines(t, p, "r000", 0, 3)
	d := e.start()
	out := e.path("out.log")
	d.waitFor("3 lines settled", 20*time.Second, func(r *report) bool { return r.Settled && r.Feeds[0].Acknowledged >= 3 })
	for i := 1; i <= 300; i++ {
		tag := fmt.Sprintf("r%03d", i)
		content := fmt.Sprintf("%s 0\n%s 1\n%s 2\n", tag, tag, tag)
		if err := os.WriteFile(p+".tmp", []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(p+".tmp", p); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			d.status()
		}
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) && len(perTag(t, out)[tag]) < 3 {
			time.Sleep(5 * time.Millisecond)
		}
		if n := len(perTag(t, out)[tag]); n < 3 {
			g := getGlobStatus(t, d)
			r, _ := d.status()
			t.Fatalf("replacement %d: %d of its 3 lines delivered 10 s later: state %s settled %v lostTails %d, files %+v",
				i, n, r.Feeds[0].State, r.Settled, r.Feeds[0].LostTails, g.Feeds[0].Files)
		}
	}
}

// TestRev9COKTouchAfterRenameWithin: DESIGN §5/§7 (BEHIND only while
// something is unread or unchecked), §10 a rename within the glob keeps
// the stream. a.log, read to its end, is renamed within the glob to
// c.log, then touched (mtime only): CAUGHT_UP/settled within 5 s.
func TestRev9COKTouchAfterRenameWithin(t *testing.T) {
	e := newEnv(t, rev9cCfg("./state", "./in/*.log", "    scanIntervalMillis: 60000\n"))
	in := e.path("in")
	writeFileLines(t, filepath.Join(in, "a.log"), "a", 0, 3)
	d := e.start()
	d.waitFor("3 lines settled", 20*time.Second, func(r *report) bool { return r.Settled && r.Feeds[0].Acknowledged >= 3 })
	if err := os.Rename(filepath.Join(in, "a.log"), filepath.Join(in, "c.log")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	d.waitSettled(20 * time.Second)
	if msg, ok := rev9cTouchSettles(t, d, filepath.Join(in, "c.log"), 5*time.Second); !ok {
		t.Errorf("c.log (a.log renamed within the glob) touched: %s; want CAUGHT_UP and settled", msg)
	}
}

// TestRev9COKPartialLineTouchSettles: DESIGN §7 "an fstat must show no
// complete line past the read position" (a partial line is not one); §4
// same-size rewrites. a.log ends with an unterminated "a 3"; the glob feed
// settles; a touch (mtime only) settles again within 5 s.
func TestRev9COKPartialLineTouchSettles(t *testing.T) {
	e := newEnv(t, rev9cCfg("./state", "./in/*.log", "    scanIntervalMillis: 60000\n"))
	p := e.path("in/a.log")
	writeFileLines(t, p, "a", 0, 3)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("a 3")
	f.Close()
	d := e.start()
	d.waitFor("3 lines settled", 20*time.Second, func(r *report) bool { return r.Settled && r.Feeds[0].Acknowledged >= 3 })
	if msg, ok := rev9cTouchSettles(t, d, p, 5*time.Second); !ok {
		t.Errorf("a.log with an unterminated last line touched: %s; want CAUGHT_UP and settled", msg)
	}
}

// TestRev9COKRenamedNarrowedUnreadNotSilent: DESIGN §4 "Nothing green over
// a loss", §12 a changed path (README: a WARN names the unread bytes of a
// file no longer matched). The glob ./in/* reads a.log; it is renamed
// within the glob to z.txt, read to its end; stopped; z.txt gets 2 lines;
// restarted as ./in/*.log. Its 2 lines must be delivered, or counted
// lost, or WARNed as unread — never dropped without a word.
func TestRev9COKRenamedNarrowedUnreadNotSilent(t *testing.T) {
	e := newEnv(t, rev9cCfg("./state", "./in/*", "    scanIntervalMillis: 500\n"))
	in := e.path("in")
	writeFileLines(t, filepath.Join(in, "a.log"), "a", 0, 5)
	d := e.start()
	d.waitFor("5 lines settled", 20*time.Second, func(r *report) bool { return r.Settled && r.Feeds[0].Acknowledged >= 5 })
	if err := os.Rename(filepath.Join(in, "a.log"), filepath.Join(in, "z.txt")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	d.waitSettled(20 * time.Second)
	d.stop()
	writeFileLines(t, filepath.Join(in, "z.txt"), "a", 5, 2)
	e.tmpl = rev9cCfg("./state", "./in/*.log", "    scanIntervalMillis: 500\n")
	d = e.start()
	time.Sleep(2 * time.Second)
	r := d.waitSettled(20 * time.Second)
	got := perTag(t, e.path("out.log"))["a"]
	lg := d.log()
	warned := strings.Contains(lg, "unreadBytes")
	t.Logf("a lines %v, lostTails %d, WARN unreadBytes %v", got, r.Feeds[0].LostTails, warned)
	if len(got) < 7 && r.Feeds[0].LostTails == 0 && !warned {
		t.Errorf("z.txt's 2 lines appended while stopped: not delivered (a %v), not counted (lostTails 0), not WARNed", got)
	}
}

// TestRev9COKDataDirThroughLinkedAncestor: DESIGN §10 "Never matched: …
// anything under dataDir" and nothing more. dataDir is ./link/state where
// ./link -> ./in; the glob ./in/**/*.log reads ./in/a.log,
// ./in/statex/b.log and ./in/sub/state/c.log, never ./in/state/*.
func TestRev9COKDataDirThroughLinkedAncestor(t *testing.T) {
	e := newEnv(t, rev9cCfg("./link/state", "./in/**/*.log", "    scanIntervalMillis: 500\n"))
	in := e.path("in")
	writeFileLines(t, filepath.Join(in, "a.log"), "a", 0, 2)
	writeFileLines(t, filepath.Join(in, "statex", "b.log"), "b", 0, 2)
	writeFileLines(t, filepath.Join(in, "sub", "state", "c.log"), "c", 0, 2)
	writeFileLines(t, filepath.Join(in, "state", "decoy.log"), "d", 0, 2)
	if err := os.Symlink(in, e.path("link")); err != nil {
		t.Fatal(err)
	}
	d := e.start()
	out := e.path("out.log")
	waitUntil(t, "6 lines", 20*time.Second, func() bool { return globLines(out) >= 6 })
	time.Sleep(1500 * time.Millisecond)
	d.waitSettled(20 * time.Second)
	got := perTag(t, out)
	if len(got["a"]) != 2 || len(got["b"]) != 2 || len(got["c"]) != 2 || len(got["d"]) != 0 || globLines(out) != 6 {
		data, _ := os.ReadFile(out)
		t.Errorf("a %d b %d c %d decoy %d total %d; want 2 2 2 0 6; out %.300q", len(got["a"]), len(got["b"]), len(got["c"]), len(got["d"]), globLines(out), data)
	}
}

// TestRev9CFixedAWidenedPastSymlinkedDir: DESIGN §10 ("**" matches any number
// of directories; identity is the file key + fingerprint; a file reached
// by several matching paths is one stream), §12 a changed path, §7
// lossless false only for a loss that happened. The glob ./in/link/*.log
// (./in/link a symlink to ./real, the glob's root) reads a.log to its end,
// committed; the path is changed (reload / stopped restart) to
// ./in/**/*.log, which matches ./in/link/a.log by name, but the walk does
// not descend the symlinked directory. Then 2 lines are appended to a.log.
// Expected: either a.log is still read (its 2 new lines delivered, no
// loss), or it is no longer matched (no loss, at most a WARN). Counting a
// lost tail for a file read to its end and still there is a loss that
// did not happen; not reading lines appended to a file the glob matches
// by name is a silent gap unless counted.
// Observed until the tenth session: lostTails 1, lossless false (a
// losses.jsonl entry), and the 2 appended lines never read; every run,
// reload and restart. unmatchedAt asked the pattern (matched by name); it
// now asks whether the walk reached the file: not reached, it is no longer
// matched (no loss, a WARN).
func TestRev9CFixedAWidenedPastSymlinkedDir(t *testing.T) {
	for _, mode := range []string{"reload", "restart"} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t, rev9cCfg("./state", "./in/link/*.log", "    scanIntervalMillis: 500\n"))
			real := e.path("real")
			p := filepath.Join(real, "a.log")
			writeFileLines(t, p, "a", 0, 5)
			writeFileLines(t, e.path("in/b.log"), "b", 0, 1)
			if err := os.Symlink(real, e.path("in/link")); err != nil {
				t.Fatal(err)
			}
			d := e.start()
			d.waitFor("5 lines settled", 20*time.Second, func(r *report) bool { return r.Settled && r.Feeds[0].Acknowledged >= 5 })
			d = rev9cChangePath(t, e, d, mode, rev9cCfg("./state", "./in/**/*.log", "    scanIntervalMillis: 500\n"))
			waitUntil(t, "b.log read", 20*time.Second, func() bool { return len(perTag(t, e.path("out.log"))["b"]) >= 1 })
			writeFileLines(t, p, "a", 5, 2)
			time.Sleep(2 * time.Second)
			r := d.waitSettled(20 * time.Second)
			got := perTag(t, e.path("out.log"))["a"]
			f := r.Feeds[0]
			led, _ := os.ReadFile(e.path("state/losses.jsonl"))
			if f.LostTails != 0 || !f.Lossless {
				t.Errorf("%s ./in/link/*.log -> ./in/**/*.log (link -> ../real; a.log read to its end, still there): lostTails %d lossless %v, a lines %v; want no loss (a.log either still read or no longer matched)\nlosses.jsonl: %s", mode, f.LostTails, f.Lossless, got, led)
			} else if len(got) != 7 {
				t.Logf("%s: a.log no longer read (a lines %v), no loss counted", mode, got)
			}
		})
	}
}

// TestRev9CFixedARenamedOutOfFirstPathThenNarrowed is the part of
// TestRev9CXARenamedWithinGlobThenNarrowed fixed in the tenth session: a.txt
// is renamed within the glob ./in/* to b.txt, read to its end, committed;
// the path is then narrowed to ./in/*.log (reload, restart) or *.txt
// excluded. Neither its first path nor where it is now is matched: the
// operator's choice, no loss (lostTails 0, lossless true), as for a file
// still at its first path. Before: lostTails 1 ("glob file gone while
// stopped"), every run.
func TestRev9CFixedARenamedOutOfFirstPathThenNarrowed(t *testing.T) {
	for _, mode := range []string{"reload", "restart", "exclude-restart"} {
		t.Run(mode, func(t *testing.T) {
			r, led, got := rev9cRenameThenNarrow(t, mode, map[string]string{"a.txt": "a"}, [][2]string{{"a.txt", "b.txt"}})
			if f := r.Feeds[0]; f.LostTails != 0 || !f.Lossless || len(led) != 0 {
				t.Errorf("%s: a.txt renamed within ./in/* to b.txt (read to its end, committed, still on disk), then neither name matched: lostTails %d lossless %v; want 0, true\nlosses.jsonl: %s",
					mode, f.LostTails, f.Lossless, led)
			}
			if len(got["a"]) != 5 {
				t.Errorf("a lines %d, want 5", len(got["a"]))
			}
		})
	}
}

// rev9cRenameThenNarrow writes files (name → tag, 5 lines each) and
// keep.log under the glob ./in/*, lets them be read, renames each pair
// within the glob (seen by three rescans), then narrows the path to
// ./in/*.log (mode "reload" or "restart") or excludes ./in/*.txt at a
// restart ("exclude-restart"); it returns the settled report once a line
// appended to keep.log is delivered, losses.jsonl and the lines per tag.
func rev9cRenameThenNarrow(t *testing.T, mode string, files map[string]string, renames [][2]string) (*report, []byte, map[string][]int) {
	t.Helper()
	e := newEnv(t, rev9cCfg("./state", "./in/*", "    scanIntervalMillis: 500\n"))
	in := e.path("in")
	for name, tag := range files {
		writeFileLines(t, filepath.Join(in, name), tag, 0, 5)
	}
	writeFileLines(t, filepath.Join(in, "keep.log"), "k", 0, 5)
	d := e.start()
	want := uint64(5 * (len(files) + 1))
	d.waitFor("every line settled", 20*time.Second, func(r *report) bool { return r.Settled && r.Feeds[0].Acknowledged >= want })
	for _, rn := range renames {
		if err := os.Rename(filepath.Join(in, rn[0]), filepath.Join(in, rn[1])); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(1500 * time.Millisecond) // three rescans: the renames seen within the glob
	d.waitSettled(20 * time.Second)
	if mode == "exclude-restart" {
		d = rev9cChangePath(t, e, d, "restart", rev9cCfg("./state", "./in/*", "    scanIntervalMillis: 500\n    exclude: [./in/*.txt]\n"))
	} else {
		d = rev9cChangePath(t, e, d, mode, rev9cCfg("./state", "./in/*.log", "    scanIntervalMillis: 500\n"))
	}
	writeFileLines(t, filepath.Join(in, "keep.log"), "k", 5, 1)
	waitUntil(t, "k 5", 20*time.Second, func() bool { return len(perTag(t, e.path("out.log"))["k"]) >= 6 })
	r := d.waitSettled(20 * time.Second)
	led, _ := os.ReadFile(e.path("state/losses.jsonl"))
	return r, led, perTag(t, e.path("out.log"))
}

// TestRev9CFixedCSymlinkTargetRewriteRead: DESIGN §4 "At every poll …
// when the size or mtime changed since the last check, re-verify the
// fingerprint …; On a change, open the file at the path at once"; "a poll
// (pollIntervalMillis, default 250) covers file systems where events don't
// arrive"; §10 the rescan every scanIntervalMillis is a fallback for
// discovery; symlinks followed to regular files. The glob ./in/*.log
// matches in/l.log, a symlink to real/a.log (a directory no fsnotify watch
// covers); real/a.log is rewritten in place to the same size, other first
// bytes (a replacement). Observed: the feed says BEHIND (honest since this
// change), but the new lines were delivered only at the next rescan (60 s
// here): the target's directory sent the glob no event, and an open
// stream's own look runs at the rescan interval. Expected: delivered within
// a few polls (5 s allowed). Failed on the first rewrite, every run, until
// the tenth session: the glob now watches a matched symlink's target's
// directory and wakes the symlink's stream on its events.
func TestRev9CFixedCSymlinkTargetRewriteRead(t *testing.T) {
	e := newEnv(t, rev9cCfg("./state", "./in/*.log", "    scanIntervalMillis: 60000\n"))
	p := e.path("real/a.log")
	writeFileLines(t, p, "r00", 0, 3)
	os.MkdirAll(e.path("in"), 0o755)
	if err := os.Symlink(p, e.path("in/l.log")); err != nil {
		t.Fatal(err)
	}
	d := e.start()
	out := e.path("out.log")
	d.waitFor("3 lines settled", 20*time.Second, func(r *report) bool { return r.Settled && r.Feeds[0].Acknowledged >= 3 })
	bad := 0
	for i := 1; i <= 5; i++ {
		time.Sleep(30 * time.Millisecond)
		tag := fmt.Sprintf("r%02d", i)
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(f, "%s 0\n%s 1\n%s 2\n", tag, tag, tag)
		f.Close()
		r, err := d.status()
		if err != nil {
			t.Fatal(err)
		}
		if r.Settled && len(perTag(t, out)[tag]) < 3 {
			bad++
		}
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) && len(perTag(t, out)[tag]) < 3 {
			time.Sleep(20 * time.Millisecond)
		}
		if n := len(perTag(t, out)[tag]); n < 3 {
			g := getGlobStatus(t, d)
			r, _ := d.status()
			data, _ := os.ReadFile(out)
			t.Fatalf("same-size rewrite %d of real/a.log (matched as the symlink in/l.log): %d of its 3 lines delivered 5 s later: state %s settled %v lostTails %d lostBytes %d lossless %v, files %+v; out.log %q — DESIGN §4 a same-size rewrite with other first bytes is a replacement, read from its start; §2 every line delivered unless a loss is counted",
				i, n, r.Feeds[0].State, r.Settled, r.Feeds[0].LostTails, r.Feeds[0].LostBytes, r.Feeds[0].Lossless, g.Feeds[0].Files, data)
		}
		d.waitSettled(20 * time.Second)
	}
	if bad > 0 {
		t.Errorf("%d of 5 reports right after a same-size rewrite of the symlinked match's target said settled with the new lines undelivered", bad)
	}
}

// TestRev9CFixedXARenamedWithinGlobThenNarrowed: DESIGN §10 "A rename within the
// glob keeps the stream"; §12 "if its path changed … the new path starts as
// a new feed" (README: a changed path "stops reading the old one: no loss
// is counted"); §7/§4 "Nothing green over a loss": lossless false only for
// a counted loss — and a loss counted must have happened. The glob ./in/*
// reads a.txt (5 lines) and a.log (5 lines); while running both are renamed
// within the glob (a.txt -> b.txt, a.log -> z.txt), read to their end,
// committed, settled. The path is then narrowed to ./in/*.log (by a
// reload, or at a stopped restart): b.txt and z.txt, still on disk, read
// to their end, are no longer matched — exactly the case this change
// stopped counting (TestAud4GXReloadGlobNarrowed), except that the file
// is not at the path its stream was first matched under. unmatchedAt
// looks only at that first path (l.s.first), finds no file there, and the
// file is counted "glob file gone while stopped".
// Expected: lostTails 0, lossless true, no losses.jsonl entry.
// Observed: lostTails 2, lossless false, two losses.jsonl entries "glob
// file gone while stopped" in every mode, every run (also by an exclude;
// also at 762ac0c, before this change: the fix covers only a file still at
// its first path). Tenth session: b.txt (its first path a.txt no longer
// matched either) is no longer counted (TestRev9CFixedARenamedOutOfFirst-
// PathThenNarrowed); z.txt, whose first path a.log the narrowed glob still
// matches, is: at a start nothing tells a rename within the glob before the
// stop from a rename out while stopped, after which generations rotated
// away unseen may follow it (besideAtStart) — lostTails 1, every run.
// Twenty-second session: narrowed by the path (reload, restart), z.txt is
// read on beside its path as a file renamed out of the glob while stopped
// (besideAtStart; passing since an earlier session); by an exclude (z.txt
// still matched by ./in/*, so besideAtStart does not take it) it was still
// counted, until the clean stop's moved list (feeds/<feed>/moved.list)
// named where each file renamed within the glob was at the stop.
func TestRev9CFixedXARenamedWithinGlobThenNarrowed(t *testing.T) {
	for _, mode := range []string{"reload", "restart", "exclude-restart"} {
		t.Run(mode, func(t *testing.T) {
			r, led, got := rev9cRenameThenNarrow(t, mode, map[string]string{"a.txt": "a", "a.log": "l"},
				[][2]string{{"a.txt", "b.txt"}, {"a.log", "z.txt"}})
			if f := r.Feeds[0]; f.LostTails != 0 || !f.Lossless || len(led) != 0 {
				t.Errorf("%s narrowing ./in/* to ./in/*.log after a.txt->b.txt and a.log->z.txt were renamed within the glob (both read to their end, committed, still on disk): lostTails %d lostBytes %d lossless %v; want 0, 0, true (no line skipped; the same narrowing without the rename counts nothing)\nlosses.jsonl: %s",
					mode, f.LostTails, f.LostBytes, f.Lossless, led)
			}
			if len(got["a"]) != 5 || len(got["l"]) != 5 {
				t.Errorf("lines a %d l %d, want 5 5", len(got["a"]), len(got["l"]))
			}
		})
	}
}
