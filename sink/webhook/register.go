package webhook

import (
	"fmt"
	"net/http"

	"github.com/hashicorp/go-hclog"

	"tailfeed/config"
	"tailfeed/internal/datadir"
	"tailfeed/internal/redact"
	"tailfeed/internal/tlsconfig"
	"tailfeed/sink"
)

func init() {
	sink.Register("webhook", sink.Type{New: open,
		// Every key of the webhook sink is common (url, timeoutMillis,
		// batchMaxLines, batchMaxBytes, headers, raw, tls: see config's
		// package doc).
		Config: config.SinkSpec{Decode: decode},
		Describe: func(pc *config.Processor) []any {
			return []any{"target", redact.RawURL(pc.URL)}
		},
		Target: func(pc *config.Processor) string { return pc.URL }})
}

// decode checks what a webhook processor needs: url (whose form config
// checks on every entry of a type without OwnURL).
func decode(s *config.Section, p *config.Processor, own bool) any {
	if own && s.KeyLine("url") == 0 {
		s.Errorf(p.Line, "%s: a webhook processor needs url", s.Path())
	}
	return nil
}

// open builds a webhook sink on its group; its record is
// dataDir/state/<processor>.rec. It asks the feed's publisher whether the
// source waits for a request it rebuilds after a restart.
func open(env sink.Env) (any, error) {
	pc := env.Config
	client, err := Client(pc.TLS, env.Logger)
	if err != nil {
		return nil, err
	}
	return OpenWebhook(WebhookConfig{
		Client:        client,
		Group:         env.Group,
		Publisher:     env.Publisher,
		URL:           pc.URL,
		Timeout:       pc.Built.Timeout,
		BatchMaxLines: pc.BatchMaxLines,
		BatchMaxBytes: pc.BatchMaxBytes,
		Headers:       pc.Headers,
		Raw:           pc.Raw,
		Record:        datadir.Record(env.DataDir, pc.Name),
	})
}

// Client is the sink's HTTP client for a processor's tls (nil without
// one: OpenWebhook's default). Redirects are not followed.
// insecureSkipVerify is logged at WARN.
func Client(t config.ClientTLS, log hclog.Logger) (*http.Client, error) {
	if t.Line == 0 && t.CAFile == "" && t.CertFile == "" && !t.InsecureSkipVerify {
		return nil, nil
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	tc, err := tlsconfig.Client(tlsconfig.Files{CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile,
		InsecureSkipVerify: t.InsecureSkipVerify}, log)
	if err != nil {
		return nil, fmt.Errorf("webhook tls: %w", err)
	}
	if t.InsecureSkipVerify {
		log.Warn("tls.insecureSkipVerify is true: the receiver's certificate is not verified; anyone on the path can read and alter the lines")
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tc
	return &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}, nil
}
