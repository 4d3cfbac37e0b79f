package daemon

import (
	"fmt"
	"strings"

	"tailfeed/config"
	"tailfeed/internal/redact"
)

// logStart names, at start, each feed's input and where it resumes, and
// each processor's target (DESIGN §12 "People"): what an operator checks
// first when lines do not arrive.
func (d *Daemon) logStart() {
	for _, f := range d.feeds {
		fc := f.cfg
		args := []any{"input", fc.Path, "readStrategy", fc.ReadStrategy}
		switch {
		case f.ptr != nil && f.ptr.Fresh():
			args = append(args, "resume", "no pointer yet ("+f.ptr.FreshReason()+"): from the start of the file", "pointer", f.ptr.Path())
		case f.ptr != nil:
			r := f.ptr.Record()
			args = append(args, "resume", "the pointer's commit", "offset", r.Offset, "epoch", fmt.Sprintf("%016x", r.Epoch), "pointer", f.ptr.Path())
		case fc.ReadStrategy == config.StrategyLatest || fc.ReadStrategy == config.StrategyOnceLatest:
			args = append(args, "resume", "none (no pointer): from the end of the file")
		default:
			args = append(args, "resume", "none (no pointer): from the start of the file")
		}
		f.log.Info("feed", args...)
		for _, pc := range d.cfg.Processors {
			if pc.Feed == fc.Name {
				f.log.Info("processor", append([]any{"processor", pc.Name, "type", pc.Type}, target(pc)...)...)
			}
		}
	}
}

// target is what a processor writes to or serves, as log key-values
// (secrets redacted: a URL's password, never a header).
func target(pc *config.Processor) []any {
	format := pc.Format
	if format == "" {
		format = config.FormatRaw
	}
	switch pc.Type {
	case config.TypeFile:
		return []any{"target", pc.Path, "format", format, "fsync", pc.Fsync, "exactlyOnce", pc.ExactlyOnce}
	case config.TypeStdout:
		return []any{"target", "standard output", "format", format}
	case config.TypeWebhook:
		return []any{"target", redact.RawURL(pc.URL)}
	case config.TypePull:
		return []any{"target", "pulled by clients: GET /v1/pull/" + pc.Name}
	case config.TypeCount:
		return []any{"target", "counts, at GET /v1/state/" + pc.Name, "exactlyOnce", pc.ExactlyOnce}
	case config.TypeDiscard:
		return []any{"target", "discarded"}
	case config.TypeKafka:
		return []any{"target", "kafka topic " + pc.Kafka.Topic + " at " + strings.Join(pc.Kafka.Brokers, ","), "exactlyOnce", pc.ExactlyOnce}
	case config.TypeNats:
		return []any{"target", "nats stream " + pc.Nats.Stream + " subject " + pc.Nats.Subject + " at " + redact.URLList(pc.URL), "exactlyOnce", pc.ExactlyOnce}
	case config.TypePostgres:
		return []any{"target", "postgres table " + pc.Table} // the DSN holds secrets: never logged
	}
	return nil
}
