//go:build linux

package status

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"
)

// The cap stays below what the descriptor limit leaves (review D8): with
// 200 descriptors, a maxConnections of 1000 is capped at 136.
func TestConnCapFollowsDescriptorLimit(t *testing.T) {
	restore := setFDLimit(t, 200)
	defer restore()
	l := newConnLimit(1000, nil)
	l.mu.Lock()
	got := l.effective()
	l.mu.Unlock()
	if got != 136 {
		t.Fatalf("effective cap %d with 200 descriptors and maxConnections 1000, want 136", got)
	}
}

// When accept fails for want of descriptors (the daemon's own files took
// them), an idle connection is closed and the newcomer accepted (review
// D8): before, the server retried accept with a backoff while idle
// keep-alive connections kept every descriptor.
func TestAcceptOutOfDescriptorsEvictsIdle(t *testing.T) {
	restore := setFDLimit(t, 256)
	defer restore()
	base := serve(t, ServerConfig{MaxConnections: 1000, Report: func() Report { return Report{Feeds: []FeedReport{}} }})
	addr := base[len("http://"):]
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for range 10 { // idle keep-alive connections, answered once
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
		io.WriteString(c, "GET /livez HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	var hog []*os.File // the daemon's own files, standing in: every descriptor but one
	defer func() {
		for _, f := range hog {
			f.Close()
		}
	}()
	for {
		f, err := os.Open(os.DevNull)
		if err != nil {
			break
		}
		hog = append(hog, f)
	}
	hog[len(hog)-1].Close()
	hog = hog[:len(hog)-1]
	c, err := net.DialTimeout("tcp", addr, 2*time.Second) // takes the last descriptor
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("/healthz with no descriptor left for accept and 10 idle connections: %v", err)
	}
	resp.Body.Close()
}

func setFDLimit(t *testing.T, n uint64) func() {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	lim := syscall.Rlimit{Cur: n, Max: old.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	return func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) }
}
