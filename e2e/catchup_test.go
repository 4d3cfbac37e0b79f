package e2e

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The catch-up tests' configs are built from these parts: the header, the
// feed "app" (a file, or a glob) and the sinks riding it. Each test's
// config names the parts it differs by.
const (
	cuHeader = `dataDir: ./state
status:
  listen: {{ADDR}}
feeds:
`
	// cuPlainFeed: the COMMITTED feed on ./in.log.
	cuPlainFeed = `  - name: app
    path: ./in.log
    readStrategy: COMMITTED
`
	// cuFeed: cuPlainFeed, quick to close a rotated file.
	cuFeed = cuPlainFeed + `    rotateWaitMillis: 200
    pollIntervalMillis: 50
`
	// cuGlobFeed: the COMMITTED glob feed on ./in/*.log.
	cuGlobFeed = `  - name: app
    path: ./in/*.log
    readStrategy: COMMITTED
    scanIntervalMillis: 200
`
	cuProcessors = "processors:\n"
	// cuExact: the exactlyOnce file sink the tests restore.
	cuExact = `  - name: exact
    feed: app
    type: file
    path: ./exact.log
    exactlyOnce: true
    fsync: never
`
	// cuPlain: a plain file sink (the re-read reaches it as duplicates).
	cuPlain = `  - name: plain
    feed: app
    type: file
    path: ./plain.log
    fsync: never
`
	// cuOther: a second exactlyOnce file sink, never restored.
	cuOther = `  - name: other
    feed: app
    type: file
    path: ./other.log
    exactlyOnce: true
    fsync: never
`
	// cuNatsBody: an exactlyOnce nats sink on the stream EXACT (after its
	// name line).
	cuNatsBody = `    feed: app
    type: nats
    url: {{NATS}}
    stream: EXACT
    subject: exact.{instance}.{feed}
`
)

// catchUpConfig: one COMMITTED feed, an exactlyOnce file sink (the one the
// tests restore), a plain file sink on the same feed (it receives the
// re-read as duplicates, never a gap) and a second exactlyOnce file sink
// that is not restored (it skips the re-read through AlreadyApplied).
const catchUpConfig = cuHeader + cuFeed + cuProcessors + cuExact + cuPlain + cuOther

// copyFile copies src to dst (created or truncated).
func copyFile(t testing.TB, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// backup copies the exactlyOnce sink's output and record aside; restore
// puts them back (what an operator's restore of that disk does).
type sinkBackup struct {
	t          testing.TB
	out, rec   string
	bout, brec string
}

func backupSink(t testing.TB, e *env, out, processor string) *sinkBackup {
	b := &sinkBackup{t: t, out: out, rec: e.path("state/state/" + processor + ".rec")}
	// Away from the input's directory: a copy of the output beside it
	// starts with the input's first bytes, and a restart that looks for a
	// rotated file by its fingerprint would take it for one.
	dir := t.TempDir()
	b.bout, b.brec = filepath.Join(dir, processor+".out"), filepath.Join(dir, processor+".rec")
	copyFile(t, b.out, b.bout)
	copyFile(t, b.rec, b.brec)
	return b
}

func (b *sinkBackup) restore() {
	copyFile(b.t, b.bout, b.out)
	copyFile(b.t, b.brec, b.rec)
}

// sameBytes fails t unless the file at path holds want.
func sameBytes(t testing.TB, what, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		t.Fatalf("%s: %d bytes, want %d, first difference at byte %d", what, len(got), len(want), i)
	}
}

// countIdx counts how often each input line index appears.
func countIdx(p parsed) map[int]int {
	m := map[int]int{}
	for _, i := range p.idx {
		m[i]++
	}
	return m
}

// missingLines counts the input lines the output at path lacks.
func missingLines(t testing.TB, in *input, path string) int {
	n := countIdx(parseOutput(t, in, path))
	missing := 0
	for i := range in.texts {
		if n[i] == 0 {
			missing++
		}
	}
	return missing
}

// duplicateLines counts the second (and later) copies of input lines in
// the output at path.
func duplicateLines(t testing.TB, in *input, path string) int {
	n := countIdx(parseOutput(t, in, path))
	dups := 0
	for i := range in.texts {
		if n[i] > 1 {
			dups += n[i] - 1
		}
	}
	return dups
}

// settledRun starts tailfeed, waits until it settled and stops it: one run
// over what is on disk. It returns the stopped daemon (for its log), the
// last report and its "app" feed.
func settledRun(t testing.TB, e *env) (*daemon, *report, feedReport) {
	d := e.start()
	r := d.waitSettled(60 * time.Second)
	d.stop()
	return d, r, r.feed(t, "app")
}

