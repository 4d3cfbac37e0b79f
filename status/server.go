package status

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"path"
	"reflect"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"tailfeed/internal/tlsconfig"
)

// MaxBody is the largest request body accepted (413 beyond).
const MaxBody = 1 << 20

// ServerConfig configures the HTTP server.
type ServerConfig struct {
	Token       string
	ProtectRead bool
	Report      func() Report
	// ReportFiles, when set, answers GET /feed.status?files=1 (a glob
	// feed's files listed, DESIGN §10).
	ReportFiles func() Report
	Health      func() (ok bool, reason string)
	// Ready answers /readyz (DESIGN §12 "Health"); nil: always ready.
	Ready  func() (ok bool, reason string)
	Logger hclog.Logger
	// MaxConnections caps the open connections (0: DefaultMaxConnections);
	// past it, idle ones make room (see connLimit).
	MaxConnections int
	// Routes adds endpoints (pull, ack, state, admin, metrics): pattern →
	// handler. Patterns use net/http's method-less form with {wildcards};
	// handlers check methods with Allow.
	Routes map[string]Route
	// TLS serves HTTPS (status.tls; nil: plain HTTP). When it requires
	// client certificates, every request but the probes (/livez, /readyz,
	// /healthz) needs one its CA signed, checked before the token.
	TLS *tlsconfig.Server
}

// Route is an extra endpoint.
type Route struct {
	Methods   []string // allowed methods (405 otherwise)
	Protected bool     // needs the token when one is set
	ReadOnly  bool     // needs the token only with protectRead
	Handler   http.HandlerFunc
}

// NewServer builds the HTTP server with its timeouts.
func NewServer(cfg ServerConfig) *http.Server {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	mux := http.NewServeMux()
	s := &server{cfg: cfg}
	s.access.Store(&access{token: cfg.Token, protectRead: cfg.ProtectRead})
	routes := map[string]Route{
		"/feed.status": {Methods: []string{http.MethodGet, http.MethodHead}, ReadOnly: true, Handler: s.status},
		"/healthz":     {Methods: []string{http.MethodGet, http.MethodHead}, Handler: s.healthz},
		"/livez":       {Methods: []string{http.MethodGet, http.MethodHead}, Handler: s.livez},
		"/readyz":      {Methods: []string{http.MethodGet, http.MethodHead}, Handler: s.readyz},
	}
	for p, r := range cfg.Routes {
		routes[p] = r
	}
	for p, r := range routes {
		mux.Handle(p, s.wrap(r))
	}
	s.mux, s.routes = mux, routes
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		// The token comes before the route: an unknown path under a
		// protected prefix answers 401 to a caller without the token.
		a := s.access.Load()
		protected := a.protectRead || strings.HasPrefix(r.URL.Path, "/admin/") || strings.HasPrefix(r.URL.Path, "/v1/")
		if protected && a.token != "" && !a.authorized(r) {
			WriteError(w, http.StatusUnauthorized, "missing or wrong bearer token")
			return
		}
		WriteError(w, http.StatusNotFound, "no such endpoint: "+r.URL.Path)
	})
	limit := newConnLimit(cfg.MaxConnections, cfg.Logger)
	s.limit = limit
	srv := &http.Server{
		Handler:   s.gate(mux),
		ConnState: limit.hook,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		},
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second, // long polls wait up to 30 s
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	if cfg.TLS != nil {
		srv.TLSConfig = cfg.TLS.Config()
		// net/http reports each failed handshake (a client with a wrong
		// CA, a port scan): in the daemon's log format, at DEBUG.
		srv.ErrorLog = log.New(serverLog{cfg.Logger}, "", 0)
	}
	servers.Store(srv, s)
	return srv
}

// Reconfigure applies a reload's status.token, status.protectRead and
// status.maxConnections to a server NewServer built, while it serves
// (DESIGN §12 "Reload": no restart): each request from then on is checked
// against the new token and protectRead; the cap applies from the next
// connection (one past it makes room as usual). False: srv is not one of
// NewServer's.
func Reconfigure(srv *http.Server, token string, protectRead bool, maxConnections int) bool {
	v, ok := servers.Load(srv)
	if !ok {
		return false
	}
	s := v.(*server)
	s.access.Store(&access{token: token, protectRead: protectRead})
	s.limit.setMax(maxConnections)
	return true
}

