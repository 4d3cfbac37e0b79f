package e2e

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Secure by default (DESIGN §12): no secret in status, health, logs or
// dead letters; private files; a guarded lock; a bounded HTTP server.

const secretsConfigTmpl = `dataDir: ./state
status:
  listen: {{ADDR}}
  token: tok3n
  protectRead: true
  stallAlertMillis: 300
shutdownTimeoutMillis: 500
feeds:
  - name: app
    path: ./in.log
    readStrategy: COMMITTED
processors:
  - name: down
    feed: app
    type: webhook
    url: http://user:s3cr3tpw@%s/ingest
    timeoutMillis: 500
    retry: {initialMillis: 5, maxMillis: 20, attempts: 2}
  - name: refusing
    feed: app
    type: webhook
    url: %s/ingest
    timeoutMillis: 2000
    retry: {initialMillis: 5, maxMillis: 20, attempts: 2}
    onFailure: deadLetter
`

// A webhook URL with user:password@ never shows its password: not in the
// /healthz reason, not in feed.status's stalled, not in the log, not in the
// dead-letter ledger's error. Go's own URL error hides it; the sink's error
// used to put it back.
func TestSecretsNeverShown(t *testing.T) {
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		http.Error(w, "no thanks", http.StatusInternalServerError)
	}))
	defer refusing.Close()
	withPw := strings.Replace(refusing.URL, "http://", "http://user:s3cr3tpw@", 1)
	dead := freeAddr(t) // nothing listens: connection refused
	e := newEnv(t, fmt.Sprintf(secretsConfigTmpl, dead, withPw))
	in := newInput(t, e.path("in.log"))
	in.appendLines(3)
	d := e.startIn(e.dir)

	var health, report []byte
	waitUntil(t, "/healthz 503 naming the stall", 30*time.Second, func() bool {
		code, _, body := request(t, d, "GET", "/healthz", "", nil)
		health = body
		return code == http.StatusServiceUnavailable && strings.Contains(string(body), "down")
	})
	waitUntil(t, "a dead letter", 30*time.Second, func() bool {
		b, _ := os.ReadFile(e.path("state/dlq/refusing.jsonl"))
		return strings.Count(string(b), "\n") >= 3
	})
	code, _, report := request(t, d, "GET", "/feed.status", "tok3n", nil)
	if code != 200 || !strings.Contains(string(report), `"stalled":"`) {
		t.Fatalf("/feed.status %d, want 200 with a stalled reason: %s", code, report)
	}
	d.stop()
	ledger, _ := os.ReadFile(e.path("state/dlq/refusing.jsonl"))
	for what, text := range map[string]string{
		"/healthz": string(health), "/feed.status": string(report), "log": d.log(), "ledger": string(ledger),
	} {
		if strings.Contains(text, "s3cr3tpw") {
			t.Errorf("%s shows the password:\n%s", what, tail(text, 3000))
		}
	}
	// Not vacuous: the URLs are named, with their whole userinfo redacted.
	if !strings.Contains(string(ledger), "://***@") || !strings.Contains(d.log(), "://***@") ||
		strings.Contains(string(ledger), "user:") {
		t.Errorf("ledger/log do not name the redacted URL:\n%s\n%s", ledger, tail(d.log(), 2000))
	}
}

const modesConfigTmpl = `dataDir: ./state
status:
  listen: {{ADDR}}
shutdownTimeoutMillis: 500
feeds:
  - name: app
    path: ./in.log
    readStrategy: COMMITTED
processors:
  - name: archive
    feed: app
    type: file
    path: ./out/archive.log
    exactlyOnce: true
  - name: private
    feed: app
    type: file
    path: ./out/private.log
    mode: "0600"
  - name: counter
    feed: app
    type: count
    exactlyOnce: true
    match: '^(?P<key>[a-z]+)-'
  - name: hook
    feed: app
    type: webhook
    url: %s/ingest
    retry: {initialMillis: 5, maxMillis: 20, attempts: 1}
    onFailure: deadLetter
`

