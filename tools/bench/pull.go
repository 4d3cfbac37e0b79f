package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// pullTarget is issue 14's target for max=10000 batches with batch ACKs.
const pullTarget = 1_000_000

// pullCases runs case 8: the built daemon with a pull subscriber
// (COMMITTED feed of -pull-lines lines present at its start), drained by a
// client in this process over 127.0.0.1 that pulls batches of max lines
// and acknowledges each with one batch ACK, one request after the other.
// Timed from the first pull to the last ACK's answer; every sequence
// number is checked, and the pointer must have committed the whole input
// at the stop. The client reads the ids out of the body without a JSON
// library (a client built for throughput); its CPU is in the detail.
func pullCases(o options, t *table) error {
	if o.pullLines <= 0 {
		return nil
	}
	in := filepath.Join(o.dir, "pull.log")
	if err := writeLines(in, o.pullLines, o.lineBytes); err != nil {
		return err
	}
	defer os.Remove(in)
	size := int64(o.pullLines) * int64(o.lineBytes)
	for _, c := range []struct {
		max, inFlight int
		pipelined     bool
	}{{10000, 20000, false}, {10000, 30000, true}, {500, 5000, false}} {
		var best pullRun
		for range o.runs {
			r, err := pullOnce(o, in, size, c.max, c.inFlight, c.pipelined)
			if err != nil {
				return fmt.Errorf("pull max=%d: %w", c.max, err)
			}
			fmt.Fprintf(os.Stderr, "pull max=%d: %.0f lines/s\n", c.max, r.rate)
			if r.rate > best.rate {
				best = r
			}
		}
		name := fmt.Sprintf("tailfeed → pull subscriber, max=%d + batch ACKs (maxInFlight %d)", c.max, c.inFlight)
		if c.pipelined {
			name = fmt.Sprintf("tailfeed → pull subscriber, max=%d, each ACK sent while the next batch is pulled (maxInFlight %d)", c.max, c.inFlight)
		}
		rw := row{num: "8", name: name,
			linesPerSec: fmtRate(best.rate), mbPerSec: fmt.Sprintf("%.0f", best.rate*float64(o.lineBytes)/1e6),
			cpu: fmt.Sprintf("%.2f", best.cpu.Seconds()), rss: fmtMiB(best.rssKiB),
			detail: fmt.Sprintf("%d lines, wall %.3f s, client CPU %.2f s (best of %d)", o.pullLines, best.wall.Seconds(), best.clientCPU.Seconds(), o.runs)}
		if c.max == 10000 && !c.pipelined {
			rw.target = verdict("≥ 1 M lines/s", best.rate >= pullTarget)
		}
		t.add(rw)
	}
	return nil
}

type pullRun struct {
	rate           float64
	wall           time.Duration
	cpu, clientCPU time.Duration
	rssKiB         int64
}

func pullOnce(o options, in string, size int64, max, inFlight int, pipelined bool) (pullRun, error) {
	var r pullRun
	addr, err := freeAddr()
	if err != nil {
		return r, err
	}
	state := filepath.Join(o.dir, "state")
	if err := os.RemoveAll(state); err != nil {
		return r, err
	}
	cfg := filepath.Join(o.dir, "pull.yaml")
	text := fmt.Sprintf("dataDir: %q\nstatus: {listen: %q}\nlog: {level: warn}\n"+
		"feeds:\n  - name: bench\n    path: %q\n    readStrategy: COMMITTED\n"+
		"processors:\n  - name: consumer\n    feed: bench\n    type: pull\n    ackTimeoutMillis: 30000\n    maxInFlight: %d\n",
		state, addr, in, inFlight)
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		return r, err
	}
	p, err := startDaemon(o.bin, cfg, state)
	if err != nil {
		return r, err
	}
	defer p.kill()
	c := newPullClient("http://"+addr, "consumer", max)
	if err := c.waitReady(p, time.Minute); err != nil {
		return r, err
	}
	cpu0 := selfCPU()
	began := time.Now()
	if pipelined {
		err = c.pipelined(o.pullLines)
	} else {
		for got := 0; got < o.pullLines && err == nil; {
			var n int
			n, err = c.pullAndAck()
			got += n
		}
	}
	if err != nil {
		return r, err
	}
	r.wall = time.Since(began)
	r.clientCPU = selfCPU() - cpu0
	r.rate = float64(o.pullLines) / r.wall.Seconds()
	if err := p.stop(); err != nil {
		return r, err
	}
	r.cpu, r.rssKiB = usage(p.cmd.ProcessState)
	if off, err := p.committed(); err != nil || off != size {
		return r, fmt.Errorf("pointer after the run: offset %d, want %d (%v)", off, size, err)
	}
	return r, nil
}

