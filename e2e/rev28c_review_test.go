package e2e

// Review of rev28c (stamps undone with the move aside; pull adopted bytes).

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// rev28CHook is webhook processor p on feed to a dead port.
func rev28CHook(feed string, port int) string {
	return fmt.Sprintf("  - {name: p, feed: %s, type: webhook, url: \"http://127.0.0.1:%d/in\", timeoutMillis: 200, onFailure: deadLetter, retry: {initialMillis: 10, maxMillis: 20, attempts: 2}}\n", feed, port)
}

// TestRev28CAGivenUpForUnrebuiltFeedNotInReleased: p dead-letters a line
// of app, a reload moves p (same url) to app2 (its ledger, naming app,
// kept), then a reload changes p's url on app2: the dead letter is given
// up and losses.jsonl names app, but app is not rebuilt by that reload, so
// giveUpAside has no instance of app to count it in: app's released stays
// 0 while losses.jsonl holds released 1 for it; a restart shows 1.
func TestRev28CAGivenUpForUnrebuiltFeedNotInReleased(t *testing.T) {
	t.Parallel()
	e := newEnv(t, rev28ATwoFeeds(rev28CHook("app", 1)))
	appendTo(t, e.path("in.log"), "a\n")
	appendTo(t, e.path("in2.log"), "")
	d := e.start()
	d.waitFor("one dead letter", 30*time.Second, func(r *report) bool {
		return r.Settled && r.feed(t, "app").DeadLettered == 1
	})
	aud10AReload(t, e, d, rev28ATwoFeeds(rev28CHook("app2", 1)))
	r := d.waitSettled(30 * time.Second)
	a, before2 := r.feed(t, "app"), r.feed(t, "app2")
	t.Logf("after move to app2: app deadLettered %d released %d lossless %v; app2 %d/%d/%v", a.DeadLettered, a.Released, a.Lossless, r.feed(t, "app2").DeadLettered, r.feed(t, "app2").Released, r.feed(t, "app2").Lossless)
	aud10AReload(t, e, d, rev28ATwoFeeds(rev28CHook("app2", 2)))
	r = d.waitSettled(30 * time.Second)
	a, a2 := r.feed(t, "app"), r.feed(t, "app2")
	losses := aud10AReadFile(e.path("state/losses.jsonl"))
	d.stop()
	d = e.start()
	r = d.waitSettled(30 * time.Second)
	ra := r.feed(t, "app")
	d.stop()
	t.Logf("reload2 (%d): app %d/%d/%v app2 %d/%d/%v restart app %d/%d/%v app2 %+v losses %q", before2.DeadLettered, a.DeadLettered, a.Released, a.Lossless, a2.DeadLettered, a2.Released, a2.Lossless, ra.DeadLettered, ra.Released, ra.Lossless, r.feed(t, "app2"), losses)
	if dropped := before2.DeadLettered - a2.DeadLettered; a.Released+a2.Released != dropped {
		t.Errorf("reload changing p's url on app2 (p's dead letter: a line of app, counted in app2's deadLettered): app2 deadLettered %d -> %d, released app %d + app2 %d, want %d (\"deadLettered drops by them and they count in the feed's released\"); lossless app %v app2 %v; after a restart app released %d; losses.jsonl %q",
			before2.DeadLettered, a2.DeadLettered, a.Released, a2.Released, dropped, a.Lossless, a2.Lossless, ra.Released, losses)
	}
}

// TestRev28CBFailedStartKeepsRecord: a start that fails (status.listen
// taken) on a config that changed out's path moves out's state aside and
// back; the new feed built meanwhile must not leave its own record in
// place of the one moved back: back on the config that ran, out gets only
// the new line.
func TestRev28CBFailedStartKeepsRecord(t *testing.T) {
	t.Parallel()
	good := aud10AFile("out", "app", "./out.log")
	e := newEnv(t, aud10ACfg("", good))
	appendTo(t, e.path("in.log"), "a\nb\nc\n")
	d := e.start()
	aud10AWaitContent(t, e.path("out.log"), "a\nb\nc\n")
	d.waitSettled(30 * time.Second)
	d.stop()

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	e.tmpl = rev28ACfg(busy.Addr().String(), aud10AFile("out", "app", "./out2.log"))
	bad := e.spawn()
	if code := bad.wait(60 * time.Second); code == 0 {
		t.Fatalf("start with a taken status.listen exited 0")
	}
	busy.Close()

	e.tmpl = aud10ACfg("", good)
	d = e.start()
	appendTo(t, e.path("in.log"), "d\n")
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) && !strings.Contains(aud10AReadFile(e.path("out.log")), "d\n") {
		time.Sleep(50 * time.Millisecond)
	}
	r := d.waitSettled(30 * time.Second)
	d.stop()
	got := aud10AReadFile(e.path("out.log"))
	if got != "a\nb\nc\nd\n" {
		t.Errorf("back on the config that ran after a failed start: out.log %q, want %q; app %+v; out2.log %q",
			got, "a\nb\nc\nd\n", r.feed(t, "app"), aud10AReadFile(e.path("out2.log")))
	}
}

