package status

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"
)

// Idle keep-alive connections cannot hold the server past maxConnections:
// the longest idle ones are closed to admit new clients, and /healthz
// answers (DESIGN §12).
func TestIdleConnectionsGiveWay(t *testing.T) {
	base := serve(t, ServerConfig{MaxConnections: 8, Report: func() Report { return Report{Feeds: []FeedReport{}} }})
	addr := base[len("http://"):]
	var idle []net.Conn
	for range 30 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("connection %d: %v", len(idle), err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		idle = append(idle, c) // kept open, idle between requests
	}
	client := &http.Client{Timeout: 3 * time.Second}
	resp, err := client.Get(base + "/healthz")
	if err != nil {
		t.Fatalf("/healthz behind 30 idle connections: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/healthz: %d", resp.StatusCode)
	}
	open := 0
	for _, c := range idle {
		c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		_, err := c.Read(make([]byte, 1))
		if errors.Is(err, os.ErrDeadlineExceeded) {
			open++ // still held by the server
		}
	}
	if open > 8 {
		t.Fatalf("%d of 30 idle connections still open, want at most maxConnections 8", open)
	}
	t.Logf("%d of 30 idle connections still open", open)
}
