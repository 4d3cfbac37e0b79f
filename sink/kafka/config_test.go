package kafka

import (
	"strings"
	"testing"

	"tailfeed/config"
	"tailfeed/internal/testutil"
)

var lines = testutil.Lines

// mustParse parses src, failing the test on an error.
func mustParse(t *testing.T, src, file string) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(src), file)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return cfg
}

// TestKafkaKeys: a kafka processor's keys decode, with their defaults;
// mistakes are FILE:LINE errors.
func TestKafkaKeys(t *testing.T) {
	head := lines("feeds:", "  - {name: app, path: /a}", "processors:", "  - name: k", "    feed: app", "    type: kafka")
	cfg := mustParse(t, head+lines("    brokers: [10.0.0.1:9092, 'kafka-2:9093']", "    topic: logs", "    exactlyOnce: true",
		"    createTopics: true", "    tls: {caFile: /etc/ca.pem}", "    sasl: {mechanism: SCRAM-SHA-512, username: u, password: p}"), "c.yaml")
	k := cfg.Processors[0].Settings.(*Settings)
	if strings.Join(k.Brokers, ",") != "10.0.0.1:9092,kafka-2:9093" || k.Topic != "logs" || k.Key != "{instance}:{feed}" ||
		k.OffsetsTopic != "tailfeed-offsets" || !k.CreateTopics || k.TLS == nil || k.TLS.CAFile != "/etc/ca.pem" ||
		k.SASL == nil || k.SASL.Mechanism != "SCRAM-SHA-512" || k.SASL.PasswordLine != 12 || k.SASL.PasswordKey != "processors[0].sasl.password" || !cfg.Processors[0].ExactlyOnce {
		t.Errorf("decoded %+v tls %+v sasl %+v", k, k.TLS, k.SASL)
	}
	// A password from a ${VAR} reference is not literal: no key to warn about.
	t.Setenv("TF_KAFKA_PW", "pw")
	cfg = mustParse(t, head+lines("    brokers: [a:1]", "    topic: logs", "    sasl: {mechanism: PLAIN, username: u, password: '${TF_KAFKA_PW}'}"), "c.yaml")
	if a := cfg.Processors[0].Settings.(*Settings).SASL; a.Password != "pw" || a.PasswordKey != "" {
		t.Errorf("sasl from ${TF_KAFKA_PW}: %+v", a)
	}
	for _, tc := range []struct{ body, want string }{
		{lines("    topic: logs"), "c.yaml:4: processors[0]: a kafka processor needs brokers"},
		{lines("    brokers: [a:1]"), "c.yaml:4: processors[0]: a kafka processor needs topic"},
		{lines("    brokers: [nohost]", "    topic: t"), `c.yaml:7: processors[0].brokers[0]: "nohost" is not host:port`},
		{lines("    brokers: ['h:abc']", "    topic: t"), `c.yaml:7: processors[0].brokers[0]: "h:abc" has no port number 1-65535`},
		{lines("    brokers: [h:1, 'h:65536']", "    topic: t"), `c.yaml:7: processors[0].brokers[1]: "h:65536" has no port number 1-65535`},
		{lines("    brokers: ['h:0']", "    topic: t"), `c.yaml:7: processors[0].brokers[0]: "h:0" has no port number 1-65535`},
		{lines("    brokers: [a:1]", "    topic: t", "    key: '{host}'"), "c.yaml:9: processors[0].key: unknown variable {host}"},
		{lines("    brokers: [a:1]", "    topic: t", "    sasl: {mechanism: GSSAPI, username: u, password: p}"), `c.yaml:9: processors[0].sasl.mechanism: unknown value "GSSAPI"`},
		{lines("    brokers: [a:1]", "    topic: t", "    sasl: {mechanism: PLAIN}"), "processors[0].sasl: missing username"},
		{lines("    brokers: [a:1]", "    topic: t", "    tls: {certFile: /c.pem}"), "c.yaml:9: processors[0].tls: a client certificate needs both certFile and keyFile"},
		{lines("    brokers: [a:1]", "    topic: t", "    exactlyOnce: true", "    offsetsTopic: t"), "c.yaml:4: processors[0]: offsetsTopic must differ from topic"},
		{lines("    brokers: [a:1]", "    topic: t", "    brokerz: 1"), `c.yaml:9: unknown key "brokerz"`},
	} {
		_, err := config.Parse([]byte(head+tc.body), "c.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want %q", tc.body, err, tc.want)
		}
	}
}
