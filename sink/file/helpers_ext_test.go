package file_test

import (
	"context"

	"tailfeed/feed"
)

// discardAll finishes every line (the discard sink, which this package
// does not import: no sink imports another).
type discardAll struct{}

func (discardAll) ProcessBatch(_ context.Context, b *feed.Batch) (int, error) {
	return len(b.Lines), nil
}
