package tlsconfig

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"tailfeed/internal/tlsconfig/tlstest"
)

// serve accepts TLS connections on 127.0.0.1 with cfg and completes their
// handshakes; it returns the address.
func serve(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tl := tls.NewListener(ln, cfg)
	t.Cleanup(func() { tl.Close() })
	go func() {
		for {
			c, err := tl.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if c.(*tls.Conn).Handshake() == nil {
					c.Read(make([]byte, 1)) // until the client closes
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// dial handshakes with addr trusting pemCA; it returns the handshake error.
func dial(addr string, pemCA []byte, cert *tls.Certificate) error {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pemCA)
	cfg := &tls.Config{RootCAs: roots}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return err
	}
	c.Close()
	return nil
}

type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A server certificate rewritten in place is served from the next
// handshake; files that do not load (a certificate that does not match
// its key) keep the previous one in use, with one WARN however many
// handshakes see them; Reload reports that error.
func TestServerReloadsChangedFiles(t *testing.T) {
	dir := t.TempDir()
	ca1, ca2 := tlstest.NewCA(t, "one"), tlstest.NewCA(t, "two")
	c1, k1 := ca1.Issue(t, "s1")
	crt, key := tlstest.Write(t, dir, "s.crt", c1), tlstest.Write(t, dir, "s.key", k1)
	var logs logBuf
	s, err := NewServer(crt, key, "", hclog.New(&hclog.LoggerOptions{Output: &logs}))
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, s.Config())
	if err := dial(addr, ca1.PEM, nil); err != nil {
		t.Fatalf("first certificate: %v", err)
	}
	c2, k2 := ca2.Issue(t, "s2")
	os.WriteFile(key, k2, 0o600)
	os.WriteFile(crt, c2, 0o600)
	if err := dial(addr, ca2.PEM, nil); err != nil {
		t.Fatalf("after the rewrite, the new CA: %v", err)
	}
	var unknown x509.UnknownAuthorityError
	if err := dial(addr, ca1.PEM, nil); !errors.As(err, &unknown) {
		t.Fatalf("after the rewrite, the old CA: %v; want unknown authority", err)
	}
	// A certificate whose key is not (yet) the one on disk.
	c3, _ := ca1.Issue(t, "s3")
	os.WriteFile(crt, c3, 0o600)
	for range 3 {
		if err := dial(addr, ca2.PEM, nil); err != nil {
			t.Fatalf("with files that do not load, the previous certificate: %v", err)
		}
	}
	if n := strings.Count(logs.String(), "do not load"); n != 1 {
		t.Errorf("%d WARNs about the bad files; want 1:\n%s", n, logs.String())
	}
	if err := s.Reload(); err == nil {
		t.Errorf("Reload of a mismatched pair: no error")
	}
	if err := dial(addr, ca2.PEM, nil); err != nil {
		t.Fatalf("after a failed Reload, the previous certificate: %v", err)
	}
}

// With a client CA, a client certificate another CA signed fails the
// handshake; none at all passes it (the HTTP layer refuses it per route).
func TestServerClientCA(t *testing.T) {
	dir := t.TempDir()
	ca, clients, other := tlstest.NewCA(t, "ca"), tlstest.NewCA(t, "clients"), tlstest.NewCA(t, "other")
	crt, key, _ := ca.Files(t, dir, "server")
	cca := tlstest.Write(t, dir, "clients.crt", clients.PEM)
	s, err := NewServer(crt, key, cca, nil)
	if err != nil || !s.RequireClientCert() {
		t.Fatalf("NewServer: %v", err)
	}
	addr := serve(t, s.Config())
	pair := func(ca *tlstest.CA) *tls.Certificate {
		c, k := ca.Issue(t, "client")
		p, err := tls.X509KeyPair(c, k)
		if err != nil {
			t.Fatal(err)
		}
		return &p
	}
	if err := dial(addr, ca.PEM, pair(clients)); err != nil {
		t.Errorf("client CA's certificate: %v", err)
	}
	if err := dial(addr, ca.PEM, nil); err != nil {
		t.Errorf("no certificate: %v (the handshake passes; routes decide)", err)
	}
	// TLS 1.3 reports the refusal on the first read.
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	// GetClientCertificate sends it whatever CAs the server names (as
	// `tailfeed status --cert` does).
	bad := pair(other)
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return bad, nil }})
	if err == nil {
		_, err = c.Read(make([]byte, 1))
		c.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "remote error: tls:") {
		t.Errorf("another CA's client certificate: %v; want a TLS alert", err)
	}
}

