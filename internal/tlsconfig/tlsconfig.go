// Package tlsconfig builds the TLS settings tailfeed uses as a client (the
// webhook sink; later the kafka and nats sinks: DESIGN §11 "TLS and
// authentication") and as a server (the HTTP API's status.tls: DESIGN §12
// "TLS for the HTTP API").
//
// Certificate files are re-read when they change on disk: a server
// handshake, and a client's certificate request, stat the files and load
// them again when their identity, size or modification time changed (a
// Kubernetes Secret's symlink swap, a cert-manager rewrite, a renamed-over
// file). A set that does not load (the key not yet written for the new
// certificate, a half-written file) keeps the last good one in use, with a
// WARN once per change; Reload re-reads at once (SIGHUP, POST
// /admin/reload) and returns the error. A reload that names other files
// loads them first (Stage) and puts them in use only once the reload
// succeeded (Use): a set that does not load fails the reload, the old
// set stays.
//
// A client certificate is checked at the handshake and again on every
// request (ClientVerified): a reload or an on-disk change that replaces the
// client CA takes access from a certificate the new CA did not sign at
// once, also on a connection kept alive since before the change.
//
// Decisions where the contract is silent: TLS 1.2 is the minimum; an empty
// caFile uses the system's roots; a client's caFile is read once, when the
// client is built (a rotated CA is picked up by a restart or a reload).
package tlsconfig

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// Files are the TLS files of a client: `tls: {caFile, certFile, keyFile,
// insecureSkipVerify}`.
type Files struct {
	CAFile             string // PEM roots that verify the server ("": the system's)
	CertFile           string // PEM client certificate (with KeyFile), optional
	KeyFile            string
	InsecureSkipVerify bool // the server's certificate is not verified (WARN at start)
}

// Client builds a client configuration. A server certificate that does
// not verify fails the connection (never skipped, unless
// InsecureSkipVerify). The client certificate is re-read when its files
// change.
func Client(f Files, log hclog.Logger) (*tls.Config, error) {
	if (f.CertFile == "") != (f.KeyFile == "") {
		return nil, errors.New("certFile and keyFile go together")
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: f.InsecureSkipVerify}
	if f.CAFile != "" {
		pool, err := LoadPool(f.CAFile)
		if err != nil {
			return nil, err
		}
		c.RootCAs = pool
	}
	if f.CertFile != "" {
		w, err := newKeyPair(f.CertFile, f.KeyFile, log)
		if err != nil {
			return nil, err
		}
		c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return w.current(), nil
		}
	}
	return c, nil
}

// LoadPool reads a PEM file of CA certificates.
func LoadPool(file string) (*x509.CertPool, error) {
	pool, _, err := loadRoots(file)
	return pool, err
}

// loadRoots reads a PEM file of CA certificates: the pool and its
// certificates (the blocks x509.CertPool.AppendCertsFromPEM takes).
func loadRoots(file string) (*x509.CertPool, []*x509.Certificate, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, fmt.Errorf("reading CA file: %w", err)
	}
	pool := x509.NewCertPool()
	var certs []*x509.Certificate
	for len(data) > 0 {
		var b *pem.Block
		if b, data = pem.Decode(data); b == nil {
			break
		}
		if b.Type != "CERTIFICATE" || len(b.Headers) != 0 {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			continue
		}
		pool.AddCert(c)
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, nil, fmt.Errorf("CA file %s holds no PEM certificate", file)
	}
	return pool, certs, nil
}

// Server serves status.tls: a certificate and key, and optionally the CA
// that signs client certificates. Its Config hands every handshake the
// current files' settings.
type Server struct {
	log hclog.Logger

	mu     sync.Mutex
	cfg    *tls.Config         // current
	roots  []*x509.Certificate // cfg.ClientCAs' certificates
	loaded []fs.FileInfo
	failed []fs.FileInfo // the file set that last failed to load (warned once)

	certFile, keyFile, caFile string // under mu: a reload may name others (Use)
}

// NewServer loads the files; an error names what is wrong with them.
func NewServer(certFile, keyFile, clientCAFile string, log hclog.Logger) (*Server, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	s := &Server{certFile: certFile, keyFile: keyFile, caFile: clientCAFile, log: log}
	if err := s.Reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// RequireClientCert reports whether clients must present a certificate
// the client CA signed (the HTTP layer enforces it per route: probes are
// exempt).
func (s *Server) RequireClientCert() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.caFile != ""
}

// Config is the tls.Config to serve with: each handshake gets the current
// files' configuration (re-read first when they changed on disk).
func (s *Server) Config() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return s.current(), nil
		},
	}
}

// fileSet is the files a Server serves with.
type fileSet struct{ cert, key, ca string }

func (f fileSet) list() []string {
	l := []string{f.cert, f.key}
	if f.ca != "" {
		l = append(l, f.ca)
	}
	return l
}

// set is the files in use now.
func (s *Server) set() fileSet {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fileSet{s.certFile, s.keyFile, s.caFile}
}

// Reload reads the files now. On an error the configuration in use stays.
func (s *Server) Reload() error {
	f := s.set()
	infos, _ := statAll(f.list())
	cfg, roots, err := f.load()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		return err
	}
	if f != (fileSet{s.certFile, s.keyFile, s.caFile}) {
		return nil // Use named others meanwhile
	}
	s.cfg, s.roots, s.loaded, s.failed = cfg, roots, infos, nil
	return nil
}

// Staged is a set of files Stage loaded, not in use yet.
type Staged struct {
	files fileSet
	cfg   *tls.Config
	roots []*x509.Certificate
	infos []fs.FileInfo
}

