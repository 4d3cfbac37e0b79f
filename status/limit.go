package status

import (
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// DefaultMaxConnections is status.maxConnections' default.
const DefaultMaxConnections = 256

// connLimit caps the server's open connections (DESIGN §12: idle clients
// must not starve /healthz). It works on http.Server.ConnState, which the
// server calls for a new connection before it serves it: past the cap, a
// connection answered with "Connection: close" (see closeUnread), else the
// connection idle the longest (a keep-alive between requests) is closed to
// make room; if none is idle, the oldest that has not sent a request yet;
// if every other connection is inside a request, the newcomer is closed.
// A client whose idle keep-alive connection was closed opens another, as
// HTTP clients do.
//
// The cap stays below what RLIMIT_NOFILE (read at each new connection)
// leaves after the daemon's own files (a quarter of it, at least 64), so
// accept does not fail with EMFILE first; should it still, the listener
// (Serve) closes one connection the same way and accepts again.
type connLimit struct {
	max     int
	mu      sync.Mutex
	conns   map[net.Conn]*connInfo
	log     hclog.Logger
	clamped int // the last effective cap logged below max
}

type connInfo struct {
	state   http.ConnState
	since   time.Time
	closing bool // answered with "Connection: close": only the server's linger is left
}

func newConnLimit(max int, log hclog.Logger) *connLimit {
	if max <= 0 {
		max = DefaultMaxConnections
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	l := &connLimit{max: max, conns: map[net.Conn]*connInfo{}, log: log}
	l.effective() // a WARN at start when the descriptor limit caps it already
	return l
}

// effective is the cap now: max, or less when the descriptor limit leaves
// less (with a WARN each time that changes). Called with mu held.
func (l *connLimit) effective() int {
	n := l.max
	if cur, ok := fdLimit(); ok {
		reserve := max(64, cur/4)
		if c := max(cur-reserve, 8); c < n {
			n = c
		}
	}
	if n < l.max && n != l.clamped {
		l.log.Warn("status.maxConnections is more than the descriptor limit (ulimit -n) leaves; connections capped lower",
			"maxConnections", l.max, "capped", n)
	}
	l.clamped = n
	return n
}

// setMax changes the cap (0: DefaultMaxConnections), for a reload: the
// connections open now stay; the next one past the cap makes room.
func (l *connLimit) setMax(max int) {
	if max <= 0 {
		max = DefaultMaxConnections
	}
	l.mu.Lock()
	l.max = max
	l.effective()
	l.mu.Unlock()
}

// evictOne closes one connection as pick would for a newcomer (never an
// active one but a closing one); false when there is none.
func (l *connLimit) evictOne() bool {
	l.mu.Lock()
	victim := l.pick(nil)
	if victim != nil {
		delete(l.conns, victim)
	}
	l.mu.Unlock()
	if victim == nil {
		return false
	}
	victim.Close()
	return true
}

// servers maps a server NewServer built to its *server (its connLimit, for
// Serve; its settings, for Reconfigure).
var servers sync.Map

// Serve is srv.Serve(ln) for a server NewServer built, through a listener
// that, when accept fails for want of descriptors (EMFILE, ENFILE), closes
// the connection the cap would close and accepts again.
func Serve(srv *http.Server, ln net.Listener) error {
	if s, ok := servers.Load(srv); ok {
		defer servers.Delete(srv)
		ln = &fdListener{Listener: ln, limit: s.(*server).limit}
	}
	if srv.TLSConfig != nil {
		// HTTP/1.1 over TLS: the server handshakes each connection under
		// its header timeout; the connection cap sees the *tls.Conn.
		ln = tls.NewListener(ln, srv.TLSConfig)
	}
	return srv.Serve(ln)
}

type fdListener struct {
	net.Listener
	limit *connLimit
}

func (ln *fdListener) Accept() (net.Conn, error) {
	for {
		c, err := ln.Listener.Accept()
		if err == nil || !outOfFDs(err) || !ln.limit.evictOne() {
			return c, err // the server retries a temporary error after a pause
		}
	}
}

// hook is the http.Server's ConnState.
func (l *connLimit) hook(c net.Conn, st http.ConnState) {
	var victim net.Conn
	l.mu.Lock()
	switch st {
	case http.StateNew:
		l.conns[c] = &connInfo{state: st, since: time.Now()}
		if len(l.conns) > l.effective() {
			victim = l.pick(c)
			delete(l.conns, victim)
		}
	case http.StateActive, http.StateIdle:
		if ci, ok := l.conns[c]; ok {
			ci.state, ci.since, ci.closing = st, time.Now(), false
		}
	case http.StateHijacked, http.StateClosed:
		delete(l.conns, c)
	}
	l.mu.Unlock()
	if victim != nil {
		victim.Close()
	}
}

// closing marks c as answered with "Connection: close" (a request whose
// announced body was not read): the server only lingers before it closes
// it (up to half a second), so it may make room at once.
func (l *connLimit) closing(c net.Conn) {
	l.mu.Lock()
	if ci, ok := l.conns[c]; ok {
		ci.closing = true
	}
	l.mu.Unlock()
}

// pick chooses the connection to close to admit c: one already answered
// and closing, else the longest idle, else the oldest still without a
// request, else c itself.
func (l *connLimit) pick(c net.Conn) net.Conn {
	var idle, fresh net.Conn
	var idleAt, freshAt time.Time
	for k, ci := range l.conns {
		if k == c {
			continue
		}
		if ci.closing {
			return k
		}
		switch ci.state {
		case http.StateIdle:
			if idle == nil || ci.since.Before(idleAt) {
				idle, idleAt = k, ci.since
			}
		case http.StateNew:
			if fresh == nil || ci.since.Before(freshAt) {
				fresh, freshAt = k, ci.since
			}
		}
	}
	switch {
	case idle != nil:
		return idle
	case fresh != nil:
		return fresh
	}
	return c // nil from evictOne: none to close
}

// open is the number of connections counted now.
func (l *connLimit) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}
