package e2e

// Audit 7 of the twelfth session (a black-box helper, DESIGN only, the built
// binary under SIGKILL with glob rotation): its helpers and the finding
// fixed that session (E). The open ones are in open_aud7_crash_test.go.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// aud7 drives glob feeds with several writers that rotate their files
// (rename + create with numbered generations, copytruncate) while the built
// daemon is killed with SIGKILL at random moments, then checks the
// exactlyOnce file output line by line: every writer's lines present exactly
// once, and feed.status honest.

// a7writer appends "<tag> <seq> <pad>\n" lines to dir/base and rotates it.
type a7writer struct {
	t    testing.TB
	tag  string
	dir  string
	base string
	mode string // rename | copytruncate | mixed
	keep int    // generations kept (0: never delete)
	mu   sync.Mutex
	f    *os.File
	seq  int
	rots int
	// lastRot is the last rotation's time.
	lastRot time.Time
	rnd     *rand.Rand
	errOne  error
}

func (w *a7writer) path() string { return filepath.Join(w.dir, w.base) }

func (w *a7writer) open() {
	f, err := os.OpenFile(w.path(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		w.errOne = err
		return
	}
	w.f = f
}

// write appends n lines with one write(2).
func (w *a7writer) write(n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return
	}
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "%s %07d %s\n", w.tag, w.seq, strings.Repeat("x", 10+w.seq%37))
		w.seq++
	}
	if _, err := w.f.WriteString(b.String()); err != nil && w.errOne == nil {
		w.errOne = err
	}
}

func (w *a7writer) shift() {
	// Find the highest generation, shift each up by one.
	hi := 0
	for {
		if _, err := os.Lstat(fmt.Sprintf("%s.%d", w.path(), hi+1)); err != nil {
			break
		}
		hi++
	}
	for k := hi; k >= 1; k-- {
		if w.keep > 0 && k >= w.keep {
			os.Remove(fmt.Sprintf("%s.%d", w.path(), k))
			continue
		}
		os.Rename(fmt.Sprintf("%s.%d", w.path(), k), fmt.Sprintf("%s.%d", w.path(), k+1))
	}
}

// rotate rotates the file the way mode says, atomically with the writes.
func (w *a7writer) rotate() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return
	}
	mode := w.mode
	if mode == "mixed" {
		if w.rnd.IntN(2) == 0 {
			mode = "rename"
		} else {
			mode = "copytruncate"
		}
	}
	w.rots++
	w.lastRot = time.Now()
	w.shift()
	switch mode {
	case "rename":
		if err := os.Rename(w.path(), w.path()+".1"); err != nil {
			w.errOne = err
			return
		}
		w.f.Close()
		w.open()
	case "copytruncate":
		src, err := os.ReadFile(w.path())
		if err != nil {
			w.errOne = err
			return
		}
		if err := os.WriteFile(w.path()+".1", src, 0o644); err != nil {
			w.errOne = err
			return
		}
		if err := w.f.Truncate(0); err != nil {
			w.errOne = err
		}
	}
}

// sinceRot is the time since the last rotation.
func (w *a7writer) sinceRot() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return time.Since(w.lastRot)
}

func (w *a7writer) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
}

// a7rig is one scenario: writers, the daemon's env, and the kill loop.
type a7rig struct {
	t       *testing.T
	e       *env
	ws      []*a7writer
	stop    chan struct{}
	wg      sync.WaitGroup
	rnd     *rand.Rand
	kills   int
	hups    int
	rotEach time.Duration
	losses  string
	// rotOK is closed once the first daemon's first scan is done
	// (startLife): the writers rotate only from then on.
	rotOK chan struct{}
}

func newA7Rig(t *testing.T, tmpl string, seed uint64) *a7rig {
	r := &a7rig{t: t, e: newEnv(t, tmpl), stop: make(chan struct{}), rnd: rand.New(rand.NewPCG(seed, 7)), rotOK: make(chan struct{})}
	return r
}

func (r *a7rig) addWriter(tag, sub, base, mode string, keep int) *a7writer {
	dir := r.e.path(sub)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.t.Fatal(err)
	}
	w := &a7writer{t: r.t, tag: tag, dir: dir, base: base, mode: mode, keep: keep, rnd: rand.New(rand.NewPCG(uint64(len(r.ws))+1, 99))}
	w.open()
	r.ws = append(r.ws, w)
	return w
}