// Client verifies the server against caFile: another CA's certificate is
// an unknown authority (never skipped) unless InsecureSkipVerify.
func TestClient(t *testing.T) {
	dir := t.TempDir()
	ca, other := tlstest.NewCA(t, "ca"), tlstest.NewCA(t, "other")
	crt, key, caFile := ca.Files(t, dir, "server")
	s, err := NewServer(crt, key, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, s.Config())
	try := func(f Files) error {
		cfg, err := Client(f, nil)
		if err != nil {
			t.Fatalf("Client(%+v): %v", f, err)
		}
		c, err := tls.Dial("tcp", addr, cfg)
		if err == nil {
			c.Close()
		}
		return err
	}
	if err := try(Files{CAFile: caFile}); err != nil {
		t.Errorf("right CA: %v", err)
	}
	otherFile := tlstest.Write(t, dir, "other.crt", other.PEM)
	var unknown x509.UnknownAuthorityError
	if err := try(Files{CAFile: otherFile}); !errors.As(err, &unknown) {
		t.Errorf("wrong CA: %v; want unknown authority", err)
	}
	if err := try(Files{CAFile: otherFile, InsecureSkipVerify: true}); err != nil {
		t.Errorf("insecureSkipVerify: %v", err)
	}
	for _, f := range []Files{
		{CAFile: filepath.Join(dir, "missing.crt")},
		{CAFile: crt + "x"},
		{CertFile: crt},
		{CertFile: crt, KeyFile: caFile},
	} {
		if _, err := Client(f, nil); err == nil {
			t.Errorf("Client(%+v): no error", f)
		}
	}
	if _, err := Client(Files{CAFile: key}, nil); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("a key as CA file: %v", err)
	}
}

// A client certificate rewritten on disk is presented from the next
// handshake, without building the client again.
func TestClientCertificateReloads(t *testing.T) {
	dir := t.TempDir()
	ca, clients, other := tlstest.NewCA(t, "ca"), tlstest.NewCA(t, "clients"), tlstest.NewCA(t, "other")
	crt, key, caFile := ca.Files(t, dir, "server")
	s, err := NewServer(crt, key, tlstest.Write(t, dir, "clients.crt", clients.PEM), nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, s.Config())
	c, k := other.Issue(t, "me")
	ccrt, ckey := tlstest.Write(t, dir, "me.crt", c), tlstest.Write(t, dir, "me.key", k)
	cfg, err := Client(Files{CAFile: caFile, CertFile: ccrt, KeyFile: ckey}, nil)
	if err != nil {
		t.Fatal(err)
	}
	try := func() error {
		conn, err := tls.Dial("tcp", addr, cfg)
		if err == nil {
			// TLS 1.3: a refusal shows on the first read; a timeout
			// means the server took the certificate and waits.
			conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
			_, err = conn.Read(make([]byte, 1))
			conn.Close()
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil
		}
		return err
	}
	if err := try(); err == nil || !strings.Contains(err.Error(), "remote error: tls:") {
		t.Fatalf("another CA's certificate: %v; want refused", err)
	}
	c, k = clients.Issue(t, "me")
	os.WriteFile(ckey, k, 0o600)
	os.WriteFile(ccrt, c, 0o600)
	if err := try(); err != nil {
		t.Fatalf("after the rewrite: %v", err)
	}
}