// modesOf walks dir and returns every entry's permission bits.
func modesOf(t *testing.T, dir string) map[string]os.FileMode {
	t.Helper()
	out := map[string]os.FileMode{}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		out[p] = fi.Mode()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Every directory under dataDir is 0700 and every file in it 0600 (the
// ledger holds raw log lines), whatever the umask lets through; a file
// sink's output gets its mode (default 0640).
func TestDataDirPrivate(t *testing.T) {
	old := syscall.Umask(0o022) // the common umask, which let 0755/0644 through
	defer syscall.Umask(old)
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		http.Error(w, "no", http.StatusBadRequest)
	}))
	defer refusing.Close()
	e := newEnv(t, fmt.Sprintf(modesConfigTmpl, refusing.URL))
	in := newInput(t, e.path("in.log"))
	in.appendLines(20)
	d := e.start()
	d.waitSettled(30 * time.Second)
	d.stop()
	modes := modesOf(t, e.path("state"))
	var files []string
	for p, m := range modes {
		switch {
		case m.IsDir() && m.Perm() != 0o700:
			t.Errorf("directory %s has mode %04o, want 0700", p, m.Perm())
		case m.IsRegular() && m.Perm() != 0o600:
			t.Errorf("file %s has mode %04o, want 0600", p, m.Perm())
		case m.IsRegular():
			files = append(files, strings.TrimPrefix(p, e.path("state")+"/"))
		}
	}
	sort.Strings(files)
	t.Logf("dataDir files: %v", files)
	for _, want := range []string{"LOCK", "feeds/app.ptr", "dlq/hook.jsonl", "state/archive.rec", "state/count/counter.json", "state/hook.rec"} {
		if _, ok := modes[e.path("state/"+want)]; !ok {
			t.Errorf("no %s in dataDir (have %v): the walk checked less than it should", want, files)
		}
	}
	for name, want := range map[string]os.FileMode{"out/archive.log": 0o640, "out/private.log": 0o600} {
		fi, err := os.Stat(e.path(name))
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v, mode %v, want %04o", name, err, fi, want)
		}
	}
}

