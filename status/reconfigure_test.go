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

// A reload's status.token, protectRead and maxConnections apply to the
// running server (DESIGN §12 "Reload": the difference is applied without
// a restart): the next request is checked against the new token and
// protectRead, and the next connection past the new cap makes room.
func TestReconfigure(t *testing.T) {
	ok := func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(ServerConfig{
		Token:  "old",
		Report: func() Report { return Report{Feeds: []FeedReport{}} },
		Routes: map[string]Route{
			"/admin/x": {Methods: []string{"GET"}, Protected: true, Handler: ok},
			"/metrics": {Methods: []string{"GET"}, ReadOnly: true, Handler: ok},
		},
	})
	go Serve(srv, ln)
	t.Cleanup(func() { srv.Close() })
	base := "http://" + ln.Addr().String()
	get := func(p, token string) int {
		t.Helper()
		req, _ := http.NewRequest("GET", base+p, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	check := func(when string, want map[[2]string]int) {
		t.Helper()
		for k, code := range want {
			if got := get(k[0], k[1]); got != code {
				t.Errorf("%s: GET %s with token %q: %d, want %d", when, k[0], k[1], got, code)
			}
		}
	}
	check("as built", map[[2]string]int{
		{"/admin/x", "old"}: 200, {"/admin/x", "new"}: 401, {"/feed.status", ""}: 200, {"/metrics", ""}: 200,
	})
	if !Reconfigure(srv, "new", true, 0) {
		t.Fatal("Reconfigure: not a server NewServer built")
	}
	check("after token new, protectRead", map[[2]string]int{
		{"/admin/x", "old"}: 401, {"/admin/x", "new"}: 200, {"/feed.status", ""}: 401, {"/feed.status", "new"}: 200,
		{"/metrics", ""}: 401, {"/nowhere", ""}: 401, {"/healthz", ""}: 200, {"/x/../feed.status", ""}: 401,
	})
	Reconfigure(srv, "", false, 0)
	check("after no token", map[[2]string]int{{"/admin/x", ""}: 200, {"/feed.status", ""}: 200})

	// maxConnections 8: of 20 idle keep-alive connections, at most 8 stay.
	Reconfigure(srv, "", false, 8)
	var idle []net.Conn
	for range 20 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("connection %d: %v", len(idle), err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		idle = append(idle, c)
	}
	open := 0
	for _, c := range idle {
		c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); errors.Is(err, os.ErrDeadlineExceeded) {
			open++
		}
	}
	if open > 8 {
		t.Errorf("%d of 20 idle connections open after Reconfigure to maxConnections 8, want at most 8", open)
	}
	if Reconfigure(&http.Server{}, "x", false, 0) {
		t.Error("Reconfigure of a server NewServer did not build: true")
	}
}
