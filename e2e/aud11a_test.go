package e2e

// Audit 11a (black box, DESIGN.md and README only): the core promise under
// kill -9 as a property test over a GLOB feed (DESIGN §10 with §2, §3, §4,
// §7, §8). One feed `path: ./logs/**/*.log` is read by a plain file sink,
// an exactlyOnce file sink with `format: json` (each object names its
// path, epoch and position), a count processor keyed by the line's file,
// and a pull subscriber whose client ACKs (late, out of order, some left to
// time out). A writer appends numbered lines (each names its file and a
// per-file sequence number) to several files: some there from the start,
// some created while running in new nested directories, some created empty
// and written later, some deleted once every subscriber has them; the real
// logrotate rotates some (create+compress+delaycompress; copytruncate
// +compress+delaycompress) while running and while the daemon is down; the
// daemon is killed with SIGKILL at many seeded random moments. After a
// final clean run to settled every subscriber is checked.
//
// Tests named TestAud11AX… are findings (they fail on the binary they were
// written against); TestAud11AOK… are probes that passed, kept as
// regressions. AUD11A_KILLS sets the kills per scenario (default 8; the
// audit ran 30), AUD11A_SEED the seed, AUD11A_KIND one kind of kill
// (aud11AKind), AUD11A_GZ=1 adds logrotate
// `compress` without `delaycompress` (create and copytruncate) to the
// property test (it hit the finding below now and then, until its fix),
// AUD11A_KEEP=DIR keeps every run's daemon log and the epochs file.
//
// Finding (fixed in the thirtieth session; its test is now
// TestGlobEmptyNewFileGzRotatedWhileDown in glob_held_deleted_test.go): a
// glob feed, logrotate create+compress: the new file after a live rotation
// is still empty at a kill -9; lines written to it and a second rotation
// while down were lost (13 of 28 lines, on disk in .gz generations) with
// lossless true.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// aud11ALine is one line the writer wrote: the file it names (path
// relative to logs/), its per-file sequence number, the generation of that
// path it went to (a file life at the path between two rotations) and its
// position in that generation (byte offset after its terminator).
type aud11ALine struct {
	fid  string
	seq  int
	gen  int
	pos  int64
	text string
}

// aud11AFile is one logical file (a path under logs/).
type aud11AFile struct {
	rel     string
	rot     string // "" | create | copytruncate
	conf    string // its logrotate config
	seq     int
	gen     int
	off     int64
	retired bool // no more writes (waiting to be deleted)
	deleted bool
	last    time.Time // last rotation's end
}

// aud11AWriter serializes writes, creations, rotations and deletions, so
// no line is ever in logrotate's copy→truncate window and the expected
// output is exact.
type aud11AWriter struct {
	mu     sync.Mutex
	logs   string
	lrBin  string
	state  string
	files  map[string]*aud11AFile
	order  []string
	lines  []aud11ALine
	rots   int
	newN   int
	dels   int
	errOne error
}

func (w *aud11AWriter) fail(err error) {
	if w.errOne == nil {
		w.errOne = err
	}
}

// add registers a new file; empty: created with no bytes.
func (w *aud11AWriter) add(rel, rot string, empty bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f := &aud11AFile{rel: rel, rot: rot}
	p := filepath.Join(w.logs, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.fail(err)
		return
	}
	if empty {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			w.fail(err)
			return
		}
	}
	if rot != "" {
		dir := map[string]string{
			"create":          "create\nrotate 60\ncompress\ndelaycompress",
			"copytruncate":    "copytruncate\nrotate 60\ncompress\ndelaycompress",
			"create-gz":       "create\nrotate 60\ncompress",
			"copytruncate-gz": "copytruncate\nrotate 60\ncompress",
		}[rot]
		f.conf = filepath.Join(filepath.Dir(w.state), "lr-"+strings.ReplaceAll(rel, "/", "_")+".conf")
		if err := os.WriteFile(f.conf, fmt.Appendf(nil, "%s {\n%s\nmissingok\nnomail\n}\n", p, dir), 0o644); err != nil {
			w.fail(err)
			return
		}
	}
	w.files[rel] = f
	w.order = append(w.order, rel)
}

// write appends n lines to rel (open, write, close).
func (w *aud11AWriter) write(rel string, n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writeLocked(rel, n)
}

func (w *aud11AWriter) writeLocked(rel string, n int) {
	f := w.files[rel]
	if f == nil || f.retired || f.deleted {
		return
	}
	var b strings.Builder
	var add []aud11ALine
	off := f.off
	for i := 0; i < n; i++ {
		s := fmt.Sprintf("%s #%06d %s", rel, f.seq, strings.Repeat("x", 3+f.seq%23))
		b.WriteString(s)
		b.WriteByte('\n')
		off += int64(len(s) + 1)
		add = append(add, aud11ALine{fid: rel, seq: f.seq, gen: f.gen, pos: off, text: s})
		f.seq++
	}
	p := filepath.Join(w.logs, rel)
	fh, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		w.fail(err)
		return
	}
	defer fh.Close()
	if st, _ := fh.Stat(); st.Size() != f.off {
		w.fail(fmt.Errorf("%s at %d bytes, writer expected %d", rel, st.Size(), f.off))
	}
	if _, err := fh.WriteString(b.String()); err != nil {
		w.fail(err)
		return
	}
	f.off = off
	w.lines = append(w.lines, add...)
}

// aud11ARotated are the files a stop may rotate (relative to logs).
var aud11ARotated = []string{"a.log", "sub/b.log", "x/y/r.log", "sub/t.log"}

// aud11AAllRead: d's status lists each of rels (under logs) with a
// stream that read some of it (offset > 0).
func aud11AAllRead(d *daemon, logs string, rels []string) bool {
	code, body, err := d.get("/feed.status?files=1")
	if err != nil || code != 200 {
		return false
	}
	var g globStatus
	if json.Unmarshal(body, &g) != nil || len(g.Feeds) != 1 {
		return false
	}
	read := map[string]bool{}
	for _, f := range g.Feeds[0].Files {
		if f.Offset > 0 {
			read[f.Path] = true
		}
	}
	for _, rel := range rels {
		if !read[filepath.Join(logs, rel)] {
			return false
		}
	}
	return true
}

// rotate runs logrotate -f on rel if its last rotation is at least gap ago.
func (w *aud11AWriter) rotate(rel string, gap time.Duration) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	f := w.files[rel]
	if f == nil || f.rot == "" || f.deleted || time.Since(f.last) < gap {
		return false
	}
	if f.off == 0 {
		return false // logrotate's notifempty is not set; keep generations non-empty
	}
	// A line right before the rotation: each generation's mtime is its
	// rotation's time, so generations are as far apart as rotations
	// (DESIGN §4's 2 s mtime rule: closer ones may be read twice).
	w.writeLocked(rel, 1)
	out, err := exec.Command(w.lrBin, "-s", w.state, "-f", f.conf).CombinedOutput()
	if err != nil {
		w.fail(fmt.Errorf("logrotate %s: %v: %s", rel, err, out))
	}
	f.gen++
	f.off = 0
	f.last = time.Now()
	w.rots++
	return true
}

