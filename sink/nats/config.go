package nats

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"tailfeed/config"
	"tailfeed/internal/redact"
)

// The nats processor's config keys (DESIGN §7, §11), registered with the
// sink (register.go). It also reads the common keys url (checked here:
// OwnURL), exactlyOnce, timeoutMillis, batchMaxLines and tls.

// Type is the sink's type name in the config.
const Type = "nats"

// keys are the processor keys only the nats sink reads.
var keys = []string{"stream", "subject", "createStream", "credsFile", "token"}

// Settings are a nats processor's own keys (config.Processor.Settings).
type Settings struct {
	Stream       string // the JetStream stream
	Subject      string // a template over {instance}, {feed}, {path}, {epoch}
	CreateStream bool   // create the stream when missing
	TLS          *TLS   // nil: no tls mapping (plain nats://, or tls:// with the system roots)
	CredsFile    string // absolute; a NATS credentials file
	Token        string // a secret
	// Literal names the keys whose secret the file holds as written, not
	// as a ${VAR} reference (processors[0].token, processors[0].url for
	// its userinfo): a WARN at start names each.
	Literal []string `reload:"-"`

	streamLine, subjectLine, credsLine int
}

// TLS is a nats processor's tls mapping.
type TLS struct {
	CAFile, CertFile, KeyFile string // absolute paths; "" unset
	InsecureSkipVerify        bool
}

// vars are the variables a subject template may hold.
var vars = []string{"{instance}", "{feed}", "{path}", "{epoch}"}

var varRE = regexp.MustCompile(`\{[^{}]*\}`)

// settings are pc's nats settings (zero for another type's entry).
func settings(pc *config.Processor) *Settings {
	if n, ok := pc.Settings.(*Settings); ok {
		return n
	}
	return &Settings{}
}

// decode reads the nats keys of any processor, and checks what a nats
// processor needs (url included) when own.
func decode(s *config.Section, p *config.Processor, own bool) any {
	n := &Settings{}
	var ok bool
	if n.streamLine, ok = s.NonEmpty("stream", &n.Stream); ok && strings.ContainsAny(n.Stream, " \t\r\n.*>/\\\x00") {
		s.Errorf(n.streamLine, "%s: %q is not a JetStream stream name (no spaces, '.', '*', '>', '/' or '\\')", s.At("stream"), config.Clip(n.Stream))
	}
	if n.subjectLine, ok = s.NonEmpty("subject", &n.Subject); ok {
		if err := checkSubject(n.Subject); err != "" {
			s.Errorf(n.subjectLine, "%s: %q %s", s.At("subject"), config.Clip(n.Subject), err)
		}
	}
	s.Bool("createStream", &n.CreateStream)
	n.credsLine, _ = s.FilePath("credsFile", &n.CredsFile)
	if _, ok := s.NonEmpty("token", &n.Token); ok && config.FileSupplied(s.Written("token")) {
		n.Literal = append(n.Literal, s.At("token"))
	}
	// tls is a common key, decoded for every processor type before this:
	// the nats sink takes the same keys.
	if p.TLS.Line != 0 {
		n.TLS = &TLS{CAFile: p.TLS.CAFile, CertFile: p.TLS.CertFile, KeyFile: p.TLS.KeyFile,
			InsecureSkipVerify: p.TLS.InsecureSkipVerify}
	}
	if !own {
		return n
	}
	path := s.Path()
	if n.CredsFile != "" && n.Token != "" {
		s.Errorf(p.Line, "%s: credsFile and token exclude each other (pick one way to authenticate)", path)
	}
	switch urlLine := s.KeyLine("url"); {
	case urlLine == 0:
		s.Errorf(p.Line, "%s: a nats processor needs url (like nats://127.0.0.1:4222)", path)
	case p.URL != "":
		if err := checkURL(p.URL); err != "" {
			s.Errorf(urlLine, "%s.url: %q %s", path, config.Clip(redact.URLList(p.URL)), err)
		} else if literalUserinfo(s.Written("url")) {
			n.Literal = append(n.Literal, s.At("url"))
		}
	}
	if n.streamLine == 0 {
		s.Errorf(p.Line, "%s: a nats processor needs stream (the JetStream stream)", path)
	}
	if n.subjectLine == 0 {
		s.Errorf(p.Line, "%s: a nats processor needs subject (like logs.{instance}.{feed})", path)
	} else if p.ExactlyOnce && !strings.Contains(n.Subject, "{instance}") {
		s.Errorf(n.subjectLine, "%s.subject: exactlyOnce needs a subject holding {instance} (each sidecar's messages on subjects of their own), got %q", path, config.Clip(n.Subject))
	}
	return n
}

// checkSubject returns "" for a subject template that gives a valid
// subject: dot-separated non-empty tokens, no spaces or wildcards, only
// known variables.
func checkSubject(s string) string {
	for _, v := range varRE.FindAllString(s, -1) {
		if !slices.Contains(vars, v) {
			return fmt.Sprintf("holds unknown variable %s; want %s", v, strings.Join(vars, ", "))
		}
	}
	plain := varRE.ReplaceAllString(s, "x")
	switch {
	case strings.ContainsAny(plain, " \t\r\n\x00*>{}"):
		return "is not a publish subject (no spaces, wildcards '*' '>', or stray braces)"
	case strings.HasPrefix(plain, ".") || strings.HasSuffix(plain, ".") || strings.Contains(plain, ".."):
		return "has an empty token (a leading, trailing or doubled '.')"
	}
	return ""
}

