package e2e

// Audit 8C: DESIGN §10 (many files per feed) with §3/§4 per file, probed
// black-box against the built binary. TestAud8CX… are its findings, fixed
// in the twenty-sixth session (each comment's "Observed" is the product
// before the fix); TestAud8COK… are passing probes kept as regressions.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// a8cCfg is a glob feed config; extra holds further feed keys (4 spaces).
func a8cCfg(path, extra, procs string) string {
	return `dataDir: ./state
status:
  listen: {{ADDR}}
feeds:
  - name: app
    path: ` + path + `
` + extra + `processors:
` + procs
}

const a8cOut = `  - name: out
    feed: app
    type: file
    path: ./out.log
`

// a8cMetric reads one sample of /metrics.
func a8cMetric(t *testing.T, d *daemon, name string) (float64, bool) {
	t.Helper()
	code, body, err := d.get("/metrics")
	if err != nil || code != 200 {
		t.Fatalf("/metrics: %d %v", code, err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, name+" ") {
			v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimPrefix(l, name)), 64)
			return v, err == nil
		}
	}
	return 0, false
}

// a8cLines reads the file sink's output lines.
func a8cLines(path string) []string {
	b, _ := os.ReadFile(path)
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// a8cCount counts each distinct line of the output.
func a8cCount(path string) map[string]int {
	m := map[string]int{}
	for _, l := range a8cLines(path) {
		m[l]++
	}
	return m
}

// TestAud8COKExcludeOtherCwd (passing probe) — DESIGN §10 "`exclude:
// [globs]`, written like `path` (relative to the config file) and matched
// against a file's whole path, removes matches"; "A feed's `path`
// containing `*`, `?` or `[` is a glob (`**` matches any number of
// directories, zero included, as in doublestar)"; "Non-regular matches …
// are skipped, counted once per path in `filesSkipped`"; "`GET
// /feed.status?files=1` adds … `files` … sorted by path"; README /metrics:
// `tailfeed_feed_files_tracked`, `_files_open`, `_files_behind`,
// `_files_skipped_total` are the same counts. The daemon runs from another
// working directory.
func TestAud8COKExcludeOtherCwd(t *testing.T) {
	e := newEnv(t, a8cCfg("./in/**/*.lo?", "    exclude: ['./in/skip/**', './in/**/x-[0-9].log']\n    scanIntervalMillis: 500\n", a8cOut))
	in := e.path("in")
	for _, p := range []string{"a.log", "a-b.log", "a/z.log", "skip/b.log", "skip/deep/c.log", "x/skip/d.log", "x/x-1.log", "x/x-a.log", "q.lox", "q.txt"} {
		writeFileLines(t, filepath.Join(in, p), strings.ReplaceAll(p, "/", "_"), 0, 2)
	}
	syscall.Mkfifo(filepath.Join(in, "fifo.log"), 0o644)
	d := e.startIn(t.TempDir())
	d.waitSettled(30 * time.Second)
	time.Sleep(600 * time.Millisecond)
	got := a8cCount(e.path("out.log"))
	want := []string{"a.log", "a-b.log", "a_z.log", "x_skip_d.log", "x_x-a.log", "q.lox"}
	for _, w := range want {
		for i := 0; i < 2; i++ {
			if got[fmt.Sprintf("%s %d", w, i)] != 1 {
				t.Errorf("line %q delivered %d times, want 1", fmt.Sprintf("%s %d", w, i), got[fmt.Sprintf("%s %d", w, i)])
			}
		}
	}
	if n := len(a8cLines(e.path("out.log"))); n != 2*len(want) {
		t.Errorf("%d lines out, want %d: %v", n, 2*len(want), got)
	}
	g := getGlobStatus(t, d)
	f := g.Feeds[0]
	var paths []string
	for _, row := range f.Files {
		paths = append(paths, row.Path)
	}
	if !sort.StringsAreSorted(paths) || len(paths) != len(want) {
		t.Errorf("files rows %v: want %d rows sorted by path", paths, len(want))
	}
	if f.FilesTracked != len(want) || f.FilesSkipped != 1 {
		t.Errorf("filesTracked %d filesSkipped %d, want %d and 1", f.FilesTracked, f.FilesSkipped, len(want))
	}
	for name, v := range map[string]int{"tailfeed_feed_files_tracked": f.FilesTracked, "tailfeed_feed_files_open": f.FilesOpen,
		"tailfeed_feed_files_behind": f.FilesBehind, "tailfeed_feed_files_skipped_total": int(f.FilesSkipped)} {
		m, ok := a8cMetric(t, d, name+`{feed="app"}`)
		if !ok || int(m) != v {
			t.Errorf("metric %s = %v (present %v), status says %d", name, m, ok, v)
		}
	}
	d.stop()
}

// TestAud8CXDeletedFileShownClosed — DESIGN §10 "`GET /feed.status?files=1`
// adds to each feed `files`: … `state` one of `BEHIND`, `CAUGHT_UP`,
// `CLOSED` (inactive, descriptor closed, still tracked), `GONE` (deleted or
// renamed out of the glob, read to its end, waiting to be forgotten). A
// deleted file that was read to its end is closed within
// `rotateWaitMillis`. A glob feed is CAUGHT_UP when every tracked file is
// read to its end … and WAITING_FOR_FILE when nothing matches";
// "Forgetting. The pointer of a stream whose file is gone, was read to its
// end and is fully acknowledged is deleted after `forgetAfterMillis`".
// Both files of ./in/*.log, read and settled, are deleted while running
// (the daemon sees it at once through fsnotify and logs "input file
// deleted after every line of it was committed"). Observed: each row turns
// `CLOSED`, not `GONE` (showing the epoch of the pointer's empty record,
// under which nothing was read), the feed stays `CAUGHT_UP` although
// nothing matches, and the pointers are not forgotten after
// forgetAfterMillis (2 s) — all until the next rescan (scanIntervalMillis,
// 60 s here; 10 s by default). The same files renamed out of the glob
// (a.log → a.old: a rescan follows the new name's event) are GONE within
// 1.3 s, the feed WAITING_FOR_FILE, the pointers forgotten after 2.5 s.
func TestAud8CXDeletedFileShownClosed(t *testing.T) {
	e := newEnv(t, a8cCfg("./in/*.log", "    forgetAfterMillis: 2000\n    scanIntervalMillis: 60000\n    rotateWaitMillis: 300\n", a8cOut))
	in := e.path("in")
	writeFileLines(t, filepath.Join(in, "a.log"), "a", 0, 3)
	writeFileLines(t, filepath.Join(in, "b.log"), "b", 0, 3)
	d := e.start()
	d.waitSettled(30 * time.Second)
	ptrs, _ := filepath.Glob(e.path("state/feeds/app/*.ptr"))
	if len(ptrs) != 2 {
		t.Fatalf("pointers %v, want 2", ptrs)
	}
	os.Remove(filepath.Join(in, "a.log"))
	os.Remove(filepath.Join(in, "b.log"))
	deleted := time.Now()
	var g globStatus
	ok := false
	for time.Since(deleted) < 5*time.Second && !ok {
		time.Sleep(100 * time.Millisecond)
		g = getGlobStatus(t, d)
		f := g.Feeds[0]
		ok = f.State == "WAITING_FOR_FILE" && len(f.Files) == 2 && f.Files[0].State == "GONE" && f.Files[1].State == "GONE"
	}
	if !ok {
		t.Errorf("both files deleted 5 s ago (rotateWaitMillis 300): state %s, rows %+v; want WAITING_FOR_FILE (nothing matches) and both rows GONE", g.Feeds[0].State, g.Feeds[0].Files)
	}
	forgotten := false
	for time.Since(deleted) < 10*time.Second && !forgotten {
		time.Sleep(200 * time.Millisecond)
		ptrs, _ = filepath.Glob(e.path("state/feeds/app/*.ptr"))
		forgotten = len(ptrs) == 0
	}
	g = getGlobStatus(t, d)
	if !forgotten || len(g.Feeds[0].Files) != 0 || g.Feeds[0].FilesTracked != 0 {
		t.Errorf("10 s after the deletion (forgetAfterMillis 2000): pointers %v, rows %+v, filesTracked %d; want the pointers deleted, no row, 0 tracked",
			ptrs, g.Feeds[0].Files, g.Feeds[0].FilesTracked)
	}
	if !g.Feeds[0].Lossless {
		t.Errorf("lossless false after deleting files read to their end")
	}
	d.stop()
}

// TestAud8COKCorruptFilePointer (passing probe) — DESIGN §3 "A pointer file
// shorter than 1,024 bytes, or with no valid slot, is a WARN and a fresh
// start at 0 under a new epoch (re-read, never skip)", for a glob feed's
// per-file pointer (§10 "pointer `dataDir/feeds/<feed>/<epoch, 16 hex>.ptr`
// (layout v1 …)"): zeroed or cut to 100 bytes while stopped, its file is
// read again from its start, nothing skipped, the feed not FAILED.
func TestAud8COKCorruptFilePointer(t *testing.T) {
	for _, mode := range []string{"zeroed", "short"} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t, a8cCfg("./in/*.log", "    scanIntervalMillis: 60000\n    rotateWaitMillis: 300\n", a8cOut))
			in := e.path("in")
			writeFileLines(t, filepath.Join(in, "a.log"), "a", 0, 3)
			writeFileLines(t, filepath.Join(in, "b.log"), "b", 0, 3)
			d := e.start()
			d.waitSettled(30 * time.Second)
			g := getGlobStatus(t, d)
			d.stop()
			var ptr string
			for _, row := range g.Feeds[0].Files {
				if filepath.Base(row.Path) == "a.log" {
					ptr = e.path("state/feeds/app/" + row.Epoch + ".ptr")
				}
			}
			if mode == "zeroed" {
				os.WriteFile(ptr, make([]byte, 1024), 0o600)
			} else {
				os.WriteFile(ptr, make([]byte, 100), 0o600)
			}
			writeFileLines(t, filepath.Join(in, "a.log"), "a", 3, 2)
			d = e.start()
			waitUntil(t, "a 4", 20*time.Second, func() bool { return a8cCount(e.path("out.log"))["a 4"] >= 1 })
			r := d.waitSettled(30 * time.Second)
			c := a8cCount(e.path("out.log"))
			for i := 0; i < 5; i++ {
				if c[fmt.Sprintf("a %d", i)] < 1 {
					t.Errorf("a %d missing", i)
				}
			}
			if r.Feeds[0].State == "FAILED" {
				t.Errorf("feed FAILED")
			}
			d.stop()
		})
	}
}

