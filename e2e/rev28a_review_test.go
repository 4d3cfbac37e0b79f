package e2e

// Review of rev28a (target stamps at start and at reload).

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// rev28ACfg is aud10ACfg with the status address listen.
func rev28ACfg(listen, procs string) string {
	return strings.Replace(aud10ACfg("", procs), addrPlaceholder, listen, 1)
}

// rev28AHook is a webhook processor p to a dead port (url port), onFailure
// deadLetter, fast retries.
func rev28AHook(port int) string {
	return fmt.Sprintf("  - {name: p, feed: app, type: webhook, url: \"http://127.0.0.1:%d/in\", timeoutMillis: 200, onFailure: deadLetter, retry: {initialMillis: 10, maxMillis: 20, attempts: 2}}\n", port)
}

// TestRev28ABFailedStartGivesUpDeadLetters: a start that fails (its
// status.listen is taken) on a config that changed p's url has already
// moved p's state aside and given its dead letter up (losses.jsonl,
// released), and stamped the new url: the operator who goes back to the
// config that ran finds p's dead letter gone (deadLettered 0, released 1)
// though no tailfeed ever ran on the changed config. A reload that fails
// undoes the move (DESIGN §12: the daemon "runs on unchanged").
func TestRev28ABFailedStartGivesUpDeadLetters(t *testing.T) {
	t.Parallel()
	good := aud10AFile("out", "app", "./out.log") + rev28AHook(1)
	e := newEnv(t, aud10ACfg("", good))
	appendTo(t, e.path("in.log"), "a\n")
	d := e.start()
	d.waitFor("one dead letter", 30*time.Second, func(r *report) bool {
		return r.Settled && r.feed(t, "app").DeadLettered == 1
	})
	d.stop()

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	e.tmpl = rev28ACfg(busy.Addr().String(), aud10AFile("out", "app", "./out.log")+rev28AHook(2))
	bad := e.spawn()
	if code := bad.wait(60 * time.Second); code == 0 {
		t.Fatalf("start with a taken status.listen exited 0")
	}
	busy.Close()

	e.tmpl = aud10ACfg("", good)
	d = e.start()
	r := d.waitSettled(30 * time.Second)
	f := r.feed(t, "app")
	d.stop()
	olds, _ := os.ReadDir(e.path("state/state"))
	var names []string
	for _, o := range olds {
		names = append(names, o.Name())
	}
	if f.DeadLettered != 1 {
		t.Errorf("back on the config that ran, after a start that failed (exit != 0) on a changed url: deadLettered %d (released %d, lossless %v), want deadLettered 1 (the failed start changed nothing); state/: %v",
			f.DeadLettered, f.Released, f.Lossless, names)
	}
}

// TestRev28ACMovedToOtherFeedWithNewPathByReload: a reload moves the
// exactlyOnce file processor out from feed app to feed app2 and changes its
// path to an existing file. Its target changed (DESIGN §12: state kept
// "only when its target is unchanged"), as a start finds through the stamp
// (targets.go startAside); the reload neither moves the record aside (the
// changed-target loop looks for it on the same feed only, the added-back
// loop skips a processor the old config named on any feed) and then stamps
// the new target over the old one, so not even a restart catches it.
func TestRev28ACMovedToOtherFeedWithNewPathByReload(t *testing.T) {
	t.Parallel()
	two := func(feed, path string) string {
		return `dataDir: ./state
status: {listen: "` + addrPlaceholder + `", token: ` + ctToken + `}
shutdownTimeoutMillis: 1000
feeds:
  - name: app
    path: ./in.log
    pollIntervalMillis: 50
  - name: app2
    path: ./in2.log
    pollIntervalMillis: 50
processors:
  - {name: keep, feed: app, type: file, path: ./keep.log}
  - {name: keep2, feed: app2, type: file, path: ./keep2.log}
` + fmt.Sprintf("  - {name: out, feed: %s, type: file, exactlyOnce: true, path: %s}\n", feed, path)
	}
	e := newEnv(t, two("app", "./out1.log"))
	appendTo(t, e.path("in.log"), "a\nb\nc\n")
	appendTo(t, e.path("in2.log"), "")
	d := e.start()
	aud10AWaitContent(t, e.path("out1.log"), "a\nb\nc\n")
	d.waitSettled(30 * time.Second)
	foreign := "important data 1\nimportant data 2\n"
	if err := os.WriteFile(e.path("other.log"), []byte(foreign), 0o644); err != nil {
		t.Fatal(err)
	}
	aud10AReload(t, e, d, two("app2", "./other.log"))
	d.waitSettled(30 * time.Second)
	appendTo(t, e.path("in2.log"), "x\n")
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) && !strings.Contains(aud10AReadFile(e.path("other.log")), "x\n") {
		time.Sleep(50 * time.Millisecond)
	}
	got := aud10AReadFile(e.path("other.log"))
	d.stop()
	if !strings.HasPrefix(got, foreign) {
		t.Errorf("after a reload that moved the exactlyOnce sink to feed app2 and path ./other.log (an existing file of %d bytes), that file holds %q: the old record was applied to a foreign file",
			len(foreign), got)
	}
}

