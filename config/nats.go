package config

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"tailfeed/internal/redact"
)

// TypeNats is the `nats` sink (DESIGN §11): JetStream.
const TypeNats = "nats"

// natsTLSKeys are the keys of a nats processor's tls.
var natsTLSKeys = []string{"caFile", "certFile", "keyFile", "insecureSkipVerify"}

// NatsConfig is a nats processor's own keys (Processor.Nats).
type NatsConfig struct {
	Stream       string   // the JetStream stream
	Subject      string   // a template over {instance}, {feed}, {path}, {epoch}
	CreateStream bool     // create the stream when missing
	TLS          *NatsTLS // nil: no tls mapping (plain nats://, or tls:// with the system roots)
	CredsFile    string   // absolute; a NATS credentials file
	Token        string   // a secret

	streamLine, subjectLine int
}

// NatsTLS is a nats processor's tls mapping.
type NatsTLS struct {
	CAFile, CertFile, KeyFile string // absolute paths; "" unset
	InsecureSkipVerify        bool
}

// natsVars are the variables a subject template may hold.
var natsVars = []string{"{instance}", "{feed}", "{path}", "{epoch}"}

var natsVarRE = regexp.MustCompile(`\{[^{}]*\}`)

// natsKeys decodes the nats keys of processor p (any type: a key of another
// type is rejected by the type check at validation). urlLine is the line of
// url, read by webhookKeys.
func (d *decoder) natsKeys(o *obj, p *Processor, path string, urlLine int) {
	n := &p.Nats
	var ok bool
	if n.streamLine, ok = o.nonEmpty("stream", &n.Stream); ok && strings.ContainsAny(n.Stream, " \t\r\n.*>/\\\x00") {
		d.errorf(n.streamLine, "%s: %q is not a JetStream stream name (no spaces, '.', '*', '>', '/' or '\\')", o.at("stream"), clip(n.Stream))
	}
	if n.subjectLine, ok = o.nonEmpty("subject", &n.Subject); ok {
		if err := checkNatsSubject(n.Subject); err != "" {
			d.errorf(n.subjectLine, "%s: %q %s", o.at("subject"), clip(n.Subject), err)
		}
	}
	o.boolean("createStream", &n.CreateStream)
	o.filePath("credsFile", &n.CredsFile)
	o.nonEmpty("token", &n.Token)
	// tls is decoded once for every processor type (decoder.clientTLS, which
	// runs before this): the nats sink takes the same keys.
	if p.TLS.Line != 0 {
		n.TLS = &NatsTLS{CAFile: p.TLS.CAFile, CertFile: p.TLS.CertFile, KeyFile: p.TLS.KeyFile,
			InsecureSkipVerify: p.TLS.InsecureSkipVerify}
	}
	if p.Type != TypeNats {
		return
	}
	if n.CredsFile != "" && n.Token != "" {
		d.errorf(p.Line, "%s: credsFile and token exclude each other (pick one way to authenticate)", path)
	}
	switch {
	case urlLine == 0:
		d.errorf(p.Line, "%s: a nats processor needs url (like nats://127.0.0.1:4222)", path)
	default:
		if err := checkNatsURL(p.URL); err != "" {
			d.errorf(urlLine, "%s.url: %q %s", path, clip(redact.URLList(p.URL)), err)
		}
	}
	if n.streamLine == 0 {
		d.errorf(p.Line, "%s: a nats processor needs stream (the JetStream stream)", path)
	}
	if n.subjectLine == 0 {
		d.errorf(p.Line, "%s: a nats processor needs subject (like logs.{instance}.{feed})", path)
	} else if p.ExactlyOnce && !strings.Contains(n.Subject, "{instance}") {
		d.errorf(n.subjectLine, "%s.subject: exactlyOnce needs a subject holding {instance} (each sidecar's messages on subjects of their own), got %q", path, clip(n.Subject))
	}
}

// checkNatsSubject returns "" for a subject template that gives a valid
// subject: dot-separated non-empty tokens, no spaces or wildcards, only
// known variables.
func checkNatsSubject(s string) string {
	for _, v := range natsVarRE.FindAllString(s, -1) {
		if !contains(natsVars, v) {
			return fmt.Sprintf("holds unknown variable %s; want %s", v, strings.Join(natsVars, ", "))
		}
	}
	plain := natsVarRE.ReplaceAllString(s, "x")
	switch {
	case strings.ContainsAny(plain, " \t\r\n\x00*>{}"):
		return "is not a publish subject (no spaces, wildcards '*' '>', or stray braces)"
	case strings.HasPrefix(plain, ".") || strings.HasSuffix(plain, ".") || strings.Contains(plain, ".."):
		return "has an empty token (a leading, trailing or doubled '.')"
	}
	return ""
}

// checkNatsURL returns "" for one or more comma-separated NATS server URLs.
func checkNatsURL(s string) string {
	for _, one := range strings.Split(s, ",") {
		u, err := url.Parse(strings.TrimSpace(one))
		switch {
		case err != nil:
			return "is not a URL (a user name or password holding one of : / ? # [ ] @ % or a space needs percent-encoding)"
		case u.Scheme != "nats" && u.Scheme != "tls" && u.Scheme != "ws" && u.Scheme != "wss":
			return "must be a nats://, tls://, ws:// or wss:// URL (several: comma-separated)"
		case u.Host == "":
			return "has no host"
		}
	}
	return ""
}

// natsStreams reports two nats processors of one feed publishing into one
// stream (DESIGN §11): their records would be each other's.
func (d *decoder) natsStreams(cfg *Config) {
	seen := map[[2]string]int{}
	for i, p := range cfg.Processors {
		if p.Type != TypeNats || p.Nats.Stream == "" || p.Feed == "" {
			continue
		}
		k := [2]string{p.Feed, p.Nats.Stream}
		if j, dup := seen[k]; dup {
			d.errorf(p.Nats.streamLine, "processors[%d].stream: nats processor %s also publishes feed %q into stream %q (line %d); two nats processors cannot share a feed and a stream",
				i, describeProc(cfg.Processors[j], j), clip(p.Feed), clip(p.Nats.Stream), cfg.Processors[j].Nats.streamLine)
			continue
		}
		seen[k] = i
	}
}
