package status

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// REVIEW: a client without the token holds a slot for ReadTimeout (30 s)
// with one open-endpoint request whose announced body never comes: the
// server drains the body before it answers, the connection stays
// StateActive, and connLimit never evicts an active one. maxConnections
// such connections (reopened every 30 s) keep /healthz unreachable: the
// cap turns a few hundred sockets into a denial of service.
func TestRevPendingBodyCannotStarveHealthz(t *testing.T) {
	base := serve(t, ServerConfig{MaxConnections: 4, Report: func() Report { return Report{Feeds: []FeedReport{}} }})
	addr := base[len("http://"):]
	for range 4 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n") // the 10 bytes never come
	}
	time.Sleep(200 * time.Millisecond) // headers read: StateActive
	client := &http.Client{Timeout: 3 * time.Second}
	resp, err := client.Get(base + "/healthz")
	if err != nil {
		t.Fatalf("/healthz behind 4 connections waiting for a body (maxConnections 4): %v", err)
	}
	resp.Body.Close()
}
