package file

import "tailfeed/feed"

// Publisher is what a source needs of its feed's publisher. *feed.Publisher
// implements it; tests wrap it to inject a publish step that refuses.
type Publisher interface {
	// TryPublish offers a batch; false means no room: the source keeps the
	// batch, reads nothing more and offers it again later.
	TryPublish(b *feed.Batch) bool
	PollAcks() feed.Acked
	Pending() int64
	Wake() chan struct{}
	Poke()
	SetPaused(v bool, why string)
	Paused() bool
	PauseReason() string
	SetBarrier(epoch uint64)
}

var _ Publisher = (*feed.Publisher)(nil)