func (w *aud11AWriter) rotCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rots
}

// changes counts files added and deleted.
func (w *aud11AWriter) changes() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.order) + w.dels
}

// aud11AWaitOrTimeout polls cond until it holds or timeout passed.
func aud11AWaitOrTimeout(timeout time.Duration, cond func() bool) {
	deadline := time.Now().Add(timeout)
	for !cond() && time.Now().Before(deadline) {
		time.Sleep(3 * time.Millisecond)
	}
}

func (w *aud11AWriter) snapshot() []aud11ALine {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]aud11ALine(nil), w.lines...)
}

// active lists the files still written to.
func (w *aud11AWriter) active() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, rel := range w.order {
		if f := w.files[rel]; !f.retired && !f.deleted {
			out = append(out, rel)
		}
	}
	return out
}

// aud11AGap: rotations of one file at least this far apart (DESIGN §4's
// 2 s mtime rule).
const aud11AGap = 2600 * time.Millisecond

// aud11AObj is one object of the json file sink (and of pull events).
type aud11AObj struct {
	ID       string `json:"id"`
	Feed     string `json:"feed"`
	Epoch    string `json:"epoch"`
	Position int64  `json:"position"`
	Path     string `json:"path"`
	Line     string `json:"line"`
}

// aud11AReadOnce parses the exactlyOnce json output.
func aud11AReadOnce(path string) ([]aud11AObj, []string) {
	b, _ := os.ReadFile(path)
	var objs []aud11AObj
	var bad []string
	for _, l := range strings.Split(string(b), "\n") {
		if l == "" {
			continue
		}
		o, ok := onceLineFast(l)
		if !ok {
			if err := json.Unmarshal([]byte(l), &o); err != nil {
				bad = append(bad, l)
				continue
			}
		}
		objs = append(objs, o)
	}
	return objs, bad
}

// onceLineFast parses a json sink line of exactly the layout the file sink
// writes ({"id":…,"feed":…,"epoch":…,"position":…,"path":…,"line":…}) with
// plain ASCII strings (no escape, no control or non-ASCII byte); anything
// else is false and left to encoding/json, whose result it equals. The
// e2e tests poll outputs of up to a million lines under -race, where
// json.Unmarshal per line kept a core busy in the test process (a single
// test spent 27 s of CPU there).
func onceLineFast(l string) (aud11AObj, bool) {
	var o aud11AObj
	str := func(key string, dst *string) bool {
		if !strings.HasPrefix(l, key) {
			return false
		}
		l = l[len(key):]
		for i := 0; i < len(l); i++ {
			switch c := l[i]; {
			case c == '"':
				*dst, l = l[:i], l[i+1:]
				return true
			case c == '\\' || c < 0x20 || c >= 0x80:
				return false
			}
		}
		return false
	}
	if !str(`{"id":"`, &o.ID) || !str(`,"feed":"`, &o.Feed) || !str(`,"epoch":"`, &o.Epoch) {
		return o, false
	}
	if !strings.HasPrefix(l, `,"position":`) {
		return o, false
	}
	l = l[len(`,"position":`):]
	i := 0
	for i < len(l) && i < 18 && l[i] >= '0' && l[i] <= '9' {
		o.Position = o.Position*10 + int64(l[i]-'0')
		i++
	}
	if i == 0 || (i > 1 && l[0] == '0') {
		return o, false
	}
	l = l[i:]
	if !str(`,"path":"`, &o.Path) || !str(`,"line":"`, &o.Line) || l != "}" {
		return o, false
	}
	return o, true
}

// aud11APuller pulls from one daemon life and ACKs (wild: out of order,
// late, some left to time out).
type aud11APuller struct {
	mu    sync.Mutex
	acked map[string]int  // text → acknowledged deliveries
	sent  map[string]bool // text → an ACK for it was sent
	// doubt: text → an ACK for it got no answer (the daemon killed while
	// it ran): the daemon may have applied it and committed past the line,
	// which is then not delivered again (DESIGN §7: an acknowledged line
	// is done), or not, and the line comes back.
	doubt map[string]bool
	epoch map[string]string // epoch → a line text seen under it
	ids   map[string]string // feed:epoch:position → text
	bad   []string
	rnd   *rand.Rand
}

func aud11ANewPuller(seed uint64) *aud11APuller {
	return &aud11APuller{acked: map[string]int{}, sent: map[string]bool{}, doubt: map[string]bool{}, epoch: map[string]string{}, ids: map[string]string{}, rnd: rand.New(rand.NewPCG(seed, 21))}
}

func (p *aud11APuller) note(evs []event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ev := range evs {
		id := fmt.Sprintf("%s:%s:%d", ev.Feed, ev.Epoch, ev.Position)
		if prev, ok := p.ids[id]; ok && prev != ev.Line && len(p.bad) < 20 {
			p.bad = append(p.bad, fmt.Sprintf("pull id %s carried %q and %q", id, prev, ev.Line))
		}
		p.ids[id] = ev.Line
		p.epoch[ev.Epoch] = ev.Line
	}
}

