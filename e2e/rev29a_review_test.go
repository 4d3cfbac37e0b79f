package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Review 29a of commit aeb6476 (glob streams adopted while empty store
// their first bytes before their first line; an uncommitted glob pointer cut
// while stopped counts its tail).

const rev29ATmpl = `dataDir: ./state
status: {listen: "{{ADDR}}"}
feeds:
  - name: app
    path: ./logs/*.log
    readStrategy: COMMITTED
    pollIntervalMillis: 50
    rotateWaitMillis: 400
    closeInactiveMillis: {{CLOSE}}
processors:
  - {name: plain, feed: app, type: file, path: ./out/plain.log}
  - {name: once, feed: app, type: file, path: ./out/once.log, exactlyOnce: true}
  - {name: consumer, feed: app, type: pull, ackTimeoutMillis: 3000}
`

func rev29AEnv(t *testing.T, closeMillis int) *env {
	e := newEnv(t, strings.ReplaceAll(rev29ATmpl, "{{CLOSE}}", fmt.Sprint(closeMillis)))
	if err := os.MkdirAll(e.path("logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	return e
}

// rev29ALines returns n lines tag-000 … with width filler bytes.
func rev29ALines(tag string, n, width int) []string {
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, fmt.Sprintf("%s-%03d %s", tag, i, strings.Repeat("y", width)))
	}
	return out
}

func rev29AJoin(ls []string) string {
	if len(ls) == 0 {
		return ""
	}
	return strings.Join(ls, "\n") + "\n"
}

// rev29ACount counts the lines of a file by text.
func rev29ACount(path string) map[string]int {
	b, _ := os.ReadFile(path)
	got := map[string]int{}
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" {
			got[l]++
		}
	}
	return got
}

func rev29AHas(path string, n int) func() bool {
	return func() bool {
		b, _ := os.ReadFile(path)
		return bytes.Count(b, []byte("\n")) >= n
	}
}

func rev29APointers(t *testing.T, e *env) []pointerRecord {
	ptrs, _ := filepath.Glob(e.path("state/feeds/app/*.ptr"))
	var out []pointerRecord
	for _, p := range ptrs {
		if r, ok := showPointer(t, p); ok {
			out = append(out, r)
		}
	}
	return out
}

func rev29APuller() *aud10EPuller {
	return &aud10EPuller{acked: map[string]int{}, sent: map[string]bool{}, epGen: map[string]string{}, ids: map[string]string{}}
}

// rev29AEpochLines maps each epoch the puller saw to every line text seen
// under it (the puller keeps ids feed:epoch:pos → text).
func rev29AEpochLines(p *aud10EPuller) map[string][]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string][]string{}
	for id, txt := range p.ids {
		parts := strings.Split(id, ":")
		if len(parts) == 3 {
			out[parts[1]] = append(out[parts[1]], txt)
		}
	}
	return out
}

func rev29ALogrotate(t *testing.T, e *env, file, opts string) {
	t.Helper()
	lrBin, err := exec.LookPath("logrotate")
	if err != nil {
		t.Skip("logrotate not installed")
	}
	conf := e.path("logrotate-" + filepath.Base(file) + ".conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, "%s {\n%s\nmissingok\nnomail\n}\n", file, opts), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(lrBin, "-s", e.path("logrotate.state"), "-f", conf).CombinedOutput(); err != nil {
		t.Fatalf("logrotate: %v: %s", err, out)
	}
}