// backedUpThenMore writes first lines and runs once, backs the exactlyOnce
// sink "exact" up (the earlier copy), then starts tailfeed again, writes
// more lines and waits until settled. It returns the running daemon (the
// caller rotates or stops it), that report and the backup.
func backedUpThenMore(t testing.TB, e *env, in *input, first, more int) (*daemon, *report, *sinkBackup) {
	in.appendLines(first)
	settledRun(t, e)
	bak := backupSink(t, e, e.path("exact.log"), "exact")
	d := e.start()
	in.appendLines(more)
	r := d.waitSettled(60 * time.Second)
	return d, r, bak
}

// rotateInput moves in.log.N to in.log.N+1 and in.log to in.log.1 (a
// numbered rotation), writes n lines to the new in.log and waits until the
// app feed settled with want lines in the exactlyOnce output exact (and
// also(want) holds, when given).
func rotateInput(t testing.TB, d *daemon, in *input, exact string, n, want int, also func(want int) bool) {
	t.Helper()
	for i := 9; i >= 1; i-- {
		if _, err := os.Stat(fmt.Sprintf("%s.%d", in.path, i)); err == nil {
			os.Rename(fmt.Sprintf("%s.%d", in.path, i), fmt.Sprintf("%s.%d", in.path, i+1))
		}
	}
	if err := os.Rename(in.path, in.path+".1"); err != nil {
		t.Fatal(err)
	}
	in.ends = nil
	in.appendLines(n)
	d.waitFor(fmt.Sprintf("%d lines written", want), 60*time.Second, func(r *report) bool {
		return r.feed(t, "app").Settled && countLines(t, exact, 0) == want && (also == nil || also(want))
	})
}

// lossFacts is what a loss assertion says about the feed: its lossless
// flag, lostTails, lostBytes and detail.
func (f feedReport) lossFacts() string {
	return fmt.Sprintf("lossless %v lostTails %d lostBytes %d detail %v", f.Lossless, f.LostTails, f.LostBytes, f.Detail)
}

// TestCatchUpRestoredFileSink (issue 14 acceptance 4, DESIGN §11 "A
// restored sink is caught up from the input"): the exactlyOnce output and
// its record are put back to a copy taken while tailfeed was stopped
// earlier; at the next start the sink is behind the pointer (same epoch),
// the pointer is committed back and the feed re-reads from the sink's
// position: the exactlyOnce output ends byte-identical to the input, each
// line once; the plain sink gets the gap again (duplicates, never a gap);
// the feed stays lossless.
func TestCatchUpRestoredFileSink(t *testing.T) {
	e := newEnv(t, catchUpConfig)
	in := newInput(t, e.path("in.log"))
	exact, plain := e.path("exact.log"), e.path("plain.log")

	d, r, bak := backedUpThenMore(t, e, in, 3000, 4000) // the earlier copy: 3000 lines
	before := r.feed(t, "app").Pointer
	d.stop()
	bak.restore()
	if p := parseOutput(t, in, exact); len(p.idx) != 3000 {
		t.Fatalf("restored output holds %d lines, want 3000", len(p.idx))
	}

	d, _, f := settledRun(t, e)
	if !f.Lossless || f.LostTails != 0 || f.Stalled != nil {
		t.Errorf("after the catch-up: lossless %v lostTails %d stalled %v", f.Lossless, f.LostTails, f.Stalled)
	}
	if !strings.Contains(d.log(), "committing the pointer back") {
		t.Errorf("no catch-up in the log:\n%s", tail(d.log(), 3000))
	}
	input, _ := os.ReadFile(in.path)
	sameBytes(t, "exactlyOnce output after the catch-up", exact, input)
	sameBytes(t, "the other exactlyOnce sink (not restored: it skips the re-read)", e.path("other.log"), input)

	pl := parseOutput(t, in, plain)
	n := countIdx(pl)
	dups := 0
	for i := range in.texts {
		switch {
		case n[i] == 0:
			t.Fatalf("plain sink lacks input line %d: a gap", i)
		case n[i] > 1:
			dups += n[i] - 1
			if i < 3000 {
				t.Errorf("plain sink got line %d again: before the restored sink's position", i)
			}
		}
	}
	if dups != 4000 {
		t.Errorf("plain sink: %d duplicates, want the 4000 lines of the gap", dups)
	}
	t.Logf("pointer before the restore: %+v; sequence re-read at the catch-up start: %d lines; exactlyOnce output identical to the input (%d bytes); plain sink: %d lines, %d duplicates",
		*before, f.Sequence, len(input), len(pl.idx), dups)
}

