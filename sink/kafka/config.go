package kafka

import (
	"net"
	"slices"
	"strconv"
	"strings"

	"tailfeed/config"
)

// The kafka processor's config keys (DESIGN §7, §11), registered with the
// sink (register.go). It also reads the common keys exactlyOnce,
// timeoutMillis and tls.

// Type is the sink's type name in the config.
const Type = "kafka"

// DefaultOffsetsTopic is offsetsTopic when the config names none.
const DefaultOffsetsTopic = "tailfeed-offsets"

// keys are the processor keys only the kafka sink reads.
var keys = []string{"brokers", "topic", "key", "offsetsTopic", "transactionalId", "createTopics", "sasl"}

// The sub-sections and enums.
var (
	saslKeys       = []string{"mechanism", "username", "password"}
	saslMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}
	keyVars        = []string{"{instance}", "{feed}", "{path}", "{epoch}"}
	defaultKey     = "{instance}:{feed}"
)

// Settings are a kafka processor's own keys (config.Processor.Settings).
type Settings struct {
	Brokers         []string // host:port
	Topic           string
	Key             string // template over {instance} {feed} {path} {epoch}; default {instance}:{feed}
	OffsetsTopic    string // exactlyOnce: default tailfeed-offsets
	TransactionalID string // exactlyOnce: default tailfeed-<instance>-<processor>
	CreateTopics    bool
	TLS             *TLS  // nil: plaintext
	SASL            *SASL // nil: none
}

// TLS is a kafka processor's tls section.
type TLS struct {
	CAFile, CertFile, KeyFile string
	InsecureSkipVerify        bool
}

// SASL is a kafka processor's sasl section.
type SASL struct {
	Mechanism, Username, Password string
	PasswordLine                  int // the password's line
	// PasswordKey names the password (processors[0].sasl.password) when
	// the file holds it literally, not as a ${VAR} reference: the WARN at
	// start names it. "" otherwise.
	PasswordKey string `reload:"-"`
}

// settings are pc's kafka settings (zero for another type's entry).
func settings(pc *config.Processor) *Settings {
	if k, ok := pc.Settings.(*Settings); ok {
		return k
	}
	return &Settings{}
}

// decode reads the kafka keys of any processor, and checks what a kafka
// processor needs when own.
func decode(s *config.Section, p *config.Processor, own bool) any {
	k := &Settings{}
	if own {
		k.Key = defaultKey
		k.OffsetsTopic = DefaultOffsetsTopic
	}
	items, brokersLine, _ := s.List("brokers")
	for _, it := range items {
		v, ok := it.Scalar()
		if !ok || v == "" {
			s.Errorf(it.Line, "%s: must be a host:port string, got %s", it.At, it.Describe())
			continue
		}
		h, port, err := net.SplitHostPort(v)
		if err != nil || h == "" || port == "" {
			s.Errorf(it.Line, "%s: %q is not host:port", it.At, config.Clip(v))
			continue
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			s.Errorf(it.Line, "%s: %q has no port number 1-65535", it.At, config.Clip(v))
			continue
		}
		k.Brokers = append(k.Brokers, v)
	}
	topicLine, _ := s.NonEmpty("topic", &k.Topic)
	if line, ok := s.String("key", &k.Key); ok {
		if bad := badTemplate(k.Key); bad != "" {
			s.Errorf(line, "%s: unknown variable %s; want %s", s.At("key"), config.Clip(bad), strings.Join(keyVars, ", "))
		}
	}
	s.NonEmpty("offsetsTopic", &k.OffsetsTopic)
	s.NonEmpty("transactionalId", &k.TransactionalID)
	s.Bool("createTopics", &k.CreateTopics)
	// tls is a common key, decoded for every processor type before this:
	// the kafka sink takes the same keys.
	if p.TLS.Line != 0 {
		k.TLS = &TLS{CAFile: p.TLS.CAFile, CertFile: p.TLS.CertFile, KeyFile: p.TLS.KeyFile,
			InsecureSkipVerify: p.TLS.InsecureSkipVerify}
	}
	if a := s.Sub("sasl", saslKeys); a != nil {
		k.SASL = &SASL{}
		if line, _ := a.Enum("mechanism", &k.SASL.Mechanism, saslMechanisms); line == 0 {
			s.Errorf(a.Line(), "%s: missing mechanism (one of %s)", s.At("sasl"), strings.Join(saslMechanisms, ", "))
		}
		if line, _ := a.NonEmpty("username", &k.SASL.Username); line == 0 {
			s.Errorf(a.Line(), "%s: missing username", s.At("sasl"))
		}
		if k.SASL.PasswordLine, _ = a.String("password", &k.SASL.Password); k.SASL.PasswordLine == 0 {
			s.Errorf(a.Line(), "%s: missing password", s.At("sasl"))
		} else if config.FileSupplied(a.Written("password")) {
			k.SASL.PasswordKey = a.At("password")
		}
	}
	if !own {
		return k
	}
	if brokersLine == 0 || len(k.Brokers) == 0 {
		s.Errorf(p.Line, "%s: a kafka processor needs brokers (a list of host:port)", s.Path())
	}
	if topicLine == 0 {
		s.Errorf(p.Line, "%s: a kafka processor needs topic", s.Path())
	}
	if p.ExactlyOnce && k.OffsetsTopic == k.Topic {
		s.Errorf(p.Line, "%s: offsetsTopic must differ from topic", s.Path())
	}
	return k
}

// badTemplate returns the first {variable} of s that is not a key
// variable ("" when all are).
func badTemplate(s string) string {
	for {
		i := strings.IndexByte(s, '{')
		if i < 0 {
			return ""
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return s[i:]
		}
		v := s[i : i+j+1]
		if !slices.Contains(keyVars, v) {
			return v
		}
		s = s[i+j+1:]
	}
}