// TestAud8CXDeleteRecreateNotDiscovered — DESIGN §10 "Discovered at start,
// on fsnotify events of every directory the glob can match (new
// directories included), and by a rescan every `scanIntervalMillis`
// (default 10000) as a fallback"; §4 "Every new file gets a new epoch
// (rename rotation, replacement, truncation, delete and recreate)";
// "Symlinks. … A retarget is a rotation: the old target is read to its end,
// then the new target is a new file"; §10 "The epoch barrier of §4 holds
// per path". A file of ./in/*.log, read and settled (its stream open),
// leaves the glob's directory and a new file appears at its path, then gets
// two lines: `rm app.log; echo … > app.log` (delete and recreate); a real
// logrotate run with `create` and `olddir` (the rotated file moved to an
// unwatched directory); or ./in/app.log a symlink to ../real/app.log whose
// target is renamed to app.log.1 beside it and recreated. Observed: the new
// file is not discovered through its fsnotify events (they all name the old
// stream's path, so they only wake that stream, which reads its old file to
// its end and closes; no rescan is asked for), and its lines wait for the
// next rescan: delivered 58 s later with scanIntervalMillis 60000 (up to
// 10 s with the default), the feed BEHIND and not settled meanwhile.
func TestAud8CXDeleteRecreateNotDiscovered(t *testing.T) {
	for _, mode := range []string{"rm-recreate", "logrotate-olddir", "symlink-target-rotated"} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t, a8cCfg("./in/*.log", "    scanIntervalMillis: 60000\n    rotateWaitMillis: 1000\n", a8cOut))
			in := e.path("in")
			a := filepath.Join(in, "app.log")
			if mode == "symlink-target-rotated" {
				// ./in/app.log -> ../real/app.log: the target is rotated.
				a = e.path("real/app.log")
				os.MkdirAll(in, 0o755)
				os.MkdirAll(e.path("real"), 0o755)
				os.Symlink(a, filepath.Join(in, "app.log"))
			}
			writeFileLines(t, a, "a", 0, 3)
			os.MkdirAll(e.path("old"), 0o755)
			conf := e.path("lr.conf")
			os.WriteFile(conf, []byte(a+" {\n  rotate 2\n  create\n  olddir "+e.path("old")+"\n  missingok\n}\n"), 0o644)
			d := e.start()
			d.waitSettled(30 * time.Second)
			time.Sleep(1500 * time.Millisecond)
			if mode == "rm-recreate" {
				os.Remove(a)
			} else if mode == "symlink-target-rotated" {
				os.Rename(a, a+".1")
			} else if out, err := exec.Command("logrotate", "-f", "-s", e.path("lr.state"), conf).CombinedOutput(); err != nil {
				t.Fatalf("logrotate: %v %s", err, out)
			}
			writeFileLines(t, a, "new", 0, 2)
			deadline := time.Now().Add(8 * time.Second)
			for len(a8cLines(e.path("out.log"))) < 5 && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if got := a8cLines(e.path("out.log")); len(got) != 5 {
				g := getGlobStatus(t, d)
				t.Fatalf("8 s after app.log left (%s; rotateWaitMillis 1000) and the new app.log got 2 lines: output %q; want the 2 new lines too (state %s, files %+v)", mode, got, g.Feeds[0].State, g.Feeds[0].Files)
			}
			d.waitSettled(30 * time.Second)
			d.stop()
		})
	}
}