// Stage loads other files (a reload naming them) without using them: an
// error names what is wrong with them, and the files in use stay.
func (s *Server) Stage(certFile, keyFile, clientCAFile string) (*Staged, error) {
	f := fileSet{certFile, keyFile, clientCAFile}
	infos, _ := statAll(f.list())
	cfg, roots, err := f.load()
	if err != nil {
		return nil, err
	}
	return &Staged{files: f, cfg: cfg, roots: roots, infos: infos}, nil
}

// Use serves the staged files from the next handshake on (an open
// connection keeps the server certificate it was made with; its client
// certificate is checked against the new client CA from its next request
// on: ClientVerified); they are re-read when they change on disk, as the
// files they replace were.
func (s *Server) Use(st *Staged) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.certFile, s.keyFile, s.caFile = st.files.cert, st.files.key, st.files.ca
	s.cfg, s.roots, s.loaded, s.failed = st.cfg, st.roots, st.infos, nil
}

func (f fileSet) load() (*tls.Config, []*x509.Certificate, error) {
	cert, err := tls.LoadX509KeyPair(f.cert, f.key)
	if err != nil {
		return nil, nil, fmt.Errorf("certFile %s / keyFile %s: %w", f.cert, f.key, err)
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}, Certificates: []tls.Certificate{cert}}
	var roots []*x509.Certificate
	if f.ca != "" {
		pool, certs, err := loadRoots(f.ca)
		if err != nil {
			return nil, nil, fmt.Errorf("clientCAFile: %w", err)
		}
		c.ClientCAs, roots = pool, certs
		// The certificate is checked when given; routes other than the
		// probes refuse a request without one (status.Server).
		c.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return c, roots, nil
}

// ClientVerified reports whether the connection cs came with a client
// certificate the client CA in use NOW signed (re-read first when its file
// changed on disk, as at a handshake). The handshake verified it against
// the CA in use then; a reload or an on-disk change may have replaced that
// CA since, and a keep-alive connection outlives it. Cheap when the chain
// the handshake verified ends at a certificate of the current CA (a byte
// comparison per CA certificate); otherwise the certificate is verified
// again against the current pool (a CA cross-signed into the new file).
func (s *Server) ClientVerified(cs *tls.ConnectionState) bool {
	if cs == nil || len(cs.VerifiedChains) == 0 || len(cs.PeerCertificates) == 0 {
		return false
	}
	s.current() // re-read the files when they changed on disk
	s.mu.Lock()
	cfg, roots := s.cfg, s.roots
	s.mu.Unlock()
	if cfg.ClientCAs == nil {
		return false
	}
	for _, chain := range cs.VerifiedChains {
		last := chain[len(chain)-1]
		for _, r := range roots {
			if bytes.Equal(last.Raw, r.Raw) {
				return true
			}
		}
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{
		Roots: cfg.ClientCAs, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	return err == nil
}

// current re-reads the files when they changed since the last load (or
// the last failed attempt) and returns the configuration in use.
func (s *Server) current() *tls.Config {
	f := s.set()
	infos, err := statAll(f.list())
	s.mu.Lock()
	if err != nil || sameSet(infos, s.loaded) || sameSet(infos, s.failed) {
		cfg := s.cfg
		s.mu.Unlock()
		return cfg
	}
	s.mu.Unlock()
	cfg, roots, lerr := f.load()
	s.mu.Lock()
	defer s.mu.Unlock()
	if f != (fileSet{s.certFile, s.keyFile, s.caFile}) {
		return s.cfg // Use named others meanwhile
	}
	if lerr != nil {
		if !sameSet(infos, s.failed) {
			s.log.Warn("status.tls: the changed certificate files do not load; serving the previous ones", "error", lerr)
		}
		s.failed = infos
		return s.cfg
	}
	s.cfg, s.roots, s.loaded, s.failed = cfg, roots, infos, nil
	s.log.Info("status.tls: certificate files changed on disk; reloaded", "certFile", s.certFile)
	return cfg
}

// keyPair is a certificate and key re-read when their files change.
type keyPair struct {
	certFile, keyFile string
	log               hclog.Logger

	mu             sync.Mutex
	cert           *tls.Certificate
	loaded, failed []fs.FileInfo
}

func newKeyPair(certFile, keyFile string, log hclog.Logger) (*keyPair, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	k := &keyPair{certFile: certFile, keyFile: keyFile, log: log}
	infos, _ := statAll([]string{certFile, keyFile})
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("certFile %s / keyFile %s: %w", certFile, keyFile, err)
	}
	k.cert, k.loaded = &cert, infos
	return k, nil
}

func (k *keyPair) current() *tls.Certificate {
	infos, err := statAll([]string{k.certFile, k.keyFile})
	k.mu.Lock()
	defer k.mu.Unlock()
	if err != nil || sameSet(infos, k.loaded) || sameSet(infos, k.failed) {
		return k.cert
	}
	cert, lerr := tls.LoadX509KeyPair(k.certFile, k.keyFile)
	if lerr != nil {
		k.log.Warn("tls: the changed client certificate files do not load; using the previous ones", "error", lerr)
		k.failed = infos
		return k.cert
	}
	k.cert, k.loaded, k.failed = &cert, infos, nil
	return k.cert
}

func statAll(files []string) ([]fs.FileInfo, error) {
	out := make([]fs.FileInfo, len(files))
	for i, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			return nil, err
		}
		out[i] = fi
	}
	return out, nil
}

// sameSet reports whether a and b describe the same files unchanged: the
// same identity (device and inode), size and modification time.
func sameSet(a, b []fs.FileInfo) bool {
	if len(a) != len(b) || a == nil {
		return false
	}
	for i := range a {
		if !os.SameFile(a[i], b[i]) || a[i].Size() != b[i].Size() || !a[i].ModTime().Equal(b[i].ModTime()) {
			return false
		}
	}
	return true
}