// rev28ATwoFeeds is a config with feeds app (./in.log, processor out) and
// app2 (./in2.log, processor out2) and the processors procs.
func rev28ATwoFeeds(procs string) string {
	return `dataDir: ./state
status: {listen: "` + addrPlaceholder + `", token: ` + ctToken + `}
shutdownTimeoutMillis: 1000
feeds:
  - name: app
    path: ./in.log
    pollIntervalMillis: 50
  - name: app2
    path: ./in2.log
    pollIntervalMillis: 50
processors:
  - {name: out, feed: app, type: file, path: ./out.log}
  - {name: out2, feed: app2, type: file, path: ./out2.log}
` + procs
}

// TestRev28ADGivenUpOnOtherFeedLeavesOwnFeedLossless: p's dead letter is a
// line of feed app; between runs p moves to feed app2 and its url changes.
// The start gives the dead letter up (targets.go startAside) but counts it
// for app2 (pc.Feed) and names app2 in losses.jsonl: app, whose line it
// is, reports deadLettered 0, released 0 and lossless true. DELETE
// /admin/dlq counts a purged entry "in released of the feed each entry
// named" (README).
func TestRev28ADGivenUpOnOtherFeedLeavesOwnFeedLossless(t *testing.T) {
	t.Parallel()
	hook := func(feed string, port int) string {
		return fmt.Sprintf("  - {name: p, feed: %s, type: webhook, url: \"http://127.0.0.1:%d/in\", timeoutMillis: 200, onFailure: deadLetter, retry: {initialMillis: 10, maxMillis: 20, attempts: 2}}\n", feed, port)
	}
	e := newEnv(t, rev28ATwoFeeds(hook("app", 1)))
	appendTo(t, e.path("in.log"), "a\n")
	appendTo(t, e.path("in2.log"), "")
	d := e.start()
	d.waitFor("one dead letter", 30*time.Second, func(r *report) bool {
		return r.Settled && r.feed(t, "app").DeadLettered == 1
	})
	d.stop()
	e.tmpl = rev28ATwoFeeds(hook("app2", 2))
	d = e.start()
	r := d.waitSettled(30 * time.Second)
	a, a2 := r.feed(t, "app"), r.feed(t, "app2")
	d.stop()
	if a.Lossless {
		t.Errorf("p's dead letter (a line of app) given up at a start that moved p to app2 with a new url: app deadLettered %d released %d lossless %v; app2 deadLettered %d released %d lossless %v; want app lossless false",
			a.DeadLettered, a.Released, a.Lossless, a2.DeadLettered, a2.Released, a2.Lossless)
	}
}

// TestRev28AEReaddedByReloadWithNewURL: p (1 dead letter) is removed by a
// reload, then added back by a reload with another url: its dead letter is
// given up (README §Reload: counted in released, lossless false,
// deadLettered drops).
func TestRev28AEReaddedByReloadWithNewURL(t *testing.T) {
	t.Parallel()
	base := aud10AFile("out", "app", "./out.log")
	e := newEnv(t, aud10ACfg("", base+rev28AHook(1)))
	appendTo(t, e.path("in.log"), "a\n")
	d := e.start()
	d.waitFor("one dead letter", 30*time.Second, func(r *report) bool {
		return r.Settled && r.feed(t, "app").DeadLettered == 1
	})
	aud10AReload(t, e, d, aud10ACfg("", base))
	d.waitSettled(30 * time.Second)
	aud10AReload(t, e, d, aud10ACfg("", base+rev28AHook(2)))
	r := d.waitSettled(30 * time.Second)
	f := r.feed(t, "app")
	d.stop()
	if f.DeadLettered != 0 || f.Released != 1 || f.Lossless {
		t.Errorf("p added back by a reload with another url: deadLettered %d released %d lossless %v, want 0, 1, false", f.DeadLettered, f.Released, f.Lossless)
	}
	d = e.start()
	r = d.waitSettled(30 * time.Second)
	f = r.feed(t, "app")
	d.stop()
	if f.DeadLettered != 0 || f.Lossless {
		t.Errorf("after a restart: deadLettered %d released %d lossless %v, want 0, false", f.DeadLettered, f.Released, f.Lossless)
	}
}

