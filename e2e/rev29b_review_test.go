package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Review 29b of aeb6476 (a glob stream adopted while empty gets its first
// bytes stored before its first line; an uncommitted glob pointer cut while
// stopped counts its tail).

const rev29BTmpl = `dataDir: ./state
status: {listen: "{{ADDR}}"}
shutdownTimeoutMillis: 1000
feeds:
  - name: app
    path: ./logs/*.log
    readStrategy: COMMITTED
    pollIntervalMillis: 50
    rotateWaitMillis: 400
    scanIntervalMillis: 300
processors:
  - {name: plain, feed: app, type: file, path: ./out/plain.log}
  - {name: once, feed: app, type: file, path: ./out/once.log, exactlyOnce: true}
  - {name: consumer, feed: app, type: pull, ackTimeoutMillis: 3000}
`

// rev29BRig is one glob feed over logs/*.log with a plain file sink, an
// exactlyOnce file sink and a pull consumer (acknowledging only while a
// rev29BPull runs).
type rev29BRig struct {
	t   *testing.T
	e   *env
	mu  sync.Mutex
	all map[string][]string // file → every line written to it, in order
}

func rev29BNew(t *testing.T) *rev29BRig {
	return rev29BNewWith(t, "")
}

// rev29BNewWith adds feed keys (one "    key: value\n" line each).
func rev29BNewWith(t *testing.T, feedKeys string) *rev29BRig {
	e := newEnv(t, strings.Replace(rev29BTmpl, "    scanIntervalMillis: 300\n", "    scanIntervalMillis: 300\n"+feedKeys, 1))
	if err := os.MkdirAll(e.path("logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	return &rev29BRig{t: t, e: e, all: map[string][]string{}}
}

// create makes logs/name empty.
func (r *rev29BRig) create(name string) {
	if err := os.WriteFile(r.e.path("logs/"+name), nil, 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// write appends n lines "<tag>-NNN yyyy…" to logs/name and returns them.
func (r *rev29BRig) write(name, tag string, n int) []string {
	var b strings.Builder
	var ls []string
	for i := 0; i < n; i++ {
		s := fmt.Sprintf("%s-%03d %s", tag, i, strings.Repeat("y", 20))
		ls = append(ls, s)
		b.WriteString(s + "\n")
	}
	appendTo(r.t, r.e.path("logs/"+name), b.String())
	r.mu.Lock()
	r.all[name] = append(r.all[name], ls...)
	r.mu.Unlock()
	return ls
}

// lines counts the lines of an output.
func (r *rev29BRig) lines(out string) map[string]int {
	b, _ := os.ReadFile(r.e.path("out/" + out))
	got := map[string]int{}
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" {
			got[l]++
		}
	}
	return got
}

// waitOut waits until every line of want is in out.
func (r *rev29BRig) waitOut(out string, want []string) {
	waitUntil(r.t, fmt.Sprintf("%s holds %d lines", out, len(want)), 30*time.Second, func() bool {
		got := r.lines(out)
		for _, s := range want {
			if got[s] == 0 {
				return false
			}
		}
		return true
	})
}

// logrotate runs logrotate once (forced) with body for logs/name.
func (r *rev29BRig) logrotate(name, body string) {
	lr, err := exec.LookPath("logrotate")
	if err != nil {
		r.t.Skip("logrotate not installed")
	}
	conf := r.e.path("lr-" + name + ".conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, "%s {\n%s\nmissingok\nnomail\n}\n", r.e.path("logs/"+name), body), 0o644); err != nil {
		r.t.Fatal(err)
	}
	if out, err := exec.Command(lr, "-s", r.e.path("logrotate.state"), "-f", conf).CombinedOutput(); err != nil {
		r.t.Fatalf("logrotate: %v: %s", err, out)
	}
}

// rev29BPull runs an acknowledging pull client on d until the returned
// stop is called.
func rev29BPull(d *daemon) (*aud10EPuller, func()) {
	p := &aud10EPuller{acked: map[string]int{}, sent: map[string]bool{}, epGen: map[string]string{}, ids: map[string]string{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { p.run(d.addr, stop) })
	var once sync.Once
	return p, func() { once.Do(func() { close(stop); wg.Wait() }) }
}

// settle waits until d's feed is settled with every line of want in the
// plain output, and returns the feed's report.
func (r *rev29BRig) settle(d *daemon, want []string) feedReport {
	rep := d.waitFor("settled with every line written read", 30*time.Second, func(rep *report) bool {
		if !rep.Settled {
			return false
		}
		got := r.lines("plain.log")
		for _, s := range want {
			if got[s] == 0 {
				return false
			}
		}
		return true
	})
	return rep.feed(r.t, "app")
}

// missing lists the lines of want that out does not hold, and those it
// holds more than once.
func (r *rev29BRig) missing(out string, want []string) (miss, twice []string) {
	got := r.lines(out)
	for _, s := range want {
		switch {
		case got[s] == 0:
			miss = append(miss, s)
		case got[s] > 1:
			twice = append(twice, s)
		}
	}
	return miss, twice
}

func rev29BIno(t *testing.T, path string) uint64 {
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Sys().(*syscall.Stat_t).Ino
}

func rev29BFirst(xs []string) string {
	if len(xs) == 0 {
		return ""
	}
	return xs[0]
}

// rev29BPointers shows every stream pointer of the feed.
func (r *rev29BRig) pointers() []pointerRecord {
	ptrs, _ := filepath.Glob(r.e.path("state/feeds/app/*.ptr"))
	var out []pointerRecord
	for _, p := range ptrs {
		rec, _ := showPointer(r.t, p)
		out = append(out, rec)
	}
	return out
}

// Two glob files adopted while empty get the same first line (a header),
// then lines of their own; kill -9 before any commit (the pull consumer
// never acknowledged); a.log is deleted while stopped. a.log's lines were
// never acknowledged by the consumer and are gone: one lost tail. b.log
// must not be taken for a.log's copy by its first bytes (read twice in the
// restart, its lines under a.log's epoch).
func TestRev29BOKSameHeaderDeletedWhileStopped(t *testing.T) {
	t.Parallel()
	r := rev29BNew(t)
	r.create("a.log")
	r.create("b.log")
	d0 := r.e.start()
	d0.waitFor("caught up", 10*time.Second, func(rep *report) bool { return rep.Feeds[0].State == "CAUGHT_UP" })
	time.Sleep(300 * time.Millisecond)
	hdr := r.write("a.log", "hdr", 1)
	r.write("b.log", "hdr", 1)
	waitUntil(t, "both headers delivered", 30*time.Second, func() bool { return r.lines("plain.log")[hdr[0]] >= 2 })
	as := r.write("a.log", "a", 5)
	bs := r.write("b.log", "b", 5)
	r.waitOut("once.log", append(append([]string(nil), as...), bs...))
	d0.kill()
	left := r.pointers()
	for _, p := range left {
		if p.Offset != 0 || p.FingerprintLength == 0 {
			t.Logf("pointer left: %+v (want offset 0 with first bytes)", p)
		}
	}
	if err := os.Remove(r.e.path("logs/a.log")); err != nil {
		t.Fatal(err)
	}
	d := r.e.start()
	p, stop := rev29BPull(d)
	b2 := r.write("b.log", "b2", 3)
	f := r.settle(d, b2)
	stop()
	plain := r.lines("plain.log")
	for _, s := range append(append([]string(nil), bs...), b2...) {
		if plain[s] > 2 || (plain[s] > 1 && strings.HasPrefix(s, "b2-")) {
			t.Errorf("%q delivered %d times to the plain sink (once per life at most)", s, plain[s])
		}
	}
	p.mu.Lock()
	for _, l := range left {
		if ln, ok := p.epGen[l.Epoch]; ok && strings.HasPrefix(ln, "b") && l.Epoch != "" {
			// Only b.log's own pointer may carry b lines.
			n := 0
			for _, l2 := range left {
				if ln2, ok := p.epGen[l2.Epoch]; ok && strings.HasPrefix(ln2, "b") {
					n++
				}
			}
			if n > 1 {
				t.Errorf("b.log's lines published under %d of the first run's epochs (a.log's too)", n)
			}
			break
		}
	}
	if len(p.bad) > 0 {
		t.Errorf("ids naming two lines: %v", p.bad)
	}
	p.mu.Unlock()
	if f.Lossless || f.LostTails != 1 {
		t.Errorf("a.log (5 lines never acknowledged) deleted while stopped: want lossless false, lostTails 1; got lossless %v lostTails %d lostBytes %d detail %v",
			f.Lossless, f.LostTails, f.LostBytes, f.Detail)
	}
	t.Logf("pointers left %+v; lostTails %d lostBytes %d", left, f.LostTails, f.LostBytes)
}

// rev29BKillRotate: app.log adopted while empty, 20 lines appended and
// delivered, kill -9 before the first commit (the consumer never
// acknowledged), lr run while stopped (logrotate body), 10 new lines at
// app.log (when it exists), restart with an acknowledging consumer.
// Nothing is lost when a copy or a generation holds the lines; the
// exactlyOnce sink ends with every line once; no id names two lines; no
// line of the new file under the first run's epoch.
func rev29BKillRotate(t *testing.T, body string, lossWanted bool) {
	r := rev29BNew(t)
	r.create("app.log")
	d0 := r.e.start()
	d0.waitFor("caught up", 10*time.Second, func(rep *report) bool { return rep.Feeds[0].State == "CAUGHT_UP" })
	time.Sleep(300 * time.Millisecond)
	as := r.write("app.log", "a", 20)
	r.waitOut("once.log", as)
	d0.kill()
	left := r.pointers()
	r.logrotate("app.log", body)
	if _, err := os.Stat(r.e.path("logs/app.log")); err != nil {
		r.create("app.log")
	}
	cs := r.write("app.log", "c", 10)
	d := r.e.start()
	p, stop := rev29BPull(d)
	f := r.settle(d, cs)
	stop()
	want := append(append([]string(nil), as...), cs...)
	if lossWanted {
		want = cs
	}
	miss, twice := r.missing("once.log", want)
	if len(miss) > 0 || len(twice) > 0 {
		t.Errorf("exactlyOnce sink: %d of %d missing (first %q), %d twice (first %q)", len(miss), len(want), rev29BFirst(miss), len(twice), rev29BFirst(twice))
	}
	p.mu.Lock()
	for _, s := range want {
		if p.acked[s] == 0 {
			t.Errorf("pull: %q never acknowledged in the restart", s)
			break
		}
	}
	for _, l := range left {
		if ln, ok := p.epGen[l.Epoch]; ok && strings.HasPrefix(ln, "c-") {
			t.Errorf("the new file's lines (%q) under the first run's epoch %s", ln, l.Epoch)
		}
	}
	if len(p.bad) > 0 {
		t.Errorf("ids naming two lines: %v", p.bad)
	}
	p.mu.Unlock()
	if lossWanted != (!f.Lossless) || (lossWanted && f.LostTails == 0) || (!lossWanted && f.LostTails != 0) {
		t.Errorf("want lossless %v; got lossless %v lostTails %d lostBytes %d detail %v", !lossWanted, f.Lossless, f.LostTails, f.LostBytes, f.Detail)
	}
	t.Logf("pointers left %+v; lossless %v lostTails %d", left, f.Lossless, f.LostTails)
}

func TestRev29BOKKillCreateCompress(t *testing.T) {
	t.Parallel()
	rev29BKillRotate(t, "create\nrotate 3\ncompress", false)
}

func TestRev29BOKKillCopytruncateCompress(t *testing.T) {
	t.Parallel()
	rev29BKillRotate(t, "copytruncate\nrotate 3\ncompress", false)
}

func TestRev29BOKKillCreateNoCopy(t *testing.T) {
	t.Parallel()
	// rotate 0 with create: the old file is deleted, its 20 lines never
	// acknowledged: a lost tail.
	rev29BKillRotate(t, "create\nrotate 0", true)
}

func TestRev29BOKKillCopytruncateDelaycompress(t *testing.T) {
	t.Parallel()
	rev29BKillRotate(t, "copytruncate\nrotate 3\ncompress\ndelaycompress", false)
}

// rev29BLive: app.log adopted while empty gets 20 lines; with closeWait the
// consumer acknowledges them and the stream is left to close as inactive
// (closeInactiveMillis 300) after its commit, else the consumer is absent
// (nothing committed, the stream open). Then logrotate (body) runs live and
// 10 new lines are written at app.log; the consumer then acknowledges
// everything. Nothing is lost: lossless true, every line once in the
// exactlyOnce output, the new lines never under the first epoch.
func rev29BLive(t *testing.T, body string, closeWait bool) {
	r := rev29BNewWith(t, "    closeInactiveMillis: 300\n")
	r.create("app.log")
	d := r.e.start()
	d.waitFor("caught up", 10*time.Second, func(rep *report) bool { return rep.Feeds[0].State == "CAUGHT_UP" })
	time.Sleep(300 * time.Millisecond)
	as := r.write("app.log", "a", 20)
	r.waitOut("once.log", as)
	var p *aud10EPuller
	stop := func() {}
	if closeWait {
		p, stop = rev29BPull(d)
		waitUntil(t, "the stream committed and closed", 20*time.Second, func() bool {
			code, body, err := d.get("/feed.status?files=1")
			return err == nil && code == 200 && bytes.Contains(body, []byte(`"CLOSED"`))
		})
	}
	firstEpochs := map[string]bool{}
	for _, pr := range r.pointers() {
		firstEpochs[pr.Epoch] = true
	}
	r.logrotate("app.log", body)
	if _, err := os.Stat(r.e.path("logs/app.log")); err != nil {
		r.create("app.log")
	}
	cs := r.write("app.log", "c", 10)
	if !closeWait {
		p, stop = rev29BPull(d)
	}
	f := r.settle(d, cs)
	stop()
	want := append(append([]string(nil), as...), cs...)
	miss, twice := r.missing("once.log", want)
	if len(miss) > 0 || len(twice) > 0 {
		t.Errorf("exactlyOnce sink: %d of %d missing (first %q), %d twice (first %q)", len(miss), len(want), rev29BFirst(miss), len(twice), rev29BFirst(twice))
	}
	miss, twice = r.missing("plain.log", want)
	if len(miss) > 0 || len(twice) > 0 {
		t.Errorf("plain sink (no crash): %d of %d missing (first %q), %d twice (first %q)", len(miss), len(want), rev29BFirst(miss), len(twice), rev29BFirst(twice))
	}
	p.mu.Lock()
	for e := range firstEpochs {
		if ln, ok := p.epGen[e]; ok && strings.HasPrefix(ln, "c-") {
			t.Errorf("the new lines (%q) under the first epoch %s", ln, e)
		}
	}
	if len(p.bad) > 0 {
		t.Errorf("ids naming two lines: %v", p.bad)
	}
	p.mu.Unlock()
	if !f.Lossless || f.LostTails != 0 || f.LostBytes != 0 {
		t.Errorf("nothing was lost (every line read before the rotation): want lossless true; got lossless %v lostTails %d lostBytes %d detail %v", f.Lossless, f.LostTails, f.LostBytes, f.Detail)
	}
}

func TestRev29BOKLiveCopytruncateNoCopyUncommitted(t *testing.T) {
	t.Parallel()
	rev29BLive(t, "copytruncate\nrotate 0", false)
}

func TestRev29BOKLiveCopytruncateNoCopyClosed(t *testing.T) {
	t.Parallel()
	rev29BLive(t, "copytruncate\nrotate 0", true)
}

func TestRev29BOKLiveCopytruncateCompressClosed(t *testing.T) {
	t.Parallel()
	rev29BLive(t, "copytruncate\nrotate 2\ncompress", true)
}

func TestRev29BOKLiveCreateCompressClosed(t *testing.T) {
	t.Parallel()
	rev29BLive(t, "create\nrotate 2\ncompress", true)
}

func TestRev29BOKLiveCreateUncommitted(t *testing.T) {
	t.Parallel()
	rev29BLive(t, "create\nrotate 2", false)
}

// rev29BSameHeader: a.log and b.log adopted while empty get the same first
// line, then 5 lines of their own each (same lengths); kill -9 before any
// commit (the consumer never acknowledged); a.log rotated while stopped
// with body; 10 new lines at a.log; restart with an acknowledging
// consumer. a.log's pointer names its file by key and the header's
// fingerprint: only a.log's own copy or generation is its continuation,
// never b.log (a stream of its own with the same first bytes).
func rev29BSameHeader(t *testing.T, body string) {
	r := rev29BNew(t)
	r.create("a.log")
	r.create("b.log")
	d0 := r.e.start()
	d0.waitFor("caught up", 10*time.Second, func(rep *report) bool { return rep.Feeds[0].State == "CAUGHT_UP" })
	time.Sleep(300 * time.Millisecond)
	hdr := r.write("a.log", "hdr", 1)
	r.write("b.log", "hdr", 1)
	waitUntil(t, "both headers delivered", 30*time.Second, func() bool { return r.lines("plain.log")[hdr[0]] >= 2 })
	as := r.write("a.log", "a", 5)
	bs := r.write("b.log", "b", 5)
	r.waitOut("once.log", append(append([]string(nil), as...), bs...))
	d0.kill()
	left := r.pointers()
	r.logrotate("a.log", body)
	if _, err := os.Stat(r.e.path("logs/a.log")); err != nil {
		r.create("a.log")
	}
	cs := r.write("a.log", "c", 10)
	d := r.e.start()
	p, stop := rev29BPull(d)
	f := r.settle(d, cs)
	stop()
	plain := r.lines("plain.log")
	for _, s := range bs {
		if plain[s] > 2 {
			t.Errorf("%q delivered %d times to the plain sink (once per life)", s, plain[s])
		}
	}
	want := append(append(append([]string(nil), as...), bs...), cs...)
	miss, twice := r.missing("once.log", want)
	if len(miss) > 0 || len(twice) > 0 {
		t.Errorf("exactlyOnce sink: %d of %d missing (first %q), %d twice (first %q)", len(miss), len(want), rev29BFirst(miss), len(twice), rev29BFirst(twice))
	}
	p.mu.Lock()
	if len(p.bad) > 0 {
		t.Errorf("ids naming two lines: %v", p.bad)
	}
	for _, s := range want {
		if p.acked[s] == 0 {
			t.Errorf("pull: %q never acknowledged in the restart", s)
			break
		}
	}
	p.mu.Unlock()
	if !f.Lossless || f.LostTails != 0 {
		t.Errorf("a copy holds a.log's lines: want lossless true; got lossless %v lostTails %d detail %v", f.Lossless, f.LostTails, f.Detail)
	}
	t.Logf("pointers left %+v", left)
}

func TestRev29BOKSameHeaderCopytruncate(t *testing.T) {
	t.Parallel()
	rev29BSameHeader(t, "copytruncate\nrotate 1")
}

func TestRev29BOKSameHeaderCopytruncateCompress(t *testing.T) {
	t.Parallel()
	rev29BSameHeader(t, "copytruncate\nrotate 1\ncompress")
}

func TestRev29BOKSameHeaderCreate(t *testing.T) {
	t.Parallel()
	rev29BSameHeader(t, "create\nrotate 1")
}

// A live rotation (logrotate body) after 10 lines acknowledged; the
// app.log then gets 10 lines delivered but never acknowledged; kill -9;
// logrotate body again while stopped; 10 new lines; restart. Nothing
// lost, every line once in the exactlyOnce output, no id naming two lines.
func rev29BLiveThenKill(t *testing.T, body string) {
	r := rev29BNew(t)
	r.create("app.log")
	d0 := r.e.start()
	d0.waitFor("caught up", 10*time.Second, func(rep *report) bool { return rep.Feeds[0].State == "CAUGHT_UP" })
	p0, stop0 := rev29BPull(d0)
	as := r.write("app.log", "a", 10)
	d0.waitFor("a lines acknowledged and committed", 20*time.Second, func(rep *report) bool {
		p0.mu.Lock()
		n := 0
		for _, s := range as {
			if p0.acked[s] > 0 {
				n++
			}
		}
		p0.mu.Unlock()
		return n == len(as) && rep.Settled
	})
	r.logrotate("app.log", body)
	if _, err := os.Stat(r.e.path("logs/app.log")); err != nil {
		r.create("app.log")
	}
	// rotateWaitMillis 400: the old file is read to its end and closed, its
	// pointer let go at a housekeeping (once a second); the new app.log is
	// adopted while empty. The old file is made an hour old, as a real
	// rotation's generation is (the 2 s mtime slack of DESIGN §4 would read
	// it again as a later generation of the new file's copy).
	time.Sleep(2500 * time.Millisecond)
	old := time.Now().Add(-time.Hour)
	gens, _ := filepath.Glob(r.e.path("logs/app.log.*"))
	for _, g := range gens {
		if err := os.Chtimes(g, old, old); err != nil {
			t.Fatal(err)
		}
	}
	stop0()
	bs := r.write("app.log", "b", 10)
	r.waitOut("once.log", bs)
	if _, tw := r.missing("once.log", as); len(tw) > 0 {
		t.Logf("before the kill: %d a lines twice in the exactlyOnce output", len(tw))
	}
	d0.kill()
	left := r.pointers()
	epochs, _ := os.ReadFile(r.e.path("state/feeds/app.epochs"))
	r.logrotate("app.log", body)
	if _, err := os.Stat(r.e.path("logs/app.log")); err != nil {
		r.create("app.log")
	}
	ents, _ := os.ReadDir(r.e.path("logs"))
	var names []string
	for _, en := range ents {
		names = append(names, en.Name())
	}
	t.Logf("epochs file at the kill:\n%s\nlogs after logrotate: %v", epochs, names)
	cs := r.write("app.log", "c", 10)
	d := r.e.start()
	p, stop := rev29BPull(d)
	f := r.settle(d, cs)
	stop()
	want := append(append(append([]string(nil), as...), bs...), cs...)
	miss, twice := r.missing("once.log", want)
	if len(miss) > 0 || len(twice) > 0 {
		t.Errorf("exactlyOnce sink: %d of %d missing (first %q), %d twice (first %q)", len(miss), len(want), rev29BFirst(miss), len(twice), rev29BFirst(twice))
	}
	p.mu.Lock()
	if len(p.bad) > 0 {
		t.Errorf("ids naming two lines: %v", p.bad)
	}
	for _, s := range append(append([]string(nil), bs...), cs...) {
		if p.acked[s] == 0 {
			t.Errorf("pull: %q never acknowledged", s)
			break
		}
	}
	p.mu.Unlock()
	wantTails := uint64(0)
	if strings.Contains(body, "create") && strings.Contains(body, "compress") && !strings.Contains(body, "delaycompress") {
		// Since the thirtieth session the old file's pointer is kept for
		// the empty new one (deleted at once by gzip; audit 11a), and a
		// restart that finds the new file's key gone into its .gz counts
		// it (README: "compressed, it is counted too: an overcount"):
		// its lines are read from the .gz all the same (checked above).
		// Left to the new file's own pointer instead, a file sharing its
		// first bytes was taken for it and its lines lost uncounted
		// (review 30c).
		wantTails = 1
	}
	if f.LostTails != wantTails || f.Lossless != (wantTails == 0) {
		t.Errorf("want lostTails %d; got lossless %v lostTails %d detail %v", wantTails, f.Lossless, f.LostTails, f.Detail)
	}
	t.Logf("pointers left %+v", left)
}

func TestRev29BOKLiveRotateThenKillCopytruncate(t *testing.T) {
	t.Parallel()
	rev29BLiveThenKill(t, "copytruncate\nrotate 3")
}

func TestRev29BOKLiveRotateThenKillCreateCompress(t *testing.T) {
	t.Parallel()
	rev29BLiveThenKill(t, "create\nrotate 3\ncompress")
}

func TestRev29BOKLiveRotateThenKillCopytruncateDelaycompress(t *testing.T) {
	t.Parallel()
	rev29BLiveThenKill(t, "copytruncate\nrotate 3\ncompress\ndelaycompress")
}

// app.log adopted while empty gets 3 lines and a partial fourth; the 3 are
// delivered (first bytes stored, the partial line's included); kill -9
// before any commit; while stopped the writer ends the line and writes 5
// more, then logrotate copytruncate (rotate 1) and 5 new lines. Every line
// once in the exactlyOnce output, the partial one whole, lossless true.
func TestRev29BOKKillPartialLineCopytruncate(t *testing.T) {
	t.Parallel()
	r := rev29BNew(t)
	r.create("app.log")
	d0 := r.e.start()
	d0.waitFor("caught up", 10*time.Second, func(rep *report) bool { return rep.Feeds[0].State == "CAUGHT_UP" })
	time.Sleep(300 * time.Millisecond)
	as := r.write("app.log", "a", 3)
	appendTo(t, r.e.path("logs/app.log"), "p-003 part")
	r.waitOut("once.log", as)
	d0.kill()
	left := r.pointers()
	appendTo(t, r.e.path("logs/app.log"), "ial\n")
	bs := r.write("app.log", "b", 5)
	r.logrotate("app.log", "copytruncate\nrotate 1")
	cs := r.write("app.log", "c", 5)
	d := r.e.start()
	p, stop := rev29BPull(d)
	f := r.settle(d, cs)
	stop()
	want := append(append(append(append([]string(nil), as...), "p-003 partial"), bs...), cs...)
	miss, twice := r.missing("once.log", want)
	if len(miss) > 0 || len(twice) > 0 {
		t.Errorf("exactlyOnce sink: %d of %d missing (first %q), %d twice (first %q)", len(miss), len(want), rev29BFirst(miss), len(twice), rev29BFirst(twice))
	}
	p.mu.Lock()
	if len(p.bad) > 0 {
		t.Errorf("ids naming two lines: %v", p.bad)
	}
	p.mu.Unlock()
	if !f.Lossless || f.LostTails != 0 {
		t.Errorf("want lossless true; got lossless %v lostTails %d detail %v", f.Lossless, f.LostTails, f.Detail)
	}
	t.Logf("pointers left %+v", left)
}

// rev29BBanner: app.log adopted while empty; the application writes its
// start banner (one line) — delivered alone, so the change stores a
// fingerprint of the banner only — then 10 lines, delivered, never
// acknowledged (no commit: the fingerprint stays the banner's); kill -9;
// logrotate copytruncate (rotate n) while stopped; the application starts
// again and writes the same banner and 10 new lines.
func rev29BBanner(t *testing.T, rotate int) {
	rev29BBannerIn(t, rev29BNew(t), rotate)
}

func rev29BBannerIn(t *testing.T, r *rev29BRig, rotate int) {
	r.create("app.log")
	d0 := r.e.start()
	d0.waitFor("caught up", 10*time.Second, func(rep *report) bool { return rep.Feeds[0].State == "CAUGHT_UP" })
	time.Sleep(300 * time.Millisecond)
	const banner = "=== app started, version 1.2.3 ==="
	appendTo(t, r.e.path("logs/app.log"), banner+"\n")
	waitUntil(t, "the banner delivered", 30*time.Second, func() bool { return r.lines("once.log")[banner] == 1 })
	as := r.write("app.log", "a", 10)
	r.waitOut("once.log", as)
	d0.kill()
	left := r.pointers()
	r.logrotate("app.log", fmt.Sprintf("copytruncate\nrotate %d", rotate))
	appendTo(t, r.e.path("logs/app.log"), banner+"\n")
	cs := r.write("app.log", "c", 10)
	d := r.e.start()
	p, stop := rev29BPull(d)
	f := r.settle(d, cs)
	stop()
	once := r.lines("once.log")
	var miss []string
	for _, s := range append(append([]string(nil), as...), cs...) {
		if once[s] != 1 {
			miss = append(miss, fmt.Sprintf("%s×%d", s, once[s]))
		}
	}
	if once[banner] != 2 {
		miss = append(miss, fmt.Sprintf("banner×%d", once[banner]))
	}
	p.mu.Lock()
	bad := append([]string(nil), p.bad...)
	var unacked []string
	want := cs
	if rotate > 0 {
		want = append(append([]string(nil), as...), cs...)
	}
	for _, s := range want {
		if p.acked[s] == 0 {
			unacked = append(unacked, s)
		}
	}
	p.mu.Unlock()
	t.Logf("pointers the kill left %+v; lossless %v lostTails %d", left, f.Lossless, f.LostTails)
	if len(miss) > 0 {
		t.Errorf("exactlyOnce output: want the banner twice and every a and c line once; wrong: %v", miss)
	}
	if len(unacked) > 0 {
		t.Errorf("pull consumer never got %d of %d lines (first %q)", len(unacked), len(want), unacked[0])
	}
	if len(bad) > 0 {
		t.Errorf("%d ids naming two lines (first %s)", len(bad), bad[0])
	}
	if rotate == 0 && (f.Lossless || f.LostTails == 0) {
		t.Errorf("the 10 a lines (never acknowledged) cut with no copy: want lossless false and a lost tail; got lossless %v lostTails %d", f.Lossless, f.LostTails)
	}
	if rotate > 0 && (!f.Lossless || f.LostTails != 0) {
		t.Errorf("a copy holds the a lines: want lossless true; got lossless %v lostTails %d", f.Lossless, f.LostTails)
	}
}

// TestRev29BXBannerCopytruncateWithCopy — DESIGN §2 "no line is ever lost";
// every delivery's (feed, epoch, position) names one line and
// AlreadyApplied skips only re-deliveries; §4 "Every new file gets a new
// epoch (… truncation …)", "Restart after rotation: … find the pointer's
// generation: the file with the pointer's file key and fingerprint, or …
// a copy". A glob file adopted while empty whose first published batch is
// its start banner alone: the change's headFirst stores the fingerprint of
// those 35 bytes (offset 0) and nothing grows it until the first commit.
// 10 lines follow, delivered, never acknowledged; kill -9; copytruncate
// (rotate 1) while stopped; the application writes the same banner and 10
// new lines. Observed (3 of 3): the restart takes the cut file for the
// pointer's own (same key, first 35 bytes equal, size ≥ offset 0) and
// reads it from 0 under the first run's epoch: the exactlyOnce sink skips
// the banner and all 10 c lines as applied (banner×1, c×0), the copy
// app.log.1 is never read (the pull consumer never gets a-000…a-009),
// lossless true. Expected: c lines and the second banner in the
// exactlyOnce output, the a lines re-delivered from the copy. Suspected
// cause: source/file/commit.go headFirst stores the first bytes only as
// the file holds them at the first line (pointer/commit.go growFingerprint
// runs at a store, i.e. at commit), and open.go resumeRotated (line 663:
// `st.Size() >= rec.Offset && fingerprintMatches`) takes a never-committed
// record's short fingerprint as proof of the same file. Not glob-specific
// (TestRev29BXBannerSingleFileCopytruncateWithCopy fails the same way);
// the change left it for the glob too. Judgement call on §3's identity
// rule (equal first bytes = same file), but the loss is real.
func TestRev29BXBannerCopytruncateWithCopy(t *testing.T) {
	t.Parallel()
	rev29BBanner(t, 1)
}

// TestRev29BXBannerCopytruncateNoCopy — as above with rotate 0 (no copy).
// DESIGN §7 "Nothing green over a loss" / §4 a truncation with no copy
// counts a lost tail (README: also a never-committed pointer whose file
// held bytes, the change's new branch). Observed: lostTails 0, lossless
// true (the 10 never-acknowledged a lines are gone), and the exactlyOnce
// sink skips the 10 c lines. Expected: lostTails 1, lossless false, the c
// lines in the output. Same cause (the new open.go:691 branch is never
// reached: the short fingerprint matches first).
func TestRev29BXBannerCopytruncateNoCopy(t *testing.T) {
	t.Parallel()
	rev29BBanner(t, 0)
}

// The same with a single-file feed (path ./logs/app.log): the cause is not
// the glob's (the first bytes stored before the first commit cover only
// what the file held at the first line).
func TestRev29BXBannerSingleFileCopytruncateWithCopy(t *testing.T) {
	t.Parallel()
	e := newEnv(t, strings.Replace(rev29BTmpl, "./logs/*.log", "./logs/app.log", 1))
	if err := os.MkdirAll(e.path("logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	rev29BBannerIn(t, &rev29BRig{t: t, e: e, all: map[string][]string{}}, 1)
}

// TestRev29BXHeaderInodeReuseTakenAsSame — DESIGN §10 "Identity is the file
// key confirmed by the fingerprint: the same key with other first bytes is
// a new stream (inode reuse) … (only at a restart, where a deletion could
// not be seen, is identity key + fingerprint alone; the README names this
// case)"; §2 every (epoch, position) names one line; §7 "Nothing green
// over a loss". a.log gets a two-line header alone (42 bytes, delivered:
// with the change the record stores key + fingerprint of those 42 bytes at
// offset 0), then 5 lines, delivered, never acknowledged; kill -9; a.log
// deleted while stopped; a new file c.log (another name) gets the same
// header and 5 lines of its own — and a.log's inode (the file system
// reuses it: logged). Observed (3 of 3, both variants): the restart takes
// c.log for a.log's stream (same key, first 42 bytes equal) and reads it
// from 0 under a.log's epoch: the exactlyOnce sink skips c's header and
// all 5 c lines as applied (c×0), a.log's 5 never-acknowledged lines are
// gone uncounted (lostTails 0, lossless true). Expected: c.log a stream of
// its own (or at least not under a.log's epoch), a lost tail for a.log.
// Judgement call: DESIGN accepts key + fingerprint at a restart, but a
// never-committed record's fingerprint covers only what the file held at
// its first line (not grown until a commit), so a shared header suffices.
// adoptedEmpty=true is new with the change: before it such a record named
// no first bytes, and a file on its key born after the pointer file was
// written was another file (open.go:640 bornBy, glob.go:1488 birth-time checks —
// by reading only, not verified by running the parent); adoptedEmpty=false (the epochs line's first bytes)
// fails the same way before the change.
func TestRev29BXHeaderInodeReuseTakenAsSame(t *testing.T) {
	for _, empty := range []bool{true, false} {
		t.Run(fmt.Sprintf("adoptedEmpty=%v", empty), func(t *testing.T) {
			t.Parallel()
			rev29BTwoHeaders(t, empty)
		})
	}
}

func rev29BTwoHeaders(t *testing.T, empty bool) {
	r := rev29BNew(t)
	r.create("a.log")
	const hdr = "# app log, format v2\n# time level message\n"
	if !empty {
		appendTo(t, r.e.path("logs/a.log"), hdr)
	}
	d0 := r.e.start()
	d0.waitFor("caught up", 10*time.Second, func(rep *report) bool { return rep.Feeds[0].State == "CAUGHT_UP" })
	time.Sleep(300 * time.Millisecond)
	if empty {
		appendTo(t, r.e.path("logs/a.log"), hdr)
	}
	waitUntil(t, "the header delivered", 30*time.Second, func() bool { return r.lines("once.log")["# time level message"] == 1 })
	as := r.write("a.log", "a", 5)
	r.waitOut("once.log", as)
	d0.kill()
	left := r.pointers()
	inoA := rev29BIno(t, r.e.path("logs/a.log"))
	if err := os.Remove(r.e.path("logs/a.log")); err != nil {
		t.Fatal(err)
	}
	appendTo(t, r.e.path("logs/c.log"), hdr)
	if inoC := rev29BIno(t, r.e.path("logs/c.log")); inoC != inoA {
		t.Skipf("the file system did not reuse a.log's inode (%d) for c.log (%d)", inoA, inoC)
	}
	cs := r.write("c.log", "c", 5)
	d := r.e.start()
	p, stop := rev29BPull(d)
	f := r.settle(d, cs)
	stop()
	once := r.lines("once.log")
	var wrong []string
	for _, s := range cs {
		if once[s] != 1 {
			wrong = append(wrong, fmt.Sprintf("%s×%d", s, once[s]))
		}
	}
	if once["# time level message"] != 2 {
		wrong = append(wrong, fmt.Sprintf("header×%d", once["# time level message"]))
	}
	p.mu.Lock()
	bad := append([]string(nil), p.bad...)
	cEpoch := ""
	for e, l := range p.epGen {
		if strings.HasPrefix(l, "c-") {
			cEpoch = e
		}
	}
	p.mu.Unlock()
	underA := false
	for _, l := range left {
		if l.Epoch == cEpoch {
			underA = true
		}
	}
	t.Logf("pointers left %+v; c lines under epoch %s; lossless %v lostTails %d detail %v", left, cEpoch, f.Lossless, f.LostTails, f.Detail)
	if len(wrong) > 0 {
		t.Errorf("exactlyOnce output: want c.log's header and lines once each; wrong: %v", wrong)
	}
	if len(bad) > 0 {
		t.Errorf("%d ids naming two lines (first %s)", len(bad), bad[0])
	}
	if underA {
		t.Errorf("c.log (a new file, a stream of its own) published under a.log's epoch %s", cEpoch)
	}
	if f.Lossless || f.LostTails == 0 {
		t.Errorf("a.log's 5 lines, never acknowledged, deleted while stopped: want lossless false and a lost tail; got lossless %v lostTails %d", f.Lossless, f.LostTails)
	}
}
