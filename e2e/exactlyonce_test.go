package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// effectsConfig runs three subscribers of one COMMITTED feed through the
// same kill loop: an exactlyOnce file sink, a plain file sink (the control:
// it shows the re-deliveries the kills cause), and a count processor. The
// count's 50 ms save interval holds the pointer back (its checkpoint), so a
// kill during a burst leaves the sinks ahead of the pointer: the restart
// re-delivers lines every subscriber already had.
const effectsConfig = `dataDir: ./state
status:
  listen: {{ADDR}}
feeds:
  - name: app
    path: ./in.log
    readStrategy: COMMITTED
    queueCapacity: 512
processors:
  - name: exact
    feed: app
    type: file
    path: ./exact.log
    exactlyOnce: true
    fsync: never
  - name: plain
    feed: app
    type: file
    path: ./plain.log
    fsync: never
  - name: counter
    feed: app
    type: count
    match: '^line-\d{8}-(?P<key>[a-z])'
    fsyncIntervalMillis: 50
`

// counterKey is the count processor's regexp (lines of index i%97 == 0
// have no letter: they match nothing and are not counted).
var counterKey = regexp.MustCompile(`^line-\d{8}-(?P<key>[a-z])`)

// countKeys counts the lines of data per key, as a clean count run would.
func countKeys(data []byte) map[string]uint64 {
	m := map[string]uint64{}
	for _, l := range bytes.Split(data, []byte{'\n'}) {
		if s := counterKey.FindSubmatch(l); s != nil {
			m[string(s[1])]++
		}
	}
	return m
}

func sum(m map[string]uint64) (n uint64) {
	for _, v := range m {
		n += v
	}
	return n
}

// TestExactlyOnceKill9 (DESIGN §2, §6, §8): kill -9 the daemon at ten
// moments in the middle of bursts, restart into the backlog each time, then
// finish with a clean run. The exactlyOnce output is byte-identical to the
// input (each line exactly once, in order) and is a prefix of it after every
// kill; the plain sink of the same runs shows duplicates (so the kills did
// cause re-deliveries the test can see); the count processor's counts equal
// a clean count of the input, while counting the plain sink's output (what
// a count without the skip would have seen) exceeds them.
func TestExactlyOnceKill9(t *testing.T) {
	e := newEnv(t, effectsConfig)
	in := newInput(t, e.path("in.log"))
	exact, plain := e.path("exact.log"), e.path("plain.log")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 9))

	in.appendLines(3000)
	var log strings.Builder
	fmt.Fprintf(&log, "%-4s %-7s %-6s %8s %10s %10s %10s\n", "kill", "start", "watch", "burst", "afterLines", "exactBytes", "plainBytes")
	kills := 0
	for k := range 10 {
		// Odd kills land while the restart re-delivers the backlog (the
		// plain sink's progress), even ones while the exactlyOnce sink
		// writes lines it never had (its own progress).
		watch := plain
		if k%2 == 0 {
			watch = exact
		}
		from := fileSize(t, watch)
		var d *daemon
		how := "spawn" // restart into the backlog without waiting for the status port
		if k%2 == 1 {
			how = "ready"
			d = e.start()
		} else {
			d = e.spawn()
		}
		burst := 4000 + rng.IntN(12000)
		in.appendLines(burst)
		// At most half the burst: the exactlyOnce sink cuts its output back
		// to its record at open (the torn tail, up to a batch), so lines
		// counted from the size before the start can fall short of the whole
		// burst, and a wait for nearly all of it could never end.
		after := 50 + rng.IntN(burst/2)
		waitUntil(t, fmt.Sprintf("kill %d: %d lines in %s", k, after, watch), 60*time.Second, func() bool {
			return countLines(t, watch, from) >= after || d.exited()
		})
		d.kill()
		if d.code != -1 {
			t.Fatalf("kill %d: daemon exited with code %d before the kill\n%s", k, d.code, tail(d.log(), 3000))
		}
		kills++
		fmt.Fprintf(&log, "%-4d %-7s %-6s %8d %10d %10d %10d\n", k, how, strings.TrimSuffix(filepath.Base(watch), ".log"),
			burst, after, fileSize(t, exact), fileSize(t, plain))
		checkPrefix(t, fmt.Sprintf("after kill %d", k), in, exact)
	}

	d := e.start()
	d.waitSettled(120 * time.Second)
	code, body, err := d.get("/v1/state/counter")
	if err != nil || code != 200 {
		t.Fatalf("GET /v1/state/counter: %d %v %s", code, err, body)
	}
	d.stop()

	input, err := os.ReadFile(in.path)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(exact)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, input) {
		i := 0
		for i < len(out) && i < len(input) && out[i] == input[i] {
			i++
		}
		t.Errorf("exactlyOnce output (%d bytes) differs from the input (%d bytes) first at byte %d", len(out), len(input), i)
	}

	// Restarts that found an exactlyOnce tail its record did not cover
	// (written, never acknowledged) and cut it off before writing it again.
	truncated := 0
	for _, r := range e.runs {
		if strings.Contains(r.log(), "truncating the output to its exactlyOnce record") {
			truncated++
		}
	}
	fmt.Fprintf(&log, "restarts that cut an unrecorded exactlyOnce tail: %d\n", truncated)
	pl := parseOutput(t, in, plain)
	dups := len(pl.idx) - len(pl.set())
	fmt.Fprintf(&log, "%d kills, %d input lines; plain sink: %d output lines, %d duplicates; exactlyOnce sink: %d bytes, identical %v",
		kills, len(in.texts), len(pl.idx), dups, len(out), bytes.Equal(out, input))
	t.Log(log.String())
	if len(pl.set()) != len(in.texts) {
		t.Errorf("plain sink has %d distinct lines of %d: a gap", len(pl.set()), len(in.texts))
	}
	if dups == 0 {
		t.Errorf("the plain sink shows no duplicates after %d kills: the kills caused no re-delivery, so the test proves nothing", kills)
	}

	var st struct {
		Counts map[string]uint64 `json:"counts"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatalf("state: %v: %s", err, body)
	}
	clean := countKeys(input)
	if !equalCounts(st.Counts, clean) {
		t.Errorf("counts after the kills differ from a clean run:\n got %v\nwant %v", st.Counts, clean)
	}
	plainData, _ := os.ReadFile(plain)
	noSkip := countKeys(plainData)
	t.Logf("count: %d counted (clean run %d); counting every delivery without the skip: %d", sum(st.Counts), sum(clean), sum(noSkip))
	if sum(noSkip) <= sum(clean) {
		t.Errorf("without the skip the counts would be %d, not more than the clean %d: the kills caused no re-delivery", sum(noSkip), sum(clean))
	}
}

// checkPrefix checks that the exactlyOnce output is a byte prefix of the
// input (a kill may leave a tail the record does not cover, but never a
// duplicate, a gap or a foreign byte).
func checkPrefix(t *testing.T, when string, in *input, path string) {
	t.Helper()
	out, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	input, err := os.ReadFile(in.path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(input, out) {
		p := in.parse(out)
		t.Fatalf("%s: exactlyOnce output (%d bytes) is not a prefix of the input: %d lines, %d distinct, %d foreign",
			when, len(out), len(p.idx), len(p.set()), len(p.unknown))
	}
}

func equalCounts(a, b map[string]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if a[k] != b[k] {
			return false
		}
	}
	return true
}
