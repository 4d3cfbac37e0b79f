// Package processor runs a feed's subscribers: one Group (one goroutine, one
// bounded queue) per configured processor, the Processor interfaces, retries
// with backoff, holds, the dead-letter ledger and its replay. The sinks live
// in sink/<type>, each built on Host, the seam a group offers its sink
// (seam.go); this package imports none of them.
//
// A line counts as dispatched for a queue only when its processor finished it
// (processed, filtered, or dead-lettered), and, for a processor that persists
// asynchronously, the queue's ack point also waits for DurableThrough. The
// feed commits its pointer from those ack points (DESIGN §1).
package processor

import (
	"context"
	"math/rand/v2"
	"time"

	"tailfeed/feed"
)

// Processor handles one line at a time.
type Processor interface {
	Process(ctx context.Context, d *feed.Delivery) error
}

// BatchProcessor is implemented by sinks that gain from whole batches. It
// returns how many leading lines of b it finished; on an error the group
// retries from line done.
//
// The group also calls it with an empty batch (no lines; FirstSeq is the
// sequence of the line after them) when lines were finished without the
// processor: filtered out, dead-lettered, or released on purpose. Mark()
// then counts through those lines; a processor holding the ack point must
// let its durable mark pass them once everything before them is durable,
// or the ack point stays before them until it processes another line. An
// empty batch must not fail.
type BatchProcessor interface {
	ProcessBatch(ctx context.Context, b *feed.Batch) (done int, err error)
}

// Flusher is implemented by processors with deferred work (an fsync interval):
// FlushDue says when Flush must run even if no more lines come. The group
// runs Flush on its goroutine, never during a Process or ProcessBatch call:
// between batches, while idle, and between two attempts of a failing batch
// (so that a hold does not keep the lines finished before the failing one
// from becoming durable).
type Flusher interface {
	FlushDue() (time.Time, bool)
	Flush(ctx context.Context) error
}

// Closer is implemented by processors holding resources.
type Closer interface {
	Close() error
}

// Checkpoint lets a processor that persists asynchronously hold the queue's
// ack point: after Hold, the ack point is min(dispatched, durable), and
// DurableThrough(mark) moves durable to a Mark() taken while processing.
// Only a BatchProcessor may Hold: lines the group finishes without the
// processor reach it as empty batches (see BatchProcessor).
type Checkpoint interface {
	Hold()
	// Mark is the queue line count through the end of the batch (or line)
	// being processed now. Valid only inside Process/ProcessBatch.
	Mark() uint64
	DurableThrough(mark uint64)
}

// Retry is a retry policy: exponential backoff from Initial doubling to Max,
// each delay varied by ±Jitter (a fraction), Attempts tries before onFailure.
type Retry struct {
	Initial  time.Duration
	Max      time.Duration
	Jitter   float64
	Attempts int
}

// Backoff is the delay before try attempt+1 after try attempt (from 1)
// failed, varied by ±Jitter.
func (r Retry) Backoff(attempt int) time.Duration {
	return r.delay(attempt, 2*rand.Float64()-1)
}

// Step is Backoff with the jitter only shortening the delay: a wait of
// Step(n) never ends later than one full step (pull redeliveries).
func (r Retry) Step(attempt int) time.Duration {
	return r.delay(attempt, -rand.Float64())
}

// delay is the step after attempt, times 1+Jitter*u (u in [-1, 1]).
func (r Retry) delay(attempt int, u float64) time.Duration {
	d := r.Initial
	for i := 1; i < attempt && d < r.Max; i++ {
		d *= 2
	}
	d = min(d, r.Max)
	if r.Jitter > 0 {
		d = time.Duration(float64(d) * (1 + r.Jitter*u))
	}
	return d
}