// TestAud8CXGoneRowLosesPathAtRestart — DESIGN §10 "`GET
// /feed.status?files=1` adds to each feed `files`:
// `[{"path","fileKey","epoch","offset","size","state"}]` sorted by path,
// `state` one of … `GONE` (deleted or renamed out of the glob, read to its
// end, waiting to be forgotten)"; §3 "file key (FNV-1a 64 over the device
// then the inode …)"; README "Status fields": "a `GONE` file keeps the
// epoch and end its stream read it under and to …, also once its pointer
// is reset to the empty record". a.log, read and settled, is renamed out of
// the glob (a.old) while running; its row turns GONE naming it (path, file
// key, epoch, offset = size = 12), its pointer reset to the empty record. The daemon is restarted (SIGTERM, or
// kill -9) before forgetAfterMillis (default 1 day). Observed: the restart
// still lists the GONE row, but with `"path": ""`, a made-up fileKey
// c000000000000001, the epoch of the pointer's empty record and offset =
// size = 0: an operator cannot tell which file it was. (The same file gone
// while tailfeed was stopped is listed right: TestAud3GXGoneWhileStopped…)
func TestAud8CXGoneRowLosesPathAtRestart(t *testing.T) {
	for _, mode := range []string{"stop", "kill"} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t, a8cCfg("./in/*.log", "    scanIntervalMillis: 60000\n    rotateWaitMillis: 300\n", a8cOut))
			in := e.path("in")
			a := filepath.Join(in, "a.log")
			writeFileLines(t, a, "a", 0, 3)
			writeFileLines(t, filepath.Join(in, "b.log"), "b", 0, 3)
			d := e.start()
			d.waitSettled(30 * time.Second)
			os.Rename(a, filepath.Join(in, "a.old"))
			var key string
			waitUntil(t, "a.log GONE", 10*time.Second, func() bool {
				f := getGlobStatus(t, d).Feeds[0].Files
				if len(f) == 2 && f[0].State == "GONE" && f[0].Path == a && f[0].Offset == 12 {
					key = f[0].FileKey
					return true
				}
				return false
			})
			time.Sleep(time.Second)
			if mode == "kill" {
				d.kill()
			} else {
				d.stop()
			}
			d = e.start()
			d.waitSettled(30 * time.Second)
			f := getGlobStatus(t, d).Feeds[0].Files
			if len(f) != 2 || f[0].State != "GONE" || f[0].Path != a || f[0].FileKey != key || f[0].Offset != 12 {
				t.Errorf("after the restart rows %+v; want a.log's GONE row still naming it: path %s, fileKey %s, offset 12 (read to its end)", f, a, key)
			}
			d.stop()
		})
	}
}

