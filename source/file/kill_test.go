package file_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// tailfeedBinary builds cmd/tailfeed into the test's temp dir.
func tailfeedBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "tailfeed")
	if out, err := exec.Command("go", "build", "-o", bin, "tailfeed/cmd/tailfeed").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// daemonRun is one run of the built binary.
type daemonRun struct {
	cmd  *exec.Cmd
	log  *syncBuf
	addr string
	done chan struct{}
}

var statusURL = regexp.MustCompile(`status=http://([0-9.:]+)/feed\.status`)

func startDaemon(t *testing.T, bin, cfg string) *daemonRun {
	t.Helper()
	d := &daemonRun{log: &syncBuf{}, done: make(chan struct{})}
	d.cmd = exec.Command(bin, "run", "--config", cfg)
	d.cmd.Stdout, d.cmd.Stderr = d.log, d.log
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.cmd.Wait(); close(d.done) }()
	t.Cleanup(func() {
		d.cmd.Process.Kill()
		<-d.done
	})
	deadline := time.Now().Add(20 * time.Second)
	for d.addr == "" {
		if m := statusURL.FindStringSubmatch(d.log.String()); m != nil {
			d.addr = m[1]
			break
		}
		select {
		case <-d.done:
			t.Fatalf("daemon exited at start:\n%s", d.log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("daemon not ready:\n%s", d.log.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return d
}

func (d *daemonRun) kill9() {
	d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.done
}

// waitSettled polls feed.status until the feed is settled.
func (d *daemonRun) waitSettled(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last []byte
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + d.addr + "/feed.status")
		if err == nil {
			var rep struct {
				Settled bool `json:"settled"`
			}
			var buf bytes.Buffer
			buf.ReadFrom(resp.Body)
			resp.Body.Close()
			last = buf.Bytes()
			if json.Unmarshal(last, &rep) == nil && rep.Settled {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("not settled: %s\n%s", last, tailOf(d.log.String(), 30))
}

// Rename rotation across kill -9: a writer appends continuously and
// rotates the file (rename, reopen) every ~120 ms; the built daemon is
// killed with SIGKILL at random moments, sometimes with a rotation while
// it is down, and restarted. Every line written, in any generation, is in
// the output at least once.
func TestKill9AcrossRotation(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := tailfeedBinary(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "tailfeed.yaml")
	os.WriteFile(cfg, []byte(`dataDir: ./state
status: {listen: "127.0.0.1:0"}
feeds:
  - name: app
    path: ./app.log
    pollIntervalMillis: 50
    rotateWaitMillis: 300
processors:
  - name: archive
    feed: app
    type: file
    path: ./out.log
`), 0o644)
	path := filepath.Join(dir, "app.log")
	w := startWriter(t, path)
	out := filepath.Join(dir, "out.log")
	var rotations atomic.Int32
	// Rotations faster than the daemon looks, or two while it is down, can
	// skip a generation (doc.go, Known limitations): rotate only once the
	// output shows the daemon reads the current generation.
	rotate := func() {
		if lastGen(out) != w.gen.Load() {
			return
		}
		k := rotations.Add(1)
		w.rotate(fmt.Sprintf("%s.%d", path, k))
	}
	stopRot := make(chan struct{})
	var wg sync.WaitGroup
	running := atomic.Bool{}
	wg.Go(func() {
		for {
			select {
			case <-stopRot:
				return
			case <-time.After(120 * time.Millisecond):
				if running.Load() {
					rotate()
				}
			}
		}
	})
	var logs []*syncBuf
	for round := 0; round < 6; round++ {
		d := startDaemon(t, bin, cfg)
		logs = append(logs, d.log)
		running.Store(true)
		time.Sleep(150*time.Millisecond + rand.N(250*time.Millisecond))
		running.Store(false)
		d.kill9()
		if round%2 == 1 {
			rotate() // one rotation while it is down
		}
	}
	close(stopRot)
	wg.Wait()
	total := w.finish()
	d := startDaemon(t, bin, cfg)
	logs = append(logs, d.log)
	d.waitSettled(t)
	d.cmd.Process.Signal(syscall.SIGTERM)
	<-d.done

	of, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer of.Close()
	seen := make([]int, total)
	sc := bufio.NewScanner(of)
	n := 0
	for sc.Scan() {
		var gen, i int
		if _, err := fmt.Sscanf(sc.Text(), "g%d line %d", &gen, &i); err != nil || i >= total {
			t.Fatalf("output line %q is no line written", sc.Text())
		}
		seen[i]++
		n++
	}
	for i, c := range seen {
		if c == 0 {
			for k, l := range logs {
				t.Logf("run %d:\n%s", k, l.String())
			}
			t.Fatalf("line %d of %d never delivered (%d rotations)", i, total, rotations.Load())
		}
	}
	t.Logf("%d lines over %d rotations and 6 kills: %d output lines (%d duplicates)", total, rotations.Load(), n, n-total)
}

// lastGen is the generation of the last complete line of the output (-1
// when there is none).
func lastGen(out string) int64 {
	f, err := os.Open(out)
	if err != nil {
		return -1
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return -1
	}
	n := min(st.Size(), 256)
	b := make([]byte, n)
	if _, err := f.ReadAt(b, st.Size()-n); err != nil {
		return -1
	}
	b = bytes.TrimRight(b, "\n")
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	var gen int64
	if _, err := fmt.Sscanf(string(b), "g%d", &gen); err != nil {
		return -1
	}
	return gen
}
