package webhook

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/go-hclog"

	"tailfeed/config"
	"tailfeed/internal/datadir"
	"tailfeed/internal/redact"
	"tailfeed/internal/tlsconfig"
	"tailfeed/pointer"
	"tailfeed/sink"
)

func init() {
	sink.Register("webhook", sink.Type{New: open,
		// Every key of the webhook sink is common (url, timeoutMillis,
		// batchMaxLines, batchMaxBytes, headers, raw, tls: see config's
		// package doc).
		Config: config.SinkSpec{Decode: decode},
		Describe: func(pc *config.Processor) []any {
			return []any{"target", redact.Query(redact.RawURL(pc.URL))}
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
// dataDir/state/<processor>.rec, per epoch on a glob feed (whose stream
// pointers, dataDir/feeds/<feed>/, tell which epochs it may drop). It asks
// the feed's publisher whether the source waits for a request it rebuilds
// after a restart.
func open(env sink.Env) (any, error) {
	pc := env.Config
	client, err := Client(pc.TLS, env.Logger)
	if err != nil {
		return nil, err
	}
	var committed func([]uint64) (map[uint64]int64, error)
	glob, feedName := false, ""
	if env.Feed != nil {
		glob, feedName = config.IsGlob(env.Feed.Path), env.Feed.Name
	}
	switch {
	case glob && env.Feed.ReadStrategy == config.StrategyCommitted:
		committed = CommittedIn(datadir.GlobPointers(env.DataDir, env.Feed.Name))
	case glob:
		// No stream pointers: every start reads each file under a new
		// epoch, so no entry is needed past the run (epochs.go, "Bound").
		committed = func([]uint64) (map[uint64]int64, error) { return nil, nil }
	}
	return OpenWebhook(WebhookConfig{
		PerEpoch:      glob,
		Feed:          feedName,
		Committed:     committed,
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

// CommittedIn reads a glob feed's stream pointers in dir (without their
// locks: what the source last stored) and returns, for each epoch asked
// that one of them holds, its offset. A pointer named after the epoch is
// read first; the directory is scanned for the others (a pointer keeps its
// first epoch's name). A pointer that cannot be read counts as holding its
// name's epoch at -1 (nothing dropped on its account); a directory that
// cannot be read is an error.
func CommittedIn(dir string) func(epochs []uint64) (map[uint64]int64, error) {
	return func(epochs []uint64) (map[uint64]int64, error) {
		out := make(map[uint64]int64, len(epochs))
		missing := map[uint64]bool{}
		for _, ep := range epochs {
			rec, err := pointer.Inspect(filepath.Join(dir, fmt.Sprintf("%016x.ptr", ep)))
			switch {
			case err == nil && rec.Epoch == ep:
				out[ep] = rec.Offset
			case err != nil && !errors.Is(err, fs.ErrNotExist):
				out[ep] = -1
			default:
				missing[ep] = true
			}
		}
		if len(missing) == 0 {
			return out, nil
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			if !strings.HasSuffix(e.Name(), ".ptr") {
				continue
			}
			rec, err := pointer.Inspect(filepath.Join(dir, e.Name()))
			if err == nil && missing[rec.Epoch] {
				out[rec.Epoch] = rec.Offset
				delete(missing, rec.Epoch)
			}
		}
		return out, nil
	}
}