// TestRev28CCBuildFailureAfterRestampRollsBack: a reload changes p's url
// (p's state moved aside, its dead letter given up, the new stamp written)
// and adds a processor whose feed cannot be built (its path a directory):
// the reload is rolled back; p's dead letter must be back (deadLettered 1,
// released 0, no entry in losses.jsonl) and its old stamp too (a restart
// on the config that runs keeps the dead letter).
func TestRev28CCBuildFailureAfterRestampRollsBack(t *testing.T) {
	t.Parallel()
	base := aud10AFile("out", "app", "./out.log")
	e := newEnv(t, aud10ACfg("", base+rev28AHook(1)))
	appendTo(t, e.path("in.log"), "a\n")
	d := e.start()
	d.waitFor("one dead letter", 30*time.Second, func(r *report) bool {
		return r.Settled && r.feed(t, "app").DeadLettered == 1
	})
	if err := os.MkdirAll(e.path("state/feeds/app3.ptr/x"), 0o700); err != nil {
		t.Fatal(err) // feed app3's pointer cannot be opened: its build fails
	}
	appendTo(t, e.path("in3.log"), "")
	next := aud10ACfg("  - name: app3\n    path: ./in3.log\n    pollIntervalMillis: 50\n", base+rev28AHook(2)+aud10AFile("bad", "app3", "./bad.log"))
	reconfig(t, e, d, next)
	code, _, body := request(t, d, http.MethodPost, "/admin/reload", ctToken, nil)
	if code == http.StatusOK {
		t.Fatalf("reload with an unbuildable processor answered 200")
	}
	t.Logf("reload: %d %s", code, body)
	r := d.waitSettled(30 * time.Second)
	f := r.feed(t, "app")
	losses := aud10AReadFile(e.path("state/losses.jsonl"))
	stamp := aud10AReadFile(e.path("state/state/targets/p.target"))
	e.tmpl = aud10ACfg("", base+rev28AHook(1))
	reconfig(t, e, d, e.tmpl)
	d.stop()
	d = e.start()
	r2 := d.waitSettled(30 * time.Second)
	f2 := r2.feed(t, "app")
	d.stop()
	if f.DeadLettered != 1 || f.Released != 0 || losses != "" || f2.DeadLettered != 1 {
		t.Errorf("reload rolled back: deadLettered %d released %d lossless %v losses.jsonl %q stamp %q; after a restart deadLettered %d released %d lossless %v; want 1, 0, -, empty, and 1 after restart",
			f.DeadLettered, f.Released, f.Lossless, losses, stamp, f2.DeadLettered, f2.Released, f2.Lossless)
	}
}

// TestRev28CDMovedWithNewURL (probe): a reload moves p (1 dead letter, a
// line of app) to app2 and changes its url: the dead letter is given up
// once, counted in app's released, app lossless false.
func TestRev28CDMovedWithNewURL(t *testing.T) {
	t.Parallel()
	e := newEnv(t, rev28ATwoFeeds(rev28CHook("app", 1)))
	appendTo(t, e.path("in.log"), "a\n")
	appendTo(t, e.path("in2.log"), "")
	d := e.start()
	d.waitFor("one dead letter", 30*time.Second, func(r *report) bool {
		return r.Settled && r.feed(t, "app").DeadLettered == 1
	})
	aud10AReload(t, e, d, rev28ATwoFeeds(rev28CHook("app2", 2)))
	r := d.waitSettled(30 * time.Second)
	a, a2 := r.feed(t, "app"), r.feed(t, "app2")
	losses := aud10AReadFile(e.path("state/losses.jsonl"))
	d.stop()
	if a.DeadLettered+a2.DeadLettered != 0 || a.Released+a2.Released != 1 || a.Lossless || strings.Count(losses, "\n") != 1 {
		t.Errorf("p moved to app2 with a new url: app %d/%d/%v app2 %d/%d/%v (deadLettered/released/lossless); losses.jsonl %q",
			a.DeadLettered, a.Released, a.Lossless, a2.DeadLettered, a2.Released, a2.Lossless, losses)
	}
}

