//go:build openfindings

package e2e

import (
	"bytes"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// Findings of audit 10 (the twenty-eighth session) left open, each a
// judgement call stated in the README: a processor removed while tailfeed
// is stopped holds nothing (a reload's removal holds its lines); a dead
// letter of a processor moved to another feed counts for the feed it is on
// now; a dead-letter entry torn from outside after its line was committed
// is cut off without a count (a crash tears only entries whose line the
// pointer has not passed). Run: go test -tags openfindings ./e2e -run 'TestAud10'.

// TestAud10AXHolderRemovedBetweenRunsGivenUpSilently
//
// DESIGN §12: "A removed processor drains its queue within
// `shutdownTimeoutMillis`; what it did not finish keeps holding the pointer
// — the feed reports `stalled` (`removed subscriber <name> holds N lines`)
// until `POST /admin/release/<feed>/<name>` gives it up (counted in
// `released`). The hold is kept in `dataDir/state/removed.json`, so a
// restart does not clear it". §5: a release "gives that backlog up on
// purpose: counted in `released`, lossless false". §7: "`lossless`:
// `dropped`, `refused`, `completionFailures`, `released`, … are 0".
//
// p (a webhook to a port nothing listens on, onFailure hold) has not
// finished 2 lines; the clean stop leaves the pointer at 0 (p's hold).
// The daemon is started on the same config without p (the same removal a
// reload makes; a reload keeps the hold: TestAud10AOKHolderRemovedByReloadHolds).
// Observed: the pointer moves to 4, `stalled` null, `released` 0,
// `lossless` true, removed.json `{"holds":[]}` — p's 2 lines are given
// up with nothing counted. Expected: the same answer as the reload (a hold
// to release, counted in `released`), or at least `released` 2 and
// `lossless` false. Judgement: DESIGN states the rule under "Reload"; it
// does not say a removal between runs is different, and §7's promise
// ("is it whole?") is answered "yes" over 2 lines p never processed.
//
// Suspected cause: holds are created only by the reload's stop of a
// removed subscriber (internal/daemon/reload.go); a start builds the
// feed from the configured processors only and takes no account of the
// unfinished lines of a subscriber that is no longer configured (the
// clean stop writes no hold for a still-configured one).
func TestAud10AXHolderRemovedBetweenRunsGivenUpSilently(t *testing.T) {
	withP := aud10ACfg("", aud10AFile("out", "app", "./out.log")+aud10ADeadHook("p", "hold"))
	e := newEnv(t, withP)
	appendTo(t, e.path("in.log"), "a\nb\n")
	d := e.start()
	aud10AWaitContent(t, e.path("out.log"), "a\nb\n")
	d.waitFor("stalled by p", 30*time.Second, func(r *report) bool { return r.feed(t, "app").Stalled != nil })
	d.stop()
	if rec, ok := showPointer(t, e.path("state/feeds/app.ptr")); !ok || rec.Offset != 0 {
		t.Fatalf("precondition: after the clean stop the pointer is %+v, want offset 0 (p holds a and b)", rec)
	}
	e.tmpl = aud10ACfg("", aud10AFile("out", "app", "./out.log"))
	d = e.start()
	r := d.waitFor("held, or settled past a and b", 30*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return f.State == "CAUGHT_UP" && (f.Stalled != nil || (r.Settled && f.Pointer != nil && f.Pointer.Offset == 4))
	})
	f := r.feed(t, "app")
	d.stop()
	held := f.Stalled != nil && strings.Contains(*f.Stalled, "removed subscriber p")
	counted := f.Released == 2 && !f.Lossless
	if !held && !counted {
		t.Errorf("p removed between runs with 2 lines unfinished: stalled %v, released %d, lossless %v, pointer %+v, removed.json %s; "+
			"want them held (stalled \"removed subscriber p holds 2 lines\", as a reload does) or counted (released 2, lossless false)",
			f.Stalled, f.Released, f.Lossless, f.Pointer, aud10AReadFile(e.path("state/state/removed.json")))
	}
	if got := aud10AReadFile(e.path("out.log")); got != "a\nb\n" {
		t.Errorf("out.log %q, want a b once each", got)
	}
}

