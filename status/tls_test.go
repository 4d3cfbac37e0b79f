package status

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"tailfeed/internal/tlsconfig"
	"tailfeed/internal/tlsconfig/tlstest"
)

// With status.tls and a client CA, every route but /livez, /readyz and
// /healthz (asked for exactly) refuses a client without a certificate,
// before the token (401 naming the certificate, not the token); with one,
// the token applies as before (DESIGN §12 "TLS for the HTTP API").
func TestClientCertificateExceptOnProbes(t *testing.T) {
	dir := t.TempDir()
	ca, clients := tlstest.NewCA(t, "ca"), tlstest.NewCA(t, "clients")
	crt, key, _ := ca.Files(t, dir, "server")
	ts, err := tlsconfig.NewServer(crt, key, tlstest.Write(t, dir, "clients.crt", clients.PEM), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(ServerConfig{Token: "tok", TLS: ts, Report: func() Report { return Report{} },
		Routes: map[string]Route{"/admin/x": {Methods: []string{http.MethodGet}, Protected: true,
			Handler: func(w http.ResponseWriter, r *http.Request) { WriteJSON(w, 200, "ok") }}}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go Serve(srv, ln)
	defer srv.Close()
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	c, k := clients.Issue(t, "client")
	pair, _ := tls.X509KeyPair(c, k)
	get := func(path, token string, cert bool) (int, string) {
		tc := &tls.Config{RootCAs: roots}
		if cert {
			tc.Certificates = []tls.Certificate{pair}
		}
		cl := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		defer cl.CloseIdleConnections()
		req, _ := http.NewRequest(http.MethodGet, "https://"+ln.Addr().String()+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, p := range []string{"/livez", "/readyz", "/healthz"} {
		if code, body := get(p, "", false); code != 200 {
			t.Errorf("%s without a certificate: %d %s", p, code, body)
		}
	}
	for _, p := range []string{"/feed.status", "/admin/x", "/nope", "/healthz/", "/%68ealthz", "/livez/../admin/x", "//healthz"} {
		if code, body := get(p, "tok", false); code != 401 || !strings.Contains(body, "client certificate") {
			t.Errorf("%s without a certificate: %d %s; want 401 naming the certificate", p, code, body)
		}
	}
	for p, want := range map[string]int{"/feed.status": 200, "/admin/x": 401} {
		if code, body := get(p, "", true); code != want {
			t.Errorf("%s with a certificate, no token: %d %s; want %d", p, code, body, want)
		}
	}
	if code, body := get("/admin/x", "tok", true); code != 200 {
		t.Errorf("certificate and token: %d %s", code, body)
	}
}