func (p *aud11APuller) run(addr string, stop <-chan struct{}) {
	cl := &http.Client{Timeout: 3 * time.Second}
	post := func(body any) (int, []byte) {
		b, _ := json.Marshal(body)
		resp, err := cl.Post("http://"+addr+"/v1/ack", "application/json", bytes.NewReader(b))
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, out
	}
	for {
		select {
		case <-stop:
			return
		default:
		}
		resp, err := cl.Get("http://" + addr + "/v1/pull/consumer?max=300&wait=100ms")
		if err != nil {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		var pr struct {
			Events []event `json:"events"`
		}
		if err := json.Unmarshal(body, &pr); err != nil || len(pr.Events) == 0 {
			continue
		}
		evs := pr.Events
		p.note(evs)
		p.mu.Lock()
		kind := p.rnd.IntN(10)
		lateMs := p.rnd.IntN(400)
		cut := p.rnd.IntN(len(evs))
		p.mu.Unlock()
		switch kind {
		case 0: // leave a few unacknowledged: redelivered after ackTimeoutMillis
			evs = append(append([]event(nil), evs[:cut]...), evs[min(cut+3, len(evs)):]...)
		case 1, 2: // reverse order, one request per delivery
			for i := len(evs) - 1; i >= 0; i-- {
				p.mu.Lock()
				p.sent[evs[i].Line] = true
				p.mu.Unlock()
				code, _ := post(map[string]any{"deliveryId": evs[i].DeliveryID})
				p.mu.Lock()
				if code == 200 {
					p.acked[evs[i].Line]++
				} else if code == 0 {
					p.doubt[evs[i].Line] = true
				}
				p.mu.Unlock()
			}
			continue
		case 3: // late
			time.Sleep(time.Duration(lateMs) * time.Millisecond)
		}
		if len(evs) == 0 {
			continue
		}
		ids := make([]string, len(evs))
		p.mu.Lock()
		for i, ev := range evs {
			ids[i] = ev.DeliveryID
			p.sent[ev.Line] = true
		}
		p.mu.Unlock()
		code, ab := post(map[string]any{"deliveryIds": ids})
		if code == 0 {
			p.mu.Lock()
			for _, ev := range evs {
				p.doubt[ev.Line] = true
			}
			p.mu.Unlock()
		}
		var ar struct {
			Unknown []string `json:"unknown"`
		}
		if code != 200 || json.Unmarshal(ab, &ar) != nil {
			continue
		}
		unknown := map[string]bool{}
		for _, u := range ar.Unknown {
			unknown[u] = true
		}
		p.mu.Lock()
		for _, ev := range evs {
			if !unknown[ev.DeliveryID] {
				p.acked[ev.Line]++
			}
		}
		p.mu.Unlock()
	}
}

const aud11ATmpl = `dataDir: ./state
status: {listen: "{{ADDR}}"}
shutdownTimeoutMillis: 3000
feeds:
  - name: app
    path: ./logs/**/*.log
    readStrategy: COMMITTED
    pollIntervalMillis: 50
    rotateWaitMillis: 400
    scanIntervalMillis: 1000
processors:
  - {name: plain, feed: app, type: file, path: ./out/plain.log}
  - {name: once, feed: app, type: file, path: ./out/once.jsonl, exactlyOnce: true, format: json}
  - {name: counter, feed: app, type: count, match: '^(?P<key>\S+) #'}
  - {name: consumer, feed: app, type: pull, ackTimeoutMillis: 2000, maxInFlight: 3000}
`

type aud11AScenario struct {
	kills int
	seed  uint64
	// deletes: files are retired and deleted once every subscriber has them.
	deletes bool
}

func aud11AKills() int {
	if v, err := strconv.Atoi(os.Getenv("AUD11A_KILLS")); err == nil && v > 0 {
		return v
	}
	return 8
}

// aud11AKind is AUD11A_KIND, the one kind of kill to make (0 during
// start-up … 5 after a file appeared; to soak one window), or -1.
func aud11AKind() int {
	if v, err := strconv.Atoi(os.Getenv("AUD11A_KIND")); err == nil && v >= 0 && v < 6 {
		return v
	}
	return -1
}

func aud11ASeed() uint64 {
	if s := os.Getenv("AUD11A_SEED"); s != "" {
		if v, err := strconv.ParseUint(s, 10, 64); err == nil {
			return v
		}
	}
	return uint64(time.Now().UnixNano())
}

// aud11ARun runs one scenario and returns the problems found (each a
// disagreement with DESIGN).
func aud11ARun(t *testing.T, sc aud11AScenario) (problems []string) {
	lrBin, err := exec.LookPath("logrotate")
	if err != nil {
		t.Skip("logrotate not installed")
	}
	t.Logf("glob kill -9 scenario: seed %d kills %d deletes %v", sc.seed, sc.kills, sc.deletes)
	rnd := rand.New(rand.NewPCG(sc.seed, 1))
	e := newEnv(t, aud11ATmpl)
	logs := e.path("logs")
	w := &aud11AWriter{logs: logs, lrBin: lrBin, state: e.path("lr/state"), files: map[string]*aud11AFile{}}
	if err := os.MkdirAll(e.path("lr"), 0o755); err != nil {
		t.Fatal(err)
	}
	w.add("a.log", "create", false)
	w.add("sub/b.log", "copytruncate", false)
	// create/copytruncate + compress without delaycompress: only with
	// AUD11A_GZ=1 (they hit the finding fixed in the thirtieth session,
	// TestGlobEmptyNewFileGzRotatedWhileDown, now and then).
	rMode, tMode := "create", "copytruncate"
	if os.Getenv("AUD11A_GZ") != "" {
		rMode, tMode = "create-gz", "copytruncate-gz"
	}
	w.add("x/y/r.log", rMode, false)
	w.add("sub/t.log", tMode, false)
	w.add("c.log", "", false)
	w.add("sub/d.log", "", true)
	for _, rel := range []string{"a.log", "sub/b.log", "x/y/r.log", "sub/t.log", "c.log"} {
		w.write(rel, 3)
	}
	onceOut := e.path("out/once.jsonl")
	puller := aud11ANewPuller(sc.seed)

	stopAll := make(chan struct{})
	var wg sync.WaitGroup
	var running atomic.Bool
	// writer: a line or three to a random active file every few ms
	wg.Go(func() {
		r := rand.New(rand.NewPCG(sc.seed, 2))
		for {
			select {
			case <-stopAll:
				return
			case <-time.After(time.Duration(3+r.IntN(8)) * time.Millisecond):
				act := w.active()
				if len(act) > 0 {
					w.write(act[r.IntN(len(act))], 1+r.IntN(3))
				}
			}
		}
	})
	// files: new ones (nested new directories, some empty first), some retired and deleted
	wg.Go(func() {
		r := rand.New(rand.NewPCG(sc.seed, 3))
		for {
			select {
			case <-stopAll:
				return
			case <-time.After(time.Duration(300+r.IntN(700)) * time.Millisecond):
			}
			w.mu.Lock()
			w.newN++
			n := w.newN
			w.mu.Unlock()
			switch r.IntN(4) {
			case 0:
				w.add(fmt.Sprintf("n%d/m%d/e%d.log", n, n, n), "", r.IntN(2) == 0)
			case 1:
				w.add(fmt.Sprintf("sub/f%d.log", n), "", true)
			case 2:
				if !sc.deletes {
					continue
				}
				// retire a plain (never rotated) file with lines; delete it
				// once every subscriber has all its lines
				w.mu.Lock()
				var cand []*aud11AFile
				for _, rel := range w.order {
					f := w.files[rel]
					if f.rot == "" && !f.retired && !f.deleted && f.seq > 0 {
						cand = append(cand, f)
					}
				}
				var f *aud11AFile
				if len(cand) > 1 {
					f = cand[r.IntN(len(cand))]
					f.retired = true
				}
				w.mu.Unlock()
				_ = f
			}
			// delete the retired files every subscriber has
			w.mu.Lock()
			var ret []*aud11AFile
			for _, rel := range w.order {
				if f := w.files[rel]; f.retired && !f.deleted {
					ret = append(ret, f)
				}
			}
			lines := append([]aud11ALine(nil), w.lines...)
			w.mu.Unlock()
			if len(ret) == 0 {
				continue
			}
			objs, _ := aud11AReadOnce(onceOut)
			inOnce := map[string]bool{}
			for _, o := range objs {
				inOnce[o.Line] = true
			}
			for _, f := range ret {
				all := true
				puller.mu.Lock()
				for _, l := range lines {
					if l.fid == f.rel && (!inOnce[l.text] || puller.acked[l.text] == 0) {
						all = false
						break
					}
				}
				puller.mu.Unlock()
				if !all {
					continue
				}
				w.mu.Lock()
				if err := os.Remove(filepath.Join(logs, f.rel)); err != nil {
					w.fail(err)
				}
				f.deleted = true
				w.dels++
				w.mu.Unlock()
			}
		}
	})
	// rotator: while the daemon runs, a rotating file every now and then
	wg.Go(func() {
		r := rand.New(rand.NewPCG(sc.seed, 4))
		rels := []string{"a.log", "sub/b.log", "x/y/r.log", "sub/t.log"}
		for {
			select {
			case <-stopAll:
				return
			case <-time.After(time.Duration(200+r.IntN(600)) * time.Millisecond):
				if running.Load() {
					w.rotate(rels[r.IntN(len(rels))], aud11AGap+time.Duration(r.IntN(800))*time.Millisecond)
				}
			}
		}
	})

	var klog strings.Builder
	downRots := 0
	for k := 0; k < sc.kills; k++ {
		kind := rnd.IntN(6)
		if f := aud11AKind(); f >= 0 {
			kind = f // (rnd's sequence unchanged)
		}
		var d *daemon
		if kind == 0 && k > 0 {
			d = e.spawn()
		} else {
			d = e.start()
		}
		if k == 0 {
			// The first start reaches /readyz 200 (DESIGN §12: "from the
			// first moment every feed has opened its file or is waiting
			// for it") before its kill: before the glob's first scan
			// nothing of the files was known, and a file rotated while
			// down then had its lines never read (README: "Before the
			// first scan … nothing of the files is known"; seed
			// 1796536884841194830, thirty-first session). Later starts
			// are killed at any point: the files are known by then.
			aud11AWaitOrTimeout(30*time.Second, func() bool { code, _, err := d.get("/readyz"); return err == nil && code == 200 })
			// And until each file a kill's stop may rotate has been read
			// (its stream's pointer names it): one still unread is kept
			// in unread.list by path, key and size only, and rotated
			// twice while down its content is in a .gz, which README
			// counts ("compressed (a .gz only) or gone, it counts
			// lostTails 1") — a counted loss, not this test's subject
			// (seed 1796679508482668828, forty-third session: killed
			// 0 s after ready, sub/b.log never read, rotated twice).
			aud11AWaitOrTimeout(30*time.Second, func() bool { return aud11AAllRead(d, w.logs, aud11ARotated) })
			time.Sleep(100 * time.Millisecond) // their first commits (the list drops a file its pointer names)
		}
		stopPull := make(chan struct{})
		var pwg sync.WaitGroup
		pwg.Go(func() { puller.run(d.addr, stopPull) })
		running.Store(true)
		var wait time.Duration
		switch kind {
		case 0: // during start-up
			wait = time.Duration(rnd.IntN(300)) * time.Millisecond
		case 1: // right after ready
			wait = time.Duration(rnd.IntN(80)) * time.Millisecond
		case 4: // right after a rotation while running
			r0 := w.rotCount()
			aud11AWaitOrTimeout(4*time.Second, func() bool { return w.rotCount() > r0 })
			wait = time.Duration(rnd.IntN(250)) * time.Millisecond
		case 5: // right after a file appeared or was deleted
			n0 := w.changes()
			aud11AWaitOrTimeout(3*time.Second, func() bool { return w.changes() > n0 })
			wait = time.Duration(rnd.IntN(100)) * time.Millisecond
		default: // mid-stream
			wait = time.Duration(200+rnd.IntN(1500)) * time.Millisecond
		}
		time.Sleep(wait)
		running.Store(false)
		d.kill()
		close(stopPull)
		pwg.Wait()
		if p := aud11ACheckPointers(t, e, w, puller); p != "" {
			problems = append(problems, fmt.Sprintf("kill %d (kind %d, after %v; seed %d): %s", k, kind, wait, sc.seed, p))
		}
		if d.code != -1 {
			problems = append(problems, fmt.Sprintf("kill %d: daemon had exited with %d before the kill: %s", k, d.code, tail(d.log(), 1500)))
		}
		down := ""
		switch rnd.IntN(6) {
		case 0, 1:
			for _, rel := range aud11ARotated {
				if rnd.IntN(2) == 0 && w.rotate(rel, aud11AGap) {
					downRots++
					down += " " + rel
				}
			}
		case 2: // a long stop: one file rotated twice (generations 2.6 s apart)
			rel := aud11ARotated[rnd.IntN(4)]
			for range 2 {
				for !w.rotate(rel, aud11AGap) {
					time.Sleep(50 * time.Millisecond)
				}
				downRots++
				down += " " + rel
			}
		}
		fmt.Fprintf(&klog, "kill %d: kind %d after %v; rotated while down:%s\n", k, kind, wait, down)
	}
	close(stopAll)
	wg.Wait()
	if w.errOne != nil {
		t.Fatalf("writer: %v", w.errOne)
	}
	lines := w.snapshot()
	t.Logf("kills:\n%s", klog.String())

	// Final clean run to settled with every present file read to its end.
	d := e.start()
	stopPull := make(chan struct{})
	var pwg sync.WaitGroup
	pwg.Go(func() { puller.run(d.addr, stopPull) })
	present := map[string]int64{}
	w.mu.Lock()
	for _, rel := range w.order {
		f := w.files[rel]
		if !f.deleted {
			if st, err := os.Stat(filepath.Join(logs, rel)); err == nil {
				present[filepath.Join(logs, rel)] = st.Size()
			}
		}
	}
	w.mu.Unlock()
	var g globStatus
	deadline := time.Now().Add(60 * time.Second)
	for {
		g = getGlobStatus(t, d)
		ok := len(g.Feeds) == 1 && g.Feeds[0].Settled
		if ok {
			seen := 0
			for _, f := range g.Feeds[0].Files {
				if sz, is := present[f.Path]; is && f.Offset == sz {
					seen++
				}
			}
			ok = seen == len(present)
		}
		if ok {
			puller.mu.Lock()
			for _, l := range lines {
				if puller.acked[l.text] == 0 && !puller.doubt[l.text] {
					ok = false
					break
				}
			}
			puller.mu.Unlock()
		}
		if ok || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	g = getGlobStatus(t, d)
	rep, raw := statusRaw(t, d)
	f := rep.feed(t, "app")
	counts := aud5Counts(t, d, "counter", "")
	_, _, lossesBody := request(t, d, http.MethodGet, "/admin/losses/app", "", nil)
	close(stopPull)
	pwg.Wait()
	d.stop()

	if keep := os.Getenv("AUD11A_KEEP"); keep != "" {
		dst := filepath.Join(keep, fmt.Sprint(sc.seed))
		os.MkdirAll(dst, 0o755)
		for i, r := range e.runs {
			os.WriteFile(filepath.Join(dst, fmt.Sprintf("run-%02d.log", i)), []byte(r.log()), 0o644)
		}
		if b, err := os.ReadFile(e.path("state/feeds/app.epochs")); err == nil {
			os.WriteFile(filepath.Join(dst, "epochs"), b, 0o644)
		}
		os.WriteFile(filepath.Join(dst, "kills"), []byte(klog.String()), 0o644)
		os.WriteFile(filepath.Join(dst, "losses"), lossesBody, 0o644)
	}
	// --- checks ---
	byText := map[string]aud11ALine{}
	perFile := map[string][]aud11ALine{}
	for _, l := range lines {
		byText[l.text] = l
		perFile[l.fid] = append(perFile[l.fid], l)
	}
	missing := map[string]int{} // sink → lines missing
	firstMiss := map[string]string{}
	miss := func(sink, s string) {
		missing[sink]++
		if firstMiss[sink] == "" {
			firstMiss[sink] = s
		}
	}
	// plain: every line at least once, nothing else
	plain, _ := os.ReadFile(e.path("out/plain.log"))
	pc := map[string]int{}
	for _, l := range strings.Split(string(plain), "\n") {
		if l != "" {
			pc[l]++
		}
	}
	for _, l := range lines {
		if pc[l.text] == 0 {
			miss("plain", l.text)
		}
	}
	for s := range pc {
		if _, ok := byText[s]; !ok {
			problems = append(problems, fmt.Sprintf("plain sink has a line never written: %q", s))
			break
		}
	}
	// exactlyOnce json: per input file each line once, in order
	objs, bad := aud11AReadOnce(onceOut)
	if len(bad) > 0 {
		problems = append(problems, fmt.Sprintf("exactlyOnce json sink: %d objects that do not parse (first %q)", len(bad), bad[0]))
	}
	oc := map[string]int{}
	idLine := map[string]string{}
	epochFile := map[string]string{}
	lastSeq := map[string]int{}
	dups, disorder, wrongPath, wrongPos := 0, 0, 0, 0
	var firstDup, firstDisorder, firstWrong string
	for _, o := range objs {
		oc[o.Line]++
		if oc[o.Line] == 2 {
			dups++
			if firstDup == "" {
				firstDup = fmt.Sprintf("%q (id %s)", o.Line, o.ID)
			}
		}
		if prev, ok := idLine[o.ID]; ok && prev != o.Line {
			problems = append(problems, fmt.Sprintf("exactlyOnce json: id %s names %q and %q", o.ID, prev, o.Line))
		}
		idLine[o.ID] = o.Line
		l, ok := byText[o.Line]
		if !ok {
			continue
		}
		if prev, ok := epochFile[o.Epoch]; ok && prev != fmt.Sprintf("%s gen %d", l.fid, l.gen) {
			problems = append(problems, fmt.Sprintf("exactlyOnce json: epoch %s carried lines of %s and of %s gen %d", o.Epoch, prev, l.fid, l.gen))
		}
		epochFile[o.Epoch] = fmt.Sprintf("%s gen %d", l.fid, l.gen)
		if !strings.HasSuffix(o.Path, "/logs/"+l.fid) {
			wrongPath++
			if firstWrong == "" {
				firstWrong = fmt.Sprintf("path %s for %q", o.Path, o.Line)
			}
		}
		if o.Position != l.pos {
			wrongPos++
			if firstWrong == "" {
				firstWrong = fmt.Sprintf("position %d for %q (gen %d, written at %d)", o.Position, o.Line, l.gen, l.pos)
			}
		}
		if ls, ok := lastSeq[l.fid]; ok && l.seq <= ls && oc[o.Line] == 1 {
			disorder++
			if firstDisorder == "" {
				firstDisorder = fmt.Sprintf("%q after #%06d", o.Line, ls)
			}
		}
		if ls, ok := lastSeq[l.fid]; !ok || l.seq > ls {
			lastSeq[l.fid] = l.seq
		}
	}
	for _, l := range lines {
		if oc[l.text] == 0 {
			miss("once", l.text)
		}
	}
	if dups > 0 {
		problems = append(problems, fmt.Sprintf("exactlyOnce json sink: %d lines twice (first %s)", dups, firstDup))
	}
	if disorder > 0 {
		problems = append(problems, fmt.Sprintf("exactlyOnce json sink: %d lines out of their file's order (first %s)", disorder, firstDisorder))
	}
	if wrongPath+wrongPos > 0 {
		problems = append(problems, fmt.Sprintf("exactlyOnce json sink: %d wrong paths, %d wrong positions (first %s)", wrongPath, wrongPos, firstWrong))
	}
	// count: per file exact (re-deliveries are skipped, DESIGN §6)
	for fid, ls := range perFile {
		if c := counts[fid]; c > float64(len(ls)) || (c < float64(len(ls)) && f.Lossless) {
			problems = append(problems, fmt.Sprintf("count %s: %v, want %d (feed lossless %v)", fid, c, len(ls), f.Lossless))
		} else if c != float64(len(ls)) {
			t.Logf("count %s: %v, want %d (a counted loss)", fid, c, len(ls))
		}
	}
	// pull
	puller.mu.Lock()
	for _, l := range lines {
		if puller.acked[l.text] == 0 && !puller.doubt[l.text] {
			miss("pull", l.text)
		}
	}
	problems = append(problems, puller.bad...)
	puller.mu.Unlock()
	totalMissing := 0
	for _, n := range missing {
		totalMissing += n
	}
	if totalMissing > 0 {
		problems = append(problems, fmt.Sprintf("lines missing per sink %v (first %v); lossless %v lostTails %d lostBytes %d", missing, firstMiss, f.Lossless, f.LostTails, f.LostBytes))
		if f.Lossless {
			problems = append(problems, "lines missing but the feed reports lossless: true")
		}
	}
	if !f.Lossless {
		t.Logf("final status lossy (%d lines missing): %s; losses ledger: %s", totalMissing, raw, lossesBody)
	}
	if !f.Lossless && f.LostTails == 0 && f.LostBytes == 0 && f.Dropped == 0 && f.Released == 0 && f.DeadLettered == 0 && f.CompletionFailures == 0 && len(bytes.TrimSpace(lossesBody)) < 10 {
		problems = append(problems, fmt.Sprintf("lossless false with no counter and no ledger entry: %s", raw))
	}
	// status: sane files
	if len(g.Feeds) == 1 {
		gf := g.Feeds[0]
		behind := 0
		byPath := map[string]string{}
		for _, fl := range gf.Files {
			byPath[fl.Path] += fmt.Sprintf("[%s offset %d size %d] ", fl.State, fl.Offset, fl.Size)
			if fl.State == "BEHIND" {
				behind++
			}
		}
		if gf.FilesBehind != 0 || behind != 0 {
			problems = append(problems, fmt.Sprintf("settled glob feed: filesBehind %d, %d files BEHIND", gf.FilesBehind, behind))
		}
		if gf.FilesTracked != len(gf.Files) {
			problems = append(problems, fmt.Sprintf("filesTracked %d but ?files=1 lists %d files", gf.FilesTracked, len(gf.Files)))
		}
		for p, sz := range present {
			st, ok := byPath[p]
			if !ok {
				problems = append(problems, fmt.Sprintf("present file %s (%d bytes) not in ?files=1", p, sz))
			} else if !strings.Contains(st, fmt.Sprintf("offset %d size %d]", sz, sz)) {
				problems = append(problems, fmt.Sprintf("present file %s (%d bytes): %s", p, sz, st))
			}
		}
		if !gf.Settled {
			problems = append(problems, fmt.Sprintf("final run not settled: %s", raw))
		}
	}
	sum := map[string]int{}
	for _, n := range oc {
		if n > 1 {
			sum["once"] += n - 1
		}
	}
	for _, n := range pc {
		if n > 1 {
			sum["plain"] += n - 1
		}
	}
	t.Logf("seed %d: %d lines in %d files (%d new, %d deleted), %d rotations (%d while down); duplicates %v; final lossless %v lostTails %d; filesTracked %d",
		sc.seed, len(lines), len(perFile), w.newN, w.dels, w.rots, downRots, sum, f.Lossless, f.LostTails, len(g.Feeds[0].Files))
	return problems
}

// aud11ACheckPointers reads every per-file pointer after a kill and checks
// the commit rule from outside: for each pointer whose epoch a subscriber
// has seen (so its file and generation are known), every line of that
// generation up to the pointer's offset must be in both file sinks and
// have had its ACK sent by the pull client.
func aud11ACheckPointers(t *testing.T, e *env, w *aud11AWriter, p *aud11APuller) string {
	ptrs, _ := filepath.Glob(e.path("state/feeds/app/*.ptr"))
	if len(ptrs) == 0 {
		return ""
	}
	lines := w.snapshot()
	byText := map[string]aud11ALine{}
	for _, l := range lines {
		byText[l.text] = l
	}
	objs, _ := aud11AReadOnce(e.path("out/once.jsonl"))
	once := map[string]bool{}
	epochOf := map[string]aud11ALine{}
	for _, o := range objs {
		once[o.Line] = true
		if l, ok := byText[o.Line]; ok {
			epochOf[o.Epoch] = l
		}
	}
	plainB, _ := os.ReadFile(e.path("out/plain.log"))
	plain := map[string]bool{}
	for _, l := range strings.Split(string(plainB), "\n") {
		plain[l] = true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for ep, s := range p.epoch {
		if l, ok := byText[s]; ok {
			if _, have := epochOf[ep]; !have {
				epochOf[ep] = l
			}
		}
	}
	var out []string
	for _, pp := range ptrs {
		st, err := os.Stat(pp)
		if err != nil || st.Size() == 0 {
			continue
		}
		// A kill -9 during a pointer's creation can leave it with no
		// valid slot yet (README: removed at the next start): skip it.
		outJSON, _, code := cli(t, "pointer", "show", "--json", pp)
		if code != 0 {
			continue
		}
		var rec pointerRecord
		if err := json.Unmarshal([]byte(outJSON), &rec); err != nil || rec.Offset == 0 {
			continue
		}
		ref, ok := epochOf[rec.Epoch]
		if !ok {
			out = append(out, fmt.Sprintf("pointer %s offset %d under an epoch no subscriber saw", filepath.Base(pp), rec.Offset))
			continue
		}
		nd := map[string]int{}
		first := ""
		for _, l := range lines {
			if l.fid != ref.fid || l.gen != ref.gen || l.pos > rec.Offset {
				continue
			}
			for sink, has := range map[string]bool{"plain": plain[l.text], "once": once[l.text], "pull": p.sent[l.text]} {
				if !has {
					nd[sink]++
					if first == "" {
						first = fmt.Sprintf("%q pos %d (%s)", l.text, l.pos, sink)
					}
				}
			}
		}
		if len(nd) > 0 {
			out = append(out, fmt.Sprintf("pointer %s (%s gen %d) at offset %d is ahead of what subscribers finished: %v (first %s)", filepath.Base(pp), ref.fid, ref.gen, rec.Offset, nd, first))
		}
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

func aud11AReport(t *testing.T, problems []string) {
	for _, p := range problems {
		t.Error(p)
	}
}

// TestAud11AOKGlobKill9Property: the property test, with deletions.
func TestAud11AOKGlobKill9Property(t *testing.T) {
	t.Parallel()
	aud11AReport(t, aud11ARun(t, aud11AScenario{kills: aud11AKills(), seed: aud11ASeed(), deletes: true}))
}

// TestAud11AOKGlobKill9PropertyNoDeletes: the same without deletions (every
// loss count would then be a lie or a real loss).
func TestAud11AOKGlobKill9PropertyNoDeletes(t *testing.T) {
	t.Parallel()
	aud11AReport(t, aud11ARun(t, aud11AScenario{kills: aud11AKills(), seed: aud11ASeed() + 1}))
}

const aud11AGenTmpl = `dataDir: ./state
status: {listen: "{{ADDR}}"}
shutdownTimeoutMillis: 2000
feeds:
  - name: app
    path: ./logs/*.log
    readStrategy: COMMITTED
    pollIntervalMillis: 50
    rotateWaitMillis: 300
    scanIntervalMillis: 1000
processors:
  - {name: once, feed: app, type: file, path: ./out/once.jsonl, exactlyOnce: true, format: json}
  - {name: counter, feed: app, type: count, match: '^(?P<key>\S+) #'}
  - {name: consumer, feed: app, type: pull, ackTimeoutMillis: 60000, maxInFlight: 5000}
`

// aud11APullAck pulls what is there and acknowledges it; it returns the
// events it acknowledged.
func aud11APullAck(t *testing.T, d *daemon, ack bool) []event {
	t.Helper()
	code, _, body := request(t, d, http.MethodGet, "/v1/pull/consumer?max=1000&wait=200ms", "", nil)
	if code != http.StatusOK {
		t.Fatalf("pull: %d %s", code, body)
	}
	var r struct {
		Events []event `json:"events"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("pull: %v %s", err, body)
	}
	if ack && len(r.Events) > 0 {
		ids := make([]string, len(r.Events))
		for i, ev := range r.Events {
			ids[i] = ev.DeliveryID
		}
		b, _ := json.Marshal(map[string]any{"deliveryIds": ids})
		if code, _, body := request(t, d, http.MethodPost, "/v1/ack", "", b); code != http.StatusOK {
			t.Fatalf("ack: %d %s", code, body)
		}
	}
	return r.Events
}

// aud11AGenEnv: a glob feed over ./logs/*.log with a.log rotated by the
// real logrotate (create, compress, delaycompress); write appends n
// numbered lines to a.log.
type aud11AGenEnv struct {
	e     *env
	app   string
	seq   int
	lines []string
	rot   func()
}

func aud11ANewGenEnv(t *testing.T) *aud11AGenEnv { return aud11ANewGenEnvPath(t, "./logs/*.log") }

func aud11ANewGenEnvPath(t *testing.T, path string) *aud11AGenEnv {
	lrBin, err := exec.LookPath("logrotate")
	if err != nil {
		t.Skip("logrotate not installed")
	}
	e := newEnv(t, strings.Replace(aud11AGenTmpl, "./logs/*.log", path, 1))
	if err := os.MkdirAll(e.path("logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	g := &aud11AGenEnv{e: e, app: e.path("logs/a.log")}
	conf := e.path("lr.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, "%s {\ncreate\nrotate 60\ncompress\ndelaycompress\nmissingok\nnomail\n}\n", g.app), 0o644); err != nil {
		t.Fatal(err)
	}
	g.rot = func() {
		if out, err := exec.Command(lrBin, "-s", e.path("lr.state"), "-f", conf).CombinedOutput(); err != nil {
			t.Fatalf("logrotate: %v: %s", err, out)
		}
	}
	return g
}

func (g *aud11AGenEnv) write(t *testing.T, n int) {
	var b strings.Builder
	for range n {
		s := fmt.Sprintf("a.log #%06d %s", g.seq, strings.Repeat("x", 10))
		g.seq++
		g.lines = append(g.lines, s)
		b.WriteString(s + "\n")
	}
	appendTo(t, g.app, b.String())
}

// settle pulls and acknowledges until the feed is settled with every line
// in the exactlyOnce sink.
func (g *aud11AGenEnv) settle(t *testing.T, d *daemon) *report {
	t.Helper()
	var r *report
	waitUntil(t, "settled with every line in the exactlyOnce sink", 30*time.Second, func() bool {
		aud11APullAck(t, d, true)
		rep, err := d.status()
		if err != nil || !rep.Settled {
			return false
		}
		objs, _ := aud11AReadOnce(g.e.path("out/once.jsonl"))
		have := map[string]bool{}
		for _, o := range objs {
			have[o.Line] = true
		}
		for _, s := range g.lines {
			if !have[s] {
				return false
			}
		}
		r = rep
		return true
	})
	return r
}

// check: every line once in the exactlyOnce sink, in order; counts exact.
func (g *aud11AGenEnv) check(t *testing.T, d *daemon, r *report) {
	t.Helper()
	objs, _ := aud11AReadOnce(g.e.path("out/once.jsonl"))
	n := map[string]int{}
	var dup []string
	epochs := map[string]bool{}
	for _, o := range objs {
		n[o.Line]++
		if n[o.Line] == 2 {
			dup = append(dup, fmt.Sprintf("%s (%s:%d)", strings.Fields(o.Line)[1], o.Epoch, o.Position))
		}
		epochs[o.Epoch] = true
	}
	counts := aud5Counts(t, d, "counter", "")
	f := r.feed(t, "app")
	if len(dup) > 0 || counts["a.log"] != float64(len(g.lines)) {
		t.Errorf("exactlyOnce json sink: %d objects for %d lines, %d lines twice (%v); count a.log %v, want %d; feed lossless %v, lostTails %d",
			len(objs), len(g.lines), len(dup), dup, counts["a.log"], len(g.lines), f.Lossless, f.LostTails)
	}
	for _, s := range g.lines {
		if n[s] == 0 {
			t.Errorf("line %q missing (lossless %v)", s, f.Lossless)
		}
	}
}

// TestAud11AOKGzOlderGenerationNotReread: DESIGN §2 "The duplicates after
// a crash are exactly the lines acknowledged since the last commit"; README
// loss table: "a file read to its end, committed and closed, then deleted:
// nothing; compressed … afterwards (create + compress), it is not read
// again after a restart". Generation X read and committed; a live
// `create` rotation (delaycompress) gives a new a.log Y whose lines are
// delivered but not acknowledged; kill -9; while down a second rotation
// compresses X to a.log.2.gz (its mtime kept: X's last write, 2.6 s before
// Y's) and moves Y to a.log.1. The restart reads Y again (same epoch: the
// exactlyOnce sink skips it), not X: each line once in the exactlyOnce
// json sink and the count. (With X's and Y's mtimes closer than 2 s X is
// read again under a new epoch — DESIGN §4's 2 s rule, accepted.) Glob and
// single-file feeds alike.
func TestAud11AOKGzOlderGenerationNotReread(t *testing.T) {
	for _, variant := range []string{"liveRotUnackedKill", "singleUnackedKill"} {
		t.Run(variant, func(t *testing.T) {
			t.Parallel()
			g := aud11ANewGenEnv(t)
			if strings.HasPrefix(variant, "single") {
				g = aud11ANewGenEnvPath(t, "./logs/a.log")
			}
			g.write(t, 10) // X
			xAt := time.Now()
			d := g.e.start()
			g.settle(t, d)
			time.Sleep(time.Until(xAt.Add(aud11AGap))) // generations' mtimes 2.6 s apart
			g.rot()                                    // X → a.log.1, a new a.log (Y)
			g.write(t, 10)
			if strings.Contains(variant, "Acked") {
				g.settle(t, d)
			} else {
				waitUntil(t, "Y in the exactlyOnce sink", 30*time.Second, func() bool {
					aud11APullAck(t, d, false) // pulled, never acknowledged
					objs, _ := aud11AReadOnce(g.e.path("out/once.jsonl"))
					return len(objs) >= 20
				})
			}
			time.Sleep(700 * time.Millisecond) // X's stream closes (rotateWaitMillis)
			if strings.HasSuffix(variant, "Kill") {
				d.kill()
			} else {
				d.stop()
			}
			time.Sleep(aud11AGap)
			g.rot() // X → a.log.2.gz (compressed now), Y → a.log.1, a new a.log (Z)
			g.write(t, 10)
			d = g.e.start()
			r := g.settle(t, d)
			time.Sleep(300 * time.Millisecond)
			g.check(t, d, r)
		})
	}
}

// aud11AGzEnv is aud11AGenEnv with logrotate `create` + `compress` (no
// delaycompress) on logs/a.log.
func aud11ANewGzEnv(t *testing.T, path string) *aud11AGenEnv {
	g := aud11ANewGenEnvPath(t, path)
	conf := g.e.path("lr.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, "%s {\ncreate\nrotate 60\ncompress\nmissingok\nnomail\n}\n", g.app), 0o644); err != nil {
		t.Fatal(err)
	}
	return g
}

// aud11AEmptyNewFileGz: a.log (R0, 10 lines) read and settled; a live
// logrotate `create` + `compress` (no delaycompress: a.log.1 is gzipped and
// deleted at once) leaves a new, EMPTY a.log (E); the daemon is killed -9
// while E is still empty; while it is down the application writes 7 lines
// to E, logrotate rotates (E → a.log.1.gz, a new a.log W), 6 lines go to
// W, logrotate rotates again 2.6 s later (W → a.log.1.gz, E → a.log.2.gz,
// a new a.log Z) and 5 lines go to Z. takeover: before all this, one
// rotation while stopped, so that the path's stream runs on a pointer
// taken over at a start. It returns the lines never delivered to the
// exactlyOnce sink, the files on disk at the restart, the settled feed
// report and the epochs file.
func aud11AEmptyNewFileGz(t *testing.T, path string, takeover bool) (missing, names []string, f feedReport, epochs []byte) {
	return aud11AEmptyNewFileGzW(t, path, takeover, -1)
}

// aud11AEmptyNewFileGzW: writeBeforeKill >= 0 writes 3 lines to E that
// long before the kill -9 (E is no longer empty at the kill).
func aud11AEmptyNewFileGzW(t *testing.T, path string, takeover bool, writeBeforeKill time.Duration) (missing, names []string, f feedReport, epochs []byte) {
	g := aud11ANewGzEnv(t, path)
	g.write(t, 10) // R0
	d := g.e.start()
	g.settle(t, d)
	if takeover {
		d.stop()
		time.Sleep(aud11AGap)
		g.rot() // R0 → a.log.1.gz while stopped; a new a.log
		g.write(t, 10)
		d = g.e.start()
		g.settle(t, d)
	}
	time.Sleep(aud11AGap)
	g.rot()                             // live: a.log → a.log.1.gz, a new empty a.log (E)
	time.Sleep(2500 * time.Millisecond) // a rescan or two
	g.settle(t, d)
	if writeBeforeKill >= 0 {
		g.write(t, 3)
		time.Sleep(writeBeforeKill)
	}
	d.kill()
	g.write(t, 7) // E's lines, written while tailfeed is down
	time.Sleep(aud11AGap)
	g.rot()       // E → a.log.1.gz; a new a.log (W)
	g.write(t, 6) // W
	time.Sleep(aud11AGap)
	g.rot()       // W → a.log.1.gz, E → a.log.2.gz; a new a.log (Z)
	g.write(t, 5) // Z
	ents, _ := os.ReadDir(g.e.path("logs"))
	for _, en := range ents {
		names = append(names, en.Name())
	}
	d = g.e.start()
	var r *report
	waitUntil(t, "settled with Z read", 30*time.Second, func() bool {
		aud11APullAck(t, d, true)
		rep, err := d.status()
		if err != nil || !rep.Settled {
			return false
		}
		objs, _ := aud11AReadOnce(g.e.path("out/once.jsonl"))
		for _, o := range objs {
			if o.Line == g.lines[len(g.lines)-1] {
				r = rep
				return true
			}
		}
		return false
	})
	time.Sleep(300 * time.Millisecond)
	objs, _ := aud11AReadOnce(g.e.path("out/once.jsonl"))
	have := map[string]bool{}
	for _, o := range objs {
		have[o.Line] = true
	}
	for _, s := range g.lines {
		if !have[s] {
			missing = append(missing, strings.Fields(s)[1])
		}
	}
	f = r.feed(t, "app")
	epochs, _ = os.ReadFile(g.e.path("state/feeds/app.epochs"))
	return missing, names, f, epochs
}

// TestAud11AOKSingleEmptyNewFileGzRotatedWhileDown: the control of the
// finding above, a single-file feed: every line delivered (the .gz
// generations read). It reports lostTails 1, lossless false as well (the
// pointer adopted the empty file, whose record names no first bytes, so
// its .gz is not recognised as the pointer's generation: an overcount the
// README names for a pointer taken while its file was empty).
func TestAud11AOKSingleEmptyNewFileGzRotatedWhileDown(t *testing.T) {
	t.Parallel()
	missing, names, f, _ := aud11AEmptyNewFileGz(t, "./logs/a.log", false)
	t.Logf("single-file feed: lossless %v lostTails %d", f.Lossless, f.LostTails)
	if len(missing) > 0 {
		t.Errorf("%d lines never delivered %v (on disk: %v); lossless %v lostTails %d", len(missing), missing, names, f.Lossless, f.LostTails)
	}
}

// aud11AReadOutGzWhileDown: a.log (create + compress + delaycompress
// under ./logs/*.log). It returns the last settled report.
func aud11AReadOutGzWhileDown(t *testing.T, quick time.Duration) (*aud11AGenEnv, *report, *daemon) {
	g := aud11ANewGenEnv(t)
	g.write(t, 10) // X
	d := g.e.start()
	g.settle(t, d)
	d.stop()
	time.Sleep(aud11AGap)
	g.rot() // X → a.log.1, a new a.log (Y)
	g.write(t, 10)
	d = g.e.start() // the file at the path takes X's pointer; X's tail, then Y
	g.settle(t, d)
	d.stop()
	time.Sleep(aud11AGap)
	g.rot() // X → a.log.2.gz, Y → a.log.1, a new a.log (Z)
	g.write(t, 10)
	d = g.e.start() // Y left the glob: read there from its pointer to its end
	g.settle(t, d)
	time.Sleep(quick)
	d.kill()
	time.Sleep(aud11AGap)
	g.rot() // Y → a.log.2.gz, Z → a.log.1, a new a.log (W)
	g.write(t, 10)
	d = g.e.start()
	r := g.settle(t, d)
	time.Sleep(300 * time.Millisecond)
	r, _ = statusRaw(t, d)
	return g, r, d
}

// TestAud11AOKReadOutGzWhileDown: DESIGN §4 "A file that was read to its
// end, committed and then deleted is **not** a lost tail"; README loss
// table "`create` + `compress` + `delaycompress` | nothing … | lossless".
// A glob stream whose pointer names a generation renamed out beside its
// path (read there to its end at a start, kill -9 0 ms, 100 ms or 1 s
// later), compressed to a.log.2.gz while down: each line once in the
// exactlyOnce sink and the count, lossless. (The property test saw
// "glob file gone while stopped (pointer … at offset 1866)" counted for
// such a generation once, nothing missing — an overcount this reduction
// did not reproduce.)
func TestAud11AOKReadOutGzWhileDown(t *testing.T) {
	for _, q := range []time.Duration{0, 100 * time.Millisecond, time.Second} {
		t.Run(q.String(), func(t *testing.T) {
			t.Parallel()
			g, r, d := aud11AReadOutGzWhileDown(t, q)
			g.check(t, d, r)
			f := r.feed(t, "app")
			_, _, led := request(t, d, http.MethodGet, "/admin/losses/app", "", nil)
			if !f.Lossless {
				t.Errorf("every line delivered, yet lossless false (lostTails %d); losses: %s", f.LostTails, led)
			}
		})
	}
}
