// Package stdout is the `stdout` sink (DESIGN §12 "People"), for trying
// things: it writes each line and '\n' to standard output, one write per
// batch, and a line counts as processed once written. `format: json`
// writes internal/ndjson's object per line instead (the webhook's).
//
// A failed write is retried with the processor's backoff like any sink
// error; a short write is not taken back (standard output cannot be
// truncated), so the lines after a failure may appear twice. Writing to a
// pipe whose reader is gone ends the daemon by SIGPIPE, as it does any
// program writing to standard output: without a final commit, so the
// next run reads again from the last commit (nothing lost). The daemon's
// own log goes to standard error.
package stdout

import (
	"cmp"
	"context"
	"io"
	"os"

	"tailfeed/config"
	"tailfeed/feed"
	"tailfeed/internal/ndjson"
	"tailfeed/sink"
)

func init() {
	sink.Register("stdout", sink.Type{New: func(env sink.Env) (any, error) {
		return New(os.Stdout, env.Config.Format == config.FormatJSON), nil
	}, Config: config.SinkSpec{Formats: true}, Describe: func(pc *config.Processor) []any {
		return []any{"target", "standard output", "format", cmp.Or(pc.Format, config.FormatRaw)}
	}})
}

// Sink writes a batch's lines to w with one Write.
type Sink struct {
	w   io.Writer
	out ndjson.Renderer // raw lines, or one object per line
}

// New returns a sink writing to w, raw lines or (asJSON) one NDJSON object
// per line.
func New(w io.Writer, asJSON bool) *Sink {
	return &Sink{w: w, out: ndjson.Renderer{JSON: asJSON}}
}

// ProcessBatch implements processor.BatchProcessor.
func (s *Sink) ProcessBatch(_ context.Context, b *feed.Batch) (int, error) {
	if len(b.Lines) == 0 {
		return 0, nil
	}
	if _, err := s.w.Write(s.out.Render(b)); err != nil {
		return 0, err
	}
	return len(b.Lines), nil
}