// readGenerations returns the bytes of in.log.2, in.log.1 and in.log.
func readGenerations(in *input) (gen1, gen2, gen3 []byte) {
	gen1, _ = os.ReadFile(in.path + ".2")
	gen2, _ = os.ReadFile(in.path + ".1")
	gen3, _ = os.ReadFile(in.path)
	return gen1, gen2, gen3
}

// backedUpBehind runs catchUpConfig with 3,000 lines, backs the sink
// "exact" up, writes 4,000 more and stops: the backup is 4,000 lines
// behind the pointer in its epoch. It returns the env, the input, the
// exactlyOnce output's path and the backup (not restored yet).
func backedUpBehind(t testing.TB) (*env, *input, string, *sinkBackup) {
	e := newEnv(t, catchUpConfig)
	in := newInput(t, e.path("in.log"))
	d, _, bak := backedUpThenMore(t, e, in, 3000, 4000)
	d.stop()
	return e, in, e.path("exact.log"), bak
}

// rotateOnce renames in.log to in.log.1 and writes n lines to a new
// in.log (positions restart in the new file; texts go on).
func rotateOnce(t testing.TB, in *input, n int) {
	t.Helper()
	if err := os.Rename(in.path, in.path+".1"); err != nil {
		t.Fatal(err)
	}
	in.ends = nil
	in.appendLines(n)
}

// globInputs makes the glob feed's directory in/ with a.log (1,000
// lines a-…) and b.log (500 lines b-…) and returns their paths.
func globInputs(t testing.TB, e *env) (a, b string) {
	if err := os.MkdirAll(e.path("in"), 0o755); err != nil {
		t.Fatal(err)
	}
	a, b = e.path("in/a.log"), e.path("in/b.log")
	appendNumbered(t, a, "a", 0, 1000)
	appendNumbered(t, b, "b", 0, 500)
	return a, b
}

// killedDuringCatchUp spawns tailfeed and kills it (-9) during its
// catch-up (round k): at point 0 once the log holds logLine (what), else
// once reRead() counts 2000+point lines; it fails t if tailfeed exited
// before the kill. It returns the killed daemon.
func killedDuringCatchUp(t testing.TB, e *env, k, point int, what, logLine string, reRead func() int) *daemon {
	t.Helper()
	d := e.spawn()
	if point == 0 {
		waitUntil(t, what, 60*time.Second, func() bool {
			return strings.Contains(d.log(), logLine) || d.exited()
		})
	} else {
		waitUntil(t, fmt.Sprintf("%d lines re-read", point), 60*time.Second, func() bool {
			return reRead() >= 2000+point || d.exited()
		})
	}
	d.kill()
	if d.code != -1 {
		t.Fatalf("round %d: exited %d before the kill\n%s", k, d.code, tail(d.log(), 3000))
	}
	return d
}

// rotatedCatchUp runs: 3000 lines, stop, back the sink up; 1000 more, then
// the input rotated (in.log → in.log.1) and 2000 lines in the new in.log,
// stop; restore the sink. It returns the env, the input (its texts in
// order), and the bytes of in.log.1 and in.log.
func rotatedCatchUp(t *testing.T) (*env, *input, *sinkBackup, []byte, []byte, string) {
	e := newEnv(t, catchUpConfig)
	in := newInput(t, e.path("in.log"))
	exact := e.path("exact.log")
	d, _, bak := backedUpThenMore(t, e, in, 3000, 1000)
	old := e.path("in.log.1")
	rotateOnce(t, in, 2000)
	r := d.waitFor("the new in.log read", 60*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return f.Settled && f.Sequence >= 3000 && len(parseOutput(t, in, exact).idx) == 6000
	})
	epoch := r.feed(t, "app").Pointer.Epoch
	d.stop()
	bak.restore()
	rot, _ := os.ReadFile(old)
	cur, _ := os.ReadFile(in.path)
	if len(bytes.Split(rot, []byte{'\n'}))-1 != 4000 || len(bytes.Split(cur, []byte{'\n'}))-1 != 2000 {
		t.Fatalf("rotated %d bytes, current %d", len(rot), len(cur))
	}
	return e, in, bak, rot, cur, epoch
}