// Probe: two glob files adopted while empty whose first line is the same
// header, sent alone (headFirst stores a 13-byte fingerprint for both);
// their lines never acknowledged, kill -9, a.log rewritten in place with no
// copy while stopped. b.log (a glob file of its own, same first 13 bytes)
// is not taken for a's copy (findCopyBy skips glob files while resuming);
// a's cut is counted (lostTails 1), b's lines under one epoch, no pull id
// names two lines.
func TestRev29AOKIdenticalHeadNotTakenForCopy(t *testing.T) {
	t.Parallel()
	e := rev29AEnv(t, 300000)
	a, b := e.path("logs/a.log"), e.path("logs/b.log")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d0 := e.start()
	d0.waitFor("both files adopted", 15*time.Second, func(r *report) bool { return r.Feeds[0].State == "CAUGHT_UP" })
	time.Sleep(300 * time.Millisecond)
	const hdr = "ts,level,msg"
	appendTo(t, a, hdr+"\n")
	appendTo(t, b, hdr+"\n")
	plain := e.path("out/plain.log")
	waitUntil(t, "both headers delivered", 30*time.Second, rev29AHas(plain, 2))
	la, lb := rev29ALines("a", 20, 20), rev29ALines("b", 30, 20)
	appendTo(t, a, rev29AJoin(la))
	appendTo(t, b, rev29AJoin(lb))
	waitUntil(t, "every line delivered", 30*time.Second, rev29AHas(e.path("out/once.log"), 52))
	d0.kill()
	lefts := rev29APointers(t, e)
	// a.log truncated in place and rewritten while stopped, no copy.
	lc := rev29ALines("c", 10, 20)
	if err := os.WriteFile(a, []byte(rev29AJoin(lc)), 0o644); err != nil {
		t.Fatal(err)
	}
	d := e.start()
	p := rev29APuller()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { p.run(d.addr, stop) })
	r := d.waitFor("settled with the c lines read", 30*time.Second, func(r *report) bool {
		bb, _ := os.ReadFile(plain)
		return r.Settled && bytes.Contains(bb, []byte("c-009"))
	})
	close(stop)
	wg.Wait()
	f := r.feed(t, "app")
	t.Logf("pointers the kill left: %+v; lossless %v lostTails %d", lefts, f.Lossless, f.LostTails)
	byEpoch := rev29AEpochLines(p)
	epochsOf := map[string]map[string]bool{}
	for ep, ls := range byEpoch {
		for _, l := range ls {
			if epochsOf[l] == nil {
				epochsOf[l] = map[string]bool{}
			}
			epochsOf[l][ep] = true
		}
	}
	multi := 0
	for _, l := range lb {
		if len(epochsOf[l]) > 1 {
			multi++
		}
	}
	if multi > 0 {
		t.Errorf("%d of b.log's %d lines were published under two epochs at the restart (b's own and another stream's)", multi, len(lb))
	}
	p.mu.Lock()
	if len(p.bad) > 0 {
		t.Errorf("ids naming two lines: %d (first %s)", len(p.bad), p.bad[0])
	}
	p.mu.Unlock()
	if f.Lossless || f.LostTails == 0 {
		t.Errorf("a.log's 20 never-acknowledged lines were cut with no copy: want lossless false and a lost tail, got lossless %v lostTails %d", f.Lossless, f.LostTails)
	}
	once := rev29ACount(e.path("out/once.log"))
	twice := 0
	for _, l := range lb {
		if once[l] > 1 {
			twice++
		}
	}
	if twice > 0 {
		t.Errorf("exactlyOnce sink holds %d of b.log's lines twice", twice)
	}
	for _, l := range lc {
		if once[l] == 0 {
			t.Errorf("exactlyOnce sink misses %q", l)
			break
		}
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("restart log: %s", tail(d.log(), 5000))
	}
}