// TestRev28AFUnstampedReloadLosesNewTargetsDeadLetters: a reload changes
// p's url while the stamp cannot be written (here a directory where
// WriteAtomic puts its temp file; in life a full disk). Found: the reload
// moved p's state aside, answered 200 and logged an ERROR only; p then
// dead-lettered a line under its new url, and the next start on the same
// config found the old url's stamp and gave that dead letter up. Now the
// stamps are written before anything new is built, and one that cannot be
// written rolls the reload back (400 naming it; p's state moved back, its
// dead letter still counted); once it can, the reload goes through and a
// restart keeps what p did under the new url.
func TestRev28AFUnstampedReloadLosesNewTargetsDeadLetters(t *testing.T) {
	t.Parallel()
	base := aud10AFile("out", "app", "./out.log")
	e := newEnv(t, aud10ACfg("", base+rev28AHook(1)))
	appendTo(t, e.path("in.log"), "a\n")
	d := e.start()
	d.waitFor("one dead letter", 30*time.Second, func(r *report) bool {
		return r.Settled && r.feed(t, "app").DeadLettered == 1
	})
	block := e.path("state/state/targets/p.target.tmp")
	if err := os.MkdirAll(block+"/x", 0o700); err != nil {
		t.Fatal(err)
	}
	next := aud10ACfg("", base+rev28AHook(2))
	e.tmpl = next
	reconfig(t, e, d, next)
	code, _, body := request(t, d, http.MethodPost, "/admin/reload", ctToken, nil)
	if code == http.StatusOK || !strings.Contains(string(body), "cannot be stamped") {
		t.Fatalf("reload with the stamp unwritable: %d %s, want an error naming the stamp (rolled back)", code, body)
	}
	if r, err := d.status(); err != nil {
		t.Fatal(err)
	} else if f := r.feed(t, "app"); f.DeadLettered != 1 || f.Released != 0 {
		t.Fatalf("after the rolled-back reload: deadLettered %d released %d, want 1, 0 (p's state moved back)", f.DeadLettered, f.Released)
	}
	if err := os.RemoveAll(block); err != nil {
		t.Fatal(err)
	}
	aud10AReload(t, e, d, next)
	appendTo(t, e.path("in.log"), "b\n")
	d.waitFor("the new url's dead letter", 30*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return r.Settled && f.DeadLettered == 1 && f.Released == 1 && f.Pointer != nil && f.Pointer.Offset == 4
	})
	d.stop()
	d = e.start()
	r := d.waitSettled(30 * time.Second)
	f := r.feed(t, "app")
	d.stop()
	if f.DeadLettered != 1 {
		t.Errorf("restart on the config the reload applied (p's url unchanged since): deadLettered %d released %d, want 1 (the dead letter p made under its url kept)", f.DeadLettered, f.Released)
	}
}

// TestRev28AGKillAfterReloadKeepsNewTargetsState (probe): a reload changes
// p's url (its old dead letter given up), p dead-letters a line under the
// new url, kill -9; the start on the same config keeps that dead letter
// and gives nothing up again (released counts the first only, once).
func TestRev28AGKillAfterReloadKeepsNewTargetsState(t *testing.T) {
	t.Parallel()
	base := aud10AFile("out", "app", "./out.log")
	e := newEnv(t, aud10ACfg("", base+rev28AHook(1)))
	appendTo(t, e.path("in.log"), "a\n")
	d := e.start()
	d.waitFor("one dead letter", 30*time.Second, func(r *report) bool {
		return r.Settled && r.feed(t, "app").DeadLettered == 1
	})
	aud10AReload(t, e, d, aud10ACfg("", base+rev28AHook(2)))
	appendTo(t, e.path("in.log"), "b\n")
	d.waitFor("the new url's dead letter", 30*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return r.Settled && f.DeadLettered == 1 && f.Pointer != nil && f.Pointer.Offset == 4
	})
	d.kill()
	d = e.start()
	r := d.waitSettled(30 * time.Second)
	f := r.feed(t, "app")
	d.stop()
	losses := strings.Count(aud10AReadFile(e.path("state/losses.jsonl")), "\n")
	if f.DeadLettered != 1 || f.Lossless || losses != 1 {
		t.Errorf("after kill -9 and a start on the reloaded config: deadLettered %d released %d lossless %v, losses.jsonl lines %d; want 1, -, false, 1", f.DeadLettered, f.Released, f.Lossless, losses)
	}
}