// serverLog is net/http's error log through the daemon's logger: a TLS
// handshake error at DEBUG, anything else at WARN.
type serverLog struct{ l hclog.Logger }

func (s serverLog) Write(p []byte) (int, error) {
	msg := strings.TrimSpace(string(p))
	if strings.Contains(msg, "TLS handshake error") {
		s.l.Debug(msg)
	} else {
		s.l.Warn(msg)
	}
	return len(p), nil
}

type server struct {
	cfg    ServerConfig // its Token and ProtectRead as built: access holds those in use
	access atomic.Pointer[access]
	mux    *http.ServeMux
	routes map[string]Route
	limit  *connLimit
}

// access is what a request is checked against: the token ("": none) and
// protectRead, replaced whole by Reconfigure.
type access struct {
	token       string
	protectRead bool
}

// connKey keys the request context's net.Conn (for the connection cap).
type connKey struct{}

// gate checks the token on the path as the client sent it, before the
// mux, which answers a path with "..", "." or "//" segments with a
// redirect to its cleaned form: such a path needs the token when the path
// it names, raw or cleaned, does (DESIGN §12: no redirect, no 404, before
// the token check).
func (s *server) gate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength < 0 || (r.ContentLength > 0 && r.ContentLength < drainMax) {
			cw := watchBody(w, r, s.limit)
			defer cw.check()
			w = cw
		}
		if s.cfg.TLS != nil && s.cfg.TLS.RequireClientCert() && !probePath(r) && !s.cfg.TLS.ClientVerified(r.TLS) {
			if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
				// Verified at the handshake by a client CA no longer in
				// use: end the connection, the next handshake decides.
				w.Header().Set("Connection", "close")
			}
			WriteError(w, http.StatusUnauthorized, "a client certificate signed by status.tls.clientCAFile is required (only /livez, /readyz and /healthz answer without one)")
			return
		}
		if a := s.access.Load(); a.token != "" && !a.authorized(r) && s.needsToken(r, a) {
			WriteError(w, http.StatusUnauthorized, "missing or wrong bearer token")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// probePath reports whether r asks for a probe exactly (/livez, /readyz,
// /healthz), as sent and as decoded: a kubelet probes without a client
// certificate. A path that only cleans to a probe is not one.
func probePath(r *http.Request) bool {
	sent, _, _ := strings.Cut(r.RequestURI, "?")
	if sent != r.URL.Path {
		return false
	}
	switch sent {
	case "/livez", "/readyz", "/healthz":
		return true
	}
	return false
}

// needsToken reports whether any form of r's path (as decoded, as sent,
// and each cleaned) names a route that needs the token, or, naming none, a
// path the "/" fallback would answer 401 (under /admin/ or /v1/, or any
// with protectRead).
func (s *server) needsToken(r *http.Request, a *access) bool {
	sent, _, _ := strings.Cut(r.RequestURI, "?")
	if !strings.HasPrefix(sent, "/") {
		sent = r.URL.Path // absolute-form or "*": the parsed path is all there is
	}
	probe, u := *r, *r.URL // shallow: the mux reads the method, host and path
	probe.URL = &u
	seen := make(map[string]bool, 6)
	for _, p := range []string{r.URL.Path, r.URL.EscapedPath(), sent} {
		for _, q := range []string{p, cleanPath(p)} {
			if seen[q] {
				continue
			}
			seen[q] = true
			u.Path, u.RawPath = q, ""
			_, pattern := s.mux.Handler(&probe)
			if rt, ok := s.routes[pattern]; ok {
				if rt.Protected || (rt.ReadOnly && a.protectRead) {
					return true
				}
				continue
			}
			if a.protectRead || strings.HasPrefix(q, "/admin/") || strings.HasPrefix(q, "/v1/") {
				return true
			}
		}
	}
	return false
}

// cleanPath is path.Clean for a URL path, as the mux cleans it.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		np += "/"
	}
	return np
}