// A reload that names other files (DESIGN §12: "Certificate files are
// re-read on reload"): Stage loads them without serving them (a pair that
// does not load is an error, the files in use stay); Use serves them from
// the next handshake, and they are then re-read when they change on disk,
// as the files they replaced were; the old files no longer matter.
func TestServerStageAndUseOtherFiles(t *testing.T) {
	dir := t.TempDir()
	ca1, ca2, ca3 := tlstest.NewCA(t, "one"), tlstest.NewCA(t, "two"), tlstest.NewCA(t, "three")
	crt1, key1, _ := ca1.Files(t, dir, "s1")
	c2, k2 := ca2.Issue(t, "s2")
	crt2, key2 := tlstest.Write(t, dir, "s2.crt", c2), tlstest.Write(t, dir, "s2.key", k2)
	s, err := NewServer(crt1, key1, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, s.Config())
	// A mismatched pair (s1's certificate, s2's key) does not stage.
	if _, err := s.Stage(crt1, key2, ""); err == nil {
		t.Fatal("Stage of a mismatched pair: no error")
	}
	if _, err := s.Stage(crt2, key2, filepath.Join(dir, "missing-ca.crt")); err == nil {
		t.Fatal("Stage with a missing clientCAFile: no error")
	}
	st, err := s.Stage(crt2, key2, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := dial(addr, ca1.PEM, nil); err != nil {
		t.Fatalf("staged, not used: the first certificate: %v", err)
	}
	s.Use(st)
	if err := dial(addr, ca2.PEM, nil); err != nil {
		t.Fatalf("after Use, the staged certificate: %v", err)
	}
	// The old files changing no longer matters; the new ones are watched.
	os.Remove(crt1)
	c3, k3 := ca3.Issue(t, "s3")
	os.WriteFile(key2, k3, 0o600)
	os.WriteFile(crt2, c3, 0o600)
	if err := dial(addr, ca3.PEM, nil); err != nil {
		t.Fatalf("after a rewrite of the used files, their new certificate: %v", err)
	}
	if err := s.Reload(); err != nil {
		t.Fatalf("Reload of the used files: %v", err)
	}
	// A client CA staged in: RequireClientCert follows.
	cca := tlstest.Write(t, dir, "clients.crt", tlstest.NewCA(t, "clients").PEM)
	st, err = s.Stage(crt2, key2, cca)
	if err != nil {
		t.Fatal(err)
	}
	if s.RequireClientCert() {
		t.Fatal("staged, not used: RequireClientCert already true")
	}
	s.Use(st)
	if !s.RequireClientCert() {
		t.Fatal("after Use of a clientCAFile: RequireClientCert false")
	}
}

// handshake makes one connection to a server with cfg over a pipe and
// returns the server's view of it.
func handshake(t *testing.T, cfg *tls.Config, cert *tls.Certificate) *tls.ConnectionState {
	t.Helper()
	sc, cc := net.Pipe()
	defer sc.Close()
	defer cc.Close()
	ccfg := &tls.Config{InsecureSkipVerify: true} // the server side is under test
	if cert != nil {
		ccfg.Certificates = []tls.Certificate{*cert}
	}
	errc := make(chan error, 1)
	go func() { errc <- tls.Client(cc, ccfg).Handshake() }()
	srv := tls.Server(sc, cfg)
	if err := srv.Handshake(); err != nil {
		t.Fatalf("handshake: %v", err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("client handshake: %v", err)
	}
	cs := srv.ConnectionState()
	return &cs
}

// ClientVerified checks a connection's client certificate against the
// client CA in use now, not the one its handshake used: after the CA file
// is rewritten on disk with another CA, or a reload names another file
// (Stage, Use), a certificate the old CA signed no longer passes on a
// connection made before; one the current CA signed does.
func TestServerClientVerifiedAfterCAChange(t *testing.T) {
	dir := t.TempDir()
	ca, a, b := tlstest.NewCA(t, "ca"), tlstest.NewCA(t, "a"), tlstest.NewCA(t, "b")
	crt, key, _ := ca.Files(t, dir, "server")
	caFile := tlstest.Write(t, dir, "clients.crt", a.PEM)
	s, err := NewServer(crt, key, caFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	pair := func(ca *tlstest.CA) *tls.Certificate {
		c, k := ca.Issue(t, "client")
		p, err := tls.X509KeyPair(c, k)
		if err != nil {
			t.Fatal(err)
		}
		return &p
	}
	conn := handshake(t, s.Config(), pair(a))
	if !s.ClientVerified(conn) {
		t.Fatal("the a-signed certificate under CA a: refused")
	}
	if s.ClientVerified(handshake(t, s.Config(), nil)) || s.ClientVerified(nil) {
		t.Fatal("a connection without a client certificate: accepted")
	}
	// The CA file rewritten on disk (a later modification time).
	os.WriteFile(caFile, b.PEM, 0o600)
	os.Chtimes(caFile, time.Now().Add(time.Second), time.Now().Add(time.Second))
	if s.ClientVerified(conn) {
		t.Error("after the CA file was rewritten with CA b, the a-signed certificate's connection: still accepted")
	}
	bconn := handshake(t, s.Config(), pair(b))
	if !s.ClientVerified(bconn) {
		t.Error("the b-signed certificate under CA b: refused")
	}
	// A reload naming another file that holds a and b.
	st, err := s.Stage(crt, key, tlstest.Write(t, dir, "both.crt", append(append([]byte(nil), a.PEM...), b.PEM...)))
	if err != nil {
		t.Fatal(err)
	}
	s.Use(st)
	if !s.ClientVerified(conn) || !s.ClientVerified(bconn) {
		t.Error("after a reload to a file holding CA a and CA b: a certificate of one refused")
	}
	st, err = s.Stage(crt, key, tlstest.Write(t, dir, "a.crt", a.PEM))
	if err != nil {
		t.Fatal(err)
	}
	s.Use(st)
	if !s.ClientVerified(conn) || s.ClientVerified(bconn) {
		t.Errorf("after a reload to CA a: a-signed %v, b-signed %v; want true, false", s.ClientVerified(conn), s.ClientVerified(bconn))
	}
}