// TestRev28CEOrphanAddedOnOtherFeedWithNewURL: p (1 dead letter, a line
// of app) is removed by a reload (its ledger kept, counted), then added by
// a reload on app2 with another url: the dead letter is given up (an entry
// in losses.jsonl naming app) but app, not rebuilt by that reload, does
// not count it in released while its deadLettered drops.
func TestRev28CEOrphanAddedOnOtherFeedWithNewURL(t *testing.T) {
	t.Parallel()
	e := newEnv(t, rev28ATwoFeeds(rev28CHook("app", 1)))
	appendTo(t, e.path("in.log"), "a\n")
	appendTo(t, e.path("in2.log"), "")
	d := e.start()
	d.waitFor("one dead letter", 30*time.Second, func(r *report) bool {
		return r.Settled && r.feed(t, "app").DeadLettered == 1
	})
	aud10AReload(t, e, d, rev28ATwoFeeds(""))
	r := d.waitSettled(30 * time.Second)
	b, b2 := r.feed(t, "app"), r.feed(t, "app2")
	aud10AReload(t, e, d, rev28ATwoFeeds(rev28CHook("app2", 2)))
	r = d.waitSettled(30 * time.Second)
	a, a2 := r.feed(t, "app"), r.feed(t, "app2")
	losses := aud10AReadFile(e.path("state/losses.jsonl"))
	d.stop()
	dropped := (b.DeadLettered + b2.DeadLettered) - (a.DeadLettered + a2.DeadLettered)
	if dropped != 1 || a.Released+a2.Released != dropped || strings.Count(losses, "\n") != 1 {
		t.Errorf("p removed (app deadLettered %d, app2 %d), then added on app2 with a new url: app %d/%d/%v app2 %d/%d/%v (deadLettered/released/lossless); want deadLettered to drop by 1 and released to count it; losses.jsonl %q",
			b.DeadLettered, b2.DeadLettered, a.DeadLettered, a.Released, a.Lossless, a2.DeadLettered, a2.Released, a2.Lossless, losses)
	}
}

// TestRev28CFFailedStartKeepsExactlyOnceRecord (probe): as B with an
// exactlyOnce file sink (a record) and a dead-lettering webhook: back on
// the config that ran, out.log gets only the new line and p keeps its
// dead letter, losses.jsonl empty.
func TestRev28CFFailedStartKeepsExactlyOnceRecord(t *testing.T) {
	t.Parallel()
	good := aud10AEOFile("out", "./out.log") + rev28AHook(1)
	e := newEnv(t, aud10ACfg("", good))
	appendTo(t, e.path("in.log"), "a\nb\nc\n")
	d := e.start()
	aud10AWaitContent(t, e.path("out.log"), "a\nb\nc\n")
	d.waitFor("three dead letters", 30*time.Second, func(r *report) bool {
		return r.Settled && r.feed(t, "app").DeadLettered == 3
	})
	d.stop()

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	e.tmpl = rev28ACfg(busy.Addr().String(), aud10AEOFile("out", "./out2.log")+rev28AHook(2))
	bad := e.spawn()
	if code := bad.wait(60 * time.Second); code == 0 {
		t.Fatalf("start with a taken status.listen exited 0")
	}
	busy.Close()

	e.tmpl = aud10ACfg("", good)
	d = e.start()
	appendTo(t, e.path("in.log"), "d\n")
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) && !strings.Contains(aud10AReadFile(e.path("out.log")), "d\n") {
		time.Sleep(50 * time.Millisecond)
	}
	r := d.waitFor("four dead letters", 30*time.Second, func(r *report) bool {
		return r.Settled && r.feed(t, "app").DeadLettered >= 4
	})
	d.stop()
	got := aud10AReadFile(e.path("out.log"))
	f := r.feed(t, "app")
	losses := aud10AReadFile(e.path("state/losses.jsonl"))
	if got != "a\nb\nc\nd\n" || f.DeadLettered != 4 || losses != "" {
		t.Errorf("back on the config that ran after a failed start: out.log %q, deadLettered %d released %d, losses.jsonl %q; want %q, 4, 0, empty",
			got, f.DeadLettered, f.Released, losses, "a\nb\nc\nd\n")
	}
}

