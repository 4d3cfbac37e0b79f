package processor

import "tailfeed/feed"

// eoBatch makes a batch of lines under epoch, the first ending at position
// after start (each line plus '\n').
func eoBatch(epoch uint64, start int64, lines ...string) *feed.Batch {
	b := &feed.Batch{Feed: "app", Epoch: epoch, Positioned: true}
	pos := start
	for _, l := range lines {
		pos += int64(len(l)) + 1
		b.AppendLine([]byte(l), pos)
	}
	return b
}
