package e2e

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The report (237 idle connections made /healthz unreachable) came
// from a host where the daemon had about 256 descriptors (review D8). With
// the default status.maxConnections 256 the first version's cap was never
// reached there: accept failed with EMFILE first (the daemon's own files,
// pointers and listener use some), the ConnState hook never saw the new
// connection and could not evict an idle one. Now the cap stays below what
// the descriptor limit leaves, read at each connection (the limit is
// lowered here while the daemon runs). The same test as
// TestIdleConnectionsDoNotStarveHealthz, with 256 descriptors.
func TestIdleConnectionsDoNotStarveHealthzAtLowUlimit(t *testing.T) {
	e := newEnv(t, serverConfigTmpl)
	os.WriteFile(e.path("in.log"), nil, 0o644)
	d := e.start()
	lim := unix.Rlimit{Cur: 256, Max: 256}
	if err := unix.Prlimit(d.pid(), unix.RLIMIT_NOFILE, &lim, nil); err != nil {
		t.Fatalf("prlimit: %v", err)
	}
	conns := make([]net.Conn, 0, 300)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 300 {
		c, err := net.Dial("tcp", d.addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	}
	answered := make(chan bool, len(conns))
	for _, c := range conns {
		go func() {
			c.SetReadDeadline(time.Now().Add(3 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			answered <- err == nil
			c.SetReadDeadline(time.Time{})
		}()
	}
	n := 0
	for range conns {
		if <-answered {
			n++
		}
	}
	fresh := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := fresh.Get("http://" + d.addr + "/healthz")
	if err != nil {
		t.Fatalf("/healthz behind %d idle connections (%d answered), 256 descriptors: %v", len(conns), n, err)
	}
	resp.Body.Close()
	t.Logf("%d answered", n)
	d.stop()
}