// run starts every writer: lines every few ms, a rotation every rotEach
// (jittered); quiet writers (every 4th) write rarely so they go inactive.
func (r *a7rig) run() {
	for i, w := range r.ws {
		quiet := i%4 == 3
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			next := time.Now().Add(r.rotEach + time.Duration(w.rnd.Int64N(int64(r.rotEach/2)+1)))
			for {
				select {
				case <-r.stop:
					return
				default:
				}
				if quiet {
					time.Sleep(time.Duration(150+w.rnd.IntN(400)) * time.Millisecond)
				} else {
					time.Sleep(time.Duration(1+w.rnd.IntN(4)) * time.Millisecond)
				}
				w.write(1 + w.rnd.IntN(5))
				select {
				case <-r.rotOK:
				default:
					continue // no rotation before tailfeed's first scan
				}
				if r.rotEach > 0 && time.Now().After(next) && w.sinceRot() >= r.rotEach {
					w.rotate()
					next = time.Now().Add(r.rotEach + time.Duration(w.rnd.Int64N(int64(r.rotEach/2)+1)))
				}
			}
		}()
	}
}

func (r *a7rig) finish() {
	close(r.stop)
	r.wg.Wait()
	for _, w := range r.ws {
		w.close()
		if w.errOne != nil {
			r.t.Fatalf("writer %s: %v", w.tag, w.errOne)
		}
	}
}