// freeAddr is a 127.0.0.1 address with a port free a moment ago.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// pullClient pulls and batch-ACKs with reused buffers, the ids sliced out
// of the body (the format is DESIGN §7's; the daemon writes no other
// field named deliveryId or sequence).
type pullClient struct {
	hc              *http.Client
	base            string
	pullURL, ackURL string
	body            []byte    // the last pull's answer
	acks            [2]ackBuf // the ACK being built and the one in flight
	next            uint64    // the sequence the next event must have
}

// ackBuf is one batch ACK: its body, its count, its answer.
type ackBuf struct {
	body, resp, want []byte
	n                int
}

func newPullClient(base, sub string, max int) *pullClient {
	return &pullClient{
		hc:      &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}},
		base:    base,
		pullURL: fmt.Sprintf("%s/v1/pull/%s?max=%d&wait=1s", base, sub, max), ackURL: base + "/v1/ack", next: 1,
	}
}

// waitReady waits for /readyz to answer 200.
func (c *pullClient) waitReady(p *proc, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		resp, err := c.hc.Get(c.base + "/readyz")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.done:
			return fmt.Errorf("daemon exited early (%v): %s", p.err, lastLines(p.stderr.String(), 10))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("daemon not ready after %s: %v %s", within, err, lastLines(p.stderr.String(), 10))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// do sends req and reads the answer into *buf (200, or an error).
func (c *pullClient) do(req *http.Request, buf *[]byte) error {
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b := (*buf)[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := resp.Body.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	*buf = b
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %d %s", req.Method, req.URL, resp.StatusCode, b)
	}
	return nil
}

var (
	idKey  = []byte(`{"deliveryId":"`)
	seqKey = []byte(`,"sequence":`)
)

// pull pulls once, checks the sequence numbers and builds the batch ACK of
// every event into a; it returns how many came.
func (c *pullClient) pull(a *ackBuf) (int, error) {
	req, _ := http.NewRequest(http.MethodGet, c.pullURL, nil)
	if err := c.do(req, &c.body); err != nil {
		return 0, err
	}
	body := c.body
	a.body = append(a.body[:0], `{"deliveryIds":[`...)
	k := 0
	for i := 0; ; k++ {
		j := bytes.Index(body[i:], idKey)
		if j < 0 {
			break
		}
		i += j + len(idKey)
		end := bytes.IndexByte(body[i:], '"')
		s := bytes.Index(body[i:], seqKey)
		if end < 0 || s < 0 {
			return 0, fmt.Errorf("event %d: no id or sequence in %.200q", k, body[i:])
		}
		if k > 0 {
			a.body = append(a.body, ',')
		}
		a.body = append(a.body, '"')
		a.body = append(a.body, body[i:i+end]...)
		a.body = append(a.body, '"')
		i += s + len(seqKey)
		var seq uint64
		for ; i < len(body) && body[i] >= '0' && body[i] <= '9'; i++ {
			seq = seq*10 + uint64(body[i]-'0')
		}
		if seq != c.next {
			return 0, fmt.Errorf("event %d has sequence %d, want %d", k, seq, c.next)
		}
		c.next++
	}
	a.body = append(a.body, "]}"...)
	a.n = k
	return k, nil
}

// ack sends a's batch ACK and checks that every id was acknowledged.
func (c *pullClient) ack(a *ackBuf) error {
	req, _ := http.NewRequest(http.MethodPost, c.ackURL, bytes.NewReader(a.body))
	if err := c.do(req, &a.resp); err != nil {
		return err
	}
	a.want = append(strconv.AppendInt(append(a.want[:0], `{"acked":`...), int64(a.n), 10), `,"unknown":[]}`+"\n"...)
	if !bytes.Equal(a.resp, a.want) {
		return errors.New("batch ACK answered " + string(a.resp) + ", want " + string(a.want))
	}
	return nil
}

// pullAndAck pulls once and acknowledges what came; it returns how many.
func (c *pullClient) pullAndAck() (int, error) {
	a := &c.acks[0]
	k, err := c.pull(a)
	if err != nil || k == 0 {
		return 0, err
	}
	return k, c.ack(a)
}

// pipelined drains n lines, sending the ACK of each batch on a second
// connection while it pulls the next one (at most one ACK in flight).
func (c *pullClient) pipelined(n int) error {
	done := make(chan error, 1)
	inFlight := false
	wait := func() error {
		if !inFlight {
			return nil
		}
		inFlight = false
		return <-done
	}
	for got, cur := 0, 0; got < n; {
		a := &c.acks[cur]
		k, err := c.pull(a)
		if werr := wait(); err == nil {
			err = werr
		}
		if err != nil {
			return err
		}
		if k == 0 {
			continue
		}
		got += k
		go func() { done <- c.ack(a) }()
		inFlight = true
		cur ^= 1
	}
	return wait()
}