// TestAud10AXDeadLetterCountsForProcessorsNewFeed
//
// DESIGN §6: "`deadLettered` = entries now in the ledgers: read from disk
// at start …; `lossless` is false while any ledger is non-empty, across
// restarts" (the ledger entry holds "feed, epoch, position, …"). §7:
// "`lossless`: … and no ledger holds a dead letter". README: "each entry
// keeps counting in `deadLettered` of the feed it names".
//
// p (webhook, dead port, onFailure deadLetter) on feed app dead-letters
// app's line "a" (ledger entry {"feed":"app",…}). The daemon is stopped and
// started with p moved to feed b (no other change). Observed: feed app
// reports deadLettered 0, lossless true, while its line sits in p's
// ledger; feed b — none of whose lines was dead-lettered — reports
// deadLettered 1, lossless false. (A reload making the same change gives
// the same numbers.) Expected: the entry counts for app, the feed it names
// (app lossless false), as the daemon already does for the ledger of a
// processor no longer configured. Under any reading of §7 ("no ledger
// holds a dead letter"), app cannot be lossless while the ledger holds its
// line.
//
// Suspected cause: internal/daemon/report.go:104 counts a configured
// processor's ledger (g.Ledgered()) for the feed the processor is on now,
// not for the feed each entry names (only orphan ledgers do that:
// internal/daemon/orphans.go:8, report.go:120).
func TestAud10AXDeadLetterCountsForProcessorsNewFeed(t *testing.T) {
	e := newEnv(t, aud10ATwoFeeds("app"))
	appendTo(t, e.path("in.log"), "a\n")
	appendTo(t, e.path("b.log"), "x\n")
	d := e.start()
	d.waitFor("app's line dead-lettered", 30*time.Second, func(r *report) bool {
		return r.Settled && r.feed(t, "app").DeadLettered == 1
	})
	d.stop()
	e.tmpl = aud10ATwoFeeds("b")
	d = e.start()
	r := d.waitSettled(30 * time.Second)
	code, _, body := request(t, d, http.MethodGet, "/admin/dlq/p", ctToken, nil)
	d.stop()
	if code != http.StatusOK || !strings.Contains(string(body), `"feed":"app"`) {
		t.Fatalf("GET /admin/dlq/p: %d %s; want the entry of feed app", code, body)
	}
	app, b := r.feed(t, "app"), r.feed(t, "b")
	if app.Lossless || app.DeadLettered != 1 {
		t.Errorf("p (its ledger: 1 entry of feed app) moved to feed b between runs: app deadLettered %d lossless %v, b deadLettered %d lossless %v; "+
			"want app deadLettered 1, lossless false (its line is in a ledger)", app.DeadLettered, app.Lossless, b.DeadLettered, b.Lossless)
	}
}

// README (Exactly-once effects, Retries): "a torn last entry is cut off at
// start (its line comes again)"; DESIGN §6 "lossless is false while any
// ledger is non-empty, across restarts"; §7 "A restart never turns a lossy
// feed green by itself"; §4 "lossless is true only while tailfeed can show
// that no line was skipped".
// A webhook dead-letters the line "poison" (400, onFailure deadLetter); it
// counts as processed, so the pointer is committed past it (offset 7) and
// the feed is lossless false (deadLettered 1). While the daemon is stopped
// the ledger's only entry is torn (cut in half, as a damaged disk block or
// a partly restored copy would leave it). The receiver now accepts
// everything.
// Observed: the restart cuts the entry off with the WARN "dead-letter
// ledger ends in a torn entry; cutting it off (its line is delivered
// again)", but the line is never delivered again (0 requests: the pointer
// is past it), the ledger is empty, and the feed reports deadLettered 0,
// lossless true, lostTails 0, released 0: the line is gone with a green
// status. Expected: either the line comes again (the README's promise: e.g.
// commit the pointer back to before the cut entry's position, as the
// catch-up of §11 does for a sink behind the pointer) or, when it cannot,
// the cut entry is counted as a loss (lossless false, an entry in
// losses.jsonl).
// Suspected cause: processor/dlq.go:161-167 (OpenLedger) truncates the
// torn tail and only logs; nothing checks whether the pointer already
// passed that line, and nothing is counted.
// Certainty: high that the promise "(its line comes again)" and the WARN
// are false here and the status turns green; the damage itself comes from
// outside tailfeed (a real crash can only tear an entry whose line the
// pointer has not passed, since the entry is fsynced before the line
// counts as processed), so a maintainer may call the scenario out of scope.
func TestAud10DXTornDeadLetterAfterCommitGoesGreen(t *testing.T) {
	h := newAudHook(t)
	var mu sync.Mutex
	bad := true
	h.setAnswer(func(n int, r audReq, w http.ResponseWriter) int {
		mu.Lock()
		defer mu.Unlock()
		if bad {
			return http.StatusBadRequest
		}
		return http.StatusOK
	})
	e := newEnv(t, audHookConfig(h.srv.URL, "    onFailure: deadLetter\n    retry: {initialMillis: 10, maxMillis: 20, attempts: 2}\n"))
	audWrite(t, e.path("in.log"), "poison\n")
	d := e.start()
	d.waitFor("1 dead letter, committed past it", 20*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return f.DeadLettered == 1 && r.Settled && f.Pointer != nil && f.Pointer.Offset == 7 && !f.Lossless
	})
	d.stop()
	lg := e.path("state/dlq/hook.jsonl")
	b, err := os.ReadFile(lg)
	if err != nil || bytes.Count(b, []byte("\n")) != 1 {
		t.Fatalf("precondition: ledger %q (%v), want one entry", b, err)
	}
	if err := os.WriteFile(lg, b[:len(b)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	bad = false
	mu.Unlock()
	n0 := len(h.requests())
	d = e.start()
	d.waitSettled(20 * time.Second)
	// Give a re-delivery time to come (it would be at once).
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) && len(h.requests()) == n0 {
		time.Sleep(50 * time.Millisecond)
	}
	r := d.waitSettled(20 * time.Second)
	f := r.feed(t, "app")
	again := 0
	for _, q := range h.requests()[n0:] {
		for _, o := range q.objects {
			if audStr(o, "line") == "poison" {
				again++
			}
		}
	}
	d.stop()
	if again == 0 && f.Lossless {
		t.Errorf("the torn dead letter's line was cut off and never delivered again (%d requests after the restart), "+
			"yet the feed reports lossless %v, deadLettered %d, lostTails %d, released %d (before the restart: lossless false, deadLettered 1)\n%s",
			len(h.requests())-n0, f.Lossless, f.DeadLettered, f.LostTails, f.Released, tail(d.log(), 1500))
	}
}