// TestCatchUpOlderGeneration (acceptance 4): the sink's record is of an
// epoch the pointer left (the input rotated after the copy): the rest of
// the rotated file, still on disk, is read from the sink's position, then
// the current file. The exactlyOnce output ends byte-identical to the two
// files in order; lossless.
func TestCatchUpOlderGeneration(t *testing.T) {
	e, in, _, rot, cur, epochBefore := rotatedCatchUp(t)
	_, _, f := settledRun(t, e)
	if !f.Lossless || f.LostTails != 0 {
		t.Errorf("lossless %v lostTails %d detail %v", f.Lossless, f.LostTails, f.Detail)
	}
	sameBytes(t, "exactlyOnce output after catching up from the rotated file", e.path("exact.log"), append(bytes.Clone(rot), cur...))
	// The current file is read again under the epoch it had (the epochs
	// file names it), so a sink that keeps a position per epoch skips it;
	// the other exactlyOnce file sink's record (layout 1) holds one epoch
	// only: it gets the rest of the rotated file again, then the current
	// file (duplicates, never a gap).
	if f.Pointer == nil || f.Pointer.Epoch != epochBefore {
		t.Errorf("pointer after the catch-up %+v, want the current file's epoch %s again", f.Pointer, epochBefore)
	}
	oth := countIdx(parseOutput(t, in, e.path("other.log")))
	for i := range in.texts {
		if oth[i] == 0 {
			t.Fatalf("the other exactlyOnce sink lacks line %d", i)
		}
	}
	pl := parseOutput(t, in, e.path("plain.log"))
	n := countIdx(pl)
	dups := 0
	for i := range in.texts {
		if n[i] == 0 {
			t.Fatalf("plain sink lacks line %d", i)
		}
		dups += n[i] - 1
	}
	t.Logf("rotated file read from the sink's position, then the current file under its own epoch again: %d lines re-read; plain sink duplicates: %d; the other exactlyOnce (layout 1) sink: %d lines for %d", int(f.Sequence), dups, len(parseOutput(t, in, e.path("other.log")).idx), len(in.texts))
}

// TestCatchUpGenerationGone (acceptance 4): as above, with the rotated
// file deleted before the restart: its part the sink lacks is counted
// (lostTails 1, lostBytes its known size, named in detail, in the losses
// ledger), the feed is lossy — never green — and `tailfeed status` exits
// 1 (settled but lossy); the current file is still read.
func TestCatchUpGenerationGone(t *testing.T) {
	e, in, _, rot, cur, _ := rotatedCatchUp(t)
	if err := os.Remove(e.path("in.log.1")); err != nil {
		t.Fatal(err)
	}
	d := e.start()
	r := d.waitSettled(60 * time.Second)
	f := r.feed(t, "app")
	// Bytes of in.log.1 after the sink's position (3000 lines).
	restoredEnd := int64(0)
	for i := 0; i < 3000; i++ {
		restoredEnd += int64(len(in.texts[i])) + 1
	}
	lost := uint64(int64(len(rot)) - restoredEnd)
	if f.Lossless || r.Lossless || f.LostTails != 1 || f.LostBytes != lost {
		t.Errorf("lossless %v/%v lostTails %d lostBytes %d (want 1, %d)", f.Lossless, r.Lossless, f.LostTails, f.LostBytes, lost)
	}
	detail := ""
	if f.Detail != nil {
		detail = *f.Detail
	}
	if !strings.Contains(detail, "catch-up of sink exact") || !strings.Contains(detail, "in.log") {
		t.Errorf("detail %q does not name the sink and the generation", detail)
	}
	_, _, code := cli(t, "status", "--addr", d.addr)
	if code != 1 {
		t.Errorf("tailfeed status exit %d, want 1 (settled, lossy)", code)
	}
	d.stop()
	ledger, _ := os.ReadFile(e.path("state/losses.jsonl"))
	if !bytes.Contains(ledger, []byte(`"lostTails"`)) || !bytes.Contains(ledger, []byte(`"lostBytes"`)) {
		t.Errorf("losses ledger: %s", ledger)
	}
	want := append(bytes.Clone(rot[:restoredEnd]), cur...)
	sameBytes(t, "exactlyOnce output (the restored part, then the current file)", e.path("exact.log"), want)

	// The loss outlives the run: a restart does not turn it green, nor
	// count it again.
	d = e.start()
	r = d.waitSettled(60 * time.Second)
	f = r.feed(t, "app")
	d.stop()
	if f.Lossless || f.LostTails != 0 {
		t.Errorf("after a restart: lossless %v lostTails %d (this run)", f.Lossless, f.LostTails)
	}
	t.Logf("gone generation: lostTails 1, lostBytes %d, detail %q", lost, detail)
}

