package kafka

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"tailfeed/config"
	"tailfeed/internal/datadir"
	"tailfeed/sink"
)

func init() {
	sink.Register(Type, sink.Type{New: open, Config: config.SinkSpec{Keys: keys, Decode: decode},
		Describe: func(pc *config.Processor) []any {
			k := settings(pc)
			return []any{"target", "kafka topic " + k.Topic + " at " + strings.Join(k.Brokers, ","), "exactlyOnce", pc.ExactlyOnce}
		},
		Target: func(pc *config.Processor) string {
			k := settings(pc)
			return k.Topic + "\x00" + k.OffsetsTopic
		},
		Instance: true})
}

// open builds a kafka sink from its processor entry.
func open(env sink.Env) (any, error) {
	pc := env.Config
	k := settings(pc)
	opts, err := ConnOpts(k, env.Logger)
	if err != nil {
		return nil, fmt.Errorf("kafka processor %s: %w", pc.Name, err)
	}
	return Open(Config{
		Group:           env.Group,
		Name:            pc.Name,
		Instance:        env.Instance,
		Feed:            env.Feed.Name,
		Topic:           k.Topic,
		Key:             k.Key,
		ExactlyOnce:     pc.ExactlyOnce,
		OffsetsTopic:    k.OffsetsTopic,
		TransactionalID: k.TransactionalID,
		CreateTopics:    k.CreateTopics,
		Timeout:         pc.Built.Timeout,
		EpochsFile:      datadir.Epochs(env.DataDir, env.Feed.Name),
		Client:          opts,
		Logger:          env.Logger,
	})
}

// warner is the part of a logger ConnOpts needs.
type warner interface {
	Warn(msg string, args ...any)
}

// ConnOpts are the connection options of a kafka entry: seed brokers, TLS
// and SASL. It warns (on log, when not nil) about insecureSkipVerify and a
// literal SASL password (SASL.PasswordKey).
func ConnOpts(k *Settings, log warner) ([]kgo.Opt, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(k.Brokers...)}
	if t := k.TLS; t != nil {
		tc, err := TLSConfig(t.CAFile, t.CertFile, t.KeyFile, t.InsecureSkipVerify)
		if err != nil {
			return nil, err
		}
		if t.InsecureSkipVerify && log != nil {
			log.Warn("kafka tls.insecureSkipVerify is set: the brokers' certificates are not verified")
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	if a := k.SASL; a != nil {
		var m sasl.Mechanism
		switch a.Mechanism {
		case "PLAIN":
			m = plain.Auth{User: a.Username, Pass: a.Password}.AsMechanism()
		case "SCRAM-SHA-256":
			m = scram.Auth{User: a.Username, Pass: a.Password}.AsSha256Mechanism()
		case "SCRAM-SHA-512":
			m = scram.Auth{User: a.Username, Pass: a.Password}.AsSha512Mechanism()
		default:
			return nil, fmt.Errorf("sasl.mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", a.Mechanism)
		}
		if a.PasswordKey != "" && log != nil {
			// A password from a ${VAR} reference is not in the file.
			log.Warn("kafka sasl.password is a literal secret in the config file; prefer a ${ENV} reference, keep the file private", "key", a.PasswordKey, "line", a.PasswordLine)
		}
		opts = append(opts, kgo.SASL(m))
	}
	return opts, nil
}

// TLSConfig builds a client TLS configuration: the CA file's certificates
// as roots (none: the system's), and a client certificate when certFile
// and keyFile are given.
func TLSConfig(caFile, certFile, keyFile string, insecure bool) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: insecure} //nolint:gosec // the operator's choice, logged at WARN
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("tls.caFile: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls.caFile %s: no PEM certificate in it", caFile)
		}
		tc.RootCAs = pool
	}
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("tls: certFile and keyFile go together")
	}
	if certFile != "" {
		c, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("tls.certFile/keyFile: %w", err)
		}
		tc.Certificates = []tls.Certificate{c}
	}
	return tc, nil
}
