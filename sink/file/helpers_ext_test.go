package file_test

import (
	"context"
	"testing"
	"time"

	"tailfeed/feed"
)

// eventually is processor's group_test.go helper.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// discardAll finishes every line (the discard sink, which this package
// does not import: no sink imports another).
type discardAll struct{}

func (discardAll) ProcessBatch(_ context.Context, b *feed.Batch) (int, error) {
	return len(b.Lines), nil
}