// wrap applies the checks in the contract's order: token (401), method
// (405), then the handler (body 413/400).
func (s *server) wrap(rt Route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := s.access.Load()
		needToken := rt.Protected || (rt.ReadOnly && a.protectRead)
		if needToken && a.token != "" && !a.authorized(r) {
			WriteError(w, http.StatusUnauthorized, "missing or wrong bearer token")
			return
		}
		ok := false
		for _, m := range rt.Methods {
			if r.Method == m {
				ok = true
			}
		}
		if !ok {
			w.Header().Set("Allow", strings.Join(rt.Methods, ", "))
			WriteError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed")
			return
		}
		// A body over MaxBody is refused on every route (§7: "Bodies over
		// 1 MiB → 413"), also where the handler reads none: a replay,
		// purge or release with one must not run.
		if r.ContentLength > MaxBody {
			WriteError(w, http.StatusRequestEntityTooLarge, "body over 1 MiB")
			return
		}
		if r.ContentLength < 0 && r.Body != nil && r.Body != http.NoBody && r.Method != http.MethodGet && r.Method != http.MethodHead {
			// Of unknown length (chunked): read as far as the bound, and
			// hand the handler what was read (not for GET or HEAD, whose
			// handlers answer without a body: a chunked body that never
			// comes must not hold /healthz's connection).
			body, err := appendAll(nil, io.LimitReader(r.Body, MaxBody+1))
			if err != nil {
				WriteError(w, http.StatusBadRequest, "reading body: "+err.Error())
				return
			}
			if len(body) > MaxBody {
				WriteError(w, http.StatusRequestEntityTooLarge, "body over 1 MiB")
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
		}
		rt.Handler(w, r)
	})
}

// authorized checks "Authorization: Bearer <token>"; the scheme is
// case-insensitive (RFC 7235 §2.1), the token compared in constant time.
func (a *access) authorized(r *http.Request) bool {
	scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(a.token)) == 1
}

func (s *server) status(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("files") == "1" && s.cfg.ReportFiles != nil {
		WriteJSON(w, http.StatusOK, s.cfg.ReportFiles())
		return
	}
	WriteJSON(w, http.StatusOK, s.cfg.Report())
}

func (s *server) healthz(w http.ResponseWriter, r *http.Request) {
	ok, reason := true, ""
	if s.cfg.Health != nil {
		ok, reason = s.cfg.Health()
	}
	if !ok {
		WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unhealthy", "reason": reason})
		return
	}
	WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// livez answers 200 while the daemon serves (a liveness probe: a restart
// cannot fix a bad path, so a FAILED feed does not make it fail).
func (s *server) livez(w http.ResponseWriter, r *http.Request) {
	WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz answers 200 once every feed has opened its file or is waiting for
// it, and from then on; 503 with the reason before.
func (s *server) readyz(w http.ResponseWriter, r *http.Request) {
	ok, reason := true, ""
	if s.cfg.Ready != nil {
		ok, reason = s.cfg.Ready()
	}
	if !ok {
		WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not ready", "reason": reason})
		return
	}
	WriteJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// WriteJSON writes v as JSON with status code.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.Encode(v)
}

// WriteError writes {"error": msg}.
func WriteError(w http.ResponseWriter, code int, msg string) {
	WriteJSON(w, code, map[string]string{"error": msg})
}

// DecodeBody decodes a JSON request body strictly into v: at most MaxBody
// bytes (413), no unknown fields, no trailing data, not empty (400). It writes
// the error response and returns false on failure.
func DecodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	body, ok := ReadBody(w, r, nil)
	return ok && DecodeJSON(w, body, v)
}

// preallocBody is the most ReadBody allocates before a body's bytes arrive.
const preallocBody = 64 << 10

// ReadBody reads a request body of at most MaxBody bytes (413), not empty
// or blank (400), appending it to buf[:0] (a caller may reuse buffers). It
// reads to the end (see closeUnread), writes the error response and
// returns false on failure.
func ReadBody(w http.ResponseWriter, r *http.Request, buf []byte) ([]byte, bool) {
	// Room for an announced body up to 64 KiB at once (the read that sees
	// the end needs no growth); a larger one grows as its bytes arrive, so
	// a client announcing 1 MiB and sending nothing holds no 1 MiB.
	if n := r.ContentLength; n > 0 && n <= preallocBody && int64(cap(buf)) <= n {
		buf = make([]byte, 0, n+1)
	}
	body, err := appendAll(buf[:0], io.LimitReader(r.Body, MaxBody+1))
	if err != nil {
		WriteError(w, http.StatusBadRequest, "reading body: "+err.Error())
		return body, false
	}
	if len(body) > MaxBody {
		WriteError(w, http.StatusRequestEntityTooLarge, "body over 1 MiB")
		return body, false
	}
	if len(bytes.TrimSpace(body)) == 0 {
		WriteError(w, http.StatusBadRequest, "empty body")
		return body, false
	}
	return body, true
}

// appendAll is io.ReadAll appending to b.
func appendAll(b []byte, r io.Reader) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
	}
}

