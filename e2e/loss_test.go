package e2e

// DESIGN §4 "Nothing green over a loss" and "Same-size rewrites": the
// cases of the README's "What can be lost" table that TestLogrotate and the
// peer cases do not cover.

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestLossTruncatedWhileStopped: a file truncated while tailfeed is stopped
// (no copy, plain or .gz, anywhere) with the pointer past 0 is one lost
// tail even after a clean stop — tailfeed cannot know that nothing was
// written between its stop and the truncation: lostTails 1, lossless
// false, `tailfeed status` exit 1; the new content is read from its start.
func TestLossTruncatedWhileStopped(t *testing.T) {
	t.Parallel()
	p := newPeer(t, 250, 5000)
	appendTo(t, p.app, "a-1\na-2\na-3\n")
	d := p.start()
	p.expectOut("a-1", "a-2", "a-3")
	d.stop()
	if err := os.Truncate(p.app, 0); err != nil {
		t.Fatal(err)
	}
	appendTo(t, p.app, "b-1\n")
	d = p.start()
	p.expectOut("a-1", "a-2", "a-3", "b-1")
	r, ok := settleAtPath(d, p.app, p.out, 15*time.Second)
	if !ok {
		t.Fatalf("not settled at the end of the truncated file within 15s")
	}
	f := r.Feeds[0]
	if f.LostTails != 1 || f.Lossless || r.Lossless {
		t.Errorf("truncated while stopped: lostTails %d lossless %v/%v; want 1, false: nothing green over a possible loss", f.LostTails, f.Lossless, r.Lossless)
	}
	if code, stderr := statusExit(t, d, 5*time.Second); code != 1 {
		t.Errorf("tailfeed status: exit %d, want 1 (settled, lossy): %s", code, stderr)
	}
	d.stop()
	// A restart does not turn the feed green (the loss ledger).
	d = p.start()
	if r, ok := settleAtPath(d, p.app, p.out, 15*time.Second); !ok || r.Feeds[0].Lossless {
		t.Errorf("after another restart: settled %v, lossless %v; want settled and still lossy (losses outlive the run)", ok, ok && r.Feeds[0].Lossless)
	}
	d.stop()
}

// lossPullConfig: a file sink and a pull subscriber that the test leaves
// unpolled, so the feed pauses with most of a large file unread.
const lossPullConfig = `dataDir: ./state
status:
  listen: {{ADDR}}
feeds:
  - name: app
    path: ./logs/app.log
    readStrategy: COMMITTED
    queueCapacity: 4
processors:
  - name: out
    feed: app
    type: file
    path: ./out.log
    fsync: never
  - name: slow
    feed: app
    type: pull
    maxInFlight: 1000
`

// TestLossLiveTruncationUnread: the feed is paused (a pull subscriber does
// not poll) with most of a 4 MB file unread, and the file is truncated in
// place with no copy: DESIGN §4 counts `size last seen − read position` in
// lostBytes and one lost tail; the lines read before the truncation are
// still delivered, then the new content from its start; lossless false,
// status exit 1. The lines delivered from the old file plus lostBytes
// account for the old file's bytes (up to one partial line).
func TestLossLiveTruncationUnread(t *testing.T) {
	t.Parallel()
	e := newEnv(t, lossPullConfig)
	if err := os.Mkdir(e.path("logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	app, out := e.path("logs/app.log"), e.path("out.log")
	const lineLen, lines = 100, 40000
	var b strings.Builder
	for i := range lines {
		s := fmt.Sprintf("old-%06d-", i)
		b.WriteString(s + strings.Repeat("x", lineLen-len(s)-1) + "\n")
	}
	appendTo(t, app, b.String())
	oldSize := int64(b.Len())
	d := e.start()
	d.waitFor("paused", 15*time.Second, func(r *report) bool { return r.Feeds[0].Sequence > 0 })
	time.Sleep(300 * time.Millisecond) // let it fill the queue and pause
	if err := os.Truncate(app, 0); err != nil {
		t.Fatal(err)
	}
	appendTo(t, app, "new-1\n")
	// Drain the pull subscriber until the feed is at the end of the new file.
	deadline := time.Now().Add(30 * time.Second)
	var f feedReport
	for {
		evs := pullFrom(t, d, "slow", "max=1000&wait=100ms")
		ackAll(t, d, evs)
		r, err := d.status()
		if err == nil && r.Settled && r.Feeds[0].Pointer != nil && r.Feeds[0].Pointer.Offset == sizeOf(app) && r.Feeds[0].Pointer.Epoch == r.Feeds[0].Epoch {
			f = r.Feeds[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not settled at the end of the truncated file within 30s; last report %+v (error %v)", r, err)
		}
	}
	data, _ := os.ReadFile(out)
	got := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	var old int
	for i, l := range got {
		switch {
		case l == fmt.Sprintf("old-%06d-%s", i, strings.Repeat("x", lineLen-12)):
			old++
		case l == "new-1" && i == len(got)-1:
		default:
			t.Fatalf("output line %d is %.40q: want the old lines in order, then new-1", i, l)
		}
	}
	if got[len(got)-1] != "new-1" {
		t.Errorf("the line written after the truncation is missing")
	}
	unaccounted := oldSize - int64(old)*lineLen - int64(f.LostBytes)
	t.Logf("old file %d bytes: %d lines (%d bytes) delivered, lostBytes %d, lostTails %d, unaccounted %d", oldSize, old, old*lineLen, f.LostBytes, f.LostTails, unaccounted)
	if old >= lines {
		t.Fatalf("every old line was delivered: the test did not truncate unread bytes (pause the feed harder)")
	}
	if f.LostTails != 1 || f.LostBytes == 0 || f.Lossless {
		t.Errorf("live truncation of unread bytes: lostTails %d lostBytes %d lossless %v; want 1, > 0, false", f.LostTails, f.LostBytes, f.Lossless)
	}
	if unaccounted < 0 || unaccounted >= lineLen {
		t.Errorf("old size %d − delivered %d − lostBytes %d = %d: want 0 up to one partial line (< %d)", oldSize, int64(old)*lineLen, f.LostBytes, unaccounted, lineLen)
	}
	if code, stderr := statusExit(t, d, 5*time.Second); code != 1 {
		t.Errorf("tailfeed status: exit %d, want 1 (settled, lossy): %s", code, stderr)
	}
	d.stop()
}

// TestSameSizeRewrite: DESIGN §4 "Same-size rewrites": a file truncated and
// rewritten to exactly its old size between two looks (fsnotify off, a 1 s
// poll) changes only its mtime; the fingerprint's bytes are read again and
// differ, so it is a replacement: the new content is read from its start
// under a new epoch, nothing was unread, the feed stays lossless. (Within
// one mtime tick, or past the fingerprint, the rewrite is not seen: the
// README says so.)
func TestSameSizeRewrite(t *testing.T) {
	t.Parallel()
	p := newPeer(t, 1000, 5000, "TAILFEED_NO_FSNOTIFY=1")
	appendTo(t, p.app, "aaaa\nbbbb\n")
	d := p.start()
	p.expectOut("aaaa", "bbbb")
	r0 := p.whole(d)
	time.Sleep(50 * time.Millisecond) // a later mtime tick
	if err := os.WriteFile(p.app, []byte("cccc\ndddd\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.expectOut("aaaa", "bbbb", "cccc", "dddd")
	f := p.whole(d)
	if f.Epoch == r0.Epoch {
		t.Errorf("epoch %s kept across a same-size rewrite; a replacement gets a new epoch", f.Epoch)
	}
	d.stop()
}
