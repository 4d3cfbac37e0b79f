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

const globUncommittedTmpl = `dataDir: ./state
status: {listen: "{{ADDR}}"}
feeds:
  - name: app
    path: ./logs/*.log
    readStrategy: COMMITTED
    pollIntervalMillis: 50
    rotateWaitMillis: 400
processors:
  - {name: plain, feed: app, type: file, path: ./out/plain.log}
  - {name: once, feed: app, type: file, path: ./out/once.log, exactlyOnce: true}
  - {name: consumer, feed: app, type: pull, ackTimeoutMillis: 3000}
`

// The glob case of audit 10E's finding (TestAud10EXAdoptedEmptyEpochReused):
// a glob file adopted while empty, 20 lines appended and delivered, kill -9
// before the stream's first commit (the pull consumer never acknowledges),
// logrotate copytruncate while stopped, 10 new lines. Before the fix the
// restart read the 10 new lines under the first run's epoch from offset 0:
// the exactlyOnce sink skipped 10 of 10 as applied, the pull ids named
// other lines, lossless true. DESIGN §4 "Every new file gets a new epoch",
// §8 byte-identical exactlyOnce output.
func TestGlobAdoptedEmptyKill9CopytruncateNewEpoch(t *testing.T) {
	t.Parallel()
	globUncommittedCut(t, true, 5)
}

// As above with `rotate 0` (no copy) and a file that held the 20 lines
// when the glob adopted it: they were never acknowledged and are gone, so
// DESIGN §7 wants a lost tail, not lossless true (before the fix: lostTails
// 0; the single-file feed counted it since audit 10E).
func TestGlobAdoptedWithContentKill9CopytruncateNoCopyCounted(t *testing.T) {
	t.Parallel()
	globUncommittedCut(t, false, 0)
}

// As above for a file adopted while empty (its first bytes stored before
// the first line, then cut with no copy).
func TestGlobAdoptedEmptyKill9CopytruncateNoCopyCounted(t *testing.T) {
	t.Parallel()
	globUncommittedCut(t, true, 0)
}

func globUncommittedCut(t *testing.T, empty bool, rotate int) {
	lrBin, err := exec.LookPath("logrotate")
	if err != nil {
		t.Skip("logrotate not installed")
	}
	e := newEnv(t, globUncommittedTmpl)
	if err := os.MkdirAll(e.path("logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	app := e.path("logs/app.log")
	if err := os.WriteFile(app, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var all []string
	write := func(tag string, n int, width int) {
		var b strings.Builder
		for i := 0; i < n; i++ {
			s := fmt.Sprintf("%s-%03d %s", tag, i, strings.Repeat("y", width))
			all = append(all, s)
			b.WriteString(s + "\n")
		}
		appendTo(t, app, b.String())
	}
	if !empty {
		write("a", 20, 20)
	}
	d0 := e.start()
	d0.waitFor("the input opened", 10*time.Second, func(r *report) bool { return r.Feeds[0].State == "CAUGHT_UP" })
	time.Sleep(300 * time.Millisecond)
	if empty {
		write("a", 20, 20)
	}
	once := e.path("out/once.log")
	waitUntil(t, "the exactlyOnce sink has the 20 first lines", 30*time.Second, func() bool {
		b, _ := os.ReadFile(once)
		return bytes.Count(b, []byte("\n")) >= 20
	})
	d0.kill()
	ptrs, _ := filepath.Glob(e.path("state/feeds/app/*.ptr"))
	var lefts []pointerRecord
	for _, p := range ptrs {
		r, _ := showPointer(t, p)
		lefts = append(lefts, r)
	}
	conf := e.path("logrotate.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, "%s {\ncopytruncate\nrotate %d\nmissingok\nnomail\n}\n", app, rotate), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(lrBin, "-s", e.path("logrotate.state"), "-f", conf).CombinedOutput(); err != nil {
		t.Fatalf("logrotate: %v: %s", err, out)
	}
	write("c", 10, 20)
	d := e.start()
	p := &aud10EPuller{acked: map[string]int{}, sent: map[string]bool{}, epGen: map[string]string{}, ids: map[string]string{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { p.run(d.addr, stop) })
	plain := e.path("out/plain.log")
	r := d.waitFor("settled with the c lines read", 30*time.Second, func(r *report) bool {
		b, _ := os.ReadFile(plain)
		return r.Settled && bytes.Contains(b, []byte("c-009"))
	})
	close(stop)
	wg.Wait()
	f := r.feed(t, "app")
	b, _ := os.ReadFile(once)
	got := map[string]int{}
	for _, l := range strings.Split(string(b), "\n") {
		got[l]++
	}
	var missing, twice []string
	for _, s := range all {
		if got[s] == 0 {
			missing = append(missing, s)
		}
		if got[s] > 1 {
			twice = append(twice, s)
		}
	}
	t.Logf("pointers the kill left: %+v; lossless %v lostTails %d; exactlyOnce %d lines", lefts, f.Lossless, f.LostTails, bytes.Count(b, []byte("\n")))
	if rotate == 0 {
		// No copy: the 20 a lines, never acknowledged by the pull
		// consumer, are gone: a lost tail counted, the c lines read.
		if f.Lossless || f.LostTails == 0 {
			t.Errorf("the never-acknowledged a lines were cut with no copy: want lossless false and a lost tail, got lossless %v lostTails %d", f.Lossless, f.LostTails)
		}
		missing = missing[:0]
		for _, s := range all[20:] {
			if got[s] == 0 {
				missing = append(missing, s)
			}
		}
	}
	if len(missing) > 0 {
		t.Errorf("exactlyOnce sink misses %d of %d lines (first %q); feed lossless %v lostTails %d; restart log: %s",
			len(missing), len(all), missing[0], f.Lossless, f.LostTails, grepLines(d.log(), "epoch"))
	}
	if len(twice) > 0 {
		t.Errorf("exactlyOnce sink has %d lines twice: %v", len(twice), twice)
	}
	for _, s := range all[20:] {
		p.mu.Lock()
		ok := p.acked[s] > 0
		p.mu.Unlock()
		if !ok {
			t.Errorf("pull: %q never acknowledged", s)
		}
	}
	p.mu.Lock()
	for _, l := range lefts {
		if ep, ok := p.epGen[l.Epoch]; ok && strings.HasPrefix(ep, "c-") {
			t.Errorf("the restart published the rewritten file's lines (e.g. %q) under the first run's epoch %s", ep, l.Epoch)
		}
	}
	if len(p.bad) > 0 {
		t.Errorf("ids naming two lines: %v", p.bad)
	}
	p.mu.Unlock()
}
