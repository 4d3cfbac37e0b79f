package e2e

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// backlogConfig keeps queues tiny (2-line batches) and the drain bound
// short, so a SIGTERM right after start leaves lines queued and unprocessed.
const backlogConfig = `dataDir: ./state
status:
  listen: {{ADDR}}
shutdownTimeoutMillis: 1
feeds:
  - name: app
    path: ./in.log
    readStrategy: COMMITTED
    queueCapacity: 4
processors:
  - name: archive
    feed: app
    type: file
    path: ./out.log
    fsync: never
`

// TestSigtermWithBacklogCommitsExactlyWhatWasProcessed: a SIGTERM while the
// queues hold lines exits 0 and commits exactly the lines the sink wrote
// (DESIGN §5 shutdown): after each stop the pointer is the end of the last
// output line, and across the restarts every line is in the output exactly
// once — nothing lost, nothing processed twice.
func TestSigtermWithBacklogCommitsExactlyWhatWasProcessed(t *testing.T) {
	e := newEnv(t, backlogConfig)
	in := newInput(t, e.path("in.log"))
	out, ptr := e.path("out.log"), e.path("state/feeds/app.ptr")
	in.appendLines(100000)

	stops := 0
	for stops < 4 {
		d := e.start()
		d.stop()
		p := parseOutput(t, in, out)
		rec, _ := showPointer(t, ptr)
		t.Logf("stop %d after %v: %d lines out, pointer %d of %d", stops+1, d.ended.Sub(d.started).Round(time.Millisecond), len(p.idx), rec.Offset, in.size())
		checkExactlyOnce(t, in, p, len(p.idx))
		var want int64
		if len(p.idx) > 0 {
			want = in.ends[len(p.idx)-1]
		}
		if rec.Offset != want {
			t.Fatalf("stop %d: pointer %d, want %d: the end of the last line written (a clean stop commits exactly what was processed)", stops+1, rec.Offset, want)
		}
		stops++
		if rec.Offset == in.size() {
			t.Logf("the whole input was processed before the SIGTERM; no backlog left to stop with")
			break
		}
		in.appendLines(20000) // more between restarts
	}

	d := e.start()
	d.waitSettled(120 * time.Second)
	d.stop()
	checkExactlyOnce(t, in, parseOutput(t, in, out), len(in.texts))
	if rec, _ := showPointer(t, ptr); rec.Offset != in.size() {
		t.Errorf("final pointer %d, want %d", rec.Offset, in.size())
	}
}

// checkExactlyOnce requires the output to be input lines 0..n-1, each once,
// in order, with nothing else.
func checkExactlyOnce(t *testing.T, in *input, p parsed, n int) {
	t.Helper()
	if len(p.unknown) > 0 || len(p.torn) > 0 {
		t.Fatalf("output holds %d foreign lines and a torn tail of %d bytes", len(p.unknown), len(p.torn))
	}
	if len(p.idx) != n {
		t.Errorf("output has %d lines, want %d", len(p.idx), n)
	}
	for j, i := range p.idx {
		if i != j {
			t.Fatalf("output line %d is input line %d (a line lost or repeated)", j, i)
		}
	}
}

// TestSecondSignalExitsAtOnce: with a subscriber that can never finish (its
// output is /dev/full), a first SIGTERM/SIGINT waits for the drain bound; a
// second one exits at once, without waiting for it (DESIGN §5).
func TestSecondSignalExitsAtOnce(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("needs /dev/full")
	}
	for _, sigs := range [][2]syscall.Signal{{syscall.SIGTERM, syscall.SIGINT}, {syscall.SIGINT, syscall.SIGINT}} {
		t.Run(sigs[0].String()+" then "+sigs[1].String(), func(t *testing.T) {
			e := newEnv(t, `dataDir: ./state
status:
  listen: {{ADDR}}
shutdownTimeoutMillis: 60000
feeds:
  - name: app
    path: ./in.log
processors:
  - name: full
    feed: app
    type: file
    path: /dev/full
`)
			newInput(t, e.path("in.log")).appendLines(100)
			d := e.start()
			d.waitFor("a pending line", 30*time.Second, func(r *report) bool { return r.Feeds[0].PendingAcks > 0 })
			d.signal(sigs[0])
			// The first signal starts the drain, which cannot finish.
			time.Sleep(300 * time.Millisecond)
			if d.exited() {
				t.Fatalf("exited (code %d) on the first signal although a subscriber could not drain", d.code)
			}
			sent := time.Now()
			d.signal(sigs[1])
			code := d.wait(20 * time.Second)
			t.Logf("second signal: exit code %d after %v", code, time.Since(sent).Round(time.Millisecond))
			if code == 0 {
				t.Errorf("exit code 0 after a second signal; a clean exit is only for a completed shutdown")
			}
		})
	}
}
