package count

import "tailfeed/feed"

// From sink/file's exactlyonce_test.go.

// eoCheckpoint is a Checkpoint for sinks tested without a group.
type eoCheckpoint struct {
	held    bool
	mark    uint64
	durable uint64
}

func (c *eoCheckpoint) Hold()        { c.held = true }
func (c *eoCheckpoint) Mark() uint64 { return c.mark }
func (c *eoCheckpoint) DurableThrough(m uint64) {
	if m > c.durable {
		c.durable = m
	}
}

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