// rev29ABanner: a file adopted while empty gets a banner line written on its
// own (delivered alone: headFirst stores the record at offset 0 with a
// fingerprint of the banner only), then 20 lines, delivered to every sink
// (the exactlyOnce one applies them) and never acknowledged by the pull
// consumer (nothing committed); kill -9; logrotate copytruncate (rotate
// `rotate`) while stopped; the application starts its new file with the same
// banner and 10 new lines. The restart must read the new lines under an
// epoch of their own (the exactlyOnce sink applies them) and count a lost
// tail when no copy holds the 20 never-acknowledged lines.
func rev29ABanner(t *testing.T, glob bool, rotate int) {
	tmpl := strings.ReplaceAll(rev29ATmpl, "{{CLOSE}}", "300000")
	if !glob {
		tmpl = strings.Replace(tmpl, "./logs/*.log", "./logs/app.log", 1)
		tmpl = strings.Replace(tmpl, "    closeInactiveMillis: 300000\n", "", 1)
	}
	e := newEnv(t, tmpl)
	if err := os.MkdirAll(e.path("logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	app := e.path("logs/app.log")
	if err := os.WriteFile(app, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	const banner = "=== app started ==="
	d0 := e.start()
	d0.waitFor("the input opened", 15*time.Second, func(r *report) bool { return r.Feeds[0].State == "CAUGHT_UP" })
	time.Sleep(300 * time.Millisecond)
	once, plain := e.path("out/once.log"), e.path("out/plain.log")
	appendTo(t, app, banner+"\n")
	waitUntil(t, "the banner applied", 30*time.Second, rev29AHas(once, 1))
	la := rev29ALines("a", 20, 20)
	appendTo(t, app, rev29AJoin(la))
	waitUntil(t, "the a lines applied", 30*time.Second, rev29AHas(once, 21))
	d0.kill()
	ptrs, _ := filepath.Glob(e.path("state/feeds/app*.ptr"))
	more, _ := filepath.Glob(e.path("state/feeds/app/*.ptr"))
	var lefts []pointerRecord
	for _, p := range append(ptrs, more...) {
		if r, ok := showPointer(t, p); ok {
			lefts = append(lefts, r)
		}
	}
	rev29ALogrotate(t, e, app, fmt.Sprintf("copytruncate\nrotate %d", rotate))
	lc := rev29ALines("c", 10, 20)
	appendTo(t, app, banner+"\n"+rev29AJoin(lc))
	d := e.start()
	p := rev29APuller()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { p.run(d.addr, stop) })
	r := d.waitFor("settled with the c lines read", 30*time.Second, func(r *report) bool {
		b, _ := os.ReadFile(plain)
		return r.Settled && bytes.Contains(b, []byte("c-009"))
	})
	close(stop)
	wg.Wait()
	f := r.feed(t, "app")
	got := rev29ACount(once)
	missing := 0
	for _, l := range lc {
		if got[l] == 0 {
			missing++
		}
	}
	t.Logf("pointers the kill left: %+v; lossless %v lostTails %d", lefts, f.Lossless, f.LostTails)
	if missing > 0 {
		t.Errorf("exactlyOnce sink misses %d of the %d new lines (skipped as applied: read under the first run's epoch from offset 0)", missing, len(lc))
	}
	p.mu.Lock()
	if len(p.bad) > 0 {
		t.Errorf("%d pull ids naming two lines (first: %s)", len(p.bad), p.bad[0])
	}
	p.mu.Unlock()
	// The pull consumer saw the c lines under the first run's epoch?
	for _, lp := range lefts {
		for _, txt := range rev29AEpochLines(p)[lp.Epoch] {
			if strings.HasPrefix(txt, "c-") {
				t.Errorf("the rewritten file's line %q was published under the first run's epoch %s", txt, lp.Epoch)
				break
			}
		}
	}
	if rotate == 0 && (f.Lossless || f.LostTails == 0) {
		t.Errorf("the 20 never-acknowledged a lines were cut with no copy: want lossless false and a lost tail, got lossless %v lostTails %d", f.Lossless, f.LostTails)
	}
	if rotate > 0 {
		for _, l := range la {
			p.mu.Lock()
			ok := p.acked[l] > 0
			p.mu.Unlock()
			if !ok {
				t.Errorf("the copy's never-acknowledged line %q was not delivered to the pull consumer at the restart", l)
				break
			}
		}
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("restart log: %s", tail(d.log(), 3000))
	}
}

// TestRev29AXGlobBannerCopytruncate — aeb6476's own scenario (glob file
// adopted while empty, kill -9 before the first commit, copytruncate while
// stopped, new lines) when the file starts with a fixed banner line
// ("=== app started ===", 20 bytes) written and delivered on its own
// before the other lines (an application's start banner, a CSV header).
//
// DESIGN §4 "Every new file gets a new epoch (… truncation …)"; §2 the
// exactlyOnce sink skips by (epoch, position); README "An epoch's first
// bytes before its first line": "… a copytruncate while stopped … they are
// read under a new epoch …, never under the epoch and positions of other
// lines". Expected: the 10 new lines applied by the exactlyOnce sink,
// published under a new epoch; the copy's 20 never-acknowledged lines
// delivered to the pull consumer. Observed: pointer left {Offset 0,
// FingerprintLength 20} (the banner only); the restart reads the new file
// from 0 under the first run's epoch: exactlyOnce misses 10 of 10 new
// lines, pull ids of the old epoch carry the c lines, the copy
// (app.log.1) is never read (a-000 never redelivered), lossless true.
// Cause: headFirst (source/file/commit.go:231-276, Store(0) at 257) stores the fingerprint
// over what the file holds at the epoch's FIRST batch only; the batches
// published after it, before the first commit, grow the published range
// far past the fingerprint (20 bytes of 560); at the restart the file at
// the path matches key + 20-byte fingerprint and offset 0 ("not shorter
// than the offset"), so it is the same file (§3) and read under the old
// epoch. Judgement call in part: §3's rule cannot see a rewrite that keeps
// the fingerprinted bytes; but here tailfeed itself published bytes past
// its fingerprint with nothing committed, and the fix's promise (README
// above) does not hold. (Growing the record's fingerprint, with an msync,
// before a batch is published past it while no commit exists would.)
func TestRev29AXGlobBannerCopytruncate(t *testing.T) {
	t.Parallel()
	rev29ABanner(t, true, 1)
}

// As TestRev29AXGlobBannerCopytruncate with `rotate 0` (no copy): the 20
// never-acknowledged lines are gone; expected lostTails ≥ 1 and lossless
// false (aeb6476 point 2, as TestGlobAdoptedEmptyKill9CopytruncateNoCopyCounted
// holds); observed lossless true, lostTails 0, and 10 of 10 new lines
// skipped by the exactlyOnce sink.
func TestRev29AXGlobBannerCopytruncateNoCopy(t *testing.T) {
	t.Parallel()
	rev29ABanner(t, true, 0)
}

// The same on a single-file feed (pre-existing since the single-file
// headFirst store, review 28b; same cause): 10 of 10 new lines skipped.
func TestRev29AXSingleBannerCopytruncate(t *testing.T) {
	t.Parallel()
	rev29ABanner(t, false, 1)
}

// rev29ARotStopped: a glob file adopted while empty, 20 lines delivered in
// one write (headFirst stores their first bytes), never acknowledged by
// the pull consumer, kill -9 (clean stop when clean), real logrotate with
// opts while stopped, 10 lines into the file at the path, restart with a
// consumer acknowledging everything. Every line must reach the exactlyOnce
// sink exactly once and be acknowledged by the consumer, no pull id may
// name two lines, and the feed stays lossless.
func rev29ARotStopped(t *testing.T, opts string, clean bool) {
	e := rev29AEnv(t, 300000)
	app := e.path("logs/app.log")
	if err := os.WriteFile(app, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	d0 := e.start()
	d0.waitFor("the input opened", 15*time.Second, func(r *report) bool { return r.Feeds[0].State == "CAUGHT_UP" })
	time.Sleep(300 * time.Millisecond)
	once, plain := e.path("out/once.log"), e.path("out/plain.log")
	la := rev29ALines("a", 20, 20)
	appendTo(t, app, rev29AJoin(la))
	waitUntil(t, "the a lines applied", 30*time.Second, rev29AHas(once, 20))
	if clean {
		d0.stop()
	} else {
		d0.kill()
	}
	if opts != "" {
		rev29ALogrotate(t, e, app, opts)
	}
	lc := rev29ALines("c", 10, 20)
	appendTo(t, app, rev29AJoin(lc))
	d := e.start()
	p := rev29APuller()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { p.run(d.addr, stop) })
	all := append(append([]string(nil), la...), lc...)
	r := d.waitFor("settled with every line acknowledged", 30*time.Second, func(r *report) bool {
		b, _ := os.ReadFile(plain)
		if !r.Settled || !bytes.Contains(b, []byte("c-009")) {
			return false
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, l := range all {
			if p.acked[l] == 0 {
				return false
			}
		}
		return true
	})
	close(stop)
	wg.Wait()
	f := r.feed(t, "app")
	got := rev29ACount(once)
	for _, l := range all {
		if got[l] != 1 {
			t.Errorf("exactlyOnce sink holds %q %d times, want 1", l, got[l])
		}
	}
	p.mu.Lock()
	if len(p.bad) > 0 {
		t.Errorf("%d pull ids naming two lines (first: %s)", len(p.bad), p.bad[0])
	}
	p.mu.Unlock()
	if !f.Lossless || f.LostTails != 0 {
		t.Errorf("nothing was lost: want lossless, got lossless %v lostTails %d detail %v", f.Lossless, f.LostTails, f.Detail)
	}
	if t.Failed() {
		t.Logf("restart log: %s", tail(d.log(), 3000))
	}
}

// No rotation: the file grows past its stored first bytes while stopped
// (read from 0 under its epoch, the exactlyOnce sink skips what it holds).
func TestRev29AOKGlobEmptyKillGrown(t *testing.T) {
	t.Parallel()
	rev29ARotStopped(t, "", false)
}

func TestRev29AOKGlobEmptyKillCreate(t *testing.T) {
	t.Parallel()
	rev29ARotStopped(t, "create\nrotate 1", false)
}

func TestRev29AOKGlobEmptyKillCreateCompress(t *testing.T) {
	t.Parallel()
	rev29ARotStopped(t, "create\nrotate 2\ncompress", false)
}

func TestRev29AOKGlobEmptyKillCopytruncateCompress(t *testing.T) {
	t.Parallel()
	rev29ARotStopped(t, "copytruncate\nrotate 2\ncompress", false)
}

func TestRev29AOKGlobEmptyKillCopytruncate(t *testing.T) {
	t.Parallel()
	rev29ARotStopped(t, "copytruncate\nrotate 1", false)
}

func TestRev29AOKGlobEmptyStopCopytruncate(t *testing.T) {
	t.Parallel()
	rev29ARotStopped(t, "copytruncate\nrotate 1", true)
}

// rev29AWideGlob: as rev29ARotStopped with the glob `./logs/*`, which also
// matches logrotate's copy app.log.1.
func rev29AWideGlob(t *testing.T, opts string) {
	rev29AWideGlobAt(t, opts, false)
}

func rev29AWideGlobAt(t *testing.T, opts string, withContent bool) {
	tmpl := strings.Replace(strings.ReplaceAll(rev29ATmpl, "{{CLOSE}}", "300000"), "./logs/*.log", "./logs/*", 1)
	e := newEnv(t, tmpl)
	if err := os.MkdirAll(e.path("logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	app := e.path("logs/app.log")
	la := rev29ALines("a", 20, 20)
	var first []byte
	if withContent {
		first = []byte(rev29AJoin(la))
	}
	if err := os.WriteFile(app, first, 0o644); err != nil {
		t.Fatal(err)
	}
	d0 := e.start()
	d0.waitFor("the input opened", 15*time.Second, func(r *report) bool { return r.Feeds[0].State == "CAUGHT_UP" })
	time.Sleep(300 * time.Millisecond)
	once, plain := e.path("out/once.log"), e.path("out/plain.log")
	if !withContent {
		appendTo(t, app, rev29AJoin(la))
	}
	waitUntil(t, "the a lines applied", 30*time.Second, rev29AHas(once, 20))
	d0.kill()
	lefts := rev29APointers(t, e)
	rev29ALogrotate(t, e, app, opts)
	lc := rev29ALines("c", 10, 20)
	appendTo(t, app, rev29AJoin(lc))
	d := e.start()
	p := rev29APuller()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { p.run(d.addr, stop) })
	all := append(append([]string(nil), la...), lc...)
	r := d.waitFor("settled with every line acknowledged", 30*time.Second, func(r *report) bool {
		b, _ := os.ReadFile(plain)
		if !r.Settled || !bytes.Contains(b, []byte("c-009")) {
			return false
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, l := range all {
			if p.acked[l] == 0 {
				return false
			}
		}
		return true
	})
	close(stop)
	wg.Wait()
	f := r.feed(t, "app")
	got := rev29ACount(once)
	twice := 0
	for _, l := range all {
		if got[l] != 1 {
			twice++
		}
	}
	p.mu.Lock()
	nbad := len(p.bad)
	acks := 0
	for _, l := range la {
		acks += p.acked[l]
	}
	p.mu.Unlock()
	t.Logf("pointers the kill left: %+v; lossless %v lostTails %d; a lines acked %d times in all", lefts, f.Lossless, f.LostTails, acks)
	if twice > 0 {
		t.Errorf("exactlyOnce sink: %d of %d lines not exactly once (e.g. %q %d times)", twice, len(all), la[0], got[la[0]])
	}
	if nbad > 0 {
		t.Errorf("%d pull ids naming two lines", nbad)
	}
	if !f.Lossless || f.LostTails != 0 {
		t.Errorf("nothing was lost: want lossless, got lossless %v lostTails %d", f.Lossless, f.LostTails)
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("restart log: %s", tail(d.log(), 4000))
	}
}

// TestRev29AXWideGlobEmptyKillCopytruncate — aeb6476's scenario (glob file
// adopted while empty, 20 lines applied by the exactlyOnce sink and never
// acknowledged by the pull consumer, kill -9, copytruncate rotate 1 while
// stopped, 10 new lines) with the glob `./logs/*`, which matches the copy
// app.log.1 too (a common glob for a log directory).
//
// DESIGN §2 exactlyOnce sinks "skip re-deliveries" by (epoch, position);
// §10 "Exactly-once output is byte-identical per input file"; §10 "At a
// start, a new key whose first bytes match a stream whose file is now
// shorter than its offset is that stream's copy at once". Expected (as
// with `./logs/*.log`, TestGlobAdoptedEmptyKill9CopytruncateNewEpoch, and as
// with a pointer committed past 0, TestRev29AOKWideGlobCommittedKillCopytruncate):
// the copy read from the pointer's offset under the stream's epoch, each of
// the 30 lines once in the exactlyOnce output. Observed: 20 of 30 lines
// twice (every a line): the start logs "a glob file gone while stopped has
// a copy holding its bytes; the copy is read from its start" and reads
// app.log.1 as a new stream under a new epoch. Cause: Glob.adoptCopies
// (source/file/glob.go:5069) skips a record with Offset 0 — which aeb6476
// now gives first bytes for glob streams adopted while empty — so the
// pointer falls to the gone-at-start handling (glob.go:3892-3966), which
// resets it and lets the copy be read from its start under a new epoch.
// The same with the file adopted holding its lines
// (TestRev29AXWideGlobWithContentKillCopytruncate: 20 of 30 twice too), so
// the gap is the glob start's for any never-committed pointer, which
// aeb6476 extended to glob files adopted while empty rather than closed.
// Sure (reproduces every run); the duplicates are of lines not committed
// at the kill, but the exactlyOnce sink had applied them under the old
// epoch: judgement call whether §2 allows them there (the narrow glob
// shows tailfeed avoids them).
func TestRev29AXWideGlobEmptyKillCopytruncate(t *testing.T) {
	t.Parallel()
	rev29AWideGlob(t, "copytruncate\nrotate 1")
}

// Probe: as TestRev29AXWideGlobEmptyKillCopytruncate with `create`
// (app.log.1 keeps the key: found by key, read under its epoch).
func TestRev29AOKWideGlobEmptyKillCreate(t *testing.T) {
	t.Parallel()
	rev29AWideGlob(t, "create\nrotate 1")
}

// Probe (comparison for TestRev29AXWideGlobEmptyKillCopytruncate): the same
// wide glob with the pointer committed past 0 (20 lines acknowledged and
// committed, 10 more delivered and not), kill -9, copytruncate while
// stopped: the copy app.log.1 (in the glob) is read from the pointer under
// the stream's epoch, the exactlyOnce sink holds every line once.
func TestRev29AOKWideGlobCommittedKillCopytruncate(t *testing.T) {
	t.Parallel()
	tmpl := strings.Replace(strings.ReplaceAll(rev29ATmpl, "{{CLOSE}}", "300000"), "./logs/*.log", "./logs/*", 1)
	e := newEnv(t, tmpl)
	if err := os.MkdirAll(e.path("logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	app := e.path("logs/app.log")
	if err := os.WriteFile(app, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	d0 := e.start()
	d0.waitFor("the input opened", 15*time.Second, func(r *report) bool { return r.Feeds[0].State == "CAUGHT_UP" })
	once, plain := e.path("out/once.log"), e.path("out/plain.log")
	p0 := rev29APuller()
	stop0 := make(chan struct{})
	var wg0 sync.WaitGroup
	wg0.Go(func() { p0.run(d0.addr, stop0) })
	la := rev29ALines("a", 20, 20)
	appendTo(t, app, rev29AJoin(la))
	d0.waitFor("the a lines committed", 30*time.Second, func(r *report) bool {
		p0.mu.Lock()
		defer p0.mu.Unlock()
		return r.Settled && p0.acked[la[19]] > 0
	})
	close(stop0)
	wg0.Wait()
	lb := rev29ALines("b", 10, 20)
	appendTo(t, app, rev29AJoin(lb))
	waitUntil(t, "the b lines applied", 30*time.Second, rev29AHas(once, 30))
	d0.kill()
	lefts := rev29APointers(t, e)
	rev29ALogrotate(t, e, app, "copytruncate\nrotate 1")
	lc := rev29ALines("c", 10, 20)
	appendTo(t, app, rev29AJoin(lc))
	d := e.start()
	p := rev29APuller()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { p.run(d.addr, stop) })
	all := append(append(append([]string(nil), la...), lb...), lc...)
	r := d.waitFor("settled with the c lines read", 30*time.Second, func(r *report) bool {
		b, _ := os.ReadFile(plain)
		return r.Settled && bytes.Contains(b, []byte("c-009"))
	})
	close(stop)
	wg.Wait()
	f := r.feed(t, "app")
	got := rev29ACount(once)
	bad := 0
	for _, l := range all {
		if got[l] != 1 {
			bad++
		}
	}
	t.Logf("pointers the kill left: %+v; lossless %v lostTails %d", lefts, f.Lossless, f.LostTails)
	if bad > 0 {
		t.Errorf("exactlyOnce sink: %d of %d lines not exactly once (a-000 %d, b-000 %d, c-000 %d)", bad, len(all), got[la[0]], got[lb[0]], got[lc[0]])
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("restart log: %s", tail(d.log(), 4000))
	}
}

// rev29ALiveThenKill: a glob file adopted while empty gets 20 lines
// (delivered, never acknowledged), is rotated by logrotate (opts) while
// running, gets 10 lines in its new file (held behind the epoch barrier),
// then kill -9 and a restart with a consumer acknowledging everything. A
// second glob file stays empty throughout. Every line once in the
// exactlyOnce sink, every line acknowledged, lossless, no id naming two
// lines.
func rev29ALiveThenKill(t *testing.T, opts string) {
	e := rev29AEnv(t, 300000)
	app, quiet := e.path("logs/app.log"), e.path("logs/quiet.log")
	for _, p := range []string{app, quiet} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d0 := e.start()
	d0.waitFor("the inputs opened", 15*time.Second, func(r *report) bool { return r.Feeds[0].State == "CAUGHT_UP" })
	time.Sleep(300 * time.Millisecond)
	once, plain := e.path("out/once.log"), e.path("out/plain.log")
	la := rev29ALines("a", 20, 20)
	appendTo(t, app, rev29AJoin(la))
	waitUntil(t, "the a lines applied", 30*time.Second, rev29AHas(once, 20))
	rev29ALogrotate(t, e, app, opts)
	if _, err := os.Stat(app); err != nil {
		if err := os.WriteFile(app, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lc := rev29ALines("c", 10, 20)
	appendTo(t, app, rev29AJoin(lc))
	time.Sleep(800 * time.Millisecond) // the rotation seen (rotateWaitMillis 400) before the kill
	d0.kill()
	lefts := rev29APointers(t, e)
	d := e.start()
	p := rev29APuller()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { p.run(d.addr, stop) })
	all := append(append([]string(nil), la...), lc...)
	r := d.waitFor("settled with every line acknowledged", 30*time.Second, func(r *report) bool {
		b, _ := os.ReadFile(plain)
		if !r.Settled || !bytes.Contains(b, []byte("c-009")) {
			return false
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, l := range all {
			if p.acked[l] == 0 {
				return false
			}
		}
		return true
	})
	close(stop)
	wg.Wait()
	f := r.feed(t, "app")
	got := rev29ACount(once)
	for _, l := range all {
		if got[l] != 1 {
			t.Errorf("exactlyOnce sink holds %q %d times, want 1", l, got[l])
			break
		}
	}
	p.mu.Lock()
	if len(p.bad) > 0 {
		t.Errorf("%d pull ids naming two lines (first %s)", len(p.bad), p.bad[0])
	}
	p.mu.Unlock()
	if !f.Lossless || f.LostTails != 0 {
		t.Errorf("nothing was lost: want lossless, got lossless %v lostTails %d", f.Lossless, f.LostTails)
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("pointers the kill left: %+v", lefts)
		t.Logf("restart log: %s", tail(d.log(), 3000))
	}
}

func TestRev29AOKGlobEmptyLiveCreateThenKill(t *testing.T) {
	t.Parallel()
	rev29ALiveThenKill(t, "create\nrotate 1")
}

func TestRev29AOKGlobEmptyLiveCopytruncateThenKill(t *testing.T) {
	t.Parallel()
	rev29ALiveThenKill(t, "copytruncate\nrotate 1")
}

func TestRev29AOKGlobEmptyLiveCopytruncateCompressThenKill(t *testing.T) {
	t.Parallel()
	rev29ALiveThenKill(t, "copytruncate\nrotate 2\ncompress")
}

// TestRev29AXGlobBannerCreateCompressTwice — a glob file adopted while
// empty, a banner line delivered alone (headFirst stores a 20-byte
// fingerprint), 20 a lines applied by the exactlyOnce sink and never
// acknowledged, kill -9; while stopped logrotate `create` + `compress` twice:
// app.log.2.gz = banner + 20 a lines (the pointer's file), app.log.1.gz =
// banner + 10 b lines, app.log = banner + 5 c lines.
//
// DESIGN §4 "Restart after rotation": the pointer's generation is "the file
// with the pointer's file key and fingerprint, or, when none, a file
// matching the fingerprint alone (… a `.gz` by its decompressed bytes)",
// later generations "each under its own new epoch", "oldest first";
// "Reading a file twice is a duplicate, never a gap". Expected: every
// line once in the exactlyOnce output. Observed: "reading the pointer's
// file first: file=app.log.1.gz offset=0" — the b generation taken for the
// pointer's (its first 20 bytes are the banner too) and read under the
// first run's epoch from 0: the exactlyOnce sink skips all 10 b lines as
// applied (b-000…b-009 ×0: a gap, lossless true), then app.log.2.gz is read
// as a "later generation" after it, under a new epoch (a-000…a-019 ×2).
// Cause: the 20-byte fingerprint headFirst stored (commit.go:257, now for
// glob streams) matches every generation the application starts with its
// banner; resumeRotated → copyAt → findGzCopy (open.go:874) takes one by
// that alone. Before aeb6476 a glob record adopted while empty had no first
// bytes (by reading: resumeRotated's gone0 path counted the tail lost,
// lossless false) — the change turns a counted loss into a silent gap for
// this file. Sure it fails; the before-state is by reading only.
func TestRev29AXGlobBannerCreateCompressTwice(t *testing.T) {
	t.Parallel()
	rev29AGzTwice(t, "=== app started ===")
}

// Probe: the same without a banner (each file's first line its own): the
// stored first bytes pick app.log.2.gz, every line once.
func TestRev29AOKGlobCreateCompressTwice(t *testing.T) {
	t.Parallel()
	rev29AGzTwice(t, "")
}

func rev29AGzTwice(t *testing.T, banner string) {
	e := rev29AEnv(t, 300000)
	app := e.path("logs/app.log")
	if err := os.WriteFile(app, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	head := func() string {
		if banner == "" {
			return ""
		}
		return banner + "\n"
	}
	n0 := 0
	if banner != "" {
		n0 = 1
	}
	d0 := e.start()
	d0.waitFor("the input opened", 15*time.Second, func(r *report) bool { return r.Feeds[0].State == "CAUGHT_UP" })
	time.Sleep(300 * time.Millisecond)
	once, plain := e.path("out/once.log"), e.path("out/plain.log")
	if banner != "" {
		appendTo(t, app, banner+"\n")
		waitUntil(t, "the banner applied", 30*time.Second, rev29AHas(once, 1))
	}
	la := rev29ALines("a", 20, 20)
	appendTo(t, app, rev29AJoin(la))
	waitUntil(t, "the a lines applied", 30*time.Second, rev29AHas(once, 20+n0))
	d0.kill()
	lefts := rev29APointers(t, e)
	rev29ALogrotate(t, e, app, "create\nrotate 3\ncompress")
	lb := rev29ALines("b", 10, 20)
	appendTo(t, app, head()+rev29AJoin(lb))
	time.Sleep(1100 * time.Millisecond) // distinct mtimes
	rev29ALogrotate(t, e, app, "create\nrotate 3\ncompress")
	lc := rev29ALines("c", 5, 20)
	appendTo(t, app, head()+rev29AJoin(lc))
	d := e.start()
	p := rev29APuller()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { p.run(d.addr, stop) })
	r := d.waitFor("settled with the c lines read", 30*time.Second, func(r *report) bool {
		b, _ := os.ReadFile(plain)
		return r.Settled && bytes.Contains(b, []byte("c-004"))
	})
	close(stop)
	wg.Wait()
	f := r.feed(t, "app")
	got := rev29ACount(once)
	all := append(append(append([]string(nil), la...), lb...), lc...)
	var miss, unacked []string
	for _, l := range all {
		if got[l] != 1 {
			miss = append(miss, fmt.Sprintf("%s×%d", l[:5], got[l]))
		}
		p.mu.Lock()
		if p.acked[l] == 0 {
			unacked = append(unacked, l[:5])
		}
		p.mu.Unlock()
	}
	t.Logf("pointers the kill left: %+v; lossless %v lostTails %d", lefts, f.Lossless, f.LostTails)
	if len(miss) > 0 {
		t.Errorf("exactlyOnce sink: %d of %d lines not exactly once: %v", len(miss), len(all), miss)
	}
	if len(unacked) > 0 {
		t.Errorf("%d of %d lines never delivered to (acknowledged by) the consumer at the restart: %v", len(unacked), len(all), unacked)
	}
	p.mu.Lock()
	if len(p.bad) > 0 {
		t.Errorf("%d pull ids naming two lines (first %s)", len(p.bad), p.bad[0])
	}
	p.mu.Unlock()
	if t.Failed() || testing.Verbose() {
		t.Logf("restart log: %s", tail(d.log(), 3000))
	}
}

// Scope of TestRev29AXWideGlobEmptyKillCopytruncate: the file holding its
// 20 lines when the glob adopts it (a record naming no file, its first
// bytes in the epochs file: not aeb6476's store).
func TestRev29AXWideGlobWithContentKillCopytruncate(t *testing.T) {
	t.Parallel()
	rev29AWideGlobAt(t, "copytruncate\nrotate 1", true)
}