// TestAud8COKCountGlobKill9 (passing probe) — DESIGN §10 "Every stored
// "applied (epoch, position)" is kept per epoch, not per feed … count state
// and the webhook record … likewise"; §6 `count`: "re-deliveries are
// skipped"; §2 at-least-once after any crash. Eight files of a glob feed
// are appended in bursts while the daemon is SIGKILLed three times: every
// file's count is exact and the exactlyOnce file output holds each line
// once.
func TestAud8COKCountGlobKill9(t *testing.T) {
	e := newEnv(t, a8cCfg("./in/*.log", "    scanIntervalMillis: 500\n    rotateWaitMillis: 300\n    commitSyncMillis: 200\n", `  - name: counter
    feed: app
    type: count
    match: '^(?P<key>f\d+) '
  - name: out
    feed: app
    type: file
    path: ./out.log
    exactlyOnce: true
`))
	in := e.path("in")
	os.MkdirAll(in, 0o755)
	const files, chunks, per = 8, 30, 100
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c := 0; c < chunks; c++ {
			for f := 0; f < files; f++ {
				var b strings.Builder
				for i := 0; i < per; i++ {
					fmt.Fprintf(&b, "f%d %d\n", f, c*per+i)
				}
				fh, _ := os.OpenFile(filepath.Join(in, fmt.Sprintf("f%d.log", f)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
				fh.WriteString(b.String())
				fh.Close()
			}
			time.Sleep(40 * time.Millisecond)
		}
	}()
	d := e.start()
	for k := 0; k < 3; k++ {
		time.Sleep(time.Duration(300+200*k) * time.Millisecond)
		d.kill()
		d = e.start()
	}
	<-done
	waitUntil(t, "all lines", 60*time.Second, func() bool {
		r, err := d.status()
		return err == nil && r.Settled && len(a8cCount(e.path("out.log"))) == files*chunks*per
	})
	code, _, body := request(t, d, "GET", "/v1/state/counter", "", nil)
	var st struct {
		Counts map[string]int `json:"counts"`
	}
	json.Unmarshal(body, &st)
	for f := 0; f < files; f++ {
		if st.Counts[fmt.Sprintf("f%d", f)] != chunks*per {
			t.Errorf("count f%d = %d, want %d (%d %s)", f, st.Counts[fmt.Sprintf("f%d", f)], chunks*per, code, body)
		}
	}
	if n := len(a8cLines(e.path("out.log"))); n != files*chunks*per {
		t.Errorf("exactlyOnce output %d lines, want %d", n, files*chunks*per)
	}
	d.stop()
}
