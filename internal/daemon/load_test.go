package daemon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/status"
)

// lineCounter counts the newline bytes of a growing file, reading only
// what was appended since the last call.
type lineCounter struct {
	path  string
	off   int64
	lines int
}

func (c *lineCounter) count(t *testing.T) int {
	t.Helper()
	f, err := os.Open(c.path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		n, err := f.ReadAt(buf, c.off)
		c.lines += bytes.Count(buf[:n], []byte{'\n'})
		c.off += int64(n)
		if err != nil {
			return c.lines
		}
	}
}

// TestSettledNeverEarlyUnderLoad polls feed.status every millisecond while
// 200,000 lines are appended in bursts and checks the launcher's promise:
// whenever a report says settled, every line written to the input before
// the report was asked for is in the sink. Two subscribers, one of them a
// file sink with fsync interval (its ack point waits for the fsync), make
// the ack points move unevenly.
func TestSettledNeverEarlyUnderLoad(t *testing.T) {
	const total = 200_000
	e := start(t, `
dataDir: %DIR%/state
status: {listen: "127.0.0.1:0"}
shutdownTimeoutMillis: 2000
feeds:
  - {name: app, path: %DIR%/app.log, pollIntervalMillis: 50, queueCapacity: 512}
processors:
  - {name: archive, feed: app, type: file, path: %DIR%/out.log, fsync: interval, fsyncIntervalMillis: 5}
  - {name: other, feed: app, type: discard}
`, Options{})
	sink := &lineCounter{path: e.dir + "/out.log"}
	var written atomic.Int64 // lines whose write(2) returned
	done := make(chan struct{})
	go func() {
		defer close(done)
		f, err := os.OpenFile(e.input, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		var b bytes.Buffer
		for n, burst := 0, 1; n < total; burst = burst*7%1201 + 1 {
			k := min(burst, total-n)
			b.Reset()
			for i := range k {
				fmt.Fprintf(&b, "line %07d of the load test\n", n+i)
			}
			if _, err := f.Write(b.Bytes()); err != nil {
				t.Error(err)
				return
			}
			n += k
			written.Store(int64(n))
			// Pauses of 0-15 ms: the feed catches up (and may settle) between
			// some bursts and not others.
			time.Sleep(time.Duration(burst%16) * time.Millisecond)
		}
	}()
	polls, settledSeen := 0, 0
	client := &http.Client{Timeout: 10 * time.Second}
	deadline := time.Now().Add(120 * time.Second)
	for {
		before := written.Load()
		resp, err := client.Get(e.base + "/feed.status")
		if err != nil {
			t.Fatal(err)
		}
		var r status.Report
		err = json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		polls++
		if r.Settled {
			settledSeen++
			if n := sink.count(t); int64(n) < before {
				t.Fatalf("poll %d: settled with %d lines in the sink but %d written before the report (report %+v)",
					polls, n, before, r.Feeds[0])
			}
			if before == total {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("not settled after %d polls: %+v", polls, r.Feeds[0])
		}
		time.Sleep(time.Millisecond)
	}
	<-done
	if n := sink.count(t); n != total {
		t.Fatalf("sink has %d lines, want %d", n, total)
	}
	f := e.report().Feeds[0]
	if !f.Lossless || f.Sequence != total || f.Acknowledged != total || f.Pointer.Offset != e.inputSize() {
		t.Fatalf("final report %+v pointer %+v", f, f.Pointer)
	}
	t.Logf("%d polls, %d of them settled", polls, settledSeen)
}