// checkURL returns "" for one or more comma-separated NATS server URLs.
func checkURL(s string) string {
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

// literalUserinfo reports whether a URL list as written holds a secret
// in a userinfo that the file itself supplies (config.FileText): the
// password of user:password, or a token (a userinfo without ':'); a user
// name alone is no secret.
func literalUserinfo(written string) bool {
	for _, one := range strings.Split(config.FileText(written), ",") {
		if _, rest, ok := strings.Cut(one, "://"); ok {
			one = rest
		}
		if i := strings.IndexAny(one, "/?#"); i >= 0 {
			one = one[:i]
		}
		at := strings.LastIndexByte(one, '@')
		if at <= 0 {
			continue
		}
		secret := one[:at]
		if _, pw, ok := strings.Cut(secret, ":"); ok {
			secret = pw
		}
		if strings.ReplaceAll(secret, config.EnvMark, "") != "" {
			return true
		}
	}
	return false
}

// checkStreams reports two nats processors of one feed publishing into
// one stream (DESIGN §11): their records would be each other's.
func checkStreams(cfg *config.Config, errorf func(line int, format string, args ...any)) {
	checkSubjects(cfg, errorf)
	seen := map[[2]string]int{}
	for i, p := range cfg.Processors {
		n, ok := p.Settings.(*Settings)
		if p.Type != Type || !ok || n.Stream == "" || p.Feed == "" {
			continue
		}
		k := [2]string{p.Feed, n.Stream}
		if j, dup := seen[k]; dup {
			q := cfg.Processors[j]
			errorf(n.streamLine, "processors[%d].stream: nats processor %s also publishes feed %q into stream %q (line %d); two nats processors cannot share a feed and a stream",
				i, describe(q, j), config.Clip(p.Feed), config.Clip(n.Stream), settings(q).streamLine)
			continue
		}
		seen[k] = i
	}
}

// checkSubjects reports what makes an exactlyOnce subject's last message
// not this processor's record (DESIGN §11):
//
//   - on a glob feed, a subject without {epoch} (the feed's files would
//     share one subject, whose last message is whichever file wrote last);
//   - two nats processors of different feeds on one stream whose subjects
//     render the same (the template with {instance} and {feed} filled in
//     holds neither {path} nor {epoch}), one of them exactlyOnce: each
//     feed's sink would read the other's message as its record, and their
//     expected-last-subject-sequence chains would break each other. The
//     simplest sound rule: such subjects must differ ({feed} in the
//     template does it).
func checkSubjects(cfg *config.Config, errorf func(line int, format string, args ...any)) {
	type use struct {
		i   int
		p   *config.Processor
		n   *Settings
		key [2]string // stream, rendered subject
	}
	var uses []use
	for i, p := range cfg.Processors {
		n, ok := p.Settings.(*Settings)
		if p.Type != Type || !ok || n.Subject == "" || n.Stream == "" || p.Feed == "" {
			continue
		}
		if p.ExactlyOnce && !strings.Contains(n.Subject, "{epoch}") {
			for _, f := range cfg.Feeds {
				if f.Name == p.Feed && config.IsGlob(f.Path) {
					errorf(n.subjectLine, "processors[%d].subject: exactlyOnce on glob feed %q needs a subject holding {epoch} (each file's generation on a subject of its own, whose last message is its record), got %q",
						i, config.Clip(p.Feed), config.Clip(n.Subject))
				}
			}
		}
		subj := strings.NewReplacer("{instance}", cfg.Instance, "{feed}", p.Feed).Replace(n.Subject)
		if strings.Contains(subj, "{path}") || strings.Contains(subj, "{epoch}") {
			continue // each file (generation) on a subject of its own
		}
		uses = append(uses, use{i, p, n, [2]string{n.Stream, subj}})
	}
	for k, u := range uses {
		for _, v := range uses[:k] {
			if v.key != u.key || v.p.Feed == u.p.Feed || !(u.p.ExactlyOnce || v.p.ExactlyOnce) {
				continue
			}
			errorf(u.n.subjectLine, "processors[%d].subject: nats processor %s (feed %q) and %s (feed %q, line %d) publish into one subject %q of stream %q, and exactlyOnce needs a subject of its own per feed (its last message is the record): add {feed} to the subject",
				u.i, describe(u.p, u.i), config.Clip(u.p.Feed), describe(v.p, v.i), config.Clip(v.p.Feed), v.n.subjectLine,
				config.Clip(u.key[1]), config.Clip(u.key[0]))
			break
		}
	}
}

// describe names processor p (at index i) in a message.
func describe(p *config.Processor, i int) string {
	if p.Name == "" {
		return fmt.Sprintf("processors[%d]", i)
	}
	return fmt.Sprintf("%q", config.Clip(p.Name))
}