// A dataDir an older version created 0755 with 0644 files is made private
// at start (with a WARN); one that group or others may write is refused
// (exit 2, naming it), as ssh refuses loose key files; so is a LOCK that
// is a symlink (O_NOFOLLOW).
func TestDataDirLoose(t *testing.T) {
	const tmpl = `dataDir: ./state
status: {listen: "{{ADDR}}"}
feeds:
  - {name: app, path: ./in.log}
processors:
  - {name: out, feed: app, type: file, path: ./out.log}
`
	t.Run("readable is tightened", func(t *testing.T) {
		e := newEnv(t, tmpl)
		os.WriteFile(e.path("in.log"), []byte("a\n"), 0o644)
		for _, dir := range []string{"state", "state/feeds", "state/dlq", "state/state"} {
			os.Mkdir(e.path(dir), 0o755)
			os.Chmod(e.path(dir), 0o755)
		}
		os.WriteFile(e.path("state/dlq/old.jsonl"), []byte("{}\n"), 0o644)
		os.Chmod(e.path("state/dlq/old.jsonl"), 0o644)
		d := e.start()
		d.stop()
		for p, m := range modesOf(t, e.path("state")) {
			if m.Perm()&0o077 != 0 {
				t.Errorf("%s still has mode %04o", p, m.Perm())
			}
		}
		if log := d.log(); !strings.Contains(log, "dataDir was readable by group or others; made it private") ||
			!strings.Contains(log, "files in dataDir were readable by group or others") {
			t.Errorf("no WARN about the tightening:\n%s", log)
		}
	})
	t.Run("group-writable is refused", func(t *testing.T) {
		e := newEnv(t, tmpl)
		os.WriteFile(e.path("in.log"), []byte("a\n"), 0o644)
		os.Mkdir(e.path("state"), 0o770)
		os.Chmod(e.path("state"), 0o770)
		d := e.spawn()
		if code := d.wait(30 * time.Second); code != 2 {
			t.Fatalf("exit %d, want 2\n%s", code, d.log())
		}
		want := e.cfg + ":1: dataDir: " + e.path("state") + " is writable by group or others (mode 0770)"
		if !strings.Contains(d.log(), want) {
			t.Errorf("log %q, want %q", d.log(), want)
		}
	})
	t.Run("owned by another user is refused", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root to give the dataDir to another user")
		}
		e := newEnv(t, tmpl)
		os.WriteFile(e.path("in.log"), []byte("a\n"), 0o644)
		os.Mkdir(e.path("state"), 0o700)
		if err := os.Chown(e.path("state"), 65534, 65534); err != nil {
			t.Fatal(err)
		}
		d := e.spawn()
		if code := d.wait(30 * time.Second); code != 2 {
			t.Fatalf("exit %d, want 2\n%s", code, d.log())
		}
		want := e.cfg + ":1: dataDir: " + e.path("state") + " is owned by user id 65534"
		if !strings.Contains(d.log(), want) {
			t.Errorf("log %q, want %q", d.log(), want)
		}
	})
	t.Run("another user cannot take the LOCK", func(t *testing.T) {
		flock, err := exec.LookPath("flock")
		if os.Geteuid() != 0 || err != nil {
			t.Skip("needs root and flock(1) to act as another user")
		}
		e := newEnv(t, tmpl)
		os.WriteFile(e.path("in.log"), []byte("a\n"), 0o644)
		// The way down to dataDir is open to everyone, as under /var/lib.
		os.Chmod(filepath.Dir(e.dir), 0o755)
		os.Chmod(e.dir, 0o755)
		d := e.start()
		d.stop()
		cmd := exec.Command(flock, "-n", e.path("state/LOCK"), "true")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatalf("user nobody took the daemon's LOCK (a held one would keep the daemon from starting)")
		}
		t.Logf("nobody's flock: %v: %s", err, out)
	})
	t.Run("symlinked LOCK is refused", func(t *testing.T) {
		e := newEnv(t, tmpl)
		os.WriteFile(e.path("in.log"), []byte("a\n"), 0o644)
		os.Mkdir(e.path("state"), 0o700)
		os.WriteFile(e.path("elsewhere"), nil, 0o600)
		os.Symlink(e.path("elsewhere"), e.path("state/LOCK"))
		d := e.spawn()
		if code := d.wait(30 * time.Second); code != 2 {
			t.Fatalf("exit %d, want 2\n%s", code, d.log())
		}
		if want := e.path("state/LOCK") + " is a symbolic link"; !strings.Contains(d.log(), want) {
			t.Errorf("log %q, want %q", d.log(), want)
		}
	})
}

const serverConfigTmpl = `dataDir: ./state
status:
  listen: {{ADDR}}
  token: tok3n
feeds:
  - {name: app, path: ./in.log}
processors:
  - {name: puller, feed: app, type: pull, onFailure: deadLetter}
`

// 300 idle keep-alive connections do not make /healthz unreachable: the
// daemon holds at most status.maxConnections (256) and closes the longest
// idle to admit a new client. The daemon runs with 300 descriptors at
// most (prlimit), as on a host with a low ulimit: without the cap, the
// idle connections used them all and accept failed.
func TestIdleConnectionsDoNotStarveHealthz(t *testing.T) {
	e := newEnv(t, serverConfigTmpl)
	os.WriteFile(e.path("in.log"), nil, 0o644)
	d := e.start()
	lim := unix.Rlimit{Cur: 300, Max: 300}
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
			c.SetReadDeadline(time.Time{}) // then idle, kept open
		}()
	}
	n := 0
	for range conns {
		if <-answered {
			n++
		}
	}
	start := time.Now()
	// A new connection, as a prober opens (not one the harness pooled).
	fresh := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := fresh.Get("http://" + d.addr + "/healthz")
	if err != nil {
		t.Fatalf("/healthz behind %d idle connections (%d answered): %v", len(conns), n, err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/healthz: %d", resp.StatusCode)
	}
	t.Logf("%d of %d idle connections got their answer; /healthz answered in %v", n, len(conns), time.Since(start))
	d.stop()
}

