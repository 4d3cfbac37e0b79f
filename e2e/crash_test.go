package e2e

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"
)

// committedConfig is one COMMITTED feed with a file sink that never fsyncs:
// its output survives kill -9 through the page cache, as the pointer does.
const committedConfig = `dataDir: ./state
status:
  listen: {{ADDR}}
feeds:
  - name: app
    path: ./in.log
    readStrategy: COMMITTED
processors:
  - name: archive
    feed: app
    type: file
    path: ./out.log
    fsync: never
`

// crashRun is one daemon run of the kill test, as seen from outside.
type crashRun struct {
	name     string
	ptrStart int64 // pointer offset before the run
	outStart int64 // output bytes before the run
	outEnd   int64 // output bytes after it ended
	ptrEnd   int64 // pointer offset after it ended
	lifetime time.Duration
	outLines int // complete output lines after it ended
	past     int // of those, lines that end past ptrEnd
	torn     int // bytes of a batch write the kill tore (cut at the next open)
}

// crashRig drives the runs of one kill test.
type crashRig struct {
	t    *testing.T
	e    *env
	in   *input
	out  string
	ptr  string
	runs []crashRun
	cur  *crashRun
}

func (c *crashRig) pointerOffset() int64 {
	rec, ok := showPointer(c.t, c.ptr)
	if !ok {
		return 0
	}
	return rec.Offset
}

// begin records the state before a run; spawn or start the daemon after it.
// A torn tail left by the last kill does not count: the sink cuts it at open.
func (c *crashRig) begin(name string) {
	c.runs = append(c.runs, crashRun{name: name, ptrStart: c.pointerOffset(), outStart: c.outWhole()})
	c.cur = &c.runs[len(c.runs)-1]
}

// outWhole is the output's length up to its last '\n'.
func (c *crashRig) outWhole() int64 {
	data, err := os.ReadFile(c.out)
	if err != nil && !os.IsNotExist(err) {
		c.t.Fatal(err)
	}
	return int64(bytes.LastIndexByte(data, '\n') + 1)
}

// end kills d (kill -9 unless it already exited cleanly) and checks what a
// crash must leave behind: the pointer at a line boundary, never past the
// last line in the output, and every line up to it in the output.
func (c *crashRig) end(d *daemon, kill bool) {
	c.t.Helper()
	if kill {
		d.kill()
		switch {
		case d.code == -1:
		case d.code == 1 && strings.Contains(d.log(), "address already in use"):
			// The port was taken between freeAddr and the bind: the run
			// failed before reading anything. It still counts as a run.
			c.t.Logf("run %q: status port taken meanwhile; the daemon exited before the kill", c.cur.name)
		default:
			c.t.Fatalf("run %q: daemon exited with code %d before the kill\n%s", c.cur.name, d.code, tail(d.log(), 3000))
		}
	}
	r := c.cur
	r.lifetime = d.ended.Sub(d.started)
	r.ptrEnd = c.pointerOffset()
	p := parseOutput(c.t, c.in, c.out)
	r.outEnd = fileSize(c.t, c.out) - int64(len(p.torn))
	r.outLines = len(p.idx)
	r.torn = len(p.torn)
	if len(p.unknown) > 0 {
		c.t.Errorf("run %q: output holds %d foreign lines, first %.100q (a torn write glued to a later line?)", r.name, len(p.unknown), p.unknown[0])
	}
	if r.torn > 0 && !kill {
		c.t.Errorf("run %q: a clean stop left a torn tail of %d bytes", r.name, r.torn)
	}
	if !c.in.isBoundary(r.ptrEnd) {
		c.t.Errorf("run %q: pointer offset %d is not at a line boundary", r.name, r.ptrEnd)
	}
	var lastEnd int64
	if m := p.maxIdx(); m >= 0 {
		lastEnd = c.in.ends[m]
	}
	if r.ptrEnd > lastEnd {
		c.t.Errorf("run %q: pointer offset %d is past the end %d of the last line in the output", r.name, r.ptrEnd, lastEnd)
	}
	if r.ptrEnd < r.ptrStart {
		c.t.Errorf("run %q: pointer went back from %d to %d", r.name, r.ptrStart, r.ptrEnd)
	}
	have := p.set()
	for i := 0; i < c.in.firstAfter(r.ptrEnd); i++ {
		if !have[i] {
			c.t.Errorf("run %q: line %d is behind the pointer %d but not in the output (a gap)", r.name, i, r.ptrEnd)
			break
		}
	}
	for i := range p.idx {
		if c.in.ends[p.idx[i]] > r.ptrEnd {
			r.past++
		}
	}
}

