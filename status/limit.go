package status

import (
	"net"
	"net/http"
	"sync"
	"time"
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
type connLimit struct {
	max   int
	mu    sync.Mutex
	conns map[net.Conn]*connInfo
}

type connInfo struct {
	state   http.ConnState
	since   time.Time
	closing bool // answered with "Connection: close": only the server's linger is left
}

func newConnLimit(max int) *connLimit {
	if max <= 0 {
		max = DefaultMaxConnections
	}
	return &connLimit{max: max, conns: map[net.Conn]*connInfo{}}
}

// hook is the http.Server's ConnState.
func (l *connLimit) hook(c net.Conn, st http.ConnState) {
	var victim net.Conn
	l.mu.Lock()
	switch st {
	case http.StateNew:
		l.conns[c] = &connInfo{state: st, since: time.Now()}
		if len(l.conns) > l.max {
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
	return c
}

// open is the number of connections counted now.
func (l *connLimit) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}