// GET /admin/../admin/dlq/x without the token is 401, not the mux's 307
// to the cleaned path (which would tell the route exists).
func TestDotSegmentsNeedTheToken(t *testing.T) {
	e := newEnv(t, serverConfigTmpl)
	os.WriteFile(e.path("in.log"), nil, 0o644)
	d := e.start()
	for _, p := range []string{"/admin/../admin/dlq/puller", "/v1/./pull/puller", "/x/../admin/dlq/puller"} {
		conn, err := net.Dial("tcp", d.addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", p)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		conn.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without the token: %d (Location %q), want 401", p, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	d.stop()
}

// startLog runs `tailfeed run` on cfg (written with mode) until it says it
// runs, stops it with SIGTERM and returns its log.
func startLog(t *testing.T, cfg string, mode os.FileMode, extraEnv ...string) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "tailfeed.yaml")
	os.WriteFile(path, []byte(cfg), mode)
	os.Chmod(path, mode)
	os.WriteFile(filepath.Join(dir, "in.log"), nil, 0o644)
	logPath := filepath.Join(dir, "log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, "run", "--config", path)
	cmd.Env = append(os.Environ(), append([]string{"TAILFEED_TOKEN="}, extraEnv...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	read := func() string { b, _ := os.ReadFile(logPath); return string(b) }
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(read(), "tailfeed running") {
		select {
		case err := <-done:
			t.Fatalf("run ended (%v) before it ran:\n%s", err, read())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("not running after 30 s:\n%s", read())
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := <-done; err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, read())
	}
	return read()
}

// run warns at start when status.listen is not loopback and no token is
// set, and when the config file holding the token is readable by others;
// a loopback listen and a private config get neither warning.
func TestRunWarnsOpenAPI(t *testing.T) {
	_, port, _ := net.SplitHostPort(freeAddr(t))
	const rest = "feeds:\n  - {name: app, path: ./in.log}\nprocessors:\n  - {name: p, feed: app, type: discard}\n"
	const openWarn = "status.listen is not a loopback address and no token is set"
	const fileWarn = "the config file holds status.token and is readable by every local user"
	log := startLog(t, "dataDir: ./state\nstatus: {listen: \"0.0.0.0:"+port+"\"}\n"+rest, 0o600)
	if !strings.Contains(log, openWarn) || strings.Contains(log, fileWarn) {
		t.Errorf("0.0.0.0 without a token: log\n%s\nwant only the WARN %q", log, openWarn)
	}
	if log := startLog(t, "dataDir: ./state\nstatus: {listen: \"0.0.0.0:"+port+"\"}\n"+rest, 0o600, "TAILFEED_TOKEN=t"); strings.Contains(log, openWarn) {
		t.Errorf("0.0.0.0 with TAILFEED_TOKEN: log\n%s\nwant no WARN", log)
	}
	log = startLog(t, "dataDir: ./state\nstatus: {listen: \"127.0.0.1:"+port+"\", token: s3cret}\n"+rest, 0o644)
	if !strings.Contains(log, fileWarn) || strings.Contains(log, openWarn) {
		t.Errorf("token in a 0644 config: log\n%s\nwant only the WARN %q", log, fileWarn)
	}
	log = startLog(t, "dataDir: ./state\nstatus: {listen: \"localhost:"+port+"\", token: s3cret}\n"+rest, 0o600)
	if strings.Contains(log, fileWarn) || strings.Contains(log, openWarn) || strings.Contains(log, "s3cret") {
		t.Errorf("token in a 0600 config on localhost: log\n%s\nwant no WARN and no token", log)
	}
}