// TestCatchUpKill9 (DESIGN §3 "the one backward commit", §11): kill -9 the
// daemon right after the catch-up's backward commit (as soon as its log
// line appears) and at points while it re-reads the gap, restart each
// time: nothing is lost, the exactlyOnce output ends byte-identical to the
// input, the plain sink has every line.
func TestCatchUpKill9(t *testing.T) {
	e := newEnv(t, catchUpConfig)
	in := newInput(t, e.path("in.log"))
	exact, plain := e.path("exact.log"), e.path("plain.log")
	in.appendLines(2000)
	d := e.start()
	d.waitSettled(60 * time.Second)
	d.stop()
	bak := backupSink(t, e, exact, "exact")
	d = e.start()
	in.appendLines(60000)
	d.waitSettled(120 * time.Second)
	d.stop()
	end := in.size()

	var log strings.Builder
	fmt.Fprintf(&log, "%-5s %-22s %12s %14s\n", "kill", "point", "exactLines", "pointerOffset")
	for k, point := range []int{0, 0, 500, 5000, 20000} {
		bak.restore() // each round starts from the restored copy again
		d = killedDuringCatchUp(t, e, k, point, "the backward commit's log line", "pointer committed back and synced",
			func() int { return countLines(t, exact, 0) })
		rec, _ := showPointer(t, e.path("state/feeds/app.ptr"))
		fmt.Fprintf(&log, "%-5d %-22s %12d %14d\n", k, fmt.Sprintf("after %d lines", point), countLines(t, exact, 0), rec.Offset)
		// The pointer is never ahead of what the exactlyOnce sink holds: at
		// the input's end only once the re-read is complete (a fast
		// machine may finish the 60,000 lines before the kill lands).
		if got := countLines(t, exact, 0); rec.Offset >= end && got < len(in.texts) {
			t.Errorf("round %d (%s): the pointer file holds offset %d, the input's end, while the exactlyOnce output holds %d of %d lines", k, fmt.Sprintf("after %d lines", point), rec.Offset, got, len(in.texts))
		}
		// The next start finishes the catch-up (or decides it again).
		d = e.start()
		r := d.waitSettled(120 * time.Second)
		d.stop()
		if f := r.feed(t, "app"); !f.Lossless {
			t.Fatalf("round %d: lossy after the restart: %+v", k, f)
		}
		input, _ := os.ReadFile(in.path)
		sameBytes(t, fmt.Sprintf("round %d: exactlyOnce output", k), exact, input)
		n := countIdx(parseOutput(t, in, plain))
		for i := range in.texts {
			if n[i] == 0 {
				t.Fatalf("round %d: plain sink lacks line %d", k, i)
			}
		}
	}
	t.Log(log.String())
}

const catchUpGlobConfig = cuHeader + cuGlobFeed + cuProcessors + cuExact + cuPlain

// appendNumbered appends lines prefix-<i> for i in [from, from+n) to path.
func appendNumbered(t testing.TB, path, prefix string, from, n int) {
	t.Helper()
	var b bytes.Buffer
	for i := from; i < from+n; i++ {
		fmt.Fprintf(&b, "%s-%07d\n", prefix, i)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b.Bytes()); err != nil {
		t.Fatal(err)
	}
}

// perPrefix counts each line of path by its text, and returns the lines
// with prefix p in output order.
func perPrefix(t testing.TB, path, p string) ([]string, map[string]int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var in []string
	n := map[string]int{}
	for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		n[l]++
		if strings.HasPrefix(l, p+"-") {
			in = append(in, l)
		}
	}
	return in, n
}