// waitOutput waits until the output holds, past byte offset from, at least
// the bytes of n lines starting at input line first (fewer when the input has
// fewer), or until d exited. It polls the size tightly, so the kill that
// follows lands within a fraction of a millisecond of the mark.
func (c *crashRig) waitOutput(d *daemon, from int64, first, n int) {
	c.t.Helper()
	last := min(first+n, len(c.in.texts)) - 1
	if last < first {
		return
	}
	want := c.in.ends[last] - c.in.start(first)
	deadline := time.Now().Add(60 * time.Second)
	for fileSize(c.t, c.out)-from < want && !d.exited() {
		if time.Now().After(deadline) {
			c.t.Fatalf("run %q: output did not grow by %d bytes (%d lines) within 60s", c.cur.name, want, last-first+1)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// runFirst is the first line the current run delivers: the one after its
// starting pointer.
func (c *crashRig) runFirst() int { return c.in.firstAfter(c.cur.ptrStart) }

// burst waits for d to settle, appends a 20,000-line burst in one write and
// waits until n of its lines are in the output.
func (c *crashRig) burst(d *daemon, n int) {
	c.t.Helper()
	d.waitSettled(60 * time.Second)
	from, first := fileSize(c.t, c.out), len(c.in.texts)
	c.in.appendLines(20000)
	c.waitOutput(d, from, first, n)
}

// TestKill9 kills the daemon at many moments — right after start, once it
// answers, after N output lines, in the middle of a 20,000-line burst, right
// after a burst, at random delays, and once settled — appending between
// runs, then checks DESIGN §2: every line is in the output at least once, in
// order of first appearance; every run resumes exactly at the pointer; and
// the duplicates after each kill are only lines that were in the output past
// the pointer (processed after the last commit), never a gap.
func TestKill9(t *testing.T) {
	e := newEnv(t, committedConfig)
	c := &crashRig{t: t, e: e, in: newInput(t, e.path("in.log")), out: e.path("out.log"), ptr: e.path("state/feeds/app.ptr")}
	in := c.in

	in.appendLines(2000)
	c.begin("0ms after start")
	c.end(e.spawn(), true)

	c.begin("right after /feed.status answers")
	c.end(e.start(), true)

	in.appendLines(3000)
	c.begin("after 500 output lines")
	d := e.spawn()
	c.waitOutput(d, c.cur.outStart, c.runFirst(), 500)
	c.end(d, true)

	c.begin("mid-burst: 1,000 lines into a 20,000-line write")
	d = e.start()
	c.burst(d, 1000)
	c.end(d, true)

	in.appendLines(1000)
	c.begin("restart into the backlog, 2,000 output lines in")
	d = e.spawn()
	c.waitOutput(d, c.cur.outStart, c.runFirst(), 2000)
	c.end(d, true)

	c.begin("mid-burst: 5,000 lines into a 20,000-line write")
	d = e.start()
	c.burst(d, 5000)
	c.end(d, true)

	c.begin("0ms after a 20,000-line write")
	d = e.start()
	c.burst(d, 0)
	c.end(d, true)

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	for range 3 {
		in.appendLines(5000)
		delay := time.Duration(rng.IntN(15000)) * time.Microsecond
		c.begin(fmt.Sprintf("%v after start, 5,000 lines appended", delay.Round(100*time.Microsecond)))
		d = e.spawn()
		time.Sleep(delay)
		c.end(d, true)
	}

	in.appendLines(500)
	c.begin("once settled")
	d = e.start()
	d.waitSettled(60 * time.Second)
	c.end(d, true)
	if got := c.cur.ptrEnd; got != in.size() {
		t.Errorf("killed once settled: pointer %d, want the input's end %d (settled means committed and synced)", got, in.size())
	}

	c.begin("final clean run")
	d = e.start()
	r := d.waitSettled(60 * time.Second)
	d.stop()
	c.end(d, false)
	if f := r.Feeds[0]; f.Pointer == nil || f.Pointer.Offset != in.size() || !f.Lossless {
		t.Errorf("settled report: pointer %+v lossless %v, want offset %d and lossless", f.Pointer, f.Lossless, in.size())
	}

	c.checkAll()
}

// checkAll compares the final output with the runs: each run's output is
// the consecutive lines from its starting pointer; duplicates per kill.
func (c *crashRig) checkAll() {
	t := c.t
	data, err := os.ReadFile(c.out)
	if err != nil {
		t.Fatal(err)
	}
	all := c.in.parse(data)
	n := len(c.in.texts)

	// Every line at least once, in order of first appearance.
	seen := make([]bool, n)
	next := 0
	for _, i := range all.idx {
		if seen[i] {
			continue
		}
		if i != next {
			t.Fatalf("first appearance of line %d comes where line %d was due", i, next)
		}
		seen[i] = true
		next++
	}
	if next != n {
		t.Fatalf("output has lines 0..%d of %d: lines missing", next-1, n)
	}

	var log strings.Builder
	fmt.Fprintf(&log, "%d input lines (%d bytes), %d output lines\n", n, c.in.size(), len(all.idx))
	fmt.Fprintf(&log, "%-52s %9s %9s %9s %11s %6s %5s\n", "kill point", "lived", "outLines", "pointer", "pastPointer", "dups", "torn")
	totalDups := 0
	for k := range c.runs {
		r := &c.runs[k]
		seg := c.in.parse(data[r.outStart:r.outEnd])
		want := c.in.firstAfter(r.ptrStart)
		for j, i := range seg.idx {
			if i != want+j {
				t.Errorf("run %q: output line %d is input line %d, want %d (a run writes the consecutive lines from its starting pointer %d)", r.name, j, i, want+j, r.ptrStart)
				break
			}
		}
		if k == len(c.runs)-1 {
			fmt.Fprintf(&log, "%-52s %9v %9d %9d %11d %6s %5d\n", r.name, r.lifetime.Round(time.Millisecond), r.outLines, r.ptrEnd, r.past, "-", r.torn)
			continue
		}
		// Duplicates this kill caused: lines the next run wrote again.
		nr := &c.runs[k+1]
		if nr.ptrStart != r.ptrEnd {
			t.Errorf("pointer moved between runs: %d after %q, %d before %q", r.ptrEnd, r.name, nr.ptrStart, nr.name)
		}
		before := c.in.parse(data[:r.outEnd])
		had := before.set()
		dups := 0
		for _, i := range c.in.parse(data[nr.outStart:nr.outEnd]).idx {
			if !had[i] {
				continue
			}
			dups++
			if c.in.ends[i] <= r.ptrEnd {
				t.Errorf("after kill %q: line %d written again although the pointer %d covered it", r.name, i, r.ptrEnd)
			}
		}
		if dups > r.past {
			t.Errorf("after kill %q: %d duplicates, more than the %d output lines past the pointer", r.name, dups, r.past)
		}
		totalDups += dups
		fmt.Fprintf(&log, "%-52s %9v %9d %9d %11d %6d %5d\n", r.name, r.lifetime.Round(time.Millisecond), r.outLines, r.ptrEnd, r.past, dups, r.torn)
	}
	if got := len(all.idx) - n; got != totalDups {
		t.Errorf("output has %d repeated lines, the kills account for %d", got, totalDups)
	}
	fmt.Fprintf(&log, "total duplicates: %d", totalDups)
	t.Log(log.String())
	if len(all.unknown) > 0 || len(all.torn) > 0 {
		t.Errorf("final output holds %d foreign lines and a torn tail of %d bytes", len(all.unknown), len(all.torn))
	}
}