// reload rewrites the config with another pollIntervalMillis (a changed
// feed: stopped and started again from its pointers) and sends SIGHUP.
func (r *a7rig) reload(d *daemon) {
	b, err := os.ReadFile(r.e.cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	s := string(b)
	if strings.Contains(s, "pollIntervalMillis: 50") {
		s = strings.Replace(s, "pollIntervalMillis: 50", "pollIntervalMillis: 60", 1)
	} else {
		s = strings.Replace(s, "pollIntervalMillis: 60", "pollIntervalMillis: 50", 1)
	}
	if err := os.WriteFile(r.e.cfg, []byte(s), 0o644); err != nil {
		r.t.Fatal(err)
	}
	d.signal(syscall.SIGHUP)
	r.hups++
}

// startLife starts a daemon; the first one's first scan done, the writers
// may rotate (rotOK). Before it, a writer's rotated generations were never
// in the glob while tailfeed looked: a first start reads the files present
// then (DESIGN §10), not the names beside them — and the first daemon, at
// times slower to start than a writer's first rotation (350 ms), had its
// writers' first generations counted missing by this rig (seed
// 1796559392325910795: 1,002 lines of w0 rotated before the first scan).
func (r *a7rig) startLife() *daemon {
	d := r.e.start()
	select {
	case <-r.rotOK:
		return d
	default:
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var st a7final
		if code, body, err := d.get("/feed.status"); err == nil && code == 200 &&
			json.Unmarshal(body, &st) == nil && len(st.Feeds) > 0 && st.Feeds[0].FilesTrack > 0 {
			break
		}
		if time.Now().After(deadline) {
			r.t.Fatal("the first daemon tracks no file 30 s after its start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(r.rotOK)
	return d
}

// killLoop runs rounds daemon lives, each ended by SIGKILL at a moment of
// one of several kinds.
func (r *a7rig) killLoop(rounds int) {
	for i := 0; i < rounds; i++ {
		kind := r.rnd.IntN(5)
		if i == 0 && kind == 0 {
			kind = 1 // the first life gets past its first scan (startLife)
		}
		var d *daemon
		switch kind {
		case 0: // during start-up
			d = r.e.spawn()
			time.Sleep(time.Duration(r.rnd.IntN(120)) * time.Millisecond)
		case 1: // random moment
			d = r.startLife()
			time.Sleep(time.Duration(100+r.rnd.IntN(1500)) * time.Millisecond)
		case 2: // right after a rotation
			d = r.startLife()
			time.Sleep(time.Duration(200+r.rnd.IntN(800)) * time.Millisecond)
			if w := r.ws[r.rnd.IntN(len(r.ws))]; w.sinceRot() >= r.rotEach {
				w.rotate()
			}
			time.Sleep(time.Duration(r.rnd.IntN(40)) * time.Millisecond)
		case 3: // during a reload
			d = r.startLife()
			time.Sleep(time.Duration(200+r.rnd.IntN(800)) * time.Millisecond)
			r.reload(d)
			time.Sleep(time.Duration(r.rnd.IntN(60)) * time.Millisecond)
		case 4: // after it settled a moment (or not)
			d = r.startLife()
			time.Sleep(time.Duration(800+r.rnd.IntN(1200)) * time.Millisecond)
		}
		d.kill()
		r.kills++
		if d.code != -1 && !(d.code == 1 && strings.Contains(d.log(), "address already in use")) {
			r.t.Fatalf("round %d: daemon exited with code %d before the kill\n%s", i, d.code, tail(d.log(), 3000))
		}
		if r.rnd.IntN(3) == 0 { // down for a while: the writers rotate meanwhile
			time.Sleep(time.Duration(200+r.rnd.IntN(1200)) * time.Millisecond)
		}
	}
}

// a7final is the feed's status after the last start, raw.
type a7final struct {
	Settled  bool `json:"settled"`
	Lossless bool `json:"lossless"`
	Feeds    []struct {
		Feed        string  `json:"feed"`
		State       string  `json:"state"`
		Settled     bool    `json:"settled"`
		Lossless    bool    `json:"lossless"`
		LostTails   uint64  `json:"lostTails"`
		LostBytes   uint64  `json:"lostBytes"`
		Dropped     uint64  `json:"dropped"`
		Downgraded  uint64  `json:"downgraded"`
		Detail      *string `json:"detail"`
		FilesBehind int     `json:"filesBehind"`
		FilesTrack  int     `json:"filesTracked"`
		Files       []struct {
			Path   string  `json:"path"`
			Epoch  *string `json:"epoch"`
			Offset int64   `json:"offset"`
			Size   int64   `json:"size"`
			State  string  `json:"state"`
		} `json:"files"`
	} `json:"feeds"`
}

// a7result is what the output holds per writer.
type a7result struct {
	total, missing, dups, outOfOrder int
	missBytes                        int
	firstOOO                         string
	firstMissing, firstDup           string
}

// check starts the daemon a last time, waits until settled, reads the
// status and the output, and returns a summary per writer plus the status.
func (r *a7rig) check(out string) (map[string]*a7result, a7final, string) {
	r.t.Helper()
	d := r.e.start()
	a7settled(r.t, d, 30*time.Second)
	// A moment more: files closing, scans.
	time.Sleep(1500 * time.Millisecond)
	a7settled(r.t, d, 30*time.Second)
	code, body, err := d.get("/feed.status?files=1")
	if err != nil || code != 200 {
		r.t.Fatalf("status: %d %v", code, err)
	}
	var st a7final
	if err := json.Unmarshal(body, &st); err != nil {
		r.t.Fatal(err)
	}
	_, lb, _ := d.get("/admin/losses/logs")
	r.losses = string(lb)
	d.stop()
	res := map[string]*a7result{}
	for _, w := range r.ws {
		res[w.tag] = &a7result{total: w.seq}
	}
	seen := map[string][]int{}
	last := map[string]int{}
	f, err := os.Open(out)
	if err != nil {
		r.t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var obj struct {
			Epoch    string `json:"epoch"`
			Position int64  `json:"position"`
			Path     string `json:"path"`
			Line     string `json:"line"`
		}
		if err := json.Unmarshal(sc.Bytes(), &obj); err != nil {
			r.t.Fatalf("output line %q: %v", sc.Text(), err)
		}
		var tag string
		var seq int
		if _, err := fmt.Sscanf(obj.Line, "%s %d", &tag, &seq); err != nil {
			r.t.Fatalf("output line %q: %v", sc.Text(), err)
		}
		rr := res[tag]
		if rr == nil {
			r.t.Fatalf("output line %q of no writer", sc.Text())
		}
		if seen[tag] == nil {
			seen[tag] = make([]int, rr.total)
			last[tag] = -1
		}
		if seq >= rr.total {
			r.t.Fatalf("output line %q past what was written (%d)", sc.Text(), rr.total)
		}
		seen[tag][seq]++
		if seq < last[tag] {
			if rr.outOfOrder == 0 {
				rr.firstOOO = fmt.Sprintf("line %d (epoch %s pos %d) after line %d", seq, obj.Epoch, obj.Position, last[tag])
			}
			rr.outOfOrder++
		}
		last[tag] = seq
	}
	for tag, rr := range res {
		s := seen[tag]
		for i := 0; i < rr.total; i++ {
			c := 0
			if s != nil {
				c = s[i]
			}
			if c == 0 {
				if rr.missing == 0 {
					rr.firstMissing = fmt.Sprint(i)
				}
				rr.missBytes += len(a7lines(tag, i, 1))
				rr.missing++
			} else if c > 1 {
				if rr.dups == 0 {
					rr.firstDup = fmt.Sprint(i)
				}
				rr.dups += c - 1
			}
		}
	}
	return res, st, string(body)
}

func (r *a7rig) summary(res map[string]*a7result) (string, int, int, int) {
	var tags []string
	for t := range res {
		tags = append(tags, t)
	}
	sort.Strings(tags)
	var b strings.Builder
	var miss, dup, ooo int
	for _, t := range tags {
		rr := res[t]
		fmt.Fprintf(&b, "%s: %d lines, %d missing (first %s), %d duplicates (first %s), %d out of order %s; ", t, rr.total, rr.missing, rr.firstMissing, rr.dups, rr.firstDup, rr.outOfOrder, rr.firstOOO)
		miss += rr.missing
		dup += rr.dups
		ooo += rr.outOfOrder
	}
	rots := 0
	for _, w := range r.ws {
		rots += w.rots
	}
	fmt.Fprintf(&b, "rotations %d, kills %d, reloads %d", rots, r.kills, r.hups)
	return b.String(), miss, dup, ooo
}

// a7cfg builds the config of one scenario.
func a7cfg(glob string, extra string) string {
	return `dataDir: ./state
status: {listen: "{{ADDR}}"}
feeds:
  - name: logs
    path: ` + glob + `
    pollIntervalMillis: 50
    rotateWaitMillis: 300
    scanIntervalMillis: 500
` + extra + `processors:
  - name: out
    feed: logs
    type: file
    path: ./out.log
    format: json
    exactlyOnce: true
`
}

func a7seed(t *testing.T) uint64 {
	if s := os.Getenv("AUD7_SEED"); s != "" {
		var v uint64
		fmt.Sscan(s, &v)
		return v
	}
	v := uint64(time.Now().UnixNano())
	return v
}

// a7scenario runs one scenario and reports what it found.
func a7scenario(t *testing.T, glob, extra string, writers func(r *a7rig), rounds int, rotEach time.Duration) (map[string]*a7result, a7final, string, *a7rig) {
	seed := a7seed(t)
	t.Logf("seed %d", seed)
	r := newA7Rig(t, a7cfg(glob, extra), seed)
	r.rotEach = rotEach
	writers(r)
	r.run()
	if rounds > 0 {
		r.killLoop(rounds)
	} else if rounds == 0 {
		r.t.Fatal("rounds 0")
	} else {
		d := r.startLife()
		time.Sleep(-time.Duration(rounds) * time.Second)
		d.stop()
	}
	r.finish()
	res, st, body := r.check(r.e.path("out.log"))
	return res, st, body, r
}

func a7assert(t *testing.T, r *a7rig, res map[string]*a7result, st a7final, body string, wantOrder bool) {
	t.Helper()
	sum, miss, dup, ooo := r.summary(res)
	t.Logf("%s", sum)
	f := st.Feeds[0]
	t.Logf("status: settled %v lossless %v state %s lostTails %d lostBytes %d downgraded %d filesBehind %d filesTracked %d detail %v",
		st.Settled, st.Lossless, f.State, f.LostTails, f.LostBytes, f.Downgraded, f.FilesBehind, f.FilesTrack, deref(f.Detail))
	t.Logf("losses ledger: %s", tail(r.losses, 3000))
	var led struct {
		Entries []struct {
			Counter string `json:"counter"`
			Amount  uint64 `json:"amount"`
		} `json:"entries"`
	}
	json.Unmarshal([]byte(r.losses), &led)
	var ledTails, ledBytes uint64
	for _, en := range led.Entries {
		switch en.Counter {
		case "lostTails":
			ledTails += en.Amount
		case "lostBytes":
			ledBytes += en.Amount
		}
	}
	var missBytes int
	for _, rr := range res {
		missBytes += rr.missBytes
	}
	t.Logf("ledger: lostTails %d, lostBytes %d; bytes of the lines never delivered: %d", ledTails, ledBytes, missBytes)
	if miss > 0 && f.LostTails == 0 && f.LostBytes == 0 && !strings.Contains(r.losses, "lostTails") {
		t.Errorf("%d lines never delivered, none counted (lostTails 0, lostBytes 0, lossless %v)", miss, f.Lossless)
	}
	if dup > 0 {
		t.Errorf("%d lines delivered twice into an exactlyOnce file output", dup)
	}
	if wantOrder && ooo > 0 {
		t.Errorf("%d lines out of their writer's order", ooo)
	}
	if miss == 0 && !f.Lossless {
		t.Errorf("every line delivered, yet lossless false (lostTails %d, lostBytes %d, detail %v)", f.LostTails, f.LostBytes, deref(f.Detail))
	}
	if t.Failed() {
		t.Logf("final status: %s", tail(body, 4000))
		if k := os.Getenv("AUD7_KEEP"); k != "" {
			os.RemoveAll(k)
			exec.Command("cp", "-a", r.e.dir, k).Run()
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// a7lines returns n lines "<tag> <seq> pad\n" from seq first.
func a7lines(tag string, first, n int) string {
	var b strings.Builder
	for i := first; i < first+n; i++ {
		fmt.Fprintf(&b, "%s %07d %s\n", tag, i, strings.Repeat("x", 10+i%37))
	}
	return b.String()
}

// a7count reads the exactlyOnce json output: occurrences per line text.
func a7count(t *testing.T, out string) (map[string]int, int) {
	t.Helper()
	m := map[string]int{}
	n := 0
	f, err := os.Open(out)
	if err != nil {
		if os.IsNotExist(err) {
			return m, 0
		}
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var obj struct {
			Line string `json:"line"`
		}
		if err := json.Unmarshal(sc.Bytes(), &obj); err != nil {
			t.Fatalf("output %q: %v", sc.Text(), err)
		}
		m[obj.Line]++
		n++
	}
	return m, n
}

func a7copytruncate(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".1", b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
}

// a7quietCopytruncate runs one quiet writer (a line every gap ms) on
// in/w.log under the glob ./in/*.log, closed as inactive between lines, and
// rotates it by copytruncate (numbered generations w.log.1, w.log.2, …
// shifted first, as logrotate does) rounds times while the daemon runs.
// It returns the lines written and the output's counts.
func a7quietCopytruncate(t *testing.T, rounds, gap int) (int, map[string]int, int) {
	e := newEnv(t, a7cfg("./in/*.log", "    maxOpenFiles: 3\n    closeInactiveMillis: 200\n"))
	if err := os.MkdirAll(e.path("in"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := e.path("in/w.log")
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seq := 0
	write := func(n int) {
		if _, err := f.WriteString(a7lines("w", seq, n)); err != nil {
			t.Fatal(err)
		}
		seq += n
	}
	write(3)
	d := e.start()
	for k := 0; k < rounds; k++ {
		time.Sleep(time.Duration(gap) * time.Millisecond)
		write(1)
		time.Sleep(time.Duration(gap) * time.Millisecond)
		for j := k; j >= 1; j-- {
			if err := os.Rename(fmt.Sprintf("%s.%d", p, j), fmt.Sprintf("%s.%d", p, j+1)); err != nil {
				t.Fatal(err)
			}
		}
		a7copytruncate(t, p) // copy to w.log.1, truncate w.log
		write(1)
	}
	time.Sleep(time.Second)
	d.waitSettled(20 * time.Second)
	d.stop()
	m, n := a7count(t, e.path("out.log"))
	return seq, m, n
}

// a7fourWriters adds writers w0..w3 on in/wN.log (w3 quiet) rotating by mode.
func a7fourWriters(mode string) func(r *a7rig) {
	return func(r *a7rig) {
		for i := 0; i < 4; i++ {
			r.addWriter(fmt.Sprintf("w%d", i), "in", fmt.Sprintf("w%d.log", i), mode, 0)
		}
	}
}

// a7settled waits for settled; when it does not come, it fails naming the
// files feed.status lists as BEHIND, with their sizes on disk.
func a7settled(t *testing.T, d *daemon, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if st, err := d.status(); err == nil && st.Settled {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, body, _ := d.get("/feed.status?files=1")
	var st a7final
	json.Unmarshal(body, &st)
	var b strings.Builder
	for _, f := range st.Feeds {
		fmt.Fprintf(&b, "feed %s state %s settled %v filesBehind %d; ", f.Feed, f.State, f.Settled, f.FilesBehind)
		for _, fl := range f.Files {
			if fl.State == "BEHIND" {
				sz := int64(-1)
				if fi, err := os.Stat(fl.Path); err == nil {
					sz = fi.Size()
				}
				fmt.Fprintf(&b, "BEHIND %s offset %d size %d (on disk %d); ", fl.Path, fl.Offset, fl.Size, sz)
			}
		}
	}
	t.Fatalf("not settled within %v after every writer stopped: %s\nreport: %s", timeout, b.String(), tail(string(body), 2500))
}

// a7ledger sums the losses ledger (GET /admin/losses/<feed>) by counter.
func a7ledger(losses string) (tails, bytes uint64) {
	var led struct {
		Entries []struct {
			Counter string `json:"counter"`
			Amount  uint64 `json:"amount"`
		} `json:"entries"`
	}
	json.Unmarshal([]byte(losses), &led)
	for _, en := range led.Entries {
		switch en.Counter {
		case "lostTails":
			tails += en.Amount
		case "lostBytes":
			bytes += en.Amount
		}
	}
	return tails, bytes
}

func a7emptyAdopted(t *testing.T) (missing []int, n, distinct int, lossless bool, lostTails uint64, losses string) {
	e := newEnv(t, a7cfg("./in/*.log", a7small))
	if err := os.MkdirAll(e.path("in"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := e.path("in/w.log")
	appendTo(t, p, a7lines("w", 0, 2))
	d := e.start()
	d.waitSettled(20 * time.Second)
	if err := os.Rename(p, p+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, p, "")
	time.Sleep(1500 * time.Millisecond)
	d.waitSettled(20 * time.Second)
	d.kill()
	appendTo(t, p, a7lines("w", 2, 3))
	if err := os.Rename(p+".1", p+".2"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p, p+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, p, a7lines("w", 5, 2))
	d = e.start()
	a7settled(t, d, 20*time.Second)
	time.Sleep(time.Second)
	a7settled(t, d, 20*time.Second)
	st, _ := statusRaw(t, d)
	_, lb, _ := d.get("/admin/losses/logs")
	d.stop()
	m, n := a7count(t, e.path("out.log"))
	f := st.feed(t, "logs")
	for i := 0; i < 7; i++ {
		if m[strings.TrimSuffix(a7lines("w", i, 1), "\n")] == 0 {
			missing = append(missing, i)
		}
	}
	return missing, n, len(m), f.Lossless, f.LostTails, string(lb)
}

// TestAud7EDeletedClosedFileCountedLost: a glob feed (./in/*.log,
// maxOpenFiles 3, closeInactiveMillis 200) reads w.log to its end; 600 ms
// later (closed as inactive, every line acknowledged and committed) the
// application deletes it and creates a new w.log with 2 lines; a second
// later, settled, the daemon is killed with SIGKILL and started again.
// Nothing is lost: every line is in the output once. DESIGN §4: "A file
// that was read to its end, committed and then deleted is not a lost tail:
// once such a file is closed with every line acknowledged, the pointer
// records that nothing of it is pending … and a restart that cannot find it
// loses nothing"; README: "A file deleted or renamed out of the glob while
// tailfeed runs, read to its end and every line of it committed (open
// then, or closed by closeInactiveMillis and read to the size last seen),
// leaves that empty record and is never counted". Observed in 4 of 4
// invocations (at round 0 or 1 of up to 4): after the restart feed.status
// says lossless false, lostTails 1 ("glob file gone while stopped (pointer
// 420b9969f429690f.ptr at offset 66); its unread tail, if any, is lost" —
// 66 is the deleted file's whole length, read and committed), so `tailfeed
// status` exits 1, while no line is missing. The same rounds with the file
// still open at the deletion (no 600 ms wait) held (1 of 1, 4 rounds).
func TestAud7EDeletedClosedFileCountedLost(t *testing.T) {
	e := newEnv(t, a7cfg("./in/*.log", a7small))
	if err := os.MkdirAll(e.path("in"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := e.path("in/w.log")
	appendTo(t, p, a7lines("w", 0, 3))
	appendTo(t, e.path("in/o.log"), a7lines("o", 0, 3))
	seq := 3
	for k := 0; k < 4; k++ {
		d := e.start()
		d.waitSettled(20 * time.Second)
		time.Sleep(600 * time.Millisecond)
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		appendTo(t, p, a7lines("w", seq, 2))
		seq += 2
		time.Sleep(time.Second)
		d.waitSettled(20 * time.Second)
		d.kill()
		d = e.start()
		a7settled(t, d, 20*time.Second)
		st, _ := statusRaw(t, d)
		_, lb, _ := d.get("/admin/losses/logs")
		d.stop()
		m, n := a7count(t, e.path("out.log"))
		var missing []int
		for i := 0; i < seq; i++ {
			if m[strings.TrimSuffix(a7lines("w", i, 1), "\n")] == 0 {
				missing = append(missing, i)
			}
		}
		f := st.feed(t, "logs")
		t.Logf("round %d: %d output lines, %d distinct, %d written (+3 of o.log); missing %v; lossless %v lostTails %d; ledger %s", k, n, len(m), seq, missing, f.Lossless, f.LostTails, lb)
		if len(missing) > 0 {
			t.Fatalf("round %d: lines %v never delivered", k, missing)
		}
		if !f.Lossless {
			t.Fatalf("round %d: lossless false (lostTails %d) although every line was delivered and every deleted file was read to its end and committed before the kill", k, f.LostTails)
		}
	}
}

const a7small = "    maxOpenFiles: 3\n    closeInactiveMillis: 200\n"

// TestAud7BRenameOutOfGlobKill9Twice: four writers (three busy, one quiet)
// under ./in/*.log, each rotated logrotate-`create` style (w.log → w.log.1,
// older generations shifted, none ever deleted, none matched by the glob, a
// new w.log at once) every 2.5–3.75 s — outside the 2 s mtime slack of
// DESIGN §4's later-generation rule — with maxOpenFiles 3 and
// closeInactiveMillis 200; the daemon is killed with SIGKILL 14 times at
// random moments (during start-up, at random, right after a rotation, right
// after a SIGHUP reload that changes the feed, after a while), sometimes
// staying down while the writers rotate. Every line is on disk at the end.
//
// DESIGN §10: "Exactly-once output is byte-identical per input file"; §7
// "lossless … true only while tailfeed can show that no line was skipped"
// (and README: "`create` (rename), live or stopped, any number of
// rotations | nothing … lossless"; for a glob "a new app.log takes the
// pointer of the file last at that path and reads app.log.1's unread tail
// and the later generations beside it first").
//
// Observed, 4 of 4 runs (10–16 rotations, 14 kills, ~30–45k lines each):
//   - the quiet writer's new file taken twice at a restart that follows a
//     rotation: the epochs file shows, 2–9 ms apart, a "reset" of the old
//     stream's pointer onto the new w3.log AND an "adopted" new stream for
//     the same file key, so its lines are delivered under two epochs and
//     land twice in the exactlyOnce output (10–28 duplicates; once also 5
//     of a busy writer's lines) (3 of 4 runs; 4 of 6 counting later
//     checks — this test makes up to 3 runs of ~15 s);
//   - the extra stream's pointer is then counted as a loss at a later
//     restart: lostTails + 1, "glob file gone while stopped (pointer
//     69b92ef25856cd7a.ptr at offset 270); its unread tail, if any, is
//     lost", while no line is missing — lossless false for a loss that
//     did not happen;
//   - with faster rotations the same writers lose lines outright:
//     TestAud7CRenameFastKill9LosesLines.
//
// Fixed in the thirteenth session (it was parked behind -tags
// openfindings): the new file given the old pointer was taken for an inode
// reuse while its stream waited for a slot (a second stream), and a line
// written as a renamed-out file's stream closed was counted lost though read
// beside its path (source/file: TestGlobGenOwnStreamWaitingIsNotTakenForInodeReuse,
// TestGlobFileRenamedOutWhileItsStreamStopsIsReadBeside). 7 of 7 runs pass
// after the fix (4 of 4 failed before).
func TestAud7BRenameOutOfGlobKill9Twice(t *testing.T) {
	for run := 0; run < 3 && !t.Failed(); run++ {
		t.Logf("run %d", run)
		res, st, body, r := a7scenario(t, "./in/*.log", a7small, a7fourWriters("rename"), 14, 2500*time.Millisecond)
		a7assert(t, r, res, st, body, false)
		for tag, rr := range res {
			if rr.missing > 0 {
				t.Errorf("%s: %d of %d lines never delivered although every generation is on disk", tag, rr.missing, rr.total)
			}
		}
	}
}

// TestAud7DEmptyAdoptedFileRotatedWhileDown: a SILENT loss (found while
// narrowing C). A glob feed (./in/*.log, maxOpenFiles 3,
// closeInactiveMillis 200) reads w.log (2 lines); it is rotated live
// (w.log → w.log.1, a new, empty w.log); 1.5 s later, settled, the daemon is
// killed with SIGKILL. While it is down the application writes 3 lines to
// w.log and logrotate rotates again (w.log.1 → w.log.2, w.log → w.log.1, a
// new w.log with 2 lines). Every file is on disk; the restart must deliver
// all 7 lines or count what it cannot.
//
// DESIGN §7: "lossless is true only while tailfeed can show that no line
// was skipped"; §4: "Restart after rotation: every generation still on
// disk … read every later generation: the files matching rotatedNames …";
// README (glob, order across a restart): "the files first matched under
// one path — files rotated away from it …, the files new at this start
// beside it under one of its rotatedNames (generations born and rotated
// while tailfeed was stopped: app.log.1 for app.log by default), and the
// file at the path now — are published one after the other".
//
// Observed: in about 1 run in 4 (1 of 8 single runs; then failing at the
// 1st, 2nd, 3rd, 4th and 1st iteration of five invocations of this test),
// lines 2–4 (all of w.log.1) are never delivered, and feed.status says
// lossless true, lostTails 0, with an empty losses ledger. The failing
// runs' first daemon log shows the first w.log's stream closed ("closed
// glob file gone after every line of it was committed; the pointer records
// that nothing of it is pending") and no pointer ever created for the
// empty new w.log before the kill; at the restart nothing names w.log.1 and
// it is never read. The test makes up to 12 runs and stops at the first
// failing one.
//
// Fixed in the thirteenth session (it was parked behind -tags
// openfindings): the old file's pointer is kept while the file at the path
// it left is empty with no pointer (source/file:
// TestGlobEmptySuccessorRotatedWhileDownIsRead). 36 of 36 runs pass after
// the fix.
func TestAud7DEmptyAdoptedFileRotatedWhileDown(t *testing.T) {
	for run := 0; run < 12; run++ {
		missing, n, distinct, lossless, lostTails, losses := a7emptyAdopted(t)
		t.Logf("run %d: %d output lines, %d distinct of 7; missing %v; lossless %v lostTails %d; ledger %s", run, n, distinct, missing, lossless, lostTails, losses)
		if len(missing) > 0 {
			t.Errorf("run %d: lines %v (in w.log.1, on disk beside the path) never delivered; lostTails %d, lossless %v", run, missing, lostTails, lossless)
		}
		if distinct != n {
			t.Errorf("run %d: %d duplicates", run, n-distinct)
		}
		if t.Failed() {
			return
		}
	}
}

// TestAud7ACopytruncateQuietFileCopyReadAgain: a quiet file in a glob feed
// (./in/*.log, maxOpenFiles 3, closeInactiveMillis 200), closed as inactive
// between its lines, rotated by copytruncate every ~0.6 s with numbered
// copies (w.log.1, w.log.2, … shifted first as logrotate does, not matched
// by the glob) while the daemon runs — no kill, no restart. DESIGN §10:
// "Exactly-once output is byte-identical per input file"; README, glob
// copytruncate of a closed file: "Copies its earlier opens in this process
// read are never taken for later generations", and copytruncate live
// "nothing twice". Observed: an old copy, already read under its own epoch,
// is read again from its start under a new epoch (e.g. lines 6–7 under
// epoch 77822b44… and again, after three more rotations, under 29baf24b…),
// so they land twice in the exactlyOnce output: 15 lines written, 17 or 21
// output lines. About half the runs of 6 rotations fail (5 of 9 runs), so
// this test makes up to 3 runs of 8 rotations (failed 4 of 4 times).
// Caveat: with copytruncates 2.2 s apart it held (3 runs of 6); the
// re-read copies are within DESIGN §4's 2 s mtime slack for later
// generations at a restart — but this is a running daemon re-reading a
// copy it already read, which the README sentence above excludes.
// Fixed in the twenty-second session (3 runs of 8 rotations, 4 times: no
// duplicate): a source open across several copytruncates took one copy per
// truncation and the glob kept only the last for the stream's next source
// (source/file TestAud7ACopiesOfOneOpenSourceNotReadAgain).
func TestAud7ACopytruncateQuietFileCopyReadAgain(t *testing.T) {
	total := 0
	for run := 0; run < 3; run++ {
		seq, m, n := a7quietCopytruncate(t, 8, 300)
		dups := 0
		for _, c := range m {
			if c > 1 {
				dups += c - 1
			}
		}
		t.Logf("run %d: %d lines written, %d output lines, %d distinct, %d duplicates", run, seq, n, len(m), dups)
		if len(m) != seq {
			t.Errorf("run %d: %d distinct lines in the output, %d written", run, len(m), seq)
		}
		total += dups
		if dups > 0 {
			break
		}
	}
	if total > 0 {
		t.Errorf("exactlyOnce output holds %d duplicate lines of one input file (copytruncate, live, no crash)", total)
	}
}
