// Package natstest runs a real NATS server with JetStream inside a test
// process (github.com/nats-io/nats-server/v2) on 127.0.0.1, a free port and
// a store under t.TempDir(), optionally with TLS from a CA the test makes
// and a token. Tests only.
package natstest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
)

// Server is one embedded server; Stop and Start keep its port and store.
type Server struct {
	t    testing.TB
	opts server.Options
	srv  *server.Server
	// CAFile is the PEM CA that signed the server's certificate (TLS only).
	CAFile string
	// CredsFile is a user's credentials file (Creds only).
	CredsFile string
}

// Options tune a server.
type Options struct {
	TLS        bool   // serve TLS only, with a certificate for 127.0.0.1 from a fresh CA
	Token      string // require this token
	MaxPayload int32  // 0: the default (1 MiB)
	// Creds runs the server in operator mode (JWT): one account with
	// JetStream and one user, whose credentials go to CredsFile.
	Creds bool
}

// Start starts a server; the test's cleanup stops it.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	dir := t.TempDir()
	s := &Server{t: t, opts: server.Options{
		Host: "127.0.0.1", Port: freePort(t), JetStream: true, StoreDir: filepath.Join(dir, "js"),
		NoSigs: true, NoLog: true, MaxPayload: o.MaxPayload, Authorization: o.Token,
	}}
	if o.TLS {
		ca, cfg := makeTLS(t, dir)
		s.CAFile = ca
		s.opts.TLS, s.opts.TLSConfig, s.opts.TLSTimeout = true, cfg, 2
	}
	if o.Creds {
		s.CredsFile = makeCreds(t, dir, &s.opts)
	}
	s.Start()
	t.Cleanup(s.Stop)
	return s
}

// makeCreds makes an operator, an account with JetStream and a user; the
// server trusts the operator and knows the account; the user's
// credentials file is returned.
func makeCreds(t testing.TB, dir string, opts *server.Options) string {
	must := func(err error) {
		if err != nil {
			t.Helper()
			t.Fatal(err)
		}
	}
	okp, err := nkeys.CreateOperator()
	must(err)
	opub, _ := okp.PublicKey()
	oc := jwt.NewOperatorClaims(opub)
	skp, err := nkeys.CreateAccount() // the system account JetStream needs
	must(err)
	spub, _ := skp.PublicKey()
	oc.SystemAccount = spub
	_, err = oc.Encode(okp)
	must(err)
	sjwt, err := jwt.NewAccountClaims(spub).Encode(okp)
	must(err)
	akp, err := nkeys.CreateAccount()
	must(err)
	apub, _ := akp.PublicKey()
	ac := jwt.NewAccountClaims(apub)
	ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
	ajwt, err := ac.Encode(okp)
	must(err)
	ukp, err := nkeys.CreateUser()
	must(err)
	upub, _ := ukp.PublicKey()
	ujwt, err := jwt.NewUserClaims(upub).Encode(akp)
	must(err)
	seed, _ := ukp.Seed()
	creds, err := jwt.FormatUserConfig(ujwt, seed)
	must(err)
	path := filepath.Join(dir, "user.creds")
	must(os.WriteFile(path, creds, 0o600))
	r := &server.MemAccResolver{}
	must(r.Store(apub, ajwt))
	must(r.Store(spub, sjwt))
	opts.TrustedOperators = []*jwt.OperatorClaims{oc}
	opts.SystemAccount = spub
	opts.AccountResolver = r
	return path
}

// URL is the client URL (tls:// for a TLS server).
func (s *Server) URL() string {
	scheme := "nats"
	if s.opts.TLS {
		scheme = "tls"
	}
	return fmt.Sprintf("%s://127.0.0.1:%d", scheme, s.opts.Port)
}

// SetToken changes the token the server requires from its next Start.
func (s *Server) SetToken(tok string) { s.opts.Authorization = tok }

// Start (re)starts the server on its port and store.
func (s *Server) Start() {
	s.t.Helper()
	var err error
	for try := 0; try < 10; try++ { // the port may linger a moment after a stop
		opts := s.opts
		s.srv, err = server.NewServer(&opts)
		if err != nil {
			s.t.Fatalf("nats server: %v", err)
		}
		go s.srv.Start()
		if s.srv.ReadyForConnections(5 * time.Second) {
			return
		}
		s.srv.Shutdown()
		time.Sleep(100 * time.Millisecond)
	}
	s.t.Fatalf("nats server on port %d did not start", s.opts.Port)
}

// Stop shuts the server down (its store stays).
func (s *Server) Stop() {
	if s.srv != nil {
		s.srv.Shutdown()
		s.srv.WaitForShutdown()
		s.srv = nil
	}
}

// Connect returns a plain client (closed at cleanup).
func (s *Server) Connect(t testing.TB) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	opts := []nats.Option{nats.Token(s.opts.Authorization)}
	if s.CredsFile != "" {
		opts = []nats.Option{nats.UserCredentials(s.CredsFile)}
	}
	if s.CAFile != "" {
		opts = append(opts, nats.RootCAs(s.CAFile))
	}
	nc, err := nats.Connect(s.URL(), opts...)
	if err != nil {
		t.Fatalf("nats connect: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// Messages reads every message of stream, in sequence order.
func Messages(t testing.TB, js jetstream.JetStream, stream string) []jetstream.RawStreamMsg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatalf("stream %s: %v", stream, err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs == 0 {
		return nil
	}
	c, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	it, err := c.Messages()
	if err != nil {
		t.Fatal(err)
	}
	defer it.Stop()
	var out []jetstream.RawStreamMsg
	for {
		m, err := it.Next()
		if err != nil {
			t.Fatalf("reading stream %s after %d messages: %v", stream, len(out), err)
		}
		md, err := m.Metadata()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, jetstream.RawStreamMsg{Subject: m.Subject(), Sequence: md.Sequence.Stream,
			Header: m.Headers(), Data: append([]byte(nil), m.Data()...)})
		if md.Sequence.Stream >= info.State.LastSeq {
			return out
		}
	}
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// makeTLS writes a fresh CA to dir/ca.pem and returns it with a server
// config holding a certificate for 127.0.0.1 signed by it.
func makeTLS(t testing.TB, dir string) (string, *tls.Config) {
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tailfeed test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return caFile, &tls.Config{MinVersion: tls.VersionTLS12,
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
}
