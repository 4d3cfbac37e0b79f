package e2e

// Review of the webhook record per epoch (sink/webhook epochs.go, carry.go;
// DESIGN §6 webhook, §10 "Sinks and streams"). Each test here pins a case
// where a line reaches a receiver that dedupes on Idempotency-Key twice,
// is lost, or is committed early.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const reviewGlobHook = `dataDir: ./state
status:
  listen: {{ADDR}}
shutdownTimeoutMillis: 500
feeds:
  - name: app
    path: ./in/*.log
    readStrategy: COMMITTED
    queueCapacity: %d
    maxPendingAcks: %d
    rotateWaitMillis: 300
    scanIntervalMillis: 1000
processors:
  - name: hook
    feed: app
    type: webhook
    url: %s/ingest
    timeoutMillis: 2000
    batchMaxLines: 10
    headers: {X-Source: tailfeed}
    retry: {initialMillis: 5, maxMillis: 50, attempts: 100000}
    onFailure: hold
`

// stuckRequest runs two lives on a glob feed. Life 0: the other files
// (others, one line each) are read and acknowledged, so each has a pointer
// (a restart then opens every stream at once, none waits for its pointer
// to be created). Life 1: in/z.log gets lines "a 0"…"a 29" (batches of
// 10); the receiver answers the first request (a 0-9) and then applies the
// second (a 10-19) without answering it; the daemon is killed (-9) while
// it retries that request. It returns the stuck request's key and lines.
func stuckRequest(t *testing.T, e *env, rc *receiver, others []string) (string, string) {
	t.Helper()
	for _, tag := range others {
		writeFileLines(t, filepath.Join(e.path("in"), tag+".log"), tag, 0, 1)
	}
	applied := func() int {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		return len(rc.raw)
	}
	if len(others) > 0 {
		d := e.start()
		waitUntil(t, "the other files' first lines", 30*time.Second, func() bool { return applied() >= len(others) })
		d.waitSettled(30 * time.Second)
		d.stop()
	}
	writeFileLines(t, filepath.Join(e.path("in"), "z.log"), "a", 0, 30)
	rc.set(func(r *receiver) { r.downAt = len(r.raw) + 10 })
	d := e.start()
	var key, body string
	waitUntil(t, "the second request applied and retried unanswered", 30*time.Second, func() bool {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		n := len(rc.reqs)
		if n >= 3 && rc.reqs[n-1].code == 0 && rc.reqs[n-2].code == 0 {
			k1, k2 := rc.reqs[n-1].header.Get("Idempotency-Key"), rc.reqs[n-2].header.Get("Idempotency-Key")
			if k1 == k2 {
				key = k1
				var lines []string
				for _, o := range rc.reqs[n-1].objects {
					var s string
					json.Unmarshal(o["line"], &s)
					lines = append(lines, s)
				}
				body = strings.Join(lines, "\n")
			}
		}
		return key != ""
	})
	d.kill()
	if !strings.HasPrefix(body, "a 10\n") || !strings.HasSuffix(body, "\na 19") {
		t.Fatalf("stuck request %s holds %q, want a 10 … a 19", key, body)
	}
	rc.set(func(r *receiver) { r.down, r.downAt = false, 0 })
	return key, body
}

// dedupedOnce checks, for a receiver that applies a key's lines the first
// time it sees the key, that every line of want was applied exactly once,
// and that key was sent again after the restart with the same lines.
func dedupedOnce(t *testing.T, rc *receiver, stuckKey, stuckBody string, from int, want map[string]int) {
	t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.bad) > 0 {
		t.Fatalf("malformed requests: %v", rc.bad[:min(5, len(rc.bad))])
	}
	resent := false
	for _, k := range rc.seen[from:] {
		if k == stuckKey {
			resent = true
		}
	}
	count := map[string]int{}
	var twice []string
	for _, k := range rc.keys {
		for _, l := range rc.applied[k] {
			count[l]++
			if count[l] == 2 {
				twice = append(twice, fmt.Sprintf("%q (keys %s)", l, reviewKeysOf(rc, l)))
			}
		}
	}
	var missing []string
	for tag, n := range want {
		for i := 0; i < n; i++ {
			if count[fmt.Sprintf("%s %d", tag, i)] == 0 {
				missing = append(missing, fmt.Sprintf("%s %d", tag, i))
			}
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d lines never applied: %v", len(missing), missing[:min(10, len(missing))])
	}
	if !resent {
		t.Errorf("the request stuck at the kill, %s (%q), was never sent again after the restart", stuckKey, stuckBody)
	}
	if len(twice) > 0 {
		t.Errorf("%d lines applied twice by a receiver that dedupes on Idempotency-Key, e.g. %v", len(twice), twice[:min(5, len(twice))])
	}
}

// reviewKeysOf lists the keys under which line l was applied (rc.mu held).
func reviewKeysOf(rc *receiver, l string) []string {
	var out []string
	for _, k := range rc.keys {
		for _, x := range rc.applied[k] {
			if x == l {
				out = append(out, k)
				break
			}
		}
	}
	return out
}

// A request recorded and applied by the receiver but never answered is
// rebuilt after a kill -9 under its key (DESIGN §6: "rebuilds the recorded
// batch with the same range, so the key is stable"; §10: exactly-once per
// input file when files interleave). After the restart the source cuts
// z.log into batches of 2 lines (queueCapacity 2), so the recorded request
// a 10-19 arrives in five batches, and 16 other files of the glob, each
// with a backlog, publish
// between them. Their lines, sent while z.log's request is carried, are
// not acknowledged (the carry holds the ack point), so they fill the
// window (maxPendingAcks) while z.log's rest is still to come: the sink
// takes the full window for "the source waits for these very lines"
// (carry.go, evidence 4) and sends the part it holds under a new key, then
// the rest under another — a receiver that applied a 10-19 under the
// recorded key applies those lines a second time. Nothing prevents the
// rest from coming: it is on disk, and on a single-file feed the same
// window would hold it.
func TestWebhookGlobFullWindowOfOtherFilesKeepsTheKey(t *testing.T) {
	rc := newReceiver(t, 7)
	e := newEnv(t, fmt.Sprintf(reviewGlobHook, 10, 65536, rc.srv.URL))
	var others []string
	for f := 0; f < 16; f++ {
		others = append(others, fmt.Sprintf("b%02d", f))
	}
	key, body := stuckRequest(t, e, rc, others)
	want := map[string]int{"a": 30}
	for _, tag := range others { // a backlog in every other file
		writeFileLines(t, filepath.Join(e.path("in"), tag+".log"), tag, 1, 59)
		want[tag] = 60
	}
	total := 30 + 16*60
	rc.mu.Lock()
	from := len(rc.seen)
	rc.mu.Unlock()
	// Next life: smaller batches (queueCapacity 2: "the group may cut
	// those lines into other batches than before") and a window of 12.
	e.tmpl = fmt.Sprintf(reviewGlobHook, 2, 12, rc.srv.URL)
	d := e.start()
	waitUntil(t, "every line at the receiver", 60*time.Second, func() bool {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		seen := map[string]bool{}
		for _, k := range rc.keys {
			for _, l := range rc.applied[k] {
				seen[l] = true
			}
		}
		return len(seen) >= total
	})
	d.waitSettled(30 * time.Second)
	d.stop()
	if strings.Contains(d.log(), "cannot rebuild the recorded request") {
		t.Logf("daemon log: %s", grepLines(d.log(), "cannot rebuild"))
	}
	dedupedOnce(t, rc, key, body, from, want)
}

// A request recorded, applied by the receiver and never answered is sent
// again after a kill -9 with "the same bytes under the same key" (package
// doc of sink/webhook; DESIGN §6). On a glob feed each object carries
// `path`, the path under which the stream was first matched (DESIGN §10:
// "Delivery.Path stays the path under which the stream was first
// matched"). The file is renamed within the glob while the daemon is down
// (z.log → y.log, both *.log): the restart finds the stream by its pointer
// (same key, same first bytes: the same stream, the same epoch) but names
// it by its new path, so the rebuilt request carries other bytes under the
// recorded key. A receiver that follows the Idempotency-Key draft (or
// Stripe's rule) refuses a key reused with another payload with a 422 —
// which the sink takes for poison: held forever, or dead-lettered.
func TestWebhookGlobRenameWhileDownKeepsTheRebuiltBody(t *testing.T) {
	rc := newReceiver(t, 11)
	e := newEnv(t, fmt.Sprintf(reviewGlobHook, 10, 65536, rc.srv.URL))
	key, _ := stuckRequest(t, e, rc, nil)
	rc.mu.Lock()
	var orig []byte
	for _, q := range rc.reqs {
		if q.header.Get("Idempotency-Key") == key {
			orig = q.body
			break
		}
	}
	from := len(rc.reqs)
	rc.mu.Unlock()
	if err := os.Rename(e.path("in/z.log"), e.path("in/y.log")); err != nil {
		t.Fatal(err)
	}
	d := e.start()
	waitUntil(t, "every line at the receiver", 30*time.Second, func() bool {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		seen := map[string]bool{}
		for _, k := range rc.keys {
			for _, l := range rc.applied[k] {
				seen[l] = true
			}
		}
		return len(seen) >= 30
	})
	d.waitSettled(30 * time.Second)
	d.stop()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	resent := 0
	for _, q := range rc.reqs[from:] {
		if q.header.Get("Idempotency-Key") != key {
			continue
		}
		resent++
		if !bytes.Equal(q.body, orig) {
			t.Fatalf("the recorded request %s was sent again after the restart with other bytes under its key:\nbefore: %s\nafter:  %s",
				key, firstLine(orig), firstLine(q.body))
		}
	}
	if resent == 0 {
		t.Fatalf("the recorded request %s was not sent again after the restart", key)
	}
}

// firstLine is b's first line.
func firstLine(b []byte) string {
	s, _, _ := strings.Cut(string(b), "\n")
	return s
}

// A file cut short while the daemon was down, at a length between its
// pointer and the end of its recorded request, with its first 4 KiB
// unchanged, looks like the same file read to its end: the rebuilt request
// waits for the rest (sink/webhook carry.go, "What it cannot tell"). On a
// glob feed the package says it waits "until a full window (4), a line
// past the range, or a new line of the file lets it go". Here the file is
// then truncated and rewritten while running (logrotate copytruncate): the
// stream resets to a new epoch, whose lines wait at the per-path barrier
// for every line of the old epoch to be acknowledged, while the carry
// waits for old-epoch lines that cannot come, and the glob feed's
// publisher shows no barrier (each path has its own). On a single-file
// feed the barrier lets the carry go; here the file's new lines are never
// delivered (nothing else is written, so the window never fills).
func TestWebhookGlobCarryGoesAtItsFilesBarrier(t *testing.T) {
	rc := newReceiver(t, 17)
	e := newEnv(t, fmt.Sprintf(reviewGlobHook, 10, 65536, rc.srv.URL))
	in := e.path("in/z.log")
	var head strings.Builder
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&head, "h %03d %s\n", i, strings.Repeat("x", 43)) // 50 bytes
	}
	if err := os.MkdirAll(e.path("in"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, []byte(head.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	writeFileLines(t, in, "a", 0, 30)
	rc.set(func(r *receiver) { r.downAt = 110 })
	d := e.start()
	var key string
	waitUntil(t, "a request applied and retried unanswered", 30*time.Second, func() bool {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		n := len(rc.reqs)
		if n >= 2 && rc.reqs[n-1].code == 0 && rc.reqs[n-2].code == 0 &&
			rc.reqs[n-1].header.Get("Idempotency-Key") == rc.reqs[n-2].header.Get("Idempotency-Key") {
			key = rc.reqs[n-1].header.Get("Idempotency-Key")
		}
		return key != ""
	})
	d.kill()
	rc.set(func(r *receiver) { r.down, r.downAt = false, 0 })
	// Cut the file inside the recorded request (a 10-19): keep a 0-14.
	keep := int64(head.Len())
	for i := 0; i < 15; i++ {
		keep += int64(len(fmt.Sprintf("a %d\n", i)))
	}
	if err := os.Truncate(in, keep); err != nil {
		t.Fatal(err)
	}
	d = e.start()
	d.waitFor("a 10-14 carried (published, not acknowledged)", 30*time.Second, func(r *report) bool {
		return len(r.Feeds) == 1 && r.Feeds[0].PendingAcks == 5
	})
	// copytruncate: the file is emptied and written again.
	if err := os.Truncate(in, 0); err != nil {
		t.Fatal(err)
	}
	writeFileLines(t, in, "c", 0, 10)
	deadline := time.Now().Add(20 * time.Second)
	for {
		rc.mu.Lock()
		got := false
		for _, k := range rc.keys {
			for _, l := range rc.applied[k] {
				if l == "c 9" {
					got = true
				}
			}
		}
		rc.mu.Unlock()
		if got {
			break
		}
		if time.Now().After(deadline) {
			_, raw := statusRaw(t, d)
			t.Fatalf("the file's new lines (c 0 … c 9, written 20 s ago after a copytruncate) never reached the receiver; recorded request %s; status: %s",
				key, raw)
		}
		time.Sleep(50 * time.Millisecond)
	}
	d.waitSettled(30 * time.Second)
	d.stop()
}

// A glob feed is settled when, in addition to §7's rule, "every file's
// last commit is synced and covers that file's acknowledged position"
// (DESIGN §10 "Status"). A webhook whose receiver fails for a while holds
// the lines back (hold, fenced: nothing lost). Meanwhile the files, read
// to their end, go inactive (closeInactiveMillis) and are closed; the
// close waits at most a minute for their lines to be acknowledged, then
// closes the pointer. Once the receiver answers again every line is
// acknowledged; the closed files still owe the commit of those late
// acknowledgements, and the feed may report settled only once their
// pointers record them (it did report settled with each pointer still at
// 0: a restart re-read those files from their start).
func TestWebhookGlobNotSettledWhileClosedFilesPointersLag(t *testing.T) {
	t.Parallel() // a minute asleep: with the other parallel tests
	if testing.Short() {
		t.Skip("waits out the one-minute drain bound")
	}
	rc := newReceiver(t, 19)
	rc.set(func(r *receiver) { r.fail = 1 }) // 503 to everything
	cfg := strings.Replace(fmt.Sprintf(reviewGlobHook, 1024, 65536, rc.srv.URL), "    scanIntervalMillis: 1000\n",
		"    scanIntervalMillis: 1000\n    closeInactiveMillis: 300\n", 1)
	e := newEnv(t, cfg)
	for _, tag := range []string{"b", "c"} {
		writeFileLines(t, e.path("in/"+tag+".log"), tag, 0, 5)
	}
	d := e.start()
	waitUntil(t, "requests refused", 30*time.Second, func() bool {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		return len(rc.reqs) >= 4
	})
	time.Sleep(65 * time.Second) // the files close (inactive), their drain gives up after a minute
	rc.set(func(r *receiver) { r.fail = 0 })
	waitUntil(t, "every line at the receiver", 30*time.Second, func() bool {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		n := 0
		for _, k := range rc.keys {
			n += len(rc.applied[k])
		}
		return n >= 10
	})
	rep := d.waitSettled(30 * time.Second)
	time.Sleep(2 * time.Second) // not a moment's lag: it stays so
	_, raw := statusRaw(t, d)
	ptrs, _ := filepath.Glob(e.path("state/feeds/app/*.ptr"))
	if len(ptrs) != 2 {
		t.Fatalf("%d stream pointers, want 2", len(ptrs))
	}
	size := int64(0)
	for i := 0; i < 5; i++ {
		size += int64(len(fmt.Sprintf("b %d\n", i)))
	}
	var lag []string
	for _, p := range ptrs {
		rec, _ := showPointer(t, p)
		if rec.Offset != size {
			lag = append(lag, fmt.Sprintf("%s at %d", filepath.Base(p), rec.Offset))
		}
	}
	if len(lag) > 0 {
		t.Fatalf("the feed reports settled (%v) while stream pointers do not cover their files' acknowledged lines (%d bytes each): %v\nstatus: %s",
			rep.Settled, size, lag, raw)
	}
}

// A glob feed without stream pointers (not COMMITTED) opens every file
// under a new epoch at every start, so no restart needs the webhook
// record's entries (sink/webhook epochs.go, "Bound"): the table is swept
// down to the entry being stored, with no WARN about a pointer directory
// that a feed without pointers never has. 150 files read EARLIEST.
func TestWebhookGlobWithoutPointersKeepsNoTable(t *testing.T) {
	rc := newReceiver(t, 23)
	cfg := strings.Replace(fmt.Sprintf(reviewGlobHook, 1024, 65536, rc.srv.URL), "readStrategy: COMMITTED", "readStrategy: EARLIEST", 1)
	e := newEnv(t, cfg)
	const files = 150
	for f := 0; f < files; f++ {
		writeFileLines(t, e.path(fmt.Sprintf("in/f%03d.log", f)), fmt.Sprintf("f%03d", f), 0, 3)
	}
	d := e.start()
	waitUntil(t, "every line at the receiver", 60*time.Second, func() bool {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		n := 0
		for _, k := range rc.keys {
			n += len(rc.applied[k])
		}
		return n >= files*3
	})
	time.Sleep(5500 * time.Millisecond) // past a 5 s sweep period
	writeFileLines(t, e.path("in/last.log"), "last", 0, 1)
	waitUntil(t, "the last line at the receiver", 30*time.Second, func() bool {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		for _, k := range rc.keys {
			for _, l := range rc.applied[k] {
				if l == "last 0" {
					return true
				}
			}
		}
		return false
	})
	d.stop()
	if strings.Contains(d.log(), "stream pointers not read") {
		t.Errorf("WARN about stream pointers on a feed without them: %s", grepLines(d.log(), "stream pointers not read"))
	}
	rec := e.path("state/state/hook.rec")
	if _, err := os.Stat(rec); err != nil {
		rec = e.path("state/hook.rec")
	}
	if n := len(webhookRecordEpochs(t, rec)); n > 64 {
		t.Fatalf("the record holds %d epochs of a feed without pointers (no restart can use one), want at most 64", n)
	}
}

// A file cut short while the daemon was down, inside its recorded
// request, with its first bytes unchanged: the rebuilt request waits for
// a rest that only the writer could add (sink/webhook carry.go, "What it
// cannot tell"). On a glob feed the other files' lines then fill the
// window behind it; once the window is full while the cut file is read to
// its end, the request goes under a new key and the other files go on —
// no deadlock (the carry's epoch passing the window must not make it wait
// forever).
func TestWebhookGlobCarryOfAFileCutShortGoesUnderAFullWindow(t *testing.T) {
	rc := newReceiver(t, 29)
	e := newEnv(t, fmt.Sprintf(reviewGlobHook, 10, 65536, rc.srv.URL))
	in := e.path("in/z.log")
	var head strings.Builder // 5,000 bytes: the first 4 KiB (the fingerprint) survive the cut
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&head, "h %03d %s\n", i, strings.Repeat("x", 43))
	}
	if err := os.MkdirAll(e.path("in"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, []byte(head.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	writeFileLines(t, in, "a", 0, 30)
	rc.set(func(r *receiver) { r.downAt = 110 })
	d := e.start()
	waitUntil(t, "a request applied and retried unanswered", 30*time.Second, func() bool {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		n := len(rc.reqs)
		return n >= 2 && rc.reqs[n-1].code == 0 && rc.reqs[n-2].code == 0 &&
			rc.reqs[n-1].header.Get("Idempotency-Key") == rc.reqs[n-2].header.Get("Idempotency-Key")
	})
	d.kill()
	rc.set(func(r *receiver) { r.down, r.downAt = false, 0 })
	keep := int64(head.Len()) // cut inside the recorded request (a 10-19): keep a 0-14
	for i := 0; i < 15; i++ {
		keep += int64(len(fmt.Sprintf("a %d\n", i)))
	}
	if err := os.Truncate(in, keep); err != nil {
		t.Fatal(err)
	}
	e.tmpl = fmt.Sprintf(reviewGlobHook, 10, 12, rc.srv.URL) // a window of 12
	d = e.start()
	d.waitFor("a 10-14 carried", 30*time.Second, func(r *report) bool {
		return len(r.Feeds) == 1 && r.Feeds[0].PendingAcks == 5
	})
	writeFileLines(t, e.path("in/b.log"), "b", 0, 40)
	waitUntil(t, "the other file's lines at the receiver", 30*time.Second, func() bool {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		for _, k := range rc.keys {
			for _, l := range rc.applied[k] {
				if l == "b 39" {
					return true
				}
			}
		}
		return false
	})
	d.waitSettled(30 * time.Second)
	d.stop()
	if !strings.Contains(d.log(), "cannot rebuild the recorded request") {
		t.Errorf("no WARN that the recorded request went out under a new key")
	}
}
