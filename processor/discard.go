package processor

import (
	"context"

	"tailfeed/feed"
)

// Discard finishes every line without doing anything with it.
type Discard struct{}

// ProcessBatch implements BatchProcessor.
func (Discard) ProcessBatch(_ context.Context, b *feed.Batch) (int, error) { return len(b.Lines), nil }
