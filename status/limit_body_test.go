package status

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A request whose announced body never comes cannot hold a slot (review
// D7): the first version's server drained the body before it answered, so
// the connection stayed StateActive for ReadTimeout (30 s), connLimit never
// evicts an active one, and maxConnections such connections (reopened
// every 30 s) kept /healthz unreachable. Now the answer comes at once with
// "Connection: close".
func TestPendingBodyCannotStarveHealthz(t *testing.T) {
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

// A 401 to a request whose body never comes is sent at once and the
// connection closed: a client without the token cannot hold a slot for
// ReadTimeout by announcing a body.
func TestUnauthorizedPendingBodyAnsweredAtOnce(t *testing.T) {
	base := serve(t, ServerConfig{Token: "tok", Report: func() Report { return Report{Feeds: []FeedReport{}} }})
	c, err := net.Dial("tcp", base[len("http://"):])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "POST /admin/x HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer within 2 s to a request whose body never comes: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !resp.Close {
		t.Fatalf("status %d, close %v; want 401 and Connection: close", resp.StatusCode, resp.Close)
	}
}

// The body's shorter read deadline ends with the body: a handler that
// runs on after reading its body keeps its request context (the server's
// read past the body would otherwise cancel it at the body's deadline).
func TestBodyDeadlineEndsWithTheBody(t *testing.T) {
	old := bodyReadTimeout
	bodyReadTimeout = 100 * time.Millisecond
	defer func() { bodyReadTimeout = old }()
	base := serve(t, ServerConfig{Report: func() Report { return Report{Feeds: []FeedReport{}} }, Routes: map[string]Route{
		"/admin/slow": {Methods: []string{"POST"}, Protected: true, Handler: func(w http.ResponseWriter, r *http.Request) {
			var v map[string]any
			if !DecodeBody(w, r, &v) {
				return
			}
			select {
			case <-r.Context().Done():
				WriteError(w, http.StatusInternalServerError, "context ended: "+r.Context().Err().Error())
			case <-time.After(500 * time.Millisecond):
				WriteJSON(w, http.StatusOK, map[string]string{"ok": "yes"})
			}
		}},
	}})
	resp, err := http.Post(base+"/admin/slow", "application/json", strings.NewReader(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("a handler running 500 ms past its body (body deadline 100 ms): %d %s", resp.StatusCode, b)
	}
}

// A large body the handler does not read (a PUT of 2 MiB answered 405) is
// left to net/http, which answers, stops reading and lingers before it
// closes: the client gets its answer, never a reset while it writes (the
// first form of the Connection: close above made 4 in 30 such requests
// fail with "connection reset by peer").
func TestLargeUnreadBodyGetsItsAnswer(t *testing.T) {
	ok := func(w http.ResponseWriter, r *http.Request) { WriteJSON(w, 200, map[string]string{"ok": "yes"}) }
	base := serve(t, ServerConfig{Report: func() Report { return Report{Feeds: []FeedReport{}} }, Routes: map[string]Route{
		"/v1/ack": {Methods: []string{"POST"}, Handler: ok}}})
	huge := bytes.Repeat([]byte(" "), 2<<20)
	for i := range 40 {
		req, _ := http.NewRequest("PUT", base+"/v1/ack", bytes.NewReader(huge))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("request %d: PUT of 2 MiB to a POST route: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Fatalf("request %d: %d, want 405", i, resp.StatusCode)
		}
	}
}