// TestCatchUpGlobStreams (DESIGN §10 "Sinks and streams", §11): on a glob
// feed the rule holds per stream: the exactlyOnce sink (a per-epoch record)
// restored to an earlier copy is behind both streams' pointers, each is
// committed back to the sink's position in it, and each file is re-read
// from there: per input file the exactlyOnce output holds every line once,
// in order; the plain sink gets the gaps again (duplicates, never a gap).
func TestCatchUpGlobStreams(t *testing.T) {
	e := newEnv(t, catchUpGlobConfig)
	a, b := globInputs(t, e)
	exact, plain := e.path("exact.log"), e.path("plain.log")
	settledRun(t, e)
	bak := backupSink(t, e, exact, "exact")

	d := e.start()
	appendNumbered(t, a, "a", 1000, 2000)
	appendNumbered(t, b, "b", 500, 700)
	d.waitFor("every line written", 60*time.Second, func(r *report) bool {
		return r.Settled && countLines(t, exact, 0) >= 4200
	})
	d.stop()
	bak.restore()

	d = e.start()
	r := d.waitFor("the gaps re-read", 60*time.Second, func(r *report) bool {
		return r.Settled && countLines(t, exact, 0) >= 4200
	})
	d.stop()
	if f := r.feed(t, "app"); !f.Lossless {
		t.Errorf("lossy after the catch-up: %+v", f)
	}
	if got := strings.Count(d.log(), "a sink is behind a stream's pointer"); got != 2 {
		t.Errorf("%d streams committed back, want 2\n%s", got, tail(d.log(), 3000))
	}
	for _, tc := range []struct {
		p string
		n int
	}{{"a", 3000}, {"b", 1200}} {
		got, _ := perPrefix(t, exact, tc.p)
		if len(got) != tc.n {
			t.Fatalf("exactlyOnce output holds %d lines of %s.log, want %d", len(got), tc.p, tc.n)
		}
		for i, l := range got {
			if want := fmt.Sprintf("%s-%07d", tc.p, i); l != want {
				t.Fatalf("exactlyOnce output's %s lines: #%d is %q, want %q", tc.p, i, l, want)
			}
		}
	}
	_, n := perPrefix(t, plain, "")
	dups := 0
	for _, tc := range []struct {
		p    string
		n    int
		from int // the restored copy's end: the gap starts here
	}{{"a", 3000, 1000}, {"b", 1200, 500}} {
		for i := 0; i < tc.n; i++ {
			c := n[fmt.Sprintf("%s-%07d", tc.p, i)]
			if c == 0 {
				t.Fatalf("plain sink lacks %s-%07d", tc.p, i)
			}
			if c > 1 && i < tc.from {
				t.Errorf("plain sink got %s-%07d again: before the restored sink's position", tc.p, i)
			}
			dups += c - 1
		}
	}
	if dups != 2700 {
		t.Errorf("plain sink: %d duplicates, want the 2,700 lines of the two gaps", dups)
	}
	t.Logf("glob: 2 stream pointers committed back; %d lines re-read (the gaps: 2000 of a.log, 700 of b.log); plain duplicates %d", r.feed(t, "app").Sequence, dups)
}

// threeGenerations runs 1,000 lines, stops and backs the exactlyOnce sink
// up; then 500 more (generation 1 ends), two rotations (generation 2: 700
// lines, generation 3, the current file: 300), stops, restores the sink
// and deletes generation 1 (in.log.2). It returns the bytes of the three
// generations and the restored sink's position in generation 1.
func threeGenerations(t *testing.T) (e *env, in *input, gen1, gen2, gen3 []byte, restored int) {
	e = newEnv(t, catchUpConfig)
	in = newInput(t, e.path("in.log"))
	exact := e.path("exact.log")
	d, _, bak := backedUpThenMore(t, e, in, 1000, 500) // gen 1 ends at 1,500 lines
	rotateInput(t, d, in, exact, 700, 2200, nil)       // gen 2: lines 1500..2199
	rotateInput(t, d, in, exact, 300, 2500, nil)       // gen 3 (current): lines 2200..2499
	d.stop()
	bak.restore()
	gen1, gen2, gen3 = readGenerations(in)
	if err := os.Remove(in.path + ".2"); err != nil {
		t.Fatal(err)
	}
	restored = bytes.Index(gen1, []byte(in.texts[1000]+"\n"))
	time.Sleep(2100 * time.Millisecond) // past the generations' mtime slack from now
	return e, in, gen1, gen2, gen3, restored
}

// TestCatchUpGoneGenerationLaterOnesRead (DESIGN §11): the sink's record is
// in the oldest of three generations, and that one was deleted while
// tailfeed was stopped: its part is counted lost, and the later generation
// still on disk (in.log.1) and the current file are read — none skipped
// because the pointer file's mtime is the backward commit's.
func TestCatchUpGoneGenerationLaterOnesRead(t *testing.T) {
	e, _, gen1, gen2, gen3, restored := threeGenerations(t)
	_, _, f := settledRun(t, e)
	if f.LostTails != 1 || f.LostBytes != uint64(len(gen1)-restored) || f.Lossless {
		t.Errorf("lostTails %d lostBytes %d (want 1, %d) lossless %v", f.LostTails, f.LostBytes, len(gen1)-restored, f.Lossless)
	}
	want := append(append(bytes.Clone(gen1[:restored]), gen2...), gen3...)
	sameBytes(t, "exactlyOnce output: the restored part, then every later generation", e.path("exact.log"), want)
	t.Logf("gone oldest generation: lostBytes %d; in.log.1 (%d bytes) and in.log (%d bytes) read after it", f.LostBytes, len(gen2), len(gen3))
}

