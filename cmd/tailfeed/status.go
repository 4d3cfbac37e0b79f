package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"tailfeed/internal/redact"
	"tailfeed/internal/tlsconfig"
	"tailfeed/status"
)

// Exit codes of `tailfeed status` (the launcher rule).
const (
	exitSettled     = 0 // settled and lossless
	exitLossy       = 1 // settled but lossy
	exitUnreachable = 2 // unreachable or not a report
	exitNotSettled  = 3 // not settled in time
	exitFailed      = 4 // a feed is FAILED: no wait will settle it
)

func cmdStatus(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8470", "host:port or URL of the daemon")
	wait := fs.Duration("wait-settled", 0, "wait up to this long for the feeds to settle")
	asJSON := fs.Bool("json", false, "print the feed.status JSON")
	ca := fs.String("ca", "", "PEM CA file that verifies the daemon's certificate (status.tls); implies https")
	cert := fs.String("cert", "", "PEM client certificate, for a daemon with status.tls.clientCAFile (with --key)")
	key := fs.String("key", "", "PEM key of --cert")
	if pos, ok := parseFlags(fs, args, stderr); !ok || !noArgs("status", pos, stderr) {
		return exitUnreachable
	}
	secure := *ca != "" || *cert != "" || *key != ""
	u, err := statusURL(*addr, secure)
	if err != nil {
		fmt.Fprintf(stderr, "tailfeed status: %v\n", err)
		return exitUnreachable
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if tr.TLSClientConfig, err = tlsconfig.Client(tlsconfig.Files{CAFile: *ca, CertFile: *cert, KeyFile: *key}, nil); err != nil {
		fmt.Fprintf(stderr, "tailfeed status: --ca/--cert/--key: %v\n", err)
		return exitUnreachable
	}
	deadline := time.Now().Add(*wait)
	client := &http.Client{Timeout: 5 * time.Second, CheckRedirect: tokenStaysPut, Transport: tr}
	for {
		rep, raw, err := fetchReport(client, u)
		if err != nil {
			// A daemon that is not listening yet may come up within the
			// wait; an answer that is not a report, or a certificate that
			// does not verify, will not improve.
			var nr notReport
			tlsErr := explainTLS(err)
			if errors.As(err, &nr) || tlsErr != "" || !time.Now().Before(deadline) {
				fmt.Fprintf(stderr, "tailfeed status: %v\n", err)
				if tlsErr != "" {
					fmt.Fprintf(stderr, "tailfeed status: %s\n", tlsErr)
				}
				return exitUnreachable
			}
			time.Sleep(min(200*time.Millisecond, time.Until(deadline)))
			continue
		}
		// DESIGN §12 precedence: 2 (above), then 4 at once for a FAILED
		// feed, --wait-settled or not, then 0/1/3.
		if failed := failedReasons(rep); failed != "" {
			if *asJSON {
				stdout.Write(raw)
			} else {
				printSummary(stdout, rep)
			}
			fmt.Fprintf(stderr, "tailfeed status: FAILED: %s\n", failed)
			return exitFailed
		}
		if rep.Settled || !time.Now().Before(deadline) {
			if *asJSON {
				stdout.Write(raw)
			} else {
				printSummary(stdout, rep)
			}
			switch {
			case rep.Settled && rep.Lossless:
				return exitSettled
			case rep.Settled:
				fmt.Fprintf(stderr, "tailfeed status: settled but lossy: %s\n", lossReasons(rep))
				return exitLossy
			default:
				fmt.Fprintf(stderr, "tailfeed status: not settled: %s\n", unsettledReasons(rep))
				return exitNotSettled
			}
		}
		time.Sleep(min(200*time.Millisecond, time.Until(deadline)))
	}
}

// statusURL makes --addr a URL: host:port is http, or https with --ca,
// --cert or --key (secure).
func statusURL(addr string, secure bool) (string, error) {
	if !strings.Contains(addr, "://") {
		if secure {
			addr = "https://" + addr
		} else {
			addr = "http://" + addr
		}
	}
	u, err := url.Parse(addr)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("bad --addr %q", addr)
	}
	if secure && u.Scheme != "https" {
		// --ca/--cert/--key ask for a verified HTTPS connection: never fall
		// back to clear text (TAILFEED_TOKEN would travel unencrypted).
		return "", fmt.Errorf("--ca, --cert and --key need an https:// --addr, got %s:// (the token would go in clear text)", u.Scheme)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/feed.status"
	}
	return u.String(), nil
}

// explainTLS says in words what a TLS failure means and what to do; ""
// when err is not one.
func explainTLS(err error) string {
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	var rec tls.RecordHeaderError
	var verify *tls.CertificateVerificationError
	switch {
	case errors.As(err, &unknown):
		return "certificate signed by unknown authority: the daemon's certificate (status.tls.certFile) is not signed by the CA given to --ca (or, without --ca, by one the system trusts); pass --ca with the CA file that signed it"
	case errors.As(err, &host):
		return "the daemon's certificate does not name the host of --addr; use a name or IP address the certificate lists"
	case errors.As(err, &invalid):
		return "the daemon's certificate is not valid (expired, not yet valid, or not for a server)"
	case errors.As(err, &rec):
		return "the daemon does not speak TLS at this address (status.tls is not set there); use an http:// --addr without --ca"
	case errors.As(err, &verify):
		return "the daemon's certificate does not verify"
	case strings.Contains(err.Error(), "remote error: tls:"):
		return "the daemon refused the TLS handshake (a client certificate its status.tls.clientCAFile did not sign?); check --cert and --key"
	}
	return ""
}

