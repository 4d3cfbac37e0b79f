// Package pgtest starts a private PostgreSQL cluster for tests: the Debian
// `postgresql` package's initdb, pg_ctl and postgres (any version under
// /usr/lib/postgresql/*/bin, or on PATH), a cluster in a temp directory, a
// Unix socket directory and a free TCP port on 127.0.0.1. Tests run as root
// here and in CI, and PostgreSQL refuses to run as root: the cluster then
// belongs to the `postgres` user and every server command runs through
// `runuser -u postgres --`. Without the binaries (or, as root, without a
// `postgres` user) Start skips the test with a plain message; .ci/run
// installs the package when it is missing.
package pgtest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"
)

// Cluster is a private PostgreSQL cluster.
type Cluster struct {
	t      testing.TB
	bin    string // directory of initdb, pg_ctl, postgres
	Dir    string // the cluster's data directory
	Socket string // the Unix socket directory
	Port   int    // on 127.0.0.1
	// CAFile is the CA that signed the server's certificate (TLS on).
	CAFile string
	uid    int
	gid    int
	asUser bool // run server commands as `postgres`
}

// Options configure Start.
type Options struct {
	// TLS turns ssl on with a server certificate for 127.0.0.1 and
	// localhost signed by a CA generated here (Cluster.CAFile).
	TLS bool
	// Password sets the `postgres` superuser's password and makes TCP
	// connections authenticate with scram-sha-256 (the socket stays trust).
	Password string
}

// binDir finds the directory of initdb and pg_ctl ("" when missing).
func binDir() string {
	m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(m, func(i, j int) bool { return ver(m[i]) > ver(m[j]) })
	for _, p := range m {
		d := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(d, "pg_ctl")); err == nil {
			return d
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if _, err := exec.LookPath("pg_ctl"); err == nil {
			return filepath.Dir(p)
		}
	}
	return ""
}

func ver(p string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(p))))
	return n
}

// Available reports whether a cluster can be started here, and why not.
func Available() (bool, string) {
	if binDir() == "" {
		return false, "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb; apt-get install postgresql)"
	}
	if os.Geteuid() == 0 {
		if _, err := user.Lookup("postgres"); err != nil {
			return false, "running as root and there is no postgres user to run the server"
		}
		if _, err := exec.LookPath("runuser"); err != nil {
			return false, "running as root and runuser is missing"
		}
	}
	return true, ""
}