// TestCatchUpIntoGoneGenerationKill9: as above, with a kill -9 as soon as
// the backward commit to the gone generation is synced. The next start
// finds the pointer on an epoch it had left and no sink behind it: it
// still reads every later generation (not only the file at the path) and
// counts the gone one (at least once: an overcount, never a miss).
func TestCatchUpIntoGoneGenerationKill9(t *testing.T) {
	e, _, gen1, gen2, gen3, restored := threeGenerations(t)
	d := e.spawn()
	waitUntil(t, "the backward commit's log line", 60*time.Second, func() bool {
		return strings.Contains(d.log(), "pointer committed back and synced") || d.exited()
	})
	d.kill()
	ptr, _ := showPointer(t, e.path("state/feeds/app.ptr"))
	d, _, f := settledRun(t, e)
	if f.Lossless {
		t.Errorf("lossless after a gone generation")
	}
	ledger, _ := os.ReadFile(e.path("state/losses.jsonl"))
	if !bytes.Contains(ledger, []byte(`"lostTails"`)) {
		t.Errorf("no lostTails in the losses ledger: %s", ledger)
	}
	want := append(append(bytes.Clone(gen1[:restored]), gen2...), gen3...)
	sameBytes(t, "exactlyOnce output after the kill and the restart", e.path("exact.log"), want)
	t.Logf("killed with the pointer at %+v; restart: lostTails %d (this run), lostBytes %d; later generations read: %v",
		ptr, f.LostTails, f.LostBytes, strings.Contains(d.log(), "a catch-up cut short"))
}