// TestRev28CGReloadRemovesFeedTheDeadLettersName (probe): p's dead letter
// is a line of app; p moved (same url) to app2; then a reload removes app
// and changes p's url: the dead letter is counted in app2's released.
func TestRev28CGReloadRemovesFeedTheDeadLettersName(t *testing.T) {
	t.Parallel()
	e := newEnv(t, rev28ATwoFeeds(rev28CHook("app", 1)))
	appendTo(t, e.path("in.log"), "a\n")
	appendTo(t, e.path("in2.log"), "")
	d := e.start()
	d.waitFor("one dead letter", 30*time.Second, func(r *report) bool {
		return r.Settled && r.feed(t, "app").DeadLettered == 1
	})
	aud10AReload(t, e, d, rev28ATwoFeeds(rev28CHook("app2", 1)))
	r := d.waitSettled(30 * time.Second)
	before := r.feed(t, "app2").DeadLettered
	only2 := `dataDir: ./state
status: {listen: "` + addrPlaceholder + `", token: ` + ctToken + `}
shutdownTimeoutMillis: 1000
feeds:
  - name: app2
    path: ./in2.log
    pollIntervalMillis: 50
processors:
  - {name: out2, feed: app2, type: file, path: ./out2.log}
` + rev28CHook("app2", 2)
	aud10AReload(t, e, d, only2)
	r = d.waitSettled(30 * time.Second)
	a2 := r.feed(t, "app2")
	losses := aud10AReadFile(e.path("state/losses.jsonl"))
	d.stop()
	if before != 1 || a2.DeadLettered != 0 || a2.Released != 1 || a2.Lossless || !strings.Contains(losses, `"feed":"app2"`) {
		t.Errorf("app removed, p's url changed on app2: app2 deadLettered %d -> %d released %d lossless %v; losses.jsonl %q", before, a2.DeadLettered, a2.Released, a2.Lossless, losses)
	}
}

// TestRev28CHSwapNamesAcrossFeeds (probe): p (app, url :1) and q (app2,
// url :2) each hold a dead letter; a reload swaps them (p on app2 with :2,
// q on app with :1): both targets changed, both dead letters given up,
// each counted in released of the feed it names; a restart gives up
// nothing more.
func TestRev28CHSwapNamesAcrossFeeds(t *testing.T) {
	t.Parallel()
	hook := func(name, feed string, port int) string {
		return fmt.Sprintf("  - {name: %s, feed: %s, type: webhook, url: \"http://127.0.0.1:%d/in\", timeoutMillis: 200, onFailure: deadLetter, retry: {initialMillis: 10, maxMillis: 20, attempts: 2}}\n", name, feed, port)
	}
	e := newEnv(t, rev28ATwoFeeds(hook("p", "app", 1)+hook("q", "app2", 2)))
	appendTo(t, e.path("in.log"), "a\n")
	appendTo(t, e.path("in2.log"), "b\n")
	d := e.start()
	d.waitFor("two dead letters", 30*time.Second, func(r *report) bool {
		return r.Settled && r.feed(t, "app").DeadLettered == 1 && r.feed(t, "app2").DeadLettered == 1
	})
	aud10AReload(t, e, d, rev28ATwoFeeds(hook("q", "app", 1)+hook("p", "app2", 2)))
	r := d.waitSettled(30 * time.Second)
	a, a2 := r.feed(t, "app"), r.feed(t, "app2")
	losses := aud10AReadFile(e.path("state/losses.jsonl"))
	d.stop()
	d = e.start()
	r = d.waitSettled(30 * time.Second)
	ra, ra2 := r.feed(t, "app"), r.feed(t, "app2")
	d.stop()
	losses2 := aud10AReadFile(e.path("state/losses.jsonl"))
	if a.DeadLettered != 0 || a2.DeadLettered != 0 || a.Released != 1 || a2.Released != 1 || strings.Count(losses, "\n") != 2 || losses2 != losses || ra.DeadLettered+ra2.DeadLettered != 0 {
		t.Errorf("swap: app %d/%d app2 %d/%d (deadLettered/released); restart app %d app2 %d deadLettered; losses.jsonl %q then %q", a.DeadLettered, a.Released, a2.DeadLettered, a2.Released, ra.DeadLettered, ra2.DeadLettered, losses, losses2)
	}
}