// DecodeJSON decodes a body ReadBody read strictly into v (DecodeBody's
// rules); it writes the 400 and returns false on failure.
func DecodeJSON(w http.ResponseWriter, body []byte, v any) bool {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		WriteError(w, http.StatusBadRequest, "bad JSON body: "+err.Error())
		return false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		WriteError(w, http.StatusBadRequest, "bad JSON body: trailing data")
		return false
	}
	if err := exactKeys(body, reflect.TypeOf(v)); err != nil {
		WriteError(w, http.StatusBadRequest, "bad JSON body: "+err.Error())
		return false
	}
	return true
}

// exactKeys rejects an object key that names a field of t only when case
// is ignored: encoding/json matches keys case-insensitively, even with
// DisallowUnknownFields, but the contract's field names are exact (DESIGN
// §7: unknown fields → 400) — {"DELIVERYID": …} is not {"deliveryId": …}.
// body has been decoded into t already, so its shape fits t.
func exactKeys(body []byte, t reflect.Type) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		var m map[string]json.RawMessage
		if json.Unmarshal(body, &m) != nil {
			return nil // null
		}
		fields := map[string]reflect.Type{}
		jsonFields(t, fields)
		for k, raw := range m {
			ft, ok := fields[k]
			if !ok {
				return fmt.Errorf("json: unknown field %q", k)
			}
			if err := exactKeys(raw, ft); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		var a []json.RawMessage
		if json.Unmarshal(body, &a) != nil {
			return nil
		}
		for _, raw := range a {
			if err := exactKeys(raw, t.Elem()); err != nil {
				return err
			}
		}
	}
	return nil
}

// jsonFields adds t's JSON field names (embedded structs' fields too) and
// their types to out.
func jsonFields(t reflect.Type, out map[string]reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				jsonFields(ft, out)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
}

// bodyReadTimeout bounds the time a handler waits for a request body
// (DecodeBody's at most MaxBody bytes); the server's ReadTimeout is longer.
var bodyReadTimeout = 10 * time.Second

// closeUnread is the response to a request that announced a body under
// drainMax bytes or of unknown length: sent before the handler read that
// body to its end (a 401, a 405, a GET /healthz with a Content-Length, an
// error halfway), it carries
// "Connection: close", so the server answers at once and closes instead
// of first waiting up to ReadTimeout to drain a body that may never come
// (DESIGN §12: such connections would stay active, which the connection
// cap never evicts, and starve /healthz).
type closeUnread struct {
	http.ResponseWriter
	body  *watchedBody
	sent  bool
	limit *connLimit
	conn  net.Conn
}

type watchedBody struct {
	io.ReadCloser
	eof atomic.Bool
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.eof.Store(true)
	}
	return n, err
}

// watchBody gives the body bodyReadTimeout to come; once it has, the
// server's read past the body (which watches for the client going away)
// starts without a deadline, so a long handler keeps its context.
func watchBody(w http.ResponseWriter, r *http.Request, limit *connLimit) *closeUnread {
	b := &watchedBody{ReadCloser: r.Body}
	r.Body = b
	http.NewResponseController(w).SetReadDeadline(time.Now().Add(bodyReadTimeout))
	c, _ := r.Context().Value(connKey{}).(net.Conn)
	return &closeUnread{ResponseWriter: w, body: b, limit: limit, conn: c}
}

func (w *closeUnread) check() {
	if !w.sent {
		w.sent = true
		if !w.body.eof.Load() {
			w.Header().Set("Connection", "close")
			if w.limit != nil && w.conn != nil {
				w.limit.closing(w.conn) // answered; the server lingers before it closes
			}
		}
	}
}

func (w *closeUnread) WriteHeader(code int) {
	w.check()
	w.ResponseWriter.WriteHeader(code)
}

func (w *closeUnread) Write(p []byte) (int, error) {
	w.check()
	return w.ResponseWriter.Write(p)
}

// Flush lets a handler stream through the wrapper.
func (w *closeUnread) Flush() {
	w.check()
	http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap gives http.ResponseController the server's writer.
func (w *closeUnread) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// drainMax is net/http's maxPostHandlerReadBytes: an unread body this
// large or larger is not drained (the server closes the connection after
// its answer by itself); a smaller one, or one of unknown length, would
// be waited for.
const drainMax = 256 << 10