// rewoundPointer writes, by DESIGN §3's layout, what the catch-up's
// backward commit leaves on disk: both slots holding rec with the counter
// past the file's — the state a kill -9 right after it (before the source
// read anything) leaves, made without a race.
func rewoundPointer(t testing.TB, path string, rec ptrSlot) {
	t.Helper()
	data, a, b := readSlots(t, path)
	rec.count = max(a.count, b.count) + 1
	le := binary.LittleEndian
	for _, at := range []int{0, 512} {
		s := data[at : at+64]
		clear(s)
		copy(s, "TFPTR")
		le.PutUint16(s[6:], 1)
		le.PutUint64(s[8:], uint64(rec.offset))
		le.PutUint64(s[16:], rec.epoch)
		le.PutUint64(s[24:], rec.key)
		le.PutUint64(s[32:], rec.fpLen)
		le.PutUint64(s[40:], rec.fp)
		le.PutUint64(s[48:], rec.count)
		le.PutUint32(s[56:], crc32.Checksum(s[:56], castagnoli))
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestCatchUpCutShortAfterBackwardCommit: the pointer file as a kill -9
// right after the backward commit into a gone generation leaves it (the
// oldest epoch's identity at the restored sink's position, made by hand:
// no race), the sink not behind it. The start reads every later
// generation still on disk, each under its own epoch again, then the file
// at the path, and counts the gone one: the exactlyOnce output is the
// restored part, then generations 2 and 3; lossy.
func TestCatchUpCutShortAfterBackwardCommit(t *testing.T) {
	e, _, gen1, gen2, gen3, restored := threeGenerations(t)
	// Generation 1's epoch and identity: the epochs file's adopted line.
	raw, err := os.ReadFile(e.path("state/feeds/app.epochs"))
	if err != nil {
		t.Fatal(err)
	}
	var first struct {
		Epoch, FileKey, Fingerprint string
		FingerprintLength           uint64
	}
	for _, l := range bytes.Split(raw, []byte{'\n'}) {
		var j struct {
			Epoch, FileKey, Fingerprint, Reason string
			FingerprintLength                   uint64
		}
		if json.Unmarshal(l, &j) == nil && j.Reason == "adopted" {
			first.Epoch, first.FileKey, first.Fingerprint, first.FingerprintLength = j.Epoch, j.FileKey, j.Fingerprint, j.FingerprintLength
			break
		}
	}
	hex := func(s string) uint64 {
		v, err := strconv.ParseUint(s, 16, 64)
		if err != nil {
			t.Fatalf("epochs file: %q: %v", s, err)
		}
		return v
	}
	rewoundPointer(t, e.path("state/feeds/app.ptr"), ptrSlot{offset: int64(restored), epoch: hex(first.Epoch),
		key: hex(first.FileKey), fpLen: first.FingerprintLength, fp: hex(first.Fingerprint)})

	d, _, f := settledRun(t, e)
	if f.LostTails != 1 || f.LostBytes != uint64(len(gen1)-restored) || f.Lossless {
		t.Errorf("lostTails %d lostBytes %d (want 1, %d) lossless %v detail %v", f.LostTails, f.LostBytes, len(gen1)-restored, f.Lossless, f.Detail)
	}
	if strings.Contains(d.log(), "a sink is behind the pointer") || !strings.Contains(d.log(), "a catch-up cut short") {
		t.Errorf("want no new decision, the cut-short catch-up read on:\n%s", tail(d.log(), 3000))
	}
	want := append(append(bytes.Clone(gen1[:restored]), gen2...), gen3...)
	sameBytes(t, "exactlyOnce output after the cut-short catch-up", e.path("exact.log"), want)
	t.Logf("cut short after the backward commit: lostBytes %d, later generations %d + %d bytes read", f.LostBytes, len(gen2), len(gen3))
}

const catchUpCountConfig = cuHeader + cuPlainFeed + `processors:
  - name: counter
    feed: app
    type: count
    match: '^line-\d{8}-(?P<key>[a-z])'
    exclude: 'zzzz'
    fsyncIntervalMillis: 20
` + cuPlain

// TestCatchUpRestoredCount (DESIGN §11): a count processor's state file
// put back to an earlier copy is caught up from the input: its counts end
// equal to a clean count of the input. Lines its exclude filters out sit
// at the end of the input, so a state that did not advance over them
// would be behind at every start (the catch-up must not fire when nothing
// was restored).
func TestCatchUpRestoredCount(t *testing.T) {
	e := newEnv(t, catchUpCountConfig)
	in := newInput(t, e.path("in.log"))
	state := e.path("state/state/count/counter.json")
	in.appendLines(3000)
	d := e.start()
	d.waitSettled(60 * time.Second)
	d.stop()
	saved := filepath.Join(t.TempDir(), "counter.json")
	copyFile(t, state, saved)

	d = e.start()
	in.appendLines(4000)
	// Excluded lines last (line texts i%26 == 25 are "z…"; 4 or more z's
	// need i%97 >= 4): the count finishes them without counting.
	for len(in.texts)%26 != 25 || len(in.texts)%97 < 4 {
		in.appendLines(1)
	}
	in.appendLines(1)
	if !strings.Contains(in.texts[len(in.texts)-1], "zzzz") {
		t.Fatalf("the last line %q is not excluded", in.texts[len(in.texts)-1])
	}
	d.waitSettled(60 * time.Second)
	d.stop()

	// A restart with nothing restored: no catch-up.
	d, _, _ = settledRun(t, e)
	if strings.Contains(d.log(), "committing the pointer back") {
		t.Fatalf("a catch-up with nothing restored (the state did not advance over the excluded last line):\n%s", tail(d.log(), 2000))
	}

	copyFile(t, saved, state)
	d = e.start()
	d.waitSettled(60 * time.Second)
	code, body, err := d.get("/v1/state/counter")
	d.stop()
	if err != nil || code != 200 {
		t.Fatalf("GET /v1/state/counter: %d %v %s", code, err, body)
	}
	if !strings.Contains(d.log(), "committing the pointer back") {
		t.Errorf("no catch-up after the restore")
	}
	var st struct {
		Counts map[string]uint64 `json:"counts"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(in.path)
	want := map[string]uint64{}
	for _, l := range bytes.Split(data, []byte{'\n'}) {
		if bytes.Contains(l, []byte("zzzz")) {
			continue
		}
		if s := counterKey.FindSubmatch(l); s != nil {
			want[string(s[1])]++
		}
	}
	if fmt.Sprint(st.Counts) != fmt.Sprint(want) {
		t.Errorf("counts after the catch-up %v (%d), want a clean count %v (%d)", st.Counts, sum(st.Counts), want, sum(want))
	}
	t.Logf("count state restored to 3000 lines of %d: caught up, counts %d = a clean count", len(in.texts), sum(st.Counts))
}