// TestRev28AHPoisonUnderHoldAtCap (probe): a receiver answering 400 to a
// webhook under onFailure hold (initial 10 ms, max 400 ms) gets the
// request again at the cap only (every gap at least 300 ms).
func TestRev28AHPoisonUnderHoldAtCap(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var times []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		times = append(times, time.Now())
		mu.Unlock()
		w.WriteHeader(http.StatusBadRequest)
	}))
	defer srv.Close()
	hook := fmt.Sprintf("  - {name: p, feed: app, type: webhook, url: %q, timeoutMillis: 500, onFailure: hold, retry: {initialMillis: 10, maxMillis: 400, jitter: 0, attempts: 5}}\n", srv.URL+"/in")
	e := newEnv(t, aud10ACfg("", hook))
	appendTo(t, e.path("in.log"), "a\n")
	d := e.start()
	waitUntil(t, "first POST", 30*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(times) > 0 })
	time.Sleep(1200 * time.Millisecond)
	d.stop()
	mu.Lock()
	defer mu.Unlock()
	var gaps []time.Duration
	short := false
	for i := 1; i < len(times); i++ {
		gaps = append(gaps, times[i].Sub(times[i-1]).Round(time.Millisecond))
		short = short || gaps[len(gaps)-1] < 300*time.Millisecond
	}
	if short {
		t.Errorf("poison under hold: %d POSTs, gaps %v; want the cap (400ms) between them", len(times), gaps)
	}
}

// TestRev28AIExactlyOnceOffThenOnCutsAckedLines: out writes ./out.log with
// exactlyOnce (record: length 4), a run without exactlyOnce appends two
// acknowledged lines (the record stays), and a run with exactlyOnce again
// applies the stale record: the output is cut back to 4 bytes, and the
// pointer is past c and d, so they never come again. The target stamp
// (type and path) does not see the change (adjacent to the change: the
// stamp is what a start now compares; DESIGN §2: no acknowledged line is
// lost).
func TestRev28AIExactlyOnceOffThenOnCutsAckedLines(t *testing.T) {
	t.Parallel()
	eo := func(on bool) string {
		return fmt.Sprintf("  - {name: out, feed: app, type: file, exactlyOnce: %v, path: ./out.log}\n", on)
	}
	e := newEnv(t, aud10ACfg("", eo(true)))
	appendTo(t, e.path("in.log"), "a\nb\n")
	d := e.start()
	aud10AWaitContent(t, e.path("out.log"), "a\nb\n")
	d.waitSettled(30 * time.Second)
	d.stop()
	e.tmpl = aud10ACfg("", eo(false))
	d = e.start()
	appendTo(t, e.path("in.log"), "c\nd\n")
	aud10AWaitContent(t, e.path("out.log"), "a\nb\nc\nd\n")
	d.waitFor("4 lines committed", 30*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return r.Settled && f.Pointer != nil && f.Pointer.Offset == 8
	})
	d.stop()
	e.tmpl = aud10ACfg("", eo(true))
	d = e.start()
	d.waitSettled(30 * time.Second)
	appendTo(t, e.path("in.log"), "e\n")
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) && !strings.Contains(aud10AReadFile(e.path("out.log")), "e\n") {
		time.Sleep(50 * time.Millisecond)
	}
	got := aud10AReadFile(e.path("out.log"))
	d.stop()
	if got != "a\nb\nc\nd\ne\n" {
		t.Errorf("exactlyOnce on, off, on again between runs: out.log holds %q, want %q", got, "a\nb\nc\nd\ne\n")
	}
}

// TestRev28AJGlobSingleTwiceKeepsAckedOutput (probe): single → glob →
// single → glob → single between runs (exactlyOnce file sink, same path):
// every line acknowledged in a glob run stays in the output.
func TestRev28AJGlobSingleTwiceKeepsAckedOutput(t *testing.T) {
	t.Parallel()
	single := aud10ACfg("", aud10AEOFile("eo", "./eo.log"))
	glob := strings.Replace(single, "path: ./in.log", "path: ./in*.log", 1)
	e := newEnv(t, single)
	run := func(cfg, file, line string) {
		t.Helper()
		e.tmpl = cfg
		appendTo(t, e.path(file), line)
		d := e.start()
		waitUntil(t, line+" in eo.log", 30*time.Second, func() bool { return strings.Contains(aud10AReadFile(e.path("eo.log")), line) })
		d.waitSettled(30 * time.Second)
		d.stop()
	}
	run(single, "in.log", "a\n")
	run(glob, "in2.log", "x\n")
	run(single, "in.log", "c\n")
	run(glob, "in2.log", "z\n")
	run(single, "in.log", "d\n")
	got := aud10AReadFile(e.path("eo.log"))
	for _, l := range []string{"a\n", "x\n", "c\n", "z\n", "d\n"} {
		if !strings.Contains(got, l) {
			t.Errorf("after single/glob/single/glob/single runs eo.log is %q: %q missing", got, l)
		}
	}
}