// tokenStaysPut follows no redirect while a token is set (DESIGN §12: the
// token never crosses a redirect, to the letter: not even to the same
// origin, which Go's client would also do for another port of the same
// host); the refusal names where the redirect pointed, so --addr can name
// it. Without a token, up to 10 redirects anywhere.
func tokenStaysPut(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if os.Getenv("TAILFEED_TOKEN") != "" {
		return fmt.Errorf("not following the redirect to %s: TAILFEED_TOKEN is never sent across a redirect (give --addr the URL it names)", redact.URL(req.URL.String()))
	}
	return nil
}

func fetchReport(c *http.Client, u string) (*status.Report, []byte, error) {
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return nil, nil, err
	}
	if tok := os.Getenv("TAILFEED_TOKEN"); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("unreachable: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		msg := fmt.Sprintf("%s answered %s: %s", u, resp.Status, strings.TrimSpace(string(raw)))
		if resp.StatusCode == http.StatusBadRequest && strings.Contains(string(raw), "HTTP request to an HTTPS server") {
			msg += " (the daemon serves HTTPS: use an https:// --addr, or --ca)"
		}
		return nil, nil, notReport{msg}
	}
	rep, err := parseReport(raw)
	if err != nil {
		return nil, nil, notReport{fmt.Sprintf("%s is not a feed.status report: %v", u, err)}
	}
	return rep, raw, nil
}

// notReport is an answer that is not a feed.status report.
type notReport struct{ msg string }

func (e notReport) Error() string { return e.msg }

// parseReport accepts a feed.status document: a JSON object with boolean
// settled and lossless, a version and a feeds list whose entries name a
// feed and carry their own settled and lossless.
func parseReport(raw []byte) (*status.Report, error) {
	var probe struct {
		Settled  *bool                         `json:"settled"`
		Lossless *bool                         `json:"lossless"`
		Version  *uint64                       `json:"version"`
		Feeds    *[]map[string]json.RawMessage `json:"feeds"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, err
	}
	switch {
	case probe.Settled == nil:
		return nil, errors.New(`no boolean "settled"`)
	case probe.Lossless == nil:
		return nil, errors.New(`no boolean "lossless"`)
	case probe.Version == nil:
		return nil, errors.New(`no "version"`)
	case probe.Feeds == nil:
		return nil, errors.New(`no "feeds" list`)
	}
	for i, f := range *probe.Feeds {
		for _, k := range []string{"feed", "settled", "lossless"} {
			if _, ok := f[k]; !ok {
				return nil, fmt.Errorf("feeds[%d] has no %q", i, k)
			}
		}
	}
	var rep status.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		return nil, err
	}
	return &rep, nil
}

func printSummary(w io.Writer, r *status.Report) {
	word := func(b bool, yes, no string) string {
		if b {
			return yes
		}
		return no
	}
	fmt.Fprintf(w, "%s, %s (version %d)\n", word(r.Settled, "settled", "not settled"), word(r.Lossless, "lossless", "LOSSY"), r.Version)
	for _, f := range r.Feeds {
		fmt.Fprintf(w, "  %s: %s, %s, %s, sequence %d, acknowledged %d, pending %d",
			f.Feed, f.State, word(f.Settled, "settled", "not settled"), word(f.Lossless, "lossless", "LOSSY"),
			f.Sequence, f.Acknowledged, f.PendingAcks)
		if f.Pointer != nil {
			fmt.Fprintf(w, ", pointer %d", f.Pointer.Offset)
		}
		fmt.Fprintln(w)
		if f.Stalled != nil {
			fmt.Fprintf(w, "    stalled: %s\n", *f.Stalled)
		}
		if f.Detail != nil {
			fmt.Fprintf(w, "    detail: %s\n", *f.Detail)
		}
	}
}

// failedReasons names every FAILED feed with its detail; "" when none.
func failedReasons(r *status.Report) string {
	var out []string
	for _, f := range r.Feeds {
		if f.State != "FAILED" {
			continue
		}
		why := "feed " + f.Feed
		if f.Detail != nil {
			why += ": " + *f.Detail
		}
		out = append(out, why)
	}
	return strings.Join(out, "; ")
}

func lossReasons(r *status.Report) string {
	var out []string
	for _, f := range r.Feeds {
		if f.Lossless {
			continue
		}
		var c []string
		add := func(name string, v uint64) {
			if v > 0 {
				c = append(c, fmt.Sprintf("%s=%d", name, v))
			}
		}
		add("dropped", f.Dropped)
		add("refused", f.Refused)
		add("completionFailures", f.CompletionFailures)
		add("released", f.Released)
		add("lostTails", f.LostTails)
		add("lostBytes", f.LostBytes)
		add("deadLettered", f.DeadLettered)
		if len(c) == 0 {
			c = append(c, "losses of an earlier run in dataDir/losses.jsonl; see GET /admin/losses/"+f.Feed)
		}
		out = append(out, fmt.Sprintf("feed %s (%s)", f.Feed, strings.Join(c, ", ")))
	}
	return strings.Join(out, "; ")
}

func unsettledReasons(r *status.Report) string {
	var out []string
	for _, f := range r.Feeds {
		if f.Settled {
			continue
		}
		why := fmt.Sprintf("feed %s: state %s, pendingAcks %d", f.Feed, f.State, f.PendingAcks)
		if f.Stalled != nil {
			why += ", stalled: " + *f.Stalled
		} else if f.Paused {
			why += ", paused"
		}
		for _, sub := range f.Subscribers {
			if !sub.Drained {
				why += fmt.Sprintf(", subscriber %s %s at %d of %d", sub.Queue, sub.State, sub.Dispatched, sub.Position)
			}
		}
		if f.Pointer != nil && f.Pointer.CommitFailures > 0 {
			why += fmt.Sprintf(", commitFailures %d", f.Pointer.CommitFailures)
		}
		out = append(out, why)
	}
	return strings.Join(out, "; ")
}
