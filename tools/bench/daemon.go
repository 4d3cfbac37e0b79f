package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"tailfeed/pointer"
)

// sinkSpec describes one file subscriber of a bench config.
type sinkSpec struct {
	name, path, fsync string
}

// proc is a running daemon.
type proc struct {
	cmd    *exec.Cmd
	start  time.Time
	done   chan struct{} // closed when the process exited
	err    error         // from Wait, valid after done
	stderr *bytes.Buffer
	state  string // the config's dataDir
}

// writeConfig writes a config with one COMMITTED feed of in and the sinks.
func writeConfig(dir, in string, sinks []sinkSpec) (cfgPath, stateDir string, err error) {
	stateDir = filepath.Join(dir, "state")
	if err := os.RemoveAll(stateDir); err != nil {
		return "", "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "dataDir: %q\nstatus: {listen: \"127.0.0.1:0\"}\nlog: {level: warn}\n", stateDir)
	fmt.Fprintf(&b, "feeds:\n  - name: bench\n    path: %q\n    readStrategy: COMMITTED\n", in)
	b.WriteString("processors:\n")
	for _, s := range sinks {
		fmt.Fprintf(&b, "  - name: %s\n    feed: bench\n    type: file\n    path: %q\n    fsync: %s\n", s.name, s.path, s.fsync)
		if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", "", err
		}
	}
	cfgPath = filepath.Join(dir, "bench.yaml")
	return cfgPath, stateDir, os.WriteFile(cfgPath, []byte(b.String()), 0o644)
}

// startDaemon runs bin with the config; env adds to the environment.
func startDaemon(bin, cfg, stateDir string, env ...string) (*proc, error) {
	p := &proc{done: make(chan struct{}), stderr: &bytes.Buffer{}, state: stateDir}
	p.cmd = exec.Command(bin, "run", "--config", cfg)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stderr = p.stderr
	p.start = time.Now()
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// waitSizes waits until every path holds want bytes; it returns when the
// last one got there (polling every millisecond).
func (p *proc) waitSizes(paths []string, want int64, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		all := true
		for _, path := range paths {
			st, err := os.Stat(path)
			if err != nil || st.Size() < want {
				all = false
				break
			}
		}
		now := time.Now()
		if all {
			return now, nil
		}
		select {
		case <-p.done:
			return now, fmt.Errorf("daemon exited early (%v): %s", p.err, lastLines(p.stderr.String(), 10))
		default:
		}
		if now.After(deadline) {
			return now, fmt.Errorf("outputs not complete after %s: %s", timeout, lastLines(p.stderr.String(), 10))
		}
		time.Sleep(time.Millisecond)
	}
}

// freePort returns 127.0.0.1:PORT for a port that was free when asked.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// waitSettled polls GET /feed.status at addr (every 5 ms) until the report
// says settled; it returns when it did.
func (p *proc) waitSettled(addr string, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: 5 * time.Second}
	for {
		resp, err := client.Get("http://" + addr + "/feed.status")
		if err == nil {
			var r struct {
				Settled bool `json:"settled"`
			}
			body, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if rerr == nil && json.Unmarshal(body, &r) == nil && r.Settled {
				return time.Now(), nil
			}
		}
		select {
		case <-p.done:
			return time.Now(), fmt.Errorf("daemon exited early (%v): %s", p.err, lastLines(p.stderr.String(), 10))
		default:
		}
		if time.Now().After(deadline) {
			return time.Now(), fmt.Errorf("not settled after %s (%v): %s", timeout, err, lastLines(p.stderr.String(), 10))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stop sends SIGTERM and waits for a clean exit.
func (p *proc) stop() error {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
		return errors.New("daemon did not stop within 60s")
	}
	if p.err != nil {
		return fmt.Errorf("daemon exit: %v: %s", p.err, lastLines(p.stderr.String(), 10))
	}
	return nil
}

// kill ends the daemon without a final commit (clean-up after an error).
func (p *proc) kill() {
	select {
	case <-p.done:
	default:
		p.cmd.Process.Kill()
		<-p.done
	}
}

// committed is the offset in the feed's pointer file.
func (p *proc) committed() (int64, error) {
	rec, err := pointer.Inspect(filepath.Join(p.state, "feeds", "bench.ptr"))
	if err != nil {
		return 0, err
	}
	return rec.Offset, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// runTailfeed measures the daemon copying in (size bytes) to the sinks:
// from its start to the last line in every output, then a clean stop. It
// checks that every output equals the input and that the pointer committed
// the whole input.
func runTailfeed(o options, in string, size int64, sinks []sinkSpec, env ...string) (measured, error) {
	cfg, state, err := writeConfig(o.dir, in, sinks)
	if err != nil {
		return measured{}, err
	}
	p, err := startDaemon(o.bin, cfg, state, env...)
	if err != nil {
		return measured{}, err
	}
	var outs []string
	for _, s := range sinks {
		outs = append(outs, s.path)
	}
	end, err := p.waitSizes(outs, size, 10*time.Minute)
	if err != nil {
		p.kill()
		return measured{}, err
	}
	m := measured{wall: end.Sub(p.start)}
	if err := p.stop(); err != nil {
		return m, err
	}
	m.cpu, m.maxRSS = usage(p.cmd.ProcessState)
	if off, err := p.committed(); err != nil || off != size {
		return m, fmt.Errorf("pointer after the run: offset %d, want %d (%v)", off, size, err)
	}
	for _, out := range outs {
		same, err := sameContent(in, out)
		if err != nil {
			return m, err
		}
		if !same {
			return m, fmt.Errorf("%s differs from the input", out)
		}
		os.Remove(out)
	}
	return m, nil
}
