package e2e

// Review 30b of c4743fd (a glob stream's deleted file's pointer kept for
// the empty new file at its path, audit 11a): the lifetime and bookkeeping
// of held pointers — forgetAfterMillis, filesTracked/filesOpen/filesBehind,
// ?files=1, the pointer directory and the epochs file.

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rev30BTmpl: a glob feed over ./logs/*.log with a short forgetAfterMillis
// and only auto-acknowledging (pointer-holding) sinks.
const rev30BTmpl = `dataDir: ./state
status: {listen: "{{ADDR}}"}
shutdownTimeoutMillis: 2000
feeds:
  - name: app
    path: ./logs/*.log
    readStrategy: COMMITTED
    pollIntervalMillis: 50
    rotateWaitMillis: 300
    scanIntervalMillis: 500
    forgetAfterMillis: 800
processors:
  - {name: once, feed: app, type: file, path: ./out/once.jsonl, exactlyOnce: true, format: json}
  - {name: counter, feed: app, type: count, match: '^(?P<key>\S+) #'}
`

type rev30BGlobEnv struct {
	e   *env
	app string
	seq int
	all []string
}

func rev30BNewEnv(t *testing.T, repl ...string) *rev30BGlobEnv {
	t.Helper()
	e := newEnv(t, strings.NewReplacer(repl...).Replace(rev30BTmpl))
	if err := os.MkdirAll(e.path("logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	return &rev30BGlobEnv{e: e, app: e.path("logs/a.log")}
}

// write appends n numbered lines to path (a.log when "").
func (g *rev30BGlobEnv) write(t *testing.T, path string, n int) {
	t.Helper()
	if path == "" {
		path = g.app
	}
	key := strings.TrimSuffix(filepath.Base(path), ".log")
	var b strings.Builder
	for range n {
		s := fmt.Sprintf("%s #%06d %s", key, g.seq, strings.Repeat("y", 12))
		g.seq++
		g.all = append(g.all, s)
		b.WriteString(s + "\n")
	}
	appendTo(t, path, b.String())
}

// gzRotate is logrotate's create + compress without delaycompress on p:
// p → p.1, a new empty p, p.1 → p.1.gz (earlier .gz shifted up), p.1
// deleted.
func rev30BGzRotate(t *testing.T, p string) {
	t.Helper()
	for i := 30; i >= 1; i-- {
		if _, err := os.Stat(fmt.Sprintf("%s.%d.gz", p, i)); err == nil {
			if err := os.Rename(fmt.Sprintf("%s.%d.gz", p, i), fmt.Sprintf("%s.%d.gz", p, i+1)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.Rename(p, p+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rev30BGzip(t, p+".1", p+".1.gz")
	if err := os.Remove(p + ".1"); err != nil {
		t.Fatal(err)
	}
}

func rev30BGzip(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(out)
	if _, err := io.Copy(zw, in); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(from); err == nil { // gzip keeps the mtime
		os.Chtimes(to, st.ModTime(), st.ModTime())
	}
}

type rev30BFile struct {
	Path    string  `json:"path"`
	FileKey string  `json:"fileKey"`
	Epoch   *string `json:"epoch"`
	Offset  int64   `json:"offset"`
	Size    int64   `json:"size"`
	State   string  `json:"state"`
}

type rev30BFeed struct {
	Downgraded   uint64       `json:"downgraded"`
	LostBytes    uint64       `json:"lostBytes"`
	Detail       *string      `json:"detail"`
	State        string       `json:"state"`
	Settled      bool         `json:"settled"`
	Lossless     bool         `json:"lossless"`
	LostTails    uint64       `json:"lostTails"`
	Sequence     uint64       `json:"sequence"`
	Acknowledged uint64       `json:"acknowledged"`
	FilesTracked int          `json:"filesTracked"`
	FilesOpen    int          `json:"filesOpen"`
	FilesBehind  int          `json:"filesBehind"`
	Files        []rev30BFile `json:"files"`
}

// files reads /feed.status?files=1 (feed app); ok false on a transport error.
func rev30BFiles(t *testing.T, d *daemon) (rev30BFeed, string, bool) {
	t.Helper()
	code, body, err := d.get("/feed.status?files=1")
	if err != nil {
		return rev30BFeed{}, "", false
	}
	if code != http.StatusOK {
		t.Fatalf("/feed.status?files=1: %d %s", code, body)
	}
	var r struct {
		Settled bool         `json:"settled"`
		Feeds   []rev30BFeed `json:"feeds"`
	}
	if err := json.Unmarshal(body, &r); err != nil || len(r.Feeds) != 1 {
		t.Fatalf("/feed.status?files=1: %v %s", err, body)
	}
	f := r.Feeds[0]
	f.Settled = f.Settled && r.Settled
	return f, string(body), true
}

// ptrs lists the glob's pointer files.
func (g *rev30BGlobEnv) ptrs() []string {
	ents, _ := os.ReadDir(g.e.path("state/feeds/app"))
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".ptr") {
			out = append(out, e.Name())
		}
	}
	return out
}

// reasons counts the epochs file's lines by reason.
func (g *rev30BGlobEnv) reasons() (map[string]int, string) {
	b, _ := os.ReadFile(g.e.path("state/feeds/app.epochs"))
	n := map[string]int{}
	for _, l := range strings.Split(string(b), "\n") {
		var v struct {
			Reason string `json:"reason"`
		}
		if json.Unmarshal([]byte(l), &v) == nil {
			n[v.Reason]++
		}
	}
	return n, string(b)
}

// delivered: how many objects the exactlyOnce sink holds.
func (g *rev30BGlobEnv) delivered() int {
	objs, _ := aud11AReadOnce(g.e.path("out/once.jsonl"))
	return len(objs)
}

// settle waits until the feed is settled with every line written so far in
// the exactlyOnce sink and cond (nil: none) holds.
func (g *rev30BGlobEnv) settle(t *testing.T, d *daemon, what string, cond func(rev30BFeed) bool) rev30BFeed {
	t.Helper()
	var f rev30BFeed
	var last string
	deadline := time.Now().Add(25 * time.Second)
	for {
		var ok bool
		f, last, ok = rev30BFiles(t, d)
		if ok && f.Settled && g.delivered() >= len(g.all) && (cond == nil || cond(f)) {
			return f
		}
		if time.Now().After(deadline) {
			t.Fatalf("not settled with %d lines delivered and %s within 25 s (%d delivered); last report %s", len(g.all), what, g.delivered(), last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// rev30BHeldTwice: 5 lines read and committed, a live create + compress
// rotation leaving a.log empty (the first file's pointer held), and idle
// rotations of the empty a.log (its own stream's pointer held too).
func rev30BHeldTwice(t *testing.T, idle int) (*rev30BGlobEnv, *daemon) {
	g := rev30BNewEnv(t)
	g.write(t, "", 5)
	d := g.e.start()
	g.settle(t, d, "a.log read", nil)
	rev30BGzRotate(t, g.app)
	g.settle(t, d, "the rotated file GONE", func(f rev30BFeed) bool { return rev30BCount(f, "GONE") == 1 })
	for i := range idle {
		rev30BGzRotate(t, g.app)
		g.settle(t, d, "the idle rotation seen", func(f rev30BFeed) bool { return rev30BCount(f, "GONE") >= min(2, 1+i+1) })
	}
	return g, d
}

func rev30BCount(f rev30BFeed, state string) int {
	n := 0
	for _, r := range f.Files {
		if r.State == state {
			n++
		}
	}
	return n
}

// rev30BWaitBook waits (20 s) until the feed is settled, tracks tracked
// files and the pointer directory holds ptrs pointer files.
func (g *rev30BGlobEnv) waitBook(t *testing.T, d *daemon, tracked, ptrs int) (rev30BFeed, []string, bool) {
	t.Helper()
	var f rev30BFeed
	var p []string
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var ok bool
		f, _, ok = rev30BFiles(t, d)
		p = g.ptrs()
		if ok && f.Settled && f.FilesTracked == tracked && len(p) == ptrs && g.delivered() >= len(g.all) {
			return f, p, true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return f, p, false
}

// TestRev30BOKHeldReleased: DESIGN §10 "Forgetting. The pointer of a
// stream whose file is gone, was read to its end and is fully
// acknowledged is deleted after forgetAfterMillis"; README (Many files per
// feed): the held pointer "is reset once the new file's pointer holds a
// commit …, or once the empty new file is deleted". 5 lines read; a live
// create + compress rotation (a.log.1 deleted at once) and two idle ones
// of the empty a.log: the first file's pointer and the empty file's own
// pointer are held (2 GONE rows, 3 pointer files) past forgetAfterMillis
// (800 ms). Then: 3 lines to a.log (commit), or a.log deleted (emptied):
// within 20 s the report is settled and lossless,
// filesTracked 1 (0 when emptied) and the pointer directory holds 1 pointer
// file (0), each line once.
func TestRev30BOKHeldReleased(t *testing.T) {
	for _, v := range []string{"commit", "emptied"} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			g, d := rev30BHeldTwice(t, 2)
			time.Sleep(1200 * time.Millisecond) // > forgetAfterMillis
			f, _, _ := rev30BFiles(t, d)
			if n := rev30BCount(f, "GONE"); n == 0 {
				t.Errorf("no GONE row held past forgetAfterMillis: %+v", f.Files)
			}
			want, wantPtrs := 1, 1
			switch v {
			case "commit":
				g.write(t, "", 3)
			case "emptied":
				if err := os.Remove(g.app); err != nil {
					t.Fatal(err)
				}
				want, wantPtrs = 0, 0
			}
			f, p, ok := g.waitBook(t, d, want, wantPtrs)
			dup, miss := g.once()
			if !ok || !f.Lossless || len(dup)+len(miss) > 0 {
				t.Errorf("want settled, filesTracked %d, %d pointer files, lossless, each line once; got settled %v filesTracked %d rows %+v pointers %v lossless %v lostTails %d twice %v missing %v",
					want, wantPtrs, f.Settled, f.FilesTracked, f.Files, p, f.Lossless, f.LostTails, dup, miss)
			}
		})
	}
}

// TestRev30BOKReloadExcludesHeldPath: a held pointer (create + compress,
// a.log empty) and a reload that excludes ./logs/a.log: within 20 s
// filesTracked 0 and no pointer file left (the file is out of the glob);
// 3 lines then written to a.log and a reload that takes the exclusion
// back: they are read from its start, each line once, lossless.
func TestRev30BOKReloadExcludesHeldPath(t *testing.T) {
	t.Parallel()
	g, d := rev30BHeldTwice(t, 0)
	tmpl := g.e.tmpl
	excl := strings.Replace(tmpl, "    path: ./logs/*.log\n", "    path: ./logs/*.log\n    exclude: [./logs/a.log]\n", 1)
	g.e.tmpl = excl
	reconfig(t, g.e, d, excl)
	if code, _, body := request(t, d, http.MethodPost, "/admin/reload", "", nil); code != 200 {
		t.Fatalf("reload: %d %s", code, body)
	}
	if f, p, ok := g.waitBook(t, d, 0, 0); !ok {
		t.Errorf("after the reload excluding a.log: want filesTracked 0 and no pointer file within 20 s, got filesTracked %d rows %+v pointers %v", f.FilesTracked, f.Files, p)
	}
	g.write(t, "", 3)
	g.e.tmpl = tmpl
	reconfig(t, g.e, d, tmpl)
	if code, _, body := request(t, d, http.MethodPost, "/admin/reload", "", nil); code != 200 {
		t.Fatalf("reload: %d %s", code, body)
	}
	f := g.settle(t, d, "a.log's lines", nil)
	time.Sleep(500 * time.Millisecond)
	f = g.settle(t, d, "a.log's lines", nil)
	if dup, miss := g.once(); len(dup)+len(miss) > 0 || !f.Lossless {
		t.Errorf("after the reload back: twice %v missing %v lossless %v lostTails %d", dup, miss, f.Lossless, f.LostTails)
	}
}

// rev30BOnce: how many times each line is in the exactlyOnce sink.
func (g *rev30BGlobEnv) once() (dup, missing []string) {
	objs, _ := aud11AReadOnce(g.e.path("out/once.jsonl"))
	n := map[string]int{}
	for _, o := range objs {
		n[o.Line]++
		if n[o.Line] == 2 {
			dup = append(dup, strings.Fields(o.Line)[1])
		}
	}
	for _, s := range g.all {
		if n[s] == 0 {
			missing = append(missing, strings.Fields(s)[1])
		}
	}
	return dup, missing
}

// TestRev30BXLateLinesHeldGzReadAgain: DESIGN §2 "The duplicates after a
// crash are exactly the lines acknowledged since the last commit reached
// the pointer file — never a gap; the only other re-delivery is a restored
// sink's catch-up (§11)"; README "a file read to its end, committed and
// closed, then deleted: nothing; compressed … afterwards (create +
// compress), it is not read again after a restart". A glob feed
// ./logs/*.log, a.log (5 lines, 115 bytes; big: 250 lines, 5.75 KiB) read
// and committed; logrotate create + compress without delaycompress (a.log
// → a.log.1, a new empty a.log, a.log.1 gzipped to a.log.1.gz and
// deleted); the application, not reopened yet, appends 3 lines to its old
// descriptor (the deleted inode, after gzip read it). tailfeed reads and
// commits them (every line once, settled); then a clean stop (or kill -9
// once settled) and a restart, nothing written meanwhile.
// Observed: the restart reads a.log.1.gz again from its start under a new
// epoch ("reset" line naming the .gz's key): the first 5 lines twice in the
// exactlyOnce sink (not skipped: another epoch), lossless true. Expected:
// each line once — nothing was acknowledged after the last commit. Before
// c4743fd: each line once (the source reset the pointer to the empty
// record at the deletion, whose "forgotten" line names the 115 bytes, so
// the .gz is known; the 3 late lines were delivered downgraded).
// Suspected cause: source/file/forget.go:152 (holdDeleted: the record is
// kept and the reader stays positioned, r.noForget) — the late lines move
// the kept record past the .gz's end and grow its fingerprint to 160
// bytes (glob.go markHeld writes held end 160), which the 115-byte .gz no
// longer matches, so the restart that takes the held pointer for the
// empty a.log (adoptByPath) reads the .gz as a later generation (DESIGN
// §4's mtime rule) from 0. Observed figures: 5 of 8 lines twice (stop and
// kill); big: 250 of 253 twice — there the 4 KiB fingerprint still matches
// the .gz, but the .gz is shorter than the record's offset (5,795) and is
// not taken for the pointer's file either ("the pointer's file is not
// found as it was"; "reading a later generation of the input first:
// a.log.1.gz"). lossless true, lostTails 0 in all four. The .gz keeps
// a.log.1's mtime (as gzip does); the late lines come within a second of
// the rotation, as an application writing on before it reopens its log
// does.
func TestRev30BXLateLinesHeldGzReadAgain(t *testing.T) {
	for _, v := range []string{"stop", "kill", "bigStop", "bigKill"} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			g := rev30BNewEnv(t, "rotateWaitMillis: 300", "rotateWaitMillis: 3000")
			n := 5
			if strings.HasPrefix(v, "big") {
				n = 250
			}
			g.write(t, "", n)
			d := g.e.start()
			g.settle(t, d, "a.log read", nil)
			w, err := os.OpenFile(g.app, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			rev30BGzRotate(t, g.app)
			waitUntil(t, "the deletion seen by the source", 10*time.Second, func() bool {
				return strings.Contains(d.log(), "input file deleted after every line of it was committed")
			})
			for range 3 {
				s := fmt.Sprintf("a #%06d late", g.seq)
				g.seq++
				g.all = append(g.all, s)
				if _, err := w.WriteString(s + "\n"); err != nil {
					t.Fatal(err)
				}
			}
			f := g.settle(t, d, "the deleted file GONE", func(f rev30BFeed) bool { return rev30BCount(f, "GONE") == 1 })
			if dup, miss := g.once(); len(dup)+len(miss) > 0 {
				t.Fatalf("before the restart: twice %v, missing %v", dup, miss)
			}
			if strings.HasSuffix(v, "Kill") || v == "kill" {
				d.kill()
			} else {
				d.stop()
			}
			d = g.e.start()
			f = g.settle(t, d, "the restart", nil)
			time.Sleep(500 * time.Millisecond) // a re-read shows by now
			f = g.settle(t, d, "the restart", nil)
			dup, miss := g.once()
			_, ep := g.reasons()
			det := ""
			if f.Detail != nil {
				det = *f.Detail
			}
			if len(dup) > 0 || len(miss) > 0 || !f.Lossless {
				t.Errorf("%d lines written, each delivered and committed once before the restart, nothing written since; after it: %d twice %v, missing %v; lossless %v lostTails %d lostBytes %d detail %q; logs %v; epochs file:\n%s",
					len(g.all), len(dup), dup, miss, f.Lossless, f.LostTails, f.LostBytes, det, rev30BLs(g.e.path("logs")), ep)
			}
		})
	}
}

func rev30BLs(dir string) []string {
	ents, _ := os.ReadDir(dir)
	var out []string
	for _, e := range ents {
		if fi, err := e.Info(); err == nil {
			out = append(out, fmt.Sprintf("%s(%d)", e.Name(), fi.Size()))
		}
	}
	return out
}

// rev30BDelayRotate is logrotate's create + compress + delaycompress on
// p: p.1 → p.2.gz (earlier .gz shifted up, p.1 deleted), p → p.1, a new
// empty p.
func rev30BDelayRotate(t *testing.T, p string) {
	t.Helper()
	for i := 30; i >= 2; i-- {
		if _, err := os.Stat(fmt.Sprintf("%s.%d.gz", p, i)); err == nil {
			if err := os.Rename(fmt.Sprintf("%s.%d.gz", p, i), fmt.Sprintf("%s.%d.gz", p, i+1)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := os.Stat(p + ".1"); err == nil {
		rev30BGzip(t, p+".1", p+".2.gz")
		if err := os.Remove(p + ".1"); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Rename(p, p+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRev30BXIdleRotationsHeldUnbounded: DESIGN §10 "Forgetting. The
// pointer of a stream whose file is gone, was read to its end and is fully
// acknowledged is deleted after forgetAfterMillis" and "Memory grows with
// open files, not with tracked ones"; README (Many files per feed) names
// one exception: the pointer kept for a live rotation's empty new file
// ("`forgetAfterMillis` does not remove it before then (the new file may
// stay empty for days)") — one record, the path's. A glob feed
// ./logs/*.log, forgetAfterMillis 800: a.log (5 lines) read, then 9
// rotations of a.log (create + compress + delaycompress), the application
// idle: each new a.log stays empty (and is rotated anyway: logrotate's
// default ifempty, e.g. daily).
// Observed: after the 9th rotation filesTracked 10, 9 GONE rows in
// ?files=1 (the first file, and one per rotated empty file: offset 0,
// path a.log.1, deleted since), 9 pointer files in state/feeds/app/, all
// past forgetAfterMillis, 25 "held" lines in the epochs file. Each empty
// file's stream got a pointer (bound while empty) as it was read out of
// the glob at a.log.1; deleted by the next rotation (compressed) with the
// next a.log empty, it is held as well, and nothing lets it go until a.log
// gets a commit (then all go: checked at the end). Expected: bounded — at
// most the path's one held record (filesTracked <= 3, <= 2 pointer files).
// Before c4743fd: passes (the held pointer went once its kept a.log.1 was
// deleted). With compress and no delaycompress the same growth shows
// whenever the renamed empty file's stream opens before gzip deletes it
// (a race: 3 to 9 of 9 held in runs here; before c4743fd: <= 1 pointer
// file).
// Suspected cause: source/file/forget.go:152 (the source keeps the empty
// file's bound record: holdDeleted) with glob.go forgetOrHold (holds
// deleted files too) and forgetHeld (no longer lets a held pointer go
// when its kept file is deleted: the removed `case !exists(s.heldAt,
// s.key)`), so each held empty file's pointer is kept alongside the
// first one, forever while the path stays empty.
func TestRev30BXIdleRotationsHeldUnbounded(t *testing.T) {
	t.Parallel()
	g := rev30BNewEnv(t)
	g.write(t, "", 5)
	d := g.e.start()
	g.settle(t, d, "a.log read", nil)
	var f rev30BFeed
	for range 9 {
		rev30BDelayRotate(t, g.app)
		time.Sleep(700 * time.Millisecond) // the glob sees it
		f = g.settle(t, d, "the rotation seen", nil)
	}
	time.Sleep(1200 * time.Millisecond) // > forgetAfterMillis
	f = g.settle(t, d, "idle", nil)
	r, _ := g.reasons()
	if p := g.ptrs(); f.FilesTracked > 3 || len(p) > 2 {
		t.Errorf("one path rotated 9 times, idle: filesTracked %d (GONE rows %d), %d pointer files in state/feeds/app, epochs lines %v; want filesTracked <= 3, <= 2 pointer files (the path's held record); rows %+v",
			f.FilesTracked, rev30BCount(f, "GONE"), len(p), r, f.Files)
	}
	// Once a.log gets a line, every held pointer goes.
	g.write(t, "", 3)
	if f, p, ok := g.waitBook(t, d, 1, 1); !ok {
		t.Errorf("after 3 lines to a.log: want filesTracked 1 and 1 pointer file within 20 s, got %d, %v", f.FilesTracked, p)
	}
}

// TestRev30BOKRestartWithHeld: the held pointer (create + compress, a.log
// empty, rotations 2.6 s apart: DESIGN §4's 2 s rule out of play) and an
// idle rotation of the empty a.log, then a clean stop or a kill -9 and a
// restart with nothing written: lossless, each line once, and within 20 s
// filesTracked 1 and 1 pointer file (the one a.log took).
func TestRev30BOKRestartWithHeld(t *testing.T) {
	for _, v := range []string{"stop", "kill"} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			g := rev30BNewEnv(t)
			g.write(t, "", 5)
			d := g.e.start()
			g.settle(t, d, "a.log read", nil)
			time.Sleep(aud11AGap)
			rev30BGzRotate(t, g.app)
			g.settle(t, d, "the rotated file GONE", func(f rev30BFeed) bool { return rev30BCount(f, "GONE") == 1 })
			time.Sleep(aud11AGap)
			rev30BGzRotate(t, g.app)
			g.settle(t, d, "the idle rotation seen", func(f rev30BFeed) bool { return rev30BCount(f, "GONE") == 2 })
			time.Sleep(aud11AGap)
			if v == "kill" {
				d.kill()
			} else {
				d.stop()
			}
			d = g.e.start()
			g.settle(t, d, "restart", nil)
			f, p, ok := g.waitBook(t, d, 1, 1)
			dup, miss := g.once()
			if !ok || !f.Lossless || len(dup)+len(miss) > 0 {
				t.Errorf("after the restart: settled %v filesTracked %d pointers %v lossless %v lostTails %d twice %v missing %v", f.Settled, f.FilesTracked, p, f.Lossless, f.LostTails, dup, miss)
			}
		})
	}
}

// TestRev30BXHeldLineWrittenTwice: judgement call. README (Many files per
// feed): "When it keeps the pointer, tailfeed appends a `held` line to the
// feed's epochs file" (one). One live create + compress rotation of a.log
// (5 lines, read) leaving a.log empty: the epochs file gets 2 identical
// held lines for the kept pointer (same epoch, end 115, nextFileKey), 0.3
// s apart. Expected 1. Harmless for a start (the last line of an epoch
// counts) but the epochs file, never compacted, grows by one more line per
// rotation. Before c4743fd: no held line at all in this case (nothing was
// kept). Cause: glob.go holdDeleted (the source's hook) appends the line,
// then forgetOrHold → markHeld (glob.go:5684) appends it again: markHeld
// does not know the hook wrote it (s.heldMark/heldLive are not set by the
// hook, which runs without the lock).
func TestRev30BXHeldLineWrittenTwice(t *testing.T) {
	t.Parallel()
	g := rev30BNewEnv(t)
	g.write(t, "", 5)
	d := g.e.start()
	g.settle(t, d, "a.log read", nil)
	rev30BGzRotate(t, g.app)
	g.settle(t, d, "the rotated file GONE", func(f rev30BFeed) bool { return rev30BCount(f, "GONE") == 1 })
	time.Sleep(1200 * time.Millisecond)
	g.settle(t, d, "idle", nil)
	r, ep := g.reasons()
	if r["held"] > 1 {
		t.Errorf("one kept pointer, nothing else happened: %d held lines, want 1 (at most); epochs file:\n%s", r["held"], ep)
	}
}

// TestRev30BXLateLinesHeldGzReadAgainLogrotate: TestRev30BXLateLinesHeldGzReadAgain
// with the real logrotate (create + compress, no delaycompress) and a pull
// consumer acknowledging everything (aud11ANewGzEnv): a.log (10 lines) read
// and settled, logrotate run, 3 lines appended to the application's old
// descriptor (the deleted a.log.1's inode) and delivered, the stream closed
// (GONE), a clean stop and a start. Observed: the 10 lines of a.log.1.gz
// twice in the exactlyOnce sink and the count (a.log 23, want 13). Before
// c4743fd: each once. Same cause.
func TestRev30BXLateLinesHeldGzReadAgainLogrotate(t *testing.T) {
	t.Parallel()
	g := aud11ANewGzEnv(t, "./logs/*.log")
	g.write(t, 10)
	d := g.e.start()
	g.settle(t, d)
	w, err := os.OpenFile(g.app, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	g.rot()
	waitUntil(t, "the deletion seen by the source", 10*time.Second, func() bool {
		return strings.Contains(d.log(), "input file deleted after every line of it was committed")
	})
	for range 3 {
		s := fmt.Sprintf("a.log #%06d late", g.seq)
		g.seq++
		g.lines = append(g.lines, s)
		if _, err := w.WriteString(s + "\n"); err != nil {
			t.Fatal(err)
		}
	}
	g.settle(t, d)
	waitUntil(t, "the deleted file's stream closed (GONE)", 20*time.Second, func() bool {
		f, _, ok := rev30BFiles(t, d)
		return ok && rev30BCount(f, "GONE") == 1
	})
	d.stop()
	d = g.e.start()
	g.settle(t, d)
	time.Sleep(500 * time.Millisecond)
	g.settle(t, d)
	r, _ := statusRaw(t, d)
	g.check(t, d, r)
}

// TestRev30BOKKillSoonAfterGzRotation: create + compress (a.log.1 deleted
// at once, a.log empty) and a kill -9 0 to 600 ms later, nothing written:
// the restart is lossless, each line once.
func TestRev30BOKKillSoonAfterGzRotation(t *testing.T) {
	for _, wait := range []time.Duration{0, 50 * time.Millisecond, 150 * time.Millisecond, 300 * time.Millisecond, 600 * time.Millisecond} {
		t.Run(wait.String(), func(t *testing.T) {
			t.Parallel()
			g := rev30BNewEnv(t)
			g.write(t, "", 5)
			d := g.e.start()
			g.settle(t, d, "a.log read", nil)
			rev30BGzRotate(t, g.app)
			time.Sleep(wait)
			d.kill()
			d = g.e.start()
			g.settle(t, d, "restart", nil)
			time.Sleep(500 * time.Millisecond)
			f := g.settle(t, d, "restart", nil)
			if dup, miss := g.once(); !f.Lossless || len(dup)+len(miss) > 0 {
				t.Errorf("kill -9 %v after the rotation: lossless %v lostTails %d, twice %v, missing %v", wait, f.Lossless, f.LostTails, dup, miss)
			}
		})
	}
}

// TestRev30BOKKillBeforeLateWrittenDeletedFileCloses: a.log renamed out,
// an empty a.log made, the renamed file deleted (no copy); 3 lines then
// appended to the writer's old descriptor (the deleted inode) and
// delivered; a kill -9 within rotateWaitMillis (5 s) of them, before the
// stream closes. The restart delivers nothing twice and misses nothing. It
// now counts lostTails 1 (lossless false): the kept record names the
// deleted file at its new end, the held line written at the deletion at
// the old one; before c4743fd lossless true (the pointer had been reset to
// the empty record, the late lines delivered downgraded). Judgement call,
// not a finding: DESIGN §4 clears a deleted file only "once such a file is
// closed with every line acknowledged", and a writer could have appended
// after the kill (README "What can be lost": uncounted before).
func TestRev30BOKKillBeforeLateWrittenDeletedFileCloses(t *testing.T) {
	t.Parallel()
	g := rev30BNewEnv(t, "rotateWaitMillis: 300", "rotateWaitMillis: 5000")
	g.write(t, "", 5)
	d := g.e.start()
	g.settle(t, d, "a.log read", nil)
	w, err := os.OpenFile(g.app, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := os.Rename(g.app, g.app+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(g.app, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(g.app + ".1"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the deletion seen by the source", 10*time.Second, func() bool {
		return strings.Contains(d.log(), "input file deleted after every line of it was committed")
	})
	for range 3 {
		s := fmt.Sprintf("a #%06d late", g.seq)
		g.seq++
		g.all = append(g.all, s)
		if _, err := w.WriteString(s + "\n"); err != nil {
			t.Fatal(err)
		}
	}
	g.settle(t, d, "the late lines", nil)
	d.kill()
	d = g.e.start()
	g.settle(t, d, "restart", nil)
	time.Sleep(500 * time.Millisecond)
	f := g.settle(t, d, "restart", nil)
	dup, miss := g.once()
	t.Logf("after the restart: lossless %v lostTails %d", f.Lossless, f.LostTails)
	if len(dup)+len(miss) > 0 {
		t.Errorf("after the restart: twice %v, missing %v", dup, miss)
	}
}

// TestRev30BOKHeldPointerCLI: the held pointer (create + compress, a.log
// empty) read by `tailfeed pointer show --json`: it names the deleted
// file's key at its end (offset 115, fingerprint over 115 bytes), the
// ?files=1 GONE row shows the same key and offset; `tailfeed status
// --wait-settled` exits 0 (settled, lossless).
func TestRev30BOKHeldPointerCLI(t *testing.T) {
	t.Parallel()
	g := rev30BNewEnv(t)
	g.write(t, "", 5)
	d := g.e.start()
	g.settle(t, d, "a.log read", nil)
	rev30BGzRotate(t, g.app)
	f := g.settle(t, d, "the rotated file GONE", func(f rev30BFeed) bool { return rev30BCount(f, "GONE") == 1 })
	p := g.ptrs()
	if len(p) != 1 {
		t.Fatalf("pointer files %v, want 1", p)
	}
	rec, _ := showPointer(t, g.e.path("state/feeds/app/"+p[0]))
	var gone rev30BFile
	for _, r := range f.Files {
		if r.State == "GONE" {
			gone = r
		}
	}
	if rec.Offset != 115 || rec.FingerprintLength != 115 || rec.FileKey != gone.FileKey || gone.Offset != 115 {
		t.Errorf("held pointer %+v, GONE row %+v: want offset 115, fingerprint length 115, the row's key and offset", rec, gone)
	}
	if out, errOut, code := cli(t, "status", "--addr", d.addr, "--wait-settled", "10s"); code != 0 {
		t.Errorf("tailfeed status: exit %d, want 0: %s %s", code, out, errOut)
	}
}

// TestRev30BOKManyHeldRestart: the accumulation of
// TestRev30BXIdleRotationsHeldUnbounded (6 idle delaycompress rotations:
// filesTracked 7, 6 pointer files) ends at a restart: after a clean stop
// or a kill -9 and a start, lossless, each line once, filesTracked 1 and 1
// pointer file; 3 lines then written are delivered once.
func TestRev30BOKManyHeldRestart(t *testing.T) {
	for _, v := range []string{"stop", "kill"} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			g := rev30BNewEnv(t)
			g.write(t, "", 5)
			d := g.e.start()
			g.settle(t, d, "a.log read", nil)
			time.Sleep(aud11AGap)
			for range 6 {
				rev30BDelayRotate(t, g.app)
				time.Sleep(700 * time.Millisecond)
				g.settle(t, d, "the rotation seen", nil)
			}
			if v == "kill" {
				d.kill()
			} else {
				d.stop()
			}
			d = g.e.start()
			g.settle(t, d, "restart", nil)
			f, p, ok := g.waitBook(t, d, 1, 1)
			if dup, miss := g.once(); !ok || !f.Lossless || len(dup)+len(miss) > 0 {
				t.Errorf("after the restart: settled %v filesTracked %d pointers %v lossless %v lostTails %d twice %v missing %v", f.Settled, f.FilesTracked, p, f.Lossless, f.LostTails, dup, miss)
			}
			g.write(t, "", 3)
			f, p, ok = g.waitBook(t, d, 1, 1)
			if dup, miss := g.once(); !ok || !f.Lossless || len(dup)+len(miss) > 0 {
				t.Errorf("after 3 lines: settled %v filesTracked %d pointers %v lossless %v twice %v missing %v", f.Settled, f.FilesTracked, p, f.Lossless, dup, miss)
			}
		})
	}
}

// TestRev30BOKLateLinesThenNewFileWritten: TestRev30BXLateLinesHeldGzReadAgain
// (stop) but a.log gets 3 lines, delivered and committed, before the
// stop: the held pointer goes (reset), and the restart reads nothing
// twice: the finding needs the path's new file still empty at the stop.
func TestRev30BOKLateLinesThenNewFileWritten(t *testing.T) {
	t.Parallel()
	g := rev30BNewEnv(t, "rotateWaitMillis: 300", "rotateWaitMillis: 3000")
	g.write(t, "", 5)
	d := g.e.start()
	g.settle(t, d, "a.log read", nil)
	w, err := os.OpenFile(g.app, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rev30BGzRotate(t, g.app)
	waitUntil(t, "the deletion seen by the source", 10*time.Second, func() bool {
		return strings.Contains(d.log(), "input file deleted after every line of it was committed")
	})
	for range 3 {
		s := fmt.Sprintf("a #%06d late", g.seq)
		g.seq++
		g.all = append(g.all, s)
		if _, err := w.WriteString(s + "\n"); err != nil {
			t.Fatal(err)
		}
	}
	g.settle(t, d, "the deleted file GONE", func(f rev30BFeed) bool { return rev30BCount(f, "GONE") == 1 })
	g.write(t, "", 3)
	g.waitBook(t, d, 2, 2)
	d.stop()
	d = g.e.start()
	g.settle(t, d, "the restart", nil)
	time.Sleep(500 * time.Millisecond)
	f := g.settle(t, d, "the restart", nil)
	if dup, miss := g.once(); len(dup)+len(miss) > 0 || !f.Lossless {
		t.Errorf("after the restart: twice %v, missing %v, lossless %v lostTails %d", dup, miss, f.Lossless, f.LostTails)
	}
}
