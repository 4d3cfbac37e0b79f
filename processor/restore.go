package processor

import "context"

// Mark is a sink's done-through point in one epoch: the last line of that
// epoch it applied, filtered, dead-lettered or was released from.
type Mark struct {
	Epoch    uint64
	Position int64
}

// DoneThrougher is a sink with a stored record (DESIGN §11 "A restored sink
// is caught up from the input": the exactlyOnce file sink, count, kafka,
// nats, postgres). DoneThrough is called once at start, after the sink is
// built and before its feed reads a line; it returns one Mark per epoch the
// sink holds a record for (none: no record, never behind). An error (the
// engine is down) is retried by the caller, which holds the feed meanwhile;
// it must honour ctx.
//
// A mark must cover the lines the group finished without the sink (its
// filters, a dead letter, a release): they reach a BatchProcessor in a
// view or an empty batch whose feed.Batch.Done() is the position through
// them; a record that stops at the last line written is behind the pointer
// whenever the feed's last lines were filtered, and every start re-reads
// them. A replayed dead letter (not Positioned) never moves it. The daemon
// (internal/catchup) decides from the marks; see the README's guarantee.
type DoneThrougher interface {
	DoneThrough(ctx context.Context) ([]Mark, error)
}

// DoneThroughDoubter is a DoneThrougher that found at open that it lost
// part of what its record says it applied (an exactlyOnce file output put
// back to an earlier copy while its record stayed newer): its marks are
// where it has the feed re-read from as far as it can tell, and
// DoneThroughDoubt says what it cannot tell ("" nothing): the daemon counts
// that as a possible loss (lostTails + 1, the reason in detail; DESIGN §4
// "Nothing green over a loss").
type DoneThroughDoubter interface {
	DoneThroughDoubt() string
}
