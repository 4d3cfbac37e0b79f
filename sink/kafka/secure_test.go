package kafka

import (
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
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"tailfeed/feed"
	"tailfeed/internal/grouptest"
	"tailfeed/processor"
)

// testCA is a CA the test generates, with a server certificate for
// 127.0.0.1 it signed.
type testCA struct {
	caFile string
	server tls.Certificate
}

func newCA(t *testing.T, dir, name string) testCA {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	srvKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	srvTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "broker"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, name+".pem")
	if err := os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return testCA{caFile: f, server: tls.Certificate{Certificate: [][]byte{srvDER}, PrivateKey: srvKey}}
}

// TestKafkaTLS: a broker whose certificate the configured CA signed is
// reached over TLS; one signed by another CA is a connection error — the
// feed stalls with it (nothing dead-lettered, never skipped silently).
func TestKafkaTLS(t *testing.T) {
	dir := t.TempDir()
	good, other := newCA(t, dir, "ca"), newCA(t, dir, "other")
	c := cluster(t, 0, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{good.server}}), kfake.SeedTopics(1, "logs"))
	for _, tc := range []struct {
		name, ca string
		ok       bool
	}{{"trusted", good.caFile, true}, {"untrusted", other.caFile, false}} {
		t.Run(tc.name, func(t *testing.T) {
			opts, err := ConnOpts(&Settings{Brokers: c.ListenAddrs(), TLS: &TLS{CAFile: tc.ca}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			l, _ := processor.OpenLedger(filepath.Join(t.TempDir(), "k.jsonl"), nil)
			r := newRig(t, processor.GroupConfig{Retry: grouptest.FastRetry(2), OnFailure: processor.DeadLetter, Ledger: l},
				Config{Topic: "logs", Timeout: time.Second, Client: opts})
			r.Run()
			r.Publish("secret-free line")
			if tc.ok {
				r.WaitAck(1, 10*time.Second)
				return
			}
			grouptest.WaitFor(t, "a stall on the certificate", func() bool {
				st, why := r.Q.State()
				return st == feed.Fenced && strings.Contains(why, "certificate")
			})
			_, why := r.Q.State()
			t.Logf("stalled: %s", why)
			if l.Len() != 0 || r.Q.AckPoint() != 0 {
				t.Fatalf("an untrusted broker: ledger %d ack %d", l.Len(), r.Q.AckPoint())
			}
		})
	}
}

// TestKafkaSASL: SCRAM-SHA-512 and PLAIN credentials the broker knows
// deliver; a wrong password stalls the feed, and the reason never shows
// the password.
func TestKafkaSASL(t *testing.T) {
	c := cluster(t, 0, kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "tf", "right-horse-battery"),
		kfake.Superuser("PLAIN", "tp", "plain-staple-pass"), kfake.SeedTopics(1, "logs"))
	for _, tc := range []struct {
		name, mech, user, pass string
		ok                     bool
	}{
		{"scram", "SCRAM-SHA-512", "tf", "right-horse-battery", true},
		{"plain", "PLAIN", "tp", "plain-staple-pass", true},
		{"wrong", "SCRAM-SHA-512", "tf", "wrong-horse-battery", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts, err := ConnOpts(&Settings{Brokers: c.ListenAddrs(),
				SASL: &SASL{Mechanism: tc.mech, Username: tc.user, Password: tc.pass}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			r := newRig(t, processor.GroupConfig{Retry: grouptest.FastRetry(2)},
				Config{Topic: "logs", Timeout: time.Second, Client: opts})
			r.Run()
			r.Publish("x")
			if tc.ok {
				r.WaitAck(1, 10*time.Second)
				return
			}
			grouptest.WaitFor(t, "a stall on the credentials", func() bool {
				st, _ := r.Q.State()
				return st == feed.Fenced
			})
			_, why := r.Q.State()
			t.Logf("stalled: %s", why)
			if strings.Contains(why, tc.pass) {
				t.Fatalf("the reason shows the password: %s", why)
			}
		})
	}
}

type warnings []string

func (w *warnings) Warn(msg string, args ...any) {
	*w = append(*w, fmt.Sprint(append([]any{msg}, args...)...))
}

// TestKafkaWarnings: a literal SASL password and insecureSkipVerify are
// WARNs at start naming the key; the password itself is never logged.
func TestKafkaWarnings(t *testing.T) {
	var w warnings
	_, err := ConnOpts(&Settings{Brokers: []string{"127.0.0.1:1"}, TLS: &TLS{InsecureSkipVerify: true},
		SASL: &SASL{Mechanism: "PLAIN", Username: "u", Password: "hunter2-literal", PasswordLine: 9, PasswordKey: "processors[0].sasl.password"}}, &w)
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(w, "\n")
	if !strings.Contains(all, "insecureSkipVerify") || !strings.Contains(all, "processors[0].sasl.password") || strings.Contains(all, "hunter2") {
		t.Fatalf("warnings:\n%s", all)
	}
	// A password from a ${VAR} reference (no PasswordKey) is not literal.
	w = nil
	if _, err := ConnOpts(&Settings{Brokers: []string{"127.0.0.1:1"},
		SASL: &SASL{Mechanism: "PLAIN", Username: "u", Password: "hunter2-env", PasswordLine: 9}}, &w); err != nil || len(w) != 0 {
		t.Fatalf("err %v, warnings %q", err, w)
	}
}
