package config

import (
	"fmt"
	"net"
	"strings"

	"gopkg.in/yaml.v3"
)

// TypeKafka is the kafka sink (DESIGN §11).
const TypeKafka = "kafka"

// kafkaKeyNames are the processor keys only the kafka sink reads (it also
// reads exactlyOnce and timeoutMillis).
var kafkaKeyNames = []string{"brokers", "topic", "key", "offsetsTopic", "transactionalId", "createTopics", "sasl"}

// The kafka sink's sub-sections and enums.
var (
	kafkaSASLKeys   = []string{"mechanism", "username", "password"}
	saslMechanisms  = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}
	kafkaKeyVars    = []string{"{instance}", "{feed}", "{path}", "{epoch}"}
	defaultKafkaKey = "{instance}:{feed}"
)

// DefaultOffsetsTopic is the kafka sink's offsetsTopic when the config
// names none.
const DefaultOffsetsTopic = "tailfeed-offsets"

// Kafka is a kafka processor's own keys.
type Kafka struct {
	Brokers         []string // host:port
	Topic           string
	Key             string // template over {instance} {feed} {path} {epoch}; default {instance}:{feed}
	OffsetsTopic    string // exactlyOnce: default tailfeed-offsets
	TransactionalID string // exactlyOnce: default tailfeed-<instance>-<processor>
	CreateTopics    bool
	TLS             *KafkaTLS  // nil: plaintext
	SASL            *KafkaSASL // nil: none
}

// KafkaTLS is a kafka processor's tls section.
type KafkaTLS struct {
	CAFile, CertFile, KeyFile string
	InsecureSkipVerify        bool
}

// KafkaSASL is a kafka processor's sasl section.
type KafkaSASL struct {
	Mechanism, Username, Password string
	PasswordLine                  int // where the literal password is (for the WARN at start)
}

func init() {
	processorKeys = append(processorKeys, kafkaKeyNames...)
	types = append(types, TypeKafka)
}

// kafkaKeys decodes the kafka sink's keys into p.Kafka and checks them
// when p is a kafka processor.
func (d *decoder) kafkaKeys(o *obj, p *Processor, path string) {
	k := &p.Kafka
	if p.Type == TypeKafka {
		k.Key = defaultKafkaKey
		k.OffsetsTopic = DefaultOffsetsTopic
	}
	items, brokersLine, _ := o.list("brokers")
	for i, it := range items {
		it = resolve(it)
		at := fmt.Sprintf("%s[%d]", o.at("brokers"), i)
		if it.Kind != yaml.ScalarNode || it.Value == "" {
			d.errorf(it.Line, "%s: must be a host:port string, got %s", at, describe(it))
			continue
		}
		if h, port, err := net.SplitHostPort(it.Value); err != nil || h == "" || port == "" {
			d.errorf(it.Line, "%s: %q is not host:port", at, clip(it.Value))
			continue
		}
		k.Brokers = append(k.Brokers, it.Value)
	}
	topicLine, _ := o.nonEmpty("topic", &k.Topic)
	if line, ok := o.str("key", &k.Key); ok {
		if bad := badTemplate(k.Key); bad != "" {
			d.errorf(line, "%s: unknown variable %s; want %s", o.at("key"), clip(bad), strings.Join(kafkaKeyVars, ", "))
		}
	}
	o.nonEmpty("offsetsTopic", &k.OffsetsTopic)
	o.nonEmpty("transactionalId", &k.TransactionalID)
	o.boolean("createTopics", &k.CreateTopics)
	// tls is decoded once for every processor type (decoder.clientTLS, which
	// runs before this): the kafka sink takes the same keys.
	if p.TLS.Line != 0 {
		k.TLS = &KafkaTLS{CAFile: p.TLS.CAFile, CertFile: p.TLS.CertFile, KeyFile: p.TLS.KeyFile,
			InsecureSkipVerify: p.TLS.InsecureSkipVerify}
	}
	if s := o.sub("sasl", kafkaSASLKeys); s != nil {
		k.SASL = &KafkaSASL{}
		if line, _ := s.enum("mechanism", &k.SASL.Mechanism, saslMechanisms, nil); line == 0 {
			d.errorf(s.line, "%s: missing mechanism (one of %s)", o.at("sasl"), strings.Join(saslMechanisms, ", "))
		}
		if line, _ := s.nonEmpty("username", &k.SASL.Username); line == 0 {
			d.errorf(s.line, "%s: missing username", o.at("sasl"))
		}
		if k.SASL.PasswordLine, _ = s.str("password", &k.SASL.Password); k.SASL.PasswordLine == 0 {
			d.errorf(s.line, "%s: missing password", o.at("sasl"))
		}
	}
	if p.Type != TypeKafka {
		return
	}
	if brokersLine == 0 || len(k.Brokers) == 0 {
		d.errorf(p.Line, "%s: a kafka processor needs brokers (a list of host:port)", path)
	}
	if topicLine == 0 {
		d.errorf(p.Line, "%s: a kafka processor needs topic", path)
	}
	if p.ExactlyOnce && k.OffsetsTopic == k.Topic {
		d.errorf(p.Line, "%s: offsetsTopic must differ from topic", path)
	}
}

// badTemplate returns the first {variable} of s that is not a kafka key
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
		if !contains(kafkaKeyVars, v) {
			return v
		}
		s = s[i+j+1:]
	}
}