// Start initialises and starts a cluster; it is stopped when the test ends.
func Start(t testing.TB, opt Options) *Cluster {
	t.Helper()
	if ok, why := Available(); !ok {
		t.Skip("pgtest: " + why)
	}
	c := &Cluster{t: t, bin: binDir(), uid: -1, gid: -1}
	if os.Geteuid() == 0 {
		u, _ := user.Lookup("postgres")
		c.uid, _ = strconv.Atoi(u.Uid)
		c.gid, _ = strconv.Atoi(u.Gid)
		c.asUser = true
	}
	// Not t.TempDir(): its parents are 0700 root-owned, which the postgres
	// user cannot enter.
	root, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	c.chown(root) // the server writes its log there
	c.Dir = filepath.Join(root, "data")
	c.Socket = filepath.Join(root, "sock")
	for _, d := range []string{c.Dir, c.Socket} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		c.chown(d)
	}
	args := []string{"-D", c.Dir, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync", "--locale=C"}
	if opt.Password != "" {
		pw := filepath.Join(root, "pwfile")
		if err := os.WriteFile(pw, []byte(opt.Password+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		c.chown(pw)
		args = append(args, "--pwfile="+pw, "--auth-host=scram-sha-256", "--auth-local=trust")
	}
	if out, err := c.run("initdb", args...); err != nil {
		t.Fatalf("pgtest: initdb: %v\n%s", err, out)
	}
	c.Port = freePort(t)
	conf := fmt.Sprintf("listen_addresses = '127.0.0.1'\nport = %d\nunix_socket_directories = '%s'\n"+
		"fsync = on\nmax_connections = 50\nshared_buffers = 32MB\nlog_min_messages = warning\n", c.Port, c.Socket)
	if opt.TLS {
		c.CAFile = c.certs(root)
		conf += "ssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n"
	}
	f, err := os.OpenFile(filepath.Join(c.Dir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(conf)
	f.Close()
	t.Cleanup(c.stopQuiet) // also when the start fails halfway
	c.StartServer()
	return c
}

// DSN is a connection string over TCP to database postgres (extra is
// appended, e.g. "sslmode=disable").
func (c *Cluster) DSN(extra string) string {
	return fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=postgres %s", c.Port, extra)
}

// SocketDSN connects over the Unix socket (trust).
func (c *Cluster) SocketDSN() string {
	return fmt.Sprintf("host=%s port=%d user=postgres dbname=postgres", c.Socket, c.Port)
}

// StartServer starts the server and waits until it accepts connections.
func (c *Cluster) StartServer() {
	c.t.Helper()
	logf := filepath.Join(filepath.Dir(c.Dir), "server.log")
	if out, err := c.run("pg_ctl", "-D", c.Dir, "-l", logf, "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(logf)
		c.t.Fatalf("pgtest: pg_ctl start: %v\n%s\n%s", err, out, log)
	}
}

// Stop shuts the server down (mode fast: connections are closed).
func (c *Cluster) Stop() {
	c.t.Helper()
	if out, err := c.run("pg_ctl", "-D", c.Dir, "-m", "fast", "-w", "-t", "60", "stop"); err != nil {
		c.t.Fatalf("pgtest: pg_ctl stop: %v\n%s", err, out)
	}
}

// Restart stops and starts the server.
func (c *Cluster) Restart() {
	c.t.Helper()
	c.Stop()
	c.StartServer()
}

func (c *Cluster) stopQuiet() {
	c.run("pg_ctl", "-D", c.Dir, "-m", "immediate", "-w", "-t", "30", "stop")
}

// Bin is the path of a PostgreSQL program (psql, pg_dump, pg_restore).
func (c *Cluster) Bin(name string) string { return filepath.Join(c.bin, name) }

// Psql runs SQL through psql over the socket and returns its output
// (unaligned, tuples only); it fails the test on an error.
func (c *Cluster) Psql(sql string) string {
	c.t.Helper()
	out, err := c.run("psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", c.Socket, "-p", strconv.Itoa(c.Port),
		"-U", "postgres", "-d", "postgres", "-c", sql)
	if err != nil {
		c.t.Fatalf("pgtest: psql %q: %v\n%s", sql, err, out)
	}
	return string(bytes.TrimSpace(out))
}

// Run runs a PostgreSQL program (as the postgres user when root) with the
// socket's connection settings in its environment.
func (c *Cluster) Run(name string, args ...string) ([]byte, error) { return c.run(name, args...) }

func (c *Cluster) run(name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prog := filepath.Join(c.bin, name)
	var cmd *exec.Cmd
	if c.asUser {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", "postgres", "--", prog}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, prog, args...)
	}
	cmd.Dir = "/"
	cmd.Env = append(os.Environ(), "PGHOST="+c.Socket, "PGUSER=postgres", "LC_ALL=C")
	if c.Port != 0 {
		cmd.Env = append(cmd.Env, "PGPORT="+strconv.Itoa(c.Port))
	}
	return cmd.CombinedOutput()
}

func (c *Cluster) chown(p string) {
	if c.asUser {
		if err := os.Chown(p, c.uid, c.gid); err != nil {
			c.t.Fatal(err)
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

// certs writes a CA (root/ca.crt, returned) and a server certificate and
// key signed by it into the data directory (server.crt, server.key 0600,
// owned by the server's user).
func (c *Cluster) certs(root string) string {
	t := c.t
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "pgtest CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTpl, caTpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	srvKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	srvTpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTpl, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(srvKey)
	write := func(p string, typ string, der []byte, mode os.FileMode) {
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), mode); err != nil {
			t.Fatal(err)
		}
	}
	caFile := filepath.Join(root, "ca.crt")
	write(caFile, "CERTIFICATE", caDER, 0o644)
	write(filepath.Join(c.Dir, "server.crt"), "CERTIFICATE", srvDER, 0o600)
	write(filepath.Join(c.Dir, "server.key"), "EC PRIVATE KEY", keyDER, 0o600)
	c.chown(filepath.Join(c.Dir, "server.crt"))
	c.chown(filepath.Join(c.Dir, "server.key"))
	return caFile
}
