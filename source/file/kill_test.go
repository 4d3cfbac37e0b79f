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

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// tailfeedBinary builds cmd/tailfeed once per test run.
func tailfeedBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tailfeed-rotation-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "tailfeed")
		out, err := exec.Command("go", "build", "-o", binPath, "tailfeed/cmd/tailfeed").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
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
	var rotations atomic.Int32
	rotate := func() {
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
	for round := 0; round < 6; round++ {
		d := startDaemon(t, bin, cfg)
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
	d.waitSettled(t)
	d.cmd.Process.Signal(syscall.SIGTERM)
	<-d.done

	out, err := os.Open(filepath.Join(dir, "out.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	seen := make([]int, total)
	sc := bufio.NewScanner(out)
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
			t.Fatalf("line %d of %d never delivered (%d rotations)\n%s", i, total, rotations.Load(), tailOf(d.log.String(), 30))
		}
	}
	t.Logf("%d lines over %d rotations and 6 kills: %d output lines (%d duplicates)", total, rotations.Load(), n, n-total)
}
