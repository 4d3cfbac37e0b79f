package daemon

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"tailfeed/config"
	"tailfeed/internal/tlsconfig/tlstest"
)

// A reload that changes status.token, protectRead and maxConnections
// without moving status.listen applies them to the running server, and
// hands a changed log section to Options.SetLog (DESIGN §12 "Reload": the
// difference is applied without a restart); a failed reload applies none.
func TestReloadAppliesStatusAndLog(t *testing.T) {
	var mu sync.Mutex
	var logs []config.Log
	e := start(t, reloadBase, Options{SetLog: func(l config.Log) {
		mu.Lock()
		logs = append(logs, l)
		mu.Unlock()
	}})
	changed := strings.NewReplacer("token: sesame}", "token: sesame, protectRead: true, maxConnections: 16}",
		"shutdownTimeoutMillis: 300\n", "shutdownTimeoutMillis: 300\nlog: {level: debug, format: json}\n").Replace(reloadBase)
	// Invalid elsewhere: nothing applied.
	e.rewrite(changed + "  - {name: bad, feed: nowhere, type: discard}\n")
	if code, body := e.reload(); code != http.StatusBadRequest || !strings.Contains(body, "nowhere") {
		t.Fatalf("invalid reload: %d %s", code, body)
	}
	if code, _ := e.do(http.MethodGet, "/feed.status", ""); code != http.StatusOK {
		t.Fatalf("after a failed reload, /feed.status without the token: %d, want 200", code)
	}
	e.rewrite(changed)
	if code, body := e.reload(); code != http.StatusOK {
		t.Fatalf("reload: %d %s", code, body)
	}
	if code, _ := e.do(http.MethodGet, "/feed.status", ""); code != http.StatusUnauthorized {
		t.Errorf("after a reload to protectRead: true, /feed.status without the token: %d, want 401", code)
	}
	if code, _ := e.do(http.MethodGet, "/feed.status", "sesame"); code != http.StatusOK {
		t.Errorf("after a reload to protectRead: true, /feed.status with the token: %d, want 200", code)
	}
	mu.Lock()
	if len(logs) != 1 || logs[0] != (config.Log{Level: "debug", Format: "json"}) {
		t.Errorf("SetLog calls: %+v, want one with debug/json", logs)
	}
	mu.Unlock()
	e.rewrite(strings.Replace(changed, "token: sesame,", "token: other,", 1))
	code, body := e.do(http.MethodPost, "/admin/reload", "sesame")
	if code != http.StatusOK {
		t.Fatalf("reload to a new token: %d %s", code, body)
	}
	if code, _ := e.do(http.MethodGet, "/admin/losses/app", "sesame"); code != http.StatusUnauthorized {
		t.Errorf("after the reload, the old token: %d, want 401", code)
	}
	if code, _ := e.do(http.MethodGet, "/admin/losses/app", "other"); code != http.StatusOK {
		t.Errorf("after the reload, the new token: %d, want 200", code)
	}
	mu.Lock()
	if len(logs) != 1 {
		t.Errorf("SetLog called for a reload that left the log section as it was: %+v", logs)
	}
	mu.Unlock()
}

// A reload that names other status.tls files loads them first: a pair
// that does not load fails the reload (400 at status.tls's line) and the
// old certificate stays; a pair that loads is served from the next
// handshake. Turning status.tls off (then on) at a reload switches the
// same address's protocol.
func TestReloadOtherCertificateFiles(t *testing.T) {
	dir := t.TempDir()
	caOne, caTwo := tlstest.NewCA(t, "one"), tlstest.NewCA(t, "two")
	c1, k1 := caOne.Issue(t, "one")
	c2, k2 := caTwo.Issue(t, "two")
	tlstest.Write(t, dir, "one.crt", c1)
	tlstest.Write(t, dir, "one.key", k1)
	tlstest.Write(t, dir, "two.crt", c2)
	tlstest.Write(t, dir, "two.key", k2)
	withTLS := func(crt, key string) string {
		return strings.Replace(reloadBase, "token: sesame}",
			"token: sesame, tls: {certFile: %DIR%/"+crt+", keyFile: %DIR%/"+key+"}}", 1)
	}
	e := startIn(t, dir, withTLS("one.crt", "one.key"), Options{})
	e.base = "https://" + e.d.Addr()
	client := func(ca *tlstest.CA) *http.Client {
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(ca.PEM)
		return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots}, DisableKeepAlives: true}}
	}
	post := func() (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, e.base+"/admin/reload", nil)
		req.Header.Set("Authorization", "Bearer sesame")
		resp, err := client(caOne).Do(req)
		if err != nil {
			resp, err = client(caTwo).Do(req)
		}
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	serves := func(ca *tlstest.CA) error {
		resp, err := client(ca).Get(e.base + "/livez")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	// two.crt with one.key: does not load.
	e.rewrite(withTLS("two.crt", "one.key"))
	if code, body := post(); code != http.StatusBadRequest || !strings.Contains(body, filepath.Join(dir, "tailfeed.yaml")+":3: status.tls") {
		t.Fatalf("reload naming a mismatched pair: %d %s, want 400 at tailfeed.yaml:3: status.tls", code, body)
	}
	if err := serves(caOne); err != nil {
		t.Fatalf("after the failed reload, the old certificate: %v", err)
	}
	e.rewrite(withTLS("two.crt", "two.key"))
	if code, body := post(); code != http.StatusOK {
		t.Fatalf("reload naming two.crt/two.key: %d %s", code, body)
	}
	if err := serves(caTwo); err != nil {
		t.Fatalf("after the reload, the new certificate: %v", err)
	}
	if err := serves(caOne); err == nil {
		t.Fatal("after the reload, the old certificate is still served")
	}
	// Turned off: the same address serves plain HTTP, HTTPS no more.
	e.rewrite(reloadBase)
	if code, body := post(); code != http.StatusOK {
		t.Fatalf("reload turning status.tls off: %d %s", code, body)
	}
	if err := serves(caTwo); err == nil {
		t.Fatal("after the reload turning status.tls off, HTTPS is still served")
	}
	plain := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := plain.Get("http://" + e.d.Addr() + "/livez")
	if err != nil {
		t.Fatalf("after the reload turning status.tls off, plain HTTP: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("after the reload turning status.tls off, /livez: %d", resp.StatusCode)
	}
	// And on again (one.crt/one.key): HTTPS with that certificate.
	e.rewrite(withTLS("one.crt", "one.key"))
	req, _ := http.NewRequest(http.MethodPost, "http://"+e.d.Addr()+"/admin/reload", nil)
	req.Header.Set("Authorization", "Bearer sesame")
	if resp, err = plain.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("reload turning status.tls on: %d", resp.StatusCode)
	}
	if err := serves(caOne); err != nil {
		t.Fatalf("after the reload turning status.tls on, HTTPS: %v", err)
	}
	if resp, err := plain.Get("http://" + e.d.Addr() + "/livez"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("after the reload turning status.tls on, plain HTTP is still served")
		}
	}
}