// TestRev28CKMovedWithNewURLRolledBack (probe): a reload moves p (1 dead
// letter) from app to app2 with a new url and adds feed app3 whose
// pointer cannot be opened: rolled back, p keeps its dead letter on app,
// losses.jsonl is empty, and a restart on the config that runs keeps it.
func TestRev28CKMovedWithNewURLRolledBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t, rev28ATwoFeeds(rev28CHook("app", 1)))
	appendTo(t, e.path("in.log"), "a\n")
	appendTo(t, e.path("in2.log"), "")
	appendTo(t, e.path("in3.log"), "")
	d := e.start()
	d.waitFor("one dead letter", 30*time.Second, func(r *report) bool {
		return r.Settled && r.feed(t, "app").DeadLettered == 1
	})
	if err := os.MkdirAll(e.path("state/feeds/app3.ptr/x"), 0o700); err != nil {
		t.Fatal(err)
	}
	next := strings.Replace(rev28ATwoFeeds(rev28CHook("app2", 2)), "processors:\n", "  - name: app3\n    path: ./in3.log\n    pollIntervalMillis: 50\nprocessors:\n", 1)
	reconfig(t, e, d, next)
	code, _, body := request(t, d, http.MethodPost, "/admin/reload", ctToken, nil)
	if code == http.StatusOK {
		t.Fatalf("reload answered 200")
	}
	r := d.waitSettled(30 * time.Second)
	f := r.feed(t, "app")
	losses := aud10AReadFile(e.path("state/losses.jsonl"))
	e.tmpl = rev28ATwoFeeds(rev28CHook("app", 1))
	reconfig(t, e, d, e.tmpl)
	d.stop()
	d = e.start()
	f2 := d.waitSettled(30*time.Second).feed(t, "app")
	d.stop()
	if f.DeadLettered != 1 || f.Released != 0 || losses != "" || f2.DeadLettered != 1 {
		t.Errorf("rolled back (%d %s): app deadLettered %d released %d, losses.jsonl %q; after a restart deadLettered %d", code, body, f.DeadLettered, f.Released, losses, f2.DeadLettered)
	}
}

// TestRev28CLStartWithStampUnwritableChangesNothing (probe): p's url
// changed while stopped and its stamp cannot be written: the start fails;
// back on the config that ran p keeps its dead letter, losses.jsonl empty.
func TestRev28CLStartWithStampUnwritableChangesNothing(t *testing.T) {
	t.Parallel()
	base := aud10AFile("out", "app", "./out.log")
	good := aud10ACfg("", base+rev28AHook(1))
	e := newEnv(t, good)
	appendTo(t, e.path("in.log"), "a\n")
	d := e.start()
	d.waitFor("one dead letter", 30*time.Second, func(r *report) bool {
		return r.Settled && r.feed(t, "app").DeadLettered == 1
	})
	d.stop()
	block := e.path("state/state/targets/p.target.tmp")
	if err := os.MkdirAll(block+"/x", 0o700); err != nil {
		t.Fatal(err)
	}
	e.tmpl = aud10ACfg("", base+rev28AHook(2))
	bad := e.spawn()
	code := bad.wait(60 * time.Second)
	if err := os.RemoveAll(block); err != nil {
		t.Fatal(err)
	}
	losses := aud10AReadFile(e.path("state/losses.jsonl"))
	e.tmpl = good
	d = e.start()
	f := d.waitSettled(30*time.Second).feed(t, "app")
	d.stop()
	if code == 0 || f.DeadLettered != 1 || losses != "" {
		t.Errorf("start with p's url changed and its stamp unwritable: exit %d, losses.jsonl after it %q; back on the config that ran: deadLettered %d released %d; want exit != 0, empty, 1", code, losses, f.DeadLettered, f.Released)
	}
}
