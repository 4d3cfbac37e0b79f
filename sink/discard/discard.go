// Package discard is the `discard` sink: it finishes every line without
// doing anything with it (the optional match/exclude filters are the
// group's).
package discard

import (
	"context"

	"tailfeed/config"
	"tailfeed/feed"
	"tailfeed/sink"
)

func init() {
	sink.Register("discard", sink.Type{New: func(sink.Env) (any, error) { return Discard{}, nil },
		Describe: func(*config.Processor) []any { return []any{"target", "discarded"} }})
}

// Discard finishes every line without doing anything with it.
type Discard struct{}

// ProcessBatch implements processor.BatchProcessor.
func (Discard) ProcessBatch(_ context.Context, b *feed.Batch) (int, error) { return len(b.Lines), nil }
